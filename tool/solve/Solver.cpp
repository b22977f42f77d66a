#include "solve/Solver.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <z3++.h>

namespace layergate::solve {

using model::Expr;
using model::ExprPtr;
using model::LeafKind;
using model::Op;
using model::Sort;
using model::VarKind;

namespace {

std::string human(std::int64_t n) {
  constexpr std::int64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  if (n != 0 && n % GiB == 0) return std::to_string(n / GiB) + " GiB";
  if (n != 0 && n % MiB == 0) return std::to_string(n / MiB) + " MiB";
  if (n != 0 && n % KiB == 0) return std::to_string(n / KiB) + " KiB";
  return std::to_string(n) + " B";
}

// Which layer a symbol belongs to. Config variables are shared; opaque and
// probe symbols are private to their layer (the same text means different
// things in Python and C++).
enum class Side { Python, Cpp };

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
static bool configDependent(const model::Leaf& l) {
  for (const auto& v : model::varsOf(l.condition))
    if (v.kind == VarKind::Config) return true;
  return false;
}

static std::string cellName(const Cell& c) {
  return "world size " + std::to_string(c.world_size) + (c.full_nvlink ? ", NVLink" : ", no NVLink");
}

UndecidedError::UndecidedError(const Cell& c, const std::string& why)
    : std::runtime_error(cellName(c) + ": " + why), cell(c) {}

struct Solver::Impl {
  z3::context ctx;
  Options opt;
  std::map<std::string, z3::expr> vars;                 // z3 name -> constant
  std::vector<std::string> env_names;                   // every env NAME seen
  z3::expr_vector cpp_opaques{ctx};
  z3::expr_vector py_opaques{ctx};
  std::vector<std::string> py_opaque_names;             // parallel to py_opaques (display names)
  std::vector<bool> py_opaque_free;                     // parallel: a probe (free) or uninterpreted code
  z3::expr_vector py_uninterp{ctx};                     // the uninterpreted ones: universally quantified for errors
  std::vector<std::string> py_uninterp_names;
  // Per uninterpreted term: whether it may be a feature switch. A value the
  // code computes from the configuration's inputs (a call given the group,
  // the device, the world size: `helper(group=group, ...) is None`) may
  // differ per configuration, so "the feature is on" says nothing of it; a
  // module flag, an import, an argument-less query may.
  std::vector<bool> py_uninterp_switchable;
  std::function<std::string(const std::string&)> text_of;  // the term's source text
  bool switchable(const std::string& name) const {
    std::string t = text_of ? text_of(name) : name;
    for (std::size_t open = t.find('('); open != std::string::npos; open = t.find('(', open + 1)) {
      std::size_t k = open + 1;
      while (k < t.size() && std::isspace(static_cast<unsigned char>(t[k]))) ++k;
      if (k < t.size() && t[k] != ')') return false;  // a call (or group) with something inside
    }
    return true;
  }

  // Strings are encoded as integers: every string constant in either model
  // gets an id >= 1, and any other integer stands for "some other string".
  // Gates only compare env values with constants, so this is exact, and it
  // keeps every query in linear integer arithmetic (Z3's string theory is
  // an order of magnitude slower on these queries).
  std::map<std::string, int> str_ids;
  std::vector<std::string> str_consts;  // id - 1 -> text

  z3::expr ws{ctx}, nvl{ctx}, nbytes{ctx};
  z3::expr cpp_flag{ctx}, flag_value{ctx};  // set when the trace split the flag
  z3::expr domain{ctx};      // always-true facts about config variables
  z3::expr py_domain{ctx};   // those of the Python side alone (no C++ flag)
  z3::expr gate{ctx};        // G
  z3::expr assumed{ctx};     // the gate's asserts
  z3::expr launch_any{ctx};  // exists cpp-opaques. L
  z3::expr none_any{ctx};    // exists cpp-opaques. N
  z3::expr throw_any{ctx};   // exists cpp-opaques. T
  std::vector<z3::expr> leaf_conds;   // per dispatch leaf, cpp opaques free
  std::vector<z3::expr> broken_conds; // per clang error in the dispatch: some path runs through it
  z3::expr broken_any{ctx};
  std::vector<z3::expr> admit_conds;  // per gate.admits
  std::vector<z3::expr> reject_conds; // per gate.rejects

