// Speed: the kernels' bench output (bench/kernels/allreduce_bench.cu) read
// back, shown with nccl-tests' columns, and turned into the size thresholds
// this machine should use.
//
// Takes: the bench's text output. Returns: rows (size, count, type, algo,
// median time per all-reduce), the table, the fitted thresholds, and the
// thresholds file the reference dispatch loads (Thresholds::from_file in
// kernels/layergate_allreduce.cuh reads this JSON).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace layergate::selftest {

struct BenchRow {
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  std::string type;   // "half"
  std::string algo;   // "one_shot_push", ..., "dispatch(one_shot_push)", "nccl"
  double us = 0;      // median time per all-reduce
  std::int64_t wrong = 0;
};

struct BenchRun {
  int ranks = 0;
  bool standin = false;  // buffers in mapped pinned host memory (PCIe stand-in)
  std::string title;     // the bench's "# layergate all-reduce bench: ..." line
  std::vector<BenchRow> rows;
  std::vector<std::string> notes;  // "note:", "SKIP:", "# leave to NCCL" lines
  bool skipped = false;
};

BenchRun parseBench(const std::string& output);

// GB/s as nccl-tests count them: algbw = bytes / time; for all-reduce
// busbw = algbw * 2(n-1)/n.
double algbw(std::int64_t bytes, double us);
double busbw(double algbw, int ranks);

// One nccl-tests-style block per algorithm.
std::string renderSpeedTable(const BenchRun& run);

// The kernels a threshold chooses between (the dispatch's tiers).
bool isTierKernel(const std::string& algo);

struct ThresholdFit {
  int world_size = 0;
  bool nvlink = true;                         // NVLink tiers, or PCIe tiers (stand-in)
  std::map<std::int64_t, std::string> fastest;  // per size: fastest tier kernel
  // key -> bytes ("nvlink_one_shot_max", ...); kAll for no limit.
  std::vector<std::pair<std::string, std::uint64_t>> thresholds;
  double cost = 0;  // sum over sizes of time(chosen) / time(fastest); sizes measured = its minimum
  std::string summary() const;
};
inline constexpr std::uint64_t kAll = ~std::uint64_t(0);

// NVLink: one_shot_push up to A, one_stage_pull up to B, then two_stage_pull;
// PCIe: one_shot_push up to C, then two_shot_push. A, B, C are chosen among
// the measured sizes to minimise the summed slowdown against the fastest
// kernel at each size. A boundary at the largest size measured means "no limit".
ThresholdFit fitThresholds(const BenchRun& run, bool nvlink);

// {"format": "layergate-thresholds/1", "machine": ..., "entries": [{"key", "world_size", "bytes"}]}
std::string thresholdsJson(const std::vector<ThresholdFit>& fits, const std::string& machine);

}  // namespace layergate::selftest
