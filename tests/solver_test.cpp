// Unit tests of the solver and the checks on hand-built models (no parsing):
// the seed bug, its fix, a size gap, a throwing world size, and a constructor
// gate opened while the per-call predicate stays closed.
#include <gtest/gtest.h>

#include "checks/Check.h"
#include "solve/Solver.h"
#include "target/Target.h"

using namespace layergate;
using namespace layergate::model;

namespace {

// The all-reduce target's variables: world_size, full_nvlink and nbytes in
// the ranks, link and bytes roles.
solve::Options allReduce() {
  static const target::Target t =
      target::loadTarget(std::string(LAYERGATE_SOURCE_DIR) + "/rules/targets/custom-allreduce.json");
  solve::Options o;
  o.variables = t.variables;
  return o;
}
ExprPtr ws() { return Var("world_size", Sort::Int); }
ExprPtr nvl() { return Var("full_nvlink", Sort::Bool); }
ExprPtr nb() { return Var("nbytes", Sort::Int); }
ExprPtr eq(ExprPtr a, std::int64_t v) { return Cmp(Op::Eq, std::move(a), IntC(v)); }
ExprPtr lt(ExprPtr a, std::int64_t v) { return Cmp(Op::Lt, std::move(a), IntC(v)); }
ExprPtr forced() { return And(EnvIsSet("FORCE"), Cmp(Op::Eq, EnvValue("FORCE"), StrC("1"))); }
Location at(int line) { return Location{"x", line, 1, "", ""}; }

// Upstream-shaped gate; `open` lets >2 PCIe GPUs through when FORCE=1, in the
// constructor and/or the per-call predicate.
Gate gate(bool open_ctor, bool open_call, std::int64_t max_size = 8 << 20) {
  Gate g;
  auto supported = OrAll({eq(ws(), 2), eq(ws(), 4), eq(ws(), 6), eq(ws(), 8)});
  auto pcie_block = And(Cmp(Op::Gt, ws(), IntC(2)), Not(nvl()));
  if (open_ctor) pcie_block = And(pcie_block, Not(forced()));
  g.admit = AndAll({supported, Not(pcie_block), Var("p2p_ok", Sort::Bool, VarKind::Probe)});
  auto ok = Or(eq(ws(), 2), nvl());
  if (open_call) ok = Or(ok, forced());
  auto aligned = eq(Arith(Op::Mod, nb(), IntC(16)), 0);
  g.per_call = AndAll({aligned, ok, lt(nb(), max_size)});
  g.admits.push_back(GateCheck{g.per_call, "return inp_size < self.max_size", at(40)});
  g.rejects.push_back(GateCheck{pcie_block, "world_size > 2 and not full_nvlink", at(20)});
  g.env_reads = {"FORCE"};
  g.has_per_call = true;
  return g;
}

// Upstream-shaped dispatch; pcie_limit > 0 adds a PCIe branch below that size.
Dispatch dispatch(std::int64_t pcie_limit = 0, bool with_three = false) {
  Dispatch d;
  auto pre = Var("size % d != 0", Sort::Bool, VarKind::Opaque);  // a precondition throw
  d.leaves.push_back({LeafKind::Throw, pre, "", "size not a multiple", at(1), at(1), {}});
  auto ok = Not(pre);
  ExprPtr any_case = False();
  std::vector<int> sizes = {2, 4, 6, 8};
  if (with_three) sizes.push_back(3);
  for (int n : sizes) {
    auto c = And(ok, eq(ws(), n));
    any_case = Or(any_case, eq(ws(), n));
    d.leaves.push_back({LeafKind::Launch, And(c, eq(ws(), 2)), "one_stage", "", at(10), at(30 + n), {}});
    auto nv = AndAll({c, Not(eq(ws(), 2)), nvl()});
    auto small = Or(And(Cmp(Op::Le, ws(), IntC(4)), lt(nb(), 512 * 1024)), And(Cmp(Op::Le, ws(), IntC(8)), lt(nb(), 256 * 1024)));
    d.leaves.push_back({LeafKind::Launch, And(nv, small), "one_stage", "", at(12), at(30 + n), {}});
    d.leaves.push_back({LeafKind::Launch, And(nv, Not(small)), "two_stage", "", at(14), at(30 + n), {}});
    auto pcie = AndAll({c, Not(eq(ws(), 2)), Not(nvl())});
    if (pcie_limit > 0) {
      d.leaves.push_back({LeafKind::Launch, And(pcie, lt(nb(), pcie_limit)), "one_stage", "", at(16), at(30 + n), {}});
      d.leaves.push_back({LeafKind::None, And(pcie, Not(lt(nb(), pcie_limit))), "", "if (bytes < limit) has no else", at(16), at(30 + n), {}});
    } else {
      d.leaves.push_back({LeafKind::None, pcie, "", "else if (full_nvlink_) has no else", at(11), at(30 + n), {}});
    }
  }
  d.leaves.push_back({LeafKind::Throw, And(ok, Not(any_case)), "", "only 2, 4, 6, 8 GPUs", at(50), at(50), {}});
  d.where = at(5);
  return d;
}

std::vector<Finding> check(const Gate& g, const Dispatch& d) {
  solve::Solver s(g, d, allReduce());
  checks::CheckContext ctx{g, d, s};
  return checks::runChecks(ctx);
}

std::vector<std::tuple<std::string, int, bool>> cells(const std::vector<Finding>& fs) {
  std::vector<std::tuple<std::string, int, bool>> out;
  for (const auto& f : fs) out.emplace_back(f.rule, static_cast<int>(*f.config.world_size), *f.config.full_nvlink);
  return out;
}

}  // namespace