  // While translating the gate: the divisors of its Python `//` and `%` that
  // are not constants. Python raises ZeroDivisionError there, so the gate
  // admits nothing with a zero divisor (Z3 would leave x // 0 free, and a
  // model could pick any quotient: a gap the program can never reach).
  std::vector<z3::expr>* py_divisors = nullptr;

  explicit Impl(Options o) : opt(o) {}

  // When the flag trace found the value C++ receives, the dispatch's flag is
  // its own variable, tied to that value (see the constructor).
  bool split_flag = false;

  // Config variables the gate side mentions (its predicate, asserts, the
  // flag's value). A C++ config variable outside it (a dispatch parameter the
  // target maps, e.g. a kernel variant, that no gate output binds) is not the
  // user's to choose: nothing says which values Python passes, so it is
  // treated as one of the dispatch's opaque terms ("some value reaches a
  // launch"), never as a free variable a gap may pick.
  std::set<std::string> py_config;
  bool unboundCpp(const std::string& name, VarKind kind, Side side) const {
    return kind == VarKind::Config && side == Side::Cpp && name != model::kWorldSize && name != model::kFullNvlink &&
           name != model::kNbytes && model::envNameOf(name).empty() && !py_config.count(name);
  }

  z3::expr var(const std::string& name, Sort sort, VarKind kind, Side side) {
    if (unboundCpp(name, kind, side)) kind = VarKind::Opaque;
    std::string key = name;
    if (kind != VarKind::Config) key = (side == Side::Python ? "py:" : "cpp:") + name;
    if (split_flag && side == Side::Cpp && name == model::kFullNvlink) key = "cpp:" + name;
    key += sort == Sort::Bool ? "" : (sort == Sort::Int ? "#i" : "#s");
    auto it = vars.find(key);
    if (it != vars.end()) return it->second;
    z3::expr v = sort == Sort::Bool ? ctx.bool_const(key.c_str()) : ctx.int_const(key.c_str());
    vars.emplace(key, v);
    if (kind != VarKind::Config && key.rfind("cpp:" + std::string(model::kFullNvlink), 0) != 0) {
      if (side == Side::Cpp) {
        cpp_opaques.push_back(v);
      } else {
        // Probes are the machine's answers; int() of an env value that is not
        // a numeral is the user's input. Everything else is code the walker
        // did not interpret.
        bool free = kind == VarKind::Probe || name.rfind("int(env:", 0) == 0;
        py_opaques.push_back(v);
        py_opaque_names.push_back(name);
        py_opaque_free.push_back(free);
        if (!free) {
          py_uninterp.push_back(v);
          py_uninterp_names.push_back(name);
          py_uninterp_switchable.push_back(switchable(name));
        }
      }
    } else {
      std::string env = model::envNameOf(name);
      if (!env.empty() && std::find(env_names.begin(), env_names.end(), env) == env_names.end())
        env_names.push_back(env);
    }
    return v;
  }

