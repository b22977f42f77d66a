// Fingerprints and baselines (report/Baseline): stable when unrelated edits
// move a finding, changed when its line or configuration cell changes; a
// baseline hides exactly the findings it holds; malformed ones are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/Analysis.h"
#include "model/Errors.h"
#include "report/Baseline.h"

namespace fs = std::filesystem;
using namespace layergate;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Copy {
  fs::path dir;
  explicit Copy(const std::string& tag) {
    dir = fs::temp_directory_path() / ("lg-baseline-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy_file(fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie" / f, dir / f);
  }
  ~Copy() { fs::remove_all(dir); }
  std::string py() const { return (dir / "custom_all_reduce.py").string(); }
  void edit(const std::string& from, const std::string& to) {
    std::string text = slurp(py());
    auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(py()) << text;
  }
  report::Result analyse() const {
    fs::path old = fs::current_path();
    fs::current_path(dir);  // paths as a directory scan records them: relative
    driver::Request req;
    req.python_files = {"custom_all_reduce.py"};
    req.cpp_files = {"custom_all_reduce.cuh"};
    report::Result r = driver::analyse(req);
    fs::current_path(old);
    return r;
  }
};

std::vector<std::string> prints(const report::Result& r) {
  std::vector<std::string> v;
  for (const auto& f : r.findings) v.push_back(f.rule + " " + f.fingerprint);
  return v;
}

}  // namespace

TEST(Fingerprint, SurvivesLineMovesAndChangesWithTheFindingsLineOrCell) {
  Copy c("moves");
  report::Result before = c.analyse();
  ASSERT_EQ(before.findings.size(), 3u);
  std::vector<std::string> fps = prints(before);
  // One per cell: world sizes 4, 6 and 8 do not share a fingerprint.
  std::vector<std::string> sorted = fps;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& f : before.findings) EXPECT_EQ(f.fingerprint.size(), 16u) << f.fingerprint;

  // Blank lines, an unrelated function and a comment above: every finding
  // moves down, no fingerprint changes.
  c.edit("class CustomAllreduce:", "\n\n\ndef unrelated_helper(x):\n    return x + 1  # a comment\n\n\nclass CustomAllreduce:");
  c.edit("                return inp_size < self.max_size",
         "                return   inp_size < self.max_size   # a comment that changes nothing");
  report::Result moved = c.analyse();
  ASSERT_EQ(moved.findings.size(), 3u);
  EXPECT_EQ(moved.findings[0].locations[0].line, before.findings[0].locations[0].line + 7);
  EXPECT_EQ(prints(moved), fps);

  // The finding's own line changes: new fingerprints.
  c.edit("return   inp_size < self.max_size", "return inp_size <= self.max_size - 16");
  report::Result changed = c.analyse();
  ASSERT_EQ(changed.findings.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(changed.findings[i].fingerprint, fps[i]);

  // The cell changes (same rule, file, line, function): a new fingerprint.
  std::map<std::string, model::SourceText> files;
  files["g.py"] = {"x = 1\n", {}};
  model::Finding f;
  f.rule = "LG001";
  f.locations.push_back({"g.py", 1, 1, "gate", ""});
  f.config.world_size = 4;
  f.config.full_nvlink = false;
  std::vector<model::Finding> a = {f};
  f.config.world_size = 6;
  std::vector<model::Finding> b = {f};
  f.config.world_size = 4;
  f.config.full_nvlink = true;
  std::vector<model::Finding> n = {f};
  report::assignFingerprints(a, files);
  report::assignFingerprints(b, files);
  report::assignFingerprints(n, files);
  EXPECT_NE(a[0].fingerprint, b[0].fingerprint);
  EXPECT_NE(a[0].fingerprint, n[0].fingerprint);
  // Same key twice: told apart by occurrence.
  std::vector<model::Finding> twice = {a[0], a[0]};
  report::assignFingerprints(twice, files);
  EXPECT_EQ(twice[0].fingerprint, a[0].fingerprint);
  EXPECT_EQ(twice[1].fingerprint, a[0].fingerprint + "-2");
}

