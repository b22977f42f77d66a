#include "cli/GateAnalysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "checks/Check.h"
#include "jobs/Jobs.h"
#include "model/Errors.h"
#include "python/PythonFrontend.h"
#include "target/Target.h"

namespace layergate::driver {
namespace {

using nlohmann::json;

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string identifierOf(const std::string& s) {
  std::string out;
  for (char c : s) out += isWordChar(c) ? c : '_';
  while (out.find("__") != std::string::npos) out.replace(out.find("__"), 2, "_");
  while (!out.empty() && out.front() == '_') out.erase(0, 1);
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

// Every occurrence of e in text at expression boundaries (not inside a longer
// name or after a dot) replaced by with.
std::string replaceExpr(const std::string& text, const std::string& e, const std::string& with) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = text.find(e); at != std::string::npos; at = text.find(e, at + 1)) {
    if (at < from) continue;
    bool left = at == 0 || (!isWordChar(text[at - 1]) && text[at - 1] != '.');
    std::size_t end = at + e.size();
    bool right = end >= text.size() || !isWordChar(text[end]) || !isWordChar(e.back());
    if (!left || !right) continue;
    out += text.substr(from, at - from) + with;
    from = end;
  }
  return out + text.substr(from);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool isTensorType(const std::string& t) { return t.find("Tensor") != std::string::npos; }
bool isIntType(const std::string& t) {
  std::string l = lower(t);
  if (l.find('*') != std::string::npos || l.find('[') != std::string::npos || l.find("vector") != std::string::npos ||
      l.find("optional") != std::string::npos || l.find('?') != std::string::npos || l.find("array") != std::string::npos)
    return false;
  for (const char* k : {"int", "long", "size_t", "symint", "unsigned"})
    if (l.find(k) != std::string::npos) return true;
  return false;
}
bool isBoolType(const std::string& t) {
  std::string l = lower(t);
  return (l == "bool" || l == "const bool" || l == "const bool&" || l == "bool&") ;
}

// The element types a dtype variable takes, as Python and C++ spell them.
struct DType {
  const char* value;
  std::vector<const char*> python;
  std::vector<const char*> cpp;  // the ScalarType enumerator and the k-constant's suffix
};
const std::vector<DType>& dtypes() {
  static const std::vector<DType> d = {
      {"float16", {"torch.float16", "torch.half"}, {"Half", "kHalf", "kFloat16"}},
      {"bfloat16", {"torch.bfloat16"}, {"BFloat16", "kBFloat16"}},
      {"float32", {"torch.float32", "torch.float"}, {"Float", "kFloat", "kFloat32"}},
      {"int8", {"torch.int8"}, {"Char", "kChar", "kInt8"}},
      {"uint8", {"torch.uint8"}, {"Byte", "kByte", "kUInt8"}},
      {"int32", {"torch.int32", "torch.int"}, {"Int", "kInt", "kInt32"}},
      {"float8_e4m3fn", {"torch.float8_e4m3fn"}, {"Float8_e4m3fn", "kFloat8_e4m3fn"}},
      {"float8_e4m3fnuz", {"torch.float8_e4m3fnuz"}, {"Float8_e4m3fnuz", "kFloat8_e4m3fnuz"}},
      {"float8_e5m2", {"torch.float8_e5m2"}, {"Float8_e5m2", "kFloat8_e5m2"}},
  };
  return d;
}

struct Var {
  std::string name, type, doc;  // type: int, bool, enum (a dtype)
  std::vector<std::pair<std::string, std::string>> python;  // Python expression -> the policy's parameter
  std::string param;  // the policy's parameter
};

}  // namespace

ImpliedTarget impliedTarget(const gates::Gate& g) {
  ImpliedTarget out;
  if (!g.defined || g.site.line < 2) return out;
  for (const auto& c : g.site.conditions)
    if (c.kind == "case" || c.line < 2 || c.line > g.site.line) return out;
  std::vector<Var> vars;
  json cpp_values = json::object(), members = json::object();
  std::set<std::string> names;
  auto unique = [&](std::string n) {
    std::string base = n;
    for (int i = 2; names.count(n); ++i) n = base + "_" + std::to_string(i);
    names.insert(n);
    return n;
  };
  bool any_dtype = false;
  for (const auto& v : g.variables) {
    if (!v.tested || v.param.empty()) continue;
    if (isTensorType(v.type)) {
      // Its dims and its dtype, as the conditions read them.
      std::string esc = std::regex_replace(v.python, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
      std::regex dim(esc + R"(\s*\.\s*(?:shape\s*\[\s*(-?\d+)\s*\]|size\s*\(\s*(-?\d+)\s*\)))");
      std::set<std::string> seen;
      for (const auto& c : g.site.conditions) {
        for (std::sregex_iterator it(c.text.begin(), c.text.end(), dim), end; it != end; ++it) {
          std::string k = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
          std::string written = it->str();
          if (!seen.insert(written).second) continue;
          std::string key = identifierOf(v.python) + "_shape_" + (k[0] == '-' ? "m" + k.substr(1) : k);
          auto found = std::find_if(vars.begin(), vars.end(), [&](const Var& x) { return x.name == key; });
          if (found == vars.end()) {
            Var x{unique(key), "size", v.python + ".shape[" + k + "]", {}, ""};
            x.param = "lg_" + x.name;
            for (const std::string& form : {v.param + ".size(" + k + ")", v.param + ".sizes()[" + k + "]"})
              cpp_values[form] = {{"var", x.name}};
            out.cpp_form[x.name] = v.param + ".size(" + k + ")";
            vars.push_back(std::move(x));
            found = vars.end() - 1;
          }
          found->python.push_back({written, found->param});
        }
        // Facts of the tensor the conditions test and the entry can read:
        // its rank, element count, layout and device.
        struct Fact {
          const char* python;  // after `x.`
          const char* suffix;  // of the variable's name
          const char* type;
          const char* cpp;     // after `param.`
        };
        static const Fact facts[] = {{"ndim", "ndim", "dim", "dim()"},     {"dim()", "ndim", "dim", "dim()"},
                                     {"numel()", "numel", "size", "numel()"}, {"is_contiguous()", "contiguous", "bool", "is_contiguous()"},
                                     {"is_cuda", "is_cuda", "bool", "is_cuda()"}};
        for (const auto& fact : facts) {
          std::string written = v.python + "." + fact.python;
          if (c.text.find(written) == std::string::npos || !gates::reads(c.text, written)) continue;
          std::string key = identifierOf(v.python) + "_" + fact.suffix;
          auto found = std::find_if(vars.begin(), vars.end(), [&](const Var& x) { return x.name == key; });
          if (found == vars.end()) {
            Var x{unique(key), fact.type, written, {}, ""};
            x.param = "lg_" + x.name;
            std::string form = v.param + "." + fact.cpp;
            cpp_values[form] = {{"var", x.name}};
            if (std::string(fact.cpp) == "dim()") cpp_values[v.param + ".ndimension()"] = {{"var", x.name}};
            out.cpp_form[x.name] = form;
            vars.push_back(std::move(x));
            found = vars.end() - 1;
          }
          found->python.push_back({written, found->param});
        }
        if (gates::reads(c.text, v.python + ".dtype") && !names.count(identifierOf(v.python) + "_dtype")) {
          Var x{unique(identifierOf(v.python) + "_dtype"), "enum", v.python + ".dtype", {}, ""};
          x.param = "lg_" + x.name;
          x.python.push_back({v.python + ".dtype", x.param});
          for (const std::string& form : {v.param + ".scalar_type()", v.param + ".dtype()"}) cpp_values[form] = {{"var", x.name}};
          out.cpp_form[x.name] = v.param + ".scalar_type()";
          vars.push_back(std::move(x));
          any_dtype = true;
        }
      }
      continue;
    }
    bool is_int = isIntType(v.type), is_bool = isBoolType(v.type);
    if (!is_int && !is_bool) continue;
    Var x{unique(identifierOf(v.param)), is_int ? "int" : "bool", v.python, {}, ""};
    x.param = "lg_" + x.name;
    x.python.push_back({v.python, x.param});
    members[v.param] = x.name;
    out.cpp_form[x.name] = v.param;
    vars.push_back(std::move(x));
  }
  if (vars.empty()) return out;

  // The policy: each condition on its own line, in its positive form.
  std::map<int, std::vector<std::string>> at;
  for (const auto& c : g.site.conditions) {
    std::string t = c.text;
    // Longest expressions first: `x.shape[-1]` before `x`.
    std::vector<std::pair<std::string, std::string>> subst;
    for (const auto& x : vars) subst.insert(subst.end(), x.python.begin(), x.python.end());
    std::sort(subst.begin(), subst.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& [e, p] : subst) t = replaceExpr(t, e, p);
    at[c.line].push_back(c.kind == "else" || c.kind == "exit" ? "not (" + t + ")" : "(" + t + ")");
  }
  std::string fname = g.site.function.substr(g.site.function.rfind('.') == std::string::npos ? 0 : g.site.function.rfind('.') + 1);
  fname = identifierOf(fname == "<module>" ? "module" : fname);
  out.function = fname;
  std::vector<std::string> lines(static_cast<std::size_t>(g.site.line));
  std::string params;
  for (const auto& x : vars) params += (params.empty() ? "" : ", ") + x.param;
  lines[0] = "def " + fname + "(" + params + "):";
  auto conj = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " and ") + x;
    return s;
  };
  for (const auto& [line, cs] : at)
    if (line != g.site.line) lines[static_cast<std::size_t>(line - 1)] = "    if not (" + conj(cs) + "): return False";
  auto last = at.find(g.site.line);
  lines.back() = "    return " + (last == at.end() ? std::string("True") : conj(last->second));
  for (const auto& l : lines) out.python += l + "\n";

