// Fix suggestions (tool/fix): the guard's condition, applying edits, unified
// diffs, and over every fixture: the safe fix, applied, leaves no LG001/LG002.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/Analysis.h"
#include "fix/Apply.h"
#include "fix/Fix.h"
#include "model/Errors.h"

namespace fs = std::filesystem;
using namespace layergate;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

model::Edit insertAt(int line, const std::string& text) {
  model::Edit e;
  e.file = "f.py";
  e.start = e.end = {line, 1};
  e.replacement = text;
  return e;
}

}  // namespace

TEST(FixGuard, PcieCellsNeedTheNvlinkExpression) {
  std::vector<std::pair<std::int64_t, std::optional<bool>>> cells{{4, false}, {6, false}, {8, false}};
  EXPECT_EQ(fix::guardCondition(cells, "self.world_size", "self.full_nvlink"),
            "self.world_size in (4, 6, 8) and not self.full_nvlink");
  EXPECT_EQ(fix::guardCondition(cells, "self.world_size", ""), "");
}

TEST(FixGuard, BothNvlinkValuesNeedOnlyTheWorldSize) {
  std::vector<std::pair<std::int64_t, std::optional<bool>>> cells{{3, false}, {3, true}, {5, std::nullopt}};
  EXPECT_EQ(fix::guardCondition(cells, "ws", ""), "ws in (3, 5)");
}

TEST(FixGuard, MixedCellsAreADisjunction) {
  std::vector<std::pair<std::int64_t, std::optional<bool>>> cells{{3, true}, {4, false}, {3, false}, {6, true}};
  EXPECT_EQ(fix::guardCondition(cells, "w", "nv"), "(w == 3) or (w == 4 and not nv) or (w == 6 and nv)");
}

TEST(FixApply, InsertsBeforeALineAndDeduplicates) {
  std::string t = "a\nb\nc\n";
  EXPECT_EQ(fix::applyEdits(t, {insertAt(2, "X\n"), insertAt(2, "X\n")}), "a\nX\nb\nc\n");
  EXPECT_EQ(fix::applyEdits(t, {insertAt(4, "Z\n")}), "a\nb\nc\nZ\n");
  EXPECT_EQ(fix::applyEdits("a", {insertAt(2, "Z\n")}), "a\nZ\n");
}

// A CRLF file gets CRLF lines; a line ending the replacement already has
// is kept; an LF file stays LF.
TEST(FixApply, KeepsTheFilesLineEndings) {
  std::string t = "a\r\nb\r\nc\r\n";
  EXPECT_EQ(fix::applyEdits(t, {insertAt(2, "X\nY\n")}), "a\r\nX\r\nY\r\nb\r\nc\r\n");
  EXPECT_EQ(fix::applyEdits(t, {insertAt(2, "X\r\n")}), "a\r\nX\r\nb\r\nc\r\n");
  EXPECT_EQ(fix::applyEdits("a\r\nb", {insertAt(3, "Z\n")}), "a\r\nb\r\nZ\r\n");
  EXPECT_EQ(fix::applyEdits("a\nb\n", {insertAt(2, "X\n")}), "a\nX\nb\n");
}

TEST(FixApply, ReplacesARangeAndRejectsOverlapsAndOutOfRange) {
  model::Edit e;
  e.file = "f.cuh";
  e.start = {1, 3};
  e.end = {2, 2};
  e.replacement = "-";
  EXPECT_EQ(fix::applyEdits("abcd\nefgh\n", {e}), "ab-fgh\n");
  model::Edit o = e;
  o.start = {1, 4};
  o.replacement = "+";
  EXPECT_THROW(fix::applyEdits("abcd\nefgh\n", {e, o}), InputError);
  EXPECT_THROW(fix::applyEdits("a\n", {insertAt(5, "x")}), InputError);
}

TEST(FixDiff, OneHunkWithContextAndLineNumbers) {
  std::string a;
  for (int i = 1; i <= 10; ++i) a += "l" + std::to_string(i) + "\n";
  std::string b = fix::applyEdits(a, {insertAt(5, "new\n")});
  EXPECT_EQ(fix::unifiedDiff("f.py", a, b),
            "--- a/f.py\n+++ b/f.py\n@@ -2,6 +2,7 @@\n l2\n l3\n l4\n+new\n l5\n l6\n l7\n");
  EXPECT_EQ(fix::unifiedDiff("f.py", a, a), "");
}

