// What a user sees from where they stand: paths relative to the working
// directory (as a compiler prints them) whichever folder is scanned, the
// configuration file echoed as given, SARIF URIs relative to %SRCROOT%,
// --diff that `git apply` takes in a checkout, the HTML page's title and
// order, and the command-line's words (an unknown command, a rule's name).
#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;

// A fresh temporary folder: work/tree holds a copy of the seed fixture (a
// gate and its dispatch side by side, which discovery finds).
class Work : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("lg-out-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "tree");
    fs::create_directories(base_ / "elsewhere");
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie" / f, base_ / "tree" / f);
  }
  void TearDown() override { fs::remove_all(base_); }
  CliRun run(const std::string& args, const fs::path& cwd) { return lgtest::runCli(args, cwd, 300); }
  fs::path base_;
};

// Every file a JSON report names, opened from the directory it was made in.
void expectEveryFileOpensFrom(const json& j, const fs::path& cwd, const std::string& where) {
  int seen = 0;
  std::function<void(const json&)> walk = [&](const json& v) {
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (it.key() == "file" && it.value().is_string() && !it.value().get<std::string>().empty()) {
          EXPECT_TRUE(fs::is_regular_file(cwd / it.value().get<std::string>())) << where << ": " << it.value();
          ++seen;
        }
        walk(it.value());
      }
    } else if (v.is_array()) {
      for (const auto& x : v) walk(x);
    }
  };
  walk(j);
  EXPECT_GT(seen, 10) << where;
}

}  // namespace

TEST_F(Work, PathsAreRelativeToTheWorkingDirectoryWhicheverFolderIsScanned) {
  // From above the scanned folder, from inside it, from beside it.
  struct Place {
    fs::path cwd;
    std::string arg, prefix;
  };
  for (const Place& p : {Place{base_, "tree", "tree/"}, Place{base_ / "tree", ".", ""},
                         Place{base_ / "elsewhere", "../tree", "../tree/"}}) {
    CliRun t = run("check " + quote(p.arg) + " --no-matrix --color never", p.cwd);
    EXPECT_EQ(t.status, 1) << t.err;
    EXPECT_NE(t.out.find("\n" + p.prefix + "custom_all_reduce.py:97:9: error: world sizes 4, 6, 8"), std::string::npos)
        << p.arg << "\n" << t.out;
    EXPECT_NE(t.out.find(p.prefix + "custom_all_reduce.cuh:"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("layergate: checking " + p.prefix + "custom_all_reduce.py + " + p.prefix + "custom_all_reduce.cuh"),
              std::string::npos)
        << t.out;
    CliRun j = run("check " + quote(p.arg) + " --format json", p.cwd);
    json doc = json::parse(j.out);
    ASSERT_EQ(doc["analyses"].size(), 1u);
    EXPECT_EQ(doc["analyses"][0]["inputs"]["python"][0], p.prefix + "custom_all_reduce.py");
    EXPECT_EQ(doc["analyses"][0]["findings"][0]["fix"]["edits"][0]["file"], p.prefix + "custom_all_reduce.py");
    expectEveryFileOpensFrom(doc, p.cwd, p.arg);
  }
}

TEST_F(Work, ConfigurationFileIsEchoedAsGiven) {
  { std::ofstream(base_ / "x.toml") << "fail-on = \"warning\"\n"; }
  fs::create_directories(base_ / "a" / "b");
  const std::string abs = (base_ / "x.toml").string();
  CliRun given = run("check ../../tree --config " + quote(abs) + " --show-settings", base_ / "a" / "b");
  EXPECT_EQ(given.status, 0) << given.err;
  EXPECT_NE(given.out.find("configuration file: " + abs + "\n"), std::string::npos) << given.out;
  EXPECT_NE(given.out.find("# " + abs + ":1"), std::string::npos) << given.out;
  EXPECT_EQ(given.out.find("../../x.toml"), std::string::npos) << given.out;
  CliRun rel = run("check ../../tree --config ../../x.toml --show-settings", base_ / "a" / "b");
  EXPECT_NE(rel.out.find("configuration file: ../../x.toml\n"), std::string::npos) << rel.out;
  // found by the search upwards, outside the working directory: absolute
  { std::ofstream(base_ / ".layergate.toml") << "fail-on = \"never\"\n"; }
  CliRun found = run("check ../../tree --show-settings", base_ / "a" / "b");
  EXPECT_NE(found.out.find("configuration file: " + (base_ / ".layergate.toml").string() + "\n"), std::string::npos)
      << found.out;
  CliRun bad = run("check ../../tree --config " + quote((base_ / "none.toml").string()), base_ / "a" / "b");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "layergate: error: " + (base_ / "none.toml").string() + ": no such configuration file\n");
}

