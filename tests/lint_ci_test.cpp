// End-to-end tests of what a team expects of a lint in CI (issue 12):
// configuration files, inline suppressions and baselines, through the binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::lines;
using lgtest::slurp;

// The seed scenario (LG001 at world sizes 4, 6 and 8 over PCIe) copied into a
// fresh directory, possibly under a subdirectory.
class Project {
 public:
  explicit Project(const std::string& tag) {
    root_ = fs::temp_directory_path() / ("lg-ci-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~Project() { fs::remove_all(root_); }
  void seed(const std::string& sub = "") {
    fs::create_directories(root_ / sub);
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie" / f, root_ / sub / f);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  void edit(const std::string& rel, const std::string& from, const std::string& to) {
    std::string text = slurp(root_ / rel);
    auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write(rel, text);
  }
  CliRun run(const std::string& args) const { return lgtest::runCli(args, root_); }
  fs::path root() const { return root_; }

 private:
  fs::path root_;
};

const std::string kAdmit = "                return inp_size < self.max_size";

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(LintConfig, PyprojectIgnoresARuleAndTheCommandLineOverridesIt) {
  Project p("pyproject");
  p.seed("src");
  p.write("pyproject.toml", "[project]\nname = \"fork\"\n\n[tool.layergate]\nignore = [\"LG001\"]\n");
  CliRun r = p.run("check src --no-matrix --color never");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find(" [LG001]\n"), std::string::npos) << r.out;
  CliRun iso = p.run("check src --isolated --no-matrix");
  EXPECT_EQ(iso.status, 1) << iso.out << iso.err;
  EXPECT_EQ(count(iso.out, " [LG001]\n"), 1) << iso.out;  // one diagnostic: world sizes 4, 6, 8
  CliRun sel = p.run("check src --select LG001,LG002 --no-matrix");
  EXPECT_EQ(sel.status, 1) << sel.out << sel.err;
  // .layergate.toml beside pyproject.toml wins; the nearest directory wins.
  p.write(".layergate.toml", "fail-on = \"never\"\n");
  CliRun dot = p.run("check src --no-matrix");
  EXPECT_EQ(dot.status, 0) << dot.out;
  EXPECT_EQ(count(dot.out, " [LG001]\n"), 1) << dot.out;  // pyproject's ignore no longer applies
  p.write("src/.layergate.toml", "[severity]\nLG001 = \"warning\"\n");
  CliRun near = p.run("check src --no-matrix --color never");
  EXPECT_EQ(near.status, 0) << near.out;
  EXPECT_EQ(count(near.out, ": warning: world sizes 4, 6, 8 without NVLink"), 1) << near.out;
  EXPECT_EQ(p.run("check src --no-matrix --fail-on warning").status, 1);
}

TEST(LintConfig, ShowSettingsSaysWhereEachValueComesFrom) {
  Project p("show");
  p.seed();
  p.write("pyproject.toml", "[tool.layergate]\nselect = [\"LG00\"]\nmax-world-size = 4\n");
  CliRun r = p.run("check . --show-settings --fail-on warning");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("configuration file: pyproject.toml"), std::string::npos) << r.out;
  auto row = [&](const std::string& key) {
    auto at = r.out.find("  " + key + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  EXPECT_NE(row("select").find("[\"LG00\"]"), std::string::npos) << r.out;
  EXPECT_NE(row("select").find("# pyproject.toml:2"), std::string::npos) << r.out;
  EXPECT_NE(row("max-world-size").find("# pyproject.toml:3"), std::string::npos) << r.out;
  EXPECT_NE(row("fail-on").find("\"warning\""), std::string::npos) << r.out;
  EXPECT_NE(row("fail-on").find("# command line"), std::string::npos) << r.out;
  EXPECT_NE(row("strict").find("# default"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rules not selected: LG010 LG011"), std::string::npos) << r.out;
  // And the analysis uses it: four world sizes, so only the ws 4 gap.
  CliRun j = p.run("check . --format json");
  ASSERT_EQ(j.status, 1) << j.err;
  json a = json::parse(j.out)["analyses"][0];
  EXPECT_EQ(a["matrix"].size(), 8u);
  ASSERT_EQ(a["findings"].size(), 1u) << j.out;
  EXPECT_EQ(a["findings"][0]["config"]["world_size"], 4);
}

TEST(LintConfig, BadConfigurationIsOneLineAndExitTwo) {
  Project p("badcfg");
  p.seed();
  p.write("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.layergate]\nselct = [\"LG001\"]\n");
  CliRun r = p.run("check .");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "layergate: error: pyproject.toml:5:1: unknown key 'selct' in [tool.layergate] (did you mean 'select'?)\n");
  EXPECT_EQ(r.out, "");
  p.write("pyproject.toml", "[tool.layergate]\nignore = [\"LG404\"]\n");
  CliRun code = p.run("check .");
  EXPECT_EQ(code.status, 2);
  EXPECT_EQ(lines(code.err), 1);
  EXPECT_EQ(code.err.rfind("layergate: error: pyproject.toml:2:11: unknown rule code 'LG404'", 0), 0u) << code.err;
  p.write("pyproject.toml", "[tool.layergate.severity]\nLG008 = \"loud\"\n");
  CliRun sev = p.run("check . --show-settings");
  EXPECT_EQ(sev.status, 2);
  EXPECT_NE(sev.err.find("pyproject.toml:2:9: bad severity 'loud' for LG008"), std::string::npos) << sev.err;
  p.write("pyproject.toml", "[tool.layergate\n");
  CliRun toml = p.run("check .");
  EXPECT_EQ(toml.status, 2);
  EXPECT_EQ(lines(toml.err), 1) << toml.err;
  EXPECT_NE(toml.err.find("pyproject.toml:1:"), std::string::npos) << toml.err;
  CliRun missing = p.run("check . --config nowhere.toml");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "layergate: error: nowhere.toml: no such configuration file\n");
  CliRun both = p.run("check . --isolated --config nowhere.toml");
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(lines(both.err), 1);
  CliRun flag = p.run("check . --isolated --ignore LG0x1");
  EXPECT_EQ(flag.status, 2);
  EXPECT_EQ(flag.err, "layergate: error: --ignore: unknown rule code 'LG0x1'\n");
}

TEST(LintConfig, ExcludeAndPerFileIgnores) {
  Project p("exclude");
  p.seed("a");
  p.seed("legacy/b");
  CliRun both = p.run("check . --isolated --format json");
  ASSERT_EQ(both.status, 1) << both.err;
  EXPECT_EQ(json::parse(both.out)["analyses"].size(), 2u);
  p.write(".layergate.toml", "exclude = [\"legacy\"]\n");
  CliRun one = p.run("check . --format json");
  ASSERT_EQ(one.status, 1) << one.err;
  json j = json::parse(one.out);
  ASSERT_EQ(j["analyses"].size(), 1u);
  EXPECT_EQ(j["analyses"][0]["inputs"]["python"][0], "a/custom_all_reduce.py");
  p.write(".layergate.toml", "exclude = [\"legacy\"]\n[per-file-ignores]\n\"a/*.py\" = [\"LG00\"]\n");
  CliRun none = p.run("check . --no-matrix");
  EXPECT_EQ(none.status, 0) << none.out;
  EXPECT_EQ(none.out.find(" [LG001]\n"), std::string::npos) << none.out;
  // Files given one by one find the configuration from the first file.
  CliRun files = p.run("check a/custom_all_reduce.py a/custom_all_reduce.cuh --no-matrix");
  EXPECT_EQ(files.status, 0) << files.out;
}

TEST(LintSuppress, InlineCommentSuppressesAndReportsMarkTheFindings) {
  Project p("suppress");
  p.seed();
  p.edit("custom_all_reduce.py", kAdmit, kAdmit + "  # layergate: ignore[LG001] -- this fork ships the PCIe kernel");
  CliRun t = p.run("check . --no-matrix --color never");
  EXPECT_EQ(t.status, 0) << t.out << t.err;
  EXPECT_EQ(t.out.find(" [LG001]\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("0 errors, 0 warnings (3 suppressed)"), std::string::npos) << t.out;
  CliRun j = p.run("check . --format json");
  ASSERT_EQ(j.status, 0) << j.err;
  json a = json::parse(j.out);
  ASSERT_EQ(a["analyses"][0]["findings"].size(), 3u);
  for (const auto& f : a["analyses"][0]["findings"]) {
    EXPECT_EQ(f["suppressed"]["kind"], "inSource");
    EXPECT_EQ(f["suppressed"]["justification"], "this fork ships the PCIe kernel");
  }
  EXPECT_EQ(a["summary"]["suppressed"], 3);
  EXPECT_EQ(a["summary"]["errors"], 0);
  CliRun s = p.run("check . --format sarif");
  ASSERT_EQ(s.status, 0) << s.err;
  json sarif = json::parse(s.out);
  const json& results = sarif["runs"][0]["results"];
  ASSERT_EQ(results.size(), 1u);  // one diagnostic, its three configurations in properties
  for (const auto& r : results) {
    ASSERT_EQ(r["suppressions"].size(), 1u);
    EXPECT_EQ(r["suppressions"][0]["kind"], "inSource");
    EXPECT_EQ(r["suppressions"][0]["justification"], "this fork ships the PCIe kernel");
  }
  bool has_lg010 = false;
  for (const auto& rule : sarif["runs"][0]["tool"]["driver"]["rules"]) has_lg010 |= rule["id"] == "LG010";
  EXPECT_TRUE(has_lg010);
}

TEST(LintSuppress, BlanketAndUnusedSuppressionsAreWarnings) {
  Project p("blanket");
  p.seed();
  p.edit("custom_all_reduce.py", kAdmit, kAdmit + "  # layergate: ignore");
  CliRun b = p.run("check . --no-matrix --color never");
  EXPECT_EQ(b.status, 0) << b.out;
  EXPECT_EQ(count(b.out, " [LG010]\n"), 1) << b.out;
  EXPECT_NE(b.out.find("custom_all_reduce.py:137:50: warning: blanket suppression"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("0 errors, 1 warning (3 suppressed)"), std::string::npos) << b.out;
  EXPECT_EQ(p.run("check . --no-matrix --fail-on warning").status, 1);
  EXPECT_EQ(p.run("check . --no-matrix --fail-on warning --ignore LG010").status, 0);

  // A code that matches nothing on its line, and a comment on a line with no
  // finding: LG011, and the real findings stay errors.
  p.edit("custom_all_reduce.py", kAdmit + "  # layergate: ignore", kAdmit + "  # layergate: ignore[LG002]");
  p.edit("custom_all_reduce.py", "        if inp_size % 16 != 0:", "        if inp_size % 16 != 0:  # layergate: ignore[LG001]");
  CliRun u = p.run("check . --no-matrix --color never");
  EXPECT_EQ(u.status, 1) << u.out;
  EXPECT_EQ(count(u.out, " [LG001]\n"), 1) << u.out;
  EXPECT_NE(u.out.find("\n1 error (3 configurations), 2 warnings\n"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("warning: unused suppression: no LG002 finding on this line [LG011]"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("warning: unused suppression: no LG001 finding on this line [LG011]"), std::string::npos) << u.out;
}

TEST(LintBaseline, WriteThenBaselineHidesKnownFindingsAcrossLineMoves) {
  Project p("baseline");
  p.seed();
  CliRun w = p.run("check . --no-matrix --write-baseline lg-baseline.json");
  EXPECT_EQ(w.status, 0) << w.err;
  EXPECT_NE(w.err.find("wrote baseline lg-baseline.json"), std::string::npos) << w.err;
  json b = json::parse(slurp(p.root() / "lg-baseline.json"));
  ASSERT_EQ(b["findings"].size(), 3u);
  for (const auto& f : b["findings"]) EXPECT_EQ(f["fingerprint"].get<std::string>().size(), 16u);

  CliRun base = p.run("check . --no-matrix --color never --baseline lg-baseline.json");
  EXPECT_EQ(base.status, 0) << base.out << base.err;
  EXPECT_EQ(base.out.find(" [LG001]\n"), std::string::npos) << base.out;
  EXPECT_NE(base.out.find("0 errors, 0 warnings (3 baselined)"), std::string::npos) << base.out;

  // Unrelated lines above move every finding: still baselined.
  p.edit("custom_all_reduce.py", "class CustomAllreduce:", "\n\n# new module comment\nX = 1\n\nclass CustomAllreduce:");
  CliRun moved = p.run("check . --format json --baseline lg-baseline.json");
  EXPECT_EQ(moved.status, 0) << moved.out;
  EXPECT_EQ(json::parse(moved.out)["summary"]["baselined"], 3);

  // A new finding is reported: the baseline lacks ws 4 (removed by hand).
  b["findings"].erase(0);
  std::ofstream(p.root() / "two.json") << b.dump();
  CliRun two = p.run("check . --format json --baseline two.json");
  EXPECT_EQ(two.status, 1) << two.out;
  json tj = json::parse(two.out);
  ASSERT_EQ(tj["analyses"][0]["findings"].size(), 1u);
  EXPECT_EQ(tj["analyses"][0]["findings"][0]["config"]["world_size"], 4);
  EXPECT_EQ(tj["summary"]["baselined"], 2);

  // A SARIF report of an earlier run is a baseline too.
  CliRun sarif = p.run("check . --format sarif");
  std::ofstream(p.root() / "earlier.sarif") << sarif.out;
  EXPECT_EQ(p.run("check . --baseline earlier.sarif").status, 0);
  // So is a JSON report (single-file shape).
  CliRun single = p.run("check custom_all_reduce.py custom_all_reduce.cuh --format json");
  std::ofstream(p.root() / "earlier.json") << single.out;
  EXPECT_EQ(p.run("check custom_all_reduce.py custom_all_reduce.cuh --baseline earlier.json").status, 0);
}

TEST(LintBaseline, MalformedBaselineIsOneLineAndExitTwo) {
  Project p("badbase");
  p.seed();
  p.write("bad.json", "{\"findings\": [{\"rule\": \"LG001\"}]}");
  CliRun r = p.run("check . --baseline bad.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "layergate: error: bad.json: not a layergate baseline: finding 1 has no fingerprint (a report of an "
                   "older layergate? write it again with --write-baseline)\n");
  p.write("bad.json", "garbage");
  CliRun g = p.run("check . --baseline bad.json");
  EXPECT_EQ(g.status, 2);
  EXPECT_EQ(g.err, "layergate: error: bad.json: not a layergate baseline: not JSON\n");
  CliRun m = p.run("check . --baseline missing.json");
  EXPECT_EQ(m.status, 2);
  EXPECT_EQ(m.err, "layergate: error: missing.json: no such baseline file\n");
  CliRun d = p.run("check . --write-baseline /nonexistent-dir/x.json");
  EXPECT_EQ(d.status, 2);
  EXPECT_EQ(lines(d.err), 1) << d.err;
}
