// Golden tests over fixtures/: every folder with an expect.json is analysed
// end to end (both frontends, solver, checks, report). The hand-written
// expect.json states the verdict (which cells have which gap, the env that
// opens it, the gap's sizes); golden.txt holds the default text report and
// golden-verbose.txt the --verbose one, so that any change of wording,
// location or matrix shows up in review.
// LAYERGATE_UPDATE_GOLDEN=1 rewrites both from the current output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "cli/Analysis.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace layergate;

namespace {

std::vector<std::string> fixtureNames() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(LAYERGATE_FIXTURES))
    if (fs::exists(e.path() / "expect.json")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Inputs of a fixture: expect.json may list them ("python": [...], "cpp":
// [...], "route": "..."); by default the folder's *.py and *.cuh/*.cu/*.h (and MUSA's
// *.muh/*.mu) files.
void inputs(const std::string& name, const json& expect, driver::Request& req) {
  std::string dir = std::string("fixtures/") + name + "/";
  if (expect.contains("target")) req.target = expect["target"].get<std::string>();
  // "route": analyse the gate's per-configuration route to that op library
  // (as `check .` does for a route whose C++ is in the tree), the C++ its own.
  if (expect.contains("route")) req.route = expect["route"].get<std::string>();
  if (expect.contains("python")) {
    for (const auto& p : expect["python"]) req.python_files.push_back(dir + p.get<std::string>());
    for (const auto& p : expect["cpp"]) req.cpp_files.push_back(dir + p.get<std::string>());
    return;
  }
  std::vector<std::string> py, cc;
  for (const auto& e : fs::directory_iterator(fs::path(LAYERGATE_FIXTURES) / name)) {
    auto ext = e.path().extension().string();
    auto rel = dir + e.path().filename().string();
    if (ext == ".py") py.push_back(rel);
    if (ext == ".cuh" || ext == ".cu" || ext == ".h" || ext == ".muh" || ext == ".mu") cc.push_back(rel);
  }
  std::sort(py.begin(), py.end());
  std::sort(cc.begin(), cc.end());
  req.python_files = py;
  req.cpp_files = cc;
}

class Fixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_EQ(chdir(fs::path(LAYERGATE_FIXTURES).parent_path().c_str()), 0); }
};

