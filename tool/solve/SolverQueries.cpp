// Solver queries beyond the matrix and the gaps (solve/Solver.h): examples
// for the self-test, the forced NVLink flag (LG003) and the env values the
// C++ rejects (LG009).
#include "solve/SolverImpl.h"

namespace layergate::solve {

std::vector<Example> Solver::examples(const Cell& c, std::int64_t small, std::int64_t large) {
  Impl& I = *impl_;
  std::vector<Example> out;
  // The integers a harness must be given: the gate's inputs and outputs.
  std::vector<std::string> ints;
  for (const auto& v : I.gate_vars)
    if (v.kind == VarKind::Config && v.sort == Sort::Int && !I.roles.isRanks(v.name) && !I.roles.isBytes(v.name) &&
        model::envNameOf(v.name).empty() && std::find(ints.begin(), ints.end(), v.name) == ints.end())
      ints.push_back(v.name);
  std::sort(ints.begin(), ints.end());
  // And the text values it hands down (an algorithm's name).
  std::vector<std::string> texts;
  for (const auto& v : I.gate_vars)
    if (v.kind == VarKind::Config && v.sort == Sort::Str && model::envNameOf(v.name).empty() &&
        std::find(texts.begin(), texts.end(), v.name) == texts.end())
      texts.push_back(v.name);
  std::sort(texts.begin(), texts.end());
  for (size_t i = 0; i < dispatch_.leaves.size(); ++i) {
    const auto& leaf = dispatch_.leaves[i];
    if (!I.leaf_config[i]) continue;
    // A gap leaf counts only where no launch is reachable (what findGap asks).
    z3::expr f = I.gate && I.cellExpr(c) && I.leaf_conds[i];
    if (leaf.kind != LeafKind::Launch) f = f && !I.launch_any;
    Impl::Query q(I);
    q.s.add(f);
    if (!I.sat(q.s, c, "example")) continue;
    // Prefer env unset, then small integers, one at a time (greedy).
    q.s.push();
    q.s.add(I.envUnset());
    if (I.sat(q.s, c, "example")) f = f && I.envUnset();
    q.s.pop();
    for (const auto& n : ints) {
      z3::expr x = I.var(n, Sort::Int, VarKind::Config, Side::Python);
      z3::expr b = x <= I.ctx.int_val(static_cast<int64_t>(small));
      q.s.push();
      q.s.add(f && b);
      const bool ok = I.sat(q.s, c, "example");
      q.s.pop();
      if (ok) f = f && b;
    }
    SizeRange r = I.sizeRange(f, c);
    // The example at one size: env and values as above, pinned in one model.
    auto exampleAt = [&](std::int64_t size) -> std::optional<Example> {
      z3::expr at = f && I.nbytes == I.ctx.int_val(static_cast<int64_t>(size));
      z3::model m(I.ctx);
      auto env = I.minimalEnv(at, c, &m);
      {
        // minimalEnv answers only when `at` holds; keep its model.
        Impl::Query mq(I);
        mq.s.add(at && I.pinConfig(m));
        if (!I.sat(mq.s, c, "example")) return std::nullopt;
        m = mq.s.get_model();
      }
      Example e;
      e.kind = leaf.kind;
      e.kernel = leaf.kind == LeafKind::Launch ? leaf.kernel : leaf.text;
      e.where = leaf.spelling;
      e.config.world_size = c.world_size;
      if (!c.nvlink_any) e.config.full_nvlink = c.full_nvlink;
      e.config.nbytes = size;
      e.config.env = env;
      for (const auto& n : ints) {
        std::int64_t v = 0;
        if (m.eval(I.var(n, Sort::Int, VarKind::Config, Side::Python), true).is_numeral_i64(v))
          e.config.values.push_back({n, v});
      }
      for (const auto& n : texts)
        if (auto t = I.strOf(m.eval(I.var(n, Sort::Str, VarKind::Config, Side::Python), true)))
          e.config.texts.push_back({n, *t});
      return e;
    };
    auto add = [&](std::optional<Example> e) {
      if (!e) return;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const Example& o) {
        return o.kind == e->kind && o.kernel == e->kernel && o.config.nbytes == e->config.nbytes &&
               o.config.values == e->config.values && o.config.texts == e->config.texts;
      });
      if (!seen) out.push_back(std::move(*e));
    };
    add(exampleAt(r.lo));
    // A launch also at a larger size of its range (up to 1 MiB, whole 16-byte
    // packets where the range allows): the smallest size alone moves one
    // vector per rank, not the kernel's loops.
    if (leaf.kind == LeafKind::Launch) {
      std::int64_t big = std::min<std::int64_t>(r.hi, large);
      if (big - big % 16 > r.lo) big -= big % 16;
      if (big > r.lo) add(exampleAt(big));
    }
  }
  return out;
}