  // Post-order, iterative: gate models can be deep and must not overflow the stack.
  z3::expr translate(const ExprPtr& root, Side side) {
    std::unordered_map<const Expr*, z3::expr> done;
    std::vector<std::pair<const Expr*, bool>> stack{{root.get(), false}};
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (done.count(e)) continue;
      if (!expanded) {
        stack.push_back({e, true});
        for (const auto& a : e->args)
          if (!done.count(a.get())) stack.push_back({a.get(), false});
        continue;
      }
      auto arg = [&](size_t i) { return done.at(e->args[i].get()); };
      z3::expr r(ctx);
      switch (e->op) {
        case Op::BoolConst: r = ctx.bool_val(e->b); break;
        case Op::IntConst: r = ctx.int_val(static_cast<int64_t>(e->i)); break;
        case Op::StrConst: r = ctx.int_val(strId(e->s)); break;
        case Op::Var: r = var(e->s, e->sort, e->var_kind, side); break;
        case Op::Not: r = !arg(0); break;
        case Op::And: r = arg(0) && arg(1); break;
        case Op::Or: r = arg(0) || arg(1); break;
        case Op::Implies: r = z3::implies(arg(0), arg(1)); break;
        case Op::Ite: r = z3::ite(arg(0), arg(1), arg(2)); break;
        case Op::Eq: r = arg(0) == arg(1); break;
        case Op::Ne: r = arg(0) != arg(1); break;
        case Op::Lt: r = arg(0) < arg(1); break;
        case Op::Le: r = arg(0) <= arg(1); break;
        case Op::Gt: r = arg(0) > arg(1); break;
        case Op::Ge: r = arg(0) >= arg(1); break;
        case Op::Add: r = arg(0) + arg(1); break;
        case Op::Sub: r = arg(0) - arg(1); break;
        case Op::Mul: r = arg(0) * arg(1); break;
        // Z3's div/mod are Euclidean; for the positive divisors gates use
        // (16, a block size) they agree with Python's floor semantics.
        case Op::Div: r = z3::expr(ctx, Z3_mk_div(ctx, arg(0), arg(1))); break;
        case Op::Mod: r = z3::mod(arg(0), arg(1)); break;
        case Op::Neg: r = -arg(0); break;
        case Op::StrToInt: {
          // int(s): the numeric constants map to their value; any other
          // string to an unknown integer (one per converted expression).
          // Keyed by the env variable converted, so that the report can
          // print int(NAME)'s value when NAME holds "some other string".
          std::string key = "int(" + e->args[0]->str() + ")";
          for (const auto& v : model::varsOf(e->args[0]))
            if (!model::envNameOf(v.name).empty()) {
              key = "int(env:" + model::envNameOf(v.name) + ")";
              break;
            }
          z3::expr other = var(key, Sort::Int, VarKind::Opaque, side);
          r = other;
          for (size_t k = 0; k < str_consts.size(); ++k) {
            auto n = model::StrToInt(model::StrC(str_consts[k]));
            if (n->op == Op::IntConst) r = z3::ite(arg(0) == static_cast<int>(k + 1), ctx.int_val(static_cast<int64_t>(n->i)), r);
          }
          break;
        }
      }
      if ((e->op == Op::Div || e->op == Op::Mod) && side == Side::Python && py_divisors &&
          e->args[1]->op != Op::IntConst)
        py_divisors->push_back(arg(1));
      done.emplace(e, r);
    }
    return done.at(root.get());
  }

  int strId(const std::string& v) {
    auto it = str_ids.find(v);
    if (it != str_ids.end()) return it->second;
    str_consts.push_back(v);
    return str_ids[v] = static_cast<int>(str_consts.size());
  }

  // Collects every string constant first, so that int(s) sees them all.
  void collectStrings(const ExprPtr& root) {
    std::vector<const Expr*> stack{root.get()};
    std::set<const Expr*> seen;
    while (!stack.empty()) {
      const Expr* e = stack.back();
      stack.pop_back();
      if (!seen.insert(e).second) continue;
      if (e->op == Op::StrConst) strId(e->s);
      for (const auto& a : e->args) stack.push_back(a.get());
    }
  }

  std::optional<std::string> strOf(const z3::expr& v) {
    int64_t id = 0;
    if (v.is_numeral_i64(id) && id >= 1 && id <= static_cast<int64_t>(str_consts.size())) return str_consts[id - 1];
    return std::nullopt;
  }

  // exists cpp-opaques. f, with the quantifier eliminated when Z3 can.
  z3::expr existsCpp(const z3::expr& f) {
    if (cpp_opaques.empty()) return f;
    z3::expr q = z3::exists(cpp_opaques, f);
    try {
      z3::goal g(ctx);
      g.add(q);
      z3::params p(ctx);
      z3::tactic qe = z3::try_for(z3::tactic(ctx, "qe"), opt.timeout_ms);
      z3::apply_result ar = qe(g);
      if (ar.size() == 1) return ar[0].as_expr();
    } catch (const z3::exception&) {
    }
    return q;
  }

  // f inside cell c: the world size (and NVLink, where the cell fixes it)
  // replaced by their values and simplified, so that what Python looks up by
  // world size (tuning tables) folds before a quantifier is eliminated.
  z3::expr atCell(const z3::expr& f, const Cell& c) {
    z3::expr_vector from(ctx), to(ctx);
    from.push_back(ws);
    to.push_back(ctx.int_val(c.world_size));
    if (!c.nvlink_any) {
      from.push_back(nvl);
      to.push_back(ctx.bool_val(c.full_nvlink));
    }
    return z3::expr(f).substitute(from, to).simplify();
  }

