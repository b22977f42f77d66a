// End-to-end tests of the layergate binary: exit statuses, one-line errors on
// bad input, --help, explain, and the JSON shape scripts rely on.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::lines;
using lgtest::quote;
using lgtest::slurp;

CliRun layergate(const std::string& args) { return lgtest::runCli(args, LAYERGATE_FIXTURES); }

std::string check(const std::string& py, const std::string& cc, const std::string& extra = "") {
  return "check --python " + quote(py) + " --cpp " + quote(cc) + (extra.empty() ? "" : " " + extra);
}

}  // namespace

TEST(Cli, SeedScenarioExitsOneWithClangStyleDiagnostics) {
  CliRun r = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--color never"));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("seed-force-pcie/custom_all_reduce.py:"), std::string::npos);
  EXPECT_NE(r.out.find(": error: world sizes 4, 6, 8 without NVLink"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[LG001]"), std::string::npos);
  EXPECT_NE(r.out.find("seed-force-pcie/custom_all_reduce.cuh:"), std::string::npos);
  EXPECT_NE(r.out.find("SGLANG_FORCE_CUSTOM_AR_PCIE=1"), std::string::npos);
  EXPECT_EQ(r.out.find("Configuration matrix"), std::string::npos) << r.out;  // on request
  EXPECT_EQ(r.err, "");
  CliRun m = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--matrix --color never"));
  EXPECT_NE(m.out.find("Configuration matrix"), std::string::npos) << m.out;
  EXPECT_EQ(m.out.find("Flag trace"), std::string::npos) << m.out;
  CliRun t = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--trace --color never"));
  EXPECT_NE(t.out.find("Flag trace"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("Configuration matrix"), std::string::npos) << t.out;
  CliRun v = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--verbose --color never"));
  EXPECT_NE(v.out.find("Flag trace"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("Configuration matrix"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("layergate: note: stubbed missing include \"utils.h\""), std::string::npos) << v.out;
  EXPECT_EQ(r.out.find("layergate: note: stubbed missing include"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layergate: note: 4 notes on what the analysis assumed or could not follow (--verbose)"),
            std::string::npos) << r.out;
}

// One bug, one diagnostic: the three cells the Python gate admits and the C++
// dispatch serves with no kernel are one error at the check the patch opened,
// with the admitting line and the C++ path as notes, each fix once and one
// counterexample.
TEST(Cli, CellsOfOneCauseAreOneDiagnostic) {
  CliRun r = layergate("check seed-force-pcie --color never");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LE(lines(r.out), 30) << r.out;
  auto count = [&](const std::string& what) {
    int n = 0;
    for (auto at = r.out.find(what); at != std::string::npos; at = r.out.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(": error: "), 1) << r.out;
  EXPECT_NE(r.out.find("custom_all_reduce.py:97:9: error: world sizes 4, 6, 8 without NVLink: the Python gate admits "
                       "the custom all-reduce when SGLANG_FORCE_CUSTOM_AR_PCIE=1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("custom_all_reduce.py:137:17: note: admits: return inp_size < self.max_size"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("custom_all_reduce.cuh:176:12: note: no kernel on this path"), std::string::npos) << r.out;
  EXPECT_EQ(count("note: safe fix (--fix)"), 1) << r.out;
  EXPECT_EQ(count("note: unsafe fix (--fix --unsafe-fixes)"), 1) << r.out;
  EXPECT_EQ(count("counterexample: "), 1) << r.out;
  EXPECT_EQ(count("assuming: "), 1) << r.out;
  EXPECT_NE(r.out.find("\n1 error (3 configurations), 0 warnings\n"), std::string::npos) << r.out;
  // JSON keeps one finding per cell.
  EXPECT_EQ(json::parse(layergate("check seed-force-pcie --format json").out)["analyses"][0]["findings"].size(), 3u);
}

TEST(Cli, ACleanCheckoutIsAFewLines) {
  for (const char* dir : {"vllm-upstream", "sglang-upstream"}) {
    CliRun r = layergate(std::string("check ") + dir + " --color never");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_LE(lines(r.out), 5) << r.out;
    EXPECT_NE(r.out.find("\nno gaps: 5 configurations admitted, each reaches a kernel\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n0 errors, 0 warnings\n"), std::string::npos) << r.out;
  }
}

TEST(Cli, AFamilyDescribedAsDataListsItsRegionsOnlyOnRequest) {
  // The default text report asks only whether every admitted configuration
  // reaches a kernel; --matrix (and the machine formats) search the regions.
  const char* clean = "check rocm-paged-attention --color never";
  CliRun r = layergate(clean);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\nno gaps: every configuration the gate admits reaches a kernel (--matrix lists them)\n"),
            std::string::npos) << r.out;
  CliRun m = layergate(std::string(clean) + " --matrix");
  EXPECT_EQ(m.status, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("no gaps: 2 regions of configurations admitted, each reaches a kernel"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("-> attention_kernel"), std::string::npos) << m.out;
  CliRun j = layergate("check rocm-paged-attention --format json");
  EXPECT_NE(j.out.find("\"served\""), std::string::npos);
  EXPECT_NE(j.out.find("attention_kernel"), std::string::npos) << j.out;
}

TEST(Cli, ConciseIsOneLinePerDiagnosticAndACount) {
  for (const char* flag : {"--output-format concise", "--format concise", "-f concise"}) {
    CliRun r = layergate(std::string("check seed-force-pcie ") + flag);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(r.out,
              "seed-force-pcie/custom_all_reduce.py:97:9: LG001 world sizes 4, 6, 8 without NVLink: the Python gate admits the custom "
              "all-reduce when SGLANG_FORCE_CUSTOM_AR_PCIE=1 for 16 B .. 8 MiB - 16 B, but the C++ dispatch launches no "
              "kernel, so the output is never written\nFound 1 error, 0 warnings.\n")
        << flag;
  }
  CliRun clean = layergate("check vllm-upstream --output-format concise");
  EXPECT_EQ(clean.status, 0);
  EXPECT_EQ(clean.out, "All checks passed.\n");
  CliRun bad = layergate("check seed-force-pcie --output-format terse");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
}

TEST(Cli, FailOnNeverExitsZeroAndUpstreamIsClean) {
  EXPECT_EQ(layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--fail-on never")).status, 0);
  CliRun r = layergate(check("sglang-upstream/custom_all_reduce.py", "sglang-upstream/custom_all_reduce.cuh"));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 errors"), std::string::npos);
}

TEST(Cli, JsonHasTheDocumentedShape) {
  CliRun r = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format json"));
  ASSERT_EQ(r.status, 1) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["findings"].size(), 3u);
  const json& f = j["findings"][0];
  EXPECT_EQ(f["rule"], "LG001");
  EXPECT_EQ(f["severity"], "error");
  EXPECT_TRUE(f["message"].is_string());
  EXPECT_EQ(f["config"]["world_size"], 4);
  EXPECT_EQ(f["config"]["full_nvlink"], false);
  EXPECT_TRUE(f["config"]["nbytes"].is_number_integer());
  EXPECT_EQ(f["config"]["env"]["SGLANG_FORCE_CUSTOM_AR_PCIE"], "1");
  for (const auto& l : f["locations"]) {
    EXPECT_TRUE(l["file"].is_string());
    EXPECT_GT(l["line"].get<int>(), 0);
    EXPECT_TRUE(l["role"].is_string());
  }
  ASSERT_EQ(j["matrix"].size(), 16u);
  for (const auto& m : j["matrix"]) {
    EXPECT_TRUE(m.contains("world_size") && m.contains("full_nvlink") && m.contains("gate") && m.contains("dispatch"));
  }
}

TEST(Cli, BadInputsGiveExitTwoAndOneLine) {
  json cases = json::parse(slurp(fs::path(LAYERGATE_FIXTURES) / "bad" / "cases.json"));
  for (const auto& c : cases["cases"]) {
    CliRun r = layergate(check(c["python"], c["cpp"]));
    EXPECT_EQ(r.status, c["exit"].get<int>()) << c["reason"] << "\nstdout: " << r.out << "\nstderr: " << r.err;
    if (c["exit"] == 2) {
      EXPECT_EQ(lines(r.err), 1) << c["reason"] << ": " << r.err;
      EXPECT_EQ(r.err.rfind("layergate: error: ", 0), 0u) << r.err;
      EXPECT_EQ(r.out, "") << c["reason"];
    }
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  CliRun r = layergate("check --python x.py");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--cpp"), std::string::npos) << r.err;
  EXPECT_EQ(layergate("frobnicate").status, 2);
  EXPECT_EQ(layergate("").status, 2);
  EXPECT_EQ(layergate(check("sglang-upstream/custom_all_reduce.py", "sglang-upstream/custom_all_reduce.cuh", "--format xml")).status, 2);
  CliRun d = layergate(check(".", "sglang-upstream/custom_all_reduce.cuh"));
  EXPECT_EQ(d.status, 2);
  EXPECT_NE(d.err.find("directory"), std::string::npos) << d.err;
}

TEST(Cli, HelpVersionRulesAndExplain) {
  CliRun h = layergate("--help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("check"), std::string::npos);
  EXPECT_NE(h.out.find("Exit status"), std::string::npos);
  CliRun ch = layergate("check --help");
  EXPECT_EQ(ch.status, 0);
  EXPECT_NE(ch.out.find("--fail-on"), std::string::npos);
  EXPECT_EQ(layergate("--version").status, 0);
  CliRun rules = layergate("rules");
  EXPECT_EQ(rules.status, 0);
  EXPECT_NE(rules.out.find("LG001"), std::string::npos);
  EXPECT_NE(rules.out.find("LG002"), std::string::npos);
  CliRun e = layergate("explain lg001");
  EXPECT_EQ(e.status, 0);
  for (const char* section : {"## What it does", "## Why is this bad?", "## Example", "## Use instead"})
    EXPECT_NE(e.out.find(section), std::string::npos) << section;
  CliRun bad = layergate("explain LG999");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines(bad.err), 1);
}

TEST(Cli, OutputIsByteIdenticalAcrossRuns) {
  std::string a = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format json")).out;
  std::string b = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format json")).out;
  EXPECT_EQ(a, b);
}

TEST(Cli, DogfoodReferenceKernelsHaveNoFindings) {
  // kernels/: our own gate and dispatch must agree for every configuration.
  std::string k = fs::path(LAYERGATE_FIXTURES).parent_path().string() + "/kernels/";
  CliRun r = layergate(check(k + "python/custom_all_reduce.py", k + "layergate_allreduce.cuh", "--format json"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["findings"].size(), 0u) << r.out;
  // Every world size 2..8, both fabrics, is admitted and served.
  int admitted = 0;
  for (const auto& m : j["matrix"])
    if (m["world_size"].get<int>() >= 2) {
      EXPECT_EQ(m["gate"]["state"], "admitted") << m.dump();
      bool launch = false;
      for (const auto& d : m["dispatch"]) launch |= d["kind"] == "launch";
      EXPECT_TRUE(launch) << m.dump();
      ++admitted;
    }
  EXPECT_EQ(admitted, 14);
}

// An error is a proof, end to end: the seed gate with one more early return
// on a helper that no given file defines. Whether that helper rejects PCIe
// boxes is unknown, so the gaps are LG008 warnings naming it (exit 0), and
// --strict makes them errors (exit 1).
// Files given without --target: the target whose dispatch they define (the
// trt-reduce .cu holds no CustomAllreduce::allreduce; it was "no dispatch").
TEST(Cli, FilesGivenWithoutATargetPickTheOneWhoseDispatchTheyDefine) {
  CliRun r = layergate(check("sglang-trt-reduce/python/sglang/srt/distributed/device_communicators/custom_all_reduce.py",
                             "sglang-trt-reduce/sgl-kernel/csrc/allreduce/trt_reduce_internal.cu", "--format json"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"sglang-trt-reduce\""), std::string::npos) << r.out.substr(0, 400);
}

TEST(Cli, UninterpretedHelperTurnsTheSeedIntoPossibleGapsUnlessStrict) {
  fs::path dir = fs::temp_directory_path() / ("lg-strict-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string py = slurp(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie/custom_all_reduce.py");
  const std::string anchor = "        if world_size == 1:\n            return\n";
  auto at = py.find(anchor);
  ASSERT_NE(at, std::string::npos);
  // A check that decides only more than two GPUs (not a feature switch: two
  // GPUs are admitted whatever it says).
  py.insert(at + anchor.size(), "        if world_size > 2 and not vendor_topology_ok(self.group):\n            return\n");
  { std::ofstream(dir / "custom_all_reduce.py") << py; }
  fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie/custom_all_reduce.cuh", dir / "custom_all_reduce.cuh");
  std::string args = check((dir / "custom_all_reduce.py").string(), (dir / "custom_all_reduce.cuh").string(), "--no-matrix");
  CliRun r = layergate(args);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("[LG001]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: possible gap: world sizes 4, 6, 8 without NVLink"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("depends on `vendor_topology_ok(self.group)`"), std::string::npos) << r.out;
  CliRun s = layergate(args + " --strict");
  EXPECT_EQ(s.status, 1) << s.out << s.err;
  EXPECT_NE(s.out.find("error: possible gap: world sizes 4, 6, 8 without NVLink"), std::string::npos) << s.out;
  fs::remove_all(dir);
}

namespace {

// A copy of fixtures/seed-force-pcie in a new temporary directory.
fs::path seedCopy(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("lg_fixcli_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie", dir, fs::copy_options::recursive);
  return dir;
}

const char* kSeedArgs = "check custom_all_reduce.py custom_all_reduce.cuh --color never";

}  // namespace

TEST(Cli, FixRewritesTheGateAndASecondCheckIsClean) {
  fs::path dir = seedCopy("fix");
  std::string before = slurp(dir / "custom_all_reduce.py");
  CliRun r = lgtest::runCli(std::string(kSeedArgs) + " --fix", dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("layergate: fixed 3 configurations in 1 file\n  safe fix at custom_all_reduce.py:129:1: "),
            std::string::npos) << r.out;
  // The verdict after the fix: the fixed files analysed again.
  auto after_fix = r.out.find("layergate: after the fixes:\n");
  ASSERT_NE(after_fix, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("LG001", after_fix), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nno gaps: 5 configurations admitted, each reaches a kernel\n", after_fix), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 errors, 0 warnings\n", after_fix), std::string::npos) << r.out;
  std::string after = slurp(dir / "custom_all_reduce.py");
  EXPECT_NE(after, before);
  EXPECT_NE(after.find("return False  # layergate LG001"), std::string::npos);
  EXPECT_EQ(slurp(dir / "custom_all_reduce.cuh"), slurp(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie/custom_all_reduce.cuh"));
  CliRun again = lgtest::runCli(kSeedArgs, dir);
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(again.out.find("LG001"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("0 errors"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Cli, DiffIsAUnifiedDiffThatPatchApplies) {
  fs::path dir = seedCopy("diff");
  std::string before = slurp(dir / "custom_all_reduce.py");
  CliRun r = lgtest::runCli(std::string(kSeedArgs) + " --diff", dir);
  EXPECT_EQ(r.status, 1) << r.err;  // as check: the findings are still there
  EXPECT_EQ(r.out.rfind("--- a/custom_all_reduce.py\n+++ b/custom_all_reduce.py\n@@ ", 0), 0u) << r.out;
  EXPECT_EQ(slurp(dir / "custom_all_reduce.py"), before);  // --diff writes nothing
  std::ofstream(dir / "fix.patch", std::ios::binary) << r.out;
  std::string cmd = "cd " + quote(dir.string()) + " && patch -p1 --dry-run < fix.patch >/dev/null && git apply --check fix.patch";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << r.out;
  fs::remove_all(dir);
}

TEST(Cli, FindingsWithAFixSayItInEveryFormat) {
  CliRun t = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--no-matrix --color never"));
  EXPECT_EQ(t.status, 1);
  const std::string description =
      "`return False` in should_custom_ar when self.world_size in (4, 6, 8) and not self.full_nvlink: turns off the "
      "custom all-reduce for world sizes 4, 6, 8 without NVLink; behaviour change: SGLANG_FORCE_CUSTOM_AR_PCIE=1 no "
      "longer turns it on there";
  EXPECT_NE(t.out.find("note: safe fix (--fix): " + description + "\n"), std::string::npos) << t.out;
  CliRun j = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format json"));
  json f = json::parse(j.out)["findings"][0];
  ASSERT_TRUE(f.contains("fix")) << f.dump(2);
  EXPECT_EQ(f["fix"]["safety"], "safe");
  EXPECT_EQ(f["fix"]["description"], description);
  const json& e = f["fix"]["edits"][0];
  EXPECT_EQ(e["file"], "seed-force-pcie/custom_all_reduce.py");
  EXPECT_EQ(e["start"], e["end"]);
  EXPECT_EQ(e["start"]["col"], 1);
  EXPECT_NE(e["replacement"].get<std::string>().find("if self.world_size in (4, 6, 8) and not self.full_nvlink:\n"),
            std::string::npos);
  CliRun s = layergate(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format sarif"));
  json res = json::parse(s.out)["runs"][0]["results"][0];
  const json& ch = res["fixes"][0]["artifactChanges"][0];
  EXPECT_EQ(ch["artifactLocation"]["uri"], "seed-force-pcie/custom_all_reduce.py");
  EXPECT_EQ(ch["replacements"][0]["deletedRegion"]["startLine"], e["start"]["line"]);
  EXPECT_EQ(ch["replacements"][0]["insertedContent"]["text"], e["replacement"]);
  EXPECT_EQ(res["fixes"][0]["description"]["text"], description);
}

TEST(Cli, UnsafeFixIsMarkedInEveryFormat) {
  std::string args = check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh");
  CliRun t = layergate(args + " --no-matrix --color never");
  EXPECT_NE(t.out.find("seed-force-pcie/custom_all_reduce.cuh:182:6: note: unsafe fix (--fix --unsafe-fixes): `else { "
                       "KL(ngpus, cross_device_reduce_1stage); }` after `if (full_nvlink_)`: runs "
                       "cross_device_reduce_1stage for world sizes 4, 6, 8 without NVLink"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("prove it with `layergate selftest`\n"), std::string::npos) << t.out;
  json f = json::parse(layergate(args + " --format json").out)["findings"][0];
  EXPECT_EQ(f["fix"]["safety"], "safe");
  ASSERT_TRUE(f.contains("alternative_fixes")) << f.dump(2);
  const json& u = f["alternative_fixes"][0];
  EXPECT_EQ(u["safety"], "unsafe");
  EXPECT_EQ(u["edits"][0]["file"], "seed-force-pcie/custom_all_reduce.cuh");
  EXPECT_EQ(u["edits"][0]["start"]["line"], 182);
  json res = json::parse(layergate(args + " --format sarif").out)["runs"][0]["results"][0];
  ASSERT_EQ(res["fixes"].size(), 2u);
  EXPECT_EQ(res["fixes"][1]["properties"]["safety"], "unsafe");
  EXPECT_EQ(res["fixes"][1]["artifactChanges"][0]["artifactLocation"]["uri"], "seed-force-pcie/custom_all_reduce.cuh");
}

// --unsafe-fixes takes the C++ branch *instead of* the Python guard for the
// cells it serves: the gate stays open (its intent kept) and never gets a
// guard for the same cells.
TEST(Cli, UnsafeFixesOnlyWhenAskedAndInsteadOfTheGuard) {
  fs::path dir = seedCopy("unsafe");
  std::string py = slurp(dir / "custom_all_reduce.py"), cuh = slurp(dir / "custom_all_reduce.cuh");
  CliRun safe = lgtest::runCli(std::string(kSeedArgs) + " --diff", dir);
  EXPECT_EQ(safe.out.find("custom_all_reduce.cuh"), std::string::npos) << safe.out;
  CliRun unsafe = lgtest::runCli(std::string(kSeedArgs) + " --diff --unsafe-fixes", dir);
  EXPECT_EQ(unsafe.status, 1) << unsafe.err;
  EXPECT_NE(unsafe.out.find("--- a/custom_all_reduce.cuh\n+++ b/custom_all_reduce.cuh\n@@ "), std::string::npos) << unsafe.out;
  EXPECT_EQ(unsafe.out.find("custom_all_reduce.py"), std::string::npos) << unsafe.out;
  EXPECT_NE(unsafe.out.find("\n+    } else {"), std::string::npos) << unsafe.out;
  EXPECT_NE(unsafe.out.find("\n+      KL(ngpus, cross_device_reduce_1stage);"), std::string::npos) << unsafe.out;
  EXPECT_NE(unsafe.err.find("layergate selftest --header custom_all_reduce.cuh --python custom_all_reduce.py"),
            std::string::npos) << unsafe.err;
  EXPECT_EQ(slurp(dir / "custom_all_reduce.cuh"), cuh);  // --diff writes nothing
  std::ofstream(dir / "fix.patch", std::ios::binary) << unsafe.out;
  std::string cmd = "cd " + quote(dir.string()) + " && git apply --check fix.patch";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << unsafe.out;

  CliRun r = lgtest::runCli(std::string(kSeedArgs) + " --fix --unsafe-fixes", dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("layergate: fixed 3 configurations in 1 file\n  unsafe fix at custom_all_reduce.cuh:182:6: "),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  safe fix at"), std::string::npos) << r.out;  // no guard besides
  EXPECT_NE(r.out.find("layergate selftest --header custom_all_reduce.cuh --python custom_all_reduce.py "
                       "--target custom-allreduce\n"),
            std::string::npos) << r.out;
  // After the fix: every cell the gate admits, the opened ones too, reaches
  // a kernel, one of them the inserted branch that nothing has run yet.
  EXPECT_NE(r.out.find("\nno gaps: 8 configurations admitted, each reaches a kernel, counting the C++ branch "
                       "--unsafe-fixes inserted at custom_all_reduce.cuh:182:6: unproven until `layergate selftest` "
                       "runs it\n"),
            std::string::npos) << r.out;
  EXPECT_NE(slurp(dir / "custom_all_reduce.cuh"), cuh);
  EXPECT_EQ(slurp(dir / "custom_all_reduce.py"), py);
  CliRun again = lgtest::runCli(kSeedArgs, dir);
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(again.out.find("LG001"), std::string::npos) << again.out;
  // The header with its C++ branch analyses with the notes it had before.
  CliRun cpp_only = lgtest::runCli(std::string(kSeedArgs) + " --format json", dir);
  EXPECT_EQ(cpp_only.status, 0) << cpp_only.out;
  json j = json::parse(cpp_only.out);
  EXPECT_TRUE(j["findings"].empty()) << j["findings"].dump(2);
  fs::path orig = fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie";
  json before = json::parse(lgtest::runCli(std::string(kSeedArgs) + " --format json", orig).out);
  EXPECT_EQ(j["notes"], before["notes"]);
  fs::remove_all(dir);
}

// A checkout with gates of two platforms: the text report groups the
// analyses by platform (the one with something to report first), an analysis
// with nothing to report is one line; --platform keeps one platform's.
TEST(Cli, PlatformGroupsTheReportAndSelectsTheAnalyses) {
  fs::path dir = fs::temp_directory_path() / ("lg_platform_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "x");
  fs::path fx = LAYERGATE_FIXTURES;
  for (const char* d : {"csrc", "vllm"}) fs::copy(fx / "quick-allreduce" / d, dir / d, fs::copy_options::recursive);
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) {
    fs::copy_file(fx / "seed-force-pcie" / f, dir / "x" / f);
    fs::create_directories(dir / "y");
    fs::copy_file(fx / "sglang-upstream" / f, dir / "y" / f);
  }
  CliRun all = lgtest::runCli("check . --color never", dir);
  EXPECT_EQ(all.status, 1) << all.err;
  auto cuda = all.out.find("layergate: platform cuda (2 gates)\n"), rocm = all.out.find("layergate: platform rocm (1 gate)\n");
  ASSERT_NE(cuda, std::string::npos) << all.out;
  ASSERT_NE(rocm, std::string::npos) << all.out;
  EXPECT_LT(cuda, rocm) << all.out;
  EXPECT_NE(all.out.find("x/custom_all_reduce.py:97:9: error: world sizes 4, 6, 8 without NVLink"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("layergate: checking y/custom_all_reduce.py + y/custom_all_reduce.cuh (target custom-allreduce): "
                         "no gaps: 5 configurations admitted, each reaches a kernel\n"),
            std::string::npos) << all.out;
  EXPECT_NE(all.out.find("(target quick-allreduce): no gaps: "), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("\nin all, 3 gates: 1 error (3 configurations), 0 warnings\n"), std::string::npos) << all.out;
  // The analyses side by side or one after another: the same report.
  for (const char* jobs : {" -j 1", " --jobs 3"}) {
    CliRun r = lgtest::runCli(std::string("check . --color never") + jobs, dir);
    EXPECT_EQ(r.status, all.status) << jobs << r.err;
    EXPECT_EQ(r.out, all.out) << jobs;
  }

  CliRun rocm_only = lgtest::runCli("check . --platform rocm --color never", dir);
  EXPECT_EQ(rocm_only.status, 0) << rocm_only.out << rocm_only.err;
  EXPECT_EQ(rocm_only.out.find("custom_all_reduce"), std::string::npos) << rocm_only.out;
  EXPECT_NE(rocm_only.out.find("in all, 1 gate: 0 errors, 0 warnings; 2 cuda gates left out (--platform)\n"),
            std::string::npos) << rocm_only.out;
  CliRun cuda_only = lgtest::runCli("check . --platform cuda --output-format concise", dir);
  EXPECT_EQ(cuda_only.status, 1) << cuda_only.err;
  EXPECT_EQ(cuda_only.out.find("quick_all_reduce"), std::string::npos) << cuda_only.out;
  EXPECT_EQ(lines(cuda_only.out), 2) << cuda_only.out;
  EXPECT_NE(cuda_only.out.find("\nFound 1 error, 0 warnings. 1 rocm gate left out (--platform).\n"), std::string::npos)
      << cuda_only.out;

  // A platform no target declares, a directory without that platform's gates,
  // files of another platform: one line, exit 2.
  for (const char* args : {"check . --platform musa", "check x --platform rocm",
                           "check x/custom_all_reduce.py x/custom_all_reduce.cuh --platform rocm"}) {
    CliRun bad = lgtest::runCli(args, dir);
    EXPECT_EQ(bad.status, 2) << args << bad.out;
    EXPECT_EQ(lines(bad.err), 1) << args << bad.err;
  }
  EXPECT_NE(lgtest::runCli("check . --platform musa", dir).err.find("unknown platform 'musa' (--platform: all, cuda, rocm)"),
            std::string::npos);
  fs::remove_all(dir);
}

// The cells' axes are the variables a target declares in the ranks, link and
// bytes roles, whatever their names: the same rules with every all-reduce
// variable renamed (in "variables", the probes, the members and the policy
// inputs) give the same findings; a target that declares no variables is
// refused in one line.
TEST(Cli, TheCellAxesAreTheTargetsDeclaredVariablesWhateverTheirNames) {
  fs::path dir = fs::temp_directory_path() / ("lg_roles_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path rules = fs::path(LAYERGATE_FIXTURES).parent_path() / "rules";
  fs::copy(rules, dir / "renamed", fs::copy_options::recursive);
  fs::copy(rules, dir / "undeclared", fs::copy_options::recursive);
  const std::map<std::string, std::string> renamed = {
      {"world_size", "group_ranks"}, {"full_nvlink", "all_pairs_linked"}, {"nbytes", "message_bytes"}, {"rank", "my_index"}};
  auto rename = [&](json& j, const char* key) {
    if (!j.contains(key)) return;
    for (auto& [k, v] : j[key].items())
      if (v.is_string() && renamed.count(v.get<std::string>())) v = renamed.at(v.get<std::string>());
  };
  int declaring = 0;
  for (const auto& e : fs::directory_iterator(dir / "renamed" / "targets")) {
    json t = json::parse(slurp(e.path()));
    if (t.contains("variables"))
      for (auto& v : t["variables"])
        if (renamed.count(v["name"].get<std::string>())) {
          v["name"] = renamed.at(v["name"].get<std::string>());
          ++declaring;
        }
    if (t.contains("python")) rename(t["python"], "probes");
    if (t.contains("cpp")) rename(t["cpp"], "members");
    if (t.contains("python") && t["python"].contains("policy") && t["python"]["policy"].contains("inputs"))
      for (auto& [k, in] : t["python"]["policy"]["inputs"].items())
        if (renamed.count(in["var"].get<std::string>())) in["var"] = renamed.at(in["var"].get<std::string>());
    std::ofstream(e.path()) << t.dump(2);
  }
  EXPECT_GE(declaring, 4 * 3);  // the base targets declare them; the layouts inherit
  json base = json::parse(slurp(dir / "undeclared" / "targets" / "custom-allreduce.json"));
  base.erase("variables");
  std::ofstream(dir / "undeclared" / "targets" / "custom-allreduce.json") << base.dump(2);

  auto findings = [](const std::string& out) {
    std::vector<std::string> fs;
    json r = json::parse(out);
    for (const auto& a : r.contains("analyses") ? r["analyses"] : json::array({r}))
      for (const auto& f : a["findings"])
        fs.push_back(f["rule"].get<std::string>() + " " + f["message"].get<std::string>() + " " +
                     f["locations"][0].dump());
    return fs;
  };
  int errors = 0;
  for (const char* fixture : {"seed-force-pcie", "throw-world-size", "size-gap", "node-sliced-handles",
                              "trace-sglang-chain", "flashinfer-pcie-ipc", "quick-allreduce-no-int6"}) {
    CliRun want = layergate(std::string("check ") + fixture + " --format json --isolated");
    CliRun got = layergate("check --rules " + quote((dir / "renamed").string()) + " " + fixture + " --format json --isolated");
    EXPECT_EQ(got.status, want.status) << fixture << got.err;
    ASSERT_EQ(got.err, "") << fixture;
    EXPECT_EQ(findings(got.out), findings(want.out)) << fixture;
    errors += want.status == 1;
  }
  EXPECT_GE(errors, 3);  // the seed, a throwing world size, a size gap at least
  // A counterexample names the values by the declared names.
  CliRun seed = layergate("check --rules " + quote((dir / "renamed").string()) + " seed-force-pcie --isolated --color never");
  EXPECT_NE(seed.out.find("counterexample: group_ranks=4 all_pairs_linked=false message_bytes="), std::string::npos)
      << seed.out;
  CliRun none = layergate("check --rules " + quote((dir / "undeclared").string()) +
                          " --target custom-allreduce seed-force-pcie/custom_all_reduce.py seed-force-pcie/custom_all_reduce.cuh");
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_EQ(lines(none.err), 1) << none.err;
  EXPECT_NE(none.err.find("target custom-allreduce declares no configuration variables"), std::string::npos) << none.err;
  fs::remove_all(dir);
}

// LG003 where a platform probe stops meaning NVLink for some setting. (a) The
// probe answers with a peer-to-peer check under an env var (in the platform
// class read from disk, or in the probe helper): one warning naming the check
// and the env var, and no LG001/LG002/LG008, even with --strict: the flag C++
// gets is the value the gate tested, so the NVLink branches launch. (b) An
// old ROCm port's `if torch.version.hip is not None: self.full_nvlink = True`:
// on the CUDA target a warning for the other platform; analysed for HIP (a
// target whose platform flags say HIP), the flag is that literal, and the
// warning points at it.
TEST(Cli, ForcedFlagWhereTheLinkProbeIsAnotherCheck) {
  auto only = [](const std::string& out) {
    std::vector<json> fs;
    json r = json::parse(out);
    for (const auto& a : r.contains("analyses") ? r["analyses"] : json::array({r}))
      for (const auto& f : a["findings"]) fs.push_back(f);
    return fs;
  };
  CliRun a = layergate(check("vllm-platform-p2p-as-nvlink/custom_all_reduce.py",
                             "vllm-platform-p2p-as-nvlink/custom_all_reduce.cuh", "--format json --strict"));
  EXPECT_EQ(a.status, 0) << a.out << a.err;
  auto fa = only(a.out);
  ASSERT_EQ(fa.size(), 1u) << a.out;
  EXPECT_EQ(fa[0]["rule"], "LG003");
  EXPECT_NE(fa[0]["message"].get<std::string>().find(
                "is `cls._can_p2p_all(physical_device_ids)` when VLLM_FORK_ALLOW_PCIE_CUSTOM_AR=1, not the NVLink probe"),
            std::string::npos)
      << fa[0]["message"];
  EXPECT_EQ(fa[0]["config"]["env"]["VLLM_FORK_ALLOW_PCIE_CUSTOM_AR"], "1") << fa[0].dump();

  // The same fork written in the SGLang probe helper, the env var read inline.
  fs::path dir = fs::temp_directory_path() / ("lg_p2p_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "trace-env-spoof-helper", dir, fs::copy_options::recursive);
  fs::path utils = dir / "python/sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py";
  std::string u = slurp(utils);
  const std::string from = "== \"1\":\n        return True\n";
  ASSERT_NE(u.find(from), std::string::npos);
  u.replace(u.find(from), from.size(), "== \"1\":\n        return _p2p_all(physical_device_ids)\n");
  std::ofstream(utils) << u;
  json expect = json::parse(slurp(dir / "expect.json"));
  std::string files;
  for (const auto& p : expect["python"]) files += " --python " + quote((dir / p.get<std::string>()).string());
  for (const auto& p : expect["cpp"]) files += " --cpp " + quote((dir / p.get<std::string>()).string());
  CliRun b = layergate("check" + files + " --format json --strict");
  EXPECT_EQ(b.status, 0) << b.out << b.err;
  auto fb = only(b.out);
  ASSERT_EQ(fb.size(), 1u) << b.out;
  EXPECT_EQ(fb[0]["rule"], "LG003");
  EXPECT_NE(fb[0]["message"].get<std::string>().find(
                "is `_p2p_all(physical_device_ids)` when SGLANG_TREAT_PCIE_AS_NVLINK=1, not the NVLink probe"),
            std::string::npos)
      << fb[0]["message"];
  fs::remove_all(dir);

  // (b) On the CUDA target: the other platform's branch.
  CliRun c = layergate("check rocm-port-hip-forced-nvlink --color never");
  EXPECT_EQ(c.status, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("custom_all_reduce.py:85:13: warning: the NVLink flag is forced true on another platform: "
                       "`self.full_nvlink = True` under `torch.version.hip is not None`"),
            std::string::npos)
      << c.out;
  // Analysed for HIP: the branch is taken, the flag is the literal.
  fs::path rules = fs::temp_directory_path() / ("lg_hip_rules_" + std::to_string(getpid()));
  fs::remove_all(rules);
  fs::copy(fs::path(LAYERGATE_FIXTURES).parent_path() / "rules", rules, fs::copy_options::recursive);
  std::ofstream(rules / "targets" / "hip-port.json") << R"({
  "name": "hip-port", "description": "the custom all-reduce analysed for HIP", "extends": "custom-allreduce",
  "platform": "rocm",
  "discovery": {"python": ["custom_all_reduce.py"], "cpp": ["custom_all_reduce.cuh"], "same_root": false},
  "python": {"platform_flags": {"_is_hip": true, "is_hip": true, "_is_cuda": false, "is_cuda": false,
                                "torch.version.hip": true, "torch.version.cuda": false}}
})";
  CliRun h = layergate(check("rocm-port-hip-forced-nvlink/custom_all_reduce.py",
                             "rocm-port-hip-forced-nvlink/custom_all_reduce.cuh",
                             "--rules " + quote(rules.string()) + " --target hip-port --color never --strict"));
  EXPECT_EQ(h.status, 0) << h.out << h.err;
  EXPECT_NE(h.out.find("warning: the NVLink flag passed to C++ (`self.full_nvlink`) (set at "
                       "rocm-port-hip-forced-nvlink/custom_all_reduce.py:85: self.full_nvlink = True) is true always"),
            std::string::npos)
      << h.out;
  EXPECT_EQ(h.out.find("another platform"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("0 errors, 1 warning"), std::string::npos) << h.out;
  fs::remove_all(rules);
}

// --time-trace FILE: a Chrome trace of the run, layergate's phases with
// clang's own inside them, one track per thread; the report is unchanged.
TEST(Cli, TimeTraceWritesAChromeTraceWithClangsPhasesInside) {
  fs::path dir = fs::temp_directory_path() / ("lg_trace_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path file = dir / "trace.json";
  std::string args = check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh", "--format json");
  CliRun plain = layergate(args);
  CliRun traced = layergate(args + " --time-trace " + quote(file.string()));
  EXPECT_EQ(traced.status, plain.status) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  json t = json::parse(slurp(file));
  std::map<std::string, int> names;
  std::set<long> threads;
  for (const auto& e : t.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    names[e.at("name").get<std::string>()]++;
    threads.insert(e.at("tid").get<long>());
  }
  for (const char* phase : {"Python frontend", "C++ frontend", "Parse and walk", "Frontend", "Solver", "Matrix"})
    EXPECT_GT(names[phase], 0) << phase;
  EXPECT_GE(threads.size(), 2u);  // the parse runs on a thread of its own
  CliRun bad = layergate(args + " --time-trace " + quote((dir / "no" / "such" / "trace.json").string()));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("cannot write the time trace"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

// The gate and the dispatch header given inside their checkout: the check
// the gate calls through an op (should_custom_ar, C++ in the .cu beside the
// header) is read from there, as a compiler finds an include, so the gap it
// opens is proven. Given alone, the check stays unread and the report says
// which function to give with --cpp.
TEST(Cli, AChecksCppBesideTheGivenFilesIsRead) {
  const fs::path tree = fs::path(LAYERGATE_FIXTURES) / "vllm-cpp-per-call-check-pcie";
  const std::string py = "vllm/distributed/device_communicators/custom_all_reduce.py";
  const std::string cc = "csrc/custom_all_reduce.cuh";
  auto errorCells = [](const json& j) {
    std::set<int> ws;
    for (const auto& f : j["findings"])
      if (f["rule"] == "LG001" && f["severity"] == "error") ws.insert(f["config"]["world_size"].get<int>());
    return ws;
  };
  CliRun in_tree = lgtest::runCli(check(py, cc, "--format json"), tree);
  ASSERT_EQ(in_tree.status, 1) << in_tree.out << in_tree.err;
  json j = json::parse(in_tree.out);
  EXPECT_EQ(errorCells(j), (std::set<int>{4, 6, 8}));
  std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("read csrc/custom_all_reduce.cu beside the given files"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("ops.h beside"), std::string::npos) << "a declaration is not a definition: " << notes;

  fs::path alone = fs::temp_directory_path() / ("lg_alone_" + std::to_string(getpid()));
  fs::remove_all(alone);
  fs::create_directories(alone);
  fs::copy_file(tree / py, alone / "custom_all_reduce.py");
  fs::copy_file(tree / cc, alone / "custom_all_reduce.cuh");
  CliRun by_itself = lgtest::runCli(check("custom_all_reduce.py", "custom_all_reduce.cuh", "--format json"), alone);
  fs::remove_all(alone);
  ASSERT_NE(by_itself.status, 2) << by_itself.err;
  json a = json::parse(by_itself.out);
  EXPECT_TRUE(errorCells(a).empty()) << by_itself.out;
  std::string anotes = a["notes"].dump();
  EXPECT_NE(anotes.find("should_custom_ar, a check the gate calls through an op, is defined in no given file"),
            std::string::npos)
      << anotes;
}

// --fix where only unsafe fixes exist says so, in ruff's words, instead of
// "nothing to fix"; with --unsafe-fixes the re-check's "no gaps" says the
// inserted branch is unproven, in the text and in JSON.
TEST(Cli, FixSaysWhatOnlyUnsafeFixesWouldDo) {
  fs::path dir = fs::temp_directory_path() / ("lg_fixcli_hidden_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "sglang-helper-module-pcie", dir, fs::copy_options::recursive);
  CliRun r = lgtest::runCli("check . --fix --color never", dir);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("layergate: nothing to fix safely; 1 fix available with --unsafe-fixes\n", 0), 0u) << r.out;
  CliRun j = lgtest::runCli("check . --fix --format json", dir);
  EXPECT_EQ(j.err, "layergate: nothing to fix safely; 1 fix available with --unsafe-fixes\n");
  CliRun u = lgtest::runCli("check . --fix --unsafe-fixes --color never", dir);
  EXPECT_EQ(u.status, 0) << u.out << u.err;
  EXPECT_NE(u.out.find("  unsafe fix at sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:183:6: "), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("\nno gaps: 8 configurations admitted, each reaches a kernel, counting the C++ branch --unsafe-fixes inserted at sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:183:6: "
                       "unproven until `layergate selftest` runs it"),
            std::string::npos) << u.out;
  // A later check of the fixed files knows nothing of the fix: plain "no gaps".
  CliRun again = lgtest::runCli("check . --format json", dir);
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_FALSE(json::parse(again.out)["analyses"][0].contains("unproven_branches"));
  fs::remove_all(dir);
  fs::copy(fs::path(LAYERGATE_FIXTURES) / "sglang-helper-module-pcie", dir, fs::copy_options::recursive);
  CliRun uj = lgtest::runCli("check . --fix --unsafe-fixes --format json", dir);
  EXPECT_EQ(uj.status, 0) << uj.err;
  EXPECT_EQ(json::parse(uj.out)["analyses"][0]["unproven_branches"],
            json::array({"sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:183:6"})) << uj.out;
  fs::remove_all(dir);
}

// --fix keeps a CRLF file's line endings: every line it inserts ends in CRLF,
// the Python guard and the C++ branch alike, and the fixed files check clean.
TEST(Cli, FixKeepsCrlfLineEndings) {
  for (bool unsafe : {false, true}) {
    fs::path dir = seedCopy(unsafe ? "crlf_unsafe" : "crlf");
    for (const char* name : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) {
      std::string text = slurp(dir / name), crlf;
      for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
      std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << crlf;
    }
    std::string before = slurp(dir / (unsafe ? "custom_all_reduce.cuh" : "custom_all_reduce.py"));
    CliRun r = lgtest::runCli(std::string(kSeedArgs) + " --fix" + (unsafe ? " --unsafe-fixes" : ""), dir);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    for (const char* name : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) {
      std::string after = slurp(dir / name);
      std::size_t lf = 0, crlf = 0;
      for (std::size_t i = 0; i < after.size(); ++i)
        if (after[i] == '\n') ++lf, crlf += i > 0 && after[i - 1] == '\r';
      EXPECT_EQ(crlf, lf) << name << (unsafe ? " (unsafe)" : "") << ": a line without CR\n" << after;
    }
    std::string after = slurp(dir / (unsafe ? "custom_all_reduce.cuh" : "custom_all_reduce.py"));
    EXPECT_GT(after.size(), before.size()) << "no fix written";
    EXPECT_NE(after.find(unsafe ? "} else {" : "return False  # layergate LG001"), std::string::npos) << after;
    fs::remove_all(dir);
  }
}

// The precompiled prelude goes to LAYERGATE_CACHE_DIR (a CI cache step keeps
// that folder), and writing one evicts the least recently used beyond the
// bound (8 files), and a partial file a killed build left, but nothing used
// in the last minutes.
TEST(Cli, PreludeCacheFollowsLayergateCacheDirAndStaysBounded) {
  fs::path cache = fs::temp_directory_path() / ("lg_cache_" + std::to_string(getpid()));
  fs::remove_all(cache);
  fs::create_directories(cache);
  const auto now = fs::file_time_type::clock::now();
  auto fake = [&](const std::string& name, std::chrono::hours age) {
    std::ofstream(cache / name) << "stale";
    fs::last_write_time(cache / name, now - age);
  };
  for (int i = 0; i < 12; ++i) fake("prelude-old" + std::to_string(i) + ".pch", std::chrono::hours(24 * (i + 1)));
  fake("prelude-dead.pch.tmp-12345678", std::chrono::hours(2));
  std::ofstream(cache / "prelude-fresh.pch") << "in use";  // written just now: another run's
  std::ofstream(cache / "notes.txt") << "not ours";
  CliRun r = lgtest::runCli(check("seed-force-pcie/custom_all_reduce.py", "seed-force-pcie/custom_all_reduce.cuh"),
                            LAYERGATE_FIXTURES, 300,
                            "env -u LAYERGATE_NO_PCH LAYERGATE_CACHE_DIR=" + quote(cache.string()) + " ");
  EXPECT_EQ(r.status, 1) << r.err;
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(cache)) left.insert(e.path().filename().string());
  std::vector<std::string> written;
  for (const auto& n : left)
    if (n.rfind("prelude-", 0) == 0 && n.find("old") == std::string::npos && n != "prelude-fresh.pch") written.push_back(n);
  ASSERT_FALSE(written.empty()) << "no prelude PCH written to LAYERGATE_CACHE_DIR";
  for (const auto& n : written) EXPECT_GT(fs::file_size(cache / n), 1000u) << n;
  // The new PCHs and the fresh one, then the newest old ones up to 8 in all.
  std::size_t kept_old = 8 > written.size() + 1 ? 8 - written.size() - 1 : 0;
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(left.count("prelude-old" + std::to_string(i) + ".pch"), static_cast<std::size_t>(i) < kept_old ? 1u : 0u)
        << i << " (" << written.size() << " written)";
  EXPECT_TRUE(left.count("prelude-fresh.pch"));
  EXPECT_FALSE(left.count("prelude-dead.pch.tmp-12345678"));
  EXPECT_TRUE(left.count("notes.txt"));
  fs::remove_all(cache);
}
