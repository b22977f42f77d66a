#include "model/Expr.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace layergate::model {
namespace {

std::size_t mix(std::size_t h, std::size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The node's hash from its own fields and its children's hashes (already set).
void seal(Expr& e) {
  std::size_t h = mix(static_cast<std::size_t>(e.op), static_cast<std::size_t>(e.sort));
  h = mix(h, e.b ? 1 : 0);
  h = mix(h, std::hash<std::int64_t>{}(e.i));
  if (!e.s.empty()) h = mix(h, std::hash<std::string>{}(e.s));
  h = mix(h, static_cast<std::size_t>(e.var_kind));
  for (auto& a : e.args) h = mix(h, a->hash);
  e.hash = h;
}

ExprPtr make(Op op, Sort sort, std::vector<ExprPtr> args = {}) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->sort = sort;
  e->args = std::move(args);
  seal(*e);
  return e;
}

const char* opText(Op op) {
  switch (op) {
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "//";
    case Op::Mod: return "%";
    default: return "?";
  }
}

bool sameConst(const ExprPtr& a, const ExprPtr& b) {
  if (a->op != b->op) return false;
  switch (a->op) {
    case Op::BoolConst: return a->b == b->b;
    case Op::IntConst: return a->i == b->i;
    case Op::StrConst: return a->s == b->s;
    default: return false;
  }
}

// Python floor division and modulo on constants.
std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Expr::~Expr() {
  std::vector<ExprPtr> stack;
  auto take = [&stack](std::vector<ExprPtr>& xs) {
    for (auto& x : xs)
      if (x.use_count() == 1) stack.push_back(std::move(x));
    xs.clear();
  };
  take(args);
  while (!stack.empty()) {
    ExprPtr e = std::move(stack.back());
    stack.pop_back();
    take(const_cast<Expr*>(e.get())->args);
  }  // each e dies here with no children left
}

ExprPtr True() {
  static ExprPtr t = [] {
    auto e = std::make_shared<Expr>();
    e->op = Op::BoolConst;
    e->sort = Sort::Bool;
    e->b = true;
    seal(*e);
    return ExprPtr(e);
  }();
  return t;
}
ExprPtr False() { static ExprPtr f = make(Op::BoolConst, Sort::Bool); return f; }
ExprPtr BoolC(bool v) { return v ? True() : False(); }

ExprPtr IntC(std::int64_t v) {
  auto e = std::make_shared<Expr>();
  e->op = Op::IntConst;
  e->sort = Sort::Int;
  e->i = v;
  seal(*e);
  return e;
}

ExprPtr StrC(std::string v) {
  auto e = std::make_shared<Expr>();
  e->op = Op::StrConst;
  e->sort = Sort::Str;
  e->s = std::move(v);
  seal(*e);
  return e;
}

ExprPtr Var(std::string name, Sort sort, VarKind kind) {
  auto e = std::make_shared<Expr>();
  e->op = Op::Var;
  e->sort = sort;
  e->s = std::move(name);
  e->var_kind = kind;
  seal(*e);
  return e;
}

bool isConst(const ExprPtr& e) {
  return e->op == Op::BoolConst || e->op == Op::IntConst || e->op == Op::StrConst;
}
bool equal(const ExprPtr& a, const ExprPtr& b) {
  std::vector<std::pair<const Expr*, const Expr*>> todo{{a.get(), b.get()}};
  // Pairs already compared, kept once a comparison is long enough for
  // shared subtrees to matter (small ones are cheaper to compare again).
  std::set<std::pair<const Expr*, const Expr*>> done;
  std::size_t steps = 0;
  while (!todo.empty()) {
    auto [x, y] = todo.back();
    todo.pop_back();
    if (x == y) continue;
    if (!x || !y) return false;
    if (x->hash != y->hash || x->op != y->op || x->sort != y->sort || x->b != y->b || x->i != y->i ||
        x->var_kind != y->var_kind || x->s != y->s || x->args.size() != y->args.size())
      return false;
    if (x->args.empty() || (++steps > 64 && !done.insert({x, y}).second)) continue;
    for (std::size_t k = 0; k < x->args.size(); ++k) todo.push_back({x->args[k].get(), y->args[k].get()});
  }
  return true;
}

bool isTrue(const ExprPtr& e) { return e->op == Op::BoolConst && e->b; }
bool isFalse(const ExprPtr& e) { return e->op == Op::BoolConst && !e->b; }

ExprPtr Not(ExprPtr a) {
  if (a->op == Op::BoolConst) return BoolC(!a->b);
  if (a->op == Op::Not) return a->args[0];
  return make(Op::Not, Sort::Bool, {std::move(a)});
}

ExprPtr And(ExprPtr a, ExprPtr b) {
  if (isFalse(a) || isFalse(b)) return False();
  if (isTrue(a)) return b;
  if (isTrue(b)) return a;
  if (a == b) return a;
  return make(Op::And, Sort::Bool, {std::move(a), std::move(b)});
}

ExprPtr Or(ExprPtr a, ExprPtr b) {
  if (isTrue(a) || isTrue(b)) return True();
  if (isFalse(a)) return b;
  if (isFalse(b)) return a;
  if (a == b) return a;
  return make(Op::Or, Sort::Bool, {std::move(a), std::move(b)});
}

ExprPtr AndAll(const std::vector<ExprPtr>& xs) {
  ExprPtr r = True();
  for (const auto& x : xs) r = And(r, x);
  return r;
}

ExprPtr OrAll(const std::vector<ExprPtr>& xs) {
  ExprPtr r = False();
  for (const auto& x : xs) r = Or(r, x);
  return r;
}

ExprPtr Implies(ExprPtr a, ExprPtr b) { return Or(Not(std::move(a)), std::move(b)); }

ExprPtr Ite(ExprPtr c, ExprPtr t, ExprPtr e) {
  if (isTrue(c)) return t;
  if (isFalse(c)) return e;
  if (t == e || (isConst(t) && isConst(e) && sameConst(t, e))) return t;
  if (t->sort == Sort::Bool) {
    if (isTrue(t) && isFalse(e)) return c;
    if (isFalse(t) && isTrue(e)) return Not(c);
  }
  Sort s = t->sort;
  return make(Op::Ite, s, {std::move(c), std::move(t), std::move(e)});
}

ExprPtr Cmp(Op op, ExprPtr a, ExprPtr b) {
  if (isConst(a) && isConst(b) && a->op == b->op) {
    if (op == Op::Eq) return BoolC(sameConst(a, b));
    if (op == Op::Ne) return BoolC(!sameConst(a, b));
    if (a->op == Op::IntConst) {
      switch (op) {
        case Op::Lt: return BoolC(a->i < b->i);
        case Op::Le: return BoolC(a->i <= b->i);
        case Op::Gt: return BoolC(a->i > b->i);
        case Op::Ge: return BoolC(a->i >= b->i);
        default: break;
      }
    }
  }
  // Values of different sorts are never equal (Python: 1 == "1" is False).
  if (a->sort != b->sort) {
    if (op == Op::Eq) return False();
    if (op == Op::Ne) return True();
  }
  return make(op, Sort::Bool, {std::move(a), std::move(b)});
}

ExprPtr Arith(Op op, ExprPtr a, ExprPtr b) {
  if (a->op == Op::IntConst && b->op == Op::IntConst) {
    std::int64_t x = a->i, y = b->i;
    switch (op) {
      case Op::Add: return IntC(x + y);
      case Op::Sub: return IntC(x - y);
      case Op::Mul: return IntC(x * y);
      case Op::Div: if (y != 0) return IntC(floorDiv(x, y)); break;
      case Op::Mod: if (y != 0) return IntC(x - floorDiv(x, y) * y); break;
      default: break;
    }
  }
  if (op == Op::Mul && b->op == Op::IntConst && b->i == 1) return a;
  if (op == Op::Mul && a->op == Op::IntConst && a->i == 1) return b;
  return make(op, Sort::Int, {std::move(a), std::move(b)});
}

ExprPtr Neg(ExprPtr a) {
  if (a->op == Op::IntConst) return IntC(-a->i);
  return make(Op::Neg, Sort::Int, {std::move(a)});
}

ExprPtr StrToInt(ExprPtr s) {
  if (s->op == Op::StrConst) {
    try {
      size_t used = 0;
      long long v = std::stoll(s->s, &used, 10);
      if (used == s->s.size()) return IntC(v);
    } catch (...) {
    }
  }
  return make(Op::StrToInt, Sort::Int, {std::move(s)});
}

const std::string& Expr::str() const {
  if (!str_made_) {
    str_ = makeStr();
    str_made_ = true;
  }
  return str_;
}

std::string Expr::makeStr() const {
  std::ostringstream o;
  switch (op) {
    case Op::BoolConst: return b ? "True" : "False";
    case Op::IntConst: return std::to_string(i);
    case Op::StrConst: return "\"" + s + "\"";
    case Op::Var: return s;
    case Op::Not: return "not " + (args[0]->args.empty() ? args[0]->str() : "(" + args[0]->str() + ")");
    case Op::And:
    case Op::Or: {
      const char* w = op == Op::And ? " and " : " or ";
      auto side = [&](const ExprPtr& x) {
        bool paren = (x->op == Op::And || x->op == Op::Or) && x->op != op;
        return paren ? "(" + x->str() + ")" : x->str();
      };
      return side(args[0]) + w + side(args[1]);
    }
    case Op::Implies: return "(" + args[0]->str() + ") implies (" + args[1]->str() + ")";
    case Op::Ite:
      return "(" + args[1]->str() + " if " + args[0]->str() + " else " + args[2]->str() + ")";
    case Op::Neg: return "-" + args[0]->str();
    case Op::StrToInt: return "int(" + args[0]->str() + ")";
    default: {
      auto side = [](const ExprPtr& x) {
        return x->args.empty() || x->op == Op::StrToInt ? x->str() : "(" + x->str() + ")";
      };
      o << side(args[0]) << ' ' << opText(op) << ' ' << side(args[1]);
      return o.str();
    }
  }
}

std::vector<VarRef> varsOf(const ExprPtr& e) {
  std::vector<VarRef> out;
  std::set<std::pair<std::string, int>> seen;
  std::set<const Expr*> visited;
  std::vector<const Expr*> stack{e.get()};
  // Iterative walk: models can be deep (long elif chains) and must not
  // overflow the stack.
  std::vector<const Expr*> order;
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (!visited.insert(x).second) continue;
    if (x->op == Op::Var) {
      if (seen.insert({x->s, static_cast<int>(x->sort)}).second)
        out.push_back({x->s, x->sort, x->var_kind});
      continue;
    }
    for (auto it = x->args.rbegin(); it != x->args.rend(); ++it) stack.push_back(it->get());
  }
  return out;
}

