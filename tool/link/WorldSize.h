// WorldSize: the world size the C++ dispatch receives, followed from Python.
//
// Takes: the Gate (its op calls, the values and list lengths of their
// arguments, its op wrappers), the Dispatch's trace facts (the constructor
// that sets the member the target maps to world_size, the entry function that
// constructs the class and what it passes there: one of its own integer
// parameters, or the length of one of its list parameters, as vLLM's
// init_custom_ar takes `fake_ipc_ptrs.size()`) and the target's member map.
// Returns: the Python expression C++ then sees as its world size: the group's
// size in upstream code, something else where a gate hands C++ a per-node
// slice of its handles. Null when a step is not found (the group's size is
// then assumed, as the target's member map says).
#pragma once

#include <map>
#include <string>

#include "model/Model.h"

namespace layergate::link {

struct WorldSizeLink {
  model::ExprPtr value;     // over the gate's variables; null: the group's size
  model::Location at;       // the Python argument it comes from
  std::string text;         // its source text
  bool length = false;      // the length of that argument (a list), not its value
};

// ranks: the target's variable in the ranks role (model/Roles.h); members:
// the C++ members the target maps to variables.
WorldSizeLink traceWorldSize(const model::Gate& gate, const model::Dispatch& dispatch,
                             const std::map<std::string, std::string>& members, const std::string& ranks);

}  // namespace layergate::link
