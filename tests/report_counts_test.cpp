// One finding, one place, one count, whatever the format: every diagnostic
// sits at the same primary line in text, concise, JSON, SARIF and HTML; a
// suppression comment on that line holds in all of them; and each format
// counts the same diagnostics as the text report's summary line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "CliRunner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;

struct Counts {
  int errors = -1, warnings = -1;
  bool operator==(const Counts& o) const { return errors == o.errors && warnings == o.warnings; }
};

std::ostream& operator<<(std::ostream& os, const Counts& c) {
  return os << c.errors << " errors, " << c.warnings << " warnings";
}

// What one `layergate check .` says in each format, run in `dir`; the HTML
// page is written to `page`.
struct Reports {
  CliRun text, concise, json_run, sarif_run, html;
  json j, sarif;
  std::string page;
};

Reports runAll(const fs::path& dir, const fs::path& page) {
  Reports r;
  auto run = [&](const std::string& args) { return lgtest::runCli("check . --isolated " + args, dir, 300); };
  r.text = run("--no-matrix --color never");
  r.concise = run("--output-format concise");
  r.json_run = run("--format json");
  r.sarif_run = run("--format sarif");
  r.html = run("--format html -o " + quote(page.string()));
  r.j = json::parse(r.json_run.out, nullptr, false);
  r.sarif = json::parse(r.sarif_run.out, nullptr, false);
  r.page = slurp(page);
  return r;
}

