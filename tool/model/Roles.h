// Roles: the parts a target's declared configuration variable plays in the
// per-group analysis (the cells of a matrix), by the "role" a target gives it
// in "variables" (docs/targets.md). The frontends, the trace and the solver
// look a role up here and use the variable's declared name; nothing in the
// code names one family's variables.
//
// A target that declares variables in the ranks, link and bytes roles is
// analysed per cell (its group size × its link flag, message sizes as
// ranges); any other target over the regions of its variables' product
// (solve/Space.h).
#pragma once

#include <string>

namespace layergate::model {

struct Roles {
  // "ranks" (int): how many processes the group has. A matrix row per value;
  // C++ reads it through the member the target maps to it, which the trace
  // follows back to the value the gate passes (link/WorldSize.h).
  std::string ranks;
  // "link" (bool): an interconnect fact that the gate probes and hands down
  // and the dispatch branches on. A matrix column per value; the flag's trace
  // follows it across the boundary (link/Link.h).
  std::string link;
  // "bytes" (int): the size in bytes of the tensor the dispatch processes: a
  // tensor's byte count or numel × element size in Python, a local the
  // target names or a product with sizeof in C++. Reported as ranges per cell.
  std::string bytes;
  // "rank" (an int probe): this process's place in the group, one of
  // 0 .. ranks - 1.
  std::string rank;
  // "element" (an enum with "cpp_types"): the element type of the tensor the
  // dispatch processes. C++ reads it as the dispatch's type template
  // parameter that its pointer parameters point to (`T* input`), so a
  // `std::is_same_v<T, half>` test is a test of this variable.
  std::string element;

  // The cell analysis: a group size, a link flag and a message size.
  bool cells() const { return !ranks.empty() && !link.empty() && !bytes.empty(); }
  bool isRanks(const std::string& v) const { return !ranks.empty() && v == ranks; }
  bool isLink(const std::string& v) const { return !link.empty() && v == link; }
  bool isBytes(const std::string& v) const { return !bytes.empty() && v == bytes; }
  bool isRank(const std::string& v) const { return !rank.empty() && v == rank; }
  bool isElement(const std::string& v) const { return !element.empty() && v == element; }
};

}  // namespace layergate::model
