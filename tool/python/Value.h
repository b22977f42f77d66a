// Value: the walker's value domain, what a Python expression evaluates to
// (None, bool/int/str formulas, lists, objects, opaque unknowns, merges of two
// values under a condition) with its trace origin; plus the constructors
// vNone/vBool/... and formula helpers that need no walker state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/Model.h"

namespace layergate::python::detail {

using model::ExprPtr;
using model::Location;
using model::Op;
using model::Sort;
using model::VarKind;

struct Value;
using ValueP = std::shared_ptr<const Value>;
struct Module;

struct Value {
  enum class K { Undef, None, Bool, Int, Str, List, Object, Unknown, Merge };
  K k = K::Undef;
  ExprPtr e;                 // Bool / Int / Str
  bool lowered = false;      // Str: known to be lower-cased (s.lower())
  std::string env;           // Bool read through an env module: the variable
  std::vector<Value> items;  // List (lists, tuples, sets); record: the field values
  // Object tagged "record" (a dataclass / NamedTuple instance): its class is
  // `text`, its field names, in order, are these, their values `items`.
  // Object tagged "pyclass": a class of a given file (`text`), in module `name`.
  std::vector<std::string> fields;
  std::string text;          // Unknown / Object: source text
  bool truth_unknown = false;  // Object: a name imported from a module not given (`name` is its Var)
  std::string tag;           // Object: self/class/tensor/environ/module; Unknown: numel/elemsize
  std::string name;          // Unknown: Var name to use; tagged: the tensor
  Location loc;
  ExprPtr cond;              // Merge: cond ? *a : *b
  ValueP a, b;
  int depth = 0;
  // Trace: the hops this value went through (probe call, monkeypatch, local,
  // attribute, env override), oldest first; env vars already accounted for by
  // an "env override" hop.
  std::vector<model::Hop> origin;
  std::vector<std::string> env_seen;
};

Value vNone();
Value vBool(ExprPtr e);
Value vInt(ExprPtr e);
Value vStr(ExprPtr e, bool lowered = false);
Value vList(std::vector<Value> items);
Value vObject(std::string tag, std::string text);
// A list whose elements are not known but whose length is `len` (an Object
// tagged "sized"): `[None] * world_size`, a slice of it, a list a loop
// appends to once per iteration.
Value vSized(ExprPtr len);

// Bool if-then-else folded into and/or where one side is constant.
ExprPtr iteB(const ExprPtr& c, const ExprPtr& t, const ExprPtr& e);
ExprPtr boolToInt(const ExprPtr& b);

}  // namespace layergate::python::detail
