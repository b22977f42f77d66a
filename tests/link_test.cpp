// Unit tests of the flag linker on hand-built trace facts (no parsing): the
// whole chain, a swapped call, a missing entry function (name fallback), a
// constructor default, and a missing binding.
#include <gtest/gtest.h>

#include <algorithm>

#include "link/Link.h"

using namespace layergate;
using namespace layergate::model;

namespace {

const std::string kFullNvlink = "full_nvlink";  // the all-reduce target's link variable

Location at(const char* f, int line) { return Location{f, line, 1, "", ""}; }
CppParam param(const char* type, const char* name, int line, bool def = false) {
  CppParam p;
  p.type = type;
  p.name = name;
  p.where = at("e.cu", line);
  p.has_default = def;
  p.default_text = def ? "true" : "";
  return p;
}

struct Facts {
  Gate gate;
  Dispatch d;
};

// gate: ops.init_custom_ar(meta, rank_data, rank, self.full_nvlink) through a
// wrapper; C++: schema + impl, entry(ipc, rank_data, rank, full_nvlink),
// new C(..., rank, ws, full_nvlink) -> full_nvlink_(full_nvlink), one branch.
Facts chain() {
  Facts f;
  f.d.class_name = "CustomAllreduce";
  f.d.member_uses.push_back({"full_nvlink_", kFullNvlink, at("d.cuh", 177)});
  CtorInfo c;
  c.class_name = "CustomAllreduce";
  c.params = {param("int", "rank", 110), param("int", "world_size", 110), param("bool", "full_nvlink", 110, true)};
  c.inits.push_back({"full_nvlink_", 2, "full_nvlink", at("d.cuh", 121)});
  f.d.ctors.push_back(c);
  CppEntry e;
  e.name = "init_custom_ar";
  e.params = {param("fptr_t", "ipc", 19), param("Tensor&", "rank_data", 19), param("int64_t", "rank", 19),
              param("bool", "full_nvlink", 20)};
  e.where = at("e.cu", 19);
  Construction k;
  k.class_name = "CustomAllreduce";
  k.arg_texts = {"rank", "world_size", "full_nvlink"};
  k.arg_param = {2, -1, 3};
  k.arg_locs = {at("e.cu", 29), at("e.cu", 29), at("e.cu", 30)};
  k.where = at("e.cu", 29);
  e.constructs.push_back(k);
  f.d.entries.push_back(e);
  OpBinding schema;
  schema.op = "init_custom_ar";
  schema.kind = "torch-schema";
  schema.schema_params = {param("int[]", "ipc", 17), param("Tensor", "rank_data", 17), param("int", "rank", 17),
                          param("bool", "full_nvlink", 17)};
  for (auto& p : schema.schema_params) p.where = at("b.cc", 17);
  schema.where = at("b.cc", 17);
  OpBinding impl;
  impl.op = "init_custom_ar";
  impl.kind = "torch-impl";
  impl.function = "init_custom_ar";
  impl.where = at("b.cc", 18);
  f.d.bindings = {schema, impl};

  Forwarder w;
  w.name = "init_custom_ar";
  w.params = {"ipc", "rank_data", "rank", "full_nvlink"};
  w.param_locs = {at("w.py", 10), at("w.py", 10), at("w.py", 10), at("w.py", 11)};
  w.call.name = "init_custom_ar";
  for (int i = 0; i < 4; ++i) w.call.args.push_back(CallArg{i, "", w.params[i], nullptr, {}, at("w.py", 12), nullptr});
  w.arg_param = {0, 1, 2, 3};
  w.where = at("w.py", 10);
  f.gate.forwarders.push_back(w);

  NativeCall call;
  call.callee = "ops.init_custom_ar";
  call.name = "init_custom_ar";
  call.where = at("g.py", 110);
  call.args = {CallArg{0, "", "meta", nullptr, {}, at("g.py", 110), nullptr},
               CallArg{1, "", "self.rank_data", nullptr, {}, at("g.py", 110), nullptr},
               CallArg{2, "", "rank", Var("rank", Sort::Int, VarKind::Probe), {}, at("g.py", 110), nullptr},
               CallArg{3, "", "self.full_nvlink", Var(kFullNvlink, Sort::Bool), {{"probe", at("g.py", 93)}}, at("g.py", 111), nullptr}};
  f.gate.native_calls.push_back(call);
  return f;
}

// The SGLang 2025-12 chain: the gate calls ops.init_custom_ar (W1, in
// custom_all_reduce_ops.py), which calls _custom_ar.init_custom_ar (W2, in
// sgl_kernel/allreduce.py), which calls the op. Both wrappers share the op's
// name; the links are the resolved indices (call.wrapper), not the names.
Facts twoWrappers() {
  Facts f = chain();
  Forwarder inner = f.gate.forwarders[0];  // W2: calls the op
  Forwarder outer = inner;                  // W1: calls W2
  outer.param_locs = {at("o.py", 20), at("o.py", 20), at("o.py", 20), at("o.py", 21)};
  outer.where = at("o.py", 20);
  outer.call.callee = "_custom_ar.init_custom_ar";
  for (auto& a : outer.call.args) a.where = at("o.py", 22);
  outer.call.where = at("o.py", 22);
  outer.call.wrapper = 0;  // -> inner
  f.gate.forwarders = {inner, outer};
  f.gate.native_calls[0].wrapper = 1;  // the gate's call reaches W1
  return f;
}

std::vector<std::string> hops(const link::FlagLink& l) {
  std::vector<std::string> out;
  for (const auto& h : l.hops) out.push_back(h.hop + " " + h.where.file + ":" + std::to_string(h.where.line));
  return out;
}

}  // namespace

