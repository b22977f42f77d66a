// The pre-deployment report as one self-contained HTML page: what was
// checked (checkout, commit, date, command line) and the summary first, then
// per gate every diagnostic (one card, as the text report counts them) with
// its locations, counterexample, configurations and fixes, the
// configuration matrix as a coloured grid (world size × NVLink, each cell's
// admitted sizes over the dispatch's size ranges), and the flag trace drawn
// as a path of boxes from the Python probe to the C++ branch. Inline CSS only: no scripts, no
// fonts, no images, nothing fetched, so the file can be attached to a ticket
// or opened from a CI artifact as it is. Every text is escaped.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "report/Report.h"

namespace layergate::report {
namespace {

namespace fs = std::filesystem;

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

// A relative URL path: unreserved characters and '/' as they are, the rest
// percent-encoded (a file named "a#b.py" or "<x>.py" still links to itself).
std::string urlPath(const std::string& p) {
  std::string o;
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') o += static_cast<char>(c);
    else o += fmt::format("%{:02X}", c);
  }
  return o;
}

class Page {
 public:
  Page(const HtmlOptions& o) : o_(o) {}

  std::string href(const model::Location& l) const {
    fs::path f(l.file);
    if (f.is_relative() && !o_.file_base.empty()) f = fs::path(o_.file_base) / f;
    f = f.lexically_normal();
    std::string rel = l.file;
    if (!o_.page_dir.empty() && f.is_absolute()) {
      fs::path r = f.lexically_relative(fs::path(o_.page_dir).lexically_normal());
      if (!r.empty()) rel = r.string();
    }
    return urlPath(rel) + (l.line > 0 ? fmt::format("#L{}", l.line) : "");
  }

  // Shown as the file's last component (the full path in the tooltip): the
  // trace's boxes are narrow.
  std::string shortLink(const model::Location& l) const {
    std::string name = fs::path(l.file).filename().string();
    return fmt::format("<a class=\"loc\" href=\"{}\" title=\"{}\">{}:{}</a>", esc(href(l)), esc(l.file), esc(name), l.line);
  }

  std::string link(const model::Location& l) const {
    std::string text = l.col > 0 ? fmt::format("{}:{}:{}", l.file, l.line, l.col)
                       : l.line > 0 ? fmt::format("{}:{}", l.file, l.line)
                                    : l.file;
    if (l.file.empty() || l.line < 0) return "<span class=\"loc\">" + esc(l.file.empty() ? "(no location)" : text) + "</span>";
    return fmt::format("<a class=\"loc\" href=\"{}\">{}</a>", esc(href(l)), esc(text));
  }

