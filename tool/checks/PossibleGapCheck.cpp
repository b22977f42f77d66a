// LG008: a gap (LG001's no kernel, LG002's throw) that holds only for some
// values of Python code the analysis did not interpret: a helper it could not
// follow, an expression it does not model. It names those terms. An error
// must be a proof, so this stays a warning unless --strict asks otherwise.
#include "checks/Check.h"
#include "checks/Registry.h"

namespace layergate::checks {

class PossibleGapCheck : public Check {
 public:
  const RuleInfo& rule() const override { return *findRule("LG008"); }
  void check(const CheckContext& ctx, std::vector<model::Finding>& out) const override {
    for (const auto& cell : ctx.solver.cells())
      for (auto kind : {solve::GapKind::NoKernel, solve::GapKind::Throws}) {
        try {
          auto gap = ctx.solver.findGap(cell, kind);
          if (gap && !gap->certain) out.push_back(gapFinding(rule(), *gap, ctx));
        } catch (const solve::UndecidedError&) {
          // LG001/LG002 report the undecided query (LG007) once.
        }
      }
  }
};

LAYERGATE_CHECK_FACTORY(PossibleGapCheck)

}  // namespace layergate::checks
