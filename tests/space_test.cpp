// Unit tests of a family described as data: the target's variables and terms
// (parsing, refusals) and the Space solver on hand-built models (regions,
// certain and possible gaps, disjoint boxes).
#include <gtest/gtest.h>

#include "checks/Check.h"
#include "model/Errors.h"
#include "solve/Space.h"
#include "target/Target.h"

using namespace layergate;
using namespace layergate::model;

namespace {

const char* kTarget = R"J({
  "name": "fam", "platform": "rocm",
  "variables": [
    {"name": "arch", "type": "enum", "values": ["a", "b"]},
    {"name": "size", "type": "int", "values": [64, 128, 256]},
    {"name": "ratio", "type": "int", "min": 1, "max": 64},
    {"name": "heads", "type": "int", "min": 1, "max": 8},
    {"name": "bias", "type": "bool"}
  ],
  "python": {"classes": [], "policy": {"functions": ["ok"], "returns": "bool",
             "inputs": {"size": {"var": "size"}, "bias": {"var": "bias", "present": true}}},
             "values": {"ON_A": {"var": "arch", "equals": "a"}}},
  "cpp": {"dispatch_functions": ["entry"], "follow_calls": true,
          "values": {"q.size(1)": {"mul": ["ratio", "heads"]},
                     "warp()": {"if": {"var": "arch", "equals": "a"}, "then": {"const": 64}, "else": {"const": 32}}}}
})J";

ExprPtr v(const char* n, Sort s = Sort::Int) { return Var(n, s, VarKind::Config); }
ExprPtr eq(ExprPtr a, std::int64_t x) { return Cmp(Op::Eq, std::move(a), IntC(x)); }
Location at(const char* f, int line) { return Location{f, line, 1, "", ""}; }

}  // namespace

TEST(Variables, ATargetDeclaresTypedVariablesAndTermsOverThem) {
  target::Target t = target::parseTarget(kTarget, "fam.json");
  ASSERT_EQ(t.variables.size(), 5u);
  EXPECT_EQ(t.variables[0].sort(), Sort::Str);
  EXPECT_EQ(t.variables[1].ints, (std::vector<std::int64_t>{64, 128, 256}));
  EXPECT_EQ(t.variables[4].sort(), Sort::Bool);
  EXPECT_TRUE(t.python.policy.returns_bool);
  EXPECT_TRUE(t.cpp.follow_calls);
  ExprPtr a = target::termExpr(t.python.values.at("ON_A"), t.variables);
  EXPECT_EQ(a->str(), R"(arch == "a")");
  EXPECT_EQ(target::termExpr(t.cpp.values.at("q.size(1)"), t.variables)->str(), "ratio * heads");
  EXPECT_EQ(target::termExpr(t.cpp.values.at("warp()"), t.variables)->sort, Sort::Int);
  // the domain: every variable within its values or bounds
  std::string d = target::domainExpr(t.variables)->str();
  EXPECT_NE(d.find(R"(arch == "b")"), std::string::npos) << d;
  EXPECT_NE(d.find("ratio <= 64"), std::string::npos) << d;
}

TEST(Variables, BadDeclarationsAreRefusedWithTheirName) {
  auto refused = [](const std::string& vars, const std::string& says) {
    std::string j = R"({"name": "t", "python": {"classes": ["X"]}, "cpp": {"dispatch_functions": ["f"]}, "variables": )" +
                    vars + "}";
    try {
      target::parseTarget(j, "t.json");
      ADD_FAILURE() << vars << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(R"([{"name": "x", "type": "int"}])", "needs \"values\" or both \"min\" and \"max\"");
  refused(R"([{"name": "x", "type": "enum"}])", "an enum needs \"values\"");
  refused(R"([{"name": "x", "type": "float", "min": 1, "max": 2}])", "must be int, enum or bool");
  refused(R"([{"name": "x", "type": "bool"}, {"name": "x", "type": "bool"}])", "declared twice");
  refused(R"([{"name": "1x", "type": "bool"}])", "Python identifier");
  EXPECT_THROW(target::parseTarget(R"({"name": "t", "python": {"classes": ["X"], "values": {"A": {"var": "nope"}}},
                                       "cpp": {"dispatch_functions": ["f"]}})", "t.json"),
               InputError);
  EXPECT_THROW(target::parseTarget(R"({"name": "t", "python": {"classes": ["X"]},
                                       "cpp": {"dispatch_functions": ["f"], "values": {"x": {"mul": ["a"]}}}})", "t.json"),
               InputError);
}

