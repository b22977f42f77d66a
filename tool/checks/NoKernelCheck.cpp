// LG001: the Python gate admits a configuration for which the C++ dispatch
// launches no kernel. The all-reduce then returns whatever the output buffer
// held: silent corruption (the seed story: 8 PCIe GPUs, gate patched open).
#include "checks/Check.h"
#include "checks/Registry.h"

namespace layergate::checks {

class NoKernelCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG001"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override {
    for (const auto& cell : ctx.solver.cells()) {
      try {
        // Only a gap that holds whatever the uninterpreted code does is an
        // error; the others are LG008's.
        auto gap = ctx.solver.findGap(cell, solve::GapKind::NoKernel);
        if (gap && gap->certain) out.push_back(gapFinding(rule(), *gap, ctx));
      } catch (const solve::UndecidedError& e) {
        out.push_back(undecidedFinding(e, rule().id));
      }
    }
  }
};

LAYERGATE_CHECK_FACTORY(NoKernelCheck)

}  // namespace layergate::checks
