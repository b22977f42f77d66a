// Inline suppressions (report/Suppress) and the source facts they read:
// comments from tree-sitter (Python) and clang's raw lexer (C++), never text
// inside a string; function spans for fingerprints.
#include <gtest/gtest.h>

#include "cpp/CppFrontend.h"
#include "python/PythonFrontend.h"
#include "report/Suppress.h"

using namespace layergate;

namespace {

model::Finding finding(const std::string& rule, const std::string& file, int line) {
  model::Finding f;
  f.rule = rule;
  f.severity = model::Severity::Error;
  f.locations.push_back({file, line, 5, "gate", ""});
  return f;
}

std::map<std::string, model::SourceText> pyFile(const std::string& name, const std::string& text) {
  std::map<std::string, model::SourceText> m;
  m[name] = {text, python::sourceFacts(text)};
  return m;
}

auto all = [](const std::string&) { return true; };

}  // namespace

TEST(Directive, CodesJustificationBlanketAndProse) {
  auto d = report::parseDirective({3, 10, " layergate: ignore[LG001, lg008] -- PCIe boxes have the kernel"}, "g.py");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->blanket);
  EXPECT_EQ(d->codes, (std::vector<std::string>{"LG001", "LG008"}));
  EXPECT_EQ(d->justification, "PCIe boxes have the kernel");
  EXPECT_EQ(d->where.line, 3);
  auto b = report::parseDirective({1, 1, " layergate: ignore"}, "g.py");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->blanket);
  auto after = report::parseDirective({1, 1, " type: ignore  # layergate: ignore[LG002]"}, "g.py");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->codes, std::vector<std::string>{"LG002"});
  EXPECT_FALSE(report::parseDirective({1, 1, " layergate: ignored on purpose"}, "g.py"));
  EXPECT_FALSE(report::parseDirective({1, 1, " see the layergate: ignore docs"}, "g.py"));
  EXPECT_FALSE(report::parseDirective({1, 1, " nothing here"}, "g.py"));
  auto open = report::parseDirective({1, 1, " layergate: ignore[LG001"}, "g.py");
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->malformed.empty());
  auto empty = report::parseDirective({1, 1, " layergate: ignore[]"}, "g.py");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->malformed.empty());
}

TEST(SourceFacts, PythonCommentsAreCommentNodesNotStringText) {
  std::string py =
      "class CustomAllreduce:\n"
      "    def should_custom_ar(self, inp):\n"
      "        s = \"# layergate: ignore[LG001]\"\n"
      "        t = '''\n"
      "# layergate: ignore[LG002]\n"
      "'''\n"
      "        return True  # layergate: ignore[LG008]\n"
      "\n"
      "def helper():\n"
      "    pass\n";
  model::SourceFacts f = python::sourceFacts(py);
  ASSERT_EQ(f.comments.size(), 1u);
  EXPECT_EQ(f.comments[0].line, 7);
  EXPECT_EQ(f.comments[0].col, 22);
  EXPECT_EQ(f.comments[0].text, " layergate: ignore[LG008]");
  EXPECT_EQ(f.enclosing(7), "CustomAllreduce.should_custom_ar");
  EXPECT_EQ(f.enclosing(1), "CustomAllreduce");
  EXPECT_EQ(f.enclosing(10), "helper");
  EXPECT_EQ(f.enclosing(8), "");
}

TEST(SourceFacts, CppCommentsComeFromTheLexer) {
  std::string cc =
      "#define KL(n, k) k<<<1, 1>>>() /* layergate: ignore[LG009] */\n"
      "class CustomAllreduce {\n"
      " public:\n"
      "  CustomAllreduce(int ws, bool nv) noexcept : world_size_(ws), full_nvlink_(nv) {\n"
      "    init();\n"
      "  }\n"
      "  template <typename T>\n"
      "  void allreduce(T* in, int n) const {\n"
      "    const char* s = \"// layergate: ignore[LG001]\";\n"
      "    const char* r = R\"(/* layergate: ignore[LG002] */)\";\n"
      "    if (n > 0) {  // layergate: ignore[LG001]\n"
      "      run(s, r, '\"');\n"
      "    }\n"
      "  }\n"
      " private:\n"
      "  CustomAllreduce(int ws) : CustomAllreduce(ws, false) {}\n"
      "};\n"
      "void CustomAllreduce_free(int x) { }\n";
  model::SourceFacts f = cpp::sourceFacts(cc, "d.cuh");
  ASSERT_EQ(f.comments.size(), 2u);
  EXPECT_EQ(f.comments[0].line, 1);
  EXPECT_EQ(f.comments[0].text, " layergate: ignore[LG009] ");
  EXPECT_EQ(f.comments[1].line, 11);
  EXPECT_EQ(f.comments[1].col, 19);
  EXPECT_EQ(f.enclosing(11), "CustomAllreduce::allreduce");
  EXPECT_EQ(f.enclosing(5), "CustomAllreduce::CustomAllreduce");
  EXPECT_EQ(f.enclosing(3), "CustomAllreduce");
  EXPECT_EQ(f.enclosing(16), "CustomAllreduce::CustomAllreduce");
  EXPECT_EQ(f.enclosing(18), "CustomAllreduce_free");
}