// --diff in a git checkout: `git apply` (a/ b/ prefixes, paths from the
// working directory) takes it from the top and from a subfolder, and the
// applied fix leaves no finding.
TEST_F(Work, GitApplyTakesTheDiffInACheckout) {
  auto sh = [&](const std::string& cmd, const fs::path& cwd) {
    return std::system(("cd " + quote(cwd.string()) + " && " + cmd + " >/dev/null 2>&1").c_str());
  };
  ASSERT_EQ(sh("git init -q . && git add tree && git -c user.name=t -c user.email=t@t commit -qm seed", base_), 0);
  CliRun top = run("check tree --diff", base_);
  EXPECT_EQ(top.status, 1) << top.err;
  EXPECT_EQ(top.out.rfind("--- a/tree/custom_all_reduce.py\n+++ b/tree/custom_all_reduce.py\n@@ ", 0), 0u) << top.out;
  std::ofstream(base_ / "top.patch", std::ios::binary) << top.out;
  EXPECT_EQ(sh("git apply --check top.patch", base_), 0) << top.out;

  CliRun sub = run("check . --diff", base_ / "tree");
  EXPECT_EQ(sub.out.rfind("--- a/custom_all_reduce.py\n+++ b/custom_all_reduce.py\n@@ ", 0), 0u) << sub.out;
  std::ofstream(base_ / "sub.patch", std::ios::binary) << sub.out;
  EXPECT_EQ(sh("git apply --check ../sub.patch", base_ / "tree"), 0) << sub.out;

  ASSERT_EQ(sh("git apply top.patch", base_), 0);
  CliRun after = run("check tree --no-matrix", base_);
  EXPECT_EQ(after.status, 0) << after.out;
  EXPECT_EQ(after.out.find("[LG001]"), std::string::npos) << after.out;
}

