// Discovery: the path matcher, target inheritance, the walk (noise it must
// skip, loops it must not follow), and `layergate check DIR` end to end on
// trees laid out like SGLang and vLLM checkouts, built from the fixtures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "CliRunner.h"
#include "cli/GitIgnored.h"
#include "cli/Scan.h"
#include "discover/Discover.h"
#include "discover/FilesRegex.h"
#include "model/Errors.h"
#include "target/Chains.h"
#include "target/Target.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace layergate;

namespace {

const std::string kSglangPy = "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py";
const std::string kSglangCuh = "sgl-kernel/csrc/allreduce/custom_all_reduce.cuh";
const std::string kVllmPy = "vllm/distributed/device_communicators/custom_all_reduce.py";
const std::string kVllmCuh = "csrc/custom_all_reduce.cuh";

using lgtest::slurp;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

void copyFixture(const std::string& fixture, const std::string& file, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fs::path(LAYERGATE_FIXTURES) / fixture / file, to, fs::copy_options::overwrite_existing);
}

// A fresh directory per test, removed afterwards.
class Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("lg_discover_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    // Unreadable directories must be readable again to be removed.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0755);
    fs::remove_all(root_, ec);
  }

  // SGLang with sgl-kernel: the seed gate (opened for PCIe) over the upstream dispatch.
  void sglang(const fs::path& at) {
    copyFixture("seed-force-pcie", "custom_all_reduce.py", at / kSglangPy);
    copyFixture("sglang-upstream", "custom_all_reduce.cuh", at / kSglangCuh);
    put(at / "python/sglang/__init__.py", "");
    put(at / "README.md", "sglang\n");
  }
  // vLLM, its ops in csrc/custom_all_reduce.cu (or libtorch_stable/, or none).
  void vllm(const fs::path& at, const std::string& ops_file = "csrc/custom_all_reduce.cu") {
    copyFixture("vllm-upstream", "custom_all_reduce.py", at / kVllmPy);
    copyFixture("vllm-upstream", "custom_all_reduce.cuh", at / kVllmCuh);
    if (!ops_file.empty()) put(at / ops_file, "#include \"custom_all_reduce.cuh\"\n");
  }
  // What a real checkout also holds: a .git dir and a build dir, each with
  // another copy of a gate that must not be picked, a symlink loop and a
  // symlink to a directory outside.
  void noise(const fs::path& at) {
    copyFixture("seed-force-pcie", "custom_all_reduce.py", at / ".git/objects/custom_all_reduce.py");
    copyFixture("seed-force-pcie", "custom_all_reduce.cuh", at / ".git/objects/custom_all_reduce.cuh");
    copyFixture("vllm-fork-pcie", "custom_all_reduce.py", at / "build/lib/custom_all_reduce.py");
    copyFixture("vllm-fork-pcie", "custom_all_reduce.cuh", at / "build/lib/custom_all_reduce.cuh");
    copyFixture("vllm-fork-pcie", "custom_all_reduce.py", at / "third_party/x/custom_all_reduce.py");
    copyFixture("vllm-fork-pcie", "custom_all_reduce.cuh", at / "third_party/x/custom_all_reduce.cuh");
    fs::create_directories(at / "loop");
    fs::create_directory_symlink("..", at / "loop/up");
    fs::create_directory_symlink(at / "loop", at / "loop/self");
    fs::create_directory_symlink(LAYERGATE_FIXTURES, at / "fixtures-link");
    put(at / "docs/index.md", "docs\n");
  }

  std::vector<target::Target> targets() { return target::loadTargets(target::defaultRulesDir()); }

  fs::path root_;
};

using lgtest::CliRun;
using lgtest::lines;
using lgtest::quote;

CliRun runCli(const std::string& args, const fs::path& cwd) { return lgtest::runCli(args, cwd, 300); }

}  // namespace

// --- the matcher -------------------------------------------------------------

TEST(MatchSuffix, MatchesWholeComponentsAtTheEnd) {
  std::string prefix;
  EXPECT_TRUE(discover::matchSuffix("custom_all_reduce.py", "a/b/custom_all_reduce.py", &prefix));
  EXPECT_EQ(prefix, "a/b/");
  EXPECT_TRUE(discover::matchSuffix("custom_all_reduce.py", "custom_all_reduce.py", &prefix));
  EXPECT_EQ(prefix, "");
  EXPECT_FALSE(discover::matchSuffix("all_reduce.py", "a/custom_all_reduce.py"));
  EXPECT_FALSE(discover::matchSuffix("csrc/custom_all_reduce.cuh", "xcsrc/custom_all_reduce.cuh"));
  EXPECT_TRUE(discover::matchSuffix("csrc/custom_all_reduce.cuh", "ws/vllm/csrc/custom_all_reduce.cuh", &prefix));
  EXPECT_EQ(prefix, "ws/vllm/");
  EXPECT_FALSE(discover::matchSuffix("csrc/custom_all_reduce.cuh", "csrc/sub/custom_all_reduce.cuh"));
}

TEST(MatchSuffix, GlobsWithinAComponentAndDoubleStarAcrossComponents) {
  std::string prefix;
  EXPECT_TRUE(discover::matchSuffix("*.cuh", "a/x.cuh"));
  EXPECT_FALSE(discover::matchSuffix("*.cuh", "a/x.cu"));
  EXPECT_FALSE(discover::matchSuffix("a/*.cuh", "a/b/x.cuh"));  // '*' stays inside its component
  EXPECT_TRUE(discover::matchSuffix("sgl-kernel/**/custom_all_reduce.cuh", "s/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh", &prefix));
  EXPECT_EQ(prefix, "s/");
  EXPECT_TRUE(discover::matchSuffix("sgl-kernel/**/custom_all_reduce.cuh", "sgl-kernel/custom_all_reduce.cuh", &prefix));
  EXPECT_EQ(prefix, "");
  EXPECT_FALSE(discover::matchSuffix("sgl-kernel/**/custom_all_reduce.cuh", "kernel/csrc/custom_all_reduce.cuh"));
  EXPECT_TRUE(discover::matchSuffix("include/flashinfer/comm/custom_all_reduce.cuh",
                                    "fi/include/flashinfer/comm/custom_all_reduce.cuh", &prefix));
  EXPECT_EQ(prefix, "fi/");
}

TEST(SkippedDirs, VcsBuildAndVendoredTrees) {
  for (const char* d : {".git", ".venv", "build", "build-asan", "build_release", "cmake-build-debug", "node_modules",
                        "__pycache__", "third_party", "3rdparty", "site-packages", "foo.egg-info"})
    EXPECT_TRUE(discover::isSkippedDirName(d)) << d;
  // Words that start with "build" and are no build tree.
  for (const char* d : {"csrc", "python", "sgl-kernel", "vllm", "include", "allreduce", "builders", "buildkite",
                        "building", "cmake-builders"})
    EXPECT_FALSE(discover::isSkippedDirName(d)) << d;
}

// --- which files can change a verdict -------------------------------------------

TEST(FilesRegex, PatternsBecomePathSuffixRegexes) {
  EXPECT_EQ(discover::patternRegex("sgl-kernel/**/custom_all_reduce.cuh"), "sgl-kernel/(.*/)?custom_all_reduce\\.cuh");
  EXPECT_EQ(discover::patternRegex("platforms/*.py"), "platforms/[^/]*\\.py");
  EXPECT_EQ(discover::patternRegex("x?[!ab].h"), "x[^/][^ab]\\.h");
}

