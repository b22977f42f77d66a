// Expressions over config variables: the common language of the gate model.
//
// Takes: nothing (a value type). Returns: immutable, shared expression trees
// that the frontends build and the solver translates into SMT. Frontends never
// see Z3 and the solver never sees source; this file is the boundary.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace layergate::model {

enum class Sort { Bool, Int, Str };

enum class Op {
  BoolConst, IntConst, StrConst,
  Var,        // a config variable or an opaque symbol (see VarKind)
  Not, And, Or, Implies,
  Ite,        // args: cond, then, else (then/else of one sort)
  Eq, Ne, Lt, Le, Gt, Ge,
  Add, Sub, Mul, Div, Mod, Neg,   // Div/Mod: Python floor semantics for ints
  StrToInt,   // int(s); undefined strings map to an opaque value
};

// How a Var came to be; the report and the solver treat them differently.
enum class VarKind {
  Config,  // world_size, full_nvlink, nbytes, env:NAME, env:NAME#set
  Probe,   // an opaque probe result with a known meaning (p2p_ok, same_node)
  Opaque,  // something the walker did not understand; named after its text
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  Op op;
  Sort sort;
  bool b = false;
  std::int64_t i = 0;
  std::string s;               // StrConst value or Var name
  VarKind var_kind = VarKind::Config;
  std::vector<ExprPtr> args;

  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Releases a deep tree without recursion: long elif chains and merged
  // states make trees deep enough to overflow the stack otherwise.
  ~Expr();

  // Readable form, for reports and tests. Made once per node: nodes are
  // shared (a DAG), and without it the text of a deep path condition is
  // rebuilt exponentially. Never a node's identity: see equal().
  const std::string& str() const;
  // Structural hash, set by the constructors below from the children's.
  std::size_t hash = 0;

 private:
  mutable std::string str_;
  mutable bool str_made_ = false;
  std::string makeStr() const;
};

// Constructors. They fold constants and trivial cases (And(true, x) = x) so
// that models stay small and printable.
ExprPtr True();
ExprPtr False();
ExprPtr BoolC(bool v);
ExprPtr IntC(std::int64_t v);
ExprPtr StrC(std::string v);
ExprPtr Var(std::string name, Sort sort, VarKind kind = VarKind::Config);
ExprPtr Not(ExprPtr a);
ExprPtr And(ExprPtr a, ExprPtr b);
ExprPtr Or(ExprPtr a, ExprPtr b);
ExprPtr AndAll(const std::vector<ExprPtr>& xs);
ExprPtr OrAll(const std::vector<ExprPtr>& xs);
ExprPtr Implies(ExprPtr a, ExprPtr b);
ExprPtr Ite(ExprPtr c, ExprPtr t, ExprPtr e);
ExprPtr Cmp(Op op, ExprPtr a, ExprPtr b);   // Eq..Ge
ExprPtr Arith(Op op, ExprPtr a, ExprPtr b); // Add..Mod
ExprPtr Neg(ExprPtr a);
ExprPtr StrToInt(ExprPtr s);

bool isConst(const ExprPtr& e);
// Same tree: same operators, sorts, constants and names, node by node
// (shared subtrees compared once). Iterative, so deep path conditions are
// safe; a differing hash answers at once, never the text of the trees.
bool equal(const ExprPtr& a, const ExprPtr& b);
bool isTrue(const ExprPtr& e);
bool isFalse(const ExprPtr& e);

// Every Var in e (name, sort, kind), each once, in first-seen order.
struct VarRef {
  std::string name;
  Sort sort;
  VarKind kind;
};
std::vector<VarRef> varsOf(const ExprPtr& e);
// varsOf of each root, walking a node the roots share once: a dispatch's leaf
// conditions share their prefixes, and one varsOf per leaf costs the square
// of the dispatch's size.
std::vector<std::vector<VarRef>> varsOfEach(const std::vector<ExprPtr>& roots);

// e with every Var whose name (and sort) a key of `by` names replaced by its
// value, rebuilt through the folding constructors. Iterative, as varsOf.
struct Replacement {
  Sort sort;
  ExprPtr value;
};
ExprPtr substitute(const ExprPtr& e, const std::map<std::string, Replacement>& by);

// An environment variable NAME is two variables: "env:NAME" (Str, its value
// when set) and "env:NAME#set" (Bool, whether it is set at all).
std::string envVar(const std::string& name);
std::string envSetVar(const std::string& name);
ExprPtr EnvValue(const std::string& name);  // Str var
ExprPtr EnvIsSet(const std::string& name);  // Bool var
// If v names an env variable ("env:NAME" or "env:NAME#set"), returns NAME.
std::string envNameOf(const std::string& var);

}  // namespace layergate::model
