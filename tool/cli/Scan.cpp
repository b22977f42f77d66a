#include "cli/Scan.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/GitIgnored.h"
#include "jobs/Jobs.h"
#include "jobs/Trace.h"
#include "model/Errors.h"
#include "report/Baseline.h"
#include "target/Chains.h"

namespace layergate::driver {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The analyses run from inside the root so that every path the frontends
// record (locations, trace hops, notes on stubbed includes) is root-relative
// as written, without rewriting each field of the model afterwards.
class InDirectory {
 public:
  explicit InDirectory(const std::string& dir) : old_(fs::current_path()) {
    if (::chdir(dir.c_str()) != 0) throw InputError(dir + ": cannot enter directory: " + std::strerror(errno));
  }
  ~InDirectory() {
    std::error_code ec;
    fs::current_path(old_, ec);
  }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

 private:
  fs::path old_;
};

std::string absolute(const std::string& p) { return p.empty() ? p : fs::absolute(p).lexically_normal().string(); }

std::string filesText(const discover::Unit& u) {
  std::string s;
  for (const auto& f : u.python_files) s += (s.empty() ? "" : ", ") + f;
  s += " + ";
  for (size_t i = 0; i < u.cpp_files.size(); ++i) s += (i ? ", " : "") + u.cpp_files[i];
  return s;
}

// Findings in location order (gate file, line, column), then rule and
// configuration, so that output does not depend on the order checks run in.
void sortFindings(std::vector<model::Finding>& fs_) {
  auto key = [](const model::Finding& f) {
    model::Location l = f.locations.empty() ? model::Location{} : f.locations[0];
    return std::make_tuple(l.file, l.line, l.col, f.rule, f.config.world_size.value_or(0),
                           f.config.full_nvlink.value_or(false), f.message);
  };
  std::stable_sort(fs_.begin(), fs_.end(), [&](const model::Finding& a, const model::Finding& b) { return key(a) < key(b); });
}

// The gate's routes elsewhere whose C++ is in the tree (a JIT extension's
// sources): each analysed on its own, the gate's configurations of that route
// against the route's dispatch (its sources and the headers beside them). A
// route whose C++ is not in the tree, or does not define the target's
// dispatch, is said to be not analysed.
void analyseRoutes(const discover::Unit& u, const Request& base, const std::vector<model::Route>& routes,
                   const std::string& platform, ScanResult& out) {
  for (const auto& rt : routes) {
    discover::Unit ru = u;
    ru.matched_by = "route: " + rt.receiver + " is " + rt.module;
    if (rt.sources.empty()) {
      ru.cpp_files = rt.sources_missing;
      out.notes.push_back(fmt::format("{} ({}) not analysed: its C++ is not in the tree", filesText(ru), ru.matched_by));
      out.unanalysed.push_back({ru, "its C++ is not in the tree" +
                                        (rt.sources_missing.empty() ? std::string(" (no sources named)")
                                                                    : " (" + rt.sources_missing.front() + " is missing)"),
                                false, platform});
      continue;
    }
    std::vector<std::string> cpp;
    for (const auto& src : rt.sources) {
      std::error_code ec;
      fs::path dir = fs::path(src).parent_path();
      std::vector<std::string> headers;
      for (const auto& e : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
        auto ext = e.path().extension().string();
        if (ext == ".cuh" || ext == ".h" || ext == ".hpp" || ext == ".muh")
          headers.push_back((dir / e.path().filename()).generic_string());
      }
      std::sort(headers.begin(), headers.end());
      for (const auto& h : headers)
        if (std::find(cpp.begin(), cpp.end(), h) == cpp.end()) cpp.push_back(h);
    }
    for (const auto& src : rt.sources)
      if (std::find(cpp.begin(), cpp.end(), src) == cpp.end()) cpp.push_back(src);
    ru.cpp_files = cpp;
    Request r = base;
    r.cpp_files = cpp;
    r.route = rt.module;
    try {
      report::Result res = analyse(r);
      sortFindings(res.findings);
      out.units.push_back(ru);
      out.results.push_back(std::move(res));
    } catch (const InputError& e) {
      out.notes.push_back(fmt::format("{} ({}) not analysed: {}", filesText(ru), ru.matched_by, e.what()));
      out.unanalysed.push_back({ru, e.what(), false, platform});
    }
  }
}

}  // namespace