TEST_F(Tree, FilesRegexSelectsWhatTheBundledTargetsRead) {
  std::string re = discover::filesRegex(targets(), target::loadChains(target::defaultRulesDir()));
  std::regex r(re);
  for (const char* p : {"python/sglang/srt/distributed/device_communicators/custom_all_reduce.py",
                        "python/sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py",
                        "python/sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py",
                        "python/sglang/srt/distributed/device_communicators/configs/custom_all_reduce_v2.py",
                        "python/sglang/kernels/ops/communication/all_reduce.py", "python/sglang/srt/environ.py",
                        "vllm/envs.py", "vllm/platforms/cuda.py", "vllm/distributed/device_communicators/quick_all_reduce.py",
                        "csrc/quickreduce/quick_reduce.h", "csrc/custom_all_reduce.cu", "kernels/all_reduce/custom_all_reduce.muh",
                        "csrc/torch_bindings.cpp", "sgl-kernel/csrc/common_extension.cc", "vllm/_custom_ops.py",
                        "python/sglang/srt/distributed/parallel_state.py", ".layergate.toml", "pyproject.toml"})
    EXPECT_TRUE(std::regex_search(p, r)) << p;
  for (const char* p : {"README.md", "tests/test_custom_all_reduce.py", "custom_all_reduce.pyc", "xcustom_all_reduce.py",
                        "vllm/model_executor/layers/linear.py", "csrc/attention_kernels.cu", "other/_custom_ops.py"})
    EXPECT_FALSE(std::regex_search(p, r)) << p;
}

// --- matching without a file system -------------------------------------------

TEST_F(Tree, LayoutTargetsPickTheirFilesAndTheFallbackOnlyWhenNothingElseMatches) {
  auto t = targets();
  auto units = discover::match({kSglangPy, kSglangCuh, "python/sglang/other.py"}, t);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].target, "sglang-sgl-kernel");
  EXPECT_EQ(units[0].python_files, std::vector<std::string>{kSglangPy});
  EXPECT_EQ(units[0].cpp_files, std::vector<std::string>{kSglangCuh});

  units = discover::match({kVllmPy, kVllmCuh, "csrc/libtorch_stable/custom_all_reduce.cu"}, t);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].target, "vllm-libtorch-stable");

  // Two checkouts side by side: SGLang without sgl-kernel on vLLM's ops.
  units = discover::match({"sglang/" + kSglangPy, "vllm/" + kVllmPy, "vllm/" + kVllmCuh, "vllm/csrc/custom_all_reduce.cu"}, t);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].target, "sglang-vllm-ops");
  EXPECT_EQ(units[0].cpp_files, std::vector<std::string>{"vllm/" + kVllmCuh});
  EXPECT_EQ(units[1].target, "vllm-csrc");

  // No known layout: the generic target pairs each gate with the nearest dispatch.
  units = discover::match({"a/custom_all_reduce.py", "a/custom_all_reduce.cuh", "b/c/custom_all_reduce.py",
                           "b/custom_all_reduce.cuh"},
                          t);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].target, "custom-allreduce");
  EXPECT_EQ(units[0].cpp_files, std::vector<std::string>{"a/custom_all_reduce.cuh"});
  EXPECT_EQ(units[1].cpp_files, std::vector<std::string>{"b/custom_all_reduce.cuh"});

  EXPECT_TRUE(discover::match({"a/custom_all_reduce.py", "README.md"}, t).empty());
}

// --- target inheritance ---------------------------------------------------------

TEST_F(Tree, BundledLayoutsInheritTheGenericDescription) {
  auto t = targets();
  std::vector<std::string> names;
  for (const auto& x : t) names.push_back(x.name);
  const std::vector<std::string> v1 = {"custom-allreduce", "sglang-sgl-kernel", "sglang-vllm-ops", "vllm-csrc",
                                        "vllm-libtorch-stable", "vendored-flashinfer", "vllm-fork-aphrodite",
                                        "sglang-trt-reduce"};
  for (const auto& n : v1) EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  // The 2026 gates (issue 13): a policy gate, and the layouts found but not modelled yet.
  for (const auto& x : t) {
    if (x.name == "flashinfer-pcie-ipc") {
      EXPECT_TRUE(x.python.class_names.empty());
      EXPECT_EQ(x.python.policy.functions, std::vector<std::string>{"get_pcie_ipc_launch_config"});
      EXPECT_EQ(x.python.policy.outputs.at("variant"), "variant");
      EXPECT_EQ(x.cpp.members.at("variant"), "variant");
      EXPECT_TRUE(x.unmodelled.empty());
    }
    if (x.name == "sglang-custom-ar-v2") {
      EXPECT_TRUE(x.unmodelled.empty()) << x.name;
      EXPECT_EQ(x.python.call_outputs.at("algo").call, "all_reduce");
      EXPECT_EQ(x.python.call_outputs.at("algo").argument, 2);
      EXPECT_EQ(x.cpp.preconditions, std::vector<std::string>{"RuntimeCheck"});
      EXPECT_EQ(x.cpp.members.at("algo"), "algo");
    }
    // its 2026-07 layout (the same model, other paths) and its first shape (found, no model)
    if (x.name == "sglang-custom-ar-v2-jit-kernel") {
      EXPECT_TRUE(x.unmodelled.empty());
      EXPECT_EQ(x.cpp.include_dirs, std::vector<std::string>{"python/sglang/jit_kernel/include"});
      EXPECT_EQ(x.python.call_outputs.at("algo").method, "custom_all_reduce");
    }
    // the first shape: two JIT modules behind one wrapper, a target each,
    // the pull one the calls whose algorithm is not a push
    if (x.name == "sglang-custom-ar-v2-object-pull" || x.name == "sglang-custom-ar-v2-object-push") {
      const bool push = x.name == "sglang-custom-ar-v2-object-push";
      EXPECT_TRUE(x.unmodelled.empty());
      EXPECT_EQ(x.python.call_outputs.at("shot").attribute, "shot");
      EXPECT_EQ(x.python.call_outputs.at("pushes").attribute, "is_push()");
      EXPECT_EQ(x.python.only_when.at("pushes"), push ? 1 : 0);
      EXPECT_EQ(x.cpp.class_names, std::vector<std::string>{push ? "CustomAllReducePush" : "CustomAllReducePull"});
    }
    if (x.name == "quick-allreduce") {
      EXPECT_TRUE(x.unmodelled.empty());
      EXPECT_EQ(x.python.outputs.at("qr_quant_level"), "quant_level");
    }
  }
  for (const auto& x : t) {
    if (std::find(v1.begin(), v1.end(), x.name) == v1.end()) continue;
    EXPECT_EQ(x.python.probes.at("is_full_nvlink"), "full_nvlink") << x.name;
    if (x.name == "sglang-trt-reduce") {
      // a free function template: no class, the ranks per node are the world size
      EXPECT_TRUE(x.cpp.class_names.empty());
      EXPECT_EQ(x.cpp.members.at("ranks_per_node"), "world_size");
    } else {
      EXPECT_EQ(x.cpp.dispatch_functions, std::vector<std::string>{"allreduce"}) << x.name;
    }
    EXPECT_FALSE(x.discovery.python_paths.empty()) << x.name;
    EXPECT_EQ(x.discovery.fallback, x.name == "custom-allreduce") << x.name;
  }
  auto fi = target::loadTarget(target::defaultRulesDir() + "/targets/vendored-flashinfer.json");
  EXPECT_EQ(fi.extends, "custom-allreduce");
  EXPECT_EQ(fi.cpp.members.count("fully_connected_"), 0u);  // null deletes the base's key
  EXPECT_EQ(fi.cpp.members.at("full_nvlink_"), "full_nvlink");
}

TEST_F(Tree, ExtendsErrorsAreOneLine) {
  const std::string base = R"({"name":"base","python":{"classes":["A"],"probes":{"p":"x"}},"cpp":{"classes":["B"],"dispatch_functions":["f"]}})";
  auto expectError = [&](const std::string& what) {
    try {
      target::loadTargets(root_.string());
      FAIL() << "no error, expected " << what;
    } catch (const InputError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(what), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  };
  put(root_ / "targets/base.json", base);
  put(root_ / "targets/a.json", R"({"name":"a","extends":"b"})");
  put(root_ / "targets/b.json", R"({"name":"b","extends":"a"})");
  expectError("cycle");
  put(root_ / "targets/b.json", R"({"name":"b","extends":"nosuch"})");
  expectError("unknown target 'nosuch'");
  put(root_ / "targets/b.json", R"({"name":"a"})");
  expectError("already used");
  put(root_ / "targets/b.json", R"({"name":"b","extends":"base","python":{"probes":{"q":"y"}}})");
  put(root_ / "targets/a.json", R"({"name":"a","extends":"b","discovery":{"python":["x.py"],"cpp":["x.cuh"]}})");
  auto t = target::loadTargets(root_.string());
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[0].python.probes.size(), 2u);  // inherited through two levels, merged key by key
  EXPECT_EQ(t[0].cpp.class_names, std::vector<std::string>{"B"});
  EXPECT_EQ(t[0].discovery.python_paths, std::vector<std::string>{"x.py"});
  EXPECT_TRUE(t[1].discovery.python_paths.empty());  // discovery is never inherited
}

