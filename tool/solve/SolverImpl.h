// Solver's internals (private to lg_solve): the Z3 context, the translated
// gate and dispatch, and the query helpers that Solver.cpp (the matrix and
// the gaps) and SolverQueries.cpp (examples, forced flags, env rejections)
// share. Not a public header: nothing outside tool/solve includes it.
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <z3++.h>

#include "solve/Solver.h"

namespace layergate::solve {

using model::Expr;
using model::ExprPtr;
using model::LeafKind;
using model::Op;
using model::Sort;
using model::VarKind;

// Which layer a symbol belongs to. Config variables are shared; opaque and
// probe symbols are private to their layer (the same text means different
// things in Python and C++).
enum class Side { Python, Cpp };

// A leaf whose condition reads these variables depends on the configuration
// (not only on the dispatch's own preconditions).
bool configDependent(const std::vector<model::VarRef>& leaf_vars);

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
  // text_of from the gate's symbols (which must outlive this).
  void textsFrom(const std::vector<model::OpaqueSymbol>& opaques) {
    text_of = [&opaques](const std::string& name) {
      for (const auto& o : opaques)
        if (o.name == name) return o.text.empty() ? name : o.text;
      return name;
    };
  }
  bool switchable(const std::string& name) const {
    std::string t = text_of ? text_of(name) : name;
    if (!opt.switch_calls_without.empty()) {
      auto mentions = [&](const std::string& n) {
        for (std::size_t at = t.find(n); at != std::string::npos; at = t.find(n, at + 1)) {
          bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '_');
          std::size_t end = at + n.size();
          bool right = end >= t.size() || !(std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_');
          if (left && right) return true;
        }
        return false;
      };
      return std::none_of(opt.switch_calls_without.begin(), opt.switch_calls_without.end(), mentions);
    }
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
  // The world size the dispatch sees, when the link found it is not the
  // group's size (a per-node slice of the handles): every C++ reading of the
  // world size is this Python expression.
  std::optional<z3::expr> cpp_ws;
  std::vector<z3::expr> rank_facts;  // 0 <= rank < world size, per rank variable
  z3::expr domain{ctx};      // always-true facts about config variables
  z3::expr py_domain{ctx};   // those of the Python side alone (no C++ flag)
  z3::expr gate{ctx};        // G
  z3::expr assumed{ctx};     // the gate's asserts
  z3::expr launch_any{ctx};  // exists cpp-opaques. L
  z3::expr none_any{ctx};    // exists cpp-opaques. N
  z3::expr throw_any{ctx};   // exists cpp-opaques. T
  std::vector<z3::expr> leaf_conds;   // per dispatch leaf, cpp opaques free
  // Per dispatch leaf, found once: the variables its condition reads, and
  // whether one of them is a config variable. Every cell and every gap asks,
  // and a dispatch's conditions share their prefixes, so walking them per
  // question costs the square of the dispatch's size per cell.
  std::vector<std::vector<model::VarRef>> leaf_vars;
  std::vector<bool> leaf_config;
  std::vector<model::VarRef> gate_vars;  // the gate predicate's
  std::vector<z3::expr> broken_conds; // per clang error in the dispatch: some path runs through it
  z3::expr broken_any{ctx};
  z3::expr parse_any{ctx};  // some path runs through a statement clang's parser gave up on
  std::vector<z3::expr> admit_conds;  // per gate.admits
  std::vector<z3::expr> reject_conds; // per gate.rejects

  // While translating the gate: the divisors of its Python `//` and `%` that
  // are not constants. Python raises ZeroDivisionError there, so the gate
  // admits nothing with a zero divisor (Z3 would leave x // 0 free, and a
  // model could pick any quotient: a gap the program can never reach).
  std::vector<z3::expr>* py_divisors = nullptr;

  explicit Impl(Options o) : opt(o), roles(target::rolesOf(opt.variables)) {
    // The cells stay within the group size's declared bounds.
    if (const target::Variable* r = target::findVariable(opt.variables, roles.ranks)) {
      if (r->max && *r->max < opt.max_world_size) opt.max_world_size = static_cast<int>(std::max<std::int64_t>(*r->max, 0));
      if (r->min && *r->min > opt.min_world_size)
        opt.min_world_size = static_cast<int>(std::min<std::int64_t>(*r->min, opt.max_world_size + 1));
    }
  }
  model::Roles roles;  // opt.variables'

  bool isCellAxis(const std::string& name) const {
    return roles.isRanks(name) || roles.isLink(name) || roles.isBytes(name);
  }

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
    return kind == VarKind::Config && side == Side::Cpp && !isCellAxis(name) && model::envNameOf(name).empty() &&
           !py_config.count(name) && !roles.isElement(name);
  }