TEST(Solver, UpstreamShapeIsConsistent) {
  EXPECT_TRUE(check(gate(false, false), dispatch()).empty());
}

// The cells run within the declared bounds of the variable in the ranks
// role: a group of at most 4 leaves the seed's 6 and 8 out.
TEST(Solver, TheCellsStayWithinTheDeclaredGroupSize) {
  solve::Options o = allReduce();
  for (auto& v : o.variables)
    if (v.role == "ranks") v.max = 4;
  auto g = gate(true, true);
  auto d = dispatch();
  solve::Solver s(g, d, o);
  int largest = 0;
  for (const auto& c : s.cells()) largest = std::max(largest, c.world_size);
  EXPECT_EQ(largest, 4);
  checks::CheckContext ctx{g, d, s};
  std::vector<std::tuple<std::string, int, bool>> want = {{"LG001", 4, false}};
  EXPECT_EQ(cells(checks::runChecks(ctx)), want);
}

TEST(Solver, SeedScenarioGivesLG001ForFourSixEightPcieOnlyWithTheEnvVar) {
  auto g = gate(true, true);
  auto d = dispatch();
  auto fs = check(g, d);
  using T = std::tuple<std::string, int, bool>;
  EXPECT_EQ(cells(fs), (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
  const Finding& f = fs[0];
  ASSERT_EQ(f.config.env.size(), 1u);
  EXPECT_EQ(f.config.env[0].first, "FORCE");
  EXPECT_EQ(f.config.env[0].second.value_or(""), "1");
  EXPECT_EQ(*f.config.nbytes % 16, 0);
  EXPECT_LT(*f.config.nbytes, 8 << 20);
  // Primary location: the opened constructor check (where the configurations
  // got in); then the per-call return that admits them; then the C++ fall-through.
  ASSERT_GE(f.locations.size(), 3u);
  EXPECT_EQ(f.locations[0].line, 20);
  EXPECT_EQ(f.locations[0].role, "opened");
  EXPECT_EQ(f.locations[1].line, 40);
  EXPECT_EQ(f.locations[1].role, "gate");
  EXPECT_EQ(f.locations[2].role, "dispatch");
  EXPECT_EQ(f.locations[2].line, 11);
  EXPECT_EQ(f.locations[3].line, 34);  // expansion: REDUCE_CASE(4)
  EXPECT_NE(f.message.find("FORCE=1"), std::string::npos);
}

TEST(Solver, ConstructorOpenedButPerCallClosedIsConsistent) {
  EXPECT_TRUE(check(gate(true, false), dispatch()).empty());
}

TEST(Solver, SizeGapIsReportedForLargeMessagesOnly) {
  auto g = gate(true, true);
  auto d = dispatch(512 * 1024);
  auto fs = check(g, d);
  ASSERT_EQ(fs.size(), 3u);
  solve::Solver s(g, d, allReduce());
  auto gap = s.findGap({4, false}, solve::GapKind::NoKernel);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->sizes.lo, 512 * 1024);
  EXPECT_EQ(gap->sizes.hi, (8 << 20) - 16);
  EXPECT_EQ(*gap->counterexample.nbytes, 512 * 1024);
}

TEST(Solver, WorldSizeThePythonListAdmitsButCppLacksIsLG002) {
  Gate g = gate(false, false);
  g.admit = And(g.admit, Or(Not(eq(ws(), 3)), True()));
  // Admit 3 with NVLink.
  g.admit = Or(g.admit, AndAll({eq(ws(), 3), nvl()}));
  auto fs = check(g, dispatch());
  using T = std::tuple<std::string, int, bool>;
  EXPECT_EQ(cells(fs), (std::vector<T>{{"LG002", 3, true}}));
  EXPECT_NE(fs[0].message.find("only 2, 4, 6, 8 GPUs"), std::string::npos);
}

TEST(Solver, MatrixNamesTheGateStateAndTheKernelPerSize) {
  auto g = gate(true, true);
  auto d = dispatch();
  solve::Solver s(g, d, allReduce());
  const auto& m = s.matrix();
  ASSERT_EQ(m.size(), 16u);
  const auto& c4 = m[(4 - 1) * 2];  // ws 4, no NVLink
  EXPECT_EQ(c4.cell.world_size, 4);
  EXPECT_EQ(c4.gate.state, solve::GateState::AdmittedWhen);
  EXPECT_EQ(c4.gate.condition, "FORCE=1");
  ASSERT_TRUE(c4.gate.sizes);
  EXPECT_EQ(c4.gate.sizes->hi, (8 << 20) - 16);
  const auto& c8n = m[(8 - 1) * 2 + 1];  // ws 8, NVLink
  EXPECT_EQ(c8n.gate.state, solve::GateState::Admitted);
  bool one = false, two = false;
  for (const auto& p : c8n.dispatch) {
    if (p.kind == LeafKind::Launch && p.kernel == "one_stage") one = p.sizes.hi == 256 * 1024 - 1;
    if (p.kind == LeafKind::Launch && p.kernel == "two_stage") two = p.sizes.lo == 256 * 1024 && p.sizes.unbounded();
  }
  EXPECT_TRUE(one);
  EXPECT_TRUE(two);
  EXPECT_EQ(m[0].gate.state, solve::GateState::Blocked);  // ws 1
}

TEST(Solver, OpaquePreconditionThrowsAreNotFindings) {
  // The dispatch throws when an opaque precondition fails; Python cannot see
  // it, so it must not become LG002.
  auto fs = check(gate(false, false), dispatch());
  for (const auto& f : fs) EXPECT_NE(f.rule, "LG002");
}

TEST(Solver, UndecidedQueriesBecomeFindingsNotSilence) {
  solve::UndecidedError e({6, false}, "gap: Z3 gave up (timeout)");
  auto f = checks::undecidedFinding(e, "LG001");
  EXPECT_EQ(f.rule, "LG007");
  EXPECT_EQ(f.severity, Severity::Warning);
  EXPECT_EQ(*f.config.world_size, 6);
  EXPECT_NE(f.message.find("world size 6, no NVLink"), std::string::npos);
  EXPECT_NE(f.message.find("LG001"), std::string::npos);
}

// An error is a proof: an uninterpreted term that must be true for the gate
// to admit turns the seed's LG001s into LG008 warnings naming the term; the
// same term as a probe (a machine fact) keeps them errors; as an assert the
// program states, it is assumed and they stay errors too.
TEST(Solver, UninterpretedTermsMakePossibleGapsNotErrors) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  auto with = [&](VarKind kind, bool as_assert) {
    Gate g = gate(true, true);
    auto helper = Var("vendor_check(group)", Sort::Bool, kind);
    if (as_assert)
      g.assumed = helper;
    // Not a feature switch: the two-GPU cells are admitted whatever it says.
    g.admit = And(g.admit, Or(eq(ws(), 2), helper));
    g.opaques.push_back(OpaqueSymbol{"vendor_check(group)", "vendor_check(group)", at(7), kind == VarKind::Probe});
    return check(g, d);
  };
  auto opaque = with(VarKind::Opaque, false);
  EXPECT_EQ(cells(opaque), (std::vector<T>{{"LG008", 4, false}, {"LG008", 6, false}, {"LG008", 8, false}}));
  EXPECT_EQ(opaque[0].severity, Severity::Warning);
  EXPECT_NE(opaque[0].message.find("depends on `vendor_check(group)` at x:7"), std::string::npos) << opaque[0].message;
  EXPECT_EQ(cells(with(VarKind::Probe, false)),
            (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
  EXPECT_EQ(cells(with(VarKind::Opaque, true)),
            (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
}

// A term that, at some value, turns the whole feature off (an op library
// that may fail to load) is a feature switch: when it is off there is nothing
// to check, so it never makes a gap doubtful. The finding says what it
// assumed, at the term's line.
TEST(Solver, AFeatureSwitchNeverWeakensAGap) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  Gate g = gate(true, true);
  auto available = Var("ops.AVAILABLE", Sort::Bool, VarKind::Opaque);
  g.admit = And(available, g.admit);
  g.opaques.push_back(OpaqueSymbol{"ops.AVAILABLE", "ops.AVAILABLE", at(3), false});
  auto fs = check(g, d);
  ASSERT_EQ(cells(fs), (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
  bool noted = false;
  for (const auto& l : fs[0].locations)
    noted = noted || (l.role == "assumed" && l.line == 3 && l.note.find("`ops.AVAILABLE` is true") != std::string::npos);
  EXPECT_TRUE(noted);
  // The same term deciding only the PCIe cells is not a switch: a possible gap.
  Gate h = gate(true, true);
  h.admit = And(Or(eq(ws(), 2), available), h.admit);
  h.opaques = g.opaques;
  EXPECT_EQ(cells(check(h, d)), (std::vector<T>{{"LG008", 4, false}, {"LG008", 6, false}, {"LG008", 8, false}}));
  // Negated (a kill switch: `if DISABLED: return`) it is a switch too.
  Gate k = gate(true, true);
  k.admit = And(Not(available), k.admit);
  k.opaques = g.opaques;
  auto ks = check(k, d);
  ASSERT_EQ(cells(ks), (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
  EXPECT_NE(ks[0].locations.back().note.find("is false"), std::string::npos) << ks[0].locations.back().note;
}

// A value computed from the configuration's inputs (a helper given the group)
// may differ per configuration: even Boolean and a conjunct of every
// admission, it is no feature switch.
TEST(Solver, AHelperGivenTheGroupIsNoFeatureSwitch) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  Gate g = gate(true, true);
  auto off = Var("helper(group=group) is None", Sort::Bool, VarKind::Opaque);
  g.admit = And(Not(off), g.admit);
  g.opaques.push_back(OpaqueSymbol{"helper(group=group) is None", "helper(group=group) is None", at(4), false});
  EXPECT_EQ(cells(check(g, d)), (std::vector<T>{{"LG008", 4, false}, {"LG008", 6, false}, {"LG008", 8, false}}));
}

// Only Boolean terms are switches: an uninterpreted number may be a
// configuration quantity under another name (a world size handed in), and
// "admits for some value of it" must not prove a gap at a world size it
// would have refused.
TEST(Solver, AnUninterpretedNumberIsNoFeatureSwitch) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  Gate g;
  auto tp = Var("parameter tp", Sort::Int, VarKind::Opaque);
  // the gate checks its own world size, tp, which the analysis cannot tie to the dispatch's
  g.admit = OrAll({Cmp(Op::Eq, tp, IntC(2)), Cmp(Op::Eq, tp, IntC(4))});
  g.per_call = True();
  g.opaques.push_back(OpaqueSymbol{"parameter tp", "parameter tp", at(2), false});
  auto fs = check(g, d);
  ASSERT_FALSE(fs.empty());
  for (const auto& f : fs) EXPECT_EQ(f.rule, "LG008") << f.message;
}

// The quantifier is over the term's values, not its presence: a term whose
// value cannot change the verdict (a tautology over it) leaves the error.
TEST(Solver, AnErrorHoldsForEveryValueOfTheUninterpretedTerms) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  Gate g = gate(true, true);
  auto u = Var("mystery()", Sort::Bool, VarKind::Opaque);
  g.admit = And(g.admit, Or(u, Not(u)));
  EXPECT_EQ(cells(check(g, d)), (std::vector<T>{{"LG001", 4, false}, {"LG001", 6, false}, {"LG001", 8, false}}));
}

// Not vacuously: where the program's asserts cannot all hold (for a machine
// fact, whatever the uninterpreted terms are), the program stops at one of
// them; "for every value that passes the asserts" is then no proof. A gap
// that needs one value of an uninterpreted term stays a possible gap.
TEST(Solver, AssertsThatCannotHoldProveNothing) {
  using T = std::tuple<std::string, int, bool>;
  auto d = dispatch();
  Gate g = gate(true, true);
  auto u = Var("table[ws].limit", Sort::Int, VarKind::Opaque);
  auto backend = Var("backend_is_gloo", Sort::Bool, VarKind::Probe);
  // (not a feature switch: two GPUs are admitted whatever u is)
  g.admit = And(g.admit, Or(eq(ws(), 2), Cmp(Op::Eq, u, IntC(1))));
  g.assumed = Not(backend);  // an assert no run with that backend passes
  g.opaques.push_back(OpaqueSymbol{"table[ws].limit", "table[ws].limit", at(9), false});
  auto fs = check(g, d);
  EXPECT_EQ(cells(fs), (std::vector<T>{{"LG008", 4, false}, {"LG008", 6, false}, {"LG008", 8, false}}));
  for (const auto& f : fs) EXPECT_EQ(f.severity, Severity::Warning);
}

// LG009: a C++-only env var whose unknown values throw in an admitted cell.
TEST(Solver, CppOnlyEnvValueThatThrowsIsLG009NotLG002) {
  Gate g = gate(false, false);
  Dispatch d = dispatch();
  auto algo_set = EnvIsSet("ALGO");
  auto known = Or(Cmp(Op::Eq, EnvValue("ALGO"), StrC("1stage")), Cmp(Op::Eq, EnvValue("ALGO"), StrC("2stage")));
  for (auto& l : d.leaves) l.condition = And(l.condition, Not(And(algo_set, Not(known))));
  d.leaves.push_back({LeafKind::Throw, And(algo_set, Not(known)), "", "unknown ALGO", at(60), at(60), {}});
  d.env_reads = {"ALGO"};
  auto fs = check(g, d);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].rule, "LG009");
  EXPECT_NE(fs[0].message.find("\"1stage\""), std::string::npos) << fs[0].message;
  EXPECT_EQ(fs[0].locations.at(0).line, 60);
}

namespace {

// A dispatch switching on a variable the target maps (a kernel variant) with
// no case for 3: a gap only if the gate hands 3 down. Unbound, the variable is
// the dispatch's own term (some value launches): no finding. Bound to what the
// gate hands down, the gap is exactly the cells where that is 3.
TEST(Solver, AMappedCppVariableIsFreeOnlyWhenTheGateBindsIt) {
  Gate g;
  g.admit = Or(eq(ws(), 2), eq(ws(), 4));
  g.per_call = True();
  Dispatch d;
  ExprPtr variant = Var("variant", Sort::Int);
  ExprPtr known = Or(eq(variant, 0), eq(variant, 1));
  d.leaves.push_back({LeafKind::Launch, known, "k", "", at(1), at(1), {}});
  d.leaves.push_back({LeafKind::None, Not(known), "", "no case for variant", at(2), at(2), {}});
  EXPECT_TRUE(check(g, d).empty());  // nothing says Python ever passes 3

  // The gate hands down variant = (ws == 4 ? 3 : 0).
  g.outputs.push_back(GateOutput{"variant", "Plan.variant", Ite(eq(ws(), 4), IntC(3), IntC(0)), {}, at(3)});
  g.bound = Cmp(Op::Eq, variant, g.outputs[0].value);
  auto fs = check(g, d);
  std::vector<int> gap;
  for (const auto& f : fs)
    if (f.rule == "LG001") gap.push_back(static_cast<int>(f.config.world_size.value_or(0)));
  EXPECT_EQ(gap, std::vector<int>{4});
  for (const auto& f : fs)
    if (f.rule == "LG001") {
      EXPECT_FALSE(f.config.full_nvlink.has_value());  // neither side reads NVLink: one cell per world size
      ASSERT_EQ(f.config.values.size(), 1u);
      EXPECT_EQ(f.config.values[0], (std::pair<std::string, std::int64_t>{"variant", 3}));
    }
}

}  // namespace

// A gate that divides by a value the user sets (the world size per node:
// world_size // int(NNODES)): Python raises ZeroDivisionError for a zero
// divisor, so no configuration is admitted through a quotient Z3 leaves free
// (x div 0). World size 1 can only pass `per node == 2` with NNODES=0.
TEST(Solver, ADivisionByZeroAdmitsNothing) {
  Gate g;
  auto nodes = StrToInt(EnvValue("NNODES"));
  g.admit = AndAll({EnvIsSet("NNODES"), eq(Arith(Op::Div, ws(), nodes), 2)});
  g.env_reads = {"NNODES"};
  Dispatch d = dispatch();
  solve::Solver s(g, d, allReduce());
  for (bool nv : {false, true})
    for (auto kind : {solve::GapKind::NoKernel, solve::GapKind::Throws})
      EXPECT_FALSE(s.findGap({1, nv}, kind).has_value()) << nv;
  // NNODES=1 and NNODES=2 still admit what they admit: 2 and (5 // 2 =) 2.
  EXPECT_FALSE(s.findGap({2, false}, solve::GapKind::NoKernel).has_value());
  EXPECT_TRUE(s.findGap({5, false}, solve::GapKind::NoKernel).has_value() ||
              s.findGap({5, false}, solve::GapKind::Throws).has_value());
}