// A user's --rules directory is read as strictly as the bundled one: a
// misspelled key is exit 2 with one line, not a target on its defaults.
TEST_F(Tree, AMisspelledKeyInAUsersTargetIsExitTwo) {
  fs::copy(target::defaultRulesDir(), root_ / "rules", fs::copy_options::recursive);
  std::string t = slurp(root_ / "rules/targets/quick-allreduce.json");
  auto at = t.find("\"platform\"");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 10, "\"plaform\"");
  put(root_ / "rules/targets/quick-allreduce.json", t);
  sglang(root_ / "tree");
  CliRun r = lgtest::runCli("check tree --rules rules", root_, 120);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("layergate: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("rules/targets/quick-allreduce.json: unknown key \"plaform\" (did you mean \"platform\"?)\n"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// --- the walk ---------------------------------------------------------------------

TEST_F(Tree, SglangCheckoutWithNoiseFindsOneGateAndSkipsCopiesAndLoops) {
  sglang(root_);
  noise(root_);
  fs::create_directories(root_ / "locked/inner");
  copyFixture("vllm-fork-pcie", "custom_all_reduce.py", root_ / "locked/inner/custom_all_reduce.py");
  ::chmod((root_ / "locked").c_str(), 0);  // root reads it anyway: then it must just not crash

  auto r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "sglang-sgl-kernel");
  EXPECT_EQ(r.units[0].python_files, std::vector<std::string>{kSglangPy});
  EXPECT_EQ(r.units[0].cpp_files, std::vector<std::string>{kSglangCuh});
  if (geteuid() != 0) {
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("locked"), std::string::npos);
  }
  for (const auto& c : r.candidates) {
    EXPECT_EQ(c.find("build/"), std::string::npos) << c;
    EXPECT_EQ(c.find(".git/"), std::string::npos) << c;
    EXPECT_EQ(c.find("loop/"), std::string::npos) << c;
    EXPECT_EQ(c.find("fixtures-link/"), std::string::npos) << c;
  }
}

TEST_F(Tree, TooManyFilesIsAClearInputError) {
  for (int i = 0; i < 30; ++i) put(root_ / ("d" + std::to_string(i % 3)) / ("f" + std::to_string(i)), "x");
  discover::Options o;
  o.max_files = 20;
  try {
    discover::discover(root_.string(), targets(), o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-files"), std::string::npos) << e.what();
  }
  o.max_files = 30;
  EXPECT_NO_THROW(discover::discover(root_.string(), targets(), o));
}

TEST_F(Tree, NothingFoundSaysWhatWasLookedFor) {
  noise(root_);
  auto t = targets();
  auto r = discover::discover(root_.string(), t);
  EXPECT_TRUE(r.units.empty());
  try {
    discover::requireUnits(r, t, "ROOT");
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("no layered gate found under ROOT (looked for:"), std::string::npos) << m;
    EXPECT_NE(m.find("custom_all_reduce.cuh"), std::string::npos) << m;
  }
  put(root_ / "src/custom_all_reduce.py", "class CustomAllreduce: pass\n");
  r = discover::discover(root_.string(), t);
  try {
    discover::requireUnits(r, t, "ROOT");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("found the Python gate src/custom_all_reduce.py but no C++ dispatch"),
              std::string::npos)
        << e.what();
  }
}

// --- scanning: discovery + analysis, root-relative results --------------------------

TEST_F(Tree, ScanAnalysesTheSglangGateWithRootRelativePaths) {
  sglang(root_);
  noise(root_);
  driver::ScanRequest req;
  req.root = root_.string();
  fs::path cwd = fs::current_path();
  auto s = driver::scan(req);
  EXPECT_EQ(fs::current_path(), cwd);  // the scan leaves the working directory as it was
  ASSERT_EQ(s.results.size(), 1u);
  const auto& r = s.results[0];
  EXPECT_EQ(r.target, "sglang-sgl-kernel");
  ASSERT_EQ(r.findings.size(), 3u);  // world sizes 4, 6, 8 over PCIe, as in fixtures/seed-force-pcie
  std::vector<int> ws;
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.rule, "LG001");
    ws.push_back(f.config.world_size.value_or(0));
    for (const auto& l : f.locations) {
      EXPECT_TRUE(l.file == kSglangPy || l.file == kSglangCuh) << l.file;
    }
  }
  EXPECT_EQ(ws, (std::vector<int>{4, 6, 8}));
  std::string text = driver::renderScanText(s, {});
  EXPECT_EQ(text.find(root_.string()), std::string::npos) << text;
}

TEST_F(Tree, VllmLayoutsAreToldApartByTheirOpsFile) {
  struct Case {
    std::string ops, target;
  } cases[] = {{"csrc/custom_all_reduce.cu", "vllm-csrc"},
               {"csrc/libtorch_stable/custom_all_reduce.cu", "vllm-libtorch-stable"},
               {"", "custom-allreduce"}};
  for (const auto& c : cases) {
    fs::remove_all(root_);
    vllm(root_, c.ops);
    noise(root_);
    driver::ScanRequest req;
    req.root = root_.string();
    auto s = driver::scan(req);
    ASSERT_EQ(s.results.size(), 1u) << c.target;
    EXPECT_EQ(s.units[0].target, c.target);
    EXPECT_EQ(s.units[0].python_files, std::vector<std::string>{kVllmPy});
    // The layout's .cu (the op entry) joins the dispatch header as part of
    // the flag's chain.
    std::vector<std::string> cpp{kVllmCuh};
    if (!c.ops.empty()) cpp.push_back(c.ops);
    EXPECT_EQ(s.units[0].cpp_files, cpp);
    // Upstream vLLM is consistent: no LG001/LG002. (The tree has no bindings
    // file, so the trace may stop with an LG006 warning.)
    for (const auto& f : s.results[0].findings) EXPECT_NE(f.severity, model::Severity::Error) << c.target << ": " << f.message;
  }
}

// --- the CLI ------------------------------------------------------------------------

// The same tree gives the same report wherever it lies: byte for byte from
// inside it; from elsewhere with its paths as seen from there (text, JSON),
// or, in SARIF, the same URIs relative to the scanned folder, which only
// originalUriBaseIds names.
TEST_F(Tree, CheckDirIsByteIdenticalAcrossRunsAndPlaces) {
  sglang(root_ / "a");
  noise(root_ / "a");
  sglang(root_ / "b");
  for (const char* fmt : {"text", "json", "sarif"}) {
    CliRun one = runCli(std::string("check . --format ") + fmt, root_ / "a");
    CliRun two = runCli(std::string("check . --format ") + fmt, root_ / "b");
    EXPECT_EQ(one.status, 1) << fmt << one.err;
    EXPECT_EQ(two.status, 1) << fmt << two.err;
    if (std::string(fmt) == "sarif") {
      json x = json::parse(one.out), y = json::parse(two.out);
      EXPECT_EQ(x["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"], "file://" + (root_ / "a").string() + "/");
      x["runs"][0].erase("originalUriBaseIds");
      y["runs"][0].erase("originalUriBaseIds");
      EXPECT_EQ(x, y);
      EXPECT_EQ(x.dump().find(root_.string()), std::string::npos);
      CliRun above = runCli("check a --format sarif", root_);
      json z = json::parse(above.out);
      z["runs"][0].erase("originalUriBaseIds");
      EXPECT_EQ(z, y);
    } else {
      EXPECT_EQ(one.out, two.out) << fmt;
      EXPECT_EQ(one.out.find(root_.string()), std::string::npos) << fmt;
    }
  }
  CliRun text = runCli("check a --no-matrix", root_);
  EXPECT_NE(text.out.find("a/" + kSglangPy + ":"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("target sglang-sgl-kernel"), std::string::npos) << text.out;
  CliRun j = runCli("check a --format json", root_);
  auto doc = json::parse(j.out);
  ASSERT_EQ(doc["analyses"].size(), 1u);
  EXPECT_EQ(doc["analyses"][0]["target"], "sglang-sgl-kernel");
  EXPECT_EQ(doc["analyses"][0]["inputs"]["python"][0], "a/" + kSglangPy);
  EXPECT_EQ(doc["summary"]["errors"], 1);  // one diagnostic, as the text report counts
  EXPECT_EQ(doc["summary"]["error_configurations"], 3);
}

TEST_F(Tree, CheckDirWithNothingExitsTwoWithOneLine) {
  noise(root_);
  CliRun r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no layered gate found under ."), std::string::npos) << r.err;
}

TEST_F(Tree, CheckClassifiesPositionalFilesAndForcesATarget) {
  sglang(root_);
  CliRun r = runCli("check --no-matrix " + kSglangCuh + " " + kSglangPy, root_);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("[LG001]"), std::string::npos);
  CliRun bad = runCli("check README.md", root_);
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
  CliRun forced = runCli("check . --target vendored-flashinfer --no-matrix", root_);
  EXPECT_EQ(forced.status, 1) << forced.err;
  EXPECT_NE(forced.out.find("(target vendored-flashinfer)"), std::string::npos) << forced.out;
  CliRun unknown = runCli("check . --target nosuch", root_);
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown target 'nosuch'"), std::string::npos) << unknown.err;
  CliRun both = runCli("check . --python " + kSglangPy, root_);
  EXPECT_EQ(both.status, 2);
}

