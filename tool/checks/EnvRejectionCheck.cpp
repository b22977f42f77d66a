// LG009: the C++ dispatch throws for values of an environment variable that
// only C++ reads (an algorithm override) while the Python gate admits the
// configuration. That is input validation, not a gap the gate opened (so not
// LG002), but a user who sets the variable to a value Python lets through
// gets an exception mid-inference instead of an error at start-up.
#include "checks/Check.h"
#include "checks/Registry.h"

namespace layergate::checks {

class EnvRejectionCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG009"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override {
    std::vector<solve::EnvRejection> rs;
    try {
      rs = ctx.solver.findEnvRejections();
    } catch (const solve::UndecidedError& e) {
      out.push_back(undecidedFinding(e, rule().id));
      return;
    }
    for (const auto& r : rs) {
      model::Finding f;
      f.rule = rule().id;
      f.severity = rule().severity;
      f.config = r.config;
      std::string accepted;
      for (const auto& a : r.accepted) accepted += (accepted.empty() ? "\"" : ", \"") + a + "\"";
      f.message = "the C++ side rejects values of " + r.env + " that Python passes through" +
                  (accepted.empty() ? "" : " (it accepts " + accepted + ")") +
                  ": with " + solve::describeEnv(r.config.env) + " the dispatch throws";
      if (r.leaf) {
        model::Location l = r.leaf->spelling;
        l.role = "dispatch";
        l.note = "throws here";
        f.locations.push_back(l);
      } else if (ctx.dispatch.where.valid()) {
        f.locations.push_back(ctx.dispatch.where);
      }
      out.push_back(std::move(f));
    }
  }
};

LAYERGATE_CHECK_FACTORY(EnvRejectionCheck)

}  // namespace layergate::checks
