// A saved plan travels to a GPU box without LLVM: `layergate selftest
// --save-plan P` writes P (every gate's static side and harness, JSON) and a
// folder beside it, P's name with ".d" for its extension ("plan.json" ->
// "plan.d"), holding a copy of every project header the harnesses include
// (the dispatch header, the headers it includes that are found beside it or
// under the include directories, the files beside it), at their paths below
// the deepest directory they share. The plan names them relative to that
// folder, so the operator copies P and its folder anywhere and
// `layergate_selftest_gpu --plan P` resolves them there. System and CUDA
// headers are not carried (nvcc has its own); a header that cannot be
// carried is named in the plan with the place to copy it to.
//
// Takes: the gates' Plans (FromAnalysis.h), or a plan's path. Returns: the
// saved files and a one-line summary; the gates with every path resolved
// below the folder, or a one-line error naming the first header missing.
#pragma once

#include <string>
#include <vector>

#include "selftest/Selftest.h"

namespace layergate::selftest {

// The folder of the plan at path, as its name beside the plan: "plan.d".
std::string planFolderName(const std::string& plan_path);

// Writes the plan and its folder (a folder left by an earlier save is
// replaced; another directory of that name is an error). Returns the summary
// line: "plan written to P (2 gates; 5 headers carried in P.d)".
std::string savePlan(const std::vector<Plan>& gates, const std::string& path);

// Reads a saved plan: format 1 (one gate, the header by the path it had where
// the plan was made) or 2 (gates, headers carried in the folder beside it),
// every carried header checked present. Throws std::runtime_error with one
// line naming what is wrong or missing.
std::vector<Plan> loadPlan(const std::string& path);

// What --check-plan prints for a plan that resolves: a line per gate and the
// headers found.
std::string describePlan(const std::vector<Plan>& gates, const std::string& path);

}  // namespace layergate::selftest