// --- layouts of the real histories ------------------------------------------------

// SGLang from 2026-07: sgl-kernel under python/sglang/kernels/aot/, with a
// second header of the same name (a JIT kernel with no CustomAllreduce) that
// must not be taken as the dispatch. The chain comes in the layout's order;
// the files a version lacks (here _custom_ops.py) are left out.
TEST_F(Tree, SglangAotLayoutTakesItsChainAndNotTheJitHeader) {
  const std::string aot = "python/sglang/kernels/aot/";
  const std::string ops = "python/sglang/srt/distributed/device_communicators/custom_all_reduce_ops.py";
  copyFixture("seed-force-pcie", "custom_all_reduce.py", root_ / kSglangPy);
  copyFixture("sglang-upstream", "custom_all_reduce.cuh", root_ / (aot + "csrc/allreduce/custom_all_reduce.cuh"));
  put(root_ / "python/sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh", "template <int kWorldSize> struct AllReduceKernel {\n  static void run();\n};\n");
  put(root_ / ops, "import sgl_kernel.allreduce as _ar\n\ndef init_custom_ar(a, b, c, d):\n    return _ar.init_custom_ar(a, b, c, d)\n");
  put(root_ / (aot + "python/sgl_kernel/allreduce.py"), "def init_custom_ar(a, b, c, d):\n    pass\n");
  put(root_ / (aot + "csrc/allreduce/custom_all_reduce.cu"), "#include \"custom_all_reduce.cuh\"\n");
  put(root_ / (aot + "csrc/common_extension.cc"), "// bindings\n");
  auto r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "sglang-sgl-kernel");
  EXPECT_EQ(r.units[0].python_files,
            (std::vector<std::string>{kSglangPy, ops, aot + "python/sgl_kernel/allreduce.py"}));
  EXPECT_EQ(r.units[0].cpp_files,
            (std::vector<std::string>{aot + "csrc/allreduce/custom_all_reduce.cuh", aot + "csrc/allreduce/custom_all_reduce.cu",
                                      aot + "csrc/common_extension.cc"}));

  // Without the AOT header, the JIT one is no dispatch for the fallback either.
  fs::remove(root_ / (aot + "csrc/allreduce/custom_all_reduce.cuh"));
  r = discover::discover(root_.string(), targets());
  EXPECT_TRUE(r.units.empty());
  // (The JIT header is CustomAllReduceV2's dispatch by its path, so it is not
  // "rejected"; without custom_all_reduce_v2.py there is no V2 unit either.)
  EXPECT_TRUE(r.rejected.empty());
  // With the V2 gate beside it: a V2 unit, which `check` reports as present
  // and not analysed (no model yet).
  put(root_ / "python/sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py",
      "class CustomAllReduceV2:\n    pass\n");
  r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "sglang-custom-ar-v2");
  EXPECT_EQ(r.units[0].cpp_files,
            std::vector<std::string>{"python/sglang/kernels/jit/csrc/distributed/custom_all_reduce.cuh"});
}

// A port that keeps the dispatch in its own spelling (MUSA: .muh headers,
// .mu sources): the file at the layout's path with another dispatch
// extension is the dispatch when its text defines the class and the
// dispatch method; the report says the layout matched it by content.
TEST_F(Tree, PortDispatchInAnotherExtensionIsFoundByContent) {
  const std::string dir = "sgl-kernel/csrc/allreduce/";
  copyFixture("musa-port-dispatch", "custom_all_reduce.py", root_ / kSglangPy);
  copyFixture("musa-port-dispatch", "custom_all_reduce.muh", root_ / (dir + "custom_all_reduce.muh"));
  put(root_ / (dir + "custom_all_reduce.mu"), "#include \"custom_all_reduce.muh\"\n\nvoid all_reduce(long fa) {\n"
      "  auto* p = reinterpret_cast<vllm::CustomAllreduce*>(fa);\n  p->allreduce<float>(nullptr, nullptr, nullptr, 0);\n}\n");
  // Another header of the same stem that names the class but defines no dispatch method.
  put(root_ / "sgl-kernel/include/custom_all_reduce.hpp", "namespace vllm {\nclass CustomAllreduce {\n  int rank_;\n};\n}\n");
  auto r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "sglang-sgl-kernel");
  EXPECT_EQ(r.units[0].cpp_files, (std::vector<std::string>{dir + "custom_all_reduce.muh", dir + "custom_all_reduce.mu"}));
  EXPECT_NE(r.units[0].matched_by.find("by content: " + dir + "custom_all_reduce.muh defines CustomAllreduce::allreduce"),
            std::string::npos)
      << r.units[0].matched_by;

  CliRun c = runCli("check .", root_);
  EXPECT_EQ(c.status, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("(target sglang-sgl-kernel, dispatch found by content: " + dir + "custom_all_reduce.muh"),
            std::string::npos)
      << c.out;
  c = runCli("check . --format json", root_);
  json j = json::parse(c.out);
  EXPECT_EQ(j["analyses"][0]["layout"]["target"], "sglang-sgl-kernel");
  EXPECT_NE(j["analyses"][0]["layout"]["dispatch_found"].get<std::string>().find("by content"), std::string::npos);

  // With the CUDA header at the layout's own path, that one is the dispatch.
  copyFixture("sglang-upstream", "custom_all_reduce.cuh", root_ / (dir + "custom_all_reduce.cuh"));
  r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].cpp_files.front(), dir + "custom_all_reduce.cuh");
  EXPECT_EQ(r.units[0].matched_by, "");

  // A .muh that names the class without the dispatch method is no dispatch.
  fs::remove(root_ / (dir + "custom_all_reduce.cuh"));
  put(root_ / (dir + "custom_all_reduce.muh"), "namespace vllm {\nclass CustomAllreduce {\n  void register_buffer(void** ptrs);\n};\n}\n");
  r = discover::discover(root_.string(), targets());
  EXPECT_TRUE(r.units.empty());
}

// `dist/` is a build output and skipped, unless it is a Python package (it
// holds .py modules, with or without __init__.py): a kernel library may keep
// its gate under <pkg>/dist/.
TEST_F(Tree, DistPackageIsWalkedAndABuildDistIsNot) {
  copyFixture("vllm-upstream", "custom_all_reduce.py", root_ / "kernlib/dist/device_communicators/custom_all_reduce.py");
  copyFixture("vllm-upstream", "custom_all_reduce.cuh", root_ / "csrc/include/custom_all_reduce.cuh");
  put(root_ / "kernlib/dist/wheel/kernlib-1.0.tar.gz", "");
  put(root_ / "build_dist/dist/kernlib-1.0-py3-none-any.whl", "");
  auto r = discover::discover(root_.string(), targets());
  EXPECT_TRUE(r.units.empty());
  // A namespace package: .py modules and no __init__.py.
  put(root_ / "kernlib/dist/utils.py", "");
  r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].python_files.front(), "kernlib/dist/device_communicators/custom_all_reduce.py");

  // A quick all-reduce beside it, which its own layout finds: the generic
  // layout still takes the custom all-reduce gate no layout found.
  copyFixture("quick-allreduce", "vllm/distributed/device_communicators/quick_all_reduce.py",
              root_ / "kernlib/dist/device_communicators/quick_all_reduce.py");
  copyFixture("quick-allreduce", "csrc/quickreduce/quick_reduce.h", root_ / "csrc/quickreduce/quick_reduce.h");
  r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 2u);
  EXPECT_EQ(r.units[0].target, "custom-allreduce");
  EXPECT_EQ(r.units[1].target, "quick-allreduce");
}

