#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/Report.h"

namespace layergate::report {
namespace {

std::string loc(const model::Location& l) {
  return l.col > 0 ? fmt::format("{}:{}:{}", l.file, l.line, l.col) : fmt::format("{}:{}", l.file, l.line);
}

std::string gateCell(const solve::CellVerdict& v) {
  using solve::GateState;
  if (!v.routed_elsewhere.empty() && v.gate.state == GateState::Blocked) return "not analysed here (routed elsewhere)";
  switch (v.gate.state) {
    case GateState::Blocked: return "blocked";
    case GateState::Undecided: return "undecided";
    case GateState::Admitted:
      return "admitted" + (v.gate.sizes ? " " + v.gate.sizes->str() : "");
    case GateState::AdmittedWhen:
      return "admitted when " + v.gate.condition + (v.gate.sizes ? ", " + v.gate.sizes->str() : "");
  }
  return "?";
}

}  // namespace

std::string selectionCell(const solve::CellVerdict& v) {
  using solve::GateState;
  switch (v.gate.state) {
    case GateState::Blocked: return "-";
    case GateState::Undecided: return "undecided";
    case GateState::Admitted: return "by default";
    case GateState::AdmittedWhen: return "when " + v.gate.condition;
  }
  return "?";
}

namespace {

std::string dispatchCell(const solve::CellVerdict& v) {
  // Only what can run for some value of the dispatch's own preconditions;
  // launches first, then fall-throughs and throws.
  std::vector<std::string> parts;
  // What runs with nothing set comes first; each C++-only override after it.
  for (int pass = 0; pass < 6; ++pass) {
    for (const auto& p : v.dispatch) {
      if (p.precondition) continue;  // listed in JSON; not a property of the cell
      int want = p.kind == model::LeafKind::Launch ? 0 : p.kind == model::LeafKind::None ? 1 : 2;
      if (want != pass % 3 || p.when.empty() != (pass < 3)) continue;
      // an override that selects what runs anyway says nothing new
      if (!p.when.empty() && std::any_of(v.dispatch.begin(), v.dispatch.end(), [&](const solve::DispatchPart& q) {
            return q.when.empty() && !q.precondition && q.kind == p.kind && q.kernel == p.kernel &&
                   q.sizes.lo == p.sizes.lo && q.sizes.hi == p.sizes.hi;
          }))
        continue;
      std::string what = pass % 3 == 0 ? p.kernel : pass % 3 == 1 ? "no kernel" : "throw";
      std::string s = fmt::format("{} ({})", what, p.sizes.str());
      if (!p.when.empty()) s = "with " + p.when + ": " + s;
      if (std::find(parts.begin(), parts.end(), s) == parts.end()) parts.push_back(s);
    }
  }
  if (parts.empty()) return "-";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

std::string configText(const model::Config& c, const model::Roles& names) {
  auto name = [](const std::string& n, const char* role) { return n.empty() ? std::string(role) : n; };
  std::string s;
  if (c.world_size) s += fmt::format("{}={}", name(names.ranks, "ranks"), *c.world_size);
  if (c.full_nvlink) s += fmt::format(" {}={}", name(names.link, "link"), *c.full_nvlink ? "true" : "false");
  if (c.nbytes) s += fmt::format(" {}={}", name(names.bytes, "bytes"), *c.nbytes);
  for (const auto& [k, v] : c.values) s += fmt::format(" {}={}", k, v);
  for (const auto& [k, v] : c.texts)
    if (names.isElement(k)) s += fmt::format(" {}={}", k, v);
  for (const auto& [k, v] : c.env) s += v ? fmt::format(" {}={}", k, *v) : fmt::format(" {} unset", k);
  return s;
}

int countAtLeast(const Result& r, model::Severity s) {
  return static_cast<int>(std::count_if(r.findings.begin(), r.findings.end(), [&](const model::Finding& f) {
    return !f.suppressed && static_cast<int>(f.severity) <= static_cast<int>(s);
  }));
}

int countSuppressed(const Result& r) {
  return static_cast<int>(
      std::count_if(r.findings.begin(), r.findings.end(), [](const model::Finding& f) { return f.suppressed.has_value(); }));
}

std::string suppressedText(int suppressed, int baselined, int preexisting) {
  std::string s;
  if (suppressed) s += fmt::format("{} suppressed", suppressed);
  if (baselined) s += fmt::format("{}{} baselined", s.empty() ? "" : ", ", baselined);
  if (preexisting) s += fmt::format("{}{} pre-existing", s.empty() ? "" : ", ", preexisting);
  return s.empty() ? s : " (" + s + ")";
}

namespace {

// The assumptions of a counterexample, short: "weak_contiguous, p2p_ok and
// same_node are true; the try block at line 23 completes" (a line of the
// diagnostic's own file by its number alone).
std::string assumingText(const model::Config& c, const std::string& here) {
  if (c.assumed_words.size() != c.assumed.size()) {
    std::string a;
    for (const auto& [k, v] : c.assumed) a += (a.empty() ? "" : ", ") + k + "=" + v;
    return a;
  }
  std::vector<std::string> yes, no, other;
  auto ends = [](const std::string& w, const std::string& tail) {
    return w.size() > tail.size() && w.compare(w.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (auto w : c.assumed_words) {
    if (!here.empty())
      for (const char* lead : {" at ", "("})
        for (std::size_t at; (at = w.find(lead + here + ":")) != std::string::npos;)
          w.replace(at, std::string(lead).size() + here.size() + 1, std::string(lead) + "line ");
    if (ends(w, " is true") && w.find(' ') == w.size() - 8) yes.push_back(w.substr(0, w.size() - 8));
    else if (ends(w, " is false") && w.find(' ') == w.size() - 9) no.push_back(w.substr(0, w.size() - 9));
    else other.push_back(w);
  }
  auto names = [](const std::vector<std::string>& xs, const char* value) {
    std::string s;
    for (std::size_t i = 0; i < xs.size(); ++i) s += (i == 0 ? "" : i + 1 == xs.size() ? " and " : ", ") + xs[i];
    return s + (xs.size() == 1 ? " is " : " are ") + value;
  };
  std::string a;
  if (!yes.empty()) a = names(yes, "true");
  if (!no.empty()) a += (a.empty() ? "" : "; ") + names(no, "false");
  for (const auto& w : other) a += (a.empty() ? "" : "; ") + w;
  return a;
}

bool isFixNote(const Result& r, const std::string& n) {
  return std::find(r.fix_notes.begin(), r.fix_notes.end(), n) != r.fix_notes.end();
}

}  // namespace

std::string renderText(const Result& r, const TextOptions& o) {
  std::string out;
  auto paint = [&](const char* code, const std::string& s) {
    return o.color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  auto note = [&](const std::string& where, const std::string& text) {
    return fmt::format("{}: {}: {}\n", where, paint("1;36", "note"), text);
  };
  auto groups = groupFindings(r);
  bool gap_rules = false;
  for (const auto& g : groups) {
    const model::Finding& f = g.first();
    gap_rules |= f.rule == "LG001" || f.rule == "LG002";
    const char* sev = model::severityName(f.severity);
    std::string where = g.primary.valid() ? loc(g.primary)
                        : r.python_files.empty() ? std::string("layergate")
                                                 : r.python_files[0];
    out += fmt::format("{}: {}: {} [{}]\n", paint("1", where),
                       paint(f.severity == model::Severity::Error ? "1;31" : "1;35", sev), g.message, f.rule);
    if (g.primary.valid() && !g.primary.note.empty()) out += note(loc(g.primary), g.primary.note);
    for (const auto& l : g.notes) out += note(loc(l), l.note);
    for (const auto* x : g.fixes) {
      std::string at = x->edits.empty() ? std::string("layergate")
                                        : fmt::format("{}:{}:{}", x->edits[0].file, x->edits[0].start.line,
                                                      x->edits[0].start.col);
      out += note(at, fmt::format("{} ({}): {}", x->safety == model::FixSafety::Safe ? "safe fix" : "unsafe fix",
                                  x->safety == model::FixSafety::Safe ? "--fix" : "--fix --unsafe-fixes",
                                  x->description));
    }
    if (o.details && (f.config.world_size || !f.config.env.empty())) {
      out += fmt::format("    counterexample: {}\n", configText(f.config, r.roles));
      if (!f.config.assumed.empty()) out += fmt::format("    assuming: {}\n", assumingText(f.config, g.primary.file));
    }
  }
  // Why a gap has no fix: said with the diagnostics, since it is what the
  // user does next.
  if (gap_rules)
    for (const auto& n : r.fix_notes) out += fmt::format("layergate: {}: {}\n", paint("1;36", "note"), n);
  if (groups.empty()) {
    std::string clean = cleanText(r);
    if (!clean.empty()) out += clean + "\n";
  }
  out += preexistingText(r);
  if (o.trace && !r.trace.empty()) {
    out += "\nFlag trace (NVLink flag, Python probe to C++ branch)\n";
    for (size_t i = 0; i < r.trace.size(); ++i)
      out += fmt::format("  {:>2}. {:<22} {}\n", i + 1, r.trace[i].hop, loc(r.trace[i].where));
  }
  if (o.trace && !r.value_traces.empty()) {
    out += "\nValues handed down (Python to C++)\n";
    for (const auto& v : r.value_traces) {
      out += fmt::format("  {}{}{}\n", v.var, v.field == v.var ? "" : " (" + v.field + ")",
                         v.reaches_cpp ? "" : ": no C++ parameter or condition of the dispatch reads it");
      for (size_t i = 0; i < v.hops.size(); ++i)
        out += fmt::format("  {:>4}. {:<34} {}\n", i + 1, v.hops[i].hop, loc(v.hops[i].where));
    }
  }
  // What the analysis assumed or skipped: shown on request, else counted in
  // one line that says how to see them.
  std::vector<std::string> notes;
  for (const auto& n : r.dispatch.notes) notes.push_back(n);
  for (const auto& n : r.gate.notes)
    if (!isFixNote(r, n)) notes.push_back(n);
  if (o.notes) {
    for (const auto& n : notes) out += fmt::format("layergate: note: {}\n", n);
  } else if (!notes.empty()) {
    out += fmt::format("layergate: note: {} note{} on what the analysis assumed or could not follow (--verbose)\n",
                       notes.size(), notes.size() == 1 ? "" : "s");
  }
  if (o.matrix && !r.matrix.empty()) {
    out += "\nConfiguration matrix (gate: Python admission; dispatch: C++ kernel per message size)\n";
    size_t w = 4;
    std::vector<std::string> gates;
    for (const auto& v : r.matrix) gates.push_back(gateCell(v)), w = std::max(w, gates.back().size());
    out += fmt::format("  {:<5} {:<6} {:<{}}  {}\n", "ws", "nvlink", "gate", w, "dispatch");
    for (size_t i = 0; i < r.matrix.size(); ++i) {
      const auto& v = r.matrix[i];
      std::string mark;
      for (const auto& f : r.findings)
        if (!f.suppressed && f.config.world_size == v.cell.world_size &&
            (!f.config.full_nvlink || *f.config.full_nvlink == v.cell.full_nvlink))
          mark += (mark.empty() ? "  <- " : ", ") + f.rule;
      out += fmt::format("  {:<5} {:<6} {:<{}}  {}{}\n", v.cell.world_size,
                         v.cell.nvlink_any ? "any" : v.cell.full_nvlink ? "yes" : "no",
                         gates[i], w, dispatchCell(v), paint("1;31", mark));
    }
    for (bool free : {true, false}) {
      std::vector<std::string> assumed;
      for (const auto& op : r.gate.opaques)
        if (op.free == free) assumed.push_back(op.text);
      if (assumed.empty()) continue;
      std::sort(assumed.begin(), assumed.end());
      assumed.erase(std::unique(assumed.begin(), assumed.end()), assumed.end());
      std::string a;
      for (const auto& s : assumed) a += (a.empty() ? "" : ", ") + s;
      out += free ? fmt::format("  machine facts the gate reads (free, like the probes): {}\n", a)
                  : fmt::format("  gate code not interpreted (errors hold for all its values; LG008 names what a "
                                "possible gap needs): {}\n", a);
    }
  }
  if (o.matrix && r.space) {
    // A family described as data: the regions of its variables' product
    // that the gate admits, each with the kernel that runs or the gap.
    out += "\nConfiguration regions (the variables' values the gate admits; variables left out take any value)\n";
    for (const auto& g : r.space->served)
      out += fmt::format("  {}\n    -> {}\n", g.text(), g.what);
    for (const auto& g : r.space->gaps)
      out += fmt::format("  {}\n    -> {}{}\n", g.text(),
                         g.kind == model::LeafKind::Throw ? "throws: " + g.what : "no kernel: " + g.what,
                         paint("1;31", g.certain ? "  <- gap" : "  <- possible gap"));
    if (r.space->served.empty() && r.space->gaps.empty()) out += "  (none: the gate admits no configuration)\n";
    if (r.space->truncated) out += "  (more regions than listed)\n";
  }
  if (o.matrix && r.selection && !r.selection->arms.empty()) {
    const auto& sel = *r.selection;
    out += fmt::format("\nSelection layer: the implementation {} ({}) returns, per cell\n", sel.function, loc(sel.where));
    std::vector<std::size_t> widths;
    std::string head = fmt::format("  {:<5} {:<6}", "ws", "nvlink");
    for (std::size_t a = 0; a < sel.arms.size(); ++a) {
      std::size_t w = sel.arms[a].implementation.size();
      for (const auto& v : r.selection_cells[a]) w = std::max(w, selectionCell(v).size());
      widths.push_back(w);
      head += fmt::format("  {:<{}}", sel.arms[a].implementation == "?" ? std::string("(other)") : sel.arms[a].implementation, w);
    }
    out += head + "\n";
    for (std::size_t i = 0; !r.selection_cells.empty() && i < r.selection_cells[0].size(); ++i) {
      const auto& c = r.selection_cells[0][i].cell;
      std::string row = fmt::format("  {:<5} {:<6}", c.world_size, c.nvlink_any ? "any" : c.full_nvlink ? "yes" : "no");
      for (std::size_t a = 0; a < sel.arms.size(); ++a)
        row += fmt::format("  {:<{}}", i < r.selection_cells[a].size() ? selectionCell(r.selection_cells[a][i]) : "", widths[a]);
      out += row + "\n";
    }
    out += "  (by default: returned with no env var set, for some machine facts (same node, NVLink clique, the\n"
           "  probes); when ENV=v: only with that setting; -: never. Each implementation's own gate decides after it.)\n";
    for (const auto& n : sel.notes)
      if (o.notes) out += fmt::format("  selection note: {}\n", n);
  }
  // A clean run's few lines stay together; after diagnostics or details, a blank line.
  bool spaced = !groups.empty() || (o.trace && !r.trace.empty()) || (o.matrix && (!r.matrix.empty() || r.space)) ||
                (o.notes && !notes.empty());
  out += fmt::format("{}{}{}{}\n", spaced ? "\n" : "", summaryText(countGroups(r)),
                     suppressedText(countSuppressed(r), r.baselined, static_cast<int>(r.preexisting.size())),
                     clangErrorsText(r));
  return out;
}

}  // namespace layergate::report
