#include "report/Baseline.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/Errors.h"

namespace layergate::report {

using nlohmann::json;

// FNV-1a 64: the same on every run and build, which std::hash does not promise.
std::string stableHash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// The line's code: comments cut off, runs of blanks one space, trimmed.
std::string normalisedLine(const model::SourceText& src, int line) {
  std::string text = src.line(line);
  for (const auto& c : src.facts.comments)
    if (c.line == line && c.col >= 1 && static_cast<std::size_t>(c.col - 1) < text.size()) {
      text.resize(c.col - 1);
      break;
    }
  std::string out;
  bool blank = false;
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == '\r') {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += ch;
  }
  return out;
}

std::string normalisedPath(const std::string& p) {
  std::string s = std::filesystem::path(p).lexically_normal().generic_string();
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  return s;
}

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InputError(path + ": not a layergate baseline: " + why);
}

void addFingerprint(Baseline& b, const json& fp, const std::string& path, const std::string& what) {
  if (!fp.is_string() || fp.get<std::string>().empty())
    bad(path, what + " has no fingerprint (a report of an older layergate? write it again with --write-baseline)");
  ++b[fp.get<std::string>()];
}

void addFindings(Baseline& b, const json& findings, const std::string& path) {
  if (!findings.is_array()) bad(path, "\"findings\" is not an array");
  for (size_t i = 0; i < findings.size(); ++i) {
    const json& f = findings[i];
    if (!f.is_object()) bad(path, "finding " + std::to_string(i + 1) + " is not an object");
    if (f.contains("suppressed")) continue;  // a suppressed finding stays suppressed by its comment
    addFingerprint(b, f.contains("fingerprint") ? f["fingerprint"] : json(), path, "finding " + std::to_string(i + 1));
  }
}

}  // namespace

void assignFingerprints(std::vector<model::Finding>& findings, const std::map<std::string, model::SourceText>& files) {
  std::map<std::string, int> seen;
  for (auto& f : findings) {
    std::string file, code, scope;
    if (const model::Location* admitting = f.admitting()) {
      // The admitting line, not the primary: a gap a patch opened is shown
      // at the opened check, and its fingerprint stays what it was before
      // the report showed it there.
      const model::Location& at = *admitting;
      file = normalisedPath(at.file);
      if (auto it = files.find(at.file); it != files.end()) {
        code = normalisedLine(it->second, at.line);
        scope = it->second.facts.enclosing(at.line);
      }
    }
    std::string ws = f.config.world_size ? std::to_string(*f.config.world_size) : "-";
    std::string nv = f.config.full_nvlink ? (*f.config.full_nvlink ? "nvlink" : "pcie") : "-";
    std::string key = f.rule + '\0' + file + '\0' + code + '\0' + ws + '\0' + nv + '\0' + scope;
    std::string h = stableHash(key);
    int n = ++seen[h];
    f.fingerprint = n == 1 ? h : h + "-" + std::to_string(n);
  }
}

