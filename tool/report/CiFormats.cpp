// The formats CI services read straight from a job: GitHub Actions workflow
// commands (annotations on the pull request's diff) and GitLab's Code Quality
// report (the merge request's widget). One entry per diagnostic (a finding
// group, as every other format counts), at its primary location.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "report/Report.h"

namespace layergate::report {
namespace {

// Where a group is reported: its primary location, else the gate's file
// with no line (as the concise format does).
model::Location whereOf(const FindingGroup& g, const Result& r) {
  if (g.primary.valid()) return g.primary;
  model::Location l;
  if (!r.python_files.empty()) l.file = r.python_files[0];
  return l;
}

}  // namespace

std::string githubEscapeData(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string githubEscapeProperty(const std::string& s) {
  std::string out;
  for (char c : githubEscapeData(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string renderGithub(const Result& r) {
  std::string out;
  for (const auto& g : groupFindings(r)) {
    const model::Finding& f = g.first();
    // Annotations are errors and warnings; a note would be noise on the diff.
    if (f.severity == model::Severity::Note) continue;
    model::Location at = whereOf(g, r);
    std::string props;
    if (!at.file.empty()) props += "file=" + githubEscapeProperty(at.file) + ",";
    if (at.line > 0) props += fmt::format("line={},", at.line);
    if (at.line > 0 && at.col > 0) props += fmt::format("col={},", at.col);
    props += "title=" + githubEscapeProperty(f.rule);
    out += fmt::format("::{} {}::{}\n", f.severity == model::Severity::Error ? "error" : "warning", props,
                       githubEscapeData(g.message));
  }
  return out;
}

std::string renderGitlab(const Result& r) {
  nlohmann::json issues = nlohmann::json::array();
  for (const auto& g : groupFindings(r)) {
    const model::Finding& f = g.first();
    model::Location at = whereOf(g, r);
    const char* severity = f.severity == model::Severity::Error     ? "major"
                           : f.severity == model::Severity::Warning ? "minor"
                                                                    : "info";
    // GitLab matches issues between the merge request and its target branch
    // by fingerprint: the first finding's, which survives unrelated edits.
    issues.push_back({{"description", g.message},
                      {"check_name", f.rule},
                      {"fingerprint", f.fingerprint},
                      {"severity", severity},
                      {"location", {{"path", at.file}, {"lines", {{"begin", at.line > 0 ? at.line : 1}}}}}});
  }
  return issues.dump(2) + "\n";
}

}  // namespace layergate::report