  // forall uninterpreted-Python-terms. f: what an error must satisfy. The
  // C++ flag is replaced by the value Python passes (it may read those terms).
  z3::expr forallUninterp(const z3::expr& f0, const z3::expr_vector* only = nullptr, const Cell* cell = nullptr) {
    z3::expr f = f0;
    if (split_flag) {
      z3::expr_vector from(ctx), to(ctx);
      from.push_back(cpp_flag);
      to.push_back(flag_value);
      f = f.substitute(from, to);
    }
    if (cell) f = atCell(f, *cell);
    const z3::expr_vector& bound = only ? *only : py_uninterp;
    if (bound.empty()) return f;
    z3::expr q = z3::forall(bound, f);
    try {
      z3::goal g(ctx);
      g.add(q);
      z3::tactic qe = z3::try_for(z3::tactic(ctx, "qe"), opt.timeout_ms);
      z3::apply_result ar = qe(g);
      if (ar.size() == 1) return ar[0].as_expr();
    } catch (const z3::exception&) {
    }
    return q;
  }

  // "The gate admits some configuration at all", as a formula over the
  // uninterpreted Boolean Python terms only: exists config. domain && gate && asserts,
  // every other constant (world size, NVLink, size, env, probes, policy
  // inputs) renamed apart and eliminated. An error must hold for every value
  // of the uninterpreted terms *under which this is true*: a term that can
  // only switch the whole feature off (an op library that may fail to load,
  // a kill switch) then never weakens one (DESIGN.md, feature switches).
  std::optional<z3::expr> any_admit;
  z3::expr anyAdmit() {
    if (any_admit) return *any_admit;
    z3::expr f = py_domain && gate && assumed && ws >= opt.min_world_size && ws <= opt.max_world_size;
    std::set<unsigned> uninterp;
    for (unsigned i = 0; i < py_uninterp.size(); ++i)
      if (i < py_uninterp_switchable.size() && py_uninterp_switchable[i]) uninterp.insert(py_uninterp[i].id());
    z3::expr_vector from(ctx), to(ctx);
    std::set<unsigned> seen;
    std::vector<z3::expr> stack{f};
    while (!stack.empty()) {
      z3::expr e = stack.back();
      stack.pop_back();
      if (!e.is_app() || !seen.insert(e.id()).second) continue;
      if (e.is_const() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED) {
        // Only Boolean terms can be switches (a load flag, a kill switch); an
        // uninterpreted number may be a configuration quantity under another
        // name (a world size handed in): "some value of it admits" keeps
        // every gap over it possible.
        if (!uninterp.count(e.id()) || !e.is_bool()) {
          from.push_back(e);
          to.push_back(ctx.constant((e.decl().name().str() + "'any").c_str(), e.get_sort()));
        }
        continue;
      }
      for (unsigned k = 0; k < e.num_args(); ++k) stack.push_back(e.arg(k));
    }
    z3::expr g = from.empty() ? f : z3::exists(to, z3::expr(f).substitute(from, to));
    try {
      z3::goal gl(ctx);
      gl.add(g);
      z3::tactic qe = z3::try_for(z3::tactic(ctx, "qe"), opt.timeout_ms);
      z3::apply_result ar = qe(gl);
      if (ar.size() == 1) g = ar[0].as_expr();
    } catch (const z3::exception&) {
    }
    any_admit = g;
    return g;
  }
  // The uninterpreted Boolean terms that must hold one value for the gate to
  // admit anything (index into py_uninterp, that value): what an error takes
  // for granted, and says so.
  std::optional<std::vector<std::pair<unsigned, bool>>> switches;
  const std::vector<std::pair<unsigned, bool>>& featureSwitches() {
    if (switches) return *switches;
    switches.emplace();
    z3::expr a = anyAdmit();
    {
      Query p(*this);
      p.s.add(a);
      if (p.s.check() != z3::sat) return *switches;  // nothing admitted: nothing to assume
    }
    for (unsigned i = 0; i < py_uninterp.size(); ++i) {
      if (!py_uninterp[i].is_bool()) continue;
      for (bool v : {true, false}) {
        Query q(*this);
        q.s.add(a && py_uninterp[i] == ctx.bool_val(!v));
        if (q.s.check() == z3::unsat) {
          switches->push_back({i, v});
          break;
        }
      }
    }
    return *switches;
  }
  // What an error assumes: the asserts, and that the feature is on at all.
  z3::expr premise() { return assumed && anyAdmit(); }

