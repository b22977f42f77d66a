// Space: gate × dispatch over the variables a target declares (a family of
// layered gates described as data: a head size, a dtype, a GPU generation),
// not over world size × NVLink cells.
//
// Takes: a Gate and a Dispatch whose conditions are over Var(name) of the
// declared variables. Returns: regions, each a box (per variable, the values
// in it) wholly inside one answer: the gate admits and the dispatch throws
// (or reaches no kernel), or admits and a kernel runs. Boxes are found one at
// a time from a model and grown one variable after the other while the box
// stays inside the answer (each growth is proven, not sampled), then blocked;
// together they cover the answer exactly, unless the cap stops the search
// (`truncated`). What is free and what is not follows Solver.h: the
// declared variables and probes are free; Python code the frontend did not
// interpret makes a gap certain only when it holds for all its values; the
// dispatch's own opaque terms may take any value that reaches a kernel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/Model.h"
#include "solve/Solver.h"
#include "target/Variables.h"

namespace layergate::solve {

struct Region {
  // Per declared variable, in declaration order: the values in the box, in
  // words ("64, 128", "1..16", "float16, bfloat16"); "any" for the whole domain.
  std::vector<std::pair<std::string, std::string>> values;
  bool whole = false;        // every variable spans its whole domain
  model::Config example;     // one configuration of it (Config::values / texts)
  model::LeafKind kind = model::LeafKind::Launch;
  std::string what;          // Launch: the kernel; Throw: the message; None: why
  const model::Leaf* leaf = nullptr;        // the dispatch leaf it reaches
  const model::GateCheck* admit = nullptr;  // the gate's return that admits it
  bool certain = true;       // a gap for every value of the uninterpreted Python terms
  std::vector<model::OpaqueSymbol> depends_on;
  // A certain gap's premise: uninterpreted terms taken in the value without
  // which the gate admits nothing (feature switches).
  std::vector<std::pair<model::OpaqueSymbol, bool>> assuming;
  // The box in words: "arch gfx9, size 256, ratio 1..16" (variables spanning
  // their domain left out; "every configuration" when all do).
  std::string text() const;
};

struct SpaceResult {
  std::vector<Region> gaps;    // admitted, no kernel (LeafKind None or Throw)
  std::vector<Region> served;  // admitted, a kernel runs (Options::regions)
  bool served_listed = true;   // served was searched (Options::regions)
  bool admits = false;         // the gate admits some configuration
  bool truncated = false;      // the cap on regions stopped a search
  bool undecided = false;      // a query ran out of time
  std::string why;
};

SpaceResult solveSpace(const model::Gate& gate, const model::Dispatch& dispatch, const target::Variables& vars,
                       const Options& options = {});

}  // namespace layergate::solve
