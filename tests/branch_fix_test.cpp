// The unsafe fix of LG001 (tool/fix/BranchFix.cpp, cpp/FixFacts.cpp): the
// else site the C++ frontend records for an `if` without else, the edit in a
// macro body with `\` continuations and in plain code, and over every
// fixture: the C++ branch alone (the Python gate left as it was) closes the gap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/Analysis.h"
#include "cpp/CppFrontend.h"
#include "fix/Apply.h"
#include "fix/Fix.h"
#include "model/Errors.h"
#include "target/Target.h"

namespace fs = std::filesystem;
using namespace layergate;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> splitLines(const std::string& t) {
  std::vector<std::string> out;
  std::istringstream in(t);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

int lineOf(const std::string& text, const std::string& needle) {
  auto ls = splitLines(text);
  for (std::size_t i = 0; i < ls.size(); ++i)
    if (ls[i].find(needle) != std::string::npos) return static_cast<int>(i + 1);
  return -1;
}

const target::CppDispatchSpec& spec() {
  static target::Target t = target::loadTarget(std::string(LAYERGATE_SOURCE_DIR) + "/rules/targets/custom-allreduce.json");
  return t.cpp;
}

fs::path scratch(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("lg_branch_fix_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const char* kHead = R"(#pragma once
#include <cuda_runtime.h>
#include <stdexcept>
template <typename T, int ngpus>
__global__ void one_shot(T* out, int size) {}
template <typename T, int ngpus>
__global__ void two_shot(T* out, int size) {}
class CustomAllreduce {
 public:
  int world_size_;
  bool full_nvlink_;
  template <typename T>
  void allreduce(cudaStream_t stream, T* out, int size) {
    int blocks = 8, threads = 256;
)";
const char* kTail = R"(  }
};
)";

// Lines of a #define body, each padded so that its `\` is in column `col`.
std::string macroBody(const std::vector<std::string>& lines, std::size_t col) {
  std::string s;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    s += lines[i];
    if (i + 1 < lines.size()) s += std::string(col - 1 - lines[i].size(), ' ') + "\\";
    s += "\n";
  }
  return s;
}

std::vector<const model::Leaf*> noLaunch(const model::Dispatch& d) {
  std::vector<const model::Leaf*> out;
  for (const auto& l : d.leaves)
    if (l.kind == model::LeafKind::None) out.push_back(&l);
  return out;
}

}  // namespace

TEST(BranchFix, MacroBodyWithContinuations) {
  constexpr std::size_t col = 70;
  std::string src = std::string(kHead) +
                    "#define KL(ngpus, name) name<T, ngpus><<<blocks, threads, 0, stream>>>(out, size);\n" +
                    macroBody({"#define REDUCE_CASE(ngpus)", "  case ngpus: {", "    if (world_size_ == 2) {",
                               "      KL(ngpus, one_shot);", "    } else if (full_nvlink_) {",
                               "      KL(ngpus, two_shot);", "    }", "    break;", "  }"},
                              col) +
                    "    switch (world_size_) {\n      REDUCE_CASE(2)\n      REDUCE_CASE(4)\n      REDUCE_CASE(8)\n"
                    "      default:\n        throw std::runtime_error(\"no kernel\");\n    }\n" +
                    kTail;
  fs::path dir = scratch("macro");
  fs::path file = dir / "macro.cuh";
  std::ofstream(file, std::ios::binary) << src;
  model::Dispatch d = cpp::extractDispatch({file.string()}, spec());
  auto none = noLaunch(d);
  ASSERT_EQ(none.size(), 2u);  // REDUCE_CASE(4) and (8); world size 2 always launches
  const model::ElseSite& s = none[0]->else_site;
  ASSERT_TRUE(s.found) << s.why;
  EXPECT_TRUE(s.in_macro);
  EXPECT_EQ(s.continuation_col, static_cast<int>(col));
  int close = lineOf(src, "      KL(ngpus, two_shot);") + 1;
  EXPECT_EQ(s.line, close);
  EXPECT_EQ(s.col, 6);
  EXPECT_EQ(s.indent, "    ");
  EXPECT_EQ(s.condition, "full_nvlink_");
  EXPECT_EQ(s.kernel, "one_shot");
  EXPECT_EQ(s.launch, std::vector<std::string>{"      KL(ngpus, one_shot);"});
  EXPECT_EQ(s.launch_where.line, lineOf(src, "KL(ngpus, one_shot)"));
  // Both expansions need the same edit, inside the #define.
  EXPECT_EQ(fix::elseEdit(s), fix::elseEdit(none[1]->else_site));

  std::string after = fix::applyEdits(src, {fix::elseEdit(s)});
  auto ls = splitLines(after);
  int def = lineOf(after, "#define REDUCE_CASE"), brk = lineOf(after, "    break;");
  ASSERT_GT(brk, def);
  for (int i = def; i <= brk; ++i) {
    const std::string& l = ls[static_cast<std::size_t>(i - 1)];
    ASSERT_FALSE(l.empty());
    EXPECT_EQ(l.back(), '\\') << "line " << i << ": " << l;
    if (l.size() < col) {
      EXPECT_EQ(l.size(), col) << "line " << i << ": " << l;  // the column of the others
    }
  }
  EXPECT_EQ(ls[static_cast<std::size_t>(close - 1)].rfind("    } else {", 0), 0u) << after;
  EXPECT_EQ(ls[static_cast<std::size_t>(close + 1)].rfind("      KL(ngpus, one_shot);", 0), 0u) << after;
  EXPECT_EQ(ls[static_cast<std::size_t>(close + 2)].rfind("    } ", 0), 0u) << after;

  std::ofstream(file, std::ios::binary | std::ios::trunc) << after;
  model::Dispatch again = cpp::extractDispatch({file.string()}, spec());
  EXPECT_TRUE(noLaunch(again).empty());
  EXPECT_EQ(again.notes, d.notes);
  fs::remove_all(dir);
}

TEST(BranchFix, PlainCode) {
  std::string src = std::string(kHead) +
                    "    if (world_size_ == 2) {\n"
                    "      one_shot<T, 2><<<blocks, threads, 0, stream>>>(out, size);\n"
                    "    } else if (full_nvlink_) {  // NVLink only\n"
                    "      two_shot<T, 8><<<blocks, threads, 0, stream>>>(out, size);\n"
                    "    }\n" +
                    kTail;
  fs::path dir = scratch("plain");
  fs::path file = dir / "plain.cuh";
  std::ofstream(file, std::ios::binary) << src;
  model::Dispatch d = cpp::extractDispatch({file.string()}, spec());
  auto none = noLaunch(d);
  ASSERT_EQ(none.size(), 1u);
  const model::ElseSite& s = none[0]->else_site;
  ASSERT_TRUE(s.found) << s.why;
  EXPECT_FALSE(s.in_macro);
  EXPECT_EQ(s.line, lineOf(src, "two_shot<T, 8>") + 1);
  std::string after = fix::applyEdits(src, {fix::elseEdit(s)});
  EXPECT_NE(after.find("    } else {\n      /* layergate LG001: unsafe"), std::string::npos) << after;
  EXPECT_NE(after.find("*/\n      one_shot<T, 2><<<blocks, threads, 0, stream>>>(out, size);\n    }\n"), std::string::npos)
      << after;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << after;
  EXPECT_TRUE(noLaunch(cpp::extractDispatch({file.string()}, spec())).empty());
  fs::remove_all(dir);
}

TEST(BranchFix, NoSiteWithoutANonNvlinkLaunchOrAnNvlinkTest) {
  fs::path dir = scratch("none");
  struct Case {
    std::string body, why;
  } cases[] = {
      {"    if (full_nvlink_) {\n      two_shot<T, 8><<<blocks, threads, 0, stream>>>(out, size);\n    }\n",
       "no branch beside if (full_nvlink_) launches a kernel without testing NVLink"},
      {"    if (world_size_ == 2) {\n      one_shot<T, 2><<<blocks, threads, 0, stream>>>(out, size);\n    }\n",
       "does not test NVLink"},
      {"    if (world_size_ == 2) {\n      one_shot<T, 2><<<blocks, threads, 0, stream>>>(out, size);\n"
       "    } else if (full_nvlink_)\n      two_shot<T, 8><<<blocks, threads, 0, stream>>>(out, size);\n",
       "is not a braced block"},
  };
  for (const auto& c : cases) {
    fs::path file = dir / "d.cuh";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << std::string(kHead) + c.body + kTail;
    model::Dispatch d = cpp::extractDispatch({file.string()}, spec());
    auto none = noLaunch(d);
    ASSERT_EQ(none.size(), 1u) << c.body;
    EXPECT_FALSE(none[0]->else_site.found);
    EXPECT_NE(none[0]->else_site.why.find(c.why), std::string::npos) << none[0]->else_site.why;
  }
  fs::remove_all(dir);
}

// Every fixture whose LG001 findings carry an unsafe fix: only the unsafe
// edits applied to a copy (the Python gate as it was), the copy analyses
// with the same notes, and the cells those fixes were for have no LG001 left.
TEST(BranchFixFixtures, TheCppBranchAloneClosesTheGap) {
  fs::path tmp = scratch("fixtures");
  fs::copy(LAYERGATE_FIXTURES, tmp / "fixtures", fs::copy_options::recursive);
  fs::path old = fs::current_path();
  ASSERT_EQ(chdir(tmp.c_str()), 0);
  std::set<std::string> fixed;
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
    std::map<std::string, std::vector<model::Edit>> edits;
    std::set<std::pair<std::int64_t, bool>> cells;
    for (const auto& f : r.findings)
      for (const auto& x : f.fixes) {
        if (x.safety != model::FixSafety::Unsafe) continue;
        EXPECT_EQ(f.rule, "LG001") << name;
        EXPECT_NE(x.description.find("layergate selftest"), std::string::npos) << x.description;
        cells.insert({*f.config.world_size, f.config.full_nvlink.value_or(false)});
        for (const auto& e : x.edits) {
          auto& v = edits[e.file];
          if (std::find(v.begin(), v.end(), e) == v.end()) v.push_back(e);
        }
      }
    if (edits.empty()) continue;
    fixed.insert(name);
    for (const auto& [file, es] : edits) {
      auto ext = fs::path(file).extension().string();
      EXPECT_TRUE(ext == ".cuh" || ext == ".cu" || ext == ".h") << name << ": " << file;
      std::string before = slurp(file), after = fix::applyEdits(before, es);
      EXPECT_NE(after, before) << name;
      std::ofstream(file, std::ios::binary | std::ios::trunc) << after;
    }
    report::Result again = driver::analyse(req);
    EXPECT_EQ(again.dispatch.notes, r.dispatch.notes) << name;  // parses as before: no new parse problem
    for (const auto& f : again.findings)
      if (f.rule == "LG001" && f.config.world_size) {
        EXPECT_FALSE(cells.count({*f.config.world_size, f.config.full_nvlink.value_or(false)}))
            << name << ": " << f.message;
      }
  }
  EXPECT_TRUE(fixed.count("seed-force-pcie"));
  EXPECT_GE(fixed.size(), 5u);
  ASSERT_EQ(chdir(old.c_str()), 0);
  fs::remove_all(tmp);
}