std::optional<ForcedFlag> Solver::findForcedFlag() {
  Impl& I = *impl_;
  if (!I.split_flag) return std::nullopt;
  Cell any{0, false};
  z3::expr q = I.gate && I.cpp_flag && !I.nvl;
  {
    Impl::Query fq(I);
    fq.s.add(q);
    if (!I.sat(fq.s, any, "forced flag")) return std::nullopt;
    // Prefer an example with more than two GPUs, where the NVLink-only
    // branches differ from the two-GPU one.
    fq.s.add(I.ws > 2);
    if (I.sat(fq.s, any, "forced flag")) q = q && I.ws > 2;
  }
  ForcedFlag f;
  z3::model m(I.ctx);
  f.config.env = I.minimalEnv(q, any, &m);
  int64_t w = 0;
  if (m.eval(I.ws, true).is_numeral_i64(w)) f.config.world_size = w;
  f.config.full_nvlink = false;
  f.unconditional = f.config.env.empty();
  // The kernels the NVLink branches launch when the forced flag is true.
  for (size_t i = 0; i < dispatch_.leaves.size(); ++i) {
    const auto& l = dispatch_.leaves[i];
    if (l.kind != LeafKind::Launch) continue;
    if (std::find(f.kernels.begin(), f.kernels.end(), l.kernel) != f.kernels.end()) continue;
    bool with_flag, without_flag;
    {
      Impl::Query kq(I);
      kq.s.add(q && I.leaf_conds[i] && I.ws > 2);
      with_flag = kq.s.check() == z3::sat;
    }
    {
      // Only kernels whose branch needs the flag: unreachable with it false.
      Impl::Query nq(I);
      nq.s.add(I.leaf_conds[i] && !I.cpp_flag && I.ws > 2);
      without_flag = nq.s.check() == z3::sat;
    }
    if (with_flag && !without_flag) f.kernels.push_back(l.kernel);
  }
  return f;
}

// String constants an expression compares the env variable NAME with.
static std::vector<std::string> comparedWith(const ExprPtr& root, const std::string& name) {
  std::vector<std::string> out;
  std::vector<const Expr*> stack{root.get()};
  std::set<const Expr*> seen;
  const std::string var = model::envVar(name);
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    if (!seen.insert(e).second) continue;
    if ((e->op == Op::Eq || e->op == Op::Ne) && e->args.size() == 2)
      for (int k = 0; k < 2; ++k)
        if (e->args[k]->op == Op::Var && e->args[k]->s == var && e->args[1 - k]->op == Op::StrConst &&
            std::find(out.begin(), out.end(), e->args[1 - k]->s) == out.end())
          out.push_back(e->args[1 - k]->s);
    for (const auto& a : e->args) stack.push_back(a.get());
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> Solver::validatedEnv() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& n : dispatch_.env_reads) {
    std::vector<std::string> accepted;
    for (const auto& l : dispatch_.leaves)
      for (const auto& v : comparedWith(l.condition, n))
        if (std::find(accepted.begin(), accepted.end(), v) == accepted.end()) accepted.push_back(v);
    if (!accepted.empty()) out.push_back({n, accepted});
  }
  return out;
}

