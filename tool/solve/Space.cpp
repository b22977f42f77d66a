// Space: regions of the declared variables' product (see Space.h).
#include "solve/Space.h"

#include <map>
#include <set>

#include "solve/SolverImpl.h"

namespace layergate::solve {

namespace m = model;
using target::Variable;

namespace {

constexpr std::size_t kMaxRegions = 24;

std::string joinValues(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string Region::text() const {
  if (whole) return "every configuration";
  std::string s;
  for (const auto& [var, vals] : values) {
    if (vals == "any") continue;
    s += (s.empty() ? "" : ", ") + var + " " + vals;
  }
  return s;
}

class SpaceSolver {
 public:
  SpaceSolver(const m::Gate& g, const m::Dispatch& d, const target::Variables& vs, const Options& o)
      : gate_(g), disp_(d), vars_(vs), I(o) {}

  SpaceResult run() {
    SpaceResult out;
    I.textsFrom(gate_.opaques);
    for (const auto& v : vars_) I.py_config.insert(v.name);
    m::ExprPtr dom = target::domainExpr(vars_);
    I.collectStrings(dom);
    I.collectStrings(gate_.predicate());
    I.collectStrings(gate_.assumed);
    for (const auto& a : gate_.admits) I.collectStrings(a.condition);
    for (const auto& l : disp_.leaves) I.collectStrings(l.condition);
    I.domain = I.translate(dom, Side::Python);
    I.py_domain = I.domain;
    std::vector<z3::expr> divisors;
    I.py_divisors = &divisors;
    z3::expr g = I.translate(gate_.predicate(), Side::Python) && I.translate(gate_.assumed, Side::Python);
    for (const auto& a : gate_.admits) admits_.push_back(I.translate(a.condition, Side::Python));
    I.py_divisors = nullptr;
    for (const auto& d : divisors) g = g && d != 0;
    for (const auto& v : vars_) x_.push_back(I.var(v.name, v.sort(), VarKind::Config, Side::Python));
    std::vector<z3::expr> leaves;
    for (const auto& l : disp_.leaves) leaves.push_back(I.translate(l.condition, Side::Cpp));

    // The Python terms: probes are free (some value), uninterpreted code is
    // universally quantified for a certain gap.
    z3::expr_vector free(I.ctx), all(I.ctx);
    for (unsigned i = 0; i < I.py_opaques.size(); ++i) {
      all.push_back(I.py_opaques[i]);
      if (I.py_opaque_free[i]) free.push_back(I.py_opaques[i]);
    }
    // The gate's other configuration (environment variables, a probe's
    // config variable) is the user's or the machine's: some value of it.
    // A region is over the declared variables alone.
    {
      std::set<unsigned> known;
      for (const auto& x : x_) known.insert(x.id());
      for (unsigned i = 0; i < I.py_opaques.size(); ++i) known.insert(I.py_opaques[i].id());
      for (unsigned i = 0; i < I.cpp_opaques.size(); ++i) known.insert(I.cpp_opaques[i].id());
      for (const auto& [key, c] : I.vars)
        if (!known.count(c.id())) {
          free.push_back(c);
          all.push_back(c);
          known.insert(c.id());
        }
    }
    z3::expr g_poss = all.empty() ? g : z3::exists(all, g);
    z3::expr g_cert = free.empty() ? g : z3::exists(free, g);
    // Feature switches, as in the cell solver (DESIGN.md): a certain gap
    // holds for every value of the uninterpreted terms under which the gate
    // admits anything at all, so a term that can only turn the whole path off
    // (an optional library's "enabled" query) is taken in the value that
    // turns it on, and the finding says so.
    I.gate = g;
    I.assumed = I.ctx.bool_val(true);
    if (!I.py_uninterp.empty()) {
      g_cert = z3::forall(I.py_uninterp, z3::implies(I.anyAdmit(), g_cert)) && g_poss;
      assuming_ = I.switchSymbols(gate_.opaques);
    }
    // What a possible gap depends on: the uninterpreted terms the gate's
    // formulas read (the walk may have met others that decide nothing).
    std::set<std::string> read(I.py_uninterp_names.begin(), I.py_uninterp_names.end());
    for (const auto& o : gate_.opaques)
      if (!o.free && read.count(o.name)) uninterp_.push_back(o);

    z3::expr launch = I.ctx.bool_val(false);
    for (std::size_t i = 0; i < leaves.size(); ++i)
      if (disp_.leaves[i].kind == m::LeafKind::Launch) launch = launch || leaves[i];
    z3::expr launch_any = existsCpp(launch);
    // Clang errors in the dispatch (or a function it enters): the paths
    // through one may be code the walk misread, so a gap there is never
    // certain (Dispatch::broken).
    z3::expr broken = I.ctx.bool_val(false);
    for (const auto& b : disp_.broken) broken = broken || (b.reached ? I.translate(b.reached, Side::Cpp) : I.ctx.bool_val(true));
    z3::expr broken_any = existsCpp(broken);

    try {
      // Gaps: per leaf without a kernel, in order (a configuration is the
      // first such leaf's that it can reach).
      // Leaves written at one place with one message (a throw in a macro
      // expanded once per dtype) are one answer.
      std::vector<std::pair<std::size_t, z3::expr>> groups;
      std::map<std::string, std::size_t> group_of;
      for (std::size_t i = 0; i < leaves.size(); ++i) {
        const m::Leaf& leaf = disp_.leaves[i];
        if (leaf.kind == m::LeafKind::Launch) continue;
        std::string key = std::to_string(static_cast<int>(leaf.kind)) + "|" + leaf.spelling.file + ":" +
                          std::to_string(leaf.spelling.line) + ":" + std::to_string(leaf.spelling.col) + "|" + leaf.text;
        auto it = group_of.find(key);
        if (it == group_of.end()) {
          group_of[key] = groups.size();
          groups.push_back({i, leaves[i]});
        } else {
          groups[it->second].second = groups[it->second].second || leaves[i];
        }
      }
      z3::expr before = I.ctx.bool_val(false);
      for (const auto& [i, cond] : groups) {
        const m::Leaf& leaf = disp_.leaves[i];
        z3::expr reach = existsCpp(cond);
        z3::expr base = !launch_any && reach && !before;
        before = before || reach;
        z3::expr cert = g_cert && base && !broken_any;
        for (bool certain : {true, false}) {
          z3::expr q = certain ? cert : g_poss && base && !cert;
          if (!certain && I.py_uninterp.empty() && disp_.broken.empty()) continue;
          for (Region& r : boxes(q, out.truncated)) {
            r.kind = leaf.kind;
            r.what = leaf.text;
            r.leaf = &leaf;
            r.certain = certain;
            if (certain) r.assuming = assuming_;
            if (!certain) {
              r.depends_on = uninterp_;
              r.depends_on.insert(r.depends_on.end(), disp_.broken.begin(), disp_.broken.end());
            }
            out.gaps.push_back(std::move(r));
          }
        }
      }
      out.served_listed = I.opt.regions;
      if (!out.served_listed) {
        Solver::Impl::Query aq(I);
        aq.s.add(g_poss);
        out.admits = sat(aq.s);
        return out;
      }
      // Served: per kernel, the admitted configurations that reach it.
      std::vector<std::string> kernels;
      for (const auto& l : disp_.leaves)
        if (l.kind == m::LeafKind::Launch && std::find(kernels.begin(), kernels.end(), l.kernel) == kernels.end())
          kernels.push_back(l.kernel);
      z3::expr done = I.ctx.bool_val(false);
      for (const auto& k : kernels) {
        z3::expr reach = I.ctx.bool_val(false);
        const m::Leaf* first = nullptr;
        for (std::size_t i = 0; i < leaves.size(); ++i)
          if (disp_.leaves[i].kind == m::LeafKind::Launch && disp_.leaves[i].kernel == k) {
            reach = reach || leaves[i];
            if (!first) first = &disp_.leaves[i];
          }
        z3::expr r_any = existsCpp(reach);
        for (Region& r : boxes(g_poss && r_any && !done, out.truncated)) {
          r.kind = m::LeafKind::Launch;
          r.what = k;
          r.leaf = first;
          out.served.push_back(std::move(r));
        }
        done = done || r_any;
      }
      out.admits = !out.served.empty() || !out.gaps.empty();
    } catch (const Undecided& u) {
      out.undecided = true;
      out.why = u.why;
    }
    return out;
  }

 private:
  // exists (the dispatch's opaque terms f reads). f: only those (a large
  // dispatch has many, and each costs the quantifier elimination).
  z3::expr existsCpp(const z3::expr& f) {
    std::set<unsigned> opaque;
    for (unsigned i = 0; i < I.cpp_opaques.size(); ++i) opaque.insert(I.cpp_opaques[i].id());
    z3::expr_vector bound(I.ctx);
    std::set<unsigned> seen;
    std::vector<z3::expr> stack{f};
    while (!stack.empty()) {
      z3::expr e = stack.back();
      stack.pop_back();
      if (!e.is_app() || !seen.insert(e.id()).second) continue;
      if (e.is_const() && opaque.count(e.id())) {
        bound.push_back(e);
        continue;
      }
      for (unsigned k = 0; k < e.num_args(); ++k) stack.push_back(e.arg(k));
    }
    return I.existsCpp(f, &bound);
  }

  std::vector<std::pair<m::OpaqueSymbol, bool>> assuming_;  // feature switches a certain gap takes as on

  struct Undecided {
    std::string why;
  };

  bool sat(z3::solver& s) {
    if (I.wall_clock) throw Undecided{*I.wall_clock};
    switch (s.check()) {
      case z3::sat: return true;
      case z3::unsat: return false;
      default: throw Undecided{I.gaveUp(s)};
    }
  }

  // Whether every configuration of the box (within the domain) is in q.
  bool inside(const z3::expr& box, const z3::expr& q) {
    Solver::Impl::Query sc(I);
    sc.s.add(box && !q);
    return !sat(sc.s);
  }

  // Per variable: a z3 constraint and the values in words.
  struct Dim {
    z3::expr c;
    std::string words;
  };

  z3::expr eqValue(std::size_t i, const std::string& v) {
    const Variable& var = vars_[i];
    if (var.type == Variable::Type::Enum) return x_[i] == I.ctx.int_val(I.strId(v));
    if (var.type == Variable::Type::Bool) return v == "true" ? x_[i] : !x_[i];
    return x_[i] == I.ctx.int_val(static_cast<int64_t>(std::stoll(v)));
  }

  // The values a variable's domain enumerates (empty for an int range).
  std::vector<std::string> enumerated(std::size_t i) {
    const Variable& v = vars_[i];
    if (v.type == Variable::Type::Enum) return v.names;
    if (v.type == Variable::Type::Bool) return {"false", "true"};
    std::vector<std::string> out;
    for (auto n : v.ints) out.push_back(std::to_string(n));
    return out;
  }

  std::string modelText(std::size_t i, z3::model& mdl) {
    z3::expr val = mdl.eval(x_[i], true);
    const Variable& v = vars_[i];
    if (v.type == Variable::Type::Bool) return val.is_true() ? "true" : "false";
    if (v.type == Variable::Type::Enum) return I.strOf(val).value_or(v.names.front());
    int64_t n = 0;
    if (val.is_numeral_i64(n)) return std::to_string(n);
    return v.min ? std::to_string(*v.min) : "0";
  }

  std::vector<Region> boxes(const z3::expr& q, bool& truncated) {
    std::vector<Region> out;
    z3::expr blocked = I.ctx.bool_val(true);
    while (true) {
      z3::model mdl(I.ctx);
      {
        Solver::Impl::Query sc(I);
        sc.s.add(q && blocked);
        if (!sat(sc.s)) break;
        mdl = sc.s.get_model();
      }
      if (out.size() >= kMaxRegions) {
        truncated = true;
        break;
      }
      // Grown inside what no earlier box holds: the boxes are disjoint.
      const z3::expr within = q && blocked;
      std::vector<std::string> seed;
      for (std::size_t i = 0; i < vars_.size(); ++i) seed.push_back(modelText(i, mdl));
      std::vector<Dim> dims;
      for (std::size_t i = 0; i < vars_.size(); ++i) dims.push_back({eqValue(i, seed[i]), seed[i]});
      auto others = [&](std::size_t skip) {
        z3::expr b = I.ctx.bool_val(true);
        for (std::size_t j = 0; j < dims.size(); ++j)
          if (j != skip) b = b && dims[j].c;
        return b;
      };
      bool whole = true;
      for (std::size_t i = 0; i < vars_.size(); ++i) {
        z3::expr rest = others(i);
        std::vector<std::string> vals = enumerated(i);
        if (!vals.empty()) {
          std::vector<std::string> in;
          z3::expr c = I.ctx.bool_val(false);
          for (const auto& v : vals)
            if (v == seed[i] || inside(rest && eqValue(i, v), within)) {
              in.push_back(v);
              c = c || eqValue(i, v);
            }
          dims[i] = {c, in.size() == vals.size() ? "any" : joinValues(in)};
        } else {
          const Variable& v = vars_[i];
          int64_t at = std::stoll(seed[i]), lo = *v.min, hi = *v.max;
          auto range = [&](int64_t a, int64_t b) {
            return x_[i] >= I.ctx.int_val(a) && x_[i] <= I.ctx.int_val(b);
          };
          if (inside(rest && range(lo, hi), within)) {
            dims[i] = {range(lo, hi), "any"};
          } else {
            auto grow = [&](int sign) {
              // the farthest end from `at` (towards lo or hi) that keeps the range inside q
              // (steps never pass the limit: no overflow near the int64 ends)
              int64_t good = at, limit = sign > 0 ? hi : lo;
              int64_t step = 1;
              int64_t bad = limit;
              bool bad_found = false;
              while (true) {
                int64_t room = sign > 0 ? limit - good : good - limit;
                int64_t next = step >= room ? limit : (sign > 0 ? good + step : good - step);
                if (next == good) break;
                bool ok = inside(rest && (sign > 0 ? range(at, next) : range(next, at)), within);
                if (!ok) {
                  bad = next;
                  bad_found = true;
                  break;
                }
                good = next;
                if (good == limit) return good;
                if (step < (int64_t(1) << 61)) step *= 2;
              }
              if (!bad_found) return good;
              while ((sign > 0 ? bad - good : good - bad) > 1) {
                int64_t mid = sign > 0 ? good + (bad - good) / 2 : good - (good - bad) / 2;
                if (inside(rest && (sign > 0 ? range(at, mid) : range(mid, at)), within)) good = mid;
                else bad = mid;
              }
              return good;
            };
            int64_t a = grow(-1), b = grow(+1);
            dims[i] = {range(a, b), a == b ? std::to_string(a) : std::to_string(a) + ".." + std::to_string(b)};
          }
        }
        if (dims[i].words != "any") whole = false;
      }
      Region r;
      r.whole = whole;
      z3::expr box = I.ctx.bool_val(true);
      for (std::size_t i = 0; i < vars_.size(); ++i) {
        box = box && dims[i].c;
        r.values.push_back({vars_[i].name, dims[i].words});
        const Variable& v = vars_[i];
        if (v.type == Variable::Type::Int) r.example.values.push_back({v.name, std::stoll(seed[i])});
        else r.example.texts.push_back({v.name, seed[i]});
      }
      for (std::size_t k = 0; k < admits_.size(); ++k)
        if (mdl.eval(admits_[k], true).is_true()) {
          r.admit = &gate_.admits[k];
          break;
        }
      if (!r.admit && !gate_.admits.empty()) r.admit = &gate_.admits.front();
      out.push_back(std::move(r));
      blocked = blocked && !box;
    }
    return out;
  }

  const m::Gate& gate_;
  const m::Dispatch& disp_;
  const target::Variables& vars_;
  Solver::Impl I;
  std::vector<z3::expr> x_;
  std::vector<z3::expr> admits_;
  std::vector<m::OpaqueSymbol> uninterp_;
};

SpaceResult solveSpace(const m::Gate& gate, const m::Dispatch& dispatch, const target::Variables& vars,
                       const Options& options) {
  SpaceSolver s(gate, dispatch, vars, options);
  return s.run();
}

}  // namespace layergate::solve