TEST(Suppress, MarksFindingsOnTheLineAndReportsBlanketAndUnused) {
  auto files = pyFile("g.py",
                      "a = 1  # layergate: ignore[LG001] known PCIe gap\n"
                      "b = 2  # layergate: ignore\n"
                      "c = 3  # layergate: ignore[LG002, LG999]\n"
                      "d = 4\n");
  std::vector<model::Finding> fs = {finding("LG001", "g.py", 1), finding("LG008", "g.py", 1),
                                    finding("LG008", "g.py", 2), finding("LG002", "g.py", 4)};
  report::applySuppressions(fs, files, all);
  ASSERT_TRUE(fs[0].suppressed);
  EXPECT_EQ(fs[0].suppressed->justification, "known PCIe gap");
  EXPECT_FALSE(fs[1].suppressed);  // LG008 is not named on line 1
  EXPECT_TRUE(fs[2].suppressed);   // blanket
  EXPECT_FALSE(fs[3].suppressed);  // line 4 has no comment
  std::vector<std::string> extra;
  for (size_t i = 4; i < fs.size(); ++i) extra.push_back(fs[i].rule + "@" + std::to_string(fs[i].locations[0].line) + " " + fs[i].message);
  ASSERT_EQ(extra.size(), 3u) << ::testing::PrintToString(extra);
  EXPECT_EQ(extra[0].rfind("LG010@2 blanket suppression", 0), 0u) << extra[0];
  EXPECT_EQ(extra[1].rfind("LG011@3 suppression names unknown rule LG999", 0), 0u) << extra[1];
  EXPECT_EQ(extra[2].rfind("LG011@3 unused suppression: no LG002 finding", 0), 0u) << extra[2];
  EXPECT_EQ(fs[4].severity, model::Severity::Warning);

  // A code of a rule that does not run is not "unused".
  std::vector<model::Finding> none;
  report::applySuppressions(none, pyFile("g.py", "c = 3  # layergate: ignore[LG002]\n"),
                            [](const std::string& r) { return r != "LG002"; });
  EXPECT_TRUE(none.empty());
}

TEST(Suppress, TextInAStringDoesNotSuppress) {
  auto files = pyFile("g.py", "x = \"# layergate: ignore[LG001]\"\n");
  std::vector<model::Finding> fs = {finding("LG001", "g.py", 1)};
  report::applySuppressions(fs, files, all);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_FALSE(fs[0].suppressed);
}

// A gap a patch opened: its first location (the primary, which every format
// prints) is the opened check, the admitting line comes after it.
TEST(Suppress, TheCommentGoesOnThePrimaryLineAndTheAdmittingLineStillHolds) {
  auto gap = [] {
    model::Finding f;
    f.rule = "LG001";
    f.locations.push_back({"g.py", 2, 9, "opened", "check opened by X=1: ws > 2"});
    f.locations.push_back({"g.py", 4, 17, "gate", "admits: return True"});
    f.locations.push_back({"d.cuh", 9, 3, "dispatch", "no kernel on this path"});
    return f;
  };
  const std::string code = "def f():\n    if ws > 2 and not x:\n        return False\n    return True\n";
  auto with = [&](int line) {
    std::string text = code;
    std::size_t at = 0;
    for (int i = 1; i < line; ++i) at = text.find('\n', at) + 1;
    text.insert(text.find('\n', at), "  # layergate: ignore[LG001]");
    return pyFile("g.py", text);
  };
  // On the primary line: suppressed, and the comment is used (no LG011).
  std::vector<model::Finding> fs = {gap(), gap()};
  report::applySuppressions(fs, with(2), all);
  ASSERT_EQ(fs.size(), 2u) << fs.back().message;
  EXPECT_TRUE(fs[0].suppressed && fs[1].suppressed);
  // On the admitting line, where the primary was before: still suppressed.
  fs = {gap()};
  report::applySuppressions(fs, with(4), all);
  ASSERT_EQ(fs.size(), 1u) << fs.back().message;
  EXPECT_TRUE(fs[0].suppressed);
  // Elsewhere (a line of the gate that is only on the path): unused.
  fs = {gap()};
  report::applySuppressions(fs, with(3), all);
  EXPECT_FALSE(fs[0].suppressed);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[1].rule, "LG011");
  EXPECT_EQ(fs[1].locations[0].line, 3);
}