  // One incremental solver for every query: creating a Z3 solver costs ~10 ms,
  // a push/check/pop on a live one ~0.3 ms.
  std::optional<z3::solver> live;
  z3::solver& solver() { return liveSolver(live); }
  // The solver of size ranges: a second live one that holds only the
  // domain, so that a range is that of its formula alone, whatever the
  // query around the call asserts on the first.
  std::optional<z3::solver> range_live;
  z3::solver& rangeSolver() { return liveSolver(range_live); }
  z3::solver& liveSolver(std::optional<z3::solver>& slot) {
    if (!slot) {
      slot.emplace(ctx);
      z3::params p(ctx);
      p.set("timeout", opt.timeout_ms);
      slot->set(p);
      slot->add(domain);
    }
    return *slot;
  }
  // A query scope: push on entry, pop on exit.
  struct Query {
    z3::solver& s;
    explicit Query(Impl& i) : s(i.solver()) { s.push(); }
    explicit Query(z3::solver& on) : s(on) { s.push(); }
    ~Query() { s.pop(); }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;
  };

  z3::expr cellExpr(const Cell& c) {
    return c.nvlink_any ? ws == c.world_size : ws == c.world_size && nvl == ctx.bool_val(c.full_nvlink);
  }

  z3::expr envUnset() {
    z3::expr r = ctx.bool_val(true);
    for (const auto& n : env_names) r = r && !var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
    return r;
  }

  // sat / unsat, or UndecidedError.
  bool sat(z3::solver& s, const Cell& c, const char* what) {
    switch (s.check()) {
      case z3::sat: return true;
      case z3::unsat: return false;
      default: throw UndecidedError(c, std::string(what) + ": Z3 gave up (" + s.reason_unknown() + ")");
    }
  }

  std::int64_t nbytesIn(z3::model& m) {
    z3::expr v = m.eval(nbytes, true);
    int64_t out = 0;
    if (v.is_numeral_i64(out)) return out;
    return 0;
  }

  // Smallest and largest nbytes satisfying f (which must be satisfiable), f
  // alone over the domain: on the range solver, the ends of the domain first
  // (most ranges start at the smallest size or have no upper bound: one check
  // each), then bisection guided by each model's value. On SGLang's V2 gate
  // this is about 3x faster than a fresh z3::optimize per bound.
  SizeRange sizeRange(const z3::expr& f, const Cell& c) {
    Query q(rangeSolver());
    q.s.add(f);
    if (!sat(q.s, c, "size range")) return SizeRange{0, 0};
    return SizeRange{extreme(q.s, c, false), extreme(q.s, c, true)};
  }

  // On s, where f is asserted and satisfiable.
  std::int64_t extreme(z3::solver& s, const Cell& c, bool maximise) {
    {
      Query end(s);
      end.s.add(maximise ? nbytes >= ctx.int_val(static_cast<int64_t>(kMaxBytes)) : nbytes <= 1);
      if (sat(end.s, c, "size range")) return maximise ? kMaxBytes : 1;
    }
    if (!sat(s, c, "size range")) return 0;
    z3::model m = s.get_model();
    std::int64_t best = nbytesIn(m);
    std::int64_t lo = maximise ? best : 1, hi = maximise ? kMaxBytes : best;
    while (lo < hi) {
      std::int64_t mid = maximise ? lo + (hi - lo + 1) / 2 : lo + (hi - lo) / 2;
      Query b(s);
      b.s.add(maximise ? nbytes >= ctx.int_val(static_cast<int64_t>(mid)) : nbytes <= ctx.int_val(static_cast<int64_t>(mid)));
      if (sat(b.s, c, "size range")) {
        z3::model mm = b.s.get_model();
        std::int64_t v = nbytesIn(mm);
        if (maximise) lo = std::max(mid, v); else hi = std::min(mid, v);
      } else {
        if (maximise) hi = mid - 1; else lo = mid + 1;
      }
    }
    return lo;
  }

