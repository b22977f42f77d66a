// Sites: the Python calls of native ops in a checkout, and the conditions on
// each call's path inside its function.
//
// Takes: Python modules (root-relative path and text). Returns: every call
// of `torch.ops.<ns>.<op>` and every call of an op wrapper (a module-level
// function that calls one), resolved through the imports that bind it
// (`from vllm import _custom_ops as ops`, `from sgl_kernel import f`, a
// package's re-export), each with the conditions that must hold for the
// call to run: the enclosing `if`/`elif`/`else` tests, conditional
// expressions, `and`/`or` operands, and the early `return`/`raise` under an
// `if` before it. Conditions in callers (a kernel class chosen by its
// `can_implement`) are not followed yet.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace layergate::gates {

struct Module {
  std::string file;  // root-relative
  std::string text;
};

// `torch.ops.<ns>.<op>[.<overload>]`
struct OpName {
  std::string ns;
  std::string op;
  std::string overload;  // "" or "default" or an overload's name
  std::string str() const { return "torch.ops." + ns + "." + op; }
  bool operator<(const OpName& o) const { return std::tie(ns, op) < std::tie(o.ns, o.op); }
};

struct Condition {
  // How the call depends on it: "if" (the test holds), "else" (it fails;
  // elif's earlier tests too), "exit" (an earlier `if` that returns or raises
  // does not fire), "expr" (a conditional expression or and/or operand),
  // "assert", "case", "loop" (a while test).
  std::string kind;
  std::string text;  // the test as written, whitespace collapsed
  int line = 0;
};

struct Site {
  std::string file;
  int line = 0;
  int column = 0;
  std::string function;  // "Class.method", "function" or "<module>"
  std::string callee;    // as written: "torch.ops._C.rms_norm.default", "ops.rms_norm"
  OpName op;
  // The wrappers the call goes through, outermost first: "vllm/_custom_ops.py:rms_norm".
  std::vector<std::string> via;
  std::vector<Condition> conditions;
  std::vector<std::string> arguments;  // each argument's text (keyword ones as `k=v`)
  // Through wrappers: per argument position of this call, the op's argument
  // position it is passed on as (-1: not as it is). Empty for a direct call
  // (positions are the op's).
  std::vector<int> to_op;
  bool in_test = false;  // in a test, benchmark or example file
};

struct SiteScan {
  std::vector<Site> sites;  // sorted by file, line, column
  // Module-level functions that call a native op: file:function -> op.
  std::map<std::string, OpName> wrappers;
  // Ops defined in Python (`direct_register_custom_op("name", ...)`,
  // `torch.library.custom_op("ns::name")`, a library's `define("name(...)")`).
  std::set<std::string> python_ops;
  std::vector<std::string> notes;  // modules tree-sitter could not parse
};

SiteScan scanSites(const std::vector<Module>& modules);

// Whether a root-relative path is a test, benchmark or example (its calls are
// listed, but are not the engine's gates).
bool isTestPath(const std::string& file);

}  // namespace layergate::gates