TEST(FixDiff, FarApartChangesAreTwoHunks) {
  std::string a;
  for (int i = 1; i <= 30; ++i) a += std::to_string(i) + "\n";
  std::string b = fix::applyEdits(a, {insertAt(3, "x\n"), insertAt(25, "y\n")});
  std::string d = fix::unifiedDiff("f", a, b);
  EXPECT_NE(d.find("@@ -1,5 +1,6 @@\n"), std::string::npos) << d;
  EXPECT_NE(d.find("@@ -22,6 +23,7 @@\n"), std::string::npos) << d;
}

namespace {

model::Finding cellFinding(const std::string& rule, std::int64_t ws, bool nvlink) {
  model::Finding f;
  f.rule = rule;
  f.config.world_size = ws;
  f.config.full_nvlink = nvlink;
  f.config.env.push_back({"FORCE", std::string("1")});
  return f;
}

model::Gate guardedGate() {
  model::Gate g;
  g.guard_site.found = true;
  g.guard_site.method = "should_custom_ar";
  g.guard_site.file = "g.py";
  g.guard_site.line = 10;
  g.guard_site.indent = "        ";
  g.guard_site.body_indent = "            ";
  g.guard_site.reject = "return False";
  g.guard_site.world_size = "self.world_size";
  g.guard_site.full_nvlink = "self.full_nvlink";
  return g;
}

}  // namespace

// The safe fix names what it turns off and the setting it overrides.
TEST(FixGuard, DescriptionSaysWhatItTurnsOffAndOverrides) {
  std::vector<model::Finding> fs_{cellFinding("LG001", 4, false), cellFinding("LG001", 6, false),
                                  cellFinding("LG001", 8, false)};
  std::vector<const model::Finding*> ps;
  for (const auto& f : fs_) ps.push_back(&f);
  auto fx = fix::guardFix(guardedGate(), ps);
  ASSERT_TRUE(fx);
  EXPECT_EQ(fx->description,
            "`return False` in should_custom_ar when self.world_size in (4, 6, 8) and not self.full_nvlink: turns off "
            "the custom all-reduce for world sizes 4, 6, 8 without NVLink; behaviour change: FORCE=1 no longer turns it on "
            "there");
}

// --fix --unsafe-fixes: a cell with a C++ branch gets the branch and no guard;
// the guard is rebuilt over the cells left (an LG002 here). Without
// --unsafe-fixes, the guard over every cell and no branch.
TEST(FixPlan, UnsafeFixesNeverApplyBothFixesForTheSameCells) {
  std::vector<model::Finding> fs_{cellFinding("LG002", 3, true), cellFinding("LG001", 4, false),
                                  cellFinding("LG001", 6, false)};
  model::Fix branch;
  branch.safety = model::FixSafety::Unsafe;
  branch.description = "else";
  model::Edit e;
  e.file = "d.cuh";
  e.start = e.end = {20, 6};
  e.replacement = " else { launch(); }";
  branch.edits.push_back(e);
  fs_[1].fixes.push_back(branch);
  fs_[2].fixes.push_back(branch);
  model::Gate gate = guardedGate();
  // the safe fix of every cell first, as suggestFixes leaves them
  std::vector<const model::Finding*> all;
  for (const auto& f : fs_) all.push_back(&f);
  auto guard = fix::guardFix(gate, all);
  ASSERT_TRUE(guard);
  for (auto& f : fs_) f.fixes.insert(f.fixes.begin(), *guard);

  fix::FixPlan safe = fix::planFixes(gate, fs_, false);
  ASSERT_EQ(safe.applied.size(), 1u);
  EXPECT_EQ(safe.applied[0].safety, model::FixSafety::Safe);
  EXPECT_EQ(safe.edits.count("d.cuh"), 0u);
  EXPECT_EQ(safe.guarded.size(), 3u);
  EXPECT_NE(safe.edits.at("g.py")[0].replacement.find("if (self.world_size in (4, 6) and not self.full_nvlink) or "
                                                      "(self.world_size == 3 and self.full_nvlink):\n"),
            std::string::npos)
      << safe.edits.at("g.py")[0].replacement;

  fix::FixPlan unsafe = fix::planFixes(gate, fs_, true);
  ASSERT_EQ(unsafe.applied.size(), 2u);
  ASSERT_EQ(unsafe.branched.size(), 2u);
  ASSERT_EQ(unsafe.guarded.size(), 1u);
  EXPECT_EQ(unsafe.guarded[0], &fs_[0]);
  for (const auto* b : unsafe.branched) EXPECT_NE(b, &fs_[0]);
  EXPECT_EQ(unsafe.edits.at("d.cuh").size(), 1u);
  const std::string& py = unsafe.edits.at("g.py")[0].replacement;
  EXPECT_EQ(py, "        if self.world_size == 3 and self.full_nvlink:\n            return False  # layergate LG002: the C++ "
                "dispatch throws for these\n");
  for (const auto& x : unsafe.applied) {
    if (x.safety == model::FixSafety::Safe) {
      EXPECT_EQ(x.description.find("world sizes 4"), std::string::npos) << x.description;
    }
  }

  // Every finding a branch serves: no guard at all.
  std::vector<model::Finding> only{fs_[1], fs_[2]};
  fix::FixPlan b = fix::planFixes(gate, only, true);
  EXPECT_EQ(b.edits.count("g.py"), 0u);
  EXPECT_EQ(b.applied.size(), 1u);
}

