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

// What makes findings one diagnostic: the rule, the claim (from ", but ...":
// what the dispatch does), and the places (the admitting line, the C++ path,
// what was assumed). A check's "opened by ENV=value" note counts by its place:
// the value may differ per cell.
using Key = std::tuple<std::string, int, std::string, std::vector<std::tuple<std::string, int, int, std::string, std::string>>>;

Key keyOf(const model::Finding& f) {
  std::vector<std::tuple<std::string, int, int, std::string, std::string>> locs;
  for (const auto& l : f.locations)
    if (l.role != "expansion") locs.emplace_back(l.file, l.line, l.col, l.role, l.role == "opened" ? "" : l.note);
  std::string m = masked(f);
  auto but = m.rfind(", but ");
  std::string claim = cellOf(f) && but != std::string::npos ? m.substr(but) : m;
  return {f.rule, static_cast<int>(f.severity), claim, locs};
}

std::string worldSizes(const std::vector<std::int64_t>& ws) {
  std::string s;
  for (auto w : ws) s += (s.empty() ? "" : ", ") + std::to_string(w);
  return (ws.size() == 1 ? "world size " : "world sizes ") + s;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b <= s.size()) {
    std::size_t e = s.find(' ', b);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::string unwords(const std::vector<std::string>& w, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to; ++i) s += (i == from ? "" : " ") + w[i];
  return s;
}

// The words a part of a gap's message starts with ("admits 16 B .. 8 MiB",
// "when X=1", "for 16 B .. 8 MiB", "and hands down ...", "but ...").
bool startsPart(const std::string& w) {
  return w == "admits" || w == "when" || w == "for" || w == "and" || w == "but" || w == "with";
}

// One message for findings that differ in their cell and in details of the
// admission (the env value, the sizes, the values handed down): the words
// they share, and the parts that differ once each with its world sizes:
// "... =1 for 4 KiB .. 8 MiB - 16 B (world size 4); for 16 B .. 8 MiB - 16 B
// (world sizes 6, 8), but ...".
std::string mergedMessage(const std::vector<const model::Finding*>& members, const std::string& cells) {
  std::vector<std::vector<std::string>> ws;
  for (const auto* m : members) ws.push_back(words(masked(*m)));
  std::size_t shortest = ws[0].size();
  for (const auto& w : ws) shortest = std::min(shortest, w.size());
  std::size_t pre = 0, suf = 0;
  auto samePre = [&](std::size_t i) {
    return std::all_of(ws.begin(), ws.end(), [&](const auto& w) { return w[i] == ws[0][i]; });
  };
  auto sameSuf = [&](std::size_t i) {
    return std::all_of(ws.begin(), ws.end(), [&](const auto& w) { return w[w.size() - 1 - i] == ws[0][ws[0].size() - 1 - i]; });
  };
  while (pre < shortest && samePre(pre)) ++pre;
  while (suf < shortest - pre && sameSuf(suf)) ++suf;
  std::string out;
  if (pre + suf == ws[0].size() && std::all_of(ws.begin(), ws.end(), [&](const auto& w) { return w.size() == ws[0].size(); })) {
    out = unwords(ws[0], 0, ws[0].size());
  } else {
    // The differing part starts and ends at a part's first word.
    bool starts = std::all_of(ws.begin(), ws.end(), [&](const auto& w) { return pre < w.size() && startsPart(w[pre]); });
    // (never before the cell's words, which every message shares)
    std::size_t floor = 0;
    while (floor < pre && ws[0][floor].find(kCellMark) == std::string::npos) ++floor;
    floor = floor < pre ? floor + 1 : 0;
    if (!starts && pre > floor) {
      std::size_t k = pre - 1;
      while (k > floor && !startsPart(ws[0][k])) --k;
      pre = k;
    }
    while (suf > 0 && !startsPart(ws[0][ws[0].size() - suf])) --suf;
    // Each differing part once, with the world sizes that have it.
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> variants;
    for (std::size_t i = 0; i < ws.size(); ++i) {
      std::string v = unwords(ws[i], pre, ws[i].size() - suf);
      auto it = std::find_if(variants.begin(), variants.end(), [&](const auto& x) { return x.first == v; });
      if (it == variants.end()) variants.push_back({v, {}}), it = std::prev(variants.end());
      if (members[i]->config.world_size) it->second.push_back(*members[i]->config.world_size);
    }
    // A comma that ends every part ends the list.
    bool comma = std::all_of(variants.begin(), variants.end(), [](const auto& x) { return !x.first.empty() && x.first.back() == ','; });
    std::string middle;
    for (auto& [v, w] : variants) {
      if (comma) v.pop_back();
      middle += (middle.empty() ? "" : "; ") + (v.empty() ? std::string("-") : v) + " (" + worldSizes(w) + ")";
    }
    if (comma) middle += ",";
    out = unwords(ws[0], 0, pre);
    out += (out.empty() ? "" : " ") + middle;
    if (suf) out += " " + unwords(ws[0], ws[0].size() - suf, ws[0].size());
  }
  auto at = out.find(kCellMark);
  if (at != std::string::npos) out.replace(at, 1, cells);
  return out;
}