Baseline readBaseline(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such baseline file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, expected a baseline file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read baseline file");
  std::ostringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) bad(path, "not JSON");
  if (!j.is_object()) bad(path, "not a JSON object");
  Baseline b;
  if (j.contains("runs")) {  // SARIF
    if (!j["runs"].is_array()) bad(path, "SARIF \"runs\" is not an array");
    for (const auto& run : j["runs"]) {
      if (!run.is_object() || !run.contains("results") || !run["results"].is_array())
        bad(path, "a SARIF run without \"results\"");
      for (size_t i = 0; i < run["results"].size(); ++i) {
        const json& r = run["results"][i];
        if (!r.is_object()) bad(path, "SARIF result " + std::to_string(i + 1) + " is not an object");
        if (r.contains("suppressions") && r["suppressions"].is_array() && !r["suppressions"].empty()) continue;
        // A result stands for one diagnostic: each of its configurations has
        // its fingerprint (a SARIF of an older layergate: one per result).
        const json* configs = r.contains("properties") && r["properties"].is_object() &&
                                      r["properties"].contains("configurations") &&
                                      r["properties"]["configurations"].is_array()
                                  ? &r["properties"]["configurations"]
                                  : nullptr;
        if (configs && !configs->empty()) {
          for (size_t k = 0; k < configs->size(); ++k) {
            const json& c = (*configs)[k];
            addFingerprint(b, c.is_object() ? c.value("fingerprint", json()) : json(), path,
                           "SARIF result " + std::to_string(i + 1) + " configuration " + std::to_string(k + 1));
          }
          continue;
        }
        json fp = r.contains("partialFingerprints") && r["partialFingerprints"].is_object()
                      ? r["partialFingerprints"].value("layergateFinding/v2", json())
                      : json();
        addFingerprint(b, fp, path, "SARIF result " + std::to_string(i + 1));
      }
    }
  } else if (j.contains("analyses")) {  // a directory scan
    if (!j["analyses"].is_array()) bad(path, "\"analyses\" is not an array");
    for (const auto& a : j["analyses"]) {
      if (!a.is_object() || !a.contains("findings")) bad(path, "an analysis without \"findings\"");
      addFindings(b, a["findings"], path);
    }
  } else if (j.contains("findings")) {
    addFindings(b, j["findings"], path);
  } else {
    bad(path, "no \"findings\", \"analyses\" or SARIF \"runs\"");
  }
  return b;
}

namespace {

// Moves the unsuppressed findings `old` says are known out of the report
// (into *kept when given); returns how many. What --baseline and --diff-base
// share: findings set aside count toward no summary and no exit status.
template <typename Known>
int setAside(Result& r, Known old, std::vector<model::Finding>* kept) {
  int n = 0;
  for (auto it = r.findings.begin(); it != r.findings.end();) {
    if (!it->suppressed && old(*it)) {
      ++n;
      if (kept) kept->push_back(std::move(*it));
      it = r.findings.erase(it);
    } else {
      ++it;
    }
  }
  return n;
}

}  // namespace

int applyBaseline(Result& r, Baseline& b) {
  int n = setAside(
      r,
      [&](const model::Finding& f) {
        auto at = b.find(f.fingerprint);
        if (at == b.end() || at->second <= 0) return false;
        --at->second;
        return true;
      },
      nullptr);
  r.baselined += n;
  return n;
}

int applyDiffBase(Result& r, const ChangedLines& changed, const std::string& base) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> resolved;  // a location's path -> its key in `changed`
  auto keyOf = [&](const std::string& file) -> const std::string& {
    auto it = resolved.find(file);
    if (it != resolved.end()) return it->second;
    std::error_code ec;
    fs::path p = fs::path(file).is_absolute() ? fs::path(file) : fs::path(base.empty() ? "." : base) / file;
    fs::path abs = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return resolved[file] = (ec ? p.lexically_normal() : abs).string();
  };
  auto touches = [&](const model::Finding& f) {
    for (const auto& l : f.locations) {
      auto it = changed.find(keyOf(l.file));
      if (it != changed.end() && (it->second.count(0) || it->second.count(l.line))) return true;
    }
    return false;
  };
  return setAside(r, [&](const model::Finding& f) { return !touches(f); }, &r.preexisting);
}

void writeBaseline(const std::string& path, const std::vector<const Result*>& results) {
  json findings = json::array();
  for (const auto* r : results)
    for (const auto& f : r->findings) {
      if (f.suppressed) continue;
      json jf = {{"rule", f.rule}, {"severity", model::severityName(f.severity)}, {"message", f.message},
                 {"fingerprint", f.fingerprint}};
      if (!f.locations.empty()) jf["file"] = f.locations[0].file, jf["line"] = f.locations[0].line;
      findings.push_back(jf);
    }
  json out = {{"tool", {{"name", "layergate"}, {"version", LAYERGATE_VERSION}}}, {"baseline", true}, {"findings", findings}};
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  if (!o) throw InputError(path + ": cannot write baseline file");
  o << out.dump(2) << "\n";
  o.close();
  if (!o) throw InputError(path + ": write error");
}

}  // namespace layergate::report
