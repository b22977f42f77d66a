// Fix suggestions for LG001/LG002 (issue 12), with safety levels as ruff and
// clang-tidy give them.
//
// Safe: tighten the Python gate so that it no longer admits the cells the
// dispatch has no kernel for (a guard at Gate::guard_site, built from the
// findings' cells). Unsafe (LG001): give the C++ dispatch the missing branch,
// launching the kernel another world size launches without NVLink; it needs
// `layergate selftest` to show it correct on the hardware.
//
// Takes: the gate, the dispatch, the findings (after suppressions) and the
// text of the files they point at. Fills each fixable finding's `fixes`;
// appends to `notes` why a finding gets no fix.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/Model.h"

namespace layergate::fix {

void suggestFixes(const model::Gate& gate, const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                  const std::map<std::string, std::string>& texts, std::vector<std::string>& notes);

// The guard's condition over the cells (world size, NVLink or nullopt: both),
// "" when it needs an NVLink expression the site lacks.
std::string guardCondition(const std::vector<std::pair<std::int64_t, std::optional<bool>>>& cells,
                           const std::string& world_size, const std::string& full_nvlink);

}  // namespace layergate::fix