ScanResult scan(const ScanRequest& req) {
  // The analyses run inside the root: the user's rules are found from there.
  target::RuleSet rules = req.base.rules;
  if (rules.bundled_dir.empty()) rules.bundled_dir = target::defaultRulesDir();
  rules.bundled_dir = absolute(rules.bundled_dir);
  for (auto& d : rules.dirs) d = absolute(d);
  for (auto& f : rules.files) f = absolute(f);
  std::string target_name = target::isTargetFile(req.base.target) ? absolute(req.base.target) : req.base.target;
  auto targets = target::loadTargets(rules);

  discover::Options dopt = req.discover;
  if (dopt.ignored.empty()) dopt.ignored = gitIgnored(req.root);
  if (req.base.settings && !req.base.settings->exclude.value.empty() && !dopt.exclude) {
    auto settings = req.base.settings;
    std::string root = req.root;
    dopt.exclude = [settings, root](const std::string& rel) { return settings->excluded(root + "/" + rel); };
  }
  discover::Result found;
  std::optional<trace::Scope> discovering(std::in_place, "Discover", req.root);
  if (!req.base.target.empty()) {
    // --target NAME: that target's own layout if it matches, else every gate
    // the other descriptions find, analysed with NAME's description.
    target::Target forced = selectTarget(rules, target_name);
    // A target file's target among the others, for its platform.
    auto same = std::find_if(targets.begin(), targets.end(), [&](const target::Target& x) { return x.name == forced.name; });
    if (same == targets.end()) targets.push_back(forced);
    else *same = forced;
    forced.discovery.fallback = false;
    found = discover::discover(req.root, {forced}, dopt);
    if (found.units.empty()) {
      found = discover::discover(req.root, targets, dopt);
      discover::requireUnits(found, targets, req.root);
      for (auto& u : found.units) u.target = forced.name;
    }
  } else {
    found = discover::discover(req.root, targets, dopt);
    discover::requireUnits(found, targets, req.root);
  }

  discovering.reset();
  ScanResult out;
  out.notes = found.notes;
  Request base = req.base;
  base.rules = rules;
  for (auto& d : base.cpp.include_dirs) d = absolute(d);
  if (base.cpp.real_cuda_sdk) base.cpp.cuda_path = absolute(base.cpp.cuda_path);

  // What runs: the units of the platform asked for whose target has a model.
  std::vector<std::string> platforms;
  std::vector<std::size_t> runs;  // indices into found.units
  for (std::size_t i = 0; i < found.units.size(); ++i) {
    const auto& u = found.units[i];
    auto t = std::find_if(targets.begin(), targets.end(), [&](const target::Target& x) { return x.name == u.target; });
    platforms.push_back(t != targets.end() ? t->platform : "");
    if ((req.platform == "all" || platforms.back() == req.platform) && (t == targets.end() || t->unmodelled.empty()))
      runs.push_back(i);
  }

  // The analyses, side by side (jobs::limit() at once; each has its own
  // parses, Z3 context and results), each with its routes; merged below in
  // discovery order, so the output is the same as one after another.
  std::vector<ScanResult> parts(found.units.size());
  std::vector<std::string> errors(found.units.size());
  InDirectory in(req.root);
  jobs::forEach(runs.size(), [&](std::size_t k) {
    const std::size_t i = runs[k];
    const auto& u = found.units[i];
    ScanResult& part = parts[i];
    Request r = base;
    r.target = target_name.empty() ? u.target : target_name;
    r.python_files = u.python_files;
    r.cpp_files = u.cpp_files;
    r.chain_by_content = u.chain_by_content;
    trace::Scope scope("Analysis", u.target);
    try {
      report::Result res = analyse(r);
      sortFindings(res.findings);
      auto routes = res.gate.routes;
      part.units.push_back(u);
      part.results.push_back(std::move(res));
      analyseRoutes(u, r, routes, platforms[i], part);
    } catch (const InputError& e) {
      errors[i] = e.what();
      part.notes.push_back(fmt::format("{} (target {}) not analysed: {}", filesText(u), u.target, e.what()));
      part.unanalysed.push_back({u, e.what(), false, platforms[i]});
    }
  });

  std::string first_error;
  for (std::size_t i = 0; i < found.units.size(); ++i) {
    const auto& u = found.units[i];
    auto t = std::find_if(targets.begin(), targets.end(), [&](const target::Target& x) { return x.name == u.target; });
    const std::string& platform = platforms[i];
    if (req.platform != "all" && platform != req.platform) {
      ++out.skipped[platform];
      continue;
    }
    if (t != targets.end() && !t->unmodelled.empty()) {
      out.unanalysed.push_back({u, t->unmodelled, true, platform});
      if (first_error.empty())
        first_error = filesText(u) + " (target " + u.target + ") is present but not analysed: " + t->unmodelled;
      continue;
    }
    ScanResult& part = parts[i];
    if (first_error.empty()) first_error = errors[i];
    for (auto& x : part.units) out.units.push_back(std::move(x));
    for (auto& x : part.results) out.results.push_back(std::move(x));
    for (auto& x : part.notes) out.notes.push_back(std::move(x));
    for (auto& x : part.unanalysed) out.unanalysed.push_back(std::move(x));
  }
  if (out.results.empty() && first_error.empty() && !out.skipped.empty()) {
    std::string others;
    for (const auto& [p, n] : out.skipped) others += fmt::format("{}{} {} gate{}", others.empty() ? "" : ", ", n, p, n == 1 ? "" : "s");
    throw InputError(fmt::format("{}: no {} gate found (--platform {}), only {}", req.root, req.platform, req.platform, others));
  }
  if (out.results.empty()) throw InputError(first_error);
  trace::Scope chains("Selection chains");
  try {
    std::map<std::string, std::string> platform_of;
    for (const auto& t : targets) platform_of[t.name] = t.platform;
    // Every rules directory's selection layers; a later one replaces one of its name.
    std::vector<target::ChainSpec> specs;
    for (const auto& dir : target::ruleDirs(rules))
      for (auto& c : target::loadChains(dir)) {
        auto same = std::find_if(specs.begin(), specs.end(), [&](const target::ChainSpec& x) { return x.name == c.name; });
        if (same == specs.end()) specs.push_back(std::move(c));
        else *same = std::move(c);
      }
    out.chains = selectionChains(specs, out.results, platform_of, base.max_file_bytes);
  } catch (const InputError& e) {
    out.notes.push_back(std::string("selection layer not read: ") + e.what());
  }
  return out;
}

