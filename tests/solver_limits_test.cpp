// End-to-end tests of the solver's limits: a verdict (and a give-up, LG007)
// is the same whatever the job count, the machine's load or the run, because
// Z3 is bounded by its resource limit (--solver-rlimit), never by the clock;
// and a dispatch of many `if constexpr` launch blocks is solved in time near
// linear in its size.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "CliRunner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;

CliRun layergate(const std::string& args, int seconds = 120) {
  return lgtest::runCli(args, LAYERGATE_FIXTURES, seconds);
}

std::string check(const std::string& fixture, const std::string& extra) {
  return "check --python " + quote(fixture + "/custom_all_reduce.py") + " --cpp " +
         quote(fixture + "/custom_all_reduce.cuh") + " --isolated " + extra;
}

// A fresh directory under the system's temporary one, removed at exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// fixtures/vllm-if-constexpr-launch with its `if constexpr` launch block
// repeated n times, each for another message size and element type.
void writeConstexprDispatch(const fs::path& dir, int n) {
  const fs::path src = fs::path(LAYERGATE_FIXTURES) / "vllm-if-constexpr-launch";
  fs::copy_file(src / "custom_all_reduce.py", dir / "custom_all_reduce.py");
  std::istringstream in(slurp(src / "custom_all_reduce.cuh"));
  std::string line, before, block, after;
  int depth = 0;
  enum { Before, Block, After } at = Before;
  while (std::getline(in, line)) {
    line += "\n";
    if (at == Before && line.find("if constexpr (std::is_same_v<T, half>)") != std::string::npos) at = Block;
    if (at == Before) before += line;
    if (at == After) after += line;
    if (at != Block) continue;
    block += line;
    depth += static_cast<int>(std::count(line.begin(), line.end(), '{') - std::count(line.begin(), line.end(), '}'));
    if (depth == 0) at = After;
  }
  ASSERT_FALSE(block.empty());
  std::string out = before;
  const char* types[] = {"half", "__nv_bfloat16", "float"};
  for (int i = 0; i < n; ++i) {
    std::string b = std::regex_replace(block, std::regex("is_same_v<T, half>"),
                                       std::string("is_same_v<T, ") + types[i % 3] + ">");
    out += std::regex_replace(b, std::regex("bytes == 43008"), "bytes == " + std::to_string(43008 + 1024 * i));
  }
  std::ofstream(dir / "custom_all_reduce.cuh") << out + after;
}

}  // namespace

// The same report, byte for byte, with one job and with as many as there
// are CPUs, in JSON and in text, findings and matrix included.
TEST(SolverLimits, OneJobAndManyGiveTheSameBytes) {
  for (const char* format : {"json", "text --matrix --color never"}) {
    CliRun one = layergate(check("seed-force-pcie", std::string("-j1 --format ") + format));
    CliRun many = layergate(check("seed-force-pcie", std::string("--format ") + format));
    ASSERT_EQ(one.status, 1) << one.out << one.err;
    EXPECT_EQ(one.status, many.status);
    EXPECT_EQ(one.out, many.out) << format;
    EXPECT_EQ(one.err, many.err) << format;
  }
  // A directory of gates: analyses run at once by default.
  CliRun one = layergate("check --isolated --format json -j1 seed-force-pcie vllm-upstream");
  CliRun many = layergate("check --isolated --format json seed-force-pcie vllm-upstream");
  EXPECT_EQ(one.status, many.status);
  EXPECT_EQ(one.out, many.out);
}

