// The flag-trace rules: LG003 (forced flag), LG005 (boundary mismatch) and
// LG006 (trace break). The linker (tool/link) follows the flag; these checks
// turn what it found, and the solver's answer on a forced value, into findings.
#include "checks/Check.h"
#include "checks/Registry.h"

namespace layergate::checks {
namespace {

void fromProblems(const RuleInfo& rule, const CheckContext& ctx, std::vector<model::Finding>& out) {
  if (!ctx.flag) return;
  for (const auto& p : ctx.flag->problems) {
    if (p.rule != rule.id) continue;
    model::Finding f;
    f.rule = rule.id;
    f.severity = rule.severity;
    f.message = p.message;
    f.locations = p.locations;
    for (auto& l : f.locations) l.role = l.role.empty() ? "trace" : l.role;
    f.trace = ctx.flag->hops;
    out.push_back(std::move(f));
  }
}

}  // namespace

// LG003: the value C++ receives can be true while the probe says no NVLink.
// Then the NVLink-tuned branches run over PCIe: correct sums, maybe, but the
// kernels were tuned (and fenced) for another fabric; the user should know.
class ForcedFlagCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG003"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override {
    // On another platform than the target's: a branch that sets the flag to
    // True whatever the links (the walk of the target's platform never
    // enters it, so the solver does not see it).
    for (const auto& p : ctx.gate.platform_forced) {
      model::Finding f;
      f.rule = rule().id;
      f.severity = rule().severity;
      f.message = "the NVLink flag is forced true on another platform: " + p.text +
                  " sets it whatever the links, so on that platform the NVLink-tuned branches run on GPUs that are "
                  "not fully connected";
      model::Location at = p.where;
      at.role = "gate";
      at.note = "flag forced here";
      f.locations.push_back(at);
      out.push_back(std::move(f));
    }
    if (!ctx.flag || !ctx.flag->value) return;
    std::optional<solve::ForcedFlag> ff;
    try {
      ff = ctx.solver.findForcedFlag();
    } catch (const solve::UndecidedError& e) {
      out.push_back(undecidedFinding(e, rule().id));
      return;
    }
    if (!ff) return;
    model::Finding f;
    f.rule = rule().id;
    f.severity = rule().severity;
    f.config = ff->config;
    f.trace = ctx.flag->hops;
    std::string when = ff->unconditional ? "always" : "when " + solve::describeEnv(ff->config.env);
    std::string kernels;
    for (const auto& k : ff->kernels) kernels += (kernels.empty() ? "" : ", ") + k;
    // How it is forced: the monkeypatch / override hops, with their source.
    std::string how;
    auto say = [&](const std::string& what, const model::Hop& h) {
      how += (how.empty() ? " (" : "; ") + what + " at " + h.where.file + ":" + std::to_string(h.where.line) +
             (h.where.note.empty() ? "" : ": " + h.where.note);
    };
    // A flag that starts as a literal stored in the gate (no probe before
    // it: a branch the analysis takes sets it, `if is_hip(): full_nvlink =
    // True` on a HIP target) is forced where that store is.
    const auto& hops = ctx.flag->hops;
    if (!hops.empty() && (hops.front().hop == "local" || hops.front().hop == "attribute")) say("set", hops.front());
    for (const auto& h : hops)
      if (h.hop == "monkeypatch" || h.hop == "env override" || h.hop == "platform override") say(h.hop, h);
    if (!how.empty()) how += ")";
    // What C++ gets in place of the link probe's answer, when it is another
    // check (a peer-to-peer test, code not interpreted) rather than a literal
    // or the environment: the terms of the flag's value that are neither.
    std::string instead;
    for (const auto& v : model::varsOf(ctx.flag->value)) {
      if (v.kind == model::VarKind::Config) continue;
      std::string t = v.name;
      for (const auto& o : ctx.gate.opaques)
        if (o.name == v.name) t = o.text;
      instead += (instead.empty() ? "`" : "`, `") + t;
    }
    std::string claim = "is true " + when;
    if (!instead.empty())
      claim = "is " + instead + "` " + (ff->unconditional ? "always" : "when " + solve::describeEnv(ff->config.env)) +
           ", not the NVLink probe, and true";
    f.message = "the NVLink flag passed to C++ (`" + ctx.flag->value_text + "`)" + how + " " + claim +
                " even on GPUs without full NVLink (e.g. world size " + std::to_string(ff->config.world_size.value_or(0)) +
                "): the NVLink-tuned branches" + (kernels.empty() ? "" : " (" + kernels + ")") + " then run over PCIe";
    model::Location at = ctx.flag->value_at;
    at.role = "gate";
    at.note = "flag value passed here";
    f.locations.push_back(at);
    for (const auto& h : ctx.flag->hops)
      if (h.hop == "probe" || h.hop == "monkeypatch" || h.hop == "env override" || h.hop == "platform override") {
        model::Location l = h.where;
        l.role = "trace";
        l.note = h.hop;
        f.locations.push_back(l);
      }
    out.push_back(std::move(f));
  }
};

class BoundaryMismatchCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG005"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override { fromProblems(rule(), ctx, out); }
};

class TraceBreakCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG006"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override { fromProblems(rule(), ctx, out); }
};

LAYERGATE_CHECK_FACTORY(ForcedFlagCheck)
LAYERGATE_CHECK_FACTORY(BoundaryMismatchCheck)
LAYERGATE_CHECK_FACTORY(TraceBreakCheck)

}  // namespace layergate::checks
