// A user's own target descriptions, as a CI user expects of ruff or Semgrep:
// `--rules DIR` adds to the bundled targets (one of a bundled name replaces
// it, and the report says so), `--no-bundled-rules` and `bundled-rules =
// false` leave the bundled ones out, `--target FILE` reads one target file,
// every analysis limit is a key of the configuration file and the message
// that hits it names both, and a policy function the target names but the
// analysis would skip stops the run. The worked example of docs/targets.md
// ("Writing your own target") is run as the page shows it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using lgtest::CliRun;
using lgtest::lines;
using lgtest::quote;
using lgtest::slurp;
using nlohmann::json;

namespace {

const fs::path kSource = LAYERGATE_SOURCE_DIR;
const fs::path kExample = kSource / "examples" / "own-target";
const fs::path kFixtures = LAYERGATE_FIXTURES;

class UserRules : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lg_user_rules_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path put(const std::string& rel, const std::string& text) {
    fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // A tree with the example's gate and dispatch, and the seed fixture (a
  // bundled target's layout: sgl-kernel's custom all-reduce).
  fs::path bothFamilies() {
    fs::path tree = dir_ / "tree";
    fs::create_directories(tree / "python" / "sglang" / "srt" / "distributed" / "device_communicators");
    fs::create_directories(tree / "sgl-kernel" / "csrc" / "allreduce");
    fs::copy(kExample / "checkout", tree, fs::copy_options::recursive);
    fs::copy_file(kFixtures / "seed-force-pcie" / "custom_all_reduce.py",
                  tree / "python" / "sglang" / "srt" / "distributed" / "device_communicators" / "custom_all_reduce.py");
    fs::copy_file(kFixtures / "seed-force-pcie" / "custom_all_reduce.cuh",
                  tree / "sgl-kernel" / "csrc" / "allreduce" / "custom_all_reduce.cuh");
    return tree;
  }
  CliRun run(const std::string& args, const fs::path& cwd = {}) { return lgtest::runCli(args, cwd.empty() ? dir_ : cwd, 180); }
  static std::vector<std::string> targetsOf(const std::string& json_out) {
    std::vector<std::string> out;
    const json j = json::parse(json_out);
    for (const auto& a : j.at("analyses")) out.push_back(a["target"].get<std::string>());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

const std::string kRules = (kExample / "rules").string();

// --rules DIR adds its targets to the bundled ones: one run finds both the
// user's family and a bundled one.
TEST_F(UserRules, RulesDirectoryAddsToTheBundledTargets) {
  fs::path tree = bothFamilies();
  CliRun r = run("check --isolated --format json --rules " + quote(kRules) + " " + quote(tree.string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(targetsOf(r.out), (std::vector<std::string>{"fused-rms-norm", "sglang-sgl-kernel"})) << r.out;
  // And `targets` lists both, the user's with its file.
  CliRun t = run("targets --rules " + quote(kRules));
  EXPECT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("sglang-sgl-kernel "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("fused-rms-norm "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("fused-rms-norm.json]"), std::string::npos) << t.out;
}

// A user's target of a bundled name replaces it; one that "extends" its own
// name changes the bundled one key by key. --verbose (and JSON's notes) say
// which file was read and which it replaces.
TEST_F(UserRules, AUserTargetOfABundledNameReplacesItAndTheReportSaysSo) {
  put("mine/targets/custom-allreduce.json",
      R"({"name": "custom-allreduce", "extends": "custom-allreduce", "platform": "rocm"})");
  const std::string files = quote((kFixtures / "seed-force-pcie" / "custom_all_reduce.py").string()) + " " +
                            quote((kFixtures / "seed-force-pcie" / "custom_all_reduce.cuh").string());
  CliRun j = run("check --isolated --format json --rules mine --target custom-allreduce " + files);
  ASSERT_EQ(j.status, 1) << j.err;
  EXPECT_FALSE(json::parse(j.out)["findings"].empty());  // the rest is the bundled target's
  // The user's key over the bundled target: the gate is now a rocm one.
  CliRun cuda = run("check --isolated --platform cuda --rules mine --target custom-allreduce " + files);
  EXPECT_EQ(cuda.status, 2) << cuda.out;
  EXPECT_NE(cuda.err.find("are a rocm gate (target custom-allreduce), not cuda"), std::string::npos) << cuda.err;
  CliRun v = run("check --isolated --verbose --color never --rules mine --target custom-allreduce " + files);
  EXPECT_NE(v.out.find("note: target custom-allreduce is read from mine/targets/custom-allreduce.json, which replaces "),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("rules/targets/custom-allreduce.json"), std::string::npos) << v.out;
}

// --no-bundled-rules, or bundled-rules = false in the configuration, reads
// only the user's targets; `rules` in the file is relative to the file.
TEST_F(UserRules, NoBundledRulesReadsOnlyTheUsersTargets) {
  fs::path tree = bothFamilies();
  CliRun r = run("check --isolated --format json --no-bundled-rules --rules " + quote(kRules) + " " + quote(tree.string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(targetsOf(r.out), std::vector<std::string>{"fused-rms-norm"}) << r.out;
  CliRun t = run("targets --no-bundled-rules --rules " + quote(kRules));
  EXPECT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(lines(t.out), 1) << t.out;
  // The same from the configuration file, read from another directory.
  fs::create_directories(dir_ / "conf");
  fs::copy(kExample / "rules", dir_ / "conf" / "my-rules", fs::copy_options::recursive);
  put("conf/.layergate.toml", "rules = [\"my-rules\"]\nbundled-rules = false\n");
  CliRun c = run("check --config conf/.layergate.toml --format json " + quote(tree.string()));
  EXPECT_EQ(c.status, 1) << c.err;
  EXPECT_EQ(targetsOf(c.out), std::vector<std::string>{"fused-rms-norm"}) << c.out;
  CliRun s = run("check --config conf/.layergate.toml --show-settings");
  EXPECT_NE(s.out.find("bundled-rules"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find((dir_ / "conf" / "my-rules").string()), std::string::npos) << s.out;
  // Nothing left to read: one line, exit 2.
  CliRun none = run("check --isolated --no-bundled-rules " + quote(tree.string()));
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_EQ(lines(none.err), 1) << none.err;
  EXPECT_NE(none.err.find("--no-bundled-rules"), std::string::npos) << none.err;
}

// --target FILE: a target file of the user's, by path.
TEST_F(UserRules, TargetTakesAFile) {
  const std::string file = (kExample / "rules" / "targets" / "fused-rms-norm.json").string();
  CliRun r = run("check --isolated --format json --target " + quote(file) + " " +
                 quote((kExample / "checkout").string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(targetsOf(r.out), std::vector<std::string>{"fused-rms-norm"}) << r.out;
  EXPECT_NE(r.out.find("\"LG002\""), std::string::npos) << r.out;
  // Files given: the same target.
  CliRun f = run("check --isolated --format json --target " + quote(file) + " " +
                 quote((kExample / "checkout" / "norm" / "fused_norm.py").string()) + " " +
                 quote((kExample / "checkout" / "csrc" / "fused_norm.cu").string()));
  EXPECT_EQ(f.status, 1) << f.err;
  EXPECT_EQ(json::parse(f.out)["target"], "fused-rms-norm") << f.out;
}

TEST_F(UserRules, ABadTargetFileIsOneLineAndExitTwo) {
  const std::string tree = quote((kExample / "checkout").string());
  struct Case {
    std::string name, text, want;
  };
  for (const Case& c : {Case{"typo.json", R"({"name": "x", "plaform": "cuda"})", "did you mean \"platform\"?"},
                        Case{"broken.json", "{\"name\": ", "not valid JSON"},
                        Case{"empty.json", R"({"name": "x"})", "a target needs python.classes"}}) {
    fs::path p = put(c.name, c.text);
    CliRun r = run("check --isolated --target " + quote(p.string()) + " " + tree);
    EXPECT_EQ(r.status, 2) << c.name << r.out;
    EXPECT_EQ(lines(r.err), 1) << c.name << r.err;
    EXPECT_NE(r.err.find(c.name), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << r.err;
  }
  CliRun missing = run("check --isolated --target nowhere/mine.json " + tree);
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("nowhere/mine.json: no such target file"), std::string::npos) << missing.err;
}

// Every limit is a key of the configuration file; the message that hits it
// names the flag and the key.
TEST_F(UserRules, ALimitSetInTheConfigurationFileIsNamedWhenHit) {
  std::string deep = "def use_fused_rms_norm(hidden_size, has_residual):\n";
  std::string indent = "    ";
  for (int i = 0; i < 12; ++i, indent += "    ") deep += indent + "if hidden_size > " + std::to_string(i) + ":\n";
  deep += indent + "return True\n    return False\n";
  put("deep/norm/fused_norm.py", deep);
  fs::create_directories(dir_ / "deep" / "csrc");
  fs::copy_file(kExample / "checkout" / "csrc" / "fused_norm.cu", dir_ / "deep" / "csrc" / "fused_norm.cu");
  const std::string files = "deep/norm/fused_norm.py deep/csrc/fused_norm.cu --rules " + quote(kRules) + " --target fused-rms-norm";
  put(".layergate.toml", "max-depth = 8\n");
  CliRun r = run("check " + files);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("deeper than 8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(raise with --max-depth or `max-depth` in .layergate.toml)"), std::string::npos) << r.err;
  // The command line wins over the file.
  EXPECT_EQ(run("check --max-depth 64 " + files).status, 1);
  // The other limits, each from the file.
  put(".layergate.toml", "max-paths = 2\n");
  CliRun paths = run("check " + files);
  EXPECT_EQ(paths.status, 2) << paths.out;
  EXPECT_NE(paths.err.find("(raise with --max-paths or `max-paths` in .layergate.toml)"), std::string::npos) << paths.err;
  put(".layergate.toml", "max-file-bytes = 100\n");
  CliRun bytes = run("check " + files);
  EXPECT_EQ(bytes.status, 2) << bytes.out;
  EXPECT_NE(bytes.err.find("(raise with --max-file-bytes or `max-file-bytes` in .layergate.toml)"), std::string::npos)
      << bytes.err;
  put(".layergate.toml", "max-files = 1\n");
  CliRun many = run("check deep --rules " + quote(kRules));
  EXPECT_EQ(many.status, 2) << many.out;
  EXPECT_NE(many.err.find("(raise with --max-files or `max-files` in .layergate.toml)"), std::string::npos) << many.err;
  put(".layergate.toml", "max-depth = 7\n");
  CliRun range = run("check " + files);
  EXPECT_EQ(range.status, 2);
  EXPECT_NE(range.err.find(".layergate.toml:1:13: 'max-depth' must be an integer from 8 to 500"), std::string::npos)
      << range.err;
  put(".layergate.toml", "solver-rlimit = 1000000\nmax-dir-depth = 3\n");
  CliRun shown = run("check --show-settings");
  EXPECT_NE(shown.out.find("solver-rlimit"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(".layergate.toml:1"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(".layergate.toml:2"), std::string::npos) << shown.out;
}

// A target that names several policy functions, over files that define more
// than one of them: the run stops and names the one that would be ignored.
TEST_F(UserRules, APolicyFunctionThatWouldBeIgnoredStopsTheRun) {
  json t = json::parse(slurp(kExample / "rules" / "targets" / "fused-rms-norm.json"));
  t["python"]["policy"]["functions"] = {"use_fused_rms_norm", "use_fused_rms_norm_v2"};
  put("two/targets/fused-rms-norm.json", t.dump(2));
  std::string py = slurp(kExample / "checkout" / "norm" / "fused_norm.py");
  py += "\n\ndef use_fused_rms_norm_v2(hidden_size, has_residual):\n    return hidden_size in (1024, 2048)\n";
  put("tree/norm/fused_norm.py", py);
  fs::create_directories(dir_ / "tree" / "csrc");
  fs::copy_file(kExample / "checkout" / "csrc" / "fused_norm.cu", dir_ / "tree" / "csrc" / "fused_norm.cu");
  CliRun r = run("check --isolated --target fused-rms-norm --rules two tree/norm/fused_norm.py tree/csrc/fused_norm.cu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("use_fused_rms_norm_v2 would be ignored"), std::string::npos) << r.err;
  // One of them defined: analysed as before.
  put("tree/norm/fused_norm.py", slurp(kExample / "checkout" / "norm" / "fused_norm.py"));
  EXPECT_EQ(run("check --isolated --target fused-rms-norm --rules two tree/norm/fused_norm.py tree/csrc/fused_norm.cu").status, 1);
}

// docs/targets.md's worked example: the command of its console block, run
// from the repository's root, prints exactly the lines the page shows.
TEST(UserRulesDocs, TheWorkedExampleOfDocsTargetsRunsAsShown) {
  std::string doc = slurp(kSource / "docs" / "targets.md");
  auto section = doc.find("## Writing your own target");
  ASSERT_NE(section, std::string::npos);
  auto block = doc.find("```console\n$ ", section);
  ASSERT_NE(block, std::string::npos);
  auto cmd_begin = block + std::string("```console\n$ ").size();
  auto cmd_end = doc.find('\n', cmd_begin);
  auto end = doc.find("```\n", cmd_end);
  std::string command = doc.substr(cmd_begin, cmd_end - cmd_begin);
  std::string shown = doc.substr(cmd_end + 1, end - cmd_end - 1);
  ASSERT_EQ(command.rfind("layergate ", 0), 0u) << command;
  CliRun r = lgtest::runCli(command.substr(std::string("layergate ").size()), kSource, 180, "env NO_COLOR=1 FORCE_COLOR= ");
  EXPECT_EQ(r.status, 1) << r.err;  // the example's gap is an error
  EXPECT_EQ(r.out, shown) << "docs/targets.md's example output is out of date; the command prints:\n" << r.out;
  EXPECT_NE(r.out.find("LG002"), std::string::npos) << r.out;
}

}  // namespace