// A resource limit too small for any query: every cell is undecided (LG007),
// the message names the limit and how to raise it, and two runs (one with
// one job, one with many) say exactly the same.
TEST(SolverLimits, ATinyRlimitIsTheSameLg007EveryRun) {
  CliRun a = layergate(check("seed-force-pcie", "--solver-rlimit 1 --format json -j1"));
  CliRun b = layergate(check("seed-force-pcie", "--solver-rlimit 1 --format json"));
  ASSERT_EQ(a.out, b.out);
  ASSERT_EQ(a.err, b.err);
  json j = json::parse(a.out);
  int undecided = 0;
  for (const auto& f : j["findings"]) {
    if (f["rule"] != "LG007") continue;
    ++undecided;
    std::string m = f["message"];
    EXPECT_NE(m.find("resource limit (rlimit 1 per query)"), std::string::npos) << m;
    EXPECT_NE(m.find("raise --solver-rlimit"), std::string::npos) << m;
    EXPECT_NE(m.find("solver-rlimit in the configuration file"), std::string::npos) << m;
  }
  EXPECT_GT(undecided, 0) << a.out;
  // No proof is drawn from a query Z3 gave up on.
  for (const auto& f : j["findings"]) EXPECT_NE(f["rule"], "LG001") << f.dump();

  // The configuration file's key does the same, and the command line wins.
  TempDir dir("lg_rlimit");
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
    fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie" / f, dir.path / f);
  std::ofstream(dir.path / ".layergate.toml") << "solver-rlimit = 1\n";
  auto run = [&](const std::string& extra) {
    return lgtest::runCli("check --python custom_all_reduce.py --cpp custom_all_reduce.cuh --format json " + extra,
                          dir.path);
  };
  CliRun c = run("");
  EXPECT_NE(c.out.find("rlimit 1 per query"), std::string::npos) << c.out << c.err;
  CliRun d = run("--solver-rlimit 50000000");
  EXPECT_EQ(d.status, 1) << d.out << d.err;
  EXPECT_EQ(d.out.find("LG007"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("LG001"), std::string::npos) << d.out;
  CliRun shown = lgtest::runCli("check --show-settings custom_all_reduce.py", dir.path);
  EXPECT_NE(shown.out.find("solver-rlimit"), std::string::npos) << shown.out << shown.err;

  std::ofstream(dir.path / ".layergate.toml") << "solver-rlimit = \"lots\"\n";
  CliRun bad = run("");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("'solver-rlimit' must be an integer"), std::string::npos) << bad.err;
}

// The old time limit is gone (a verdict must not depend on the clock): a
// clear error that names its replacement.
TEST(SolverLimits, TimeoutMsIsAnErrorThatNamesTheResourceLimit) {
  CliRun r = layergate(check("seed-force-pcie", "--timeout-ms 100"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lgtest::lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--solver-rlimit"), std::string::npos) << r.err;
  CliRun zero = layergate(check("seed-force-pcie", "--solver-rlimit 0"));
  EXPECT_EQ(zero.status, 2) << zero.err;
}

// 24 `if constexpr` launch blocks in one dispatch, checked as a user runs it
// (the text report): each leaf's condition is translated and scanned once per
// analysis, not once per cell and question. About a second in a Release build
// on the 2-core machine; the bound is the time budget of one gate's analysis
// (10 s), three times that under the sanitizers.
TEST(SolverLimits, ManyIfConstexprLaunchBlocksAreSolvedInBoundedTime) {
  TempDir dir("lg_constexpr24");
  writeConstexprDispatch(dir.path, 24);
  const auto t0 = std::chrono::steady_clock::now();
  CliRun r = lgtest::runCli("check --isolated --python custom_all_reduce.py --cpp custom_all_reduce.cuh", dir.path, 120);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no gaps"), std::string::npos) << r.out;
  // Every block was read: the verbose matrix names the blocks' kernel.
  CliRun v = lgtest::runCli("check --isolated --verbose --python custom_all_reduce.py --cpp custom_all_reduce.cuh", dir.path, 120);
  EXPECT_NE(v.out.find("cross_device_reduce_small"), std::string::npos) << v.out;
#if defined(__SANITIZE_ADDRESS__)
  const double bound = 30.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
  const double bound = 30.0;
#else
  const double bound = 10.0;
#endif
#else
  const double bound = 10.0;
#endif
  EXPECT_LT(s, bound) << "24 if constexpr blocks took " << s << " s";
}
