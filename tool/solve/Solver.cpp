#include "solve/Solver.h"

#include <sstream>

#include "model/Errors.h"
#include "solve/SolverImpl.h"

namespace layergate::solve {


namespace {

std::string human(std::int64_t n) {
  constexpr std::int64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  if (n != 0 && n % GiB == 0) return std::to_string(n / GiB) + " GiB";
  if (n != 0 && n % MiB == 0) return std::to_string(n / MiB) + " MiB";
  if (n != 0 && n % KiB == 0) return std::to_string(n / KiB) + " KiB";
  return std::to_string(n) + " B";
}

}  // namespace

std::string SizeRange::str() const {
  std::string lo_s = human(lo);
  if (unbounded()) return lo <= 1 ? "any size" : ">= " + lo_s;
  // Upper bounds are usually "< threshold" (possibly less the alignment:
  // 8 MiB - 16 B when sizes are multiples of 16); print them that way.
  std::string hi_s;
  std::int64_t round = (hi / 1024 + 1) * 1024;
  if (hi + 1 == round) hi_s = "< " + human(round);
  else if (round - hi <= 64) hi_s = human(round) + " - " + std::to_string(round - hi) + " B";
  else hi_s = human(hi);
  return lo_s + " .. " + hi_s;
}

const char* gateStateName(GateState s) {
  switch (s) {
    case GateState::Blocked: return "blocked";
    case GateState::Admitted: return "admitted";
    case GateState::AdmittedWhen: return "admitted-when";
    case GateState::Undecided: return "undecided";
  }
  return "?";
}

std::string describeEnv(const std::vector<std::pair<std::string, std::optional<std::string>>>& env) {
  std::string out;
  for (const auto& [name, value] : env) {
    if (!out.empty()) out += ", ";
    out += value ? name + "=" + *value : name + " unset";
  }
  return out;
}

// A leaf whose condition reads no config variable is reached only through the
// dispatch's own preconditions (unregistered buffer, size not a multiple of
// the pack): something the gate cannot see and does not promise.
bool configDependent(const std::vector<model::VarRef>& leaf_vars) {
  for (const auto& v : leaf_vars)
    if (v.kind == VarKind::Config) return true;
  return false;
}

static std::string cellName(const Cell& c) {
  return "world size " + std::to_string(c.world_size) + (c.full_nvlink ? ", NVLink" : ", no NVLink");
}

UndecidedError::UndecidedError(const Cell& c, const std::string& why)
    : std::runtime_error(cellName(c) + ": " + why), cell(c) {}

Solver::Solver(const model::Gate& gate, const model::Dispatch& dispatch, Options options, model::ExprPtr flag_value,
               model::ExprPtr ws_value)
    : gate_(gate), dispatch_(dispatch), impl_(std::make_unique<Impl>(options)) {
  Impl& I = *impl_;
  I.textsFrom(gate_.opaques);
  I.gate_vars = model::varsOf(gate.predicate());
  {
    std::vector<model::ExprPtr> conds;
    for (const auto& l : dispatch.leaves) conds.push_back(l.condition);
    I.leaf_vars = model::varsOfEach(conds);
    for (const auto& vars : I.leaf_vars) I.leaf_config.push_back(configDependent(vars));
  }
  {
    bool nv = false;
    auto mentions = [&](const std::vector<model::VarRef>& vars) {
      for (const auto& v : vars) nv = nv || I.roles.isLink(v.name);
    };
    mentions(I.gate_vars);
    for (const auto& vars : I.leaf_vars) mentions(vars);
    if (flag_value) mentions(model::varsOf(flag_value));
    reads_nvlink_ = nv;
    for (const auto& e : {gate.assumed, flag_value})
      if (e)
        for (const auto& v : model::varsOf(e))
          if (v.kind == VarKind::Config) I.py_config.insert(v.name);
    for (const auto& v : I.gate_vars)
      if (v.kind == VarKind::Config) I.py_config.insert(v.name);
  }
  if (!I.roles.cells())
    throw InputError("the cell analysis needs the target's variables in the ranks, link and bytes roles");
  I.ws = I.var(I.roles.ranks, Sort::Int, VarKind::Config, Side::Python);
  I.nvl = I.var(I.roles.link, Sort::Bool, VarKind::Config, Side::Python);
  I.nbytes = I.var(I.roles.bytes, Sort::Int, VarKind::Config, Side::Python);
  // The declared bounds: the group size's lower one (its upper one bounds
  // the cells, Impl's constructor) and the message size's (a zero-byte
  // all-reduce writes nothing, so it cannot be a gap: bytes start at 1).
  const target::Variable* ranks = target::findVariable(I.opt.variables, I.roles.ranks);
  const target::Variable* bytes = target::findVariable(I.opt.variables, I.roles.bytes);
  I.domain = I.ws >= I.ctx.int_val(ranks->min.value_or(1)) && I.nbytes >= I.ctx.int_val(bytes->min.value_or(1)) &&
             I.nbytes <= I.ctx.int_val(bytes->max.value_or(kMaxBytes));
  // The element type (a tensor's dtype) is the user's to choose, one of its
  // declared values, whichever layer reads it.
  if (const target::Variable* el = elementVariable()) {
    z3::expr x = I.var(el->name, Sort::Str, VarKind::Config, Side::Python), any = I.ctx.bool_val(false);
    for (const auto& n : el->names) any = any || x == I.ctx.int_val(I.strId(n));
    I.domain = I.domain && any;
  }
  I.py_domain = I.domain;
  // Env variables both layers read are known up front, so minimalEnv sees them all.
  for (const auto& n : gate.env_reads) I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
  for (const auto& n : dispatch.env_reads) I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
  I.collectStrings(gate.predicate());
  I.collectStrings(gate.assumed);
  for (const auto& a : gate.admits) I.collectStrings(a.condition);
  for (const auto& r : gate.rejects) I.collectStrings(r.condition);
  for (const auto& u : gate.unchecked) I.collectStrings(u.condition);
  for (const auto& l : dispatch.leaves) I.collectStrings(l.condition);
  if (flag_value) I.collectStrings(flag_value);
  {
    std::vector<z3::expr> divisors;
    I.py_divisors = &divisors;
    I.gate = I.translate(gate.predicate(), Side::Python);
    if (ws_value) {
      I.cpp_ws = I.translate(ws_value, Side::Python);
      I.forgetTranslations(Side::Cpp);
    }
    I.py_divisors = nullptr;
    for (const auto& d : divisors) I.gate = I.gate && d != 0;
  }
  I.assumed = I.translate(gate.assumed, Side::Python);
  for (const auto& f : I.rank_facts) I.py_domain = I.py_domain && f;
  if (flag_value) {
    I.split_flag = true;
    I.forgetTranslations(Side::Cpp);
    z3::expr cpp_flag = I.var(I.roles.link, Sort::Bool, VarKind::Config, Side::Cpp);
    I.flag_value = I.translate(flag_value, Side::Python);
    I.domain = I.domain && cpp_flag == I.flag_value;
    I.cpp_flag = cpp_flag;
  }
  for (const auto& a : gate.admits) I.admit_conds.push_back(I.translate(a.condition, Side::Python));
  for (const auto& r : gate.rejects) I.reject_conds.push_back(I.translate(r.condition, Side::Python));
  z3::expr L = I.ctx.bool_val(false), N = I.ctx.bool_val(false), T = I.ctx.bool_val(false);
  for (const auto& leaf : dispatch.leaves) {
    z3::expr c = I.translate(leaf.condition, Side::Cpp);
    I.leaf_conds.push_back(c);
    (leaf.kind == LeafKind::Launch ? L : leaf.kind == LeafKind::Throw ? T : N) =
        (leaf.kind == LeafKind::Launch ? L : leaf.kind == LeafKind::Throw ? T : N) || c;
  }
  I.broken_any = I.ctx.bool_val(false);
  I.parse_any = I.ctx.bool_val(false);
  for (const auto& b : dispatch.broken) {
    z3::expr at = b.reached ? I.existsCpp(I.translate(b.reached, Side::Cpp)) : I.ctx.bool_val(true);
    I.broken_conds.push_back(at);
    I.broken_any = I.broken_any || at;
    if (b.parse_error) I.parse_any = I.parse_any || at;
  }
  I.launch_any = I.existsCpp(L);
  I.none_any = I.existsCpp(N);
  I.throw_any = I.existsCpp(T);
}

Solver::~Solver() = default;

bool Solver::possible(const model::ExprPtr& e) {
  Impl::Query q(*impl_);
  q.s.add(impl_->translate(e, Side::Python));
  return q.s.check() != z3::unsat;
}

std::vector<Cell> Solver::cells() const {
  std::vector<Cell> out;
  for (int w = impl_->opt.min_world_size; w <= impl_->opt.max_world_size; ++w) {
    if (!reads_nvlink_) {
      out.push_back({w, false, true});
      continue;
    }
    for (bool n : {false, true}) out.push_back({w, n});
  }
  return out;
}

const std::vector<CellVerdict>& Solver::matrix() {
  if (matrix_) return *matrix_;
  Impl& I = *impl_;
  std::vector<std::string> cpp_only;
  for (const auto& n : dispatch_.env_reads)
    if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), n) == gate_.env_reads.end()) cpp_only.push_back(n);
  std::vector<CellVerdict> out;
  for (const Cell& c : cells()) {
    CellVerdict v;
    v.cell = c;
    try {
      z3::expr admitted = I.gate && I.cellExpr(c);
      Impl::Query q(I);
      z3::solver& s = q.s;
      s.add(admitted);
      if (!I.sat(s, c, "gate")) {
        v.gate.state = GateState::Blocked;
      } else {
        s.push();
        s.add(I.envUnset());
        bool plain = I.sat(s, c, "gate");
        s.pop();
        v.gate.state = plain ? GateState::Admitted : GateState::AdmittedWhen;
        if (!plain) {
          v.gate.env = I.minimalEnv(admitted, c, nullptr);
          v.gate.condition = describeEnv(v.gate.env);
        }
        if (I.opt.sizes) v.gate.sizes = I.sizeRange(plain ? admitted && I.envUnset() : admitted, c);
      }
      if (!I.opt.dispatch_parts) {
        out.push_back(std::move(v));
        continue;
      }
      for (size_t i = 0; i < dispatch_.leaves.size(); ++i) {
        const auto& leaf = dispatch_.leaves[i];
        if (!I.leaf_config[i]) {
          // Reached through the dispatch's own preconditions only: the same in
          // every cell and for every size, so no query is needed.
          DispatchPart p;
          p.kind = leaf.kind;
          p.kernel = leaf.kind == LeafKind::Launch ? leaf.kernel : leaf.text;
          p.sizes = SizeRange{1, kMaxBytes};
          p.where = leaf.spelling;
          p.precondition = leaf.kind != LeafKind::Launch;
          v.dispatch.push_back(std::move(p));
          continue;
        }
        // With the C++-only env variables unset first (what runs when the
        // user sets nothing), then what each override adds.
        z3::expr f = I.leaf_conds[i] && I.cellExpr(c);
        z3::expr unset = I.ctx.bool_val(true);
        for (const auto& n : cpp_only) unset = unset && !I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
        std::optional<SizeRange> plain;
        {
          Impl::Query lq(I);
          lq.s.add(f && unset);
          if (I.sat(lq.s, c, "dispatch")) plain = I.sizeRange(f && unset, c);
        }
        auto part = [&](const SizeRange& r, std::string when) {
          DispatchPart p;
          p.kind = leaf.kind;
          p.kernel = leaf.kind == LeafKind::Launch ? leaf.kernel : leaf.text;
          p.sizes = r;
          p.where = leaf.spelling;
          p.when = std::move(when);
          v.dispatch.push_back(std::move(p));
        };
        if (plain) part(*plain, "");
        std::vector<std::string> reads;  // the C++-only env variables this leaf's path reads
        for (const auto& var : I.leaf_vars[i]) {
          std::string n = model::envNameOf(var.name);
          if (!n.empty() && std::find(cpp_only.begin(), cpp_only.end(), n) != cpp_only.end() &&
              std::find(reads.begin(), reads.end(), n) == reads.end())
            reads.push_back(n);
        }
        for (const auto& n : reads) {
          z3::expr set = I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
          z3::expr g = f && set;
          for (const auto& o : cpp_only)
            if (o != n) g = g && !I.var(model::envSetVar(o), Sort::Bool, VarKind::Config, Side::Cpp);
          Impl::Query eq(I);
          eq.s.add(g);
          if (!I.sat(eq.s, c, "dispatch")) continue;
          z3::expr val = I.var(model::envVar(n), Sort::Str, VarKind::Config, Side::Cpp);
          z3::expr pinned = g && val == eq.s.get_model().eval(val, true);
          auto text = I.strOf(eq.s.get_model().eval(val, true));
          SizeRange r = I.sizeRange(pinned, c);
          // An override that only repeats the default adds nothing to say.
          if (plain && leaf.kind == LeafKind::Launch && r.lo == plain->lo && r.hi == plain->hi) continue;
          part(r, n + "=" + text.value_or("<any other value>"));
        }
      }
      // Leaves reachable only through opaque preconditions (buffer not
      // registered, size not a multiple of the pack) are kept: the report
      // shows them, the checks ignore them (see findGap).
    } catch (const UndecidedError& e) {
      v.undecided = true;
      v.undecided_reason = e.what();
      if (v.gate.state == GateState::Blocked) v.gate.state = GateState::Undecided;
    }
    out.push_back(std::move(v));
  }
  matrix_ = std::move(out);
  return *matrix_;
}

