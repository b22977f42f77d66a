#include "gates/Gates.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace layergate::gates {
namespace {

bool endsWith(const std::string& s, const char* suffix) {
  std::size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool isCpp(const std::string& name) {
  for (const char* e : {".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp", ".cxx", ".hip", ".inl"})
    if (endsWith(name, e)) return true;
  return false;
}

std::string readFile(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string s;
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size <= 0) return "";
  s.resize(std::min<std::size_t>(static_cast<std::size_t>(size), max_bytes));
  in.seekg(0);
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

// How well a registration binds the op a CUDA call reaches: a CUDA impl,
// then a def with its function, then another impl, then a schema alone.
int rank(const Registration& r) {
  switch (r.kind) {
    case Registration::Kind::Impl:
      return r.dispatch_key.find("CUDA") != std::string::npos ? 4 : 2;
    case Registration::Kind::Def:
      return 3;
    case Registration::Kind::Schema:
      return 1;
    default:
      return 0;
  }
}

std::size_t sharedPrefix(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// PyTorch's own op libraries: not a serving engine's native code.
bool isTorchNamespace(const std::string& ns) {
  static const std::set<std::string> torch = {"aten", "prims", "c10d", "_c10d_functional", "_c10d_functional_autograd",
                                              "symm_mem", "profiler", "higher_order", "quantized", "_quantized", "inductor"};
  return torch.count(ns) > 0;
}

std::string siteText(const Site& s) { return fmt::format("{}:{}:{}", s.file, s.line, s.column); }

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

bool reads(const std::string& text, const std::string& e) {
  if (e.empty()) return false;
  for (std::size_t at = text.find(e); at != std::string::npos; at = text.find(e, at + 1)) {
    bool left = at == 0 || (!isWordChar(text[at - 1]) && text[at - 1] != '.');
    std::size_t end = at + e.size();
    bool right = end >= text.size() || !isWordChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

namespace {

// The arguments of the site as the entry's parameters.
std::vector<Variable> variablesOf(const Gate& g) {
  std::vector<Variable> out;
  std::vector<std::pair<std::string, std::string>> params;
  if (g.defined) params = g.entry.params;
  auto schema = schemaParams(g.schema);
  if (params.empty()) params = schema;
  for (std::size_t i = 0; i < g.site.arguments.size(); ++i) {
    const std::string& a = g.site.arguments[i];
    if (a.find('=') != std::string::npos && isWordChar(a[0]) && a.find("==") == std::string::npos) continue;  // keyword
    Variable v;
    v.python = a;
    v.position = g.site.via.empty() ? static_cast<int>(i) : i < g.site.to_op.size() ? g.site.to_op[i] : -1;
    if (v.position < 0) continue;
    auto p = static_cast<std::size_t>(v.position);
    if (p < params.size()) {
      v.type = params[p].first;
      v.param = params[p].second.empty() && p < schema.size() ? schema[p].second : params[p].second;
    }
    for (const auto& c : g.site.conditions) v.tested = v.tested || reads(c.text, a);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

std::string reasonKey(const Gate& g) {
  if (!g.key.empty()) return g.key;
  if (g.status == "analysed") return "analysed";
  if (g.site.conditions.empty()) return "unconditional";
  if (g.python_op) return "python-op";
  if (isTorchNamespace(g.site.op.ns)) return "torch-op";
  if (!g.registered) return "no-registration";
  if (g.registration.function.empty()) return g.registration.lambda ? "lambda-entry" : "schema-only";
  if (!g.defined) return "entry-not-found";
  return "no-model";
}

Inventory inventory(const std::string& root, const std::vector<target::Target>& targets, const discover::Options& o) {
  Inventory inv;
  inv.root = root;
  auto files = discover::walkFiles(
      root, o, [](const std::string& name) { return endsWith(name, ".py") || isCpp(name); }, &inv.notes);
  std::vector<Module> modules;
  std::vector<std::pair<std::string, std::string>> cpp;  // file, text
  std::vector<Registration> regs;
  for (const auto& f : files) {
    std::string text = readFile(root + "/" + f, 8u << 20);
    if (endsWith(f, ".py")) {
      modules.push_back({f, std::move(text)});
    } else {
      auto r = scanRegistrations(text, f);
      regs.insert(regs.end(), r.begin(), r.end());
      cpp.emplace_back(f, std::move(text));
    }
  }
  inv.python_files = modules.size();
  inv.cpp_files = cpp.size();
  inv.registrations = regs.size();
  SiteScan scan = scanSites(modules);
  inv.notes.insert(inv.notes.end(), scan.notes.begin(), scan.notes.end());
  modules.clear();

  std::map<std::string, std::vector<const Registration*>> by_op;
  for (const auto& r : regs) by_op[r.op].push_back(&r);

  // The units the targets analyse: the calls in their gate files are theirs,
  // and the calls of the same ops in the op modules of their chain.
  std::map<std::string, std::string> gate_of, chain_of;
  if (!targets.empty()) {
    discover::Result d = discover::discover(root, targets, o);
    for (const auto& u : d.units)
      for (std::size_t i = 0; i < u.python_files.size(); ++i)
        (i == 0 ? gate_of : chain_of).emplace(u.python_files[i], u.target);
  }
  std::set<std::pair<std::string, std::string>> target_ops;  // target, op
  for (const auto& s : scan.sites)
    if (auto t = gate_of.find(s.file); t != gate_of.end()) target_ops.insert({t->second, s.op.op});
  auto analysedBy = [&](const Site& s) -> std::string {
    if (auto t = gate_of.find(s.file); t != gate_of.end()) return t->second;
    if (auto t = chain_of.find(s.file); t != chain_of.end() && target_ops.count({t->second, s.op.op})) return t->second;
    return "";
  };

  std::vector<Gate> gates;
  std::set<std::string> wanted;
  for (auto& s : scan.sites) {
    if (s.in_test) {
      inv.test_sites.push_back(std::move(s));
      continue;
    }
    Gate g;
    g.site = std::move(s);
    g.python_op = scan.python_ops.count(g.site.op.op) > 0;
    const Registration* best = nullptr;
    const Registration* schema = nullptr;
    int best_score = -1;
    for (const Registration* r : by_op[g.site.op.op]) {
      int ns = namespaceMatch(r->ns, g.site.op.ns);
      if (ns == 0) continue;
      if (!r->schema.empty() && (!schema || ns == 2)) schema = r;
      int score = rank(*r) * 4 + ns;
      if (score > best_score) { best = r; best_score = score; }
    }
    if (best) {
      g.registered = true;
      g.registration = *best;
      if (schema) g.schema = schema->schema;
      if (!best->function.empty()) wanted.insert(best->function);
    }
    gates.push_back(std::move(g));
  }

  std::map<std::string, std::vector<Definition>> defs;
  for (const auto& [f, text] : cpp)
    for (auto& d : scanDefinitions(text, f, wanted)) defs[d.name].push_back(std::move(d));

  for (auto& g : gates) {
    if (g.registered && !g.registration.function.empty()) {
      auto it = defs.find(g.registration.function);
      if (it != defs.end() && !it->second.empty()) {
        // The definition nearest the registration: its own file, then the
        // longest shared path, then path order.
        const Definition* best = nullptr;
        for (const auto& d : it->second) {
          if (!best) { best = &d; continue; }
          auto key = [&](const Definition& x) {
            return std::make_tuple(x.file == g.registration.file, sharedPrefix(x.file, g.registration.file));
          };
          if (key(d) > key(*best)) best = &d;
        }
        g.defined = true;
        g.entry = *best;
      }
    }
    g.variables = variablesOf(g);
    if (std::string t = analysedBy(g.site); !t.empty()) {
      g.status = "analysed";
      g.reason = "by target " + t;
    } else {
      std::string k = reasonKey(g);
      g.status = k == "unconditional" ? "unconditional" : "not analysed";
      if (k == "no-registration")
        g.reason = "no registration of " + g.site.op.op + " in the checkout (a library built elsewhere)";
      else if (k == "python-op")
        g.reason = "an op defined in Python (its body, not a C++ entry, is the next hop)";
      else if (k == "torch-op")
        g.reason = "PyTorch's own op (" + g.site.op.ns + ")";
      else if (k == "schema-only")
        g.reason = "registered by its schema alone: no impl binds a C++ function";
      else if (k == "lambda-entry")
        g.reason = "bound to a lambda at " + g.registration.file + ":" + std::to_string(g.registration.line);
      else if (k == "entry-not-found")
        g.reason = "entry " + g.registration.function + " is not defined in the checkout";
      else if (k == "no-model")
        g.reason = "paired; the entry's rejections are not modelled yet";
    }
  }
  inv.gates = std::move(gates);
  return inv;
}

std::string renderText(const Inventory& inv, bool verbose) {
  std::ostringstream out;
  std::map<std::string, int> reasons;
  int conditional = 0, analysed = 0;
  for (const auto& g : inv.gates) {
    if (g.site.conditions.empty() && g.status != "analysed") continue;
    ++conditional;
    if (g.status == "analysed") ++analysed;
    else ++reasons[reasonKey(g)];
  }
  for (const auto& g : inv.gates) {
    bool gate = !g.site.conditions.empty() || g.status == "analysed";
    if (!gate && !verbose) continue;
    out << siteText(g.site) << ": " << g.site.op.str();
    if (!g.site.via.empty()) out << " via " << g.site.via.front();
    out << " in " << g.site.function << "\n";
    if (g.defined)
      out << "  entry: " << g.entry.file << ":" << g.entry.line << " " << g.entry.qualified << " (registered at "
          << g.registration.file << ":" << g.registration.line << ")\n";
    else if (g.registered)
      out << "  registered at " << g.registration.file << ":" << g.registration.line << "\n";
    std::string vars;
    for (const auto& v : g.variables)
      if (v.tested) vars += (vars.empty() ? "" : ", ") + v.python + " -> " + (v.param.empty() ? "#" + std::to_string(v.position) : v.param);
    if (!vars.empty()) out << "  variables: " << vars << "\n";
    for (const auto& c : g.site.conditions) {
      if (c.kind == "else" || c.kind == "exit")
        out << "  when: not (" << c.text << ") (line " << c.line << (c.kind == "exit" ? ", returns early" : "") << ")\n";
      else
        out << "  when: " << (c.kind == "case" ? "case " : "") << c.text << " (line " << c.line
            << (c.kind == "assert" ? ", asserted" : c.kind == "loop" ? ", a loop's test" : "") << ")\n";
    }
    out << "  " << (g.status == "analysed" ? "analysed" + std::string(g.key == "analysed" ? ": " : " ") : g.status + ": ")
        << g.reason << "\n";
    // A gate's first diagnostics (--verbose: all); the JSON has every one.
    for (std::size_t i = 0; i < g.findings.size(); ++i) {
      if (i == 3 && !verbose) {
        out << "    ... " << g.findings.size() - 3 << " more (--verbose)\n";
        break;
      }
      out << "    " << g.findings[i] << "\n";
    }
  }
  std::size_t calls = inv.gates.size();
  int errors = 0, warnings = 0, with_errors = 0;
  for (const auto& g : inv.gates) {
    errors += g.errors;
    warnings += g.warnings;
    with_errors += g.errors > 0;
  }
  out << fmt::format("{} native-op calls in {} Python modules ({} more in tests, benchmarks and examples); "
                     "{} under a condition: {} analysed ({} error{} in {} gate{}, {} warning{}), {} not analysed",
                     calls, inv.python_files, inv.test_sites.size(), conditional, analysed, errors, errors == 1 ? "" : "s",
                     with_errors, with_errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s", conditional - analysed);
  if (!reasons.empty()) {
    out << " (";
    bool first = true;
    for (const auto& [k, n] : reasons) {
      out << (first ? "" : ", ") << k << " " << n;
      first = false;
    }
    out << ")";
  }
  out << "\n";
  return out.str();
}

std::string renderJson(const Inventory& inv) {
  using nlohmann::json;
  json gates = json::array();
  std::map<std::string, int> reasons;
  int conditional = 0, analysed = 0;
  for (const auto& g : inv.gates) {
    json conds = json::array();
    for (const auto& c : g.site.conditions) conds.push_back({{"kind", c.kind}, {"text", c.text}, {"line", c.line}});
    json j = {{"file", g.site.file},      {"line", g.site.line},     {"column", g.site.column},
              {"function", g.site.function}, {"op", g.site.op.str()}, {"via", g.site.via},
              {"conditions", conds},       {"status", g.status},      {"reason", g.reason}};
    if (g.registered)
      j["registration"] = {{"file", g.registration.file}, {"line", g.registration.line},
                           {"namespace", g.registration.ns}, {"function", g.registration.function}};
    if (!g.schema.empty()) j["schema"] = g.schema;
    if (g.defined)
      j["entry"] = {{"file", g.entry.file}, {"line", g.entry.line}, {"body_line", g.entry.body_line}, {"name", g.entry.qualified}};
    json vars = json::array();
    for (const auto& v : g.variables)
      vars.push_back({{"python", v.python}, {"position", v.position}, {"param", v.param}, {"type", v.type}, {"tested", v.tested}});
    j["variables"] = std::move(vars);
    if (g.key == "analysed") {
      json served = json::array();
      for (const auto& ex : g.served) {
        json e = json::array();
        for (const auto& v : ex) e.push_back({{"expr", v.expr}, {"cpp", v.cpp}, {"value", v.words}});
        served.push_back(e);
      }
      j["analysis"] = {{"errors", g.errors}, {"warnings", g.warnings}, {"diagnostics", g.findings},
                       {"variables", g.variable_names}, {"served", served},
                       {"rejected_at", g.rejected_at}};
    }
    gates.push_back(std::move(j));
    if (g.site.conditions.empty() && g.status != "analysed") continue;
    ++conditional;
    if (g.status == "analysed") ++analysed;
    else ++reasons[reasonKey(g)];
  }
  json summary = {{"calls", inv.gates.size()},
                  {"test_calls", inv.test_sites.size()},
                  {"under_condition", conditional},
                  {"analysed", analysed},
                  {"not_analysed", reasons},
                  {"python_files", inv.python_files},
                  {"cpp_files", inv.cpp_files},
                  {"registrations", inv.registrations}};
  return json{{"tool", "layergate"}, {"root", inv.root}, {"summary", summary}, {"gates", gates}, {"notes", inv.notes}}.dump(2) + "\n";
}

}  // namespace layergate::gates