  json variables = json::array(), inputs = json::object();
  for (const auto& x : vars) {
    json v = {{"name", x.name}, {"doc", x.doc}};
    if (x.type == "int" || x.type == "size" || x.type == "dim") {
      // A dim or an element count is not negative; a rank is small.
      v["type"] = "int";
      v["min"] = x.type == "int" ? -(std::int64_t{1} << 31) : 0;
      v["max"] = x.type == "dim" ? 8 : (std::int64_t{1} << 31) - 1;
    } else if (x.type == "bool") {
      v["type"] = "bool";
    } else {
      v["type"] = "enum";
      json values = json::array();
      for (const auto& d : dtypes()) values.push_back(d.value);
      values.push_back("other");
      v["values"] = values;
    }
    variables.push_back(v);
    inputs[x.param] = {{"var", x.name}};
    out.variables.push_back(x.name + " <- " + x.doc);
  }
  for (const auto& d : dtypes()) out.cpp_value[d.value] = std::string("at::ScalarType::") + d.cpp[0];
  json python_values = json::object();
  if (any_dtype)
    for (const auto& d : dtypes()) {
      for (const char* p : d.python) python_values[p] = {{"const", d.value}};
      for (const char* c : d.cpp) {
        std::string s = c;
        if (s[0] == 'k') {
          for (const char* ns : {"at::", "torch::", "c10::"}) cpp_values[std::string(ns) + s] = {{"const", d.value}};
        } else {
          for (const char* ns : {"at::ScalarType::", "c10::ScalarType::", "torch::ScalarType::", "ScalarType::",
                                 "torch::headeronly::ScalarType::"})
            cpp_values[std::string(ns) + s] = {{"const", d.value}};
        }
      }
    }
  bool rocm = g.entry.file.find("rocm") != std::string::npos || g.entry.file.find(".hip") != std::string::npos;
  json t = {
      {"name", "gate-" + g.site.op.op},
      {"description", "the gate of " + g.site.op.str() + " at " + g.site.file + ":" + std::to_string(g.site.line) +
                          " against its entry " + g.entry.qualified},
      {"platform", rocm ? "rocm" : "cuda"},
      {"discovery", {{"python", json::array({g.site.file})}, {"cpp", json::array({g.entry.file})}}},
      {"variables", variables},
      {"python",
       {{"classes", json::array()},
        {"policy", {{"functions", json::array({fname})}, {"returns", "bool"}, {"inputs", inputs}}},
        {"values", python_values}}},
      {"cpp",
       {{"classes", json::array()},
        {"dispatch_functions", json::array({g.entry.name})},
        {"members", members},
        {"values", cpp_values},
        {"include_dirs", json::array({"csrc", "include"})},
        {"defines", rocm ? json::array({"USE_ROCM"}) : json::array()}}}};
  out.json = t.dump();
  return out;
}