int countAtLeast(const ScanResult& s, model::Severity severity) {
  int n = 0;
  for (const auto& r : s.results) n += report::countAtLeast(r, severity);
  return n;
}

namespace {

std::string checkingText(const discover::Unit& u) {
  return fmt::format("layergate: checking {} (target {}{})", filesText(u), u.target,
                     u.matched_by.empty() ? "" : ", " + u.matched_by);
}

std::string skippedText(const ScanResult& s) {
  std::string out;
  for (const auto& [p, n] : s.skipped) out += fmt::format("{}{} {} gate{}", out.empty() ? "" : ", ", n, p, n == 1 ? "" : "s");
  return out.empty() ? out : out + " left out (--platform)";
}

}  // namespace

std::string renderScanText(const ScanResult& s, const report::TextOptions& o) {
  std::vector<std::string> platforms;
  auto seen = [&](const std::string& p) {
    if (std::find(platforms.begin(), platforms.end(), p) == platforms.end()) platforms.push_back(p);
  };
  for (const auto& r : s.results) seen(r.platform);
  for (const auto& x : s.unanalysed) seen(x.platform);
  // The platforms with something to report first, then by name.
  auto quiet = [&](const std::string& p) {
    for (const auto& r : s.results)
      if (r.platform == p && report::cleanText(r).empty()) return false;
    for (const auto& x : s.unanalysed)
      if (x.platform == p) return false;
    return true;
  };
  std::stable_sort(platforms.begin(), platforms.end(), [&](const std::string& a, const std::string& b) {
    return std::make_pair(quiet(a), a) < std::make_pair(quiet(b), b);
  });
  const bool several = platforms.size() > 1;
  const bool details = o.matrix || o.trace || o.notes;
  std::string out;
  for (const auto& p : platforms) {
    if (several) {
      int n = 0;
      for (const auto& r : s.results) n += r.platform == p;
      for (const auto& x : s.unanalysed) n += x.platform == p && x.unmodelled;
      out += fmt::format("{}layergate: platform {} ({} gate{})\n", out.empty() ? "" : "\n", p, n, n == 1 ? "" : "s");
    }
    for (size_t i = 0; i < s.results.size(); ++i) {
      const auto& r = s.results[i];
      if (r.platform != p) continue;
      std::string clean = report::cleanText(r);
      // Nothing to report: one line, when several analyses share the output
      // and no detail was asked for.
      if (!clean.empty() && !details && (s.results.size() > 1 || !s.unanalysed.empty())) {
        out += checkingText(s.units[i]) + ": " + clean + "\n" + report::preexistingText(r);
        continue;
      }
      out += checkingText(s.units[i]) + "\n";
      out += report::renderText(r, o);
    }
    for (const auto& x : s.unanalysed) {
      if (x.platform != p) continue;
      if (x.unmodelled)
        out += fmt::format("layergate: warning: {} (target {}) is present and NOT analysed: {}\n", filesText(x.unit),
                           x.unit.target, x.reason);
      else if (!o.notes)  // (with --verbose, the notes below say it)
        out += fmt::format("layergate: note: {} (target {}{}) not analysed: {}\n", filesText(x.unit), x.unit.target,
                           x.unit.matched_by.empty() ? "" : ", " + x.unit.matched_by, x.reason);
    }
  }
  if (o.matrix)
    for (const auto& c : s.chains) out += renderChainText(c);
  if (o.notes)
    for (const auto& n : s.notes) out += fmt::format("layergate: note: {}\n", n);
  if (s.results.size() > 1 || !s.unanalysed.empty() || !s.skipped.empty()) {
    report::GroupCounts c;
    int suppressed = 0, baselined = 0, preexisting = 0;
    for (const auto& r : s.results) {
      auto g = report::countGroups(r);
      c.errors += g.errors, c.warnings += g.warnings, c.error_cells += g.error_cells, c.warning_cells += g.warning_cells;
      suppressed += report::countSuppressed(r), baselined += r.baselined;
      preexisting += static_cast<int>(r.preexisting.size());
    }
    std::string tail;
    if (!s.unanalysed.empty()) tail += fmt::format("; {} not analysed", s.unanalysed.size());
    if (!s.skipped.empty()) tail += "; " + skippedText(s);
    out += fmt::format("\nin all, {} gate{}: {}{}{}\n", s.results.size(), s.results.size() == 1 ? "" : "s",
                       report::summaryText(c), report::suppressedText(suppressed, baselined, preexisting), tail);
  }
  return out;
}