std::optional<Gap> Solver::findGap(const Cell& c, GapKind kind) {
  auto key = std::make_pair(c.world_size * 2 + (c.full_nvlink ? 1 : 0), kind == GapKind::NoKernel ? 0 : 1);
  auto cached = gaps_.find(key);
  if (cached != gaps_.end()) return cached->second;
  std::optional<Gap> g = computeGap(c, kind);
  gaps_.emplace(key, g);
  return g;
}

// The element-role variable, where the dispatch reads it (a branch on the
// element type); else null: every element type takes the same paths.
const target::Variable* Solver::elementVariable() {
  if (element_known_) return element_;
  element_known_ = true;
  const target::Variable* el = target::findVariable(impl_->opt.variables, impl_->roles.element);
  if (!el) return nullptr;
  for (const auto& vars : impl_->leaf_vars)
    for (const auto& v : vars)
      if (v.name == el->name) return element_ = el;
  return nullptr;
}

std::optional<Gap> Solver::computeGap(const Cell& c, GapKind kind) {
  Impl& I = *impl_;
  // NoKernel: admitted, no launch for any value of the dispatch's opaque
  // conditions, and a fall-through reachable. Throws: admitted, no launch and
  // no fall-through, so every way through throws.
  z3::expr q = I.gate && I.cellExpr(c) && !I.launch_any &&
               (kind == GapKind::NoKernel ? I.none_any : (!I.none_any && I.throw_any));
  // A path through a statement clang's parser gave up on may launch nothing
  // whatever the walk read there: a possible gap (never certain: the
  // broken-code check below asks for one outside every such statement).
  if (kind == GapKind::NoKernel) q = q || (I.gate && I.cellExpr(c) && I.parse_any);
  // An env variable only the dispatch reads (an algorithm override) is taken
  // as unset for throws: a throw on a bad value is input checking the user
  // asked for, not a gap the gate opened (LG009 reports it).
  if (kind == GapKind::Throws) {
    for (const auto& n : dispatch_.env_reads)
      if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), n) == gate_.env_reads.end())
        q = q && !I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
    // One the gate reads too: unset or a string the C++ accepts (a throw for
    // the others is LG009's).
    for (const auto& [n, accepted] : validatedEnv()) {
      if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), n) == gate_.env_reads.end()) continue;
      z3::expr val = I.var(model::envVar(n), Sort::Str, VarKind::Config, Side::Cpp);
      z3::expr ok = !I.var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Cpp);
      for (const auto& a : accepted) ok = ok || val == I.ctx.int_val(I.strId(a));
      q = q && ok;
    }
  }
  {
    Impl::Query gq(I);
    gq.s.add(q);
    if (!I.sat(gq.s, c, "gap")) return std::nullopt;
  }

  Gap g;
  g.kind = kind;
  g.cell = c;
  // Does it hold whatever the uninterpreted Python terms are (those that
  // pass the program's own asserts)? And for some of them that pass the
  // asserts (not vacuously: where the asserts contradict each other for
  // every value, the program stops at one of them and no kernel is missed;
  // SGLang's first CustomAllReduceV2 checkout gave 14 false LG002 so).
  z3::expr strict = I.forallUninterp(z3::implies(I.premise(), q), nullptr, &c) && I.assumed && q;
  {
    Impl::Query sq(I);
    sq.s.add(strict);
    g.certain = I.sat(sq.s, c, "gap for every value of the uninterpreted terms");
  }
  const bool python_certain = g.certain;
  z3::expr base = g.certain ? strict : q;
  // Clang errors inside the dispatch: on a path through one, the missing
  // kernel (or the throw) may be code clang dropped, so a gap there is
  // possible, not proven; one whose paths avoid every such statement stands.
  if (!dispatch_.broken.empty() && g.certain) {
    Impl::Query bq(I);
    bq.s.add(strict && !I.broken_any);
    g.certain = I.sat(bq.s, c, "gap outside code clang could not type");
    if (g.certain) base = strict && !I.broken_any;
  }
  // The element types it holds for, when the dispatch serves the others.
  if (const target::Variable* el = elementVariable()) {
    z3::expr x = I.var(el->name, Sort::Str, VarKind::Config, Side::Python);
    for (const auto& n : el->names) {
      Impl::Query eq(I);
      eq.s.add(base && x == I.ctx.int_val(I.strId(n)));
      if (I.sat(eq.s, c, "gap for one element type")) g.element_values.push_back(n);
    }
    if (g.element_values.size() == el->names.size()) {
      g.element_values.clear();
    } else {
      z3::expr in = I.ctx.bool_val(false);
      for (const auto& n : g.element_values) in = in || x == I.ctx.int_val(I.strId(n));
      base = base && in;
    }
  }
  g.sizes = I.sizeRange(base, c);
  // Prefer a counterexample at the low end of the gap: the smallest size is
  // the one a user meets first.
  z3::model m(I.ctx);
  auto env = I.minimalEnv(base && I.nbytes == I.ctx.int_val(static_cast<int64_t>(g.sizes.lo)), c, &m);
  if (python_certain && !I.py_uninterp.empty()) {
    // The strict model leaves the quantified terms out; any value of theirs
    // completes it (that is what certain means): take one, for the notes.
    z3::expr pin = I.pinConfig(m);
    for (unsigned i = 0; i < I.py_opaques.size(); ++i)
      if (I.py_opaque_free[i]) {
        z3::expr v = m.eval(I.py_opaques[i], false);
        if (v.is_true() || v.is_false() || v.is_numeral()) pin = pin && I.py_opaques[i] == v;
      }
    Impl::Query cq(I);
    cq.s.add(q && pin);
    if (cq.s.check() == z3::sat) m = cq.s.get_model();
  }
  g.counterexample.world_size = c.world_size;
  if (!c.nvlink_any) g.counterexample.full_nvlink = c.full_nvlink;
  // The other config variables the gate reads or hands down (a policy's
  // inputs and outputs), as the counterexample has them.
  for (const auto& v : I.gate_vars)
    if (v.kind == VarKind::Config && v.sort == Sort::Int && !I.roles.isRanks(v.name) && !I.roles.isBytes(v.name) &&
        model::envNameOf(v.name).empty()) {
      z3::expr x = m.eval(I.var(v.name, Sort::Int, VarKind::Config, Side::Python), true);
      std::int64_t n = 0;
      if (x.is_numeral_i64(n)) g.counterexample.values.push_back({v.name, n});
    }
  g.counterexample.nbytes = g.sizes.lo;
  if (!g.element_values.empty()) {
    // The model's element type, one of those the gap holds for.
    const std::string& el = I.roles.element;
    std::string val = g.element_values.front();
    z3::expr x = m.eval(I.var(el, Sort::Str, VarKind::Config, Side::Python), true);
    std::int64_t id = -1;
    if (x.is_numeral_i64(id))
      for (const auto& n : g.element_values)
        if (I.str_ids.count(n) && I.str_ids.at(n) == id) val = n;
    g.counterexample.texts.push_back({el, val});
  }
  // Python-side probes the gap relies on, and (for a possible gap) the
  // uninterpreted terms' values it needs.
  for (unsigned i = 0; i < I.py_opaques.size(); ++i) {
    if (python_certain && !I.py_opaque_free[i]) continue;
    z3::expr v = m.eval(I.py_opaques[i], false);
    std::string val = v.is_true() ? "true" : v.is_false() ? "false" : v.is_numeral() ? v.to_string() : "";
    if (val.empty()) continue;
    g.counterexample.assumed.push_back({I.py_opaque_names[i], val});
    const std::string& n = I.py_opaque_names[i];
    auto it = std::find_if(gate_.opaques.begin(), gate_.opaques.end(),
                           [&](const model::OpaqueSymbol& o) { return o.name == n; });
    g.counterexample.assumed_words.push_back(
        model::assumptionInWords(n, it == gate_.opaques.end() ? nullptr : &*it, val));
  }
  g.counterexample.env = env;
  if (python_certain) g.assuming = I.switchSymbols(gate_.opaques);
  if (!python_certain) {
    // The terms it depends on: those for which "for every value" alone
    // already breaks it. When only a combination does, name them all.
    std::vector<std::string> names;
    for (unsigned i = 0; i < I.py_uninterp.size() && i < 16; ++i) {
      z3::expr_vector one(I.ctx);
      one.push_back(I.py_uninterp[i]);
      Impl::Query dq(I);
      dq.s.add(I.forallUninterp(z3::implies(I.premise(), q), &one, &c) && I.assumed && q);
      if (dq.s.check() == z3::unsat) names.push_back(I.py_uninterp_names[i]);
    }
    if (names.empty()) names = I.py_uninterp_names;
    for (const auto& n : names) {
      auto it = std::find_if(gate_.opaques.begin(), gate_.opaques.end(),
                             [&](const model::OpaqueSymbol& o) { return o.name == n; });
      if (it != gate_.opaques.end()) {
        g.depends_on.push_back(*it);
      } else {
        model::OpaqueSymbol o;
        o.name = o.text = n;
        g.depends_on.push_back(o);
      }
    }
  }
  if (!g.certain)
    for (size_t i = 0; i < dispatch_.broken.size(); ++i) {
      Impl::Query bq(I);
      bq.s.add(q && I.broken_conds[i]);
      if (bq.s.check() != z3::unsat) g.depends_on.push_back(dispatch_.broken[i]);
    }

  // Which leaf, which admitting return, which constructor checks the env opens.
  z3::expr pin = I.pinConfig(m);
  auto reachable = [&](const z3::expr& f) {
    Impl::Query rq(I);
    // within what the gate admits there: the values it hands down are bound
    rq.s.add(f && pin && I.gate);
    return rq.s.check() == z3::sat;
  };
  // Prefer a leaf whose condition depends on the configuration (the switch's
  // default, the missing else) over one reached only through the dispatch's
  // own preconditions (an unregistered buffer), which also "reach" it.
  LeafKind want = kind == GapKind::NoKernel ? LeafKind::None : LeafKind::Throw;
  for (int pass = 0; pass < 2 && !g.leaf; ++pass)
    for (size_t i = 0; i < dispatch_.leaves.size() && !g.leaf; ++i) {
      const auto& l = dispatch_.leaves[i];
      if (l.kind == want && (pass == 1 || I.leaf_config[i]) && reachable(I.leaf_conds[i])) g.leaf = &l;
    }
  for (size_t i = 0; i < gate_.admits.size() && !g.admit; ++i)
    if (m.eval(I.admit_conds[i], true).is_true()) g.admit = &gate_.admits[i];
  if (!env.empty()) {
    // A constructor check is "opened" by the env when, with this config but
    // no env set, the check would stop the constructor.
    z3::expr same = I.envUnset() && I.cellExpr(c) && I.nbytes == m.eval(I.nbytes, true);
    for (unsigned i = 0; i < I.py_opaques.size(); ++i) same = same && I.py_opaques[i] == m.eval(I.py_opaques[i], true);
    for (size_t i = 0; i < gate_.rejects.size(); ++i) {
      Impl::Query oq(I);
      oq.s.add(I.reject_conds[i] && same);
      if (oq.s.check() == z3::sat && !m.eval(I.reject_conds[i], true).is_true()) g.opened.push_back(&gate_.rejects[i]);
    }
  }
  return g;
}

}  // namespace layergate::solve
