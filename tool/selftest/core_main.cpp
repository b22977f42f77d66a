// layergate_selftest_gpu: the GPU half of `layergate selftest`, for a GPU
// box that has the CUDA programs but not layergate's analysis dependencies
// (LLVM, Z3, tree-sitter). The static side comes from a plan written by
// `layergate selftest --save-plan FILE` elsewhere.
//
//   layergate_selftest_gpu [--plan FILE] [--quick] [--format text|json] [--kernels-dir DIR]
//                          [--nvcc PATH] [--tvm-ffi PREFIX] [--work-dir DIR] [--thresholds-out FILE] [--skip PHASE]...
// Exit status: 0 passed, 1 failures, 2 bad usage, 4 no CUDA GPU.
#include <cstring>
#include <fstream>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

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
                   " [--thresholds-out FILE] [--skip proof|standin|speed|harness] [--cell-timeout S]\n";
      return kExitUsage;
    }
  }
  Plan plan;
  if (!plan_path.empty()) {
    std::ifstream in(plan_path);
    if (!in) {
      std::cerr << plan_path << ": cannot read\n";
      return kExitUsage;
    }
    try {
      plan = planFromJson(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      std::cerr << plan_path << ": not a usable plan: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  try {
    return runSelftest(o, plan, probeMachine(), std::cout);
  } catch (const std::exception& e) {
    std::cerr << "layergate selftest: internal error: " << e.what() << "\n";
    return 3;
  }
}
