// LG001 / LG002 / LG008 over a family described as data (solve/Space.h): one
// finding per region of the declared variables that the Python gate admits
// and for which the C++ dispatch throws or launches no kernel; the region
// names the variables' values, and the finding points at the gate's return
// that admits it, with the dispatch's leaf as its note. A region that needs
// some value of code the gate's walk did not interpret is LG008.
#include "checks/Check.h"
#include "model/Errors.h"

namespace layergate::checks {

namespace {

model::Location at(model::Location l, std::string role, std::string note) {
  l.role = std::move(role);
  l.note = std::move(note);
  return l;
}

}  // namespace

std::vector<model::Finding> spaceFindings(const model::Gate& gate, const model::Dispatch& dispatch,
                                          const solve::SpaceResult& space) {
  std::vector<model::Finding> out;
  for (const auto& r : space.gaps) {
    const char* id = !r.certain ? "LG008" : r.kind == model::LeafKind::Throw ? "LG002" : "LG001";
    const RuleInfo* rule = findRule(id);
    model::Finding f;
    f.rule = rule->id;
    f.severity = rule->severity;
    f.config = r.example;
    f.cell = r.text();
    std::string what = r.kind == model::LeafKind::Throw
                           ? "the C++ dispatch throws" + (r.what.empty() ? std::string() : " (\"" + r.what + "\")")
                           : "the C++ dispatch launches no kernel, so the output is never written";
    f.message = f.cell + ": the Python " + std::string(gate.policy ? "policy " : "gate ") + gate.class_name +
                " admits it, but " + what;
    if (!r.certain) {
      std::string terms;
      for (const auto& o : r.depends_on) {
        terms += (terms.empty() ? "`" : ", `") + o.text + "`";
        if (o.where.valid()) terms += " at " + o.where.file + ":" + std::to_string(o.where.line);
      }
      f.message = "possible gap: " + f.message + (r.kind == model::LeafKind::Throw ? " (as LG002)" : " (as LG001)") +
                  "; depends on " + (terms.empty() ? "uninterpreted code" : terms);
    }
    const model::Location& primary = r.admit ? r.admit->where : gate.class_loc;
    f.locations.push_back(at(primary, "gate", r.admit ? "admits: " + r.admit->text : "gate"));
    if (r.leaf) {
      f.locations.push_back(at(r.leaf->spelling, "dispatch",
                               r.kind == model::LeafKind::Throw ? "throws here" : "no kernel on this path: " + r.leaf->text));
      if (r.leaf->expansion.valid() &&
          (r.leaf->expansion.file != r.leaf->spelling.file || r.leaf->expansion.line != r.leaf->spelling.line))
        f.locations.push_back(at(r.leaf->expansion, "expansion", "expanded from here"));
    } else if (dispatch.where.valid()) {
      f.locations.push_back(at(dispatch.where, "dispatch", "dispatch function"));
    }
    for (const auto& o : r.depends_on)
      if (o.where.valid()) f.locations.push_back(at(o.where, "opaque", "not interpreted: " + o.text));
    for (const auto& [o, v] : r.assuming)
      f.locations.push_back(at(o.where, "assumed",
                               std::string("assuming `") + o.text + "` is " + (v ? "true" : "false") +
                                   ": otherwise the gate admits no configuration at all"));
    out.push_back(std::move(f));
  }
  if (space.undecided) {
    model::Finding f;
    const RuleInfo* rule = findRule("LG007");
    f.rule = rule->id;
    f.severity = rule->severity;
    f.message = "undecided: " + space.why + undecidedAdvice(space.why);
    f.locations.push_back(at(gate.class_loc, "gate", "gate"));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace layergate::checks
