// The static verdicts the self-test puts beside its runs: one cell of the
// configuration matrix (world size x NVLink) per entry, in plain data, so
// that the runtime side needs neither the solver nor the frontends (a plan
// made by `layergate selftest --save-plan` on a lint box can be run on a GPU
// box that has only the CUDA programs).
//
// Takes: the driver's report::Result (FromAnalysis.h) or a saved plan.
// Returns: cells, the words for one cell, the static expectation per size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace layergate::selftest {

struct StaticPart {
  std::string kind;    // "launch", "throw", "none"
  std::string kernel;  // launch: kernel; throw: message; none: why
  std::int64_t lo = 0;
  std::int64_t hi = -1;  // inclusive; -1: no upper bound
  bool precondition = false;
  bool covers(std::int64_t bytes) const { return bytes >= lo && (hi < 0 || bytes <= hi); }
};

// A configuration of the cell that the gate admits and that reaches one
// dispatch leaf (solve::Example): what the harness of a dispatch that takes
// handed-down values (a variant, a block count) runs.
struct StaticExample {
  std::string kind;    // "launch", "none", "throw"
  std::string kernel;  // launch: kernel; otherwise the leaf's text
  std::int64_t bytes = 0;
  std::vector<std::pair<std::string, std::int64_t>> values;  // "variant" -> 3
  std::vector<std::pair<std::string, std::string>> texts;    // "algo" -> "1shot_push"
  std::string env;     // the env that admits it, "" when none
};

// Whether a text value can travel in a harness argument (ws:nv:bytes:name=value,...).
bool passableText(const std::string& t);

struct StaticCell {
  int world_size = 0;
  bool full_nvlink = false;
  std::string gate = "blocked";  // "blocked", "admitted", "admitted_when", "undecided"
  std::string condition;         // admitted_when: "SGLANG_FORCE_CUSTOM_AR_PCIE=1"
  bool has_sizes = false;
  std::int64_t gate_lo = 0, gate_hi = -1;  // admitted message sizes
  std::vector<StaticPart> parts;
  std::vector<StaticExample> examples;
  bool admits() const { return gate == "admitted" || gate == "admitted_when"; }
  bool admitsSize(std::int64_t bytes) const {
    return admits() && (!has_sizes || (bytes >= gate_lo && (gate_hi < 0 || bytes <= gate_hi)));
  }
  // LG001 in this cell: admitted sizes that reach a part with no kernel.
  bool noKernelGap() const;
  bool throwGap() const;
};

struct StaticMatrix {
  std::string python, cpp;  // the files analysed
  std::vector<StaticCell> cells;
};

const StaticCell* findCell(const StaticMatrix& m, int world_size, bool full_nvlink);
// The dispatch part that serves `bytes` (non-precondition parts first).
const StaticPart* partFor(const StaticCell& c, std::int64_t bytes);

// "16 B", "8 KiB", "8 MiB - 16 B", "any size".
std::string sizeText(std::int64_t bytes);
std::string rangeText(std::int64_t lo, std::int64_t hi);

// This machine's cell in words: "world size 8, PCIe: your gate admits it when
// SGLANG_FORCE_CUSTOM_AR_PCIE=1, and the dispatch launches no kernel".
std::string describeCell(const StaticCell& c);
// The static expectation for one message size, short: "LG001 (admitted when X=1, no kernel)",
// "launch cross_device_reduce_1stage", "gate blocks; dispatch throws".
std::string expectText(const StaticCell& c, std::int64_t bytes);
// What a run of this cell at this size should show: "ok", "no kernel ran", "throws".
std::string expectedOutcome(const StaticCell& c, std::int64_t bytes);

nlohmann::json toJson(const StaticCell& c);
nlohmann::json toJson(const StaticMatrix& m);
StaticMatrix matrixFromJson(const nlohmann::json& j);

}  // namespace layergate::selftest
