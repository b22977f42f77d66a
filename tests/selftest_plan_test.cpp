// A self-test plan travels to a GPU box without LLVM: `layergate selftest
// --check DIR --save-plan P` writes every gate's harness into P and the
// headers they include into the folder beside it; moved anywhere (the
// checkout gone), layergate_selftest_gpu --plan P --check-plan finds every
// header, and a header that is missing is named in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;
using nlohmann::json;

namespace {

const fs::path kFixtures = LAYERGATE_FIXTURES;

class SelftestPlanFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lg plan " + std::to_string(getpid()));  // a path with a space
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "lint");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A checkout with three gates: FlashInfer's PCIe IPC policy (an entry
  // harness), SGLang's v1 class (a class harness) and SGLang's
  // CustomAllReduceV2 (its headers under the target's include directory).
  fs::path checkout() {
    const fs::path ck = dir_ / "checkout";
    fs::copy(kFixtures / "flashinfer-pcie-ipc-flat4", ck, fs::copy_options::recursive);
    fs::create_directories(ck / "sgl");
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy(kFixtures / "sglang-upstream" / f, ck / "sgl" / f);
    fs::copy(kFixtures / "sglang-custom-ar-v2" / "python", ck / "python", fs::copy_options::recursive);
    return ck;
  }

  // Saves the plan of `ck` into lint/plan.json; no GPU is used (none is visible).
  CliRun save(const fs::path& ck, const std::string& extra = "") {
    return lgtest::runCli("selftest --check " + quote(ck.string()) + " --save-plan " +
                              quote((dir_ / "lint" / "plan.json").string()) + " " + extra,
                          dir_, 300, "env CUDA_VISIBLE_DEVICES= ");
  }

  CliRun gpu(const fs::path& plan, const std::string& args) {
    return lgtest::runProgram(LAYERGATE_SELFTEST_GPU_BINARY, "--plan " + quote(plan.string()) + " " + args, dir_, 120);
  }

  fs::path dir_;
};