 private:
  HtmlOptions o_;
};

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2329;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}code,.loc,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
a.loc{color:#0b5cad;text-decoration:none}a.loc:hover{text-decoration:underline}
.summary{margin:6px 0 14px}.pill{display:inline-block;border-radius:10px;padding:1px 9px;margin-right:6px;font-weight:600;font-size:12.5px}
.pill.error{background:#ffe1e1;color:#9b1010}.pill.warning{background:#fff1c9;color:#7a5200}.pill.clean{background:#dcf5e3;color:#116329}
.muted{color:#57606a}.inputs{margin:2px 0}
table.matrix{border-collapse:separate;border-spacing:4px}table.matrix th{font-weight:600;text-align:center;padding:2px 6px}
table.matrix th.ws{text-align:right;width:70px}
td.cell{vertical-align:top;width:520px;border-radius:6px;padding:6px 8px;border:2px solid #d0d7de;background:#f6f8fa}
td.cell.gate-blocked{background:#f2f3f5;color:#6e7781}td.cell.gate-admitted{background:#eefaf1;border-color:#8fd19e}
td.cell.gate-admitted-when{background:#fff8e6;border-color:#e3b341}td.cell.gate-undecided{background:#f3eefc;border-color:#b392f0}
td.cell.gap{background:#ffecec;border-color:#d1242f;box-shadow:0 0 0 1px #d1242f inset}
.gate-line{font-weight:600;margin-bottom:4px}.gate-line .state{text-transform:uppercase;font-size:11px;letter-spacing:.04em;margin-right:6px}
.bars{position:relative;margin:3px 0 5px}.bar{position:relative;height:9px;background:#e6e9ed;border-radius:3px;margin:2px 0;overflow:hidden}
.bar span{position:absolute;top:0;bottom:0}.bar .adm{background:#3b82f6}
.bar .kind-launch{background:#2da44e}.bar .kind-none{background:#d1242f}.bar .kind-throw{background:#e16f24}
.axis{display:flex;justify-content:space-between;font-size:10px;color:#8c959f}
ul.parts{list-style:none;margin:0;padding:0}ul.parts li{margin:1px 0;padding:1px 4px;border-left:4px solid #aaa;font-size:12.5px}
li.kind-launch{border-color:#2da44e}li.kind-none{border-color:#d1242f}li.kind-throw{border-color:#e16f24}
ul.parts li.gap{background:#ffd7d7;font-weight:600}ul.parts li:not(.admitted){opacity:.6}
.kind{font-weight:600;margin-right:4px}.badge{display:inline-block;background:#d1242f;color:#fff;border-radius:4px;padding:0 6px;font-size:11.5px;font-weight:700;margin:3px 4px 0 0;text-decoration:none}
.badge.warning{background:#bf8700}
.legend span{display:inline-block;margin-right:14px;font-size:12.5px}.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
article.finding{border:1px solid #d0d7de;border-left:6px solid #d1242f;border-radius:6px;padding:8px 12px;margin:10px 0;background:#fff}
article.finding.sev-warning{border-left-color:#bf8700}article.finding.sev-note{border-left-color:#57606a}
article.finding.suppressed{border-left-color:#8c959f;opacity:.75}
.finding .head{font-weight:600}.finding .sev{text-transform:uppercase;font-size:11.5px;margin-right:6px}
.finding .sev-error{color:#d1242f}.finding .sev-warning{color:#9a6700}.finding ul{margin:4px 0;padding-left:18px}
.role{display:inline-block;min-width:64px;color:#57606a;font-size:12px}.cex{background:#f6f8fa;border-radius:4px;padding:3px 8px;margin-top:4px}
ol.trace{list-style:none;display:flex;flex-wrap:wrap;align-items:stretch;padding:0;margin:8px 0}
ol.trace li.hop{border:2px solid #8c959f;border-radius:8px;padding:5px 8px;background:#fff;min-width:96px;max-width:240px}
ol.trace li.hop .loc{font-size:11.5px}
ol.trace li.hop.py{border-color:#3572a5;background:#eef4fb}ol.trace li.hop.cpp{border-color:#6f42c1;background:#f5f0fd}
ol.trace li.hop .step{font-size:11px;color:#57606a;text-transform:uppercase;letter-spacing:.04em}
ol.trace li.hop .name{font-weight:600;display:block}
ol.trace li.arrow{align-self:center;font-size:22px;color:#57606a;padding:0 4px}
ol.trace li.arrow.cross{color:#d1242f;font-weight:700}
ul.notes{font-size:12.5px;color:#3d444d}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:6px 0 10px;font-size:13px}
dl.meta dt{color:#57606a}dl.meta dd{margin:0}
table.gates{border-collapse:collapse;margin:6px 0 10px}table.gates td,table.gates th{padding:2px 10px;border-bottom:1px solid #d0d7de;text-align:left}
.fix{border:1px solid #8fd19e;background:#f3fbf5;border-radius:6px;padding:4px 8px;margin-top:6px}
.fix.fix-unsafe{border-color:#e3b341;background:#fffbeb}
.fix .edit pre{margin:2px 0 4px;padding:4px 6px;background:#fff;border:1px solid #d0d7de;border-radius:4px;overflow-x:auto;font-size:12px}
)";

// A message-size axis for the bars: log2 from 1 B to 1 GiB (larger sizes
// and "no upper bound" are drawn to the right edge).
constexpr double kAxisBits = 30.0;
double pos(std::int64_t bytes) {
  if (bytes <= 1) return 0.0;
  return std::min(100.0, std::log2(static_cast<double>(bytes)) / kAxisBits * 100.0);
}
std::string span(const solve::SizeRange& r, const std::string& cls) {
  double a = pos(r.lo), b = r.unbounded() ? 100.0 : pos(r.hi + 1);
  return fmt::format("<span class=\"{}\" style=\"left:{:.2f}%;width:{:.2f}%\"></span>", cls, a, std::max(0.6, b - a));
}

bool overlaps(const solve::SizeRange& a, const solve::SizeRange& b) { return a.lo <= b.hi && b.lo <= a.hi; }

bool admits(const solve::CellVerdict& v) {
  return v.gate.state == solve::GateState::Admitted || v.gate.state == solve::GateState::AdmittedWhen;
}

std::string cellId(const std::string& unit, int ws, bool nvlink) {
  return fmt::format("{}ws{}-{}", unit, ws, nvlink ? "nvlink" : "pcie");
}

const char* kindClass(model::LeafKind k) {
  switch (k) {
    case model::LeafKind::Launch: return "kind-launch";
    case model::LeafKind::None: return "kind-none";
    case model::LeafKind::Throw: return "kind-throw";
  }
  return "";
}

// The card (diagnostic) each finding is shown in: index into the groups.
using CardOf = std::vector<std::size_t>;

std::string renderCell(const Page& page, const Result& r, const solve::CellVerdict& v, const std::string& unit,
                       const CardOf& card_of) {
  bool in = admits(v);
  std::vector<const solve::DispatchPart*> parts;  // as the text matrix: preconditions only in JSON
  for (const auto& p : v.dispatch)
    if (!p.precondition) parts.push_back(&p);
  std::stable_sort(parts.begin(), parts.end(), [](auto* a, auto* b) {
    return std::make_tuple(!a->when.empty(), a->sizes.lo, static_cast<int>(a->kind)) <
           std::make_tuple(!b->when.empty(), b->sizes.lo, static_cast<int>(b->kind));
  });
  bool gap = false;
  std::string items, bar;
  for (const auto* p : parts) {
    bool adm = in && (!v.gate.sizes || overlaps(*v.gate.sizes, p->sizes));
    bool hole = adm && p->kind != model::LeafKind::Launch;
    gap = gap || hole;
    std::string what = p->kind == model::LeafKind::Launch ? "kernel" : p->kind == model::LeafKind::None ? "no kernel" : "throw";
    std::string detail = p->kernel.empty() ? "" : " " + esc(p->kernel);
    items += fmt::format("<li class=\"{}{}{}\"><span class=\"kind\">{}</span>{}{} <span class=\"mono\">({})</span> {}</li>\n",
                         kindClass(p->kind), adm ? " admitted" : "", hole ? " gap" : "", what,
                         p->when.empty() ? "" : "<span class=\"muted\">with " + esc(p->when) + ":</span> ", detail,
                         esc(p->sizes.str()), page.link(p->where));
    if (p->when.empty()) bar += span(p->sizes, kindClass(p->kind));
  }
  std::string marks;
  std::vector<std::string> rule_ids;  // class rule-LG001 etc., once each
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    if (f.config.world_size != v.cell.world_size || (f.config.full_nvlink && *f.config.full_nvlink != v.cell.full_nvlink))
      continue;
    marks += fmt::format("<a class=\"badge {}\" href=\"#{}f{}\">{}</a>", model::severityName(f.severity), unit, card_of[i] + 1,
                         esc(f.rule));
    if (std::find(rule_ids.begin(), rule_ids.end(), f.rule) == rule_ids.end()) rule_ids.push_back(f.rule);
  }
  std::string rules;
  for (const auto& id : rule_ids) rules += " rule-" + esc(id);
  std::string gate;
  switch (v.gate.state) {
    case solve::GateState::Blocked: gate = "<span class=\"state\">blocked</span>"; break;
    case solve::GateState::Undecided: gate = "<span class=\"state\">undecided</span>" + esc(v.undecided_reason); break;
    case solve::GateState::Admitted: gate = "<span class=\"state\">admitted</span>"; break;
    case solve::GateState::AdmittedWhen:
      gate = "<span class=\"state\">admitted when</span><code>" + esc(v.gate.condition) + "</code>";
      break;
  }
  if (in && v.gate.sizes) gate += " <span class=\"mono\">" + esc(v.gate.sizes->str()) + "</span>";
  std::string adm_bar = in ? (v.gate.sizes ? span(*v.gate.sizes, "adm") : span({1, solve::kMaxBytes}, "adm")) : "";
  return fmt::format(
      "<td id=\"{}\" class=\"cell gate-{}{}{}\" data-ws=\"{}\" data-nvlink=\"{}\">\n<div class=\"gate-line\">{}</div>\n"
      "<div class=\"bars\" title=\"message size, log scale 1 B .. 1 GiB\"><div class=\"bar\">{}</div><div class=\"bar\">{}</div></div>\n"
      "<ul class=\"parts\">\n{}</ul>{}</td>\n",
      cellId(unit, v.cell.world_size, v.cell.full_nvlink), solve::gateStateName(v.gate.state), gap ? " gap" : "", rules,
      v.cell.world_size, v.cell.nvlink_any ? "any" : v.cell.full_nvlink ? "yes" : "no", gate, adm_bar, bar,
      items.empty() ? "<li class=\"muted\">-</li>\n" : items, marks.empty() ? "" : "<div>" + marks + "</div>");
}

std::string renderMatrix(const Page& page, const Result& r, const std::string& unit, const CardOf& card_of) {
  std::vector<int> sizes;
  for (const auto& v : r.matrix)
    if (std::find(sizes.begin(), sizes.end(), v.cell.world_size) == sizes.end()) sizes.push_back(v.cell.world_size);
  std::sort(sizes.begin(), sizes.end());
  std::string rows;
  for (int ws : sizes) {
    rows += fmt::format("<tr><th class=\"ws\">ws {}</th>", ws);
    for (bool nv : {false, true}) {
      auto it = std::find_if(r.matrix.begin(), r.matrix.end(),
                             [&](const solve::CellVerdict& v) { return v.cell.world_size == ws && (v.cell.nvlink_any || v.cell.full_nvlink == nv); });
      rows += it == r.matrix.end() ? "<td class=\"cell muted\">not computed</td>" : renderCell(page, r, *it, unit, card_of);
    }
    rows += "</tr>\n";
  }
  return fmt::format(
      "<h3>Configuration matrix</h3>\n<p class=\"legend\"><span><i style=\"background:#3b82f6\"></i>sizes the gate admits</span>"
      "<span><i style=\"background:#2da44e\"></i>kernel</span><span><i style=\"background:#d1242f\"></i>no kernel</span>"
      "<span><i style=\"background:#e16f24\"></i>throw</span><span class=\"muted\">bars: message size, log scale, 1 B .. 1 GiB</span></p>\n"
      "<table class=\"matrix\"><thead><tr><th class=\"ws\">world size</th><th>NVLink: no (PCIe)</th><th>NVLink: yes</th></tr></thead>\n"
      "<tbody>\n{}</tbody></table>\n",
      rows);
}

// The selection layer: per cell, which class the selection function returns.
std::string renderSelection(const Page& page, const Result& r) {
  const auto& sel = *r.selection;
  std::string head = "<tr><th>ws</th><th>nvlink</th>";
  for (const auto& a : sel.arms) head += "<th>" + esc(a.implementation == "?" ? "(other)" : a.implementation) + "</th>";
  head += "</tr>\n";
  std::string rows;
  for (std::size_t i = 0; !r.selection_cells.empty() && i < r.selection_cells[0].size(); ++i) {
    const auto& c = r.selection_cells[0][i].cell;
    rows += fmt::format("<tr><th class=\"ws\">{}</th><td>{}</td>", c.world_size,
                        c.nvlink_any ? "any" : c.full_nvlink ? "yes" : "no");
    for (std::size_t a = 0; a < sel.arms.size(); ++a) {
      rows += "<td>" + esc(i < r.selection_cells[a].size() ? selectionCell(r.selection_cells[a][i]) : "-") + "</td>";
    }
    rows += "</tr>\n";
  }
  return fmt::format("<h3>Selection layer: the implementation {} returns, per cell</h3>\n<p class=\"muted\">{}: "
                     "by default: with no env var set, for some machine facts; when ENV=v: only with that setting; "
                     "-: never. Each implementation's own gate decides after it.</p>\n<table class=\"selection\">\n{}{}</table>\n",
                     esc(sel.function), page.link(sel.where), head, rows);
}

std::string renderTrace(const Page& page, const std::vector<model::Hop>& trace) {
  std::string out = "<ol class=\"trace\">\n";
  auto layer = [](const model::Hop& h) {
    std::string ext = fs::path(h.where.file).extension().string();
    return ext == ".py" || ext == ".pyi" ? "py" : "cpp";
  };
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& h = trace[i];
    if (i) {
      bool cross = std::string(layer(trace[i - 1])) != layer(h);
      out += cross ? "<li class=\"arrow cross\" title=\"Python to C++\">&#10142;</li>\n" : "<li class=\"arrow\">&#8594;</li>\n";
    }
    std::string step = i == 0 ? "Python probe" : i + 1 == trace.size() ? (h.hop == "branch condition" ? "C++ branch" : "trace stops")
                                                                     : fmt::format("hop {}", i + 1);
    out += fmt::format("<li class=\"hop {}\"><span class=\"step\">{}</span><span class=\"name\">{}</span>{}</li>\n", layer(h),
                       step, esc(h.hop), h.where.valid() ? page.shortLink(h.where) : page.link(h.where));
  }
  return out + "</ol>\n";
}

bool sameTrace(const std::vector<model::Hop>& a, const std::vector<model::Hop>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const model::Hop& x, const model::Hop& y) {
    return x.hop == y.hop && x.where.file == y.where.file && x.where.line == y.where.line;
  });
}

// A finding's fixes, each as `layergate check --diff` would make it: what it
// does, whether it is safe, and each edit (where, and the text put there).
std::string renderFixes(const Page& page, const std::vector<const model::Fix*>& fixes) {
  std::string out;
  for (const auto* p : fixes) {
    const model::Fix& x = *p;
    const char* safety = model::fixSafetyName(x.safety);
    std::string edits;
    for (const auto& e : x.edits) {
      model::Location at{e.file, e.start.line, e.start.col, "", ""};
      bool insert = e.start.line == e.end.line && e.start.col == e.end.col;
      std::string where = insert ? "<span class=\"muted\">insert at</span> " + page.link(at) + "<span class=\"muted\">:</span>"
                                 : "<span class=\"muted\">replace</span> " + page.link(at) +
                                       fmt::format(" <span class=\"muted\">.. {}:{} with:</span>", e.end.line, e.end.col);
      edits += fmt::format("<div class=\"edit\">{}<pre>{}</pre></div>\n", where, esc(e.replacement));
    }
    out += fmt::format(
        "<div class=\"fix fix-{0}\"><b>fix ({0})</b> {1}{2}\n{3}</div>\n", safety, esc(x.description),
        x.safety == model::FixSafety::Safe ? " <span class=\"muted\">(layergate check --fix applies it)</span>"
                                           : " <span class=\"muted\">(unsafe: --fix --unsafe-fixes applies it; prove it with "
                                             "<code>layergate selftest</code>)</span>",
        edits);
  }
  return out;
}

// One card per diagnostic (report/Report.h's groups, as the text report
// counts them): its primary location first, the other locations, the
// counterexample (its first configuration) and every configuration it stands
// for. A finding's own trace is drawn only where it is not the analysis's
// trace (drawn once below the findings).
std::string renderFinding(const Page& page, const Result& r, const FindingGroup& g, size_t i, const std::string& unit) {
  const model::Finding& f = g.first();
  const char* sev = model::severityName(f.severity);
  std::string locs;
  if (!f.locations.empty())
    locs += fmt::format("<li><span class=\"role\">{}</span>{} {}</li>\n", esc(g.primary.role), page.link(g.primary), esc(g.primary.note));
  for (const auto& l : g.notes)
    locs += fmt::format("<li><span class=\"role\">{}</span>{} {}</li>\n", esc(l.role), page.link(l), esc(l.note));
  std::string cex;
  if (f.config.world_size || !f.config.env.empty()) {
    cex = fmt::format("<div class=\"cex\"><b>counterexample</b> <code>{}</code>", esc(configText(f.config, r.roles)));
    if (f.config.world_size && f.config.full_nvlink)
      cex += fmt::format(" <a class=\"muted\" href=\"#{}\">(matrix cell)</a>", cellId(unit, static_cast<int>(*f.config.world_size), *f.config.full_nvlink));
    if (!f.config.assumed.empty()) {
      std::string a;
      if (f.config.assumed_words.size() == f.config.assumed.size())
        for (const auto& w : f.config.assumed_words) a += (a.empty() ? "" : "; ") + w;
      else
        for (const auto& [k, v] : f.config.assumed) a += (a.empty() ? "" : ", ") + k + "=" + v;
      cex += "<br><b>assuming</b> <code>" + esc(a) + "</code>";
    }
    if (g.members.size() > 1) {
      std::string cells;
      for (const auto* m : g.members) {
        std::string name = m->cell.empty() ? configText(m->config, r.roles) : m->cell;
        std::string item = esc(name);
        if (m->config.world_size && m->config.full_nvlink)
          item = fmt::format("<a href=\"#{}\">{}</a>", cellId(unit, static_cast<int>(*m->config.world_size), *m->config.full_nvlink), item);
        cells += (cells.empty() ? "" : ", ") + item;
      }
      cex += fmt::format("<br><b>{} configurations</b> {}", g.members.size(), cells);
    }
    cex += "</div>\n";
  }
  std::string suppressed;
  if (f.suppressed) {
    model::Location at = f.suppressed->where;
    suppressed = "<div class=\"muted\"><b>suppressed</b> by " + page.link(at) +
                 (f.suppressed->justification.empty() ? "" : ": " + esc(f.suppressed->justification)) + "</div>\n";
  }
  return fmt::format(
      "<article class=\"finding{9} sev-{0} rule-{1}\" id=\"{2}f{3}\">\n<div class=\"head\"><span class=\"sev sev-{0}\">{0}</span>"
      "<span class=\"badge {0}\">{1}</span> <span class=\"message\">{4}</span></div>\n{10}<ul>\n{5}</ul>\n{6}{7}{8}</article>\n",
      sev, esc(f.rule), unit, i + 1, esc(g.message), locs, cex, renderFixes(page, g.fixes),
      f.trace.empty() || sameTrace(f.trace, r.trace) ? "" : renderTrace(page, f.trace), f.suppressed ? " suppressed" : "",
      suppressed);
}

std::string renderSection(const HtmlSection& s, size_t index, const HtmlOptions& o) {
  const Result& r = *s.result;
  Page page(o);
  std::string unit = fmt::format("u{}-", index + 1);
  GroupCounts counts = countGroups(r);
  int errors = counts.errors, warnings = counts.warnings;
  std::string gate, dispatch, heading;
  for (const auto& f : r.python_files) gate += (gate.empty() ? "" : ", ") + page.link({f, 0, 0, "", ""});
  for (const auto& f : r.cpp_files) dispatch += (dispatch.empty() ? "" : ", ") + page.link({f, 0, 0, "", ""});
  for (const auto& f : r.python_files) heading += (heading.empty() ? "" : ", ") + f;
  heading += " + " + (r.cpp_files.empty() ? std::string() : r.cpp_files[0]) + (r.cpp_files.size() > 1 ? ", ..." : "");
  std::string out = fmt::format(
      "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"inputs muted\">target <code>{}</code> &middot; gate: {} &middot; dispatch: {}</p>\n",
      unit, esc(s.heading.empty() ? heading : s.heading), esc(r.target), gate, dispatch);
  out += fmt::format("<p class=\"summary\"><span class=\"pill {}\">{} error{}</span><span class=\"pill {}\">{} warning{}</span></p>\n",
                     errors ? "error" : "clean", errors, errors == 1 ? "" : "s", warnings ? "warning" : "clean", warnings,
                     warnings == 1 ? "" : "s");
  // The findings first, then the matrix and the rest that explain them.
  // One card per diagnostic, the suppressed ones after the others.
  auto groups = groupFindings(r, true);
  std::stable_partition(groups.begin(), groups.end(), [](const FindingGroup& g) { return !g.suppressed(); });
  CardOf card_of(r.findings.size(), 0);
  std::size_t shown = 0;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    shown += !groups[k].suppressed();
    for (const auto* m : groups[k].members) card_of[static_cast<std::size_t>(m - r.findings.data())] = k;
  }
  out += fmt::format("<h3>Findings ({}){}</h3>\n", shown,
                     shown == groups.size() ? "" : fmt::format(" <span class=\"muted\">and {} suppressed</span>", groups.size() - shown));
  if (groups.empty()) out += "<p class=\"muted\">none: every configuration the gate admits reaches a kernel.</p>\n";
  for (size_t k = 0; k < groups.size(); ++k) out += renderFinding(page, r, groups[k], k, unit);
  if (!r.matrix.empty()) out += renderMatrix(page, r, unit, card_of);
  if (r.space) {
    // A family described as data: the regions the gate admits, each with
    // its kernel or its gap.
    std::string rows;
    for (const auto* list : {&r.space->served, &r.space->gaps})
      for (const auto& g : *list)
        rows += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", esc(g.text()),
                            g.kind == model::LeafKind::Launch ? esc(g.what)
                                                              : fmt::format("<b class=\"gap\">{}{}</b>", g.kind == model::LeafKind::Throw ? "throws: " : "no kernel: ", esc(g.what)));
    out += "<h3>Configuration regions (variables left out take any value)</h3>\n<table class=\"regions\">\n"
           "<thead><tr><th>the gate admits</th><th>the dispatch</th></tr></thead>\n<tbody>\n" + rows + "</tbody></table>\n";
  }
  if (r.selection && !r.selection->arms.empty()) out += renderSelection(page, r);
  if (!r.trace.empty()) out += "<h3>Flag trace: the NVLink flag from the Python probe to the C++ branch</h3>\n" + renderTrace(page, r.trace);
  std::string notes;
  for (const auto& n : r.dispatch.notes) notes += "<li>" + esc(n) + "</li>\n";
  for (const auto& n : r.gate.notes) notes += "<li>" + esc(n) + "</li>\n";
  for (bool free : {true, false}) {
    std::vector<std::string> terms;
    for (const auto& op : r.gate.opaques)
      if (op.free == free) terms.push_back(op.text);
    std::sort(terms.begin(), terms.end());
    terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
    if (terms.empty()) continue;
    std::string t;
    for (const auto& x : terms) t += (t.empty() ? "" : ", ") + esc(x);
    notes += fmt::format("<li>{}: {}</li>\n",
                         free ? "machine facts the gate reads (free, like the probes)"
                              : "gate code not interpreted (errors hold for all its values; LG008 names what a possible gap needs)",
                         t);
  }
  if (!notes.empty()) out += "<h3>Notes</h3>\n<ul class=\"notes\">\n" + notes + "</ul>\n";
  return out + "</section>\n";
}

}  // namespace

std::string renderHtml(const std::vector<HtmlSection>& sections, const std::vector<std::string>& notes, const HtmlOptions& o) {
  int errors = 0, warnings = 0;
  for (const auto& s : sections) {
    GroupCounts c = countGroups(*s.result);
    errors += c.errors;
    warnings += c.warnings;
  }
  // What was checked, and how.
  std::string meta;
  auto row = [&](const char* name, const std::string& value, bool code) {
    if (!value.empty()) meta += fmt::format("<dt>{}</dt><dd{}>{}</dd>\n", name, code ? " class=\"mono\"" : "", esc(value));
  };
  row("checkout", o.checkout, false);
  row("checked", o.checked, true);
  row("commit", o.commit, true);
  row("date", o.date, false);
  row("command", o.command, true);
  row("layergate", LAYERGATE_VERSION, false);
  // The summary: per gate its counts, linked to its section.
  std::string gates;
  for (size_t i = 0; i < sections.size(); ++i) {
    const Result& r = *sections[i].result;
    GroupCounts c = countGroups(r);
    int e = c.errors, w = c.warnings;
    std::string name = sections[i].heading;
    if (name.empty())
      for (const auto& f : r.python_files) name += (name.empty() ? "" : ", ") + f;
    gates += fmt::format("<tr><td><a href=\"#u{}-\">{}</a></td><td>{}</td><td>{}</td></tr>\n", i + 1, esc(name), e, w);
  }
  std::string body;
  for (size_t i = 0; i < sections.size(); ++i) body += renderSection(sections[i], i, o);
  std::string extra;
  for (const auto& n : notes) extra += "<li>" + esc(n) + "</li>\n";
  if (!extra.empty()) body += "<h2>Discovery notes</h2>\n<ul class=\"notes\">\n" + extra + "</ul>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>{0}</h1>\n<dl class=\"meta\">\n{2}</dl>\n"
      "<p class=\"summary\"><span class=\"pill {3}\">{4} error{5}</span><span class=\"pill {6}\">{7} warning{8}</span>"
      "{9} gate{10} checked. Gate: what the Python layer admits; dispatch: what the C++ layer launches for each message size.</p>\n"
      "<table class=\"gates\"><thead><tr><th>gate</th><th>errors</th><th>warnings</th></tr></thead>\n<tbody>\n{11}</tbody></table>\n"
      "{12}</body>\n</html>\n",
      esc(o.title.empty() ? "layergate report" : o.title), kStyle, meta, errors ? "error" : "clean", errors,
      errors == 1 ? "" : "s", warnings ? "warning" : "clean", warnings, warnings == 1 ? "" : "s", sections.size(),
      sections.size() == 1 ? "" : "s", gates, body);
}

}  // namespace layergate::report
