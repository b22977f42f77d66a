// SARIF 2.1.0 for GitHub code scanning: the driver lists every rule (its
// page as helpUri, its documentation as help with absolute links); each
// result is one diagnostic (a group of findings, as the text report counts
// them), its location the diagnostic's primary line; the other locations and
// the flag trace's ends are relatedLocations, each linked from the message
// ([text](id)), so that code scanning shows them; the whole flag trace is a
// codeFlow. Artifact URIs are relative to %SRCROOT% (originalUriBaseIds).
// partialFingerprints stay the same when lines move, so code scanning keeps
// one alert per (rule, first cell, files); a finding an inline comment
// suppresses carries suppressions: [{kind: inSource}].
#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>

#include "checks/Check.h"
#include "report/Report.h"

namespace layergate::report {
namespace {

using nlohmann::json;

// RFC 3986 percent-encoding of a relative path (keeps '/').
std::string uriOf(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace fs = std::filesystem;

json artifact(const std::string& path, const SarifOptions& o) {
  SarifUri u = sarifUri(path, o);
  json a = {{"uri", u.uri}};
  if (!u.base_id.empty()) a["uriBaseId"] = u.base_id;
  return a;
}

json physical(const model::Location& l, const SarifOptions& o) {
  json region = {{"startLine", l.line}};
  if (l.col > 0) region["startColumn"] = l.col;
  return {{"artifactLocation", artifact(l.file, o)}, {"region", region}};
}

// Message text (SARIF 2.1.0 §3.11.6): a literal bracket is escaped, for
// [text](id) is a link to the related location with that id.
std::string plain(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '[' || c == ']') o += '\\';
    o += c;
  }
  return o;
}

// A directory as an absolute, normal path without a trailing separator
// ("" = the working directory).
fs::path absoluteDir(const std::string& d) {
  std::error_code ec;
  fs::path p = (d.empty() ? fs::current_path(ec) : fs::absolute(d, ec)).lexically_normal();
  if (!p.has_filename() && p != p.root_path()) p = p.parent_path();
  return p;
}

// A result's path (relative to o.base, or absolute) relative to o.srcroot;
// "" when it is not below it.
std::string rootRelative(const std::string& path, const SarifOptions& o) {
  fs::path abs = (fs::path(o.base) / path).lexically_normal();
  fs::path rel = abs.lexically_relative(o.srcroot);
  if (rel.empty() || *rel.begin() == ".." || !rel.is_relative()) return "";
  return rel.generic_string();
}

std::string shortName(const model::Location& l) {
  return fs::path(l.file).filename().string() + ":" + std::to_string(l.line);
}

// The rule's page: docs/rules/<ID>.md where the project lives.
std::string ruleUri(const std::string& id) { return std::string(LAYERGATE_HOMEPAGE) + "/blob/main/docs/rules/" + id + ".md"; }

// The rule's markdown with its relative links ("../policy-gates.md") made
// absolute, for code scanning shows it outside the repository.
std::string absoluteLinks(const std::string& md) {
  std::string out;
  std::size_t i = 0;
  while (true) {
    std::size_t at = md.find("](", i);
    if (at == std::string::npos) break;
    std::size_t end = md.find(')', at + 2);
    if (end == std::string::npos) break;
    std::string target = md.substr(at + 2, end - at - 2);
    out += md.substr(i, at + 2 - i);
    if (!target.empty() && target[0] != '#' && target.find("://") == std::string::npos &&
        target.rfind("mailto:", 0) != 0 && target.find(' ') == std::string::npos) {
      std::string rel = (fs::path("docs/rules") / target).lexically_normal().generic_string();
      out += std::string(LAYERGATE_HOMEPAGE) + "/blob/main/" + rel;
    } else {
      out += target;
    }
    i = end;
  }
  return out + md.substr(i);
}

const char* level(model::Severity s) {
  switch (s) {
    case model::Severity::Error: return "error";
    case model::Severity::Warning: return "warning";
    case model::Severity::Note: return "note";
  }
  return "warning";
}

// FNV-1a: a fingerprint must not change between runs or builds, which
// std::hash does not promise.
std::string fingerprint(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string firstParagraph(const std::string& md, const std::string& heading) {
  auto at = md.find(heading);
  if (at == std::string::npos) return "";
  auto start = md.find('\n', at);
  if (start == std::string::npos) return "";
  while (start < md.size() && md[start] == '\n') ++start;
  auto end = md.find("\n\n", start);
  std::string p = md.substr(start, end == std::string::npos ? std::string::npos : end - start);
  for (auto& c : p)
    if (c == '\n') c = ' ';
  return p;
}

// The driver's rules, each with its page and documentation; index: rule id
// -> its position (a result's ruleIndex).
json rulesJson(std::map<std::string, int>& index) {
  json rules = json::array();
  for (const auto& rule : checks::allRules()) {
    const auto& docs = ruleDocs();
    auto it = docs.find(rule.id);
    std::string md = it == docs.end() ? rule.summary : it->second;
    std::string full = firstParagraph(md, "## What it does");
    // problem.severity: what code scanning sorts and filters non-security
    // alerts by (error, warning, recommendation).
    std::string summary = rule.summary;
    while (!summary.empty() && summary.back() == '.') summary.pop_back();
    const char* problem = rule.severity == model::Severity::Note ? "recommendation" : level(rule.severity);
    json jr = {{"id", rule.id},
               {"name", rule.name},
               {"shortDescription", {{"text", rule.summary}}},
               {"fullDescription", {{"text", full.empty() ? rule.summary : full}}},
               {"helpUri", ruleUri(rule.id)},
               {"help", {{"text", summary + ". Documentation: " + ruleUri(rule.id) + " (or run `layergate explain " +
                                      rule.id + "`)."},
                         {"markdown", absoluteLinks(md)}}},
               {"defaultConfiguration", {{"level", level(rule.severity)}}},
               {"properties", {{"problem.severity", problem}}}};
    index[rule.id] = static_cast<int>(rules.size());
    rules.push_back(jr);
  }
  return rules;
}

// A SARIF log of one run: the tool's driver with its rules, %SRCROOT% (the
// folder checked) and the results.
json sarifLog(const std::string& srcroot, const json& rules, const json& results) {
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", json::array({{{"tool", {{"driver", {{"name", "layergate"},
                                                        {"version", LAYERGATE_VERSION},
                                                        {"semanticVersion", LAYERGATE_VERSION},
                                                        {"informationUri", LAYERGATE_HOMEPAGE},
                                                        {"rules", rules}}}}},
                                 {"originalUriBaseIds",
                                  {{"%SRCROOT%", {{"uri", "file://" + uriOf(srcroot == "/" ? srcroot : srcroot + "/")},
                                                  {"description", {{"text", "The folder layergate checked"}}}}}}},
                                 {"columnKind", "unicodeCodePoints"},
                                 {"results", results}}})}};
}

}  // namespace

