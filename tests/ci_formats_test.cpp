// What CI services read from a check: GitHub Actions annotations and GitLab
// Code Quality (one entry per diagnostic, as the JSON report's "diagnostics"
// counts them), and --diff-base, which fails only on the findings a change
// touches in a git checkout.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "CliRunner.h"
#include "cli/DiffBase.h"
#include "report/Report.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;

// A fresh temporary folder holding a copy of the seed fixture in tree/.
class Ci : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("lg-ci-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(tree());
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie" / f, tree() / f);
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path tree() const { return base_ / "tree"; }
  CliRun run(const std::string& args, const fs::path& cwd) { return lgtest::runCli(args, cwd, 300); }
  // The diagnostics of the JSON report (a scan of tree/ from base_), unsuppressed.
  json diagnostics() {
    CliRun j = run("check tree --format json", base_);
    json out = json::array(), report = json::parse(j.out);
    for (const auto& d : report["analyses"][0]["diagnostics"])
      if (!d.contains("suppressed")) out.push_back(d);
    return out;
  }
  // Replaces `from` (which must be there) with `to` in tree/<file>.
  void edit(const std::string& file, const std::string& from, const std::string& to) {
    std::string s = slurp(tree() / file);
    auto at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    std::ofstream(tree() / file, std::ios::binary | std::ios::trunc) << s;
  }
  int git(const std::string& args) {
    return std::system(("git -C " + quote(tree().string()) + " -c user.name=t -c user.email=t@t " + args +
                        " >/dev/null 2>&1").c_str());
  }
  fs::path base_;
};

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The seed's gap line: the fork's patch that admits PCIe-only machines.
const char* kGapLine = "if world_size > 2 and not full_nvlink and not force_pcie:";
const char* kClosedLine = "if world_size > 2 and not full_nvlink:";

}  // namespace

TEST(GithubEscaping, MessagesAndPropertiesAsTheToolkitEscapesThem) {
  EXPECT_EQ(layergate::report::githubEscapeData("100% a,b: c\r\nd"), "100%25 a,b: c%0D%0Ad");
  EXPECT_EQ(layergate::report::githubEscapeProperty("dir,x/a:b%.py\n"), "dir%2Cx/a%3Ab%25.py%0A");
}

TEST_F(Ci, GithubAnnotationsOnePerDiagnosticAtItsPrimaryLocation) {
  json diags = diagnostics();
  ASSERT_FALSE(diags.empty());
  CliRun g = run("check tree --output-format github", base_);
  EXPECT_EQ(g.status, 1) << g.err;
  auto lines = splitLines(g.out);
  ASSERT_EQ(lines.size(), diags.size()) << g.out;
  std::regex shape(R"(^::(error|warning) file=([^,:]+),line=(\d+),col=(\d+),title=(LG\d{3})::(.+)$)");
  bool comma = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, shape)) << lines[i];
    const json& d = diags[i];
    EXPECT_EQ(m[1].str(), d["severity"].get<std::string>());
    EXPECT_EQ(m[2].str(), d["location"]["file"].get<std::string>());
    EXPECT_EQ(std::stoi(m[3].str()), d["location"]["line"].get<int>());
    EXPECT_EQ(std::stoi(m[4].str()), d["location"]["column"].get<int>());
    EXPECT_EQ(m[5].str(), d["rule"].get<std::string>());
    // The message as the report has it: commas and colons are not escaped there.
    EXPECT_EQ(m[6].str(), d["message"].get<std::string>());
    comma = comma || m[6].str().find(',') != std::string::npos;
  }
  EXPECT_TRUE(comma) << "the seed's messages name several world sizes";
  EXPECT_NE(g.out.find("::error file=tree/custom_all_reduce.py,line=97,col=9,title=LG001::world sizes 4, 6, 8"),
            std::string::npos)
      << g.out;
  // The files given instead of a folder: the same annotations.
  CliRun files = run("check tree/custom_all_reduce.py tree/custom_all_reduce.cuh -f github", base_);
  EXPECT_EQ(files.status, 1);
  EXPECT_EQ(files.out, g.out);
  // A clean run prints nothing and exits 0.
  edit("custom_all_reduce.py", kGapLine, kClosedLine);
  CliRun clean = run("check tree -f github", base_);
  EXPECT_EQ(clean.status, 0) << clean.out << clean.err;
  EXPECT_EQ(clean.out, "");
}

