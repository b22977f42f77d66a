// Your own dispatch, run, when it is a function called with what the gate
// hands down (FlashInfer's PCIe IPC all_reduce(input, output, numel, views,
// rank, world_size, ..., blocks, threads, variant, stream)) rather than a
// method of a class the harness constructs (Harness.h).
//
// Takes: the C++ frontend's Dispatch (the function's parameters as written,
// its namespace, its and its class's template parameters), the header's text
// (the namespace-scope functions that build the objects it takes, and the one
// that sizes a rank's shared workspace) and the files around it (FfiObjects.h:
// the tvm-ffi objects a JIT entry takes, built from their constructors), the
// target's member map and the names of the values the gate hands down
// (integers, and texts such as an algorithm's name).
// Returns: a HarnessSpec with `entry` set (every parameter given an
// expression, or a HarnessError naming the one that has none) and its
// generated source. Each cell the harness runs is one example configuration
// of the static side (solve::Example): its world size, size and values, with
// the ranks sharing the GPUs at hand, each rank's workspace a slab of device
// memory every rank sees by its address.
#pragma once

#include <map>
#include <set>
#include <string>

#include "model/Model.h"
#include "selftest/FfiObjects.h"
#include "selftest/Harness.h"

namespace layergate::selftest {

// member_config: the target's member map, by memberRoles (Harness.h).
// elem_size: the element size the examples hand down (2: __half), 0: float.
// sources: the header's text first, then the files around it (may be just the header).
HarnessSpec planEntryHarness(const model::Dispatch& dispatch, const std::string& header_path,
                             const std::vector<SourceText>& sources,
                             const std::map<std::string, std::string>& member_config,
                             const std::set<std::string>& value_names, const std::set<std::string>& text_names,
                             int elem_size);

std::string generateEntryHarness(const HarnessSpec& spec);

}  // namespace layergate::selftest