TEST(Link, FollowsTheWholeChainByPositionsAndNames) {
  Facts f = chain();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.complete);
  EXPECT_TRUE(l.problems.empty());
  ASSERT_TRUE(l.value);
  EXPECT_EQ(l.value->s, kFullNvlink);
  EXPECT_EQ(hops(l), (std::vector<std::string>{"probe g.py:93", "call argument #4 g.py:111", "wrapper parameter w.py:11",
                                               "schema argument b.cc:17", "binding b.cc:18", "C++ parameter e.cu:20",
                                               "constructor argument e.cu:30", "member d.cuh:121", "branch condition d.cuh:177"}));
}

TEST(Link, SwappedArgumentsAreABoundaryMismatchNamingWhereTheFlagWent) {
  Facts f = chain();
  std::swap(f.gate.native_calls[0].args[2].position, f.gate.native_calls[0].args[3].position);
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_EQ(l.problems[0].rule, "LG005");
  EXPECT_NE(l.problems[0].message.find("`rank`"), std::string::npos) << l.problems[0].message;
  EXPECT_FALSE(l.value);
  EXPECT_EQ(hops(l).back(), "C++ parameter e.cu:19");  // the flag lands in `rank`
}

TEST(Link, WithoutTheEntryTheNameFallbackStillFindsTheValue) {
  Facts f = chain();
  f.d.entries.clear();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_EQ(l.problems[0].rule, "LG006");
  ASSERT_TRUE(l.value);  // `self.full_nvlink` matches the constructor parameter's name
  EXPECT_FALSE(l.complete);
}

TEST(Link, AFlagLeftToTheConstructorDefaultIsAMismatchAndNotAValue) {
  Facts f = chain();
  f.d.entries[0].constructs[0].arg_texts.pop_back();
  f.d.entries[0].constructs[0].arg_param.pop_back();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_FALSE(l.problems.empty());
  EXPECT_EQ(l.problems[0].rule, "LG005");
  EXPECT_NE(l.problems[0].message.find("default"), std::string::npos);
  EXPECT_FALSE(l.value);
}

TEST(Link, AMissingBindingBreaksTheTraceAfterThePythonSide) {
  Facts f = chain();
  f.d.bindings.clear();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_EQ(l.problems[0].rule, "LG006");
  EXPECT_EQ(hops(l).back(), "wrapper parameter w.py:11");
}

TEST(Link, NoMemberUseMeansNothingToTrace) {
  Facts f = chain();
  f.d.member_uses.clear();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.hops.empty());
  EXPECT_TRUE(l.problems.empty());
}

