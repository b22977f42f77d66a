// SARIF 2.1.0 for GitHub code scanning: the driver lists every rule; each
// result's first location is the Python gate line, related locations are the
// dispatch and the trace hops; partialFingerprints stay the same when lines
// move, so code scanning keeps one alert per (rule, cell, files); a finding
// an inline comment suppresses carries suppressions: [{kind: inSource}].
#include <algorithm>
#include <nlohmann/json.hpp>

#include <cstdint>
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

json physical(const model::Location& l) {
  json region = {{"startLine", l.line}};
  if (l.col > 0) region["startColumn"] = l.col;
  return {{"artifactLocation", {{"uri", uriOf(l.file)}}}, {"region", region}};
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

}  // namespace

std::string renderSarif(const Result& r) {
  json rules = json::array();
  std::map<std::string, int> index;
  for (const auto& rule : checks::allRules()) {
    const auto& docs = ruleDocs();
    auto it = docs.find(rule.id);
    std::string md = it == docs.end() ? rule.summary : it->second;
    std::string full = firstParagraph(md, "## What it does");
    json jr = {{"id", rule.id},
               {"name", rule.name},
               {"shortDescription", {{"text", rule.summary}}},
               {"fullDescription", {{"text", full.empty() ? rule.summary : full}}},
               {"help", {{"text", "Run `layergate explain " + rule.id + "` for the full documentation."}, {"markdown", md}}},
               {"defaultConfiguration", {{"level", level(rule.severity)}}}};
    index[rule.id] = static_cast<int>(rules.size());
    rules.push_back(jr);
  }
  json results = json::array();
  for (const auto& f : r.findings) {
    json res = {{"ruleId", f.rule}, {"level", level(f.severity)}, {"message", {{"text", f.message}}}};
    if (index.count(f.rule)) res["ruleIndex"] = index[f.rule];
    if (!f.locations.empty()) {
      res["locations"] = json::array({{{"physicalLocation", physical(f.locations[0])}}});
      json related = json::array();
      int id = 1;
      for (size_t i = 1; i < f.locations.size(); ++i)
        related.push_back({{"id", id++}, {"physicalLocation", physical(f.locations[i])},
                           {"message", {{"text", f.locations[i].note.empty() ? f.locations[i].role : f.locations[i].note}}}});
      for (const auto& h : f.trace)
        if (h.where.valid())
          related.push_back({{"id", id++}, {"physicalLocation", physical(h.where)}, {"message", {{"text", "trace: " + h.hop}}}});
      if (!related.empty()) res["relatedLocations"] = related;
    }
    std::string key = f.rule + "|" + std::to_string(f.config.world_size.value_or(0)) + "|" +
                      (f.config.full_nvlink.value_or(false) ? "nvlink" : "pcie");
    for (const auto& p : r.python_files) key += "|" + p;
    for (const auto& p : r.cpp_files) key += "|" + p;
    // v1 (rule, cell, files) keeps existing code-scanning alerts; v2 is the
    // baseline fingerprint (report/Baseline.h).
    res["partialFingerprints"] = {{"layergateFinding/v1", fingerprint(key)}, {"layergateFinding/v2", f.fingerprint}};
    if (f.suppressed) {
      json sup = {{"kind", "inSource"}};
      if (!f.suppressed->justification.empty()) sup["justification"] = f.suppressed->justification;
      res["suppressions"] = json::array({sup});
    }
    if (!f.fixes.empty()) {
      // SARIF 2.1.0 §3.55: each fix's changes per artifact, a replacement a
      // deleted region (empty: an insertion point) and the inserted text.
      json fixes = json::array();
      for (const auto& x : f.fixes) {
        std::map<std::string, json> per_file;
        std::vector<std::string> order;
        for (const auto& e : x.edits) {
          if (!per_file.count(e.file)) order.push_back(e.file), per_file[e.file] = json::array();
          per_file[e.file].push_back({{"deletedRegion", {{"startLine", e.start.line},
                                                         {"startColumn", e.start.col},
                                                         {"endLine", e.end.line},
                                                         {"endColumn", e.end.col}}},
                                      {"insertedContent", {{"text", e.replacement}}}});
        }
        json changes = json::array();
        for (const auto& file : order)
          changes.push_back({{"artifactLocation", {{"uri", uriOf(file)}}}, {"replacements", per_file[file]}});
        fixes.push_back({{"description", {{"text", x.description}}},
                         {"artifactChanges", changes},
                         {"properties", {{"safety", model::fixSafetyName(x.safety)}}}});
      }
      res["fixes"] = fixes;
    }
    json props = {{"world_size", f.config.world_size ? json(*f.config.world_size) : json(nullptr)},
                  {"full_nvlink", f.config.full_nvlink ? json(*f.config.full_nvlink) : json(nullptr)},
                  {"nbytes", f.config.nbytes ? json(*f.config.nbytes) : json(nullptr)}};
    json env = json::object();
    for (const auto& [k, v] : f.config.env) env[k] = v ? json(*v) : json(nullptr);
    props["env"] = env;
    res["properties"] = props;
    results.push_back(res);
  }
  json out = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", json::array({{{"tool", {{"driver", {{"name", "layergate"},
                                                            {"version", LAYERGATE_VERSION},
                                                            {"semanticVersion", LAYERGATE_VERSION},
                                                            {"rules", rules}}}}},
                                     {"columnKind", "unicodeCodePoints"},
                                     {"results", results}}})}};
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
        locs.push_back({{"physicalLocation", {{"artifactLocation", {{"uri", f}}}}}});
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

}  // namespace layergate::report
