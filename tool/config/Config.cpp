#include "config/Config.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "checks/Check.h"
#include "discover/Discover.h"
#include "model/Errors.h"

namespace layergate::config {
namespace {

namespace fs = std::filesystem;

// How a path is shown in messages, as compilers do: a relative path as the
// user gave it; an absolute one (given, or found by the search upwards)
// relative to the current directory when it is below it, else absolute.
std::string shown(const fs::path& p) {
  if (p.is_relative()) return p.lexically_normal().string();
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (ec) return p.string();
  fs::path rel = p.lexically_normal().lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return p.lexically_normal().string();
  return rel.string();
}

std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const std::vector<std::string>& knownKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"select", "ignore",        "severity", "fail-on",         "max-world-size",
                                  "solver-rlimit", "strict", "rules",         "bundled-rules", "exclude", "per-file-ignores"};
    for (const auto& l : limitKeys()) k.push_back(l.key);
    return k;
  }();
  return keys;
}

const LimitKey* limit(const std::string& key) {
  for (const auto& l : limitKeys())
    if (key == l.key) return &l;
  return nullptr;
}

// Reads one table of settings; every message starts with FILE:LINE:COL.
class Reader {
 public:
  Reader(std::string file, std::string section, Settings& s) : file_(std::move(file)), section_(std::move(section)), s_(s) {}

  void read(const toml::table& t) {
    for (auto&& [k, v] : t) {
      std::string key(k.str());
      std::string at = where(k.source());
      if (key == "select") {
        s_.select = {codes(v, key), at};
      } else if (key == "ignore") {
        s_.ignore = {codes(v, key), at};
      } else if (key == "severity") {
        const toml::table* sev = table(v, key);
        for (auto&& [rk, rv] : *sev) {
          std::string code(rk.str());
          if (!checks::findRule(code))
            fail(rk.source(), fmt::format("unknown rule '{}' in {}{}", code, sub("severity"), knownRules()));
          s_.severity[code] = {severity(rv, code), where(rk.source())};
        }
      } else if (key == "fail-on") {
        std::string f = string(v, key);
        if (f != "error" && f != "warning" && f != "never")
          fail(v.source(), fmt::format("bad value '{}' for 'fail-on' (expected \"error\", \"warning\" or \"never\")", f));
        s_.fail_on = {f, at};
      } else if (key == "max-world-size") {
        const auto* i = v.as_integer();
        if (!i || i->get() < 1 || i->get() > 64)
          fail(v.source(), "'max-world-size' must be an integer from 1 to 64");
        s_.max_world_size = {static_cast<int>(i->get()), at};
      } else if (key == "solver-rlimit") {
        const auto* i = v.as_integer();
        if (!i || i->get() < 1 || i->get() > std::numeric_limits<unsigned>::max())
          fail(v.source(), fmt::format("'solver-rlimit' must be an integer from 1 to {}", std::numeric_limits<unsigned>::max()));
        s_.solver_rlimit = {static_cast<unsigned>(i->get()), at};
      } else if (key == "strict") {
        const auto* b = v.as_boolean();
        if (!b) fail(v.source(), "'strict' must be true or false");
        s_.strict = {b->get(), at};
      } else if (key == "rules") {
        // A directory or a list of them, relative to this file.
        std::vector<std::string> dirs;
        if (v.is_string()) dirs.push_back(string(v, key));
        else if (v.is_array()) dirs = strings(v, key);
        else fail(v.source(), "'rules' must be a directory or an array of directories");
        for (auto& d : dirs) d = (fs::path(s_.base_dir) / d).lexically_normal().string();
        s_.rules_dirs = {dirs, at};
      } else if (key == "bundled-rules") {
        const auto* b = v.as_boolean();
        if (!b) fail(v.source(), "'bundled-rules' must be true or false");
        s_.bundled_rules = {b->get(), at};
      } else if (const LimitKey* l = limit(key)) {
        const auto* i = v.as_integer();
        if (!i || i->get() < l->min || i->get() > l->max)
          fail(v.source(), fmt::format("'{}' must be an integer from {} to {}", key, l->min, l->max));
        s_.*(l->field) = {i->get(), at};
      } else if (key == "exclude") {
        s_.exclude = {strings(v, key), at};
      } else if (key == "per-file-ignores") {
        const toml::table* pfi = table(v, key);
        for (auto&& [gk, gv] : *pfi)
          s_.per_file_ignores.push_back({std::string(gk.str()), codes(gv, "per-file-ignores"), where(gk.source())});
      } else {
        std::string best;
        std::size_t dist = 3;
        for (const auto& known : knownKeys())
          if (auto d = editDistance(key, known); d < dist) dist = d, best = known;
        fail(k.source(), fmt::format("unknown key '{}' in {}{}", key, top(),
                                     best.empty() ? "" : " (did you mean '" + best + "'?)"));
      }
    }
  }

