// Configuration variables a target declares, and the terms that spell them in
// the code of either layer: what lets a family of layered gates be described
// as data (a head size, a dtype, a GPU generation) with no code of its own.
//
// A Variable is a name with a type and a domain. A Term is how one layer
// computes a value over them: a variable, a constant, an enum variable
// compared with one of its values, or arithmetic over terms. The frontends
// turn Terms into model expressions over Var(name) (VarKind::Config).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/Expr.h"
#include "model/Roles.h"

namespace layergate::target {

struct Variable {
  enum class Type { Int, Enum, Bool };
  std::string name;
  Type type = Type::Int;
  std::optional<std::int64_t> min, max;  // Int: inclusive bounds
  std::vector<std::int64_t> ints;        // Int: the values it takes (empty: min..max)
  std::vector<std::string> names;        // Enum: its values
  std::string doc;                       // what it is, in a few words
  // The part it plays in the per-group analysis ("ranks", "link", "bytes",
  // "rank": model/Roles.h); empty: none.
  std::string role;
  // A fact of the machine the analysis does not run on (a process's rank,
  // the device count): any value of its domain, an input of the gate that no
  // report lists as a configuration.
  bool probe = false;
  // Enum in the element role: C++ element types (as clang spells their
  // canonical type: "float", "__half", "c10::BFloat16") -> the value each is.
  std::map<std::string, std::string> cpp_types;
  model::Sort sort() const {
    return type == Type::Int ? model::Sort::Int : type == Type::Bool ? model::Sort::Bool : model::Sort::Str;
  }
};

struct Term {
  enum class Kind { Var, Equals, Int, Str, Bool, Add, Sub, Mul, Div, If };
  Kind kind = Kind::Int;
  std::string var;   // Var, Equals: the variable
  std::string text;  // Str: the constant; Equals: the value compared with
  std::int64_t num = 0;
  bool b = false;
  std::vector<Term> args;  // Add, Sub, Mul, Div: two operands; If: condition, then, else
};

using Variables = std::vector<Variable>;

const Variable* findVariable(const Variables& vs, const std::string& name);
// The term as an expression over the declared variables; nullptr when it names
// a variable that is not declared.
model::ExprPtr termExpr(const Term& t, const Variables& vs);
// Every variable within its domain (probes included).
model::ExprPtr domainExpr(const Variables& vs);
// The names of the variables declared in each role.
model::Roles rolesOf(const Variables& vs);
// The model variable a declared name stands for (its sort; VarKind::Probe
// for a probe, else Config); nullptr when the name is not declared.
model::ExprPtr declaredVar(const Variables& vs, const std::string& name);
// A value of a variable in words ("float16", "128", "true").
std::string valueText(const Variable& v, const model::ExprPtr& constant);

}  // namespace layergate::target