SarifUri sarifUri(const std::string& path, const SarifOptions& given) {
  SarifOptions o{absoluteDir(given.srcroot).string(), absoluteDir(given.base).string()};
  std::string rel = rootRelative(path, o);
  if (!rel.empty()) return {uriOf(rel), "%SRCROOT%"};
  return {"file://" + uriOf((fs::path(o.base) / path).lexically_normal().generic_string()), ""};
}

std::string renderSarif(const Result& r, const SarifOptions& given) {
  const SarifOptions o{absoluteDir(given.srcroot).string(), absoluteDir(given.base).string()};
  const std::string srcroot = fs::path(o.srcroot).generic_string();
  std::map<std::string, int> index;
  json rules = rulesJson(index);
  json results = json::array();
  // One result per diagnostic (report/Report.h's groups): the text report's
  // count, one code-scanning alert for the configurations it names.
  for (const auto& g : groupFindings(r, true)) {
    const model::Finding& f = g.first();
    // The message, then each related location as a link: code scanning
    // shows a related location only where the message links it.
    std::string text = plain(g.message);
    // The primary line's own note (the check a patch opened): said once, as
    // the text report's first note.
    if (g.primary.role == "opened" && !g.primary.note.empty()) {
      std::string n = g.primary.note;
      n[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])));
      text += ". " + plain(n);
    }
    json related = json::array();
    auto relate = [&](const model::Location& l, const std::string& what) {
      int id = static_cast<int>(related.size()) + 1;
      related.push_back({{"id", id}, {"physicalLocation", physical(l, o)}, {"message", {{"text", what}}}});
      return "[" + plain(shortName(l)) + "](" + std::to_string(id) + ")";
    };
    std::string where;
    for (const auto& l : g.notes) {
      if (!l.valid()) continue;
      std::string what = l.note.empty() ? l.role : l.note;
      where += (where.empty() ? "" : "; ") + plain(l.role) + " " + relate(l, what) + (l.note.empty() ? "" : ": " + plain(l.note));
    }
    if (!where.empty()) text += ". See " + where;
    std::vector<const model::Hop*> hops;
    for (const auto& h : f.trace)
      if (h.where.valid()) hops.push_back(&h);
    if (!hops.empty()) {
      text += ". The NVLink flag goes from " + plain(hops.front()->hop) + " " + relate(hops.front()->where, "flag trace: " + hops.front()->hop);
      if (hops.size() > 1)
        text += " to " + plain(hops.back()->hop) + " " + relate(hops.back()->where, "flag trace: " + hops.back()->hop);
      text += hops.size() > 2 ? fmt::format(" in {} steps (the code flow shows each)", hops.size()) : std::string();
    }
    json res = {{"ruleId", f.rule}, {"level", level(f.severity)}, {"message", {{"text", text}}}};
    if (index.count(f.rule)) res["ruleIndex"] = index[f.rule];
    if (!f.locations.empty()) res["locations"] = json::array({{{"physicalLocation", physical(g.primary, o)}}});
    if (!related.empty()) res["relatedLocations"] = related;
    // The flag trace, hop by hop, as code scanning draws a data flow.
    if (!hops.empty()) {
      json steps = json::array();
      for (size_t i = 0; i < hops.size(); ++i)
        steps.push_back({{"location", {{"physicalLocation", physical(hops[i]->where, o)},
                                       {"message", {{"text", fmt::format("{}. {}", i + 1, hops[i]->hop)}}}}}});
      res["codeFlows"] = json::array(
          {{{"message", {{"text", "the NVLink flag from the Python probe to the C++ branch"}}},
            {"threadFlows", json::array({{{"locations", steps}}})}}});
    }
    // The key holds the files relative to %SRCROOT% (before, relative to the
    // scanned root: the same), so that existing alerts are kept. A result
    // takes its first configuration's: the alert of that cell stays open.
    std::string key = f.rule + "|" + std::to_string(f.config.world_size.value_or(0)) + "|" +
                      (f.config.full_nvlink.value_or(false) ? "nvlink" : "pcie");
    auto keyPath = [&](const std::string& p) {
      std::string rel = rootRelative(p, o);
      return rel.empty() ? p : rel;
    };
    for (const auto& p : r.python_files) key += "|" + keyPath(p);
    for (const auto& p : r.cpp_files) key += "|" + keyPath(p);
    // v1 (rule, cell, files) keeps existing code-scanning alerts; v2 is the
    // baseline fingerprint (report/Baseline.h) of the first configuration,
    // properties.configurations[] has each one's.
    res["partialFingerprints"] = {{"layergateFinding/v1", fingerprint(key)}, {"layergateFinding/v2", f.fingerprint}};
    if (f.suppressed) {
      json sup = {{"kind", "inSource"}};
      if (!f.suppressed->justification.empty()) sup["justification"] = f.suppressed->justification;
      res["suppressions"] = json::array({sup});
    }
    if (!g.fixes.empty()) {
      // SARIF 2.1.0 §3.55: each fix's changes per artifact, a replacement a
      // deleted region (empty: an insertion point) and the inserted text.
      json fixes = json::array();
      for (const auto* x : g.fixes) {
        std::map<std::string, json> per_file;
        std::vector<std::string> order;
        for (const auto& e : x->edits) {
          if (!per_file.count(e.file)) order.push_back(e.file), per_file[e.file] = json::array();
          per_file[e.file].push_back({{"deletedRegion", {{"startLine", e.start.line},
                                                         {"startColumn", e.start.col},
                                                         {"endLine", e.end.line},
                                                         {"endColumn", e.end.col}}},
                                      {"insertedContent", {{"text", e.replacement}}}});
        }
        json changes = json::array();
        for (const auto& file : order)
          changes.push_back({{"artifactLocation", artifact(file, o)}, {"replacements", per_file[file]}});
        fixes.push_back({{"description", {{"text", x->description}}},
                         {"artifactChanges", changes},
                         {"properties", {{"safety", model::fixSafetyName(x->safety)}}}});
      }
      res["fixes"] = fixes;
    }
    // The counterexample (the first configuration), then every configuration
    // the result stands for, each with its baseline fingerprint.
    auto config = [](const model::Config& c) {
      json p = {{"world_size", c.world_size ? json(*c.world_size) : json(nullptr)},
                {"full_nvlink", c.full_nvlink ? json(*c.full_nvlink) : json(nullptr)},
                {"nbytes", c.nbytes ? json(*c.nbytes) : json(nullptr)}};
      json env = json::object();
      for (const auto& [k, v] : c.env) env[k] = v ? json(*v) : json(nullptr);
      p["env"] = env;
      return p;
    };
    json props = config(f.config);
    json configurations = json::array();
    for (const auto* m : g.members) {
      json c = config(m->config);
      c["fingerprint"] = m->fingerprint;
      configurations.push_back(c);
    }
    props["configurations"] = configurations;
    res["properties"] = props;
    results.push_back(res);
  }
  json out = sarifLog(srcroot, rules, results);
  // Configurations routed to another op library are not analysed here: a
  // tool execution notification, so that code scanning does not read their
  // silence as a proof.
  std::vector<std::string> routed;
  for (const auto& v : r.matrix)
    for (const auto& t : v.routed_elsewhere)
      if (std::find(routed.begin(), routed.end(), t) == routed.end()) routed.push_back(t);
  if (!routed.empty()) {
    json notes = json::array();
    for (const auto& t : routed) {
      json locs = json::array();
      for (const auto& f : r.python_files) {
        locs.push_back({{"physicalLocation", {{"artifactLocation", artifact(f, o)}}}});
        break;
      }
      notes.push_back({{"level", "warning"},
                       {"message", {{"text", "not analysed here: the configurations where " + t}}},
                       {"locations", locs}});
    }
    out["runs"][0]["invocations"] = json::array({{{"executionSuccessful", true}, {"toolExecutionNotifications", notes}}});
  }
  return out.dump(2) + "\n";
}

std::string renderSarifFailure(const std::string& reason, int exit_code, const SarifOptions& given) {
  std::map<std::string, int> index;
  json out = sarifLog(fs::path(absoluteDir(given.srcroot)).generic_string(), rulesJson(index), json::array());
  // As CodeQL and Semgrep say a run that stopped: no results, the execution
  // not successful, the reason an error notification.
  out["runs"][0]["invocations"] = json::array(
      {{{"executionSuccessful", false},
        {"exitCode", exit_code},
        {"toolExecutionNotifications", json::array({{{"level", "error"}, {"message", {{"text", reason}}}}})}}});
  return out.dump(2) + "\n";
}

}  // namespace layergate::report
