// Link: follows the NVLink flag across the language boundary.
//
// Takes: the Gate's trace facts (native calls, wrappers) and the Dispatch's
// (bindings, entry functions, constructors, member uses). Returns: the hops
// from the Python probe to the C++ branch conditions, the Python value that
// reaches the C++ flag, and the problems met on the way (boundary mismatches,
// breaks). Everything is matched by positions and names found in the code —
// the member the dispatch branches on, the constructor parameter that sets
// it, the entry function that constructs the class, the op bound to that
// function, the Python call of that op — never by knowing the flag's name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/Model.h"

namespace layergate::link {

struct Problem {
  std::string rule;     // "LG005" boundary mismatch, "LG006" trace break
  std::string message;
  std::vector<model::Location> locations;
};

struct FlagLink {
  std::string config;                       // the config variable the C++ member stands for (the link)
  std::string member;                       // "full_nvlink_" / "fully_connected_"
  std::vector<model::Hop> hops;             // oldest first: probe ... branch condition
  bool complete = false;                    // every hop from the gate's call to the branch was followed
  // The value the C++ flag receives, over config variables (nullptr when the
  // Python argument was not found or is not a bool): what the solver uses
  // for the C++ side of the flag instead of the hardware probe.
  model::ExprPtr value;
  model::Location value_at;                 // the Python argument
  std::string value_text;
  std::vector<Problem> problems;
};

// The flag is the target's variable in the link role (`link`, model/Roles.h).
// No member use of it in the dispatch, or no such variable: nothing to trace
// (empty result with no hops and no problems).
FlagLink traceFlag(const model::Gate& gate, const model::Dispatch& dispatch, const std::string& link);

// The argument of a call at a 0-based position, else the one passed under
// that keyword; null when neither is there.
const model::CallArg* argAt(const model::NativeCall& c, int position, const std::string& keyword);

// Every value the gate hands down (a policy's record fields, a class's
// workspace sizes, a per-call argument), traced the same way: where Python
// computed it (the walker's origin hops), where it leaves Python, the C++
// dispatch parameter that receives it (by the target's member map, or the
// same name) and the dispatch conditions that read it.
struct ValueTrace {
  std::string var;    // the config variable ("variant")
  std::string field;  // where Python holds it ("IpcLaunchConfig.variant")
  std::vector<model::Hop> hops;
  bool reaches_cpp = false;  // a C++ parameter or condition reads it
};
std::vector<ValueTrace> traceValues(const model::Gate& gate, const model::Dispatch& dispatch,
                                    const std::map<std::string, std::string>& members);

}  // namespace layergate::link