TEST_F(Ci, GitlabCodeQualityOneIssuePerDiagnostic) {
  json diags = diagnostics();
  CliRun g = run("check tree --output-format gitlab", base_);
  EXPECT_EQ(g.status, 1) << g.err;
  json issues = json::parse(g.out);
  ASSERT_TRUE(issues.is_array());
  ASSERT_EQ(issues.size(), diags.size()) << g.out;
  std::set<std::string> fingerprints;
  for (std::size_t i = 0; i < issues.size(); ++i) {
    const json& x = issues[i];
    const json& d = diags[i];
    EXPECT_EQ(x.size(), 5u) << x.dump();
    EXPECT_EQ(x["description"], d["message"]);
    EXPECT_EQ(x["check_name"], d["rule"]);
    EXPECT_EQ(x["fingerprint"], d["fingerprint"]);
    EXPECT_EQ(x["severity"], d["severity"] == "error" ? "major" : d["severity"] == "warning" ? "minor" : "info");
    EXPECT_EQ(x["location"]["path"], d["location"]["file"]);
    EXPECT_EQ(x["location"]["lines"]["begin"], d["location"]["line"]);
    fingerprints.insert(x["fingerprint"].get<std::string>());
  }
  EXPECT_EQ(fingerprints.size(), issues.size());
  EXPECT_EQ(issues[0]["severity"], "major");
  // Stable across runs.
  EXPECT_EQ(run("check tree --output-format gitlab", base_).out, g.out);
}

TEST_F(Ci, DiffBaseFailsOnlyOnFindingsTheChangeTouches) {
  // Before the fork's patch: no gap; committed.
  edit("custom_all_reduce.py", kGapLine, kClosedLine);
  ASSERT_EQ(git("init -q"), 0);
  ASSERT_EQ(git("add -A"), 0);
  ASSERT_EQ(git("commit -q -m before"), 0);
  CliRun before = run("check . --diff-base HEAD", tree());
  EXPECT_EQ(before.status, 0) << before.out << before.err;

  // The patch opens the gap on a changed line: it fails the run.
  edit("custom_all_reduce.py", kClosedLine, kGapLine);
  CliRun opened = run("check . --diff-base HEAD --no-matrix --color never", tree());
  EXPECT_EQ(opened.status, 1) << opened.out << opened.err;
  EXPECT_NE(opened.out.find("custom_all_reduce.py:97:9: error: world sizes 4, 6, 8"), std::string::npos) << opened.out;
  EXPECT_EQ(opened.out.find("pre-existing"), std::string::npos) << opened.out;

  // Committed, then an unrelated line changed: the gap is pre-existing,
  // listed and not counted.
  ASSERT_EQ(git("commit -q -a -m patch"), 0);
  edit("custom_all_reduce.py", "self.max_size = max_size", "self.max_size = max_size  # unrelated");
  CliRun old = run("check . --diff-base HEAD --no-matrix --color never", tree());
  EXPECT_EQ(old.status, 0) << old.out << old.err;
  EXPECT_NE(old.out.find("layergate: pre-existing (not counted): custom_all_reduce.py:97:9: LG001 world sizes 4, 6, 8"),
            std::string::npos)
      << old.out;
  EXPECT_NE(old.out.find("0 errors, 0 warnings (3 pre-existing)"), std::string::npos) << old.out;
  CliRun oldJson = run("check . --diff-base HEAD --format json", tree());
  EXPECT_EQ(oldJson.status, 0);
  json j = json::parse(oldJson.out);
  EXPECT_EQ(j["summary"]["errors"], 0);
  EXPECT_EQ(j["summary"]["preexisting"], 3);
  ASSERT_EQ(j["analyses"][0]["preexisting"].size(), 3u);
  EXPECT_EQ(j["analyses"][0]["preexisting"][0]["line"], 97);
  EXPECT_EQ(run("check . --diff-base HEAD -f github", tree()).out, "");
  // Against the commit before the patch, the gap's line changed: it fails.
  EXPECT_EQ(run("check . --diff-base HEAD~1 -f github", tree()).status, 1);
  // Without --diff-base the gap fails as ever.
  EXPECT_EQ(run("check .", tree()).status, 1);

  // A commit git cannot resolve, an option for a commit, no checkout: one line, exit 2.
  for (const char* ref : {"no-such-ref", "--output=x"}) {
    CliRun bad = run(std::string("check . --diff-base=") + ref, tree());
    EXPECT_EQ(bad.status, 2) << ref << bad.out << bad.err;
    EXPECT_EQ(lgtest::lines(bad.err), 1) << bad.err;
    EXPECT_NE(bad.err.find(ref), std::string::npos) << bad.err;
  }
  fs::create_directories(base_ / "plain");
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) fs::copy_file(tree() / f, base_ / "plain" / f);
  CliRun plain = run("check plain --diff-base HEAD", base_);
  EXPECT_EQ(plain.status, 2) << plain.out << plain.err;
  EXPECT_NE(plain.err.find("is not in a git checkout"), std::string::npos) << plain.err;
  EXPECT_EQ(lgtest::lines(plain.err), 1) << plain.err;
}

TEST(DiffBaseLines, AddedChangedAndDeletedLinesOfAUnifiedDiff) {
  std::string diff =
      "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -3 +3 @@ def f():\n-a\n+b\n@@ -10,0 +11,2 @@\n+c\n+d\n"
      "@@ -20,2 +21,0 @@\n-e\n-f\n"
      "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n";
  auto changed = layergate::driver::parseUnifiedDiff(diff, "/r");
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed.begin()->first, "/r/x.py");
  EXPECT_EQ(changed.begin()->second, (std::set<int>{3, 11, 12, 21, 22}));
}