 private:
  // How tables are named in messages: [tool.layergate] in pyproject.toml,
  // the top level of .layergate.toml.
  std::string top() const { return section_.empty() ? "the top level" : "[" + section_ + "]"; }
  std::string sub(const std::string& name) const {
    return "[" + (section_.empty() ? name : section_ + "." + name) + "]";
  }

  std::string where(const toml::source_region& r) const { return fmt::format("{}:{}", file_, r.begin.line); }

  [[noreturn]] void fail(const toml::source_region& r, const std::string& what) const {
    throw InputError(fmt::format("{}:{}:{}: {}", file_, r.begin.line, r.begin.column, what));
  }

  static std::string knownRules() {
    std::string s;
    for (const auto& r : checks::allRules()) s += (s.empty() ? "" : ", ") + r.id;
    return " (known: " + s + ")";
  }

  std::string string(const toml::node& v, const std::string& key) const {
    const auto* s = v.as_string();
    if (!s) fail(v.source(), fmt::format("'{}' must be a string", key));
    return s->get();
  }

  const toml::table* table(const toml::node& v, const std::string& key) const {
    const auto* t = v.as_table();
    if (!t) fail(v.source(), fmt::format("'{}' must be a table", key));
    return t;
  }

  std::vector<std::string> strings(const toml::node& v, const std::string& key) const {
    const auto* a = v.as_array();
    if (!a) fail(v.source(), fmt::format("'{}' must be an array of strings", key));
    std::vector<std::string> out;
    for (const auto& e : *a) out.push_back(string(e, key));
    return out;
  }

  // Rule codes or prefixes ("LG001", "LG00", "LG", "ALL"), each checked.
  std::vector<std::string> codes(const toml::node& v, const std::string& key) const {
    const auto* a = v.as_array();
    if (!a) fail(v.source(), fmt::format("'{}' must be an array of rule codes", key));
    std::vector<std::string> out;
    for (const auto& e : *a) {
      std::string c = string(e, key);
      if (!validCode(c)) fail(e.source(), fmt::format("unknown rule code '{}' in '{}'{}", c, key, knownRules()));
      out.push_back(c);
    }
    return out;
  }

  model::Severity severity(const toml::node& v, const std::string& code) const {
    std::string s = string(v, code);
    if (s == "error") return model::Severity::Error;
    if (s == "warning") return model::Severity::Warning;
    if (s == "note") return model::Severity::Note;
    fail(v.source(), fmt::format("bad severity '{}' for {} (expected \"error\", \"warning\" or \"note\")", s, code));
  }

  std::string file_, section_;
  Settings& s_;

 public:
  static bool validCode(const std::string& c) {
    if (c == "ALL") return true;
    if (c.size() < 2) return false;
    for (const auto& r : checks::allRules())
      if (r.id.compare(0, c.size(), c) == 0) return true;
    return false;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(shown(path) + ": cannot read configuration file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(shown(path) + ": read error");
  return ss.str();
}

toml::table parse(const std::string& path) {
  std::string text = slurp(path);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}:{}: bad TOML: {}", shown(path), e.source().begin.line, e.source().begin.column,
                                 e.description()));
  }
}

bool isPyproject(const fs::path& p) { return p.filename() == "pyproject.toml"; }

// A pyproject.toml counts only when it has a [tool.layergate] table.
bool hasOurTable(const fs::path& pyproject) {
  std::string text = slurp(pyproject.string());
  if (text.find("layergate") == std::string::npos) return false;
  toml::table t = parse(pyproject.string());
  return t["tool"]["layergate"].as_table() != nullptr;
}

// Longest prefix of `rule` among `codes` ("ALL" counts as length 0); -1: none.
int specificity(const std::vector<std::string>& codes, const std::string& rule) {
  int best = -1;
  for (const auto& c : codes) {
    if (c == "ALL") best = std::max(best, 0);
    else if (rule.compare(0, c.size(), c) == 0) best = std::max(best, static_cast<int>(c.size()));
  }
  return best;
}

bool anyPrefix(const std::vector<std::string>& codes, const std::string& rule) { return specificity(codes, rule) >= 0; }