std::vector<GateAnalysis> analyseGates(gates::Inventory& inv, const std::string& root, const Request& base) {
  auto path = [&](const std::string& rel) { return root == "." || root.empty() ? rel : root + "/" + rel; };
  struct Job {
    std::size_t gate;
    ImpliedTarget implied;
  };
  std::vector<Job> todo;
  for (std::size_t i = 0; i < inv.gates.size(); ++i) {
    auto& g = inv.gates[i];
    if (gates::reasonKey(g) != "no-model") continue;
    ImpliedTarget t = impliedTarget(g);
    if (t.json.empty()) {
      g.key = "no-variable";
      g.reason = "its conditions read no int, bool, dim or dtype the entry receives";
      continue;
    }
    todo.push_back({i, std::move(t)});
  }
  std::vector<GateAnalysis> out(todo.size());
  std::vector<std::string> failed(todo.size());
  // One parse per entry file and dispatch spec, however many gates read it.
  std::mutex mu;
  std::map<std::string, std::shared_ptr<model::Dispatch>> dispatches;
  jobs::forEach(todo.size(), [&](std::size_t k) {
    const Job& job = todo[k];
    const gates::Gate& g = inv.gates[job.gate];
    GateAnalysis& a = out[k];
    a.gate = job.gate;
    try {
      target::Target tgt = target::parseTarget(job.implied.json, "the gate at " + g.site.file + ":" + std::to_string(g.site.line));
      report::Result& r = a.result;
      r.target = tgt.name;
      r.platform = tgt.platform;
      r.roles = tgt.roles;
      r.python_files = {path(g.site.file)};
      r.cpp_files = {path(g.entry.file)};
      python::Limits limits;
      limits.max_bytes = base.max_file_bytes;
      limits.max_depth = base.max_depth;
      r.gate = python::extractGate({{path(g.site.file), job.implied.python}}, tgt.python, limits);
      std::string key = g.entry.file + "\n" + g.entry.name + "\n" + json::parse(job.implied.json)["cpp"].dump();
      std::shared_ptr<model::Dispatch> d;
      {
        std::lock_guard<std::mutex> lock(mu);
        d = dispatches[key];
      }
      if (!d) {
        cpp::ParseOptions o = base.cpp;
        o.max_depth = base.max_depth;
        d = std::make_shared<model::Dispatch>(cpp::extractDispatch({path(g.entry.file)}, tgt.cpp, o));
        // A path that does not throw serves the call.
        for (auto& l : d->leaves)
          if (l.kind == model::LeafKind::None) {
            l.kind = model::LeafKind::Launch;
            l.kernel = g.entry.name;
          }
        std::lock_guard<std::mutex> lock(mu);
        dispatches[key] = d;
      }
      r.dispatch = *d;
      // The variables the entry reads span the regions; those only the
      // Python conditions read stay existential (a box over `x.shape[-1] %
      // 64 == 0` would be one region per multiple).
      std::set<std::string> read;
      for (const auto& l : r.dispatch.leaves)
        for (const auto& v : model::varsOf(l.condition)) read.insert(v.name);
      target::Variables spanned;
      for (const auto& v : tgt.variables)
        if (read.count(v.name)) spanned.push_back(v);
      r.variables = spanned;
      solve::Options so = base.solve;
      for (const auto& in : tgt.python.policy.inputs) so.switch_calls_without.push_back(in.param);
      r.space = solve::solveSpace(r.gate, r.dispatch, spanned, so);
      r.findings = checks::spaceFindings(r.gate, r.dispatch, *r.space);
      Request req = base;
      req.python_files = r.python_files;
      req.cpp_files = r.cpp_files;
      finishFindings(req, r);
    } catch (const std::exception& e) {
      failed[k] = e.what();
    } catch (...) {
      // One gate's failure (a solver exception of its own type) never stops
      // the others: it is listed as stopped.
      failed[k] = "an internal error in this gate's analysis";
    }
  });
  std::vector<GateAnalysis> done;
  for (std::size_t k = 0; k < out.size(); ++k) {
    auto& g = inv.gates[todo[k].gate];
    if (!failed[k].empty()) {
      g.key = "unread";
      std::string why = failed[k];
      if (auto nl = why.find('\n'); nl != std::string::npos) why = why.substr(0, nl);
      g.reason = why.find("syntax error") != std::string::npos
                     ? "its conditions do not restate as one Python expression (" + why + ")"
                     : "the analysis stopped: " + why;
      continue;
    }
    const report::Result& r = out[k].result;
    int errors = report::countAtLeast(r, model::Severity::Error);
    int warnings = report::countAtLeast(r, model::Severity::Warning) - errors;
    g.status = "analysed";
    g.key = "analysed";
    g.reason = errors + warnings == 0 ? "no gaps" : fmt::format("{} error{}, {} warning{}", errors, errors == 1 ? "" : "s",
                                                                warnings, warnings == 1 ? "" : "s");
    g.errors = errors;
    g.warnings = warnings;
    std::istringstream lines(report::renderConcise(r));
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) g.findings.push_back(l);
    g.variable_names = todo[k].implied.variables;
    for (const auto& f : r.findings) {
      if (f.severity != model::Severity::Error || f.suppressed) continue;
      for (const auto& l : f.locations) {
        if (l.file != r.cpp_files.front()) continue;
        std::string at = g.entry.file + ":" + std::to_string(l.line);
        if (std::find(g.rejected_at.begin(), g.rejected_at.end(), at) == g.rejected_at.end()) g.rejected_at.push_back(at);
      }
    }
    // A few configurations the gate admits and the entry serves, in the
    // entry's spelling (what a planted rejection of one is written with).
    if (r.space)
      for (const auto& reg : r.space->served) {
        if (g.served.size() >= 3) break;
        std::vector<gates::Gate::Value> ex;
        for (const auto& [var, v] : reg.example.values)
          if (auto f = todo[k].implied.cpp_form.find(var); f != todo[k].implied.cpp_form.end())
            ex.push_back({f->second, std::to_string(v), std::to_string(v)});
        for (const auto& [var, v] : reg.example.texts)
          if (auto f = todo[k].implied.cpp_form.find(var); f != todo[k].implied.cpp_form.end()) {
            auto c = todo[k].implied.cpp_value.find(v);
            if (c != todo[k].implied.cpp_value.end()) ex.push_back({f->second, c->second, v});
          }
        if (!ex.empty()) g.served.push_back(std::move(ex));
      }
    done.push_back(std::move(out[k]));
  }
  return done;
}

}  // namespace layergate::driver