std::string renderScanConcise(const ScanResult& s) {
  std::string out;
  int errors = 0, warnings = 0;
  for (const auto& r : s.results) {
    out += report::renderConcise(r);
    auto c = report::countGroups(r);
    errors += c.errors, warnings += c.warnings;
  }
  std::string count = report::conciseCount(errors, warnings);
  if (!s.unanalysed.empty() || !s.skipped.empty()) {
    count.pop_back();  // the newline
    if (!s.unanalysed.empty())
      count += fmt::format(" {} gate{} not analysed.", s.unanalysed.size(), s.unanalysed.size() == 1 ? "" : "s");
    if (!s.skipped.empty()) count += " " + skippedText(s) + ".";
    count += "\n";
  }
  return out + count;
}

namespace {

// A unit found and not analysed, in the words SARIF's notification uses.
std::string unanalysedText(const ScanResult::Unanalysed& x) {
  return filesText(x.unit) + " (target " + x.unit.target + ") not analysed: " + x.reason;
}

}  // namespace

std::string renderScanGithub(const ScanResult& s) {
  std::string out;
  for (const auto& r : s.results) out += report::renderGithub(r);
  // Never a silent pass: a unit not analysed is an annotation on its gate
  // (a warning when layergate has no model of it, an error when it stopped).
  for (const auto& x : s.unanalysed)
    out += fmt::format("::{} {}title=layergate::{}\n", x.unmodelled ? "warning" : "error",
                       x.unit.python_files.empty() ? "" : "file=" + report::githubEscapeProperty(x.unit.python_files[0]) + ",",
                       report::githubEscapeData(unanalysedText(x)));
  return out;
}

std::string renderScanGitlab(const ScanResult& s) {
  json issues = json::array();
  for (const auto& r : s.results)
    for (auto& i : json::parse(report::renderGitlab(r))) issues.push_back(std::move(i));
  for (const auto& x : s.unanalysed) {
    std::string file = x.unit.python_files.empty() ? "" : x.unit.python_files[0];
    issues.push_back({{"description", unanalysedText(x)},
                      {"check_name", "not-analysed"},
                      {"fingerprint", report::stableHash("not-analysed\n" + file)},
                      {"severity", x.unmodelled ? "minor" : "major"},
                      {"location", {{"path", file}, {"lines", {{"begin", 1}}}}}});
  }
  return issues.dump(2) + "\n";
}

