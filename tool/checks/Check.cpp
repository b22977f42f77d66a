#include "checks/Check.h"

#include <algorithm>

#include "model/Errors.h"
#include "checks/Registry.h"

namespace layergate::checks {

std::unique_ptr<Check> makeNoKernelCheck();
std::unique_ptr<Check> makeDispatchThrowsCheck();
std::unique_ptr<Check> makeForcedFlagCheck();
std::unique_ptr<Check> makeBoundaryMismatchCheck();
std::unique_ptr<Check> makeTraceBreakCheck();
std::unique_ptr<Check> makePossibleGapCheck();
std::unique_ptr<Check> makeEnvRejectionCheck();

const std::vector<RuleInfo>& allRules() {
  static const std::vector<RuleInfo> rules = {
      {"LG001", "admitted-no-kernel", model::Severity::Error,
       "The Python gate admits a configuration for which the C++ dispatch launches no kernel"},
      {"LG002", "admitted-dispatch-throws", model::Severity::Error,
       "The Python gate admits a configuration for which the C++ dispatch throws"},
      {"LG003", "forced-flag", model::Severity::Warning,
       "The NVLink flag that reaches C++ is not only the hardware probe (a literal, an env override, a spoofed probe)"},
      {"LG005", "boundary-mismatch", model::Severity::Error,
       "The flag's argument count or position differs between the Python call and the C++ signature"},
      {"LG006", "trace-break", model::Severity::Warning,
       "The flag could not be followed from the Python gate to the C++ branch"},
      {"LG007", "undecided", model::Severity::Warning,
       "The solver could not decide a configuration within its time limit"},
      {"LG008", "possible-gap", model::Severity::Warning,
       "A gap (no kernel, or a throw) that holds only for some values of code the analysis did not interpret"},
      {"LG009", "cpp-rejects-env-value", model::Severity::Warning,
       "The C++ dispatch throws for values of an environment variable that only C++ reads, in a configuration the gate admits"},
      // Reported by the suppression stage (report/Suppress.cpp), not by a check.
      {"LG010", "blanket-suppression", model::Severity::Warning,
       "A `layergate: ignore` comment without rule codes silences every rule on its line"},
      {"LG011", "unused-suppression", model::Severity::Warning,
       "A `layergate: ignore[...]` comment (or a code in it) matched no finding, or is malformed"},
  };
  return rules;
}

const RuleInfo* findRule(const std::string& id) {
  for (const auto& r : allRules())
    if (r.id == id) return &r;
  return nullptr;
}

const std::vector<std::unique_ptr<Check>>& allChecks() {
  static const std::vector<std::unique_ptr<Check>> checks = [] {
    std::vector<std::unique_ptr<Check>> v;
    v.push_back(makeNoKernelCheck());
    v.push_back(makeDispatchThrowsCheck());
    v.push_back(makeForcedFlagCheck());
    v.push_back(makeBoundaryMismatchCheck());
    v.push_back(makeTraceBreakCheck());
    v.push_back(makePossibleGapCheck());
    v.push_back(makeEnvRejectionCheck());
    return v;
  }();
  return checks;
}

std::vector<model::Finding> runChecks(const CheckContext& ctx) {
  std::vector<model::Finding> out;
  for (const auto& c : allChecks()) c->check(ctx, out);
  std::stable_sort(out.begin(), out.end(), [](const model::Finding& a, const model::Finding& b) {
    auto key = [](const model::Finding& f) {
      return std::make_tuple(f.config.world_size.value_or(0), f.config.full_nvlink.value_or(false), f.rule);
    };
    return key(a) < key(b);
  });
  return out;
}

namespace {

std::string cellText(const solve::Cell& c) {
  if (c.nvlink_any) return "world size " + std::to_string(c.world_size);
  return "world size " + std::to_string(c.world_size) + (c.full_nvlink ? " with NVLink" : " without NVLink");
}

model::Location with(model::Location l, std::string role, std::string note) {
  l.role = std::move(role);
  l.note = std::move(note);
  return l;
}

}  // namespace

model::Finding gapFinding(const RuleInfo& rule, const solve::Gap& gap, const CheckContext& ctx) {
  model::Finding f;
  f.rule = rule.id;
  f.severity = rule.severity;
  f.config = gap.counterexample;
  if (ctx.flag) f.trace = ctx.flag->hops;
  f.sizes = model::ByteRange{gap.sizes.lo, gap.sizes.unbounded() ? -1 : gap.sizes.hi};
  f.cell = cellText(gap.cell);

  std::string when = gap.counterexample.env.empty() ? "" : " when " + solve::describeEnv(gap.counterexample.env);
  // Only some element types: the dispatch serves the others.
  std::string types;
  for (const auto& v : gap.element_values) types += (types.empty() ? "" : ", ") + v;
  std::string what = gap.kind == solve::GapKind::NoKernel
                         ? "the C++ dispatch launches no kernel, so the output is never written"
                         : "the C++ dispatch throws";
  if (gap.kind == solve::GapKind::Throws && gap.leaf && !gap.leaf->text.empty())
    what += " (\"" + gap.leaf->text + "\")";
  if (ctx.gate.outputs.empty()) {
    f.message = cellText(gap.cell) + ": the Python gate admits the custom all-reduce" + when + " for " +
                gap.sizes.str() + (types.empty() ? "" : " of " + types + " tensors") + ", but " + what;
  } else {
    // A policy gate: say what it hands down in the counterexample.
    std::string handed;
    for (const auto& o : ctx.gate.outputs)
      for (const auto& [k, v] : gap.counterexample.values)
        if (k == o.var) handed += (handed.empty() ? "" : ", ") + o.var + "=" + std::to_string(v);
    f.message = cellText(gap.cell) + ": the Python " + (ctx.gate.policy ? "policy " : "gate ") + ctx.gate.class_name +
                " admits " + gap.sizes.str() +
                when + (handed.empty() ? "" : " and hands down " + handed) + ", but " + what;
  }
  if (!gap.certain) {
    // Name what the verdict needs, as the rule promises.
    std::string terms;
    for (const auto& o : gap.depends_on) {
      terms += (terms.empty() ? "`" : ", `") + o.text + "`";
      if (o.where.valid()) terms += " at " + o.where.file + ":" + std::to_string(o.where.line);
    }
    f.message = "possible gap: " + f.message + (gap.kind == solve::GapKind::NoKernel ? " (as LG001)" : " (as LG002)") +
                "; depends on " + (terms.empty() ? "uninterpreted code" : terms);
  }

  // Primary location (first): the check a patch opened, when one did: the
  // configurations got in there, so that is the line to change or to
  // suppress. Then the Python line that admits the counterexample, then the
  // other opened checks.
  const model::Location& admits = gap.admit ? gap.admit->where
                                  : ctx.gate.enabling.valid() ? ctx.gate.enabling
                                                              : ctx.gate.class_loc;
  model::Location admitting = with(admits, "gate", gap.admit ? "admits: " + gap.admit->text : "gate enabled here");
  for (const auto* r : gap.opened) {
    f.locations.push_back(with(r->where, "opened", "check opened by " + solve::describeEnv(gap.counterexample.env) +
                                                     ": " + r->text));
    if (f.locations.size() == 1) f.locations.push_back(admitting);
  }
  if (gap.opened.empty()) f.locations.push_back(admitting);
  if (gap.leaf) {
    std::string why = gap.kind == solve::GapKind::NoKernel ? "no kernel on this path: " + gap.leaf->text
                                                           : "throws here";
    f.locations.push_back(with(gap.leaf->spelling, "dispatch", why));
    if (gap.leaf->expansion.valid() &&
        (gap.leaf->expansion.file != gap.leaf->spelling.file || gap.leaf->expansion.line != gap.leaf->spelling.line))
      f.locations.push_back(with(gap.leaf->expansion, "expansion", "expanded from here"));
  } else if (ctx.dispatch.where.valid()) {
    f.locations.push_back(with(ctx.dispatch.where, "dispatch", "dispatch function"));
  }
  for (const auto& o : gap.depends_on)
    if (o.where.valid()) f.locations.push_back(with(o.where, "opaque", "not interpreted: " + o.text));
  // What the proof takes for granted: the feature is on at all.
  for (const auto& [o, v] : gap.assuming)
    f.locations.push_back(with(o.where, "assumed",
                               std::string("assuming `") + o.text + "` is " + (v ? "true" : "false") +
                                   ": otherwise the gate admits no configuration at all"));
  return f;
}

std::string undecidedAdvice(const std::string& why) {
  if (why.find("wall-clock") != std::string::npos)
    return "; simplify the gate condition it names, or run again where the machine is less loaded";
  return "; raise --solver-rlimit (or solver-rlimit in the configuration file) to decide it";
}

model::Finding undecidedFinding(const solve::UndecidedError& e, const std::string& rule_id) {
  model::Finding f;
  const RuleInfo* r = findRule("LG007");
  f.rule = r->id;
  f.severity = r->severity;
  f.config.world_size = e.cell.world_size;
  f.config.full_nvlink = e.cell.full_nvlink;
  f.message = "undecided for " + rule_id + ": " + e.what() + undecidedAdvice(e.what());
  return f;
}

}  // namespace layergate::checks
