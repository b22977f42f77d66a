// The bad-input catalogue: inputs nobody planned for, made at test time from
// the fixtures. Each gets either exit 2 with one line on stderr, or a correct
// analysis — never a crash, a hang or a clean bill the tool cannot back.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <algorithm>
#include <tuple>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "CliRunner.h"

namespace fs = std::filesystem;
using lgtest::CliRun;
using lgtest::quote;
using lgtest::slurp;
using nlohmann::json;

namespace {

const fs::path kFixtures = LAYERGATE_FIXTURES;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lg bad input " + std::to_string(getpid()));  // a path with spaces
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path put(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  static std::string fixture(const std::string& rel) { return slurp(kFixtures / rel); }
  static std::string gatePy() { return fixture("seed-force-pcie/custom_all_reduce.py"); }
  static std::string dispatchCuh() { return fixture("seed-force-pcie/custom_all_reduce.cuh"); }

  CliRun check(const fs::path& py, const fs::path& cc, const std::string& extra = "") {
    return lgtest::runCli("check --python " + quote(py.string()) + " --cpp " + quote(cc.string()) + " " + extra, dir_, 120);
  }

  // Exit 2, one line "layergate: error: ..." on stderr naming `what`, nothing on stdout.
  static void expectRejected(const CliRun& r, const std::string& what, const std::string& label) {
    EXPECT_EQ(r.status, 2) << label << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(lgtest::lines(r.err), 1) << label << ": " << r.err;
    EXPECT_EQ(r.err.rfind("layergate: error: ", 0), 0u) << label << ": " << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << label << ": " << r.err;
    EXPECT_EQ(r.out, "") << label;
  }
  // The seed verdict: LG001 for 4, 6 and 8 GPUs without NVLink.
  static void expectSeedVerdict(const CliRun& r, const std::string& label) {
    ASSERT_EQ(r.status, 1) << label << "\n" << r.out << r.err;
    json j = json::parse(r.out);
    std::vector<int> ws;
    for (const auto& f : j["findings"])
      if (f["rule"] == "LG001") ws.push_back(f["config"]["world_size"].get<int>());
    EXPECT_EQ(ws, (std::vector<int>{4, 6, 8})) << label;
  }

  fs::path dir_;
};

std::string withCrlf(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

}  // namespace

TEST_F(BadInput, EveryFixtureCaseOfTheCatalogue) {
  // fixtures/bad/cases.json: empty, binary (both sides), not Python, not C++,
  // no class (both sides), syntax error, Latin-1, missing file, CRLF.
  json cases = json::parse(slurp(kFixtures / "bad" / "cases.json"));
  ASSERT_GE(cases["cases"].size(), 10u);
  for (const auto& c : cases["cases"]) {
    CliRun r = lgtest::runCli("check --python " + quote(c["python"]) + " --cpp " + quote(c["cpp"]), kFixtures);
    EXPECT_EQ(r.status, c["exit"].get<int>()) << c["reason"] << "\n" << r.err;
    if (c["exit"] == 2) expectRejected(r, "", c["reason"]);
  }
}

TEST_F(BadInput, PathWithSpacesCrlfAndBomAreAnalysedNormally) {
  auto cc = put("dir with spaces/custom all reduce.cuh", dispatchCuh());
  expectSeedVerdict(check(put("dir with spaces/gate crlf.py", withCrlf(gatePy())), cc, "--format json"), "CRLF");
  expectSeedVerdict(check(put("bom.py", "\xEF\xBB\xBF" + gatePy()), cc, "--format json"), "UTF-8 BOM");
}

TEST_F(BadInput, Python2AndTruncatedPythonAreRejected) {
  std::string g = gatePy();
  auto cc = put("d.cuh", dispatchCuh());
  std::string py2 = g;
  py2.insert(py2.find("    def __init__"), "    def legacy(self):\n        print \"hello\"\n\n");
  expectRejected(check(put("py2.py", py2), cc), "py2.py", "Python 2 print statement");
  expectRejected(check(put("trunc.py", g.substr(0, g.find("self.disabled = False") + 10)), cc), "trunc.py", "truncated Python");
}

TEST_F(BadInput, TabsMixedWithSpacesAreRejectedOrAnalysedButNeverCrash) {
  std::string g = gatePy();
  // Python 3 refuses inconsistent tabs and spaces (TabError).
  auto at = g.find("        if world_size == 1:");
  ASSERT_NE(at, std::string::npos);
  g.replace(at, 8, "\t");
  CliRun r = check(put("tabs.py", g), put("d.cuh", dispatchCuh()), "--format json");
  EXPECT_TRUE(r.status == 1 || r.status == 2) << r.err;
  if (r.status == 2) expectRejected(r, "tabs.py", "tabs");
}

TEST_F(BadInput, SameNameDifferentShapeIsAnUnknownLayout) {
  auto cc = put("d.cuh", dispatchCuh());
  auto r = check(put("shape.py", "class CustomAllreduce:\n    def run(self):\n        return 1\n"), cc);
  expectRejected(r, "shape.py", "class without constructor");
  auto r2 = check(put("shape2.py", "class CustomAllreduce:\n    def __init__(self):\n        self.ready = True\n"), cc);
  expectRejected(r2, "shape2.py", "constructor without enabling statement");
}

TEST_F(BadInput, TwoClassesOfThatNameUseTheLastLikePython) {
  std::string g = gatePy();
  std::string first = "class CustomAllreduce:\n    def __init__(self):\n        self.disabled = True\n\n";
  CliRun r = check(put("two.py", first + g), put("d.cuh", dispatchCuh()), "--format json");
  expectSeedVerdict(r, "two classes");
}

TEST_F(BadInput, BrokenCppIsRejectedOrAnalysedWithANote) {
  std::string c = dispatchCuh();
  auto py = put("g.py", gatePy());
  // Unbalanced preprocessor conditional, a truncated header, a broken brace.
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"unbalanced_if.cuh", "#if 1\n" + c},
           {"truncated.cuh", c.substr(0, c.size() / 2)},
           {"brace.cuh", c + "\n}}}\n"},
           {"undef_macro.cuh", "#define REDUCE_CASE(n) case n: {\n" + c}}) {
    CliRun r = check(py, put(name, text), "--format json");
    EXPECT_TRUE(r.status == 0 || r.status == 1 || r.status == 2) << name << ": " << r.status << r.err;
    if (r.status == 2) {
      expectRejected(r, name, name);
    } else {
      json j = json::parse(r.out);
      EXPECT_FALSE(j["notes"].empty()) << name << ": parse problems must be reported";
    }
  }
}