// Every fixture whose findings carry a safe fix: the fix applied to a copy,
// the copy analysed again has no LG001/LG002 left, and the fix touches only
// the Python gate.
TEST(FixFixtures, SafeFixLeavesNoGap) {
  fs::path tmp = fs::temp_directory_path() / ("lg_fix_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  fs::copy(LAYERGATE_FIXTURES, tmp / "fixtures", fs::copy_options::recursive);
  fs::path old = fs::current_path();
  ASSERT_EQ(chdir(tmp.c_str()), 0);
  int fixed_fixtures = 0;
  for (const auto& entry : fs::directory_iterator(tmp / "fixtures")) {
    if (!fs::exists(entry.path() / "expect.json")) continue;
    std::string name = entry.path().filename().string();
    auto expect = nlohmann::json::parse(slurp(entry.path() / "expect.json"));
    driver::Request req;
    std::string dir = "fixtures/" + name + "/";
    if (expect.contains("target")) req.target = expect["target"].get<std::string>();
    if (expect.contains("python")) {
      for (const auto& p : expect["python"]) req.python_files.push_back(dir + p.get<std::string>());
      for (const auto& p : expect["cpp"]) req.cpp_files.push_back(dir + p.get<std::string>());
    } else {
      for (const auto& e : fs::directory_iterator(entry.path())) {
        auto ext = e.path().extension().string();
        if (ext == ".py") req.python_files.push_back(dir + e.path().filename().string());
        if (ext == ".cuh" || ext == ".cu" || ext == ".h") req.cpp_files.push_back(dir + e.path().filename().string());
      }
      std::sort(req.python_files.begin(), req.python_files.end());
      std::sort(req.cpp_files.begin(), req.cpp_files.end());
    }
    report::Result r;
    try {
      r = driver::analyse(req);
    } catch (const InputError&) {
      continue;  // the bad-input fixtures
    }
    std::vector<const model::Finding*> fs_;
    for (const auto& f : r.findings) fs_.push_back(&f);
    auto edits = fix::collectEdits(fs_, false);
    if (edits.empty()) continue;
    ++fixed_fixtures;
    for (const auto& [file, es] : edits) {
      EXPECT_EQ(fs::path(file).extension(), ".py") << name;
      std::string after = fix::applyEdits(slurp(file), es);
      std::ofstream(file, std::ios::binary | std::ios::trunc) << after;
    }
    report::Result again = driver::analyse(req);
    for (const auto& f : again.findings)
      EXPECT_TRUE(f.rule != "LG001" && f.rule != "LG002") << name << ": " << f.rule << " " << f.message;
  }
  EXPECT_GE(fixed_fixtures, 15);
  ASSERT_EQ(chdir(old.c_str()), 0);
  fs::remove_all(tmp);
}
