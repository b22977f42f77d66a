// CppChecks: gate checks written in C++.
//
// Takes: the Gate (its op calls and the uninterpreted terms their results
// are) and the Dispatch's entry functions (a function returning bool has the
// condition under which it returns true). Returns: the Gate with each such
// call's result replaced by that condition, its parameters bound to the
// values the Python call passes, so the check is interpreted like Python
// code (vLLM of mid-2024 kept its per-call check, should_custom_ar, in C++
// behind an op). A C++ body not in the given files leaves the call
// uninterpreted, as before.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/Model.h"
#include "target/Variables.h"

namespace layergate::link {

struct CppCheck {
  std::string function;              // the C++ function read
  std::string result;                // the uninterpreted term it replaced
  model::Location where;             // its definition
  model::Location call;              // the Python call whose result it decides
  std::vector<std::string> unbound;  // parameters Python passes no known value for
  const model::CppEntry* entry = nullptr;
};

// probes: the target's probe functions (name -> declared variable or
// probe), variables: its declarations: a C++ check calling one of them
// (`_is_weak_contiguous(inp)`) asks the same machine fact the Python gate's
// probe does, when that is a bool.
std::vector<CppCheck> interpretCppChecks(model::Gate& gate, const model::Dispatch& dispatch,
                                         const std::map<std::string, std::string>& probes = {},
                                         const target::Variables& variables = {});

// The C++ functions the gate uses as checks (an op call whose result the
// gate tests) that no given file defines: the names a lookup beside the
// given files looks for (the function a registration binds, else the op's
// name), each once, in the gate's order.
std::vector<std::string> uninterpretedChecks(const model::Gate& gate, const model::Dispatch& dispatch);

}  // namespace layergate::link