std::string renderScanJson(const ScanResult& s) {
  json analyses = json::array();
  for (size_t i = 0; i < s.results.size(); ++i) {
    const auto& r = s.results[i];
    json j = json::parse(report::renderJson(r));
    j.erase("tool");
    // Which layout found the files: the target's own paths, or its dispatch
    // by content in another extension.
    if (i < s.units.size())
      j["layout"] = {{"target", s.units[i].target},
                     {"dispatch_found", s.units[i].matched_by.empty() ? "by path" : s.units[i].matched_by}};
    analyses.push_back(std::move(j));
  }
  // The analyses' summaries added up (the counts of the text report's last line).
  json summary = json::object();
  for (const auto& a : analyses)
    for (const auto& [k, v] : a["summary"].items()) summary[k] = summary.value(k, 0) + v.get<int>();
  for (const char* k : {"errors", "warnings", "error_configurations", "warning_configurations", "suppressed", "baselined",
                        "preexisting"})
    if (!summary.contains(k)) summary[k] = 0;
  summary["not_analysed"] = s.unanalysed.size();
  json unanalysed = json::array();
  for (const auto& x : s.unanalysed)
    unanalysed.push_back({{"target", x.unit.target},
                          {"python_files", x.unit.python_files},
                          {"cpp_files", x.unit.cpp_files},
                          {"reason", x.reason},
                          {"kind", x.unmodelled ? "no model" : "stopped"}});
  json chains = json::array();
  for (const auto& c : s.chains) chains.push_back(chainJson(c));
  json out = {{"tool", {{"name", "layergate"}, {"version", LAYERGATE_VERSION}}},
              {"analyses", analyses},
              {"not_analysed", unanalysed},
              {"selection_layers", chains},
              {"notes", s.notes},
              {"summary", summary}};
  return out.dump(2) + "\n";
}

std::string renderScanHtml(const ScanResult& s, const report::HtmlOptions& o) {
  std::vector<report::HtmlSection> sections;
  for (size_t i = 0; i < s.results.size(); ++i)
    sections.push_back({fmt::format("{} (target {})", filesText(s.units[i]), s.units[i].target), &s.results[i]});
  // A layout found and not modelled is said on the page too (a stopped
  // analysis already has its note).
  std::vector<std::string> notes = s.notes;
  for (const auto& x : s.unanalysed)
    if (x.unmodelled)
      notes.push_back(fmt::format("{} (target {}) is present and NOT analysed: {}", filesText(x.unit), x.unit.target, x.reason));
  return report::renderHtml(sections, notes, o);
}

std::string renderScanSarif(const ScanResult& s, const report::SarifOptions& o) {
  json out = json::parse(report::renderSarif(s.results.at(0), o));
  json& results = out["runs"][0]["results"];
  for (size_t i = 1; i < s.results.size(); ++i) {
    json more = json::parse(report::renderSarif(s.results[i], o));
    for (auto& r : more["runs"][0]["results"]) results.push_back(std::move(r));
    if (more["runs"][0].contains("invocations")) {
      json& inv = out["runs"][0]["invocations"];
      if (!inv.is_array() || inv.empty()) inv = more["runs"][0]["invocations"];
      else for (auto& n : more["runs"][0]["invocations"][0]["toolExecutionNotifications"]) inv[0]["toolExecutionNotifications"].push_back(n);
    }
  }
  // Units found and not analysed: tool execution notifications (SARIF 2.1.0
  // §3.20.21), so that code scanning shows the run as incomplete, not clean.
  if (!s.unanalysed.empty()) {
    json notes = json::array();
    for (const auto& x : s.unanalysed) {
      json locs = json::array();
      for (const auto& f : x.unit.python_files) {
        report::SarifUri u = report::sarifUri(f, o);
        json a = {{"uri", u.uri}};
        if (!u.base_id.empty()) a["uriBaseId"] = u.base_id;
        locs.push_back({{"physicalLocation", {{"artifactLocation", a}}}});
      }
      notes.push_back({{"level", x.unmodelled ? "warning" : "error"},
                       {"message", {{"text", filesText(x.unit) + " (target " + x.unit.target + ") not analysed: " + x.reason}}},
                       {"locations", locs}});
    }
    json& inv = out["runs"][0]["invocations"];
    if (inv.is_array() && !inv.empty() && inv[0].contains("toolExecutionNotifications"))
      for (auto& n : notes) inv[0]["toolExecutionNotifications"].push_back(std::move(n));
    else
      inv = json::array({{{"executionSuccessful", true}, {"toolExecutionNotifications", notes}}});
  }
  return out.dump(2) + "\n";
}

}  // namespace layergate::driver