TEST_F(Work, SarifUrisAreRelativeToTheScannedFolder) {
  CliRun r = run("check tree --format sarif", base_);
  ASSERT_EQ(r.status, 1) << r.err;
  json run0 = json::parse(r.out)["runs"][0];
  std::string root = run0["originalUriBaseIds"]["%SRCROOT%"]["uri"];
  EXPECT_EQ(root, "file://" + fs::absolute(base_ / "tree").lexically_normal().string() + "/");
  ASSERT_EQ(run0["results"].size(), 1u);  // one diagnostic, three configurations
  for (const auto& res : run0["results"]) {
    const json& a = res["locations"][0]["physicalLocation"]["artifactLocation"];
    EXPECT_EQ(a["uri"], "custom_all_reduce.py");
    EXPECT_EQ(a["uriBaseId"], "%SRCROOT%");
    // each related location linked from the message: [text](id)
    const std::string text = res["message"]["text"];
    ASSERT_FALSE(res["relatedLocations"].empty());
    for (const auto& rl : res["relatedLocations"]) {
      EXPECT_NE(text.find("](" + std::to_string(rl["id"].get<int>()) + ")"), std::string::npos) << text;
      EXPECT_EQ(rl["physicalLocation"]["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    }
    // the flag trace, hop by hop
    const json& steps = res["codeFlows"][0]["threadFlows"][0]["locations"];
    ASSERT_GE(steps.size(), 2u) << res.dump(2);
    EXPECT_EQ(steps[0]["location"]["message"]["text"], "1. probe");
    EXPECT_EQ(steps[0]["location"]["physicalLocation"]["artifactLocation"]["uri"], "custom_all_reduce.py");
  }
  for (const auto& rule : run0["tool"]["driver"]["rules"]) {
    const std::string id = rule["id"];
    EXPECT_EQ(rule["helpUri"].get<std::string>().rfind("https://", 0), 0u) << id;
    EXPECT_NE(rule["helpUri"].get<std::string>().find("/docs/rules/" + id + ".md"), std::string::npos) << id;
    EXPECT_EQ(rule["help"]["markdown"].get<std::string>().find("](../"), std::string::npos) << id;
  }
}

TEST_F(Work, HtmlPageSaysWhatWasCheckedAndPutsTheFindingsFirst) {
  CliRun r = run("check tree --format html -o page.html", base_);
  ASSERT_EQ(r.status, 1) << r.err;
  std::string page = slurp(base_ / "page.html");
  EXPECT_NE(page.find("<title>layergate report: tree</title>"), std::string::npos);
  EXPECT_NE(page.find("<dt>command</dt><dd class=\"mono\">layergate check tree --format html -o page.html</dd>"),
            std::string::npos)
      << page.substr(0, 3000);
  EXPECT_NE(page.find("<dt>date</dt>"), std::string::npos);
  EXPECT_EQ(page.find("<dt>commit</dt>"), std::string::npos);  // not a git checkout
  // summary, findings (each with its fixes), then the matrix
  auto findings = page.find("<h3>Findings (1)</h3>"), matrix = page.find("<h3>Configuration matrix</h3>");
  ASSERT_NE(findings, std::string::npos);
  ASSERT_NE(matrix, std::string::npos);
  EXPECT_LT(page.find("<p class=\"summary\">"), findings);
  EXPECT_LT(findings, matrix);
  auto first = page.find("<article class=\"finding"), fix = page.find("<div class=\"fix fix-safe\"><b>fix (safe)</b>");
  ASSERT_NE(fix, std::string::npos);
  EXPECT_LT(first, fix);
  EXPECT_LT(fix, page.find("</article>"));
  EXPECT_NE(page.find("<div class=\"fix fix-unsafe\"><b>fix (unsafe)</b>"), std::string::npos);
  EXPECT_NE(page.find("if self.world_size in (4, 6, 8) and not self.full_nvlink:"), std::string::npos);
  // links from the page's folder; the text as from the working directory
  EXPECT_NE(page.find("<a class=\"loc\" href=\"tree/custom_all_reduce.py#L137\">tree/custom_all_reduce.py:137:17</a>"),
            std::string::npos);

  // In a git checkout: its name and commit.
  auto sh = [&](const std::string& cmd) {
    return std::system(("cd " + quote(base_.string()) + " && " + cmd + " >/dev/null 2>&1").c_str());
  };
  ASSERT_EQ(sh("git init -q . && git add tree && git -c user.name=t -c user.email=t@t commit -qm seed"), 0);
  ASSERT_EQ(std::system(("git -C " + quote(base_.string()) + " rev-parse HEAD > " + quote((base_ / "head.txt").string())).c_str()), 0);
  const std::string head = slurp(base_ / "head.txt").substr(0, 40);
  r = run("check . --format html -o page.html", base_ / "tree");
  page = slurp(base_ / "tree" / "page.html");
  EXPECT_NE(page.find("<title>layergate report: " + base_.filename().string() + "</title>"), std::string::npos)
      << page.substr(0, 1500);
  EXPECT_NE(page.find("<dt>commit</dt><dd class=\"mono\">" + head + "</dd>"), std::string::npos) << page.substr(0, 3000);
}

TEST(Commands, AnUnknownCommandIsNamed) {
  CliRun r = lgtest::runCli("frobnicate", LAYERGATE_FIXTURES);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "layergate: error: unknown command 'frobnicate' (commands: check, explain, selftest, rules, targets; "
                   "see --help)\n");
  // a known one still runs; a flag first is CLI11's to judge
  EXPECT_EQ(lgtest::runCli("rules", LAYERGATE_FIXTURES).status, 0);
  CliRun flag = lgtest::runCli("--frobnicate", LAYERGATE_FIXTURES);
  EXPECT_EQ(flag.status, 2);
  EXPECT_EQ(lgtest::lines(flag.err), 1) << flag.err;
}

TEST(Commands, ExplainTakesARuleNameAsWellAsItsCode) {
  CliRun code = lgtest::runCli("explain LG001", LAYERGATE_FIXTURES);
  ASSERT_EQ(code.status, 0);
  CliRun name = lgtest::runCli("explain admitted-no-kernel", LAYERGATE_FIXTURES);
  EXPECT_EQ(name.status, 0) << name.err;
  EXPECT_EQ(name.out, code.out);
  // every name `layergate rules` prints
  CliRun rules = lgtest::runCli("rules", LAYERGATE_FIXTURES);
  std::istringstream lines(rules.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string id, severity, rule_name;
    words >> id >> severity >> rule_name;
    CliRun e = lgtest::runCli("explain " + rule_name, LAYERGATE_FIXTURES);
    EXPECT_EQ(e.status, 0) << rule_name << ": " << e.err;
    EXPECT_EQ(e.out, lgtest::runCli("explain " + id, LAYERGATE_FIXTURES).out) << rule_name;
    ++n;
  }
  EXPECT_GE(n, 10);
  CliRun bad = lgtest::runCli("explain no-such-rule", LAYERGATE_FIXTURES);
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lgtest::lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("LG001 admitted-no-kernel"), std::string::npos) << bad.err;
}

// A check that stops (exit 2) with --output still leaves a report that says
// so: SARIF's invocation not successful with the reason as an error
// notification (code scanning then shows the run as failed instead of
// choking on an empty file), JSON the report's shape with `error`. The same
// one line on stderr; a stale file from an earlier run is replaced.
TEST_F(Work, AReportFileSaysWhyTheCheckStopped) {
  fs::path tree = base_ / "tree";
  std::ofstream(tree / "custom_all_reduce.py", std::ios::app) << "\ndef broken(:\n";
  struct Case {
    std::string args, what;
    bool scan;
  };
  for (const Case& c : {Case{"check . --format sarif -o y.sarif", "custom_all_reduce.py", true},
                        Case{"check --python nope.py --cpp nope.cuh --format sarif -o y.sarif", "nope.cuh", false},
                        Case{"check . --format json -o y.json", "custom_all_reduce.py", true},
                        Case{"check --python nope.py --cpp custom_all_reduce.cuh --format json -o y.json", "nope.py", false}}) {
    bool sarif = c.args.find("sarif") != std::string::npos;
    fs::path file = tree / (sarif ? "y.sarif" : "y.json");
    std::ofstream(file) << "stale";
    CliRun r = run(c.args, tree);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    ASSERT_EQ(lgtest::lines(r.err), 1) << c.args << ": " << r.err;
    ASSERT_EQ(r.err.rfind("layergate: error: ", 0), 0u) << r.err;
    std::string reason = r.err.substr(18, r.err.size() - 19);
    EXPECT_NE(reason.find(c.what), std::string::npos) << c.args << ": " << reason;
    EXPECT_EQ(r.out, "") << c.args;
    json j = json::parse(slurp(file));
    if (sarif) {
      EXPECT_EQ(j["version"], "2.1.0");
      ASSERT_EQ(j["runs"].size(), 1u);
      const json& run0 = j["runs"][0];
      EXPECT_EQ(run0["tool"]["driver"]["name"], "layergate");
      EXPECT_GE(run0["tool"]["driver"]["rules"].size(), 10u);
      EXPECT_TRUE(run0["results"].empty());
      const json& inv = run0["invocations"][0];
      EXPECT_EQ(inv["executionSuccessful"], false) << inv.dump(2);
      EXPECT_EQ(inv["exitCode"], 2);
      ASSERT_EQ(inv["toolExecutionNotifications"].size(), 1u);
      EXPECT_EQ(inv["toolExecutionNotifications"][0]["level"], "error");
      EXPECT_EQ(inv["toolExecutionNotifications"][0]["message"]["text"], reason);
    } else {
      EXPECT_EQ(j["error"], reason) << j.dump(2);
      EXPECT_EQ(j["tool"]["name"], "layergate");
      EXPECT_FALSE(j.contains("summary")) << "nothing was counted: " << j.dump(2);
      EXPECT_TRUE(j[c.scan ? "analyses" : "findings"].empty()) << j.dump(2);
    }
  }
  // Without --output the report goes nowhere: stdout stays empty.
  CliRun plain = run("check . --format sarif", tree);
  EXPECT_EQ(plain.status, 2);
  EXPECT_EQ(plain.out, "");
}

// `check` alone checks the working directory, as `ruff check` does.
TEST_F(Work, CheckWithoutAPathChecksTheWorkingDirectory) {
  CliRun dot = run("check . --color never", base_ / "tree");
  CliRun none = run("check --color never", base_ / "tree");
  EXPECT_EQ(none.status, 1) << none.err;
  EXPECT_EQ(none.err, "");
  EXPECT_EQ(none.out, dot.out);
  EXPECT_NE(none.out.find("custom_all_reduce.py:97:9: error: world sizes 4, 6, 8"), std::string::npos) << none.out;
  CliRun json_none = run("check --format json", base_ / "tree");
  EXPECT_EQ(json_none.status, 1);
  EXPECT_EQ(json::parse(json_none.out)["analyses"].size(), 1u);
}

// Colour: --color always/never wins; with auto, NO_COLOR (set, not empty)
// turns it off, FORCE_COLOR (set, not empty) turns it on in a pipe, NO_COLOR
// first; an empty value is not set.
TEST_F(Work, ColourFollowsNoColorAndForceColor) {
  struct Case {
    const char *no_color, *force_color, *flag;
    bool coloured;
  };
  const Case cases[] = {
      {nullptr, nullptr, "", false},  // stdout is a file here
      {nullptr, "1", "", true},
      {nullptr, "", "", false},
      {"1", nullptr, "--color always", true},
      {"1", nullptr, "", false},
      {"1", "1", "", false},
      {"", "1", "", true},
      {nullptr, "1", "--color never", false},
      {nullptr, "1", "--color auto", true},
  };
  for (const auto& c : cases) {
    auto set = [](const char* name, const char* v) { v ? ::setenv(name, v, 1) : ::unsetenv(name); };
    set("NO_COLOR", c.no_color);
    set("FORCE_COLOR", c.force_color);
    CliRun r = run(std::string("check . ") + c.flag, base_ / "tree");
    std::string label = std::string("NO_COLOR=") + (c.no_color ? c.no_color : "(unset)") +
                        " FORCE_COLOR=" + (c.force_color ? c.force_color : "(unset)") + " " + c.flag;
    EXPECT_EQ(r.status, 1) << label << r.err;
    EXPECT_EQ(r.out.find("\033[") != std::string::npos, c.coloured) << label << "\n" << r.out;
  }
  ::unsetenv("NO_COLOR");
  ::unsetenv("FORCE_COLOR");
  // --output FILE on auto: no escapes in the file, whatever stdout is.
  CliRun f = run("check . -o report.txt", base_ / "tree");
  EXPECT_EQ(slurp(base_ / "tree" / "report.txt").find("\033["), std::string::npos);
}

// explain prints a rule's page for a terminal: a link as its text and where
// it goes (a docs page by its path from the top of the repository), no
// markdown link syntax; code blocks as written.
TEST(Commands, ExplainPrintsLinksAsReadableText) {
  CliRun e = lgtest::runCli("explain LG001", LAYERGATE_FIXTURES);
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_NE(e.out.find("see policy gates (docs/policy-gates.md)"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("(see usage (docs/usage.md))"), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("]("), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("../"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("  if self.world_size in (4, 6, 8) and not self.full_nvlink:\n"), std::string::npos) << e.out;
  CliRun e2 = lgtest::runCli("explain LG002", LAYERGATE_FIXTURES);
  EXPECT_NE(e2.out.find("(targets (docs/targets.md): variables"), std::string::npos) << e2.out;
}
