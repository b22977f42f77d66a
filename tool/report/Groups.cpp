// Findings grouped as a compiler groups diagnostics (one per rule and cause),
// the concise one-line-per-group format, the clean-run line and the counts
// the summary gives (see Report.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "report/Report.h"

namespace layergate::report {
namespace {

using CellPair = std::pair<std::int64_t, std::optional<bool>>;

std::string loc(const model::Location& l) {
  return l.col > 0 ? fmt::format("{}:{}:{}", l.file, l.line, l.col) : fmt::format("{}:{}", l.file, l.line);
}

bool sameLoc(const model::Location& a, const model::Location& b) {
  return a.file == b.file && a.line == b.line && a.col == b.col && a.note == b.note;
}

// The finding's cell as (world size, NVLink), read from the words its message
// starts with: "world size 4 without NVLink" is (4, false), "world size 3" is
// (3, either). nullopt when the finding has no cell in those words.
std::optional<CellPair> cellOf(const model::Finding& f) {
  if (f.cell.empty() || !f.config.world_size) return std::nullopt;
  std::string head = "world size " + std::to_string(*f.config.world_size);
  if (f.cell.rfind(head, 0) != 0) return std::nullopt;
  std::string tail = f.cell.substr(head.size());
  if (tail.empty()) return CellPair{*f.config.world_size, std::nullopt};
  if (tail == " without NVLink") return CellPair{*f.config.world_size, false};
  if (tail == " with NVLink") return CellPair{*f.config.world_size, true};
  return std::nullopt;
}

constexpr char kCellMark = '\x01';

// The message with its cell replaced by a mark: findings that differ only in
// the cell have the same text.
std::string masked(const model::Finding& f) {
  std::string m = f.message;
  if (!cellOf(f)) return m;
  auto at = m.find(f.cell);
  if (at != std::string::npos) m.replace(at, f.cell.size(), std::string(1, kCellMark));
  return m;
}

using Key = std::tuple<std::string, int, std::string, std::vector<std::tuple<std::string, int, int, std::string, std::string>>>;

Key keyOf(const model::Finding& f) {
  std::vector<std::tuple<std::string, int, int, std::string, std::string>> locs;
  for (const auto& l : f.locations)
    if (l.role != "expansion") locs.emplace_back(l.file, l.line, l.col, l.role, l.note);
  return {f.rule, static_cast<int>(f.severity), masked(f), locs};
}

std::string worldSizes(const std::vector<std::int64_t>& ws) {
  std::string s;
  for (auto w : ws) s += (s.empty() ? "" : ", ") + std::to_string(w);
  return (ws.size() == 1 ? "world size " : "world sizes ") + s;
}

FindingGroup build(const std::vector<const model::Finding*>& members) {
  FindingGroup g;
  g.members = members;
  const model::Finding& f = *members.front();
  // The message naming every cell of the group.
  g.message = f.message;
  if (members.size() > 1) {
    std::vector<CellPair> cells;
    for (const auto* m : members) cells.push_back(*cellOf(*m));
    std::string m = masked(f);
    auto at = m.find(kCellMark);
    if (at != std::string::npos) m.replace(at, 1, model::cellsText(cells));
    g.message = m;
  }
  // Primary: where a patch opened a check, else the finding's first location.
  std::size_t primary = f.locations.size();
  for (std::size_t i = 0; i < f.locations.size() && primary == f.locations.size(); ++i)
    if (f.locations[i].role == "opened") primary = i;
  if (primary == f.locations.size() && !f.locations.empty()) primary = 0;
  if (primary < f.locations.size()) g.primary = f.locations[primary];
  // Expansions: each place once, with the world sizes that expand there.
  std::vector<std::pair<model::Location, std::vector<std::int64_t>>> expansions;
  for (const auto* m : members)
    for (const auto& l : m->locations) {
      if (l.role != "expansion") continue;
      auto it = std::find_if(expansions.begin(), expansions.end(), [&](const auto& e) { return sameLoc(e.first, l); });
      if (it == expansions.end()) expansions.push_back({l, {}}), it = std::prev(expansions.end());
      if (m->config.world_size) it->second.push_back(*m->config.world_size);
    }
  bool expansions_added = false;
  for (std::size_t i = 0; i < f.locations.size(); ++i) {
    if (i == primary) continue;
    const auto& l = f.locations[i];
    if (l.role != "expansion") {
      g.notes.push_back(l);
      continue;
    }
    if (expansions_added) continue;
    expansions_added = true;
    for (auto& [e, ws] : expansions) {
      model::Location n = e;
      std::sort(ws.begin(), ws.end());
      ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
      if (expansions.size() > 1 && !ws.empty()) n.note += " (" + worldSizes(ws) + ")";
      g.notes.push_back(n);
    }
  }
  // Fixes: each once, safe first.
  for (auto safety : {model::FixSafety::Safe, model::FixSafety::Unsafe})
    for (const auto* m : members)
      for (const auto& x : m->fixes) {
        if (x.safety != safety) continue;
        if (std::none_of(g.fixes.begin(), g.fixes.end(), [&](const model::Fix* y) {
              return y->description == x.description && y->edits == x.edits;
            }))
          g.fixes.push_back(&x);
      }
  return g;
}

}  // namespace

std::vector<FindingGroup> groupFindings(const Result& r) {
  std::vector<Key> keys;
  std::vector<std::vector<const model::Finding*>> members;
  for (const auto& f : r.findings) {
    if (f.suppressed) continue;
    Key k = keyOf(f);
    auto it = std::find(keys.begin(), keys.end(), k);
    // A finding without a cell in words is a group of its own.
    if (it == keys.end() || !cellOf(f)) {
      keys.push_back(k);
      members.push_back({&f});
    } else {
      members[static_cast<std::size_t>(it - keys.begin())].push_back(&f);
    }
  }
  std::vector<FindingGroup> out;
  for (const auto& m : members) out.push_back(build(m));
  return out;
}

GroupCounts countGroups(const Result& r) {
  GroupCounts c;
  for (const auto& g : groupFindings(r)) {
    auto sev = g.first().severity;
    int n = static_cast<int>(g.members.size());
    if (sev == model::Severity::Error) ++c.errors, c.error_cells += n;
    else if (sev == model::Severity::Warning) ++c.warnings, c.warning_cells += n;
  }
  return c;
}

std::string summaryText(const GroupCounts& c) {
  auto part = [](int n, int cells, const char* what) {
    std::string s = fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
    if (cells != n) s += fmt::format(" ({} configurations)", cells);
    return s;
  };
  return part(c.errors, c.error_cells, "error") + ", " + part(c.warnings, c.warning_cells, "warning");
}

std::string cleanText(const Result& r) {
  if (std::any_of(r.findings.begin(), r.findings.end(), [](const model::Finding& f) { return !f.suppressed; }))
    return "";
  int admitted = 0, elsewhere = 0;
  for (const auto& v : r.matrix) {
    if (!v.routed_elsewhere.empty()) {
      ++elsewhere;
      continue;
    }
    if (v.gate.state == solve::GateState::Admitted || v.gate.state == solve::GateState::AdmittedWhen) ++admitted;
  }
  int suppressed = countSuppressed(r);
  std::string s = admitted == 0 && elsewhere == 0
                      ? "no gaps: the gate admits no configuration"
                      : fmt::format("no gaps: {} configuration{} admitted, each reaches a kernel", admitted,
                                    admitted == 1 ? "" : "s");
  if (elsewhere) s += fmt::format("; {} routed elsewhere, not analysed here", elsewhere);
  if (suppressed) s.replace(0, 7, "no gaps reported"), s += fmt::format(" ({} suppressed)", suppressed);
  return s;
}

std::string renderConcise(const Result& r) {
  std::string out;
  for (const auto& g : groupFindings(r)) {
    std::string where = g.primary.valid() ? loc(g.primary)
                        : r.python_files.empty() ? std::string("layergate")
                                                 : r.python_files[0];
    out += fmt::format("{}: {} {}\n", where, g.first().rule, g.message);
  }
  return out;
}

std::string conciseCount(int errors, int warnings) {
  if (errors + warnings == 0) return "All checks passed.\n";
  return fmt::format("Found {} error{}, {} warning{}.\n", errors, errors == 1 ? "" : "s", warnings,
                     warnings == 1 ? "" : "s");
}

}  // namespace layergate::report