std::vector<std::vector<VarRef>> varsOfEach(const std::vector<ExprPtr>& roots) {
  // Per node, its variables as indices into `vars`, in first-seen order: the
  // ordered union of its arguments' lists (a pre-order walk meets a variable
  // first in the first argument that has it). A node that adds nothing to its
  // first argument's list shares it.
  using List = std::shared_ptr<const std::vector<int>>;
  std::vector<VarRef> vars;
  std::map<std::pair<std::string, int>, int> ids;
  std::unordered_map<const Expr*, List> done;
  const List none = std::make_shared<const std::vector<int>>();
  std::vector<std::vector<VarRef>> out;
  for (const auto& root : roots) {
    if (!root) {
      out.emplace_back();
      continue;
    }
    std::vector<std::pair<const Expr*, bool>> stack{{root.get(), false}};
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (done.count(e)) continue;
      if (e->op == Op::Var) {
        auto key = std::make_pair(e->s, static_cast<int>(e->sort));
        auto it = ids.find(key);
        if (it == ids.end()) {
          it = ids.emplace(key, static_cast<int>(vars.size())).first;
          vars.push_back({e->s, e->sort, e->var_kind});
        }
        done.emplace(e, std::make_shared<const std::vector<int>>(1, it->second));
        continue;
      }
      if (!expanded) {
        stack.push_back({e, true});
        for (auto it = e->args.rbegin(); it != e->args.rend(); ++it)
          if (!done.count(it->get())) stack.push_back({it->get(), false});
        continue;
      }
      List merged = none;
      std::vector<int> grown;
      for (const auto& a : e->args) {
        const List& l = done.at(a.get());
        if (merged == none && grown.empty()) {
          merged = l;
          continue;
        }
        for (int v : *l) {
          const std::vector<int>& have = grown.empty() ? *merged : grown;
          if (std::find(have.begin(), have.end(), v) != have.end()) continue;
          if (grown.empty()) grown = *merged;
          grown.push_back(v);
        }
      }
      done.emplace(e, grown.empty() ? merged : std::make_shared<const std::vector<int>>(std::move(grown)));
    }
    std::vector<VarRef> mine;
    for (int v : *done.at(root.get())) mine.push_back(vars[v]);
    out.push_back(std::move(mine));
  }
  return out;
}

