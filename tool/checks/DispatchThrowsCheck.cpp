// LG002: the Python gate admits a configuration for which every way through
// the C++ dispatch throws (typically the `default:` of the world-size switch).
// Not silent, but the fast path the gate promised crashes the job at run time.
#include "checks/Check.h"
#include "checks/Registry.h"

namespace layergate::checks {

class DispatchThrowsCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG002"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override {
    for (const auto& cell : ctx.solver.cells()) {
      try {
        // Only a gap that holds whatever the uninterpreted code does is an
        // error; the others are LG008's.
        auto gap = ctx.solver.findGap(cell, solve::GapKind::Throws);
        if (gap && gap->certain) out.push_back(gapFinding(rule(), *gap, ctx));
      } catch (const solve::UndecidedError& e) {
        out.push_back(undecidedFinding(e, rule().id));
      }
    }
  }
};

LAYERGATE_CHECK_FACTORY(DispatchThrowsCheck)

}  // namespace layergate::checks
