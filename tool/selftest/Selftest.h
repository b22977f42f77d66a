// layergate selftest: on the machine that will run the patch, what the
// machine is (topology), what the static analysis says for exactly its
// configuration, whether the reference kernels produce the right sums here
// (and over a PCIe stand-in), how fast against NCCL, which thresholds to use,
// and what the user's own dispatch does in every cell of the matrix.
//
// Takes: Options and a Plan (the static side, computed by FromAnalysis.h or
// loaded from a file written by --save-plan). Returns: an exit status, the
// report on `out` (text or JSON) and a progress line per phase on stderr.
// All GPU work runs in child processes (Process.h) with deadlines.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "selftest/Harness.h"
#include "selftest/Static.h"
#include "selftest/Topology.h"

namespace layergate::selftest {

// Exit statuses (documented in `layergate selftest --help` and the README).
inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoGpu = 4;  // nothing to test here: no CUDA GPU

struct Options {
  std::string check_path;  // --check DIR
  std::string header;      // --header FILE
  std::string python;      // --python FILE
  std::vector<std::string> include_dirs;
  std::string target, rules_dir;
  bool quick = false;
  std::string format = "text";
  std::string kernels_dir;  // where layergate_allreduce_check/_bench are
  std::string nvcc;
  // tvm-ffi (include/, lib/libtvm_ffi.so; dlpack under include/ or
  // 3rdparty/dlpack/include/) for a harness around a JIT entry: --tvm-ffi,
  // $LAYERGATE_TVM_FFI, or the tvm_ffi Python package of python3.
  std::string tvm_ffi;
  std::string work_dir;     // harness build directory (default: a fresh temp dir)
  std::string thresholds_out = "layergate-thresholds.json";
  std::string emit_harness;  // write the harness sources here and stop
  std::string save_plan;     // write the static side here (then go on)
  std::string plan;          // read the static side from here instead of analysing
  bool check_plan = false;   // with plan: check that it resolves (its carried headers present) and stop
  std::vector<std::string> skip;  // phases: proof, standin, speed, harness
  double cell_timeout_s = 5;
  std::string self_exe;      // argv[0]/proc/self/exe, to find the CUDA programs
};

// The static side of one gate: its matrix and the harness around its dispatch.
// A saved plan holds one per gate (PlanFile.h).
struct Plan {
  std::string target;             // the gate's target ("" for a plan of the --header form)
  bool has_static = false;
  StaticMatrix matrix;
  std::string header;             // the user's header (for --header)
  std::string harness_source;     // generated harness .cu
  std::map<std::string, std::string> harness_shims;
  std::string harness_calls;      // HarnessSpec::describe()
  std::vector<std::string> harness_notes;
  std::string harness_error;      // why no harness could be made
  // How the harness is compiled beside the defaults (target's cpp.std,
  // cpp.defines, cpp.include_dirs), and whether it needs tvm-ffi (a JIT entry).
  std::string harness_std;
  std::vector<std::string> harness_defines, harness_include_dirs;
  bool harness_tvm_ffi = false;
  // A gate --check found (not one asked for with --header): no harness for it
  // is a skipped phase, not a failed one.
  bool harness_optional = false;
  // The header and the project files around it that the harness was planned
  // from (absolute): where --save-plan starts what it carries. Not saved.
  std::vector<std::string> harness_files;
  // The checkout (absolute): only headers below it are carried; include
  // directories outside it are system ones, named as they are. Not saved.
  std::string harness_root;
  std::vector<std::string> notes;
};

// One gate as JSON ({"format": "layergate-selftest-plan/1", ...}), and back.
nlohmann::json planJson(const Plan& p);
Plan planFromJson(const nlohmann::json& j);
// One gate of a saved plan, its format not checked (PlanFile.h checks the file's).
Plan gateFromJson(const nlohmann::json& j);

// Writes harness.cu and the include stand-ins under dir/include/; returns harness.cu's path.
std::string writeHarness(const Plan& p, const std::string& dir);

// The cells and sizes the harness runs: world sizes 2..max in the matrix,
// both NVLink values, one size per dispatch part (one per cell with quick).
std::vector<HarnessCell> harnessCells(const StaticMatrix& m, bool quick);

// The nvcc command that builds the harness written to dir (writeHarness) into
// dir/harness, for a GPU of compute capability cc (90: sm_90); "" and *why
// when it cannot be built here (no nvcc, no tvm-ffi for a JIT entry).
std::vector<std::string> harnessCompileCommand(const Options& o, const Plan& p, const std::string& dir, int cc,
                                               std::string* why);

// Runs the GPU phases, the harness of every gate that has one. Exit status as above.
int runSelftest(const Options& o, const std::vector<Plan>& gates, Topology topo, std::ostream& out);
int runSelftest(const Options& o, const Plan& plan, Topology topo, std::ostream& out);

// Finds a CUDA program of the kernels (layergate_allreduce_check, _bench):
// --kernels-dir, $LAYERGATE_KERNELS_DIR, beside the layergate binary, the
// build tree's kernels/ beside tool/; "" if none.
std::string findKernelProgram(const Options& o, const std::string& name);
std::string findNvcc(const Options& o);
// tvm-ffi's prefix (include/tvm/ffi, lib/libtvm_ffi.so): --tvm-ffi, $LAYERGATE_TVM_FFI, python3's tvm_ffi; "" if none.
std::string findTvmFfi(const Options& o);

}  // namespace layergate::selftest
