#include "report/Suppress.h"

#include <algorithm>
#include <cctype>

#include "checks/Check.h"

namespace layergate::report {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "-- reason", ": reason", "reason" -> "reason".
std::string justification(const std::string& rest) {
  std::string j = trim(rest);
  while (!j.empty() && (j[0] == '-' || j[0] == ':' || j[0] == ';' || j[0] == ',')) j = trim(j.substr(1));
  return j;
}

model::Finding ruleFinding(const char* id, const Directive& d, std::string message) {
  const checks::RuleInfo* r = checks::findRule(id);
  model::Finding f;
  f.rule = r->id;
  f.severity = r->severity;
  f.message = std::move(message);
  model::Location l = d.where;
  l.role = "suppression";
  f.locations.push_back(l);
  return f;
}

}  // namespace

std::optional<Directive> parseDirective(const model::Comment& c, const std::string& file) {
  static const std::string key = "layergate:";
  for (std::size_t at = c.text.find(key); at != std::string::npos; at = c.text.find(key, at + 1)) {
    std::string before = trim(c.text.substr(0, at));
    bool starts = before.empty() || before.back() == '#' ||
                  (before.size() >= 2 && before.compare(before.size() - 2, 2, "//") == 0);
    if (!starts) continue;
    std::string rest = c.text.substr(at + key.size());
    std::size_t p = rest.find_first_not_of(" \t");
    if (p == std::string::npos || rest.compare(p, 6, "ignore") != 0) continue;
    p += 6;
    if (p < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[p])) || rest[p] == '_' || rest[p] == '-'))
      continue;  // "layergate: ignored", "layergate: ignore-me": prose, not a directive
    Directive d;
    d.where = {file, c.line, c.col, "suppression", "layergate:" + rest.substr(0, rest.find_last_not_of(" \t*/") + 1)};
    std::size_t q = rest.find_first_not_of(" \t", p);
    if (q == std::string::npos || rest[q] != '[') {
      d.blanket = true;
      d.justification = justification(rest.substr(p));
      return d;
    }
    std::size_t close = rest.find(']', q);
    if (close == std::string::npos) {
      d.malformed = "no closing ']' after the rule codes";
      return d;
    }
    std::string list = rest.substr(q + 1, close - q - 1);
    std::size_t from = 0;
    while (from <= list.size()) {
      std::size_t comma = list.find(',', from);
      std::string code = upper(trim(list.substr(from, comma == std::string::npos ? std::string::npos : comma - from)));
      if (!code.empty()) d.codes.push_back(code);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    if (d.codes.empty()) d.malformed = "no rule codes between '[' and ']'";
    d.justification = justification(rest.substr(close + 1));
    return d;
  }
  return std::nullopt;
}

void applySuppressions(std::vector<model::Finding>& findings, const std::map<std::string, model::SourceText>& files,
                       const std::function<bool(const std::string&)>& enabled) {
  std::vector<Directive> directives;
  for (const auto& [path, src] : files)
    for (const auto& c : src.facts.comments)
      if (auto d = parseDirective(c, path)) directives.push_back(std::move(*d));
  if (directives.empty()) return;

  std::vector<std::vector<bool>> used(directives.size());
  for (size_t i = 0; i < directives.size(); ++i) used[i].assign(directives[i].codes.size(), false);
  std::vector<bool> blanket_used(directives.size(), false);
  for (auto& f : findings) {
    if (f.locations.empty() || f.suppressed) continue;
    // The primary line, where every format reports the finding; the
    // admitting line too, where a gap's primary was before a patch's opened
    // check came first, so that a comment written there still holds.
    const model::Location* primary = f.primary();
    const model::Location* admitting = f.admitting();
    auto covers = [&](const Directive& d) {
      for (const auto* at : {primary, admitting})
        if (d.where.file == at->file && d.where.line == at->line) return true;
      return false;
    };
    for (size_t i = 0; i < directives.size() && !f.suppressed; ++i) {
      const Directive& d = directives[i];
      if (!d.malformed.empty() || !covers(d)) continue;
      if (d.blanket) {
        blanket_used[i] = true;
        f.suppressed = model::Suppression{d.justification, d.where};
        continue;
      }
      for (size_t k = 0; k < d.codes.size(); ++k)
        if (d.codes[k] == f.rule) {
          used[i][k] = true;
          f.suppressed = model::Suppression{d.justification, d.where};
        }
    }
  }

  for (size_t i = 0; i < directives.size(); ++i) {
    const Directive& d = directives[i];
    if (!d.malformed.empty()) {
      findings.push_back(ruleFinding("LG011", d, "malformed suppression (" + d.malformed +
                                                     "): write `layergate: ignore[LG001]` or `layergate: ignore[LG001, LG008]`"));
      continue;
    }
    if (d.blanket) {
      findings.push_back(ruleFinding("LG010", d, "blanket suppression: `layergate: ignore` without rule codes silences "
                                                 "every rule on this line; name them: `layergate: ignore[LG001]`"));
      if (!blanket_used[i])
        findings.push_back(ruleFinding("LG011", d, "unused suppression: no finding on this line"));
      continue;
    }
    std::string unknown, unused;
    for (size_t k = 0; k < d.codes.size(); ++k) {
      const std::string& code = d.codes[k];
      if (!checks::findRule(code)) unknown += (unknown.empty() ? "" : ", ") + code;
      else if (!used[i][k] && enabled(code)) unused += (unused.empty() ? "" : ", ") + code;
    }
    if (!unknown.empty())
      findings.push_back(ruleFinding("LG011", d, "suppression names unknown rule " + unknown + " (see `layergate rules`)"));
    if (!unused.empty())
      findings.push_back(ruleFinding("LG011", d, "unused suppression: no " + unused + " finding on this line"));
  }
}

}  // namespace layergate::report