// A member use inside a precondition call (RuntimeCheck(full_nvlink_ || ...))
// is not the dispatch's branch on the flag: not a branch condition hop, and
// alone it leaves nothing to trace.
TEST(Link, APreconditionUseIsNotTheBranchCondition) {
  Facts f = chain();
  Location pre = at("d.cuh", 150);
  pre.role = "precondition";
  f.d.member_uses.insert(f.d.member_uses.begin(), {"full_nvlink_", kFullNvlink, pre});
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.complete);
  auto h = hops(l);
  EXPECT_EQ(std::count(h.begin(), h.end(), "branch condition d.cuh:150"), 0) << ::testing::PrintToString(h);
  EXPECT_EQ(h.back(), "branch condition d.cuh:177");

  f.d.member_uses.erase(f.d.member_uses.begin() + 1);  // only the precondition is left
  auto only = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(only.member.empty());
  EXPECT_TRUE(only.hops.empty());
  EXPECT_TRUE(only.problems.empty());
}

TEST(Link, FollowsAChainOfTwoWrappersOutermostFirst) {
  Facts f = twoWrappers();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.complete);
  EXPECT_TRUE(l.problems.empty());
  ASSERT_TRUE(l.value);
  EXPECT_EQ(l.value->s, kFullNvlink);
  EXPECT_EQ(hops(l), (std::vector<std::string>{"probe g.py:93", "call argument #4 g.py:111", "wrapper parameter o.py:21",
                                               "wrapper parameter w.py:11", "schema argument b.cc:17", "binding b.cc:18",
                                               "C++ parameter e.cu:20", "constructor argument e.cu:30", "member d.cuh:121",
                                               "branch condition d.cuh:177"}));
}

TEST(Link, ArgumentsSwappedInTheFirstWrapperAreAMismatchThere) {
  Facts f = twoWrappers();
  auto& w1 = f.gate.forwarders[1];
  std::swap(w1.call.args[2].text, w1.call.args[3].text);  // (ipc, rank_data, full_nvlink, rank)
  std::swap(w1.arg_param[2], w1.arg_param[3]);
  w1.call.args[3].where = at("o.py", 23);
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_EQ(l.problems[0].rule, "LG005");
  EXPECT_NE(l.problems[0].message.find("in the wrapper init_custom_ar is `rank`"), std::string::npos) << l.problems[0].message;
  EXPECT_NE(l.problems[0].message.find("goes into `rank`"), std::string::npos) << l.problems[0].message;
  EXPECT_EQ(l.problems[0].locations.at(0).line, 23);  // W1's call, not the gate's
  EXPECT_FALSE(l.value);
  EXPECT_EQ(hops(l), (std::vector<std::string>{"probe g.py:93", "call argument #4 g.py:111", "wrapper parameter o.py:21",
                                               "wrapper parameter w.py:10", "schema argument b.cc:17", "binding b.cc:18",
                                               "C++ parameter e.cu:19"}));
}

TEST(Link, ALiteralInTheFirstWrapperIsTheValueCppGets) {
  Facts f = twoWrappers();
  auto& w1 = f.gate.forwarders[1];
  w1.call.args[3] = CallArg{3, "", "True", True(), {}, at("o.py", 24), nullptr};
  w1.arg_param[3] = -1;
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.problems.empty());
  EXPECT_TRUE(l.complete);
  ASSERT_TRUE(l.value);
  EXPECT_TRUE(isConst(l.value) && l.value->b);
  EXPECT_EQ(l.value_text, "True");
  EXPECT_EQ(hops(l).front(), "call argument #4 o.py:24");  // not the gate's call: its flag never reaches C++
  EXPECT_EQ(hops(l).at(1), "wrapper parameter w.py:11");
}

TEST(Link, AWrapperCallingTheNextWithTooFewArgumentsIsAMismatch) {
  Facts f = twoWrappers();
  auto& w1 = f.gate.forwarders[1];
  w1.call.args.pop_back();
  w1.arg_param.pop_back();
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  ASSERT_FALSE(l.problems.empty());
  EXPECT_EQ(l.problems[0].rule, "LG005");
  EXPECT_NE(l.problems[0].message.find("calls _custom_ar.init_custom_ar with 3 arguments, but the wrapper init_custom_ar takes 4"),
            std::string::npos)
      << l.problems[0].message;
}

TEST(Link, WithoutResolvedLinksTheLastWrapperByNameIsUsedAsBefore) {
  Facts f = twoWrappers();
  f.gate.native_calls[0].wrapper = -1;
  f.gate.forwarders[1].call.wrapper = -1;
  auto l = link::traceFlag(f.gate, f.d, kFullNvlink);
  EXPECT_TRUE(l.problems.empty());
  EXPECT_EQ(hops(l).at(2), "wrapper parameter w.py:11");  // the one whose call has the entry's arity, first
}
