// The selection layer in vLLM's shape, per checkout (issue 13): which
// implementation a configuration reaches when a method tries them in order
// (CudaCommunicator.all_reduce: quick, FlashInfer, custom, symmetric memory,
// then NCCL). The arms come from the syntax (python/Chain.h); what each arm's
// own gate admits per cell comes from the analysis of the unit whose gate
// class the arm's attribute holds (a class no unit analysed is said as not
// analysed, never as "no").
//
// Takes: the scanned root, the selection descriptions (target/Chains.h) and
// the scan's units and results. Returns: one ChainVerdict per description
// whose file is present; text and JSON for the scan's report.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/Model.h"
#include "report/Report.h"
#include "target/Chains.h"

namespace layergate::driver {

struct ChainVerdict {
  std::string name;  // the description's
  std::string file;  // root-relative
  model::SelectionChain chain;
  // Per arm, per class it may hold: the result that analysed that class
  // (index into the scan's results), -1 when none did.
  std::vector<std::vector<std::pair<std::string, int>>> arm_units;
  std::vector<std::string> arm_platform;  // per arm: its analysed classes' platform ("cuda", "rocm"), "" any
  std::vector<std::string> platforms;     // the platforms of the analysed arms, sorted
  struct Row {
    int world_size = 0;
    bool full_nvlink = false;
    std::vector<std::string> arms;  // per arm: "by default", "when ENV=v", "-", "?" (not analysed)
    // Per platform: the first arm that admits by default ("ca_comm"), the
    // arms before it that admit only with an env setting, "NCCL" when none.
    std::vector<std::string> runs;
  };
  std::vector<Row> rows;
};

// Reads the files relative to the current directory (the scan runs inside the root).
// platform_of: a target's name -> its platform.
std::vector<ChainVerdict> selectionChains(const std::vector<target::ChainSpec>& specs,
                                          const std::vector<report::Result>& results,
                                          const std::map<std::string, std::string>& platform_of, std::size_t max_bytes);

std::string renderChainText(const ChainVerdict& v);
nlohmann::json chainJson(const ChainVerdict& v);

}  // namespace layergate::driver