// The seed's fingerprints, as layergate has written them since baselines
// came in: the diagnostic is shown at the check the patch opened, and the
// fingerprints still hash the admitting line, so an existing baseline holds.
TEST(Fingerprint, AnUnchangedFindingKeepsItsFingerprint) {
  Copy c("stable");
  report::Result r = c.analyse();
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].locations[0].role, "opened");  // the primary line
  EXPECT_EQ(prints(r), (std::vector<std::string>{"LG001 160e03633aa60e33", "LG001 7de144f89dc729fd", "LG001 2ee29c47e993acbf"}));
  // A finding's fingerprint does not depend on which line comes first.
  std::map<std::string, model::SourceText> files;
  files["g.py"] = {"if ws > 2 and not x:\n    pass\nreturn True\n", {}};
  model::Finding admitted;
  admitted.rule = "LG001";
  admitted.config.world_size = 4;
  admitted.locations.push_back({"g.py", 3, 1, "gate", ""});
  model::Finding opened = admitted;
  opened.locations.insert(opened.locations.begin(), model::Location{"g.py", 1, 1, "opened", ""});
  std::vector<model::Finding> both = {admitted};
  report::assignFingerprints(both, files);
  std::vector<model::Finding> other = {opened};
  report::assignFingerprints(other, files);
  EXPECT_EQ(both[0].fingerprint, other[0].fingerprint);
}

TEST(Baseline, SarifOfOneResultPerDiagnosticOrPerConfiguration) {
  fs::path file = fs::temp_directory_path() / ("lg-baseline-sarif-" + std::to_string(::getpid()) + ".sarif");
  // One result standing for three configurations, each with its fingerprint.
  std::ofstream(file) << R"({"runs": [{"results": [{"ruleId": "LG001", "partialFingerprints": {"layergateFinding/v2": "a"},
    "properties": {"configurations": [{"fingerprint": "a"}, {"fingerprint": "b"}, {"fingerprint": "c"}]}}]}]})";
  report::Baseline b = report::readBaseline(file.string());
  EXPECT_EQ(b, (report::Baseline{{"a", 1}, {"b", 1}, {"c", 1}}));
  // An older layergate's: one result per configuration.
  std::ofstream(file) << R"({"runs": [{"results": [{"ruleId": "LG001", "partialFingerprints": {"layergateFinding/v2": "a"}},
    {"ruleId": "LG001", "partialFingerprints": {"layergateFinding/v2": "b"}}]}]})";
  b = report::readBaseline(file.string());
  EXPECT_EQ(b, (report::Baseline{{"a", 1}, {"b", 1}}));
  fs::remove(file);
}

TEST(Baseline, HidesWhatItHoldsOnceEach) {
  fs::path file = fs::temp_directory_path() / ("lg-baseline-" + std::to_string(::getpid()) + ".json");
  Copy c("apply");
  report::Result r = c.analyse();
  report::writeBaseline(file.string(), {&r});
  report::Baseline b = report::readBaseline(file.string());
  EXPECT_EQ(b.size(), 3u);
  report::Result again = c.analyse();
  EXPECT_EQ(report::applyBaseline(again, b), 3);
  EXPECT_TRUE(again.findings.empty());
  EXPECT_EQ(again.baselined, 3);
  report::Result third = c.analyse();  // each entry matches once
  EXPECT_EQ(report::applyBaseline(third, b), 0);
  EXPECT_EQ(third.findings.size(), 3u);
  fs::remove(file);
}

TEST(Baseline, MalformedFilesAreOneLineErrors) {
  fs::path file = fs::temp_directory_path() / ("lg-badbaseline-" + std::to_string(::getpid()) + ".json");
  auto error = [&](const std::string& text) {
    std::ofstream(file) << text;
    try {
      report::readBaseline(file.string());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error("{not json").find("not a layergate baseline: not JSON"), std::string::npos);
  EXPECT_NE(error("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error("{\"x\": 1}").find("no \"findings\""), std::string::npos);
  EXPECT_NE(error("{\"findings\": [{\"rule\": \"LG001\"}]}").find("finding 1 has no fingerprint"), std::string::npos);
  EXPECT_NE(error("{\"runs\": [{\"results\": [{\"ruleId\": \"LG001\"}]}]}").find("SARIF result 1 has no fingerprint"),
            std::string::npos);
  EXPECT_EQ(error("{\"findings\": []}"), "(no error)");
  fs::remove(file);
  try {
    report::readBaseline(file.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no such baseline file"), std::string::npos);
  }
}