  // The env part of a model, smallest first: unset every variable that can be
  // unset while f still holds (so the counterexample names only what matters).
  std::vector<std::pair<std::string, std::optional<std::string>>> minimalEnv(const z3::expr& f, const Cell& c,
                                                                              z3::model* out_model) {
    Query q(*this);
    z3::solver& s = q.s;
    s.add(f);
    if (!sat(s, c, "counterexample")) return {};
    for (const auto& n : env_names) {
      z3::expr set = var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
      s.push();
      s.add(!set);
      if (sat(s, c, "counterexample")) {
        s.pop();
        s.add(!set);
      } else {
        s.pop();
      }
    }
    if (!sat(s, c, "counterexample")) return {};
    // Prefer the spellings people write ("1", then "true") for set variables.
    for (const auto& n : env_names) {
      z3::expr set = var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
      z3::expr val = var(model::envVar(n), Sort::Str, VarKind::Config, Side::Python);
      if (!s.get_model().eval(set, true).is_true()) continue;
      for (const char* pref : {"1", "true"}) {
        if (!str_ids.count(pref)) continue;
        s.push();
        s.add(val == str_ids[pref]);
        bool ok = sat(s, c, "counterexample");
        s.pop();
        if (ok) {
          s.add(val == str_ids[pref]);
          break;
        }
      }
      if (!sat(s, c, "counterexample")) return {};
    }
    z3::model m = s.get_model();
    std::vector<std::pair<std::string, std::optional<std::string>>> env;
    for (const auto& n : env_names) {
      z3::expr set = var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
      if (!m.eval(set, true).is_true()) continue;
      z3::expr v = m.eval(var(model::envVar(n), Sort::Str, VarKind::Config, Side::Python), true);
      std::optional<std::string> text = strOf(v);
      if (!text) {
        // Not one of the compared constants: if the gate converts it with
        // int(), its integer value is what matters; show that.
        auto it = vars.find("py:int(env:" + n + ")#i");
        int64_t iv = 0;
        if (it != vars.end() && m.eval(it->second, true).is_numeral_i64(iv)) text = std::to_string(iv);
      }
      env.push_back({n, text.value_or("<any other value>")});
    }
    if (out_model) *out_model = m;
    return env;
  }