// A package named builders/ is walked (only build trees by their usual
// names are skipped); what the checkout's .gitignore files leave out (the
// root's and a nested one) is not, and --verbose says so.
TEST_F(Tree, BuildersIsWalkedAndWhatGitIgnoresIsNot) {
  vllm(root_ / "builders/vllm");
  auto r = discover::discover(root_.string(), targets());
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "vllm-csrc");
  EXPECT_EQ(r.units[0].python_files, std::vector<std::string>{"builders/vllm/" + kVllmPy});
  EXPECT_TRUE(driver::gitIgnored(root_.string()).empty());  // not a checkout: the built-in skips alone
  fs::remove_all(root_ / "builders");

  if (std::system(("git -C " + quote(root_.string()) + " init -q 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no git";
  sglang(root_);
  vllm(root_ / "generated/vllm");                                    // ignored by the root's .gitignore
  copyFixture("vllm-fork-pcie", "custom_all_reduce.py", root_ / "python/old/custom_all_reduce.py");  // by python/.gitignore
  copyFixture("vllm-fork-pcie", "custom_all_reduce.cuh", root_ / "python/old/custom_all_reduce.cuh");
  copyFixture("vllm-fork-pcie", "custom_all_reduce.cuh", root_ / (kSglangCuh + ".orig"));
  put(root_ / ".gitignore", "generated/\n*.orig\n");
  put(root_ / "python/.gitignore", "old/\n");
  auto ignored = driver::gitIgnored(root_.string());
  EXPECT_EQ(ignored, (std::set<std::string>{"generated/", "python/old/", kSglangCuh + ".orig"}));
  discover::Options o;
  o.ignored = ignored;
  r = discover::discover(root_.string(), targets(), o);
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "sglang-sgl-kernel");
  for (const auto& c : r.candidates)
    EXPECT_TRUE(c.rfind("generated/", 0) != 0 && c.rfind("python/old/", 0) != 0) << c;
  EXPECT_NE(std::find(r.notes.begin(), r.notes.end(),
                      "2 paths skipped by .gitignore (git ls-files --ignored): generated/, python/old/"),
            r.notes.end())
      << ::testing::PrintToString(r.notes);
  // Without them: the vLLM checkout under generated/ is a second unit.
  EXPECT_EQ(discover::discover(root_.string(), targets()).units.size(), 2u);

  CliRun cli = runCli("check . --verbose --color never", root_);
  EXPECT_EQ(cli.status, 1) << cli.err;
  EXPECT_NE(cli.out.find("layergate: note: 2 paths skipped by .gitignore (git ls-files --ignored): generated/, python/old/\n"),
            std::string::npos)
      << cli.out;
  EXPECT_EQ(cli.out.find("generated/vllm/"), std::string::npos) << cli.out;
  // A tree named on the command line is scanned even where git ignores it.
  EXPECT_TRUE(driver::gitIgnored((root_ / "generated/vllm").string()).empty());
  cli = runCli("check generated/vllm --color never", root_);
  EXPECT_EQ(cli.status, 0) << cli.out << cli.err;
}

// The pre-merge lineage of vLLM's custom all-reduce spelled the class
// FastAllreduce (module-level gate, C++ class of the same name): found and
// analysed like the later spelling.
TEST_F(Tree, TheFallbackFindsItsChainBesideTheDispatchByContent) {
  // No layout names this tree: the entry that constructs the class and the op
  // registrations beside the header join the unit; other sources there do not.
  const fs::path at = root_ / "fork";
  copyFixture("node-sliced-handles", "custom_all_reduce.py", at / "pkg/custom_all_reduce.py");
  copyFixture("node-sliced-handles", "custom_all_reduce.cuh", at / "kernels/custom_all_reduce.cuh");
  copyFixture("node-sliced-handles", "custom_all_reduce.cu", at / "kernels/entry.cu");
  copyFixture("node-sliced-handles", "torch_bindings.cpp", at / "kernels/bind.cpp");
  put(at / "kernels/other.cu", "// mentions CustomAllreduce, constructs nothing\nint f() { return 0; }\n");
  auto r = discover::discover(at.string(), targets(), {});
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].target, "custom-allreduce");
  EXPECT_EQ(r.units[0].cpp_files,
            (std::vector<std::string>{"kernels/custom_all_reduce.cuh", "kernels/entry.cu", "kernels/bind.cpp"}));
  EXPECT_TRUE(r.units[0].chain_by_content);
  // Without an entry that constructs the class, nothing is added.
  fs::remove(at / "kernels/entry.cu");
  r = discover::discover(at.string(), targets(), {});
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].cpp_files, std::vector<std::string>{"kernels/custom_all_reduce.cuh"});
}

TEST_F(Tree, PreMergeClassSpellingIsAGate) {
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) {
    std::string text = slurp(fs::path(LAYERGATE_FIXTURES) / "vllm-2024-module-gate" / f);
    for (size_t at = text.find("CustomAllreduce"); at != std::string::npos; at = text.find("CustomAllreduce", at))
      text.replace(at, 15, "FastAllreduce");
    put(root_ / (std::string(f).back() == 'y' ? "vllm/model_executor/parallel_utils/" : "csrc/") / f, text);
  }
  CliRun r = runCli("check .", root_);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(target custom-allreduce)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 errors"), std::string::npos) << r.out;
}

// A gate that picks its op library per configuration: the configurations of
// a route to another library never meet the layout's dispatch ("not analysed
// here" there, never "no kernel"); a route whose C++ is in the tree (a JIT
// extension's sources) is analysed against that C++, one route not in the
// tree is said to be not analysed, in text, JSON and SARIF.
TEST_F(Tree, PerConfigurationRoutesAreCheckedAgainstTheirOwnDispatch) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "vllm-pcie-jit-route", root_, fs::copy_options::recursive);
  for (const char* f : {"expect.json", "golden.txt"}) fs::remove(root_ / f);
  CliRun r = runCli("check .", root_);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("[LG001]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in all, 2 gates: 0 errors, 0 warnings"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(target vllm-csrc, route: self._ops is load("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no gaps: 5 configurations admitted, each reaches a kernel; 3 routed elsewhere, not analysed here\n"),
            std::string::npos) << r.out;
  r = runCli("check . --matrix", root_);
  EXPECT_NE(r.out.find("  4     no     not analysed here (routed elsewhere)"), std::string::npos) << r.out;
  r = runCli("check . --format json", root_);
  json j = json::parse(r.out);
  ASSERT_EQ(j["analyses"].size(), 2u);
  const json& usual = j["analyses"][0];
  EXPECT_EQ(usual["route"]["op_module"], "vllm._custom_ops");
  EXPECT_EQ(usual["route"]["cpp_entry"], "csrc/custom_all_reduce.cu:20");
  ASSERT_EQ(usual["routes_elsewhere"].size(), 1u);
  EXPECT_EQ(usual["routes_elsewhere"][0]["kind"], "JIT extension");
  EXPECT_EQ(usual["routes_elsewhere"][0]["cpp_sources"][0],
            "vllm/distributed/device_communicators/pcie_ar/pcie_all_reduce.cu");
  const json& jit = j["analyses"][1];
  EXPECT_NE(jit["route"]["op_module"].get<std::string>().find("load("), std::string::npos) << jit["route"];
  for (const auto& m : jit["matrix"])
    if (m["world_size"] == 4 && m["full_nvlink"] == false) {
      EXPECT_EQ(m["gate"]["state"], "admitted") << m;
      bool launch = false, none = false;
      for (const auto& d : m["dispatch"]) {
        launch |= d["kind"] == "launch" && d["kernel"] == "cross_device_reduce_1stage";
        none |= d["kind"] == "none";
      }
      EXPECT_TRUE(launch && !none) << m;
    }
  EXPECT_EQ(jit["route"]["cpp_entry"], "vllm/distributed/device_communicators/pcie_ar/pcie_all_reduce.cu");
  for (const auto& m : usual["matrix"]) {
    if (m["world_size"] == 6 && m["full_nvlink"] == false) {
      EXPECT_TRUE(m.contains("not_analysed_here")) << m;
    }
  }

  // The route's library is not in the tree: its cells are not analysed, and
  // the run says so (a SARIF notification); still no LG001.
  fs::remove_all(root_);
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "vllm-pcie-route-not-in-tree", root_, fs::copy_options::recursive);
  r = runCli("check . --verbose", root_);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("[LG001]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not analysed here: the configurations where self._ops is pcie_allreduce_kernels"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 not analysed"), std::string::npos) << r.out;
  r = runCli("check . --format sarif", root_);
  json sarif = json::parse(r.out);
  std::string notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"].dump();
  EXPECT_NE(notes.find("not analysed here"), std::string::npos) << notes;
}