std::string relativeToBase(const std::string& base, const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (!base.empty()) {
    fs::path rel = abs.lexically_relative(base);
    if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  }
  return fs::path(path).lexically_normal().generic_string();
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "\"" : ", \"") + e + "\"";
  return "[" + s + "]";
}

}  // namespace

const std::vector<LimitKey>& limitKeys() {
  // The ranges are the command line's (tool/cli/main.cpp).
  static const std::vector<LimitKey> keys = {
      {"max-depth", 8, 500, &Settings::max_depth},
      {"max-paths", 1, 10000000, &Settings::max_paths},
      {"max-files", 1, std::int64_t(1) << 40, &Settings::max_files},
      {"max-dir-depth", 1, 4096, &Settings::max_dir_depth},
      {"max-file-bytes", 1, std::int64_t(1) << 40, &Settings::max_file_bytes},
  };
  return keys;
}

bool pathMatches(const std::string& glob_in, const std::string& path) {
  std::string glob = glob_in;
  while (glob.rfind("./", 0) == 0) glob.erase(0, 2);
  while (glob.size() > 1 && glob.back() == '/') glob.pop_back();
  if (glob.empty()) return false;
  bool component = glob.find('/') == std::string::npos;
  std::string prefix;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty() || part == ".") continue;
    prefix += (prefix.empty() ? "" : "/") + part;
    if (component) {
      if (fnmatch(glob.c_str(), part.c_str(), 0) == 0) return true;
    } else {
      std::string lead;
      if (discover::matchSuffix(glob, prefix, &lead) && lead.empty()) return true;
    }
  }
  return false;
}

bool Settings::enabled(const std::string& rule) const {
  if (cli_select) return specificity(cli_select->value, rule) > specificity(cli_ignore.value, rule);
  return specificity(select.value, rule) > specificity(ignore.value, rule) && !anyPrefix(cli_ignore.value, rule);
}

std::optional<model::Severity> Settings::severityOf(const std::string& rule) const {
  auto it = severity.find(rule);
  if (it == severity.end()) return std::nullopt;
  return it->second.value;
}

bool Settings::ignoredIn(const std::string& rule, const std::string& path) const {
  if (per_file_ignores.empty() || path.empty()) return false;
  std::string rel = relativeToBase(base_dir, path);
  for (const auto& p : per_file_ignores)
    if (anyPrefix(p.codes, rule) && pathMatches(p.glob, rel)) return true;
  return false;
}

bool Settings::excluded(const std::string& path) const {
  if (exclude.value.empty()) return false;
  std::string rel = relativeToBase(base_dir, path);
  for (const auto& g : exclude.value)
    if (pathMatches(g, rel)) return true;
  return false;
}

void Settings::apply(std::vector<model::Finding>& findings) const {
  for (auto& f : findings)
    if (auto s = severityOf(f.rule)) f.severity = *s;
  findings.erase(std::remove_if(findings.begin(), findings.end(),
                                [&](const model::Finding& f) {
                                  return !enabled(f.rule) ||
                                         (!f.locations.empty() && ignoredIn(f.rule, f.locations[0].file));
                                }),
                 findings.end());
}

std::string findConfigFile(const std::string& start) {
  std::error_code ec;
  fs::path dir = fs::absolute(start.empty() ? "." : start, ec).lexically_normal();
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  while (true) {
    if (fs::is_regular_file(dir / ".layergate.toml", ec)) return (dir / ".layergate.toml").string();
    if (fs::is_regular_file(dir / "pyproject.toml", ec) && hasOurTable(dir / "pyproject.toml"))
      return (dir / "pyproject.toml").string();
    if (!dir.has_parent_path() || dir.parent_path() == dir) return "";
    dir = dir.parent_path();
  }
}

void readConfigFile(const std::string& path, Settings& s) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(shown(path) + ": no such configuration file");
  if (fs::is_directory(path, ec)) throw InputError(shown(path) + ": is a directory, expected a configuration file");
  s.file = shown(path);
  s.base_dir = fs::absolute(path, ec).lexically_normal().parent_path().string();
  toml::table t = parse(path);
  if (isPyproject(path)) {
    toml::node_view<toml::node> ours = t["tool"]["layergate"];
    if (!ours) return;  // given with --config: nothing of ours in it
    const toml::table* tbl = ours.as_table();
    if (!tbl)
      throw InputError(fmt::format("{}:{}:{}: [tool.layergate] must be a table", s.file, ours.node()->source().begin.line,
                                   ours.node()->source().begin.column));
    Reader(s.file, "tool.layergate", s).read(*tbl);
  } else {
    Reader(s.file, "", s).read(t);
  }
}

