// Scope: the semantic model the walker carries: the state of a block (locals,
// self attributes, path condition), frames with their exits, the given files
// as modules (functions, classes, aliases, globals), parameters and function
// declarations, and monkeypatches of probes. Plain data, no behaviour.
#pragma once

#include <tree_sitter/api.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "python/PythonFrontend.h"
#include "python/Value.h"

namespace layergate::python::detail {

struct State {
  ExprPtr prefix = model::True();  // absolute condition at the start of the block
  ExprPtr rel = model::True();     // paths still alive since then
  std::map<std::string, Value> locals;
  std::map<std::string, Value> attrs;  // self.<name>
  bool broke = false;                  // after break/continue
  bool dead() const { return model::isFalse(rel) || model::isFalse(prefix); }
  ExprPtr full() const { return model::And(prefix, rel); }
};

struct Exit {
  ExprPtr cond;  // relative to the frame's start
  Value value;
  std::map<std::string, Value> attrs;
  TSNode node{};  // the return statement (null: fell off the end)
  bool env_guarded = false;  // inside an if (of this frame) whose condition reads the environment
  TSNode env_if{};           // the innermost such if/elif
};

struct Frame {
  enum class Kind { Module, Class, Ctor, PerCall, Helper } kind;
  explicit Frame(Kind k) : kind(k) {}
  ExprPtr entry = model::True();  // absolute condition at frame entry
  bool in_ctor = false;            // the constructor or a helper it calls
  std::vector<Exit> returns;
  std::vector<ExprPtr> deaths;  // relative conditions of raising paths
  struct If { TSNode cond; bool negated; };
  std::vector<If> ifs;
  struct Guard { ExprPtr cond; TSNode stmt; };
  std::vector<Guard> guards;  // conditions of the enclosing branches of this frame, and their if/elif
};

struct Ctx {
  ExprPtr guard = model::True();   // condition (relative to the state) of evaluating here
  ExprPtr raises = model::False(); // paths that raise while evaluating
};

struct Param {
  std::string name;
  TSNode node{};  // the parameter as written (for locations)
  TSNode def{};
  bool has_default = false;
  bool star = false, kwstar = false, kw_only = false;
};

struct FuncInfo {
  TSNode node{};
  bool is_static = false, is_classmethod = false, is_property = false;
  bool is_method = false;
  bool nested = false;    // a def inside a function: it sees the caller's locals (its closure)
  Module* mod = nullptr;  // the file that defines it
  // Module-level conditions the definition sits under that the target does not
  // decide (an env var, say): (condition, taken-when-true). Empty: unconditional.
  std::vector<std::pair<TSNode, bool>> guards;
};

// One given Python file.
struct Module {
  const SourceFile* file = nullptr;
  TSTree* tree = nullptr;
  TSNode root{};
  std::vector<std::string> comps;  // module path components (".py" and __init__ dropped)
  std::vector<std::string> pkg;    // the package it is in (for relative imports)
  std::map<std::string, std::string> aliases;  // local name -> dotted origin
  // Names bound by `from M import x`: a module, a class, a function or a
  // plain value; unless a given file says which, only the attributes and
  // calls through it are known to go to M, not its truth.
  std::set<std::string> from_names;
  std::map<std::string, TSNode> import_at;     // local name -> the import statement that binds it
  std::map<std::string, FuncInfo> funcs;       // module-level functions
  // Module-level definitions under undecided conditions: def node id -> guards.
  std::map<const void*, std::vector<std::pair<TSNode, bool>>> def_guards;
  std::map<std::string, TSNode> classes;       // module-level classes
  std::map<std::string, Value> globals;
  int walked = 0;  // 0 not yet, 1 walking, 2 done
  bool syntax_ok = true;
  bool from_disk = false;  // not given: found on disk by following an import
};

// A probe replaced by an assignment in a given file (a monkeypatch).
struct Patch {
  std::string probe;  // the attribute name that was assigned
  TSNode value{};     // the right-hand side (lambda, function, staticmethod(f))
  bool bind_self = false;  // assigned on a class without staticmethod: called as a method
  ExprPtr cond;       // under which the assignment runs
  Module* mod = nullptr;
  Location where;
  const void* id = nullptr;
};

}  // namespace layergate::python::detail