// The route's library is a package the gate imports, whose __init__.py builds
// a JIT extension from its own .cu at import and re-exports its functions:
// its cells are analysed against that .cu's dispatch, not the usual one (no
// LG001 there), whichever way the gate imports it and chooses per box.
TEST_F(Tree, RouteToAnImportedPackageThatBuildsAJitExtension) {
  const std::string gate = "vllm/distributed/device_communicators/custom_all_reduce.py";
  const std::string init = "vllm/distributed/device_communicators/pcie_ops/__init__.py";
  const std::string pkg = "vllm.distributed.device_communicators.pcie_ops";
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "vllm-pcie-jit-package", root_, fs::copy_options::recursive);
  for (const char* f : {"expect.json", "golden.txt", "golden-verbose.txt"}) fs::remove(root_ / f);
  const std::string gateText = slurp(root_ / gate), initText = slurp(root_ / init);
  auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  const std::string import = "from vllm.distributed.device_communicators import pcie_ops\n";
  const std::string choice = "        self._ops = pcie_ops if not self.full_nvlink else ops\n";
  struct Form {
    std::string what, import, choice, init, module;
  };
  const std::vector<Form> forms = {
      {"the fixture as written", import, choice, "", pkg},
      {"a relative import, if/else assignments", "from . import pcie_ops\n",
       "        if not self.full_nvlink:\n            self._ops = pcie_ops\n        else:\n            self._ops = ops\n", "",
       pkg},
      {"import ... as, a dict lookup", "import vllm.distributed.device_communicators.pcie_ops as pcie_ops\n",
       "        self._ops = {True: ops, False: pcie_ops}[self.full_nvlink]\n", "", pkg},
      {"the package's _C itself", import, "        self._ops = pcie_ops._C if not self.full_nvlink else ops\n", "",
       "pcie_ops._C"},
      {"the extension's name spelled out", import, choice, "_C = torch.utils.cpp_extension.load(name=\"pcie_ar\", sources=[os.path.join(_dir, \"pcie_ar.cu\")])\n",
       pkg},
  };
  for (const auto& f : forms) {
    SCOPED_TRACE(f.what);
    put(root_ / gate, replaced(replaced(gateText, import, f.import), choice, f.choice));
    put(root_ / init, f.init.empty() ? initText
                                     : replaced(initText,
                                                "_C = torch.utils.cpp_extension.load(name=\"pcie_ar\", sources=[os.path.join(_dir, \"pcie_ar.cu\")],\n"
                                                "                                    extra_cuda_cflags=[\"-O3\"])\n",
                                                f.init));
    CliRun r = runCli("check .", root_);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("[LG001]"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("not analysed:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("in all, 2 gates: 0 errors, 0 warnings"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(target vllm-csrc, route: self._ops is " + f.module + ")"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("no gaps: 4 configurations admitted, each reaches a kernel; 4 routed elsewhere, not analysed here\n"),
              std::string::npos)
        << r.out;
    r = runCli("check . --format json", root_);
    json j = json::parse(r.out);
    ASSERT_EQ(j["analyses"].size(), 2u) << r.out;
    const json& usual = j["analyses"][0];
    ASSERT_EQ(usual["routes_elsewhere"].size(), 1u) << usual;
    EXPECT_EQ(usual["routes_elsewhere"][0]["kind"], "JIT extension");
    EXPECT_EQ(usual["routes_elsewhere"][0]["cpp_sources"],
              json::array({"vllm/distributed/device_communicators/pcie_ops/pcie_ar.cu"}));
    for (const auto& m : usual["matrix"])
      if (m["full_nvlink"] == false && m["world_size"].get<int>() % 2 == 0) EXPECT_TRUE(m.contains("not_analysed_here")) << m;
    // The PCIe cells against the package's own .cu: a kernel for each.
    const json& jit = j["analyses"][1];
    EXPECT_EQ(jit["route"]["cpp_entry"], "vllm/distributed/device_communicators/pcie_ops/pcie_ar.cu");
    int launched = 0;
    for (const auto& m : jit["matrix"])
      if (m["full_nvlink"] == false && m["world_size"].get<int>() % 2 == 0) {
        EXPECT_EQ(m["gate"]["state"], "admitted") << m;
        for (const auto& d : m["dispatch"]) launched += d["kind"] == "launch" ? 1 : 0;
      }
    EXPECT_GE(launched, 4) << jit["matrix"];
  }
}

// The package's dispatch lost its PCIe kernel: the route's own analysis
// reports the cells that reach no kernel there (the usual analysis still
// leaves them out).
TEST_F(Tree, RouteToAnImportedPackageReportsItsOwnGaps) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "vllm-pcie-jit-package-no-kernel", root_, fs::copy_options::recursive);
  for (const char* f : {"expect.json", "golden.txt", "golden-verbose.txt"}) fs::remove(root_ / f);
  CliRun r = runCli("check . --format json", root_);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["analyses"].size(), 2u) << r.out;
  for (const auto& f : j["analyses"][0]["findings"]) EXPECT_NE(f["severity"], "error") << f;
  std::set<std::pair<int, bool>> cells;
  for (const auto& f : j["analyses"][1]["findings"])
    if (f["rule"] == "LG001") cells.insert({f["config"]["world_size"].get<int>(), f["config"]["full_nvlink"].get<bool>()});
  EXPECT_EQ(cells, (std::set<std::pair<int, bool>>{{4, false}, {6, false}, {8, false}})) << j["analyses"][1]["findings"];
}

// Aphrodite (a vLLM fork): kernels/all_reduce/ in 2024, aphrodite_kernels/csrc/
// in 2025-11, csrc/all_reduce/ in 2026 beside a stale csrc/custom_all_reduce.cuh.
TEST_F(Tree, AphroditeLayoutsOfEachYear) {
  auto t = targets();
  auto units = discover::match({"aphrodite/modeling/megatron/custom_all_reduce.py", "kernels/all_reduce/custom_all_reduce.cuh",
                                "kernels/all_reduce/custom_all_reduce.cu", "kernels/pybind.cpp", "kernels/cpu/pybind.cpp"},
                               t);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].target, "vllm-fork-aphrodite");
  EXPECT_EQ(units[0].cpp_files, (std::vector<std::string>{"kernels/all_reduce/custom_all_reduce.cuh",
                                                          "kernels/all_reduce/custom_all_reduce.cu", "kernels/pybind.cpp"}));
  const std::string gate = "aphrodite/distributed/device_communicators/custom_all_reduce.py";
  units = discover::match({gate, "aphrodite/_custom_ops.py", "aphrodite_kernels/aphrodite_kernels/_custom_ops.py",
                           "aphrodite_kernels/csrc/all_reduce/custom_all_reduce.cuh",
                           "aphrodite_kernels/csrc/all_reduce/custom_all_reduce.cu", "aphrodite_kernels/csrc/torch_bindings.cpp"},
                          t);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].target, "vllm-fork-aphrodite");
  EXPECT_EQ(units[0].python_files,
            (std::vector<std::string>{gate, "aphrodite/_custom_ops.py", "aphrodite_kernels/aphrodite_kernels/_custom_ops.py"}));
  EXPECT_EQ(units[0].cpp_files.front(), "aphrodite_kernels/csrc/all_reduce/custom_all_reduce.cuh");
  EXPECT_EQ(units[0].cpp_files.size(), 3u);
  units = discover::match({gate, "aphrodite/_custom_ops.py", "csrc/custom_all_reduce.cuh", "csrc/custom_all_reduce.cu",
                           "csrc/all_reduce/custom_all_reduce.cuh", "csrc/all_reduce/custom_all_reduce.cu",
                           "csrc/torch_bindings.cpp", "csrc/rocm/torch_bindings.cpp"},
                          t);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].target, "vllm-fork-aphrodite");
  EXPECT_EQ(units[0].cpp_files, (std::vector<std::string>{"csrc/all_reduce/custom_all_reduce.cuh",
                                                          "csrc/all_reduce/custom_all_reduce.cu", "csrc/torch_bindings.cpp"}));
}

