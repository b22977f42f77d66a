// The analysis of a gate found from the code (gates/Gates.h), with no target
// file: the gate's conditions over the values its call hands to the C++
// entry, against the entry's paths that throw.
//
// Takes: an inventory and the check's options. Sets, for each gate paired
// with its entry whose conditions read a value the entry receives, its status
// and findings: the target the code implies (the variables by data flow, the
// entry as the dispatch, `TORCH_CHECK` and throws as its rejections) is
// analysed as a family described as data (solve/Space.h). A path of the
// entry that does not throw serves the call: an entry computes with library
// calls and helpers as often as it launches a kernel of its own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/Analysis.h"
#include "gates/Gates.h"
#include "report/Report.h"

namespace layergate::driver {

struct GateAnalysis {
  std::size_t gate = 0;  // index into Inventory::gates
  report::Result result;
};

// Analyses the inventory's paired gates (root: the checkout the inventory's
// paths are relative to); updates their status and reason and returns the
// results, in gate order.
std::vector<GateAnalysis> analyseGates(gates::Inventory& inv, const std::string& root, const Request& base);

// The target a gate implies, as the JSON of a target file (docs/targets.md),
// and the Python the gate's conditions make: a policy function over the
// variables, each condition on the line it is written on, returning at the
// call's line. Empty when the gate reads no value its entry receives.
struct ImpliedTarget {
  std::string json;
  std::string python;    // the same number of lines as the gate's file up to the call
  std::string function;  // the policy's name
  std::vector<std::string> variables;  // "group_size <- self.group_size"
  // Per variable, how the entry spells it ("group_size", "a.size(-1)",
  // "a.scalar_type()"), and per dtype value its C++ constant.
  std::map<std::string, std::string> cpp_form;
  std::map<std::string, std::string> cpp_value;
};
ImpliedTarget impliedTarget(const gates::Gate& g);

}  // namespace layergate::driver