Settings resolve(const std::string& start, const Overrides& o) {
  if (o.isolated && o.config_file) throw InputError("--config and --isolated cannot be used together");
  Settings s;
  std::error_code ec;
  s.base_dir = fs::current_path(ec).string();
  std::string file = o.isolated ? "" : o.config_file ? *o.config_file : findConfigFile(start);
  if (!file.empty()) readConfigFile(file, s);
  const std::string cl = "command line";
  auto checked = [](const std::vector<std::string>& codes, const char* flag) {
    for (const auto& c : codes)
      if (!Reader::validCode(c)) throw InputError(fmt::format("{}: unknown rule code '{}'", flag, c));
    return codes;
  };
  if (o.select) s.cli_select = Setting<std::vector<std::string>>{checked(*o.select, "--select"), cl};
  if (o.ignore) s.cli_ignore = {checked(*o.ignore, "--ignore"), cl};
  if (o.fail_on) s.fail_on = {*o.fail_on, cl};
  if (o.max_world_size) s.max_world_size = {*o.max_world_size, cl};
  if (o.solver_rlimit) s.solver_rlimit = {*o.solver_rlimit, cl};
  if (o.strict && *o.strict) s.strict = {true, cl};
  if (o.rules_dirs) {
    std::vector<std::string> dirs;
    for (const auto& d : *o.rules_dirs) dirs.push_back(fs::absolute(d, ec).lexically_normal().string());
    s.rules_dirs = {dirs, cl};
  }
  if (o.bundled_rules) s.bundled_rules = {*o.bundled_rules, cl};
  for (const auto& l : limitKeys())
    if (auto it = o.limits.find(l.key); it != o.limits.end()) {
      if (it->second < l.min || it->second > l.max)
        throw InputError(fmt::format("--{}: must be an integer from {} to {}", l.key, l.min, l.max));
      s.*(l.field) = {it->second, cl};
    }
  return s;
}

std::string describe(const Settings& s) {
  std::string out = s.file.empty() ? "configuration file: none (defaults and the command line)\n"
                                   : fmt::format("configuration file: {}\n", s.file);
  auto row = [&](const std::string& key, const std::string& value, const std::string& origin) {
    out += fmt::format("  {:<28} = {:<30}  # {}\n", key, value, origin);
  };
  if (s.cli_select) {
    row("select", list(s.cli_select->value), s.cli_select->origin);
    if (!s.select.value.empty() && s.select.origin != "default")
      out += fmt::format("  (select {} and ignore {} from {} are replaced by --select)\n", list(s.select.value),
                         list(s.ignore.value), s.select.origin);
  } else {
    row("select", list(s.select.value), s.select.origin);
    row("ignore", list(s.ignore.value), s.ignore.origin);
  }
  if (!s.cli_ignore.value.empty()) row("ignore (added)", list(s.cli_ignore.value), s.cli_ignore.origin);
  for (const auto& [code, sev] : s.severity)
    row("severity." + code, fmt::format("\"{}\"", model::severityName(sev.value)), sev.origin);
  row("fail-on", "\"" + s.fail_on.value + "\"", s.fail_on.origin);
  row("max-world-size", std::to_string(s.max_world_size.value), s.max_world_size.origin);
  row("solver-rlimit", std::to_string(s.solver_rlimit.value), s.solver_rlimit.origin);
  row("strict", s.strict.value ? "true" : "false", s.strict.origin);
  row("rules", list(s.rules_dirs.value), s.rules_dirs.origin);
  row("bundled-rules", s.bundled_rules.value ? "true" : "false", s.bundled_rules.origin);
  for (const auto& l : limitKeys()) row(l.key, std::to_string((s.*(l.field)).value), (s.*(l.field)).origin);
  row("exclude", list(s.exclude.value), s.exclude.origin);
  if (s.per_file_ignores.empty()) row("per-file-ignores", "{}", "default");
  for (const auto& p : s.per_file_ignores) row("per-file-ignores.\"" + p.glob + "\"", list(p.codes), p.origin);
  std::string on, off;
  for (const auto& r : checks::allRules()) {
    std::string& l = s.enabled(r.id) ? on : off;
    l += (l.empty() ? "" : " ") + r.id;
  }
  out += fmt::format("rules in force: {}\n", on.empty() ? "none" : on);
  if (!off.empty()) out += fmt::format("rules not selected: {}\n", off);
  return out;
}

}  // namespace layergate::config