TEST_F(SelftestPlanFile, CheckSavesEveryGatesHarnessAndTheHeadersTravelWithIt) {
  const fs::path ck = checkout();
  CliRun s = save(ck);
  ASSERT_EQ(s.status, 4) << s.out << s.err;  // saved, then no GPU here
  EXPECT_NE(s.err.find("plan written to "), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("(3 gates, 3 harnesses; "), std::string::npos) << s.err;

  const json j = json::parse(slurp(dir_ / "lint" / "plan.json"));
  EXPECT_EQ(j["format"], "layergate-selftest-plan/2");
  EXPECT_EQ(j["files"], "plan.d");
  ASSERT_EQ(j["gates"].size(), 3u);
  std::set<std::string> targets, headers;
  int v1 = 0;  // the SGLang v1 gate's harness: gate-N
  for (std::size_t i = 0; i < j["gates"].size(); ++i) {
    const json& g = j["gates"][i];
    if (g["target"] == "custom-allreduce") v1 = static_cast<int>(i) + 1;
    targets.insert(g["target"].get<std::string>());
    ASSERT_TRUE(g.contains("harness")) << g.dump();
    EXPECT_EQ(g["harness"]["error"], "") << g["target"];
    EXPECT_FALSE(g["harness"]["source"].get<std::string>().empty());
    headers.insert(g["harness"]["header"].get<std::string>());
  }
  EXPECT_EQ(targets, (std::set<std::string>{"custom-allreduce", "flashinfer-pcie-ipc", "sglang-custom-ar-v2"}));
  // Headers by their place in the folder (the checkout's layout), never by
  // the path they had on this machine.
  EXPECT_EQ(headers, (std::set<std::string>{"include/flashinfer/comm/pcie_ipc_all_reduce.cuh", "sgl/custom_all_reduce.cuh",
                                            "python/sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh"}));
  EXPECT_EQ(j.dump().find(ck.string()), std::string::npos);
  // The V2 header's includes from the target's include directory and its
  // object's constructor beside it are carried; system headers are not.
  const fs::path folder = dir_ / "lint" / "plan.d";
  for (const char* f : {"include/flashinfer/comm/pcie_ipc_all_reduce.cuh", "sgl/custom_all_reduce.cuh",
                        "python/sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh",
                        "python/sglang/kernels/jit/csrc/distributed/workspace.cuh",
                        "python/sglang/kernels/jit/include/sgl_kernel/utils.h",
                        "python/sglang/kernels/jit/include/sgl_kernel/distributed/workspace.cuh"})
    EXPECT_TRUE(fs::is_regular_file(folder / f)) << f;
  EXPECT_FALSE(fs::exists(folder / "python/sglang/srt")) << "only headers travel";

  // To the GPU box: the plan's directory moved, the checkout gone.
  fs::remove_all(ck);
  const fs::path box = dir_ / "gpu box";
  fs::rename(dir_ / "lint", box);
  const fs::path plan = box / "plan.json";
  CliRun c = gpu(plan, "--check-plan");
  ASSERT_EQ(c.status, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("3 gate(s), "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("all present"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("harness around " + (box / "plan.d" / "sgl/custom_all_reduce.cuh").string()), std::string::npos)
      << c.out;
  CliRun lc = lgtest::runCli("selftest --plan " + quote(plan.string()) + " --check-plan", dir_, 60);
  EXPECT_EQ(lc.status, 0) << lc.out << lc.err;
  EXPECT_EQ(lc.out, c.out);

  // Each harness as the GPU box builds it: its includes name the moved folder.
  // (nvcc and tvm-ffi stand-ins: only the commands are printed.)
  const fs::path ffi = dir_ / "tvm-ffi";
  fs::create_directories(ffi / "include/tvm/ffi");
  fs::create_directories(ffi / "lib");
  std::ofstream(ffi / "include/tvm/ffi/c_api.h") << "\n";
  std::ofstream(ffi / "lib/libtvm_ffi.so") << "\n";
  CliRun e = gpu(plan, "--emit-harness " + quote((dir_ / "h").string()) + " --nvcc /bin/true --tvm-ffi " + quote(ffi.string()));
  ASSERT_EQ(e.status, 0) << e.out << e.err;
  EXPECT_EQ(lgtest::lines(e.out), 3) << e.out;
  EXPECT_NE(e.out.find("/bin/true -std=c++17 -O2 -arch=sm_90 "), std::string::npos) << e.out;
  ASSERT_GT(v1, 0);
  const std::string cu = slurp(dir_ / "h" / ("gate-" + std::to_string(v1)) / "harness.cu");
  EXPECT_NE(cu.find("#include \"" + (box / "plan.d").string() + "/sgl/custom_all_reduce.cuh\""), std::string::npos)
      << cu.substr(0, 800);
  EXPECT_EQ(cu.find("@LAYERGATE"), std::string::npos);

  // A header lost on the way, then the whole folder: one line naming it.
  fs::remove(box / "plan.d" / "python/sglang/kernels/jit/include/sgl_kernel/utils.h");
  CliRun m = gpu(plan, "--check-plan");
  EXPECT_EQ(m.status, 2);
  EXPECT_EQ(lgtest::lines(m.err), 1) << m.err;
  EXPECT_NE(m.err.find("header " + (box / "plan.d" / "python/sglang/kernels/jit/include/sgl_kernel/utils.h").string() +
                       " is missing from the plan's folder"),
            std::string::npos)
      << m.err;
  CliRun lm = lgtest::runCli("selftest --plan " + quote(plan.string()), dir_, 60);
  EXPECT_EQ(lm.status, 2);
  EXPECT_EQ(lgtest::lines(lm.err), 1) << lm.err;
  EXPECT_NE(lm.err.find("sgl_kernel/utils.h is missing"), std::string::npos) << lm.err;
  fs::remove_all(box / "plan.d");
  CliRun f = gpu(plan, "--check-plan");
  EXPECT_EQ(f.status, 2);
  EXPECT_EQ(lgtest::lines(f.err), 1) << f.err;
  EXPECT_NE(f.err.find("the plan's folder " + (box / "plan.d").string() + " is not beside it"), std::string::npos) << f.err;
}

// A header that cannot be carried (over the size limit) is named in the plan
// with the place to copy it to; the GPU side refuses in one line until it is there.
TEST_F(SelftestPlanFile, AHeaderNotCarriedIsNamedWithWhereToCopyIt) {
  const fs::path ck = dir_ / "checkout";
  fs::create_directories(ck);
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
    fs::copy(kFixtures / "sglang-upstream" / f, ck / f);
  {
    std::ofstream big(ck / "big_table.h");
    const std::string line(1023, '/');
    for (int i = 0; i < 9 * 1024; ++i) big << line << "\n";
  }
  std::string cuh = slurp(ck / "custom_all_reduce.cuh");
  cuh.insert(cuh.find("#include <cuda.h>"), "#include \"big_table.h\"\n");
  std::ofstream(ck / "custom_all_reduce.cuh") << cuh;
  CliRun s = save(ck);
  ASSERT_EQ(s.status, 4) << s.out << s.err;
  EXPECT_NE(s.err.find((ck / "big_table.h").string() + " not carried (larger than 8 MiB): copy it to " +
                       (dir_ / "lint" / "plan.d" / "big_table.h").string()),
            std::string::npos)
      << s.err;
  const fs::path plan = dir_ / "lint" / "plan.json";
  CliRun c = gpu(plan, "--check-plan");
  EXPECT_EQ(c.status, 2);
  EXPECT_EQ(lgtest::lines(c.err), 1) << c.err;
  EXPECT_NE(c.err.find("header " + (ck / "big_table.h").string() + " was not carried (larger than 8 MiB): copy it to " +
                       (dir_ / "lint" / "plan.d" / "big_table.h").string()),
            std::string::npos)
      << c.err;
  fs::copy(ck / "big_table.h", dir_ / "lint" / "plan.d" / "big_table.h");
  CliRun ok = gpu(plan, "--check-plan");
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// The folder beside the plan is the plan's: a save replaces the one an
// earlier save left, and refuses a directory of that name that is not one.
TEST_F(SelftestPlanFile, TheFolderIsReplacedOnlyWhenItIsAPlansFolder) {
  const fs::path ck = dir_ / "checkout";
  fs::create_directories(ck);
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
    fs::copy(kFixtures / "sglang-upstream" / f, ck / f);
  ASSERT_EQ(save(ck).status, 4);
  std::ofstream(dir_ / "lint" / "plan.d" / "stale.h") << "\n";
  ASSERT_EQ(save(ck).status, 4);
  EXPECT_FALSE(fs::exists(dir_ / "lint" / "plan.d" / "stale.h"));
  EXPECT_TRUE(fs::exists(dir_ / "lint" / "plan.d" / "custom_all_reduce.cuh"));
  fs::create_directories(dir_ / "lint" / "mine.d");
  CliRun r = lgtest::runCli("selftest --check " + quote(ck.string()) + " --save-plan " +
                                quote((dir_ / "lint" / "mine.json").string()),
                            dir_, 300, "env CUDA_VISIBLE_DEVICES= ");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lgtest::lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("mine.d: exists and is not a plan's folder"), std::string::npos) << r.err;
}

// A plan of the first format names its header by the path it had where it
// was made: on a machine without it, one line says which.
TEST_F(SelftestPlanFile, AFormatOnePlanWhoseHeaderIsNotHereIsOneLine) {
  const fs::path plan = dir_ / "old.json";
  std::ofstream(plan) << R"({"format":"layergate-selftest-plan/1","harness":{"header":"/nowhere/custom_all_reduce.cuh",)"
                      << R"("source":"int main() {}"}})";
  CliRun c = gpu(plan, "--check-plan");
  EXPECT_EQ(c.status, 2);
  EXPECT_EQ(lgtest::lines(c.err), 1) << c.err;
  EXPECT_NE(c.err.find("header /nowhere/custom_all_reduce.cuh (named by the plan) is not on this machine"),
            std::string::npos)
      << c.err;
  CliRun usage = lgtest::runProgram(LAYERGATE_SELFTEST_GPU_BINARY, "--check-plan", dir_, 60);
  EXPECT_EQ(usage.status, 2);
  EXPECT_EQ(usage.err, "--check-plan goes with --plan FILE\n");
}

}  // namespace
