// Fix suggestions for LG001/LG002 (issue 12), with safety levels as ruff and
// clang-tidy give them.
//
// Safe: tighten the Python gate so that it no longer admits the cells the
// dispatch has no kernel for (a guard at Gate::guard_site, built from the
// findings' cells). Unsafe (LG001 only, taken with --unsafe-fixes): the
// missing `else` of the dispatch's `if` without else, reusing the launch of a
// sibling branch that does not test NVLink (Leaf::else_site); the kernel then
// runs without NVLink, which only `layergate selftest` can show correct.
//
// Takes: the gate, the dispatch and the findings (after suppressions). Fills
// each fixable finding's `fixes`, the safe one first; appends to `notes` why
// the findings get no fix. planFixes: what --fix applies, one fix per cell.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "model/Model.h"

namespace layergate::fix {

void suggestFixes(const model::Gate& gate, const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                  std::vector<std::string>& notes);

// The unsafe fixes alone (BranchFix.cpp), and the edit of one else site.
void suggestBranchFixes(const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                        std::vector<std::string>& notes);
model::Edit elseEdit(const model::ElseSite& site);

// The safe fix over these findings' cells (those of LG001/LG002 with a
// cell, unsuppressed): one guard that refuses them all. nullopt, with *why,
// when none can be written.
std::optional<model::Fix> guardFix(const model::Gate& gate, const std::vector<const model::Finding*>& findings,
                                   std::string* why = nullptr);

// What `check --fix` writes and `--diff` shows: per finding one fix, never
// two for one cell. Without `unsafe`, the guard over every fixable finding.
// With it, the C++ branch for the findings that have one, *instead of* the
// guard; the guard is rebuilt over the findings left (those with no branch).
struct FixPlan {
  std::map<std::string, std::vector<model::Edit>> edits;  // by file, each edit once
  std::vector<model::Fix> applied;                         // the fixes taken, each once
  std::vector<const model::Finding*> guarded, branched;    // the findings each kind of fix is taken for
};
FixPlan planFixes(const model::Gate& gate, const std::vector<model::Finding>& findings, bool unsafe);

// The guard's condition over the cells (world size, NVLink or nullopt: both),
// "" when it needs an NVLink expression the site lacks.
std::string guardCondition(const std::vector<std::pair<std::int64_t, std::optional<bool>>>& cells,
                           const std::string& world_size, const std::string& full_nvlink);

}  // namespace layergate::fix