// FlashInfer's copy of the vLLM header, in each place it had: a gate beside
// it is paired with it by the vendored layout.
TEST_F(Tree, VendoredFlashinferHeaderInEachPlace) {
  auto t = targets();
  for (const char* h : {"include/flashinfer/comm/custom_all_reduce.cuh", "include/flashinfer/distributed/custom_all_reduce.cuh",
                        "include/flashinfer/comm/vllm_custom_all_reduce.cuh"}) {
    auto units = discover::match({"app/custom_all_reduce.py", std::string("flashinfer/") + h}, t);
    ASSERT_EQ(units.size(), 1u) << h;
    EXPECT_EQ(units[0].target, "vendored-flashinfer") << h;
    EXPECT_EQ(units[0].cpp_files, std::vector<std::string>{std::string("flashinfer/") + h});
  }
}

// A custom_all_reduce.py of module-level forwarders and no class (FlashInfer
// 2025-04..05) is an op wrapper, not a gate: exit 2 names the dispatch found
// and says why the .py was not taken.
TEST_F(Tree, ClassLessOpWrapperIsNotTakenAsTheGate) {
  put(root_ / "flashinfer/custom_all_reduce.py",
      "_mod = None\n\ndef init_custom_ar(ptrs, rank_data, rank, full_nvlink):\n    return _mod.init_custom_ar(ptrs, rank_data, rank, full_nvlink)\n\n"
      "def dispose(fa):\n    _mod.dispose(fa)\n");
  copyFixture("vllm-upstream", "custom_all_reduce.cuh", root_ / "include/flashinfer/distributed/custom_all_reduce.cuh");
  CliRun r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("found the C++ dispatch include/flashinfer/distributed/custom_all_reduce.cuh but no Python gate"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("flashinfer/custom_all_reduce.py is not one: no class CustomAllreduce or CustomAllReduce or FastAllreduce "
                       "(2 module-level functions and no class: an op-wrapper module, not a gate)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--python FILE"), std::string::npos) << r.err;

  // Renamed (2025-06 on): found under its new name.
  fs::remove_all(root_ / "include");
  fs::remove_all(root_ / "flashinfer");
  copyFixture("vllm-upstream", "custom_all_reduce.cuh", root_ / "include/flashinfer/comm/vllm_custom_all_reduce.cuh");
  r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("found the C++ dispatch include/flashinfer/comm/vllm_custom_all_reduce.cuh but no Python gate"),
            std::string::npos)
      << r.err;
}

// SGLang 2024-12..2025-04: a gate whose ops module forwards to kernels with no
// custom_all_reduce.cuh in the tree. The message follows the gate's import to
// the op module and names where its functions forward.
TEST_F(Tree, GateWithoutDispatchNamesItsOpModule) {
  put(root_ / kSglangPy,
      "from sglang.srt import _custom_ops as ops\nfrom sglang.srt.utils import is_cuda\n\n"
      "class CustomAllreduce:\n    def __init__(self, group):\n        self.disabled = True\n"
      "        self._ptr = ops.init_custom_ar([], None, 0, True)\n        ops.register_buffer(self._ptr, [])\n");
  put(root_ / "python/sglang/srt/_custom_ops.py",
      "import torch\n\nif True:\n    def init_custom_ar(ipc, rank_data, rank, full_nvlink):\n"
      "        return torch.ops._C_vllm_ar.init_custom_ar(ipc, rank_data, rank, full_nvlink)\n\n"
      "def register_buffer(fa, ptrs):\n    # forwards\n    sgl_kernel.ops.register_buffer(fa, ptrs)\n\n"
      "def unused(x):\n    return other.ns.unused(x)\n");
  put(root_ / "python/sglang/srt/utils.py", "def is_cuda():\n    return True\n");
  CliRun r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("found the Python gate " + kSglangPy + " but no C++ dispatch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the gate's ops come from python/sglang/srt/_custom_ops.py, which forwards to "
                       "torch.ops._C_vllm_ar, sgl_kernel.ops (a checkout beside it with csrc/custom_all_reduce.cuh "
                       "would be found by the sglang-vllm-ops layout); name it with --cpp FILE"),
            std::string::npos)
      << r.err;

  // A relative import resolves from the gate's package; no op module in the
  // tree: the message says only what was found.
  fs::remove_all(root_ / "python");
  put(root_ / "pkg/custom_all_reduce.py",
      "from . import my_ops as ops\n\nclass CustomAllreduce:\n    def __init__(self):\n        ops.init_custom_ar(1)\n");
  put(root_ / "pkg/my_ops.py", "def init_custom_ar(x):\n    return torch.ops.my_ext.init_custom_ar(x)\n");
  r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("the gate's ops come from pkg/my_ops.py, which forwards to torch.ops.my_ext"), std::string::npos) << r.err;
  fs::remove(root_ / "pkg/my_ops.py");
  r = runCli("check .", root_);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find("ops come from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("found the Python gate pkg/custom_all_reduce.py but no C++ dispatch"), std::string::npos) << r.err;
}

// The seed on the 2026 SGLang shape, as a CI job meets it: a checkout tree
// (ours: fixtures/sglang-helper-module-pcie, copied under a fresh root with
// noise beside it) whose world-size and NVLink checks live in a helper
// module that no layout names. `check DIR` must follow the gate's import to
// the helper, find LG001 for 4, 6 and 8 PCIe GPUs with the env var, and
// nothing else at error level.
TEST_F(Tree, SeedOnTheHelperModuleShapeGivesExactlyTheThreeLG001s) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "sglang-helper-module-pcie", root_, fs::copy_options::recursive);
  fs::remove(root_ / "expect.json");
  fs::remove(root_ / "golden.txt");
  noise(root_);
  driver::ScanRequest req;
  req.root = root_.string();
  auto s = driver::scan(req);
  ASSERT_EQ(s.results.size(), 1u);
  const auto& r = s.results[0];
  EXPECT_EQ(r.target, "sglang-sgl-kernel");
  std::vector<int> ws;
  for (const auto& f : r.findings) {
    if (f.severity != model::Severity::Error) continue;
    EXPECT_EQ(f.rule, "LG001") << f.message;
    EXPECT_FALSE(f.config.full_nvlink.value_or(true));
    ASSERT_EQ(f.config.env.size(), 1u);
    EXPECT_EQ(f.config.env[0].first, "SGLANG_FORCE_CUSTOM_AR_PCIE");
    ws.push_back(f.config.world_size.value_or(0));
  }
  EXPECT_EQ(ws, (std::vector<int>{4, 6, 8}));
  // The NVLink flag's trace starts at the probe inside the helper module,
  // which was read from disk by following the gate's import.
  ASSERT_FALSE(r.trace.empty());
  EXPECT_EQ(r.trace.front().hop, "probe");
  EXPECT_NE(r.trace.front().where.file.find("custom_all_reduce_utils.py"), std::string::npos)
      << r.trace.front().where.file;
}