std::vector<EnvRejection> Solver::findEnvRejections() {
  Impl& I = *impl_;
  std::vector<EnvRejection> out;
  std::vector<std::string> cpp_only, shared;
  for (const auto& n : dispatch_.env_reads)
    if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), n) == gate_.env_reads.end()) cpp_only.push_back(n);
  // Read by both layers and compared with strings in C++: its rejected values
  // are those outside the strings (the accepted ones are the gap queries').
  auto validated = validatedEnv();
  for (const auto& [n, accepted] : validated)
    if (std::find(cpp_only.begin(), cpp_only.end(), n) == cpp_only.end()) shared.push_back(n);
  std::vector<std::string> names = cpp_only;
  names.insert(names.end(), shared.begin(), shared.end());
  Cell any{0, false};
  for (const auto& n : names) {
    // Admitted, some value of NAME (the others unset) makes every way through throw.
    z3::expr q = I.gate && I.ws >= I.opt.min_world_size && I.ws <= I.opt.max_world_size && !I.launch_any &&
                 !I.none_any && I.throw_any && I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
    for (const auto& o : cpp_only)
      if (o != n) q = q && !I.var(model::envSetVar(o), Sort::Bool, VarKind::Config, Side::Cpp);
    for (const auto& [o, accepted] : validated) {
      if (std::find(shared.begin(), shared.end(), o) == shared.end()) continue;
      z3::expr val = I.var(model::envVar(o), Sort::Str, VarKind::Config, Side::Cpp);
      z3::expr in = I.ctx.bool_val(false);
      for (const auto& a : accepted) in = in || val == I.ctx.int_val(I.strId(a));
      z3::expr set = I.var(model::envSetVar(o), Sort::Bool, VarKind::Config, Side::Cpp);
      q = q && (o == n ? !in : (!set || in));
    }
    Impl::Query eq(I);
    eq.s.add(q);
    if (!I.sat(eq.s, any, "env rejection")) continue;
    z3::model m = eq.s.get_model();
    EnvRejection r;
    r.env = n;
    int64_t w = 0;
    if (m.eval(I.ws, true).is_numeral_i64(w)) r.config.world_size = w;
    r.config.full_nvlink = m.eval(I.nvl, true).is_true();
    r.config.nbytes = I.nbytesIn(m);
    auto text = I.strOf(m.eval(I.var(model::envVar(n), Sort::Str, VarKind::Config, Side::Cpp), true));
    r.config.env.push_back({n, text.value_or("<any other value>")});
    for (const auto& l : dispatch_.leaves)
      for (const auto& v : comparedWith(l.condition, n))
        if (std::find(r.accepted.begin(), r.accepted.end(), v) == r.accepted.end()) r.accepted.push_back(v);
    z3::expr pin = I.pinConfig(m) && I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp) &&
                   I.var(model::envVar(n), Sort::Str, VarKind::Config, Side::Cpp) ==
                       m.eval(I.var(model::envVar(n), Sort::Str, VarKind::Config, Side::Cpp), true);
    // The throw this value reaches: first among the throws whose condition
    // reads the variable (an earlier throw guarded by something the tool did
    // not interpret may also be satisfiable here), else any that is.
    auto readsEnv = [&](size_t leaf) {
      for (const auto& v : I.leaf_vars[leaf])
        if (v.name == model::envVar(n) || v.name == model::envSetVar(n)) return true;
      return false;
    };
    for (int pass = 0; pass < 2 && !r.leaf; ++pass)
      for (size_t i = 0; i < dispatch_.leaves.size() && !r.leaf; ++i) {
        if (dispatch_.leaves[i].kind != LeafKind::Throw || (pass == 0 && !readsEnv(i))) continue;
        Impl::Query lq(I);
        lq.s.add(I.leaf_conds[i] && pin);
        if (lq.s.check() == z3::sat) r.leaf = &dispatch_.leaves[i];
      }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace layergate::solve