ExprPtr substitute(const ExprPtr& root, const std::map<std::string, Replacement>& by) {
  if (!root || by.empty()) return root;
  std::map<const Expr*, ExprPtr> done;
  std::vector<std::pair<const Expr*, bool>> stack{{root.get(), false}};
  // Keep the shared_ptr of every node reachable, to return unchanged ones as they are.
  std::map<const Expr*, ExprPtr> self{{root.get(), root}};
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    stack.pop_back();
    if (done.count(x)) continue;
    if (!expanded) {
      stack.push_back({x, true});
      for (const auto& a : x->args) {
        self.emplace(a.get(), a);
        if (!done.count(a.get())) stack.push_back({a.get(), false});
      }
      continue;
    }
    ExprPtr out = self.at(x);
    if (x->op == Op::Var) {
      auto it = by.find(x->s);
      if (it != by.end() && it->second.sort == x->sort && it->second.value) out = it->second.value;
    } else if (!x->args.empty()) {
      std::vector<ExprPtr> a;
      bool changed = false;
      for (const auto& k : x->args) {
        a.push_back(done.at(k.get()));
        changed = changed || a.back() != k;
      }
      if (changed) {
        switch (x->op) {
          case Op::Not: out = Not(a[0]); break;
          case Op::And: out = And(a[0], a[1]); break;
          case Op::Or: out = Or(a[0], a[1]); break;
          case Op::Implies: out = Implies(a[0], a[1]); break;
          case Op::Ite: out = Ite(a[0], a[1], a[2]); break;
          case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
            out = Cmp(x->op, a[0], a[1]);
            break;
          case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: out = Arith(x->op, a[0], a[1]); break;
          case Op::Neg: out = Neg(a[0]); break;
          case Op::StrToInt: out = StrToInt(a[0]); break;
          default: break;
        }
      }
    }
    done.emplace(x, out);
  }
  return done.at(root.get());
}

std::string envVar(const std::string& name) { return "env:" + name; }
std::string envSetVar(const std::string& name) { return "env:" + name + "#set"; }
ExprPtr EnvValue(const std::string& name) { return Var(envVar(name), Sort::Str); }
ExprPtr EnvIsSet(const std::string& name) { return Var(envSetVar(name), Sort::Bool); }

std::string envNameOf(const std::string& var) {
  if (var.rfind("env:", 0) != 0) return "";
  std::string rest = var.substr(4);
  auto hash = rest.find('#');
  return hash == std::string::npos ? rest : rest.substr(0, hash);
}

}  // namespace layergate::model