// A broken macro call or #if inside the dispatch leaves clang with other
// branches than the ones written (an unterminated macro call swallows the
// cases after it): the run stops at that line, and --fix does not act.
TEST_F(BadInput, APreprocessorErrorInTheDispatchIsNoProof) {
  std::string c = dispatchCuh();
  std::string text = c;
  const std::string at = "REDUCE_CASE(4)";
  std::size_t pos = text.find(at);
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, at.size(), "REDUCE_CASE(4");
  long line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
  auto py = put("g.py", gatePy());
  CliRun r = check(py, put("unterminated_case.cuh", text));
  expectRejected(r, "unterminated_case.cuh:" + std::to_string(line) + ": the dispatch", "unterminated");
  EXPECT_NE(r.err.find("does not parse (unterminated function-like macro invocation)"), std::string::npos) << r.err;
  CliRun f = check(py, dir_ / "unterminated_case.cuh", "--fix");
  EXPECT_EQ(f.status, 2) << f.out << f.err;
  EXPECT_EQ(slurp(py), gatePy()) << "--fix edited the gate";
}

// A parse error inside the dispatch (here a missing parenthesis; in real
// trees also a name that a missing header did not declare) weakens the paths
// through its statement: possible gaps there (LG008), never an error, and
// nothing for --fix to do.
TEST_F(BadInput, AParseErrorInTheDispatchMakesItsPathsPossibleGapsOnly) {
  std::string text = dispatchCuh();
  const std::string at = "switch (world_size_) {";
  std::size_t pos = text.find(at);
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, at.size(), "switch (world_size_ {");
  auto py = put("g.py", gatePy());
  auto cc = put("missing_paren.cuh", text);
  CliRun r = check(py, cc, "--format json");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  json j = json::parse(r.out);
  bool possible = false;
  for (const auto& f : j["findings"]) {
    EXPECT_NE(f["severity"], "error") << f.dump();
    possible |= f["rule"] == "LG008" && f["message"].get<std::string>().find("clang error") != std::string::npos;
  }
  EXPECT_TRUE(possible) << r.out;
  CliRun f = check(py, cc, "--fix");
  EXPECT_EQ(slurp(py), gatePy()) << "--fix edited the gate: " << f.out << f.err;
  EXPECT_EQ(slurp(cc), text) << "--fix edited the dispatch";
}