namespace {

target::Variables vars() { return target::parseTarget(kTarget, "fam.json").variables; }

// The gate admits sizes 64 and 128 (and, with `wide`, 256) for ratios
// 1..16 on arch a; the dispatch launches for sizes 64, 128 and ratios 1..16
// and throws otherwise.
Gate gate(bool wide) {
  Gate g;
  g.policy = true;
  g.class_name = "ok";
  auto size = wide ? OrAll({eq(v("size"), 64), eq(v("size"), 128), eq(v("size"), 256)})
                   : Or(eq(v("size"), 64), eq(v("size"), 128));
  g.admit = AndAll({Cmp(Op::Eq, v("arch", Sort::Str), StrC("a")), size, Cmp(Op::Le, v("ratio"), IntC(16))});
  g.admits.push_back(GateCheck{g.admit, "return ...", at("gate.py", 10)});
  return g;
}

Dispatch dispatch() {
  Dispatch d;
  auto size_ok = Or(eq(v("size"), 64), eq(v("size"), 128));
  auto ratio = Arith(Op::Div, Arith(Op::Mul, v("ratio"), v("heads")), v("heads"));
  auto ratio_ok = And(Cmp(Op::Ge, ratio, IntC(1)), Cmp(Op::Le, ratio, IntC(16)));
  d.leaves.push_back(Leaf{LeafKind::Launch, And(size_ok, ratio_ok), "kernel", "", at("d.cu", 5), at("d.cu", 5), {}});
  d.leaves.push_back(Leaf{LeafKind::Throw, Not(size_ok), "", "unsupported size", at("d.cu", 7), at("d.cu", 7), {}});
  d.leaves.push_back(Leaf{LeafKind::Throw, And(size_ok, Not(ratio_ok)), "", "unsupported ratio", at("d.cu", 9),
                          at("d.cu", 9), {}});
  return d;
}

}  // namespace

TEST(Space, ConsistentLayersGiveOneServedRegionAndNoGap) {
  Gate g = gate(false);
  Dispatch d = dispatch();
  auto r = solve::solveSpace(g, d, vars());
  EXPECT_TRUE(r.gaps.empty());
  ASSERT_EQ(r.served.size(), 1u);
  EXPECT_EQ(r.served[0].text(), "arch a, size 64, 128, ratio 1..16");
  EXPECT_EQ(r.served[0].what, "kernel");
  EXPECT_FALSE(r.truncated);
  EXPECT_TRUE(checks::spaceFindings(g, d, r).empty());
}

TEST(Space, AWidenedGateGivesExactlyTheWidenedRegionAsLG002) {
  Gate g = gate(true);
  Dispatch d = dispatch();
  auto r = solve::solveSpace(g, d, vars());
  ASSERT_EQ(r.gaps.size(), 1u);
  EXPECT_EQ(r.gaps[0].text(), "arch a, size 256, ratio 1..16");
  EXPECT_TRUE(r.gaps[0].certain);
  auto f = checks::spaceFindings(g, d, r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "LG002");
  EXPECT_EQ(f[0].cell, "arch a, size 256, ratio 1..16");
  EXPECT_NE(f[0].message.find("unsupported size"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[0].locations[0].file, "gate.py");
  EXPECT_EQ(f[0].locations[1].file, "d.cu");
}

TEST(Space, AGapThatNeedsUninterpretedCodeIsOnlyPossible) {
  // A value computed from the configuration's inputs (a call given one of
  // them) may differ per configuration: no feature switch, so the gap is
  // possible only.
  Gate g = gate(true);
  auto unknown = Var("helper(head_size)", Sort::Bool, VarKind::Opaque);
  g.admit = And(g.admit, unknown);
  g.opaques.push_back(OpaqueSymbol{"helper(head_size)", "helper(head_size)", at("gate.py", 3), false, nullptr});
  Dispatch d = dispatch();
  auto r = solve::solveSpace(g, d, vars());
  ASSERT_EQ(r.gaps.size(), 1u);
  EXPECT_FALSE(r.gaps[0].certain);
  auto f = checks::spaceFindings(g, d, r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rule, "LG008");
  EXPECT_NE(f[0].message.find("helper(head_size)"), std::string::npos) << f[0].message;
}

TEST(Space, AFeatureSwitchIsTakenOnAndTheGapIsProven) {
  // An argument-less query that, false, turns every configuration off (an
  // optional library's availability): a certain gap assumes it true, and the
  // finding names the assumption.
  Gate g = gate(true);
  auto on = Var("library_loaded()", Sort::Bool, VarKind::Opaque);
  g.admit = And(g.admit, on);
  g.opaques.push_back(OpaqueSymbol{"library_loaded()", "library_loaded()", at("gate.py", 3), false, nullptr});
  Dispatch d = dispatch();
  auto r = solve::solveSpace(g, d, vars());
  ASSERT_EQ(r.gaps.size(), 1u);
  EXPECT_TRUE(r.gaps[0].certain);
  ASSERT_EQ(r.gaps[0].assuming.size(), 1u);
  EXPECT_EQ(r.gaps[0].assuming[0].first.text, "library_loaded()");
  EXPECT_TRUE(r.gaps[0].assuming[0].second);
  auto f = checks::spaceFindings(g, d, r);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].rule, "LG008");
  bool said = false;
  for (const auto& l : f[0].locations) said = said || l.note.find("assuming `library_loaded()` is true") != std::string::npos;
  EXPECT_TRUE(said);
}