TEST_P(Fixture, VerdictMatchesExpectAndGolden) {
  const std::string name = GetParam();
  json expect = json::parse(slurp(fs::path(LAYERGATE_FIXTURES) / name / "expect.json"));
  driver::Request req;
  inputs(name, expect, req);
  report::Result r = driver::analyse(req);

  // The verdict: exactly the expected (rule, world size, NVLink) cells.
  std::set<std::tuple<std::string, int, bool>> got, want;
  // Fixtures that name their files (the flag-trace ones) are checked for every
  // rule; the two-file ones for the gap rules (their trace stops at the
  // missing .cu by design: LG006, which golden.txt still pins).
  bool trace_fixture = expect.contains("python");
  for (const auto& f : r.findings) {
    if (!trace_fixture && f.rule != "LG001" && f.rule != "LG002") continue;
    bool cell = f.rule == "LG001" || f.rule == "LG002";
    got.insert({f.rule, cell ? static_cast<int>(f.config.world_size.value_or(0)) : 0,
                cell ? f.config.full_nvlink.value_or(false) : false});
  }
  for (const auto& e : expect["findings"])
    want.insert({e["rule"].get<std::string>(), e.value("world_size", 0),
                 e.contains("full_nvlink") && e["full_nvlink"].is_boolean() && e["full_nvlink"].get<bool>()});
  if (r.space) {
    // A family described as data: exactly the expected (rule, region) pairs,
    // the region as the finding names it ("head_size 256, block_size 16, 32").
    std::set<std::pair<std::string, std::string>> got_r, want_r;
    for (const auto& f : r.findings) got_r.insert({f.rule, f.cell});
    for (const auto& e : expect["findings"]) want_r.insert({e["rule"].get<std::string>(), e.value("region", "")});
    EXPECT_EQ(got_r, want_r) << report::renderText(r);
  } else {
    EXPECT_EQ(got, want) << report::renderText(r);
  }

  for (const auto& e : expect["findings"]) {
    for (const auto& f : r.findings) {
      if (f.rule != e["rule"]) continue;
      if (e.contains("message_contains"))
        for (const auto& m : e["message_contains"]) {
          auto low = [](std::string x) {
            for (auto& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return x;
          };
          EXPECT_NE(low(f.message).find(low(m.get<std::string>())), std::string::npos) << f.message << " lacks " << m;
        }
      if (!e.contains("world_size")) {
        // A trace finding: the env that forces the flag, when stated.
        if (e.contains("env"))
          for (auto it = e["env"].begin(); it != e["env"].end(); ++it) {
            bool found = false;
            for (const auto& [k, v] : f.config.env) found |= k == it.key() && v && *v == it.value().get<std::string>();
            EXPECT_TRUE(found) << f.message << " lacks " << it.key() << "=" << it.value();
          }
        continue;
      }
      // "full_nvlink": null: a cell neither layer's NVLink flag decides.
      std::optional<bool> nv;
      if (!e["full_nvlink"].is_null()) nv = e["full_nvlink"].get<bool>();
      if (f.config.world_size != e["world_size"].get<int>() || f.config.full_nvlink != nv) continue;
      // "values": what a policy gate hands down (and its inputs) in the counterexample.
      if (e.contains("values"))
        for (auto it = e["values"].begin(); it != e["values"].end(); ++it) {
          auto hit = std::find_if(f.config.values.begin(), f.config.values.end(),
                                  [&](const auto& kv) { return kv.first == it.key(); });
          ASSERT_NE(hit, f.config.values.end()) << f.message << " lacks " << it.key();
          EXPECT_EQ(hit->second, it.value().get<std::int64_t>()) << it.key();
        }
      // The counterexample's env: exactly the variables expect.json names,
      // each with an accepted value ("1"; any of env_any_of; or, for
      // {"int_at_least": N}, a number >= N). Unset variables may be listed.
      std::map<std::string, std::string> env;
      for (const auto& [k, v] : f.config.env)
        if (v) env[k] = *v;
      std::set<std::string> want_names;
      if (e.contains("env"))
        for (auto it = e["env"].begin(); it != e["env"].end(); ++it) want_names.insert(it.key());
      std::set<std::string> got_names;
      for (const auto& [k, v] : env) got_names.insert(k);
      EXPECT_EQ(got_names, want_names) << f.message;
      if (e.contains("env")) {
        for (auto it = e["env"].begin(); it != e["env"].end(); ++it) {
          if (!env.count(it.key())) continue;
          const std::string& v = env[it.key()];
          if (it.value().is_object()) {
            std::int64_t n = it.value()["int_at_least"].get<std::int64_t>();
            EXPECT_TRUE(!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit) && std::stoll(v) >= n)
                << it.key() << "=" << v << " (want an int >= " << n << ")";
          } else if (e.contains("env_any_of") && e["env_any_of"].contains(it.key())) {
            auto any = e["env_any_of"][it.key()].get<std::vector<std::string>>();
            EXPECT_NE(std::find(any.begin(), any.end(), v), any.end()) << it.key() << "=" << v;
          } else {
            EXPECT_EQ(v, it.value().get<std::string>()) << it.key();
          }
        }
      }
      if (e.contains("env_unset")) {
        for (const auto& n : e["env_unset"]) {
          EXPECT_EQ(env.count(n.get<std::string>()), 0u) << n;
        }
      }
      if (e.contains("nbytes_min")) {
        ASSERT_TRUE(f.sizes);
        EXPECT_EQ(f.sizes->lo, e["nbytes_min"].get<std::int64_t>()) << f.message;
      }
      if (e.contains("nbytes_max")) {
        ASSERT_TRUE(f.sizes);
        EXPECT_EQ(f.sizes->hi, e["nbytes_max"].get<std::int64_t>()) << f.message;
      }
      // Every finding points into both layers.
      bool py = false, cc = false;
      for (const auto& l : f.locations) {
        py |= l.file.size() > 3 && l.file.compare(l.file.size() - 3, 3, ".py") == 0;
        cc |= l.role == "dispatch";
      }
      EXPECT_TRUE(py && cc) << f.message;
    }
  }
  // The flag trace: the hops in order, each at the right file and line.
  if (expect.contains("trace")) {
    std::vector<std::string> got_t, want_t;
    for (const auto& h : r.trace) {
      std::string file = h.where.file.substr(std::min(h.where.file.size(), std::string("fixtures/" + name + "/").size()));
      got_t.push_back(h.hop + " " + file + ":" + std::to_string(h.where.line));
    }
    for (const auto& h : expect["trace"])
      want_t.push_back(h["hop"].get<std::string>() + " " + h["file"].get<std::string>() + ":" + std::to_string(h["line"].get<int>()));
    EXPECT_EQ(got_t, want_t);
  }
  int errors = report::countAtLeast(r, model::Severity::Error);
  EXPECT_EQ(errors > 0 ? 1 : 0, expect.value("exit", 0));

  // The text report byte for byte: golden.txt what a user reads by default
  // (grouped diagnostics, fixes, one counterexample each), golden-verbose.txt
  // with everything --verbose adds (flag trace, notes, matrix).
  report::TextOptions verbose;
  verbose.matrix = verbose.trace = verbose.notes = true;
  const char* update = std::getenv("LAYERGATE_UPDATE_GOLDEN");
  for (const auto& [file, o] : {std::pair<std::string, report::TextOptions>{"golden.txt", {}}, {"golden-verbose.txt", verbose}}) {
    std::string text = report::renderText(r, o);
    fs::path golden = fs::path(LAYERGATE_FIXTURES) / name / file;
    if (update && *update == '1') {
      std::ofstream(golden, std::ios::binary) << text;
    } else {
      ASSERT_TRUE(fs::exists(golden)) << "no " << file << "; run with LAYERGATE_UPDATE_GOLDEN=1 and review it";
      EXPECT_EQ(text, slurp(golden)) << file;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Fixture, ::testing::ValuesIn(fixtureNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
