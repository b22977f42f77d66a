// The HTML report without a browser: one self-contained page (no scripts, no
// external resources), every text escaped (a folder name with < > " ' & and
// the gate's own code excerpts), file:line links relative to the page, and
// --output errors as one-line exit 2. tests/html_report.sh renders it in
// headless Chromium.
#include <gtest/gtest.h>

#include <unistd.h>

#include "CliRunner.h"

namespace fs = std::filesystem;

namespace {

using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;

fs::path seed() { return fs::path(LAYERGATE_FIXTURES) / "seed-force-pcie"; }

// A fresh temporary folder holding a copy of the seed fixture in `sub`.
fs::path seedCopy(const std::string& tag, const std::string& sub) {
  fs::path dir = fs::temp_directory_path() / ("lg-html-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / sub);
  for (const char* f : {"custom_all_reduce.py", "custom_all_reduce.cuh"}) fs::copy_file(seed() / f, dir / sub / f);
  return dir;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HtmlReport, PageIsSelfContainedAndEverythingIsEscaped) {
  const std::string sub = "a<b>\"c'&d";
  fs::path dir = seedCopy("esc", sub);
  CliRun r = lgtest::runCli("check " + quote(sub + "/custom_all_reduce.py") + " " + quote(sub + "/custom_all_reduce.cuh") +
                                " --format html -o page.html",
                            dir);
  ASSERT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");  // the page went to the file
  std::string page = slurp(dir / "page.html");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_NE(page.find("<style>"), std::string::npos);
  for (const char* external : {"<script", "<link", "src=", "url(", "http://", "https://", "@import"})
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  EXPECT_EQ(page.find(sub), std::string::npos) << "raw folder name in the page";
  EXPECT_NE(page.find("a&lt;b&gt;&quot;c&#39;&amp;d/custom_all_reduce.py:137:17</a>"), std::string::npos);
  EXPECT_NE(page.find("href=\"a%3Cb%3E%22c%27%26d/custom_all_reduce.py#L137\""), std::string::npos);
  // the gate's code in a note: "admits: return inp_size < self.max_size"
  EXPECT_NE(page.find("admits: return inp_size &lt; self.max_size"), std::string::npos);
  EXPECT_EQ(page.find("inp_size < self"), std::string::npos);
  // the grid and the findings
  EXPECT_EQ(count(page, "<td id=\"u1-ws"), 16u);
  for (int ws : {4, 6, 8})
    EXPECT_NE(page.find("<td id=\"u1-ws" + std::to_string(ws) + "-pcie\" class=\"cell gate-admitted-when gap rule-LG001\""),
              std::string::npos) << ws;
  EXPECT_EQ(count(page, "<article class=\"finding sev-error rule-LG001\""), 1u);  // one card for the three cells
  EXPECT_EQ(count(page, " gap rule-LG001\""), 3u);                    // the three cells, no other
  EXPECT_EQ(count(page, "<li class=\"kind-none admitted gap\">"), 3u);  // one "no kernel" part in each
  fs::remove_all(dir);
}

TEST(HtmlReport, DirectoryPageLinksRelativeToWhereThePageIs) {
  fs::path dir = seedCopy("dir", "tree");
  fs::create_directories(dir / "out");
  CliRun r = lgtest::runCli("check tree --format html --output out/report.html", dir);
  ASSERT_EQ(r.status, 1) << r.err;
  std::string page = slurp(dir / "out" / "report.html");
  EXPECT_NE(page.find("(target custom-allreduce)</h2>"), std::string::npos);
  // paths shown from the working directory; links go from out/ to tree/
  EXPECT_NE(page.find("<a class=\"loc\" href=\"../tree/custom_all_reduce.py#L137\">tree/custom_all_reduce.py:137:17</a>"),
            std::string::npos);
  EXPECT_NE(page.find("href=\"../tree/custom_all_reduce.cuh#L176\""), std::string::npos);
  EXPECT_EQ(count(page, "<article class=\"finding sev-error rule-LG001\""), 1u);
  fs::remove_all(dir);
}

TEST(HtmlReport, OnStdoutLinksAreRelativeToTheWorkingDirectory) {
  CliRun r = lgtest::runCli("check seed-force-pcie/custom_all_reduce.py seed-force-pcie/custom_all_reduce.cuh --format html",
                            LAYERGATE_FIXTURES);
  ASSERT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("href=\"seed-force-pcie/custom_all_reduce.py#L93\""), std::string::npos);  // the probe
  EXPECT_NE(r.out.find("<span class=\"step\">C++ branch</span>"), std::string::npos);
}

TEST(HtmlReport, UnwritableOutputIsOneLineExitTwo) {
  fs::path dir = seedCopy("bad", "s");
  for (const std::string& out : {std::string("no/such/folder/r.html"), std::string("s")}) {
    CliRun r = lgtest::runCli("check s/custom_all_reduce.py s/custom_all_reduce.cuh --format html -o " + quote(out), dir);
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lgtest::lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("layergate: error: " + out + ": cannot write the report: ", 0), 0u) << r.err;
  }
  fs::remove_all(dir);
}