TEST_F(BadInput, MissingHeadersAreStubbedAndNamed) {
  std::string c = "#include \"not_here/helpers.h\"\n#include <no_such_lib/x.h>\n" + dispatchCuh();
  CliRun r = check(put("g.py", gatePy()), put("m.cuh", c), "--format json");
  expectSeedVerdict(r, "missing includes");
  std::string notes = json::parse(r.out)["notes"].dump();
  EXPECT_NE(notes.find("not_here/helpers.h"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no_such_lib/x.h"), std::string::npos) << notes;
}

TEST_F(BadInput, DeepNestingIsRejectedWithoutCrashing) {
  std::string py = "class CustomAllreduce:\n    def __init__(self, world_size):\n        self.disabled = True\n";
  std::string ind = "        ";
  for (int i = 0; i < 3000; ++i) {
    py += ind + "if world_size > " + std::to_string(i) + ":\n";
    ind += " ";
  }
  py += ind + "self.disabled = False\n";
  expectRejected(check(put("deep.py", py), put("d.cuh", dispatchCuh())), "deep.py", "3000 nested ifs (Python)");

  std::string c = dispatchCuh();
  std::string nest, close;
  for (int i = 0; i < 3000; ++i) nest += "if (bytes > " + std::to_string(i) + ") {\n", close += "}\n";
  auto at = c.find("switch (world_size_)");
  ASSERT_NE(at, std::string::npos);
  c.insert(at, nest + "return;\n" + close);
  expectRejected(check(put("g.py", gatePy()), put("deep.cuh", c)), "deep.cuh", "3000 nested ifs (C++)");
}

TEST_F(BadInput, HundredThousandLineFilesAreAnalysedInBoundedTime) {
  std::string pad;
  for (int i = 0; i < 100000; ++i) pad += "_unused_" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  std::string cpad;
  for (int i = 0; i < 100000; ++i) cpad += "static const int unused_" + std::to_string(i) + " = " + std::to_string(i) + ";\n";
  std::string c = dispatchCuh();
  auto at = c.find("namespace");
  c.insert(at == std::string::npos ? 0 : at, cpad);
  // The C++ side parses it; the Python side may refuse a module whose
  // top level alone exceeds its statement budget — with a one-line reason.
  CliRun r = check(put("big.py", pad + gatePy()), put("big.cuh", c), "--format json --max-file-bytes 100000000");
  EXPECT_NE(r.status, 124) << "hang";
  if (r.status == 2)
    expectRejected(r, "big.py", "100k-line Python");
  else
    expectSeedVerdict(r, "100k lines");
  CliRun r2 = check(put("g.py", gatePy()), put("big2.cuh", c), "--format json --max-file-bytes 100000000");
  expectSeedVerdict(r2, "100k-line C++");
}

TEST_F(BadInput, OverTheSizeLimitAndNotRegularFiles) {
  auto cc = put("d.cuh", dispatchCuh());
  expectRejected(check(put("g.py", gatePy()), cc, "--max-file-bytes 1000"), "--max-file-bytes", "size limit");
  expectRejected(check(dir_, cc), "directory", "directory as file");
  expectRejected(check("/dev/null", cc), "/dev/null", "character device");
  expectRejected(check(put("g2.py", gatePy()), put("nul.cuh", dispatchCuh().insert(100, std::string(1, '\0')))), "nul.cuh",
                 "NUL byte in C++");
}

// Every missing input in the one line, not only the first one read.
TEST_F(BadInput, MissingInputsAreNamedTogether) {
  CliRun r = check(dir_ / "nope.py", dir_ / "nope.cuh");
  expectRejected(r, "nope.py: no such file", "two missing files");
  EXPECT_NE(r.err.find("nope.cuh: no such file"), std::string::npos) << r.err;
  CliRun one = check(put("g.py", gatePy()), dir_ / "nope.cuh");
  expectRejected(one, "nope.cuh: no such file", "missing dispatch");
  EXPECT_EQ(one.err.find("g.py"), std::string::npos) << one.err;
}

// An unreadable file says "permission denied", given as a file or met in a
// directory scan (where it would otherwise read as a file without the
// class). Root reads every file: as root the command runs as nobody
// (setpriv), else the test is skipped.
TEST_F(BadInput, UnreadableFileSaysPermissionDenied) {
  std::string as;
  if (geteuid() == 0) {
    if (std::system("setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") != 0)
      GTEST_SKIP() << "root reads every file, and setpriv cannot drop to nobody here";
    as = "--reuid=65534 --regid=65534 --clear-groups ";
  }
  auto p = put("tree/custom_all_reduce.py", gatePy());
  auto cc = put("tree/custom_all_reduce.cuh", dispatchCuh());
  chmod(p.c_str(), 0);
  auto run = [&](const std::string& args) {
    if (as.empty()) return lgtest::runCli(args, dir_, 120);
    // setpriv runs the binary as nobody; the test's own shell writes stdout and stderr.
    return lgtest::runCli(args, dir_, 120, "setpriv " + as);
  };
  CliRun files = run("check --python " + quote(p.string()) + " --cpp " + quote(cc.string()));
  expectRejected(files, "custom_all_reduce.py: permission denied", "unreadable gate");
  CliRun scan = run("check tree");
  expectRejected(scan, "custom_all_reduce.py is not one: cannot read it: permission denied", "unreadable gate in a scan");
  EXPECT_EQ(scan.err.find("no class"), std::string::npos) << scan.err;
}

TEST_F(BadInput, EveryLimitHasAFlagAndSaysWhenItIsHit) {
  auto py = put("g.py", gatePy());
  auto cc = put("d.cuh", dispatchCuh());
  expectRejected(check(py, cc, "--max-paths 2"), "paths", "--max-paths");
  expectRejected(check(py, cc, "--max-depth 8"), "deeper than 8", "--max-depth");
  // Out-of-range limits are usage errors.
  expectRejected(check(py, cc, "--max-depth 100000"), "--max-depth", "--max-depth range");
}

// A saved plan travels to another machine: a broken one is named in one line
// before anything runs (numbers are checked before they are converted).
TEST_F(BadInput, ABrokenSelftestPlanIsOneLine) {
  const std::string head = R"({"format":"layergate-selftest-plan/1","static":{"cells":[{"world_size":)";
  const struct {
    std::string text, what;
  } cases[] = {
      {"{", "plan.json"},
      {R"({"format":"other"})", "not a layergate selftest plan"},
      {head + R"(1E24,"full_nvlink":true}]}})", "static.cells[0].world_size: expected an integer"},
      {head + R"(4,"full_nvlink":true,"examples":[{"bytes":-16}]}]}})", "static.cells[0].examples[0].bytes: out of range"},
  };
  for (const auto& c : cases) {
    auto p = put("plan.json", c.text);
    expectRejected(lgtest::runCli("selftest --plan " + quote(p.string()) + " --format json", dir_, 60), c.what, c.text);
  }
}
