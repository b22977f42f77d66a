#include <nlohmann/json.hpp>

#include "report/Report.h"

namespace layergate::report {
namespace {

using nlohmann::json;

json locJson(const model::Location& l) {
  json j = {{"file", l.file}, {"line", l.line}, {"role", l.role}};
  if (l.col > 0) j["column"] = l.col;
  if (!l.note.empty()) j["note"] = l.note;
  return j;
}

json rangeJson(const solve::SizeRange& r) {
  return {{"min_nbytes", r.lo}, {"max_nbytes", r.unbounded() ? json(nullptr) : json(r.hi)}, {"text", r.str()}};
}

json fixJson(const model::Fix& x) {
  json edits = json::array();
  for (const auto& e : x.edits)
    edits.push_back({{"file", e.file},
                     {"start", {{"line", e.start.line}, {"col", e.start.col}}},
                     {"end", {{"line", e.end.line}, {"col", e.end.col}}},
                     {"replacement", e.replacement}});
  return {{"safety", model::fixSafetyName(x.safety)}, {"description", x.description}, {"edits", edits}};
}

const char* leafKind(model::LeafKind k) {
  switch (k) {
    case model::LeafKind::Launch: return "launch";
    case model::LeafKind::Throw: return "throw";
    case model::LeafKind::None: return "none";
  }
  return "?";
}

// The counts of the text report's summary line: diagnostics, and the
// configurations they stand for.
json summaryJson(const GroupCounts& c, int suppressed, int baselined, int preexisting) {
  return {{"errors", c.errors},
          {"warnings", c.warnings},
          {"error_configurations", c.error_cells},
          {"warning_configurations", c.warning_cells},
          {"suppressed", suppressed},
          {"baselined", baselined},
          {"preexisting", preexisting}};
}

}  // namespace

std::string renderJson(const Result& r) {
  // The diagnostics (report/Report.h's groups, suppressed ones too): what
  // the text report, SARIF and HTML count; each finding names its own.
  auto groups = groupFindings(r, true);
  std::vector<int> group_of(r.findings.size(), -1);
  json diagnostics = json::array();
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const auto& g = groups[k];
    const model::Finding& f = g.first();
    json members = json::array(), cells = json::array(), notes = json::array();
    for (const auto* m : g.members) {
      auto i = static_cast<std::size_t>(m - r.findings.data());
      group_of[i] = static_cast<int>(k);
      members.push_back(i);
      cells.push_back({{"world_size", m->config.world_size ? json(*m->config.world_size) : json(nullptr)},
                       {"full_nvlink", m->config.full_nvlink ? json(*m->config.full_nvlink) : json(nullptr)}});
    }
    for (const auto& l : g.notes) notes.push_back(locJson(l));
    json d = {{"rule", f.rule}, {"severity", model::severityName(f.severity)}, {"message", g.message}};
    if (g.primary.valid()) d["location"] = locJson(g.primary);
    d["notes"] = notes;
    d["findings"] = members;
    d["configurations"] = cells;
    d["fingerprint"] = f.fingerprint;
    if (f.suppressed) d["suppressed"] = {{"kind", "inSource"}, {"file", f.suppressed->where.file}, {"line", f.suppressed->where.line}};
    diagnostics.push_back(d);
  }
  json findings = json::array();
  for (const auto& f : r.findings) {
    json env = json::object();
    for (const auto& [k, v] : f.config.env) env[k] = v ? json(*v) : json(nullptr);
    json assumed = json::object();
    for (const auto& [k, v] : f.config.assumed) assumed[k] = v;
    json cfg = {{"world_size", f.config.world_size ? json(*f.config.world_size) : json(nullptr)},
                {"full_nvlink", f.config.full_nvlink ? json(*f.config.full_nvlink) : json(nullptr)},
                {"nbytes", f.config.nbytes ? json(*f.config.nbytes) : json(nullptr)},
                {"env", env},
                {"assumed", assumed}};
    if (!f.config.values.empty()) {
      json vals = json::object();
      for (const auto& [k, v] : f.config.values) vals[k] = v;
      cfg["values"] = vals;
    }
    if (!f.config.texts.empty()) {
      json texts = json::object();
      for (const auto& [k, v] : f.config.texts) texts[k] = v;
      cfg["texts"] = texts;
    }
    json locs = json::array();
    for (const auto& l : f.locations) locs.push_back(locJson(l));
    json jf = {{"rule", f.rule}, {"severity", model::severityName(f.severity)}, {"message", f.message},
               {"config", cfg}, {"locations", locs}};
    if (f.sizes)
      jf["sizes"] = {{"min_nbytes", f.sizes->lo}, {"max_nbytes", f.sizes->hi < 0 ? json(nullptr) : json(f.sizes->hi)}};
    jf["fingerprint"] = f.fingerprint;
    jf["diagnostic"] = group_of[findings.size()];
    if (f.suppressed) {
      jf["suppressed"] = {{"kind", "inSource"}, {"file", f.suppressed->where.file}, {"line", f.suppressed->where.line}};
      if (!f.suppressed->justification.empty()) jf["suppressed"]["justification"] = f.suppressed->justification;
    }
    if (!f.trace.empty()) {
      json t = json::array();
      for (const auto& h : f.trace) t.push_back({{"hop", h.hop}, {"file", h.where.file}, {"line", h.where.line}});
      jf["trace"] = t;
    }
    // the first (safe when there is one) fix; other ones (the unsafe C++ branch) after it
    if (!f.fixes.empty()) jf["fix"] = fixJson(f.fixes[0]);
    if (f.fixes.size() > 1) {
      json alt = json::array();
      for (std::size_t i = 1; i < f.fixes.size(); ++i) alt.push_back(fixJson(f.fixes[i]));
      jf["alternative_fixes"] = alt;
    }
    findings.push_back(jf);
  }
  // The analysed route: the op module the gate's calls go through and the
  // C++ entry the flag reaches (from the trace), else the dispatch file.
  json analysed = json::object();
  {
    std::string module, entry;
    for (const auto& rt : r.gate.routes)
      if (module.empty()) module = rt.analysed_module;
    for (const auto& h : r.trace) {
      if (module.empty() && h.hop == "wrapper parameter") module = h.where.file;
      if (entry.empty() && h.hop == "C++ parameter") entry = h.where.file + ":" + std::to_string(h.where.line);
    }
    if (module.empty() && !r.gate.native_calls.empty()) {
      const auto& c = r.gate.native_calls.front().callee;
      module = c.rfind('.') == std::string::npos ? c : c.substr(0, c.rfind('.'));
    }
    // no trace to the entry: the first source file (the entries live there), else the header
    for (const auto& f : r.cpp_files) {
      auto dot = f.rfind('.');
      std::string ext = dot == std::string::npos ? "" : f.substr(dot);
      if (entry.empty() && (ext == ".cu" || ext == ".mu" || ext == ".cc" || ext == ".cpp")) entry = f;
    }
    if (entry.empty() && !r.cpp_files.empty()) entry = r.cpp_files.front();
    analysed = {{"op_module", module}, {"cpp_entry", entry}};
  }
  json routes = json::array();
  for (const auto& rt : r.gate.routes)
    routes.push_back({{"receiver", rt.receiver}, {"op_module", rt.module}, {"kind", rt.kind}, {"ops", rt.ops},
                      {"cpp_sources", rt.sources}, {"cpp_sources_missing", rt.sources_missing},
                      {"file", rt.where.file}, {"line", rt.where.line}, {"analysed", false}});
  json matrix = json::array();
  for (const auto& v : r.matrix) {
    json gate = {{"state", solve::gateStateName(v.gate.state)}};
    if (!v.gate.condition.empty()) gate["condition"] = v.gate.condition;
    if (!v.gate.env.empty()) {
      json env = json::object();
      for (const auto& [k, val] : v.gate.env) env[k] = val ? json(*val) : json(nullptr);
      gate["env"] = env;
    }
    if (v.gate.sizes) gate["sizes"] = rangeJson(*v.gate.sizes);
    json dispatch = json::array();
    for (const auto& p : v.dispatch) {
      json d = {{"kind", leafKind(p.kind)}, {"sizes", rangeJson(p.sizes)}, {"file", p.where.file}, {"line", p.where.line}};
      if (p.kind == model::LeafKind::Launch) d["kernel"] = p.kernel; else d["reason"] = p.kernel;
      if (p.precondition) d["precondition"] = true;
      if (!p.when.empty()) d["when"] = p.when;
      dispatch.push_back(d);
    }
    json m = {{"world_size", v.cell.world_size}, {"full_nvlink", v.cell.nvlink_any ? json(nullptr) : json(v.cell.full_nvlink)},
              {"gate", gate}, {"dispatch", dispatch}};
    if (v.undecided) m["undecided"] = v.undecided_reason;
    // The route each admitted configuration was checked against, and the
    // ones not analysed here.
    m["route"] = analysed;
    if (!v.routed_elsewhere.empty()) m["not_analysed_here"] = v.routed_elsewhere;
    matrix.push_back(m);
  }
  json opaques = json::array();
  for (const auto& o : r.gate.opaques) opaques.push_back({{"text", o.text}, {"file", o.where.file}, {"line", o.where.line}, {"layer", "python"}, {"free", o.free}});
  for (const auto& o : r.dispatch.opaques) opaques.push_back({{"text", o.text}, {"file", o.where.file}, {"line", o.where.line}, {"layer", "cpp"}});
  json selection = nullptr;
  if (r.selection) {
    json arms = json::array();
    for (std::size_t a = 0; a < r.selection->arms.size(); ++a) {
      const auto& arm = r.selection->arms[a];
      json cells = json::array();
      for (const auto& v : a < r.selection_cells.size() ? r.selection_cells[a] : std::vector<solve::CellVerdict>{}) {
        json c = {{"world_size", v.cell.world_size},
                  {"full_nvlink", v.cell.nvlink_any ? json(nullptr) : json(v.cell.full_nvlink)},
                  {"state", solve::gateStateName(v.gate.state)}};
        if (!v.gate.condition.empty()) c["condition"] = v.gate.condition;
        cells.push_back(c);
      }
      arms.push_back({{"implementation", arm.implementation}, {"file", arm.where.file}, {"line", arm.where.line}, {"cells", cells}});
    }
    selection = {{"function", r.selection->function}, {"file", r.selection->where.file}, {"line", r.selection->where.line},
                 {"arms", arms}};
  }
  // A family described as data: its variables and the regions of their product.
  json space = nullptr;
  if (r.space) {
    json vars = json::array();
    for (const auto& v : r.variables) {
      json x = {{"name", v.name},
                {"type", v.type == target::Variable::Type::Int ? "int" : v.type == target::Variable::Type::Enum ? "enum" : "bool"},
                {"doc", v.doc}};
      if (!v.names.empty()) x["values"] = v.names;
      if (!v.ints.empty()) x["values"] = v.ints;
      if (v.min) x["min"] = *v.min;
      if (v.max) x["max"] = *v.max;
      vars.push_back(x);
    }
    auto regions = [](const std::vector<solve::Region>& rs) {
      json a = json::array();
      for (const auto& g : rs) {
        json vals = json::object();
        for (const auto& [k, v] : g.values) vals[k] = v;
        json x = {{"values", vals}, {"text", g.text()}, {"kind", leafKind(g.kind)}, {"certain", g.certain}};
        if (g.kind == model::LeafKind::Launch) x["kernel"] = g.what; else x["reason"] = g.what;
        if (g.leaf) x["dispatch"] = {{"file", g.leaf->spelling.file}, {"line", g.leaf->spelling.line}};
        if (g.admit) x["gate"] = {{"file", g.admit->where.file}, {"line", g.admit->where.line}};
        a.push_back(x);
      }
      return a;
    };
    space = {{"variables", vars}, {"served", regions(r.space->served)}, {"gaps", regions(r.space->gaps)},
             {"complete", !r.space->truncated && !r.space->undecided}};
  }
  json notes = json::array();
  for (const auto& n : r.gate.notes) notes.push_back(n);
  for (const auto& n : r.dispatch.notes) notes.push_back(n);
  json out = {{"tool", {{"name", "layergate"}, {"version", LAYERGATE_VERSION}}},
              {"target", r.target},
              {"inputs", {{"python", r.python_files}, {"cpp", r.cpp_files}}},
              {"findings", findings},
              {"diagnostics", diagnostics},
              {"matrix", matrix},
              {"route", analysed},
              {"routes_elsewhere", routes},
              {"value_traces", [&] {
                 nlohmann::json a = nlohmann::json::array();
                 for (const auto& v : r.value_traces) {
                   nlohmann::json hops = nlohmann::json::array();
                   for (const auto& h : v.hops) hops.push_back({{"hop", h.hop}, {"file", h.where.file}, {"line", h.where.line}});
                   a.push_back({{"var", v.var}, {"field", v.field}, {"reaches_cpp", v.reaches_cpp}, {"hops", hops}});
                 }
                 return a;
               }()},
              {"trace", [&] {
                 json t = json::array();
                 for (const auto& h : r.trace) t.push_back({{"hop", h.hop}, {"file", h.where.file}, {"line", h.where.line}});
                 return t;
               }()},
              {"opaque", opaques},
              {"selection", selection},
              {"space", space},
              {"notes", notes},
              {"summary", summaryJson(countGroups(r), countSuppressed(r), r.baselined, static_cast<int>(r.preexisting.size()))}};
  // Findings --diff-base set aside (on no changed line): listed as the
  // baseline file lists them, not counted.
  if (!r.preexisting.empty()) {
    json old = json::array();
    for (const auto& f : r.preexisting) {
      json jf = {{"rule", f.rule}, {"severity", model::severityName(f.severity)}, {"message", f.message},
                 {"fingerprint", f.fingerprint}};
      if (const model::Location* p = f.primary()) jf["file"] = p->file, jf["line"] = p->line;
      old.push_back(jf);
    }
    out["preexisting"] = old;
  }
  // C++ branches --unsafe-fixes inserted: counted as kernels, not yet run.
  if (!r.unproven.empty()) out["unproven_branches"] = r.unproven;
  return out.dump(2) + "\n";
}

std::string renderJsonFailure(const std::string& reason, int exit_code, bool scan) {
  json out = {{"tool", {{"name", "layergate"}, {"version", LAYERGATE_VERSION}}}, {"error", reason}, {"exit_status", exit_code}};
  if (scan) {
    out["analyses"] = json::array();
    out["not_analysed"] = json::array();
  } else {
    out["findings"] = json::array();
    out["matrix"] = json::array();
  }
  out["notes"] = json::array();
  return out.dump(2) + "\n";
}

}  // namespace layergate::report