// A check's "opened by ENV=value: condition" note, when the value differs
// per cell: the variables' names only.
std::string openedNote(const std::vector<const model::Finding*>& members, const model::Location& l) {
  bool same = true;
  for (const auto* m : members)
    for (const auto& x : m->locations)
      if (x.role == "opened" && x.file == l.file && x.line == l.line && x.col == l.col) same = same && x.note == l.note;
  const model::Finding& f = *members.front();
  std::string head = "check opened by " + solve::describeEnv(f.config.env) + ": ";
  if (same || l.note.rfind(head, 0) != 0) return l.note;
  std::string names;
  for (const auto& [k, v] : f.config.env)
    if (v) names += (names.empty() ? "" : ", ") + k;
  return "check opened by " + names + ": " + l.note.substr(head.size());
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
    g.message = mergedMessage(members, model::cellsText(cells));
  }
  // Primary: the finding's (its first location), which every member shares.
  std::size_t primary = 0;
  if (!f.locations.empty()) g.primary = f.locations[primary];
  if (g.primary.role == "opened") g.primary.note = openedNote(members, g.primary);
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
      if (l.role == "opened") g.notes.back().note = openedNote(members, l);
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

std::vector<FindingGroup> groupFindings(const Result& r, bool suppressed_too) {
  std::vector<Key> keys;
  std::vector<std::vector<const model::Finding*>> members;
  for (const auto& f : r.findings) {
    if (f.suppressed && !suppressed_too) continue;
    Key k = keyOf(f);
    // A suppressed finding groups only with those its comment suppresses.
    if (f.suppressed) std::get<2>(k) += fmt::format("\n{}:{}", f.suppressed->where.file, f.suppressed->where.line);
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

std::string clangErrorsText(const Result& r) {
  // Errors inside the dispatch's paths (Dispatch::broken): what the verdict
  // could not rest on, said without --verbose. Errors elsewhere in the file
  // (an undeclared helper macro of a missing header) are only a note.
  const auto& b = r.dispatch.broken;
  if (b.empty()) return "";
  std::string first;
  for (const auto& o : b)
    if (o.where.valid()) {
      first = fmt::format(", first at {}:{}", o.where.file, o.where.line);
      break;
    }
  return fmt::format("; clang errors in the dispatch{}: the paths through them are possible gaps at most", first);
}

std::string cleanText(const Result& r) {
  if (std::any_of(r.findings.begin(), r.findings.end(), [](const model::Finding& f) { return !f.suppressed; }))
    return "";
  // Gaps there are, only none on the lines changed since --diff-base's commit.
  if (!r.preexisting.empty())
    return fmt::format("no new findings: {} pre-existing, on no line changed since the --diff-base commit",
                       r.preexisting.size());
  int admitted = 0, elsewhere = 0;
  for (const auto& v : r.matrix) {
    if (!v.routed_elsewhere.empty()) {
      ++elsewhere;
      continue;
    }
    if (v.gate.state == solve::GateState::Admitted || v.gate.state == solve::GateState::AdmittedWhen) ++admitted;
  }
  int suppressed = countSuppressed(r);
  if (r.space) {
    // A family described as data: its admitted regions.
    std::size_t n = r.space->served.size();
    std::string s = !r.space->admits ? "no gaps: the gate admits no configuration"
                    : !r.space->served_listed ? "no gaps: every configuration the gate admits reaches a kernel (--matrix lists them)"
                    : n == 0 ? "no gaps: the gate admits no configuration"
                           : fmt::format("no gaps: {} region{} of configurations admitted, each reaches a kernel{}", n,
                                         n == 1 ? "" : "s", r.space->truncated ? " (more not listed)" : "");
    if (suppressed) s.replace(0, 7, "no gaps reported"), s += fmt::format(" ({} suppressed)", suppressed);
    return s;
  }
  std::string s = admitted == 0 && elsewhere == 0
                      ? "no gaps: the gate admits no configuration"
                      : fmt::format("no gaps: {} configuration{} admitted, each reaches a kernel", admitted,
                                    admitted == 1 ? "" : "s");
  if (elsewhere) s += fmt::format("; {} routed elsewhere, not analysed here", elsewhere);
  if (suppressed) s.replace(0, 7, "no gaps reported"), s += fmt::format(" ({} suppressed)", suppressed);
  if (!r.unproven.empty()) {
    std::string at;
    for (const auto& u : r.unproven) at += (at.empty() ? "" : ", ") + u;
    s += fmt::format(", counting the C++ branch{} --unsafe-fixes inserted at {}: unproven until `layergate selftest` runs it",
                     r.unproven.size() == 1 ? "" : "es", at);
  }
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

std::string preexistingText(const Result& r) {
  if (r.preexisting.empty()) return "";
  Result old;
  old.python_files = r.python_files;
  old.findings = r.preexisting;
  std::string out;
  for (const auto& g : groupFindings(old)) {
    std::string where = g.primary.valid() ? loc(g.primary) : old.python_files.empty() ? "layergate" : old.python_files[0];
    out += fmt::format("layergate: pre-existing (not counted): {}: {} {}\n", where, g.first().rule, g.message);
  }
  return out;
}

std::string conciseCount(int errors, int warnings) {
  if (errors + warnings == 0) return "All checks passed.\n";
  return fmt::format("Found {} error{}, {} warning{}.\n", errors, errors == 1 ? "" : "s", warnings,
                     warnings == 1 ? "" : "s");
}

}  // namespace layergate::report