// "1 error (3 configurations), 0 warnings" (the text report's last line).
Counts textCounts(const std::string& out) {
  static const std::regex line(R"((?:^|\n)(\d+) errors?(?: \(\d+ configurations\))?, (\d+) warnings?(?: \(\d+ configurations\))?(?: \([^)]*\))?\n$)");
  std::smatch m;
  if (!std::regex_search(out, m, line)) return {};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

// "Found 1 error, 0 warnings." / "All checks passed."
Counts conciseCounts(const std::string& out) {
  if (out.find("All checks passed.\n") != std::string::npos) return {0, 0};
  static const std::regex line(R"(Found (\d+) errors?, (\d+) warnings?\.)");
  std::smatch m;
  if (!std::regex_search(out, m, line)) return {};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

Counts sarifCounts(const json& sarif) {
  Counts c{0, 0};
  for (const auto& r : sarif["runs"][0]["results"]) {
    if (r.contains("suppressions")) continue;
    c.errors += r["level"] == "error";
    c.warnings += r["level"] == "warning";
  }
  return c;
}

int occurrences(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The cards of unsuppressed diagnostics (a suppressed one is "finding suppressed").
Counts htmlCounts(const std::string& page) {
  return {occurrences(page, "<article class=\"finding sev-error "), occurrences(page, "<article class=\"finding sev-warning ")};
}

// Each format's primary locations, in report order, as "file:line:col".
std::vector<std::string> textPrimaries(const std::string& out) {
  static const std::regex diag(R"((?:^|\n)([^\s:]+:\d+:\d+): (?:error|warning): )");
  std::vector<std::string> v;
  for (std::sregex_iterator it(out.begin(), out.end(), diag), end; it != end; ++it) v.push_back((*it)[1]);
  return v;
}

std::vector<std::string> concisePrimaries(const std::string& out) {
  static const std::regex diag(R"((?:^|\n)([^\s:]+:\d+:\d+): LG\d+ )");
  std::vector<std::string> v;
  for (std::sregex_iterator it(out.begin(), out.end(), diag), end; it != end; ++it) v.push_back((*it)[1]);
  return v;
}

std::vector<std::string> jsonPrimaries(const json& j) {
  std::vector<std::string> v;
  for (const auto& a : j["analyses"])
    for (const auto& d : a["diagnostics"])
      if (!d.contains("suppressed"))
        v.push_back(d["location"]["file"].get<std::string>() + ":" + std::to_string(d["location"]["line"].get<int>()) + ":" +
                    std::to_string(d["location"]["column"].get<int>()));
  return v;
}

std::vector<std::string> sarifPrimaries(const json& sarif) {
  std::vector<std::string> v;
  for (const auto& r : sarif["runs"][0]["results"]) {
    if (r.contains("suppressions")) continue;
    const json& p = r["locations"][0]["physicalLocation"];
    v.push_back(p["artifactLocation"]["uri"].get<std::string>() + ":" + std::to_string(p["region"]["startLine"].get<int>()) +
                ":" + std::to_string(p["region"]["startColumn"].get<int>()));
  }
  return v;
}

// A card's first location link is its primary.
std::vector<std::string> htmlPrimaries(const std::string& page) {
  static const std::regex card(R"re(<article class="finding sev-[a-z]+ [^"]*"[^>]*>[\s\S]*?<a class="loc" href="[^"]*">([^<]+)</a>)re");
  std::vector<std::string> v;
  for (std::sregex_iterator it(page.begin(), page.end(), card), end; it != end; ++it) v.push_back((*it)[1]);
  return v;
}

class Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("lg-counts-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "tree");
  }
  void TearDown() override { fs::remove_all(base_); }
  void copyFixture(const std::string& name) {
    for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"})
      fs::copy_file(fs::path(LAYERGATE_FIXTURES) / name / f, base_ / "tree" / f, fs::copy_options::overwrite_existing);
  }
  // Appends `comment` to line `line` of the tree's file.
  void appendToLine(const std::string& file, int line, const std::string& comment) {
    std::string text = slurp(base_ / "tree" / file);
    std::size_t at = 0;
    for (int i = 1; i < line; ++i) at = text.find('\n', at) + 1;
    text.insert(text.find('\n', at), comment);
    std::ofstream(base_ / "tree" / file, std::ios::binary) << text;
  }
  fs::path base_;
};

void expectOneCountAndOnePlace(const Reports& r, const Counts& want, const std::string& what) {
  ASSERT_FALSE(r.j.is_discarded()) << what << r.json_run.err;
  ASSERT_FALSE(r.sarif.is_discarded()) << what << r.sarif_run.err;
  EXPECT_EQ(textCounts(r.text.out), want) << what << "\n" << r.text.out;
  EXPECT_EQ(conciseCounts(r.concise.out), want) << what << "\n" << r.concise.out;
  EXPECT_EQ((Counts{r.j["summary"]["errors"].get<int>(), r.j["summary"]["warnings"].get<int>()}), want) << what;
  EXPECT_EQ(sarifCounts(r.sarif), want) << what;
  EXPECT_EQ(htmlCounts(r.page), want) << what;
  // The page's summary pill says it too.
  EXPECT_NE(r.page.find(">" + std::to_string(want.errors) + (want.errors == 1 ? " error<" : " errors<")), std::string::npos) << what;
  // And every format puts each diagnostic at the same line.
  auto text = textPrimaries(r.text.out);
  EXPECT_EQ(text.size(), static_cast<std::size_t>(want.errors + want.warnings)) << what << "\n" << r.text.out;
  EXPECT_EQ(concisePrimaries(r.concise.out), text) << what;
  EXPECT_EQ(jsonPrimaries(r.j), text) << what;
  EXPECT_EQ(sarifPrimaries(r.sarif), text) << what;
  EXPECT_EQ(htmlPrimaries(r.page), text) << what;
  // JSON keeps one finding per configuration, each naming its diagnostic.
  int configurations = 0;
  for (const auto& a : r.j["analyses"])
    for (const auto& f : a["findings"])
      if (!f.contains("suppressed") && f["severity"] == "error") {
        ++configurations;
        const json& d = a["diagnostics"][f["diagnostic"].get<std::size_t>()];
        EXPECT_EQ(d["rule"], f["rule"]) << what;
        EXPECT_EQ(d["location"], f["locations"][0]) << what << ": a finding's first location is its diagnostic's";
      }
  EXPECT_EQ(r.j["summary"]["error_configurations"], configurations) << what;
}

}  // namespace

TEST_F(Tree, EveryFormatCountsTheSameDiagnosticsAtTheSameLines) {
  for (const auto& [fixture, want] : {std::pair<std::string, Counts>{"seed-force-pcie", {1, 0}},
                                      {"vllm-algo-env-fork", {1, 1}},
                                      {"sglang-helper-module-alone", {0, 2}}}) {
    copyFixture(fixture);
    Reports r = runAll(base_ / "tree", base_ / "report.html");
    expectOneCountAndOnePlace(r, want, fixture);
    if (fixture == "seed-force-pcie") {
      // The seed's one diagnostic stands for world sizes 4, 6 and 8: three
      // configurations in JSON's findings and in the SARIF result, one alert.
      EXPECT_NE(r.text.out.find("\n1 error (3 configurations), 0 warnings\n"), std::string::npos) << r.text.out;
      EXPECT_EQ(r.j["analyses"][0]["findings"].size(), 3u);
      EXPECT_EQ(r.j["summary"]["error_configurations"], 3);
      ASSERT_EQ(r.sarif["runs"][0]["results"].size(), 1u);
      EXPECT_EQ(r.sarif["runs"][0]["results"][0]["properties"]["configurations"].size(), 3u);
      EXPECT_EQ(textPrimaries(r.text.out), std::vector<std::string>{"custom_all_reduce.py:97:9"});
    }
  }
}

TEST_F(Tree, ASuppressionOnThePrintedLineHoldsInEveryFormat) {
  copyFixture("seed-force-pcie");
  Reports before = runAll(base_ / "tree", base_ / "report.html");
  auto where = textPrimaries(before.text.out);
  ASSERT_EQ(where.size(), 1u) << before.text.out;
  // The line the report points at, whatever it is.
  std::smatch m;
  ASSERT_TRUE(std::regex_match(where[0], m, std::regex(R"(([^:]+):(\d+):\d+)")));
  appendToLine(m[1], std::stoi(m[2]), "  # layergate: ignore[LG001] -- this fork ships the PCIe kernel");

  Reports r = runAll(base_ / "tree", base_ / "report.html");
  EXPECT_EQ(r.text.status, 0) << r.text.out;
  EXPECT_EQ(r.text.out.find("[LG001]"), std::string::npos) << r.text.out;
  EXPECT_EQ(r.text.out.find("[LG011]"), std::string::npos) << r.text.out;
  EXPECT_NE(r.text.out.find("\n0 errors, 0 warnings (3 suppressed)\n"), std::string::npos) << r.text.out;
  EXPECT_EQ(r.concise.out, "All checks passed.\n");

  ASSERT_FALSE(r.j.is_discarded()) << r.json_run.err;
  EXPECT_EQ(r.json_run.status, 0);
  const json& a = r.j["analyses"][0];
  ASSERT_EQ(a["findings"].size(), 3u) << a["findings"].dump(1);
  for (const auto& f : a["findings"]) {
    EXPECT_EQ(f["rule"], "LG001");
    EXPECT_EQ(f["suppressed"]["kind"], "inSource");
    EXPECT_EQ(f["suppressed"]["line"], std::stoi(m[2]));
  }
  ASSERT_EQ(a["diagnostics"].size(), 1u);
  EXPECT_TRUE(a["diagnostics"][0].contains("suppressed"));
  EXPECT_EQ(r.j["summary"]["errors"], 0);
  EXPECT_EQ(r.j["summary"]["warnings"], 0);
  EXPECT_EQ(r.j["summary"]["suppressed"], 3);

  ASSERT_FALSE(r.sarif.is_discarded()) << r.sarif_run.err;
  EXPECT_EQ(r.sarif_run.status, 0);
  const json& results = r.sarif["runs"][0]["results"];
  ASSERT_EQ(results.size(), 1u) << results.dump(1);
  EXPECT_EQ(results[0]["ruleId"], "LG001");
  ASSERT_EQ(results[0]["suppressions"].size(), 1u);
  EXPECT_EQ(results[0]["suppressions"][0]["justification"], "this fork ships the PCIe kernel");

  EXPECT_EQ(htmlCounts(r.page), (Counts{0, 0}));
  EXPECT_EQ(occurrences(r.page, "<article class=\"finding suppressed sev-error rule-LG001\""), 1) << r.page;
  EXPECT_EQ(occurrences(r.page, "rule-LG011"), 0);
}

TEST_F(Tree, ASuppressionOnTheAdmittingLineStillHolds) {
  // Where the report put a patched gap before: the `admits:` note's line.
  copyFixture("seed-force-pcie");
  appendToLine("custom_all_reduce.py", 137, "  # layergate: ignore[LG001]");
  CliRun t = lgtest::runCli("check . --isolated --no-matrix --color never", base_ / "tree", 300);
  EXPECT_EQ(t.status, 0) << t.out;
  EXPECT_EQ(t.out.find("[LG011]"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("\n0 errors, 0 warnings (3 suppressed)\n"), std::string::npos) << t.out;
}
