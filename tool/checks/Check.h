// Checks: one class per rule, clang-tidy style.
//
// Takes: the analysed gate and dispatch and the solver that relates them.
// Returns: findings. A check registers in allChecks() (Check.cpp) and turns
// solver answers into findings; the framework (frontends, solver, report)
// lives elsewhere, so a new rule is one class, one doc page and its fixtures.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "link/Link.h"
#include "model/Model.h"
#include "solve/Solver.h"
#include "solve/Space.h"

namespace layergate::checks {

// The stable description of a rule; ids are never reused.
struct RuleInfo {
  std::string id;          // "LG001"
  std::string name;        // "admitted-no-kernel"
  model::Severity severity;
  std::string summary;     // one line
};

// Every rule layergate knows, sorted by id, including those whose checks live
// in other stages (trace rules). SARIF and `explain` list these.
const std::vector<RuleInfo>& allRules();
const RuleInfo* findRule(const std::string& id);

struct CheckContext {
  const model::Gate& gate;
  const model::Dispatch& dispatch;
  solve::Solver& solver;
  const link::FlagLink* flag = nullptr;  // the flag trace, when one was attempted
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const RuleInfo& rule() const = 0;
  virtual void check(const CheckContext& ctx, std::vector<model::Finding>& out) const = 0;
};

// The registered checks, in rule order.
const std::vector<std::unique_ptr<Check>>& allChecks();

// Runs every check; findings come back sorted (rule, world size, NVLink) so
// that output is stable across runs.
std::vector<model::Finding> runChecks(const CheckContext& ctx);

// Shared by the gap checks: turn a solver gap into a finding.
model::Finding gapFinding(const RuleInfo& rule, const solve::Gap& gap, const CheckContext& ctx);
// A family described as data (solve/Space.h): one finding per region the gate
// admits and the dispatch serves with no kernel or a throw (SpaceChecks.cpp).
std::vector<model::Finding> spaceFindings(const model::Gate& gate, const model::Dispatch& dispatch,
                                          const solve::SpaceResult& space);
// A query Z3 could not decide: never a silent "no finding".
model::Finding undecidedFinding(const solve::UndecidedError& e, const std::string& rule_id);
// What an LG007 message ends with: how to decide the query that Z3 gave up
// on (`why`, the solver's reason): the limit to raise, and where.
std::string undecidedAdvice(const std::string& why);

}  // namespace layergate::checks