// The first CustomAllReduceV2 (ours: fixtures/sglang-custom-ar-v2-object):
// `check DIR` finds one gate over two JIT modules, analyses each with the
// calls it receives (push: is_push(); pull: the rest, with algo.shot), and
// the gate's table, filled through `global` on first use, is read: every
// world size of the table admitted with NVLink, the push module up to the
// clipped push limit, no finding.
TEST_F(Tree, TheFirstCustomAllReduceV2IsTwoUnitsOneGate) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "sglang-custom-ar-v2-object", root_, fs::copy_options::recursive);
  fs::remove(root_ / "expect.json");
  fs::remove(root_ / "golden.txt");
  noise(root_);
  driver::ScanRequest req;
  req.root = root_.string();
  auto s = driver::scan(req);
  ASSERT_EQ(s.results.size(), 2u);
  std::set<std::string> targets;
  for (const auto& r : s.results) {
    targets.insert(r.target);
    EXPECT_TRUE(r.findings.empty()) << r.target;
    const bool push = r.target == "sglang-custom-ar-v2-object-push";
    for (const auto& v : r.matrix) {
      const bool admitted = v.gate.state == solve::GateState::Admitted;
      const int ws = v.cell.world_size;
      EXPECT_EQ(admitted, v.cell.full_nvlink && (ws == 2 || ws == 4 || ws == 8)) << r.target << " ws " << ws;
      if (admitted && push) {
        ASSERT_TRUE(v.gate.sizes.has_value());
        EXPECT_EQ(v.gate.sizes->hi, ws == 2 ? 2 << 20 : ws == 4 ? 1 << 20 : 512 << 10) << ws;
      }
    }
  }
  EXPECT_EQ(targets, (std::set<std::string>{"sglang-custom-ar-v2-object-pull", "sglang-custom-ar-v2-object-push"}));
}

// Early-2025 SGLang: no custom_all_reduce.cuh, sgl-kernel's trt_reduce
// dispatch instead; the op module picks its ops at import time from an env
// var. Found by the sglang-trt-reduce layout; the planted world size 3 is the
// only error, and the other op library's configurations are said to be left out.
TEST_F(Tree, EarlySglangTreeOnTrtReduceIsAnalysedWithItsOpChoice) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "sglang-trt-reduce-ws3", root_, fs::copy_options::recursive);
  fs::remove(root_ / "expect.json");
  fs::remove(root_ / "golden.txt");
  noise(root_);
  driver::ScanRequest req;
  req.root = root_.string();
  auto s = driver::scan(req);
  ASSERT_EQ(s.results.size(), 1u);
  const auto& r = s.results[0];
  EXPECT_EQ(r.target, "sglang-trt-reduce");
  std::vector<std::pair<int, bool>> cells;
  for (const auto& f : r.findings)
    if (f.severity == model::Severity::Error)
      cells.push_back({static_cast<int>(f.config.world_size.value_or(0)), f.config.full_nvlink.value_or(false)});
  EXPECT_EQ(cells, (std::vector<std::pair<int, bool>>{{3, true}}));
  bool said = false;
  for (const auto& n : r.gate.notes) said |= n.find("not checked") != std::string::npos && n.find("take_other_ops") != std::string::npos;
  EXPECT_TRUE(said);
}

// A FlashInfer-shaped tree (issue 13): the PCIe IPC policy and its header are
// found by the flashinfer-pcie-ipc layout and analysed as a policy gate; the
// planted variant gives its one error. A gate of a layout with no model yet
// beside them is present and not analysed: said in every format, never
// counted as clean.
TEST_F(Tree, PolicyGateIsFoundAndAnUnmodelledOneIsSaid) {
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "flashinfer-pcie-ipc-flat4", root_, fs::copy_options::recursive);
  fs::remove(root_ / "expect.json");
  fs::remove(root_ / "golden.txt");
  noise(root_);
  driver::ScanRequest req;
  req.root = root_.string();
  auto s = driver::scan(req);
  ASSERT_EQ(s.results.size(), 1u);
  EXPECT_EQ(s.results[0].target, "flashinfer-pcie-ipc");
  ASSERT_EQ(s.results[0].findings.size(), 1u);
  EXPECT_EQ(s.results[0].findings[0].rule, "LG001");
  EXPECT_EQ(s.results[0].findings[0].config.world_size, 4);
  EXPECT_TRUE(s.unanalysed.empty());

  // A layout whose target says it has no model yet (a rules directory of
  // our own: the bundled targets plus one marked "unmodelled").
  fs::path rules = root_.parent_path() / (root_.filename().string() + "-rules");
  fs::remove_all(rules);
  fs::copy(fs::path(LAYERGATE_SOURCE_DIR) / "rules", rules, fs::copy_options::recursive);
  put(rules / "targets/later-allreduce.json",
      R"({"name": "later-allreduce", "description": "a layout found but not modelled yet",
          "unmodelled": "no model of LaterAllReduce yet",
          "discovery": {"python": ["later/later_all_reduce.py"], "cpp": ["later/later_all_reduce.cuh"]}})");
  const char* had = std::getenv("LAYERGATE_RULES");
  std::string saved = had ? had : "";
  setenv("LAYERGATE_RULES", rules.c_str(), 1);
  put(root_ / "later/later_all_reduce.py", "class LaterAllReduce:\n    pass\n");
  put(root_ / "later/later_all_reduce.cuh", "struct PushKernel {};\n");
  s = driver::scan(req);
  ASSERT_EQ(s.results.size(), 1u);
  ASSERT_EQ(s.unanalysed.size(), 1u);
  EXPECT_EQ(s.unanalysed[0].unit.target, "later-allreduce");
  EXPECT_TRUE(s.unanalysed[0].unmodelled);
  report::TextOptions o;
  std::string text = driver::renderScanText(s, o);
  EXPECT_NE(text.find("(target later-allreduce) is present and NOT analysed"), std::string::npos) << text;
  EXPECT_NE(text.find("; 1 not analysed"), std::string::npos) << text;
  auto j = nlohmann::json::parse(driver::renderScanJson(s));
  EXPECT_EQ(j["summary"]["not_analysed"], 1);
  EXPECT_EQ(j["not_analysed"][0]["kind"], "no model");
  report::HtmlOptions ho;
  ho.file_base = ho.page_dir = root_.string();
  EXPECT_NE(driver::renderScanHtml(s, ho).find("is present and NOT analysed"), std::string::npos);
  auto sarif = nlohmann::json::parse(driver::renderScanSarif(s));
  EXPECT_EQ(sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["level"], "warning");

  // Only the unmodelled gate: nothing analysed, a one-line error (exit 2).
  fs::remove_all(root_ / "flashinfer");
  fs::remove_all(root_ / "include");
  try {
    driver::scan(req);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is present but not analysed"), std::string::npos) << e.what();
  }
  if (had) setenv("LAYERGATE_RULES", saved.c_str(), 1);
  else unsetenv("LAYERGATE_RULES");
  fs::remove_all(rules);
}

// --- a policy gate's module -------------------------------------------------------

// A platform module (vllm/platforms/rocm.py) holds the paged-attention gate
// only in the versions that define its function: older ones are not a gate.
TEST_F(Tree, APolicyTargetTakesItsModuleOnlyWhereItDefinesThePolicy) {
  auto t = targets();
  const fs::path fx = fs::path(LAYERGATE_FIXTURES) / "rocm-paged-attention";
  put(root_ / "vllm/platforms/rocm.py", "def on_gfx9():\n    return True\n");
  fs::create_directories(root_ / "csrc/rocm");
  fs::copy_file(fx / "csrc/rocm/attention.cu", root_ / "csrc/rocm/attention.cu");
  auto found = discover::discover(root_.string(), t);
  for (const auto& u : found.units) EXPECT_NE(u.target, "rocm-paged-attention") << u.python_files[0];
  fs::copy_file(fx / "vllm/platforms/rocm.py", root_ / "vllm/platforms/rocm.py", fs::copy_options::overwrite_existing);
  found = discover::discover(root_.string(), t);
  bool taken = false;
  for (const auto& u : found.units)
    if (u.target == "rocm-paged-attention") {
      taken = true;
      EXPECT_EQ(u.python_files, std::vector<std::string>{"vllm/platforms/rocm.py"});
      EXPECT_EQ(u.cpp_files, std::vector<std::string>{"csrc/rocm/attention.cu"});
    }
  EXPECT_TRUE(taken);
}