  // A formula that pins the config part (ws, nvl, nbytes, env) of model m.
  z3::expr pinConfig(z3::model& m) {
    z3::expr r = ws == m.eval(ws, true) && nvl == m.eval(nvl, true) && nbytes == m.eval(nbytes, true);
    for (const auto& n : env_names) {
      z3::expr set = var(model::envSetVar(n), Sort::Bool, VarKind::Config, Side::Python);
      z3::expr val = var(model::envVar(n), Sort::Str, VarKind::Config, Side::Python);
      r = r && set == m.eval(set, true);
      if (m.eval(set, true).is_true()) r = r && val == m.eval(val, true);
    }
    return r;
  }
};

Solver::Solver(const model::Gate& gate, const model::Dispatch& dispatch, Options options, model::ExprPtr flag_value)
    : gate_(gate), dispatch_(dispatch), impl_(std::make_unique<Impl>(options)) {
  Impl& I = *impl_;
  I.text_of = [this](const std::string& name) {
    for (const auto& o : gate_.opaques)
      if (o.name == name) return o.text.empty() ? name : o.text;
    return name;
  };
  {
    bool nv = false;
    auto mentions = [&](const model::ExprPtr& e) {
      if (e)
        for (const auto& v : model::varsOf(e)) nv = nv || v.name == model::kFullNvlink;
    };
    mentions(gate.predicate());
    for (const auto& l : dispatch.leaves) mentions(l.condition);
    mentions(flag_value);
    reads_nvlink_ = nv;
    for (const auto& e : {gate.predicate(), gate.assumed, flag_value})
      if (e)
        for (const auto& v : model::varsOf(e))
          if (v.kind == VarKind::Config) I.py_config.insert(v.name);
  }
  I.ws = I.var(model::kWorldSize, Sort::Int, VarKind::Config, Side::Python);
  I.nvl = I.var(model::kFullNvlink, Sort::Bool, VarKind::Config, Side::Python);
  I.nbytes = I.var(model::kNbytes, Sort::Int, VarKind::Config, Side::Python);
  // A zero-byte all-reduce writes nothing, so it cannot be a gap.
  I.domain = I.ws >= 1 && I.nbytes >= 1 && I.nbytes <= I.ctx.int_val(static_cast<int64_t>(kMaxBytes));
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
    I.py_divisors = nullptr;
    for (const auto& d : divisors) I.gate = I.gate && d != 0;
  }
  I.assumed = I.translate(gate.assumed, Side::Python);
  if (flag_value) {
    I.split_flag = true;
    z3::expr cpp_flag = I.var(model::kFullNvlink, Sort::Bool, VarKind::Config, Side::Cpp);
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
  for (const auto& b : dispatch.broken) {
    z3::expr at = b.reached ? I.existsCpp(I.translate(b.reached, Side::Cpp)) : I.ctx.bool_val(true);
    I.broken_conds.push_back(at);
    I.broken_any = I.broken_any || at;
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
      for (size_t i = 0; i < dispatch_.leaves.size(); ++i) {
        const auto& leaf = dispatch_.leaves[i];
        if (!configDependent(leaf)) {
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
        for (const auto& var : model::varsOf(leaf.condition)) {
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

std::optional<Gap> Solver::computeGap(const Cell& c, GapKind kind) {
  Impl& I = *impl_;
  // NoKernel: admitted, no launch for any value of the dispatch's opaque
  // conditions, and a fall-through reachable. Throws: admitted, no launch and
  // no fall-through, so every way through throws.
  z3::expr q = I.gate && I.cellExpr(c) && !I.launch_any &&
               (kind == GapKind::NoKernel ? I.none_any : (!I.none_any && I.throw_any));
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
  for (const auto& v : model::varsOf(gate_.predicate()))
    if (v.kind == VarKind::Config && v.sort == Sort::Int && v.name != model::kWorldSize && v.name != model::kNbytes &&
        model::envNameOf(v.name).empty()) {
      z3::expr x = m.eval(I.var(v.name, Sort::Int, VarKind::Config, Side::Python), true);
      std::int64_t n = 0;
      if (x.is_numeral_i64(n)) g.counterexample.values.push_back({v.name, n});
    }
  g.counterexample.nbytes = g.sizes.lo;
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
  if (python_certain)
    for (const auto& [i, v] : I.featureSwitches()) {
      const std::string& n = I.py_uninterp_names[i];
      auto it = std::find_if(gate_.opaques.begin(), gate_.opaques.end(),
                             [&](const model::OpaqueSymbol& o) { return o.name == n; });
      model::OpaqueSymbol o;
      if (it != gate_.opaques.end()) o = *it;
      else o.name = o.text = n;
      g.assuming.push_back({o, v});
    }
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
      if (l.kind == want && (pass == 1 || configDependent(l)) && reachable(I.leaf_conds[i])) g.leaf = &l;
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

std::vector<Example> Solver::examples(const Cell& c, std::int64_t small, std::int64_t large) {
  Impl& I = *impl_;
  std::vector<Example> out;
  // The integers a harness must be given: the gate's inputs and outputs.
  std::vector<std::string> ints;
  for (const auto& v : model::varsOf(gate_.predicate()))
    if (v.kind == VarKind::Config && v.sort == Sort::Int && v.name != model::kWorldSize && v.name != model::kNbytes &&
        model::envNameOf(v.name).empty() && std::find(ints.begin(), ints.end(), v.name) == ints.end())
      ints.push_back(v.name);
  std::sort(ints.begin(), ints.end());
  // And the text values it hands down (an algorithm's name).
  std::vector<std::string> texts;
  for (const auto& v : model::varsOf(gate_.predicate()))
    if (v.kind == VarKind::Config && v.sort == Sort::Str && model::envNameOf(v.name).empty() &&
        std::find(texts.begin(), texts.end(), v.name) == texts.end())
      texts.push_back(v.name);
  std::sort(texts.begin(), texts.end());
  for (size_t i = 0; i < dispatch_.leaves.size(); ++i) {
    const auto& leaf = dispatch_.leaves[i];
    if (!configDependent(leaf)) continue;
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
    auto readsEnv = [&](const model::Leaf& l) {
      for (const auto& v : model::varsOf(l.condition))
        if (v.name == model::envVar(n) || v.name == model::envSetVar(n)) return true;
      return false;
    };
    for (int pass = 0; pass < 2 && !r.leaf; ++pass)
      for (size_t i = 0; i < dispatch_.leaves.size() && !r.leaf; ++i) {
        if (dispatch_.leaves[i].kind != LeafKind::Throw || (pass == 0 && !readsEnv(dispatch_.leaves[i]))) continue;
        Impl::Query lq(I);
        lq.s.add(I.leaf_conds[i] && pin);
        if (lq.s.check() == z3::sat) r.leaf = &dispatch_.leaves[i];
      }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace layergate::solve
