// layergate_selftest_gpu: the GPU half of `layergate selftest`, for a GPU
// box that has the CUDA programs but not layergate's analysis dependencies
// (LLVM, Z3, tree-sitter). The static side comes from a plan written by
// `layergate selftest --save-plan FILE` elsewhere, with the folder of headers
// beside it (PlanFile.h).
//
//   layergate_selftest_gpu [--plan FILE] [--quick] [--format text|json] [--kernels-dir DIR]
//                          [--nvcc PATH] [--tvm-ffi PREFIX] [--work-dir DIR] [--thresholds-out FILE] [--skip PHASE]...
//   layergate_selftest_gpu --plan FILE --check-plan         (no GPU: every header the plan names is here)
//   layergate_selftest_gpu --plan FILE --emit-harness DIR   (no GPU: each harness written, its nvcc command printed)
// Exit status: 0 passed, 1 failures, 2 bad usage or a plan that does not resolve, 4 no CUDA GPU.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "selftest/PlanFile.h"
#include "selftest/Process.h"
#include "selftest/Selftest.h"

int main(int argc, char** argv) {
  using namespace layergate::selftest;
  Options o;
  o.self_exe = argv[0];
  std::string plan_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value for " << a << "\n";
        std::exit(kExitUsage);
      }
      return argv[++i];
    };
    if (a == "--plan") plan_path = next();
    else if (a == "--quick") o.quick = true;
    else if (a == "--format") o.format = next();
    else if (a == "--kernels-dir") o.kernels_dir = next();
    else if (a == "--nvcc") o.nvcc = next();
    else if (a == "--tvm-ffi") o.tvm_ffi = next();
    else if (a == "--work-dir") o.work_dir = next();
    else if (a == "--thresholds-out") o.thresholds_out = next();
    else if (a == "--skip") o.skip.push_back(next());
    else if (a == "--check-plan") o.check_plan = true;
    else if (a == "--emit-harness") o.emit_harness = next();
    else if (a == "--cell-timeout") {
      const std::string v = next();
      char* end = nullptr;
      const double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(s > 0 && s <= 86400)) {
        std::cerr << "--cell-timeout takes seconds in (0, 86400], got '" << v << "'\n";
        return kExitUsage;
      }
      o.cell_timeout_s = s;
    }
    else {
      std::cerr << "usage: " << argv[0]
                << " [--plan FILE] [--quick] [--format text|json] [--kernels-dir DIR] [--nvcc PATH] [--tvm-ffi PREFIX] [--work-dir DIR]"
                   " [--thresholds-out FILE] [--skip proof|standin|speed|harness] [--cell-timeout S]"
                   " [--check-plan] [--emit-harness DIR]\n";
      return kExitUsage;
    }
  }
  std::vector<Plan> gates;
  if (!plan_path.empty()) {
    try {
      gates = loadPlan(plan_path);
    } catch (const std::exception& e) {
      std::cerr << plan_path << ": not a usable plan: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  if ((o.check_plan || !o.emit_harness.empty()) && plan_path.empty()) {
    std::cerr << (o.check_plan ? "--check-plan" : "--emit-harness") << " goes with --plan FILE\n";
    return kExitUsage;
  }
  if (o.check_plan) {
    std::cout << describePlan(gates, plan_path);
    return kExitPassed;
  }
  if (!o.emit_harness.empty()) {
    // Each harness as the harness phase writes it, and the nvcc command that
    // phase runs (for sm_90), one line each: the build checked without a GPU.
    int n = 0, failed = 0;
    for (const auto& p : gates) {
      if (p.header.empty()) continue;
      const std::string dir = (std::filesystem::path(o.emit_harness) / ("gate-" + std::to_string(++n))).string();
      if (!p.harness_error.empty()) {
        std::cerr << dir << ": no harness: " << p.harness_error << "\n";
        continue;
      }
      writeHarness(p, dir);
      std::string why;
      const std::vector<std::string> argv = harnessCompileCommand(o, p, dir, 90, &why);
      if (argv.empty()) {
        std::cerr << dir << ": " << why << "\n";
        ++failed;
        continue;
      }
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + shellWord(a);
      std::cout << line << "\n";
    }
    return failed ? kExitFailed : kExitPassed;
  }
  try {
    return runSelftest(o, gates, probeMachine(), std::cout);
  } catch (const std::exception& e) {
    std::cerr << "layergate selftest: internal error: " << e.what() << "\n";
    return 3;
  }
}