  z3::expr var(const std::string& name, Sort sort, VarKind kind, Side side) {
    if (cpp_ws && side == Side::Cpp && kind == VarKind::Config && roles.isRanks(name)) return *cpp_ws;
    if (unboundCpp(name, kind, side)) kind = VarKind::Opaque;
    std::string key = name;
    if (kind != VarKind::Config) key = (side == Side::Python ? "py:" : "cpp:") + name;
    if (split_flag && side == Side::Cpp && roles.isLink(name)) key = "cpp:" + name;
    key += sort == Sort::Bool ? "" : (sort == Sort::Int ? "#i" : "#s");
    auto it = vars.find(key);
    if (it != vars.end()) return it->second;
    z3::expr v = sort == Sort::Bool ? ctx.bool_const(key.c_str()) : ctx.int_const(key.c_str());
    vars.emplace(key, v);
    // a rank is one of the group's: 0 <= rank < world size
    if (kind == VarKind::Probe && sort == Sort::Int && roles.isRank(name)) {
      rank_facts.push_back(v >= 0 && v < ws);
      domain = domain && rank_facts.back();
    }
    // The dispatch's side of the link flag is never one of its opaque terms.
    if (kind != VarKind::Config && !(side == Side::Cpp && roles.isLink(name))) {
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
  //
  // Each node is translated once per side and Solver: the dispatch's leaf
  // conditions share their prefixes (a path condition is the conditions of
  // the branches before it), so translating each leaf afresh costs the square
  // of the dispatch's size. While py_divisors collects the divisors of a
  // Python expression, the walk reads no earlier translation (their
  // divisors would be missed) but still records its own.
  std::unordered_map<const Expr*, z3::expr> translated[2];
  // The roots walked, kept alive: a node's address then names it alone for
  // as long as the memos above and below hold it.
  std::vector<ExprPtr> walked;
  // Forgets the translations: after a change of what var() answers (the
  // dispatch's world size, the split flag).
  void forgetTranslations(Side side) { translated[side == Side::Cpp].clear(); }
  z3::expr translate(const ExprPtr& root, Side side) {
    walked.push_back(root);
    std::unordered_map<const Expr*, z3::expr> fresh;
    std::unordered_map<const Expr*, z3::expr>& done = py_divisors ? fresh : translated[side == Side::Cpp];
    std::vector<std::pair<const Expr*, bool>> stack{{root.get(), false}};
    while (!stack.empty()) {
      const Expr* e = stack.back().first;
      const bool expanded = stack.back().second;
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
      if (py_divisors) translated[side == Side::Cpp].insert_or_assign(e, r);
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
  // Each node once per Solver (the leaves share their prefixes).
  std::unordered_set<const Expr*> strings_seen;
  void collectStrings(const ExprPtr& root) {
    if (!root) return;
    walked.push_back(root);
    std::vector<const Expr*> stack{root.get()};
    while (!stack.empty()) {
      const Expr* e = stack.back();
      stack.pop_back();
      if (!strings_seen.insert(e).second) continue;
      if (e->op == Op::StrConst) strId(e->s);
      for (const auto& a : e->args) stack.push_back(a.get());
    }
  }

  std::optional<std::string> strOf(const z3::expr& v) {
    int64_t id = 0;
    if (v.is_numeral_i64(id) && id >= 1 && id <= static_cast<int64_t>(str_consts.size())) return str_consts[id - 1];
    return std::nullopt;
  }

  // exists cpp-opaques. f (or exists `only`. f), with the quantifier
  // eliminated when Z3 can.
  z3::expr existsCpp(const z3::expr& f, const z3::expr_vector* only = nullptr) {
    const z3::expr_vector& bound = only ? *only : cpp_opaques;
    if (bound.empty()) return f;
    z3::expr q = z3::exists(bound, f);
    return eliminate(q).value_or(q);
  }

  // q with its quantifiers eliminated, when Z3 can (qe-light first: it
  // removes the bound terms a formula only compares with constants, most of
  // a dispatch's, at a fraction of qe's cost); nullopt: the solver takes q
  // as it is. Z3's tactics take no resource limit, only a time limit, so
  // this one is a safety net that no working analysis comes near (these
  // eliminations take milliseconds): when it fires, wall_clock says so and
  // every later query is undecided, naming it, rather than answered from a
  // formula that depends on how busy the machine was.
  static constexpr unsigned kEliminationWallClockMs = 120000;
  std::optional<std::string> wall_clock;
  std::optional<z3::expr> eliminate(const z3::expr& q) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      z3::goal g(ctx);
      g.add(q);
      z3::tactic qe = z3::try_for(z3::tactic(ctx, "qe-light") & z3::tactic(ctx, "qe"), kEliminationWallClockMs);
      z3::apply_result ar = qe(g);
      if (ar.size() == 1) return ar[0].as_expr();
    } catch (const z3::exception&) {
      if (std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(kEliminationWallClockMs))
        wall_clock = "a quantifier elimination ran past the " + std::to_string(kEliminationWallClockMs / 1000) +
                     " s wall-clock safety limit (not a resource limit: this verdict may differ on a faster machine)";
    }
    return std::nullopt;
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
    return eliminate(q).value_or(q);
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
    z3::expr f = py_domain && gate && assumed;
    // The world size's bounds, where there is one (a family described as data
    // has only its declared variables, bounded by py_domain).
    if (static_cast<Z3_ast>(ws) != nullptr) f = f && ws >= opt.min_world_size && ws <= opt.max_world_size;
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
    if (auto e = eliminate(g)) g = *e;
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
  // The feature switches as the gate's symbols (by name; a bare one where
  // the gate has none of that name), with the value an error takes them in.
  std::vector<std::pair<model::OpaqueSymbol, bool>> switchSymbols(const std::vector<model::OpaqueSymbol>& known) {
    std::vector<std::pair<model::OpaqueSymbol, bool>> out;
    for (const auto& [i, v] : featureSwitches()) {
      const std::string& n = py_uninterp_names[i];
      auto it = std::find_if(known.begin(), known.end(), [&](const model::OpaqueSymbol& o) { return o.name == n; });
      model::OpaqueSymbol o;
      if (it != known.end()) o = *it;
      else o.name = o.text = n;
      out.push_back({o, v});
    }
    return out;
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
      // A resource limit, not a time limit: the same give-up on every run.
      z3::params p(ctx);
      p.set("rlimit", opt.rlimit);
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
    if (wall_clock) throw UndecidedError(c, std::string(what) + ": " + *wall_clock);
    switch (s.check()) {
      case z3::sat: return true;
      case z3::unsat: return false;
      default: throw UndecidedError(c, std::string(what) + ": " + gaveUp(s));
    }
  }
  // Why s answered unknown, in words that name the limit reached.
  std::string gaveUp(z3::solver& s) const {
    std::string r = s.reason_unknown();
    // Nothing else interrupts a check (no timer, no signal handler): a
    // canceled one reached its resource limit.
    // A limit reached before the search starts leaves the bare "unknown".
    if (r.find("resource limit") != std::string::npos || r.find("canceled") != std::string::npos || r == "unknown")
      return "Z3 reached its resource limit (rlimit " + std::to_string(opt.rlimit) + " per query)";
    return "Z3 gave up (" + r + ")";
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
  //
  // A range depends on f alone, so each is kept by f's term inside the cell
  // (the world size, and NVLink where the cell fixes it, replaced by their
  // values): leaves and gates that read neither ask once, not once per cell.
  // Z3 shares equal terms, so equal formulas have one id.
  SizeRange sizeRange(const z3::expr& f, const Cell& c) {
    z3::expr key = atCell(f, c);
    auto hit = size_ranges.find(key.id());
    if (hit != size_ranges.end()) return hit->second.second;
    Query q(rangeSolver());
    q.s.add(key);
    SizeRange r{0, 0};
    if (sat(q.s, c, "size range")) r = SizeRange{extreme(q.s, c, false), extreme(q.s, c, true)};
    size_ranges.emplace(key.id(), std::make_pair(key, r));  // the term kept: its id stays its own
    return r;
  }
  std::map<unsigned, std::pair<z3::expr, SizeRange>> size_ranges;

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


}  // namespace layergate::solve
