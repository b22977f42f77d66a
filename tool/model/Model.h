// The gate model: what each frontend hands to the solver.
//
// Gate (from the Python frontend): the predicate "the fast path is used for
// this config", as the constructor's admission condition and the per-call
// predicate, with source locations. Dispatch (from the C++ frontend): the
// leaves of the kernel-choosing function (launch / throw / fall-through), each
// with its path condition. Both are over the config variables of Expr.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/Expr.h"

namespace layergate::model {

struct Location {
  std::string file;
  int line = 0;
  int col = 0;
  std::string role;  // "gate", "enabling", "per-call", "dispatch", "launch", ...
  std::string note;  // a short description shown beside the location

  bool valid() const { return !file.empty() && line > 0; }
};

// One step of the flag's journey from the Python probe to the C++ branch.
struct Hop {
  std::string hop;     // "probe", "attribute", "call argument #4", "member", "branch condition"
  Location where;
};

// ---- Trace facts (issue 3): what each frontend extracts so that the linker
// (tool/link) can follow the NVLink flag across the language boundary. Found
// by positions and names in the code, never by knowing the flag's spelling.

// A symbol the frontend could not interpret, reported so the user knows what
// the verdict assumes. A free one is a fact of the user's machine (a probe's
// own code, an import that may fail): a finding may choose its value. The
// others are code the analysis did not understand: an error holds for all
// their values, a possible gap (LG008) names them.
struct OpaqueSymbol {
  std::string name;  // the Var name used in expressions
  std::string text;  // source text it stands for
  Location where;
  bool free = false;
  // A clang error in the dispatch (Dispatch::broken): the condition under
  // which the dispatch runs the statement it sits in; null: everywhere.
  ExprPtr reached;
  // That error is clang's parser giving up: the statement may be another
  // than written, so a path through it may launch nothing even where the
  // walk read a launch (a possible gap there, never a proof either way).
  bool parse_error = false;
};

// An argument at a Python call site.
struct CallArg {
  int position = -1;        // 0-based positional index; -1 for a keyword argument
  std::string keyword;      // keyword name for keyword arguments
  std::string text;         // source text of the argument
  ExprPtr value;            // symbolic value (Bool or Int sort) or nullptr when not a bool/int
  std::vector<Hop> origin;  // where the value came from, oldest first: probe call,
                            // local assignment, attribute store, monkeypatch, env override
  Location where;
  ExprPtr length;           // a list's length (Int), when the walker knows it; else nullptr
};

// A call from the gate class (constructor or a method it runs) to a function
// it does not define: a candidate native op (ops.init_custom_ar(...)).
struct NativeCall {
  std::string callee;       // dotted source text: "ops.init_custom_ar", "torch.ops.sgl_kernel.init_custom_ar.default"
  std::string name;         // op name: last component, skipping "default"/"__call__": "init_custom_ar"
  ExprPtr reached = True(); // path condition at the call
  std::vector<CallArg> args;
  // The uninterpreted term its result is where the gate uses it (a Var of
  // that name): what the link stage replaces when the op's C++ body is a
  // check it can read (CppEntry::returns_true).
  std::string result;
  Location where;
  // The op wrapper this call reaches, as name resolution found it: an index
  // into Gate::forwarders, or -1 (not a given def, or not resolved). For a
  // Forwarder's own call it is the next wrapper of a chain (SGLang's
  // custom_all_reduce_ops.init_custom_ar -> sgl_kernel.allreduce.init_custom_ar).
  int wrapper = -1;
};

// A Python function in one of the given files that calls another function
// with (some of) its own parameters: the thin op wrapper of sgl_kernel/_custom_ops.
struct Forwarder {
  std::string name;                 // the def's name
  std::vector<std::string> params;  // its parameter names, in order
  std::vector<Location> param_locs; // where each parameter is written
  NativeCall call;                  // the call it makes (args' text are expressions over params)
  std::vector<int> arg_param;       // per call.args[i]: index into params it passes through, or -1
  Location where;
};

struct CppParam {
  std::string type;          // spelled type, e.g. "bool", "int64_t"
  std::string name;
  bool has_default = false;
  std::string default_text;
  Location where;            // the parameter's name (in a schema: inside the string)
};

// An op registration: a torch library schema (m.def("name(schema)")),
// m.impl("name", &fn), or a pybind11 m.def("name", &fn).
struct OpBinding {
  std::string op;                      // "init_custom_ar"
  std::string kind;                    // "torch-schema", "torch-impl", "pybind11"
  std::vector<CppParam> schema_params; // parsed from the schema string (torch-schema only)
  std::string function;                // bound C++ function name, empty when not named
  Location where;
};

// `new C(args)`, `std::make_unique<C>(args)` or `C(args)` inside a C++ function.
struct Construction {
  std::string class_name;
  std::vector<std::string> arg_texts;
  std::vector<int> arg_param;          // per argument: index of the enclosing function's parameter it is, or -1
  // per argument: index of the enclosing function's parameter whose length it
  // is (`p.size()`, directly or through a local: the world size vLLM's
  // init_custom_ar takes from the list of IPC pointers Python passes), or -1
  std::vector<int> arg_size_of;
  std::vector<Location> arg_locs;      // per argument: where it is written
  Location where;
};

// A C++ free function with a body in the given files (candidate op entry).
struct CppEntry {
  std::string name;
  std::vector<CppParam> params;
  std::vector<Construction> constructs;
  Location where;
  // A function returning bool: the condition under which it returns true,
  // over Var("param:NAME") for its bool/integer parameters and config
  // variables (a tensor's byte count is nbytes); null otherwise. What a gate
  // check written in C++ decides (vLLM of mid-2024 kept should_custom_ar so).
  ExprPtr returns_true;
  std::vector<OpaqueSymbol> opaques;  // what returns_true reads that was not interpreted
};

// member(param) in a constructor's init list, or `member = param;` in its body.
struct MemberInit {
  std::string member;
  int param = -1;                      // index of the constructor parameter, or -1
  std::string text;                    // the initialiser's source text
  Location where;
};

struct CtorInfo {
  std::string class_name;
  std::vector<CppParam> params;
  std::vector<MemberInit> inits;
  Location where;
};

// A dispatch condition that reads a member mapped to a config variable.
struct MemberUse {
  std::string member;                  // "full_nvlink_"
  std::string config;                  // the variable the target maps the member to
  Location where;                      // the condition (spelling location)
};


// One condition the gate checks, for the report ("world_size > 2 and not
// full_nvlink -> return" at file:line).
struct GateCheck {
  ExprPtr condition;   // the path condition under which the gate stops here
  std::string text;    // source text of the deciding condition
  Location where;
};

// Where a fix may tighten the gate (issue 12, report/ fix suggestions): the
// statement a guard goes before, and the Python expressions that hold the
// world size and the NVLink probe's value there, as the walker's data flow
// found them (an attribute or local whose value is exactly that config
// variable). Not found: `why` says what is missing.
struct GuardSite {
  bool found = false;
  std::string why;           // !found: why no guard can be written
  std::string method;        // the method the guard goes into ("should_custom_ar", "__init__")
  std::string file;
  int line = 0;              // the guard is inserted before this line (1-based), at its column 1
  std::string indent;        // the surrounding block's indentation
  std::string body_indent;   // the guard's body (indent plus one level, as the file writes it)
  std::string reject;        // the statement that refuses there: "return False" (per call), "return"
  std::string world_size;    // Python expression of the world size there ("self.world_size"); "" none
  std::string full_nvlink;   // Python expression of the NVLink probe's value; "" none
};

// A value the gate computes and hands down to the C++ entry (issue 13): a
// field of the record a policy function returns (the kernel variant, the
// block count), as the config variable the C++ dispatch reads.
struct GateOutput {
  std::string var;          // config variable the C++ side receives ("variant")
  std::string field;        // where Python holds it ("IpcLaunchConfig.variant")
  ExprPtr value;            // over config variables, on the admitted paths
  std::vector<Hop> origin;  // where it was computed, oldest first
  Location where;
};

// A per-configuration route (see Gate::routes): the gate's native calls go
// through `receiver`, which holds the analysed chain's op module
// (`analysed_module`) under some configurations and `module` under
// `condition`; those configurations do not reach the analysed dispatch.
struct Route {
  std::string receiver;         // "self._ops"
  std::string module;           // what it holds there: a module's dotted name, or the value's text
  std::string analysed_module;  // the op module of the analysed chain ("vllm._custom_ops")
  std::vector<std::string> ops; // the op names called through it
  ExprPtr condition;            // the gate's paths that call through `module`
  std::string kind;             // "JIT extension" (torch.utils.cpp_extension.load), or ""
  std::vector<std::string> sources;          // its C++ sources found in the tree
  std::vector<std::string> sources_missing;  // named, not in the tree
  std::vector<std::string> sources_unresolved;  // not spelled with literals (source text)
  Location where;               // the build call, or the receiver
};

struct Gate {
  std::string class_name;
  Location class_loc;
  // Constructor admission: the paths that reach the enabling statement.
  ExprPtr admit = False();
  Location enabling;                // first enabling statement found
  std::vector<GateCheck> rejects;   // early returns / raises in the constructor
  // Per-call predicate (should_custom_ar) evaluated with the attributes the
  // constructor left when it reached the enabling statement.
  ExprPtr per_call = True();
  Location per_call_loc;
  bool has_per_call = false;
  // The per-call predicate's truthy returns: condition under which each return
  // statement is reached with a true value (attributes substituted), so that a
  // finding can point at the line that admits its counterexample.
  std::vector<GateCheck> admits;
  // Where the checked dispatch is the one the gate reaches: the conditions an
  // op wrapper the gate calls is defined under (a module-level `if` on an env
  // var choosing between op libraries). Outside it the gate calls code that
  // is not this dispatch; those configurations are not checked (a note says so).
  ExprPtr scope = True();
  // Each part of scope left out: condition (reaching the call while the
  // definition's conditions fail) and the note saying so (cli adds it when
  // some configuration meets the condition).
  std::vector<GateCheck> unchecked;
  // Routes elsewhere: op libraries the gate's native calls go through in
  // some configurations instead of the analysed chain's (outside `scope`).
  std::vector<Route> routes;
  // Branches for another platform than the target's that set the NVLink
  // flag to a literal True (LG003 on that platform); text says which.
  std::vector<GateCheck> platform_forced;
  // The values handed down (a policy gate's outputs) and `bound`: each
  // output's config variable equals its value.
  std::vector<GateOutput> outputs;
  ExprPtr bound = True();
  bool policy = false;  // the gate is a policy function (class_name holds its name), not a class
  // admit AND per_call (within scope, outputs bound): what LG001/LG002 query.
  ExprPtr predicate() const { return And(And(And(admit, per_call), scope), bound); }
  // `assert` conditions on the gate's paths (reached -> condition): invariants
  // the program states about its inputs (the group's backend, the device's
  // type). A gap must exist when they hold; an uninterpreted term inside one
  // is not a reason to doubt a gap (the program would have stopped there).
  ExprPtr assumed = True();
  // Environment variables the gate reads (NAME), in first-read order.
  std::vector<std::string> env_reads;
  std::vector<Location> env_read_locs;
  std::vector<OpaqueSymbol> opaques;
  std::vector<std::string> notes;   // approximations the walker made
  // Trace facts.
  std::vector<NativeCall> native_calls;  // from the gate class
  // Calls outside the constructor that the walker did not interpret (a
  // per-call check through an op, inside its wrapper too): the link stage
  // reads those whose C++ body returns bool and is given.
  std::vector<NativeCall> result_calls;
  std::vector<Forwarder> forwarders;     // from every given Python file
  std::vector<std::string> files;        // the Python files that were read
  GuardSite guard_site;                  // for the safe fix of LG001/LG002
};

// The selection layer (issue 13): a function that returns which
// implementation class runs (SGLang's dispatch_custom_allreduce). One arm per
// class it can return, with the condition under which it does.
struct SelectionArm {
  std::string implementation;  // the class's name; "None" when it returns None; "?" for a value not understood
  ExprPtr condition;           // over config variables
  Location where;              // a return statement that gives it
};
struct Selection {
  std::string function;
  Location where;
  std::vector<SelectionArm> arms;
  // What the walk read, for the solver (as a Gate's).
  std::vector<std::string> env_reads;
  std::vector<OpaqueSymbol> opaques;
  ExprPtr assumed = True();
  std::vector<std::string> notes;
};

// The selection layer in vLLM's shape (issue 13): a method that tries the
// implementations in order, each behind a guard on the attribute that holds
// one (`if ca is not None and not ca.disabled and ca.should_custom_ar(x):
// return ...`), then falls through to NCCL. Read from the syntax: which
// attribute each arm tests, the class(es) that attribute holds, the guard.
struct ChainArm {
  std::string attribute;                     // "ca_comm"; "" when the guard names no attribute
  std::vector<std::string> implementations;  // the classes it holds ("CustomAllreduce"); empty: not known
  std::string guard;                         // the method the guard calls on it ("should_custom_ar"); "" none
  std::string text;                          // the guard as written (one line, shortened)
  std::string result;                        // what the arm returns or calls ("ca_comm.custom_all_reduce", "\"ca\"")
  Location where;
  // The arm is taken exactly when the attribute's gate admits: its condition
  // is a conjunction of `X is not None`, `X`, `not X.disabled` and the one
  // guard call `X.guard(...)`, and its branch returns directly. Any other
  // shape (an `or`, a negated guard, another test, a return under a nested
  // `if`) is shown as not known.
  bool plain = false;
  // Not plain, but the guard call is one of the conjuncts of the condition
  // and the branch returns directly: where the gate never admits, the arm is
  // never taken; elsewhere it depends on the other tests (`extra`).
  bool gate_conjunct = false;
  std::string extra;
};
struct SelectionChain {
  std::string class_name, method;
  Location where;
  std::vector<ChainArm> arms;
  Location fallback;  // the first statement after the last arm (NCCL)
  std::vector<std::string> notes;
};

enum class LeafKind { Launch, Throw, None };

// Where the unsafe fix of LG001 (tool/fix) adds the missing `else` to a None
// leaf's `if` without `else`, and the launch it reuses, as the C++ frontend
// saw them (cpp/FixFacts.h). Positions are spelling positions: inside the
// macro definition when the `if` is written in one. Not found: `why` says
// what is missing.
struct ElseSite {
  bool found = false;
  std::string why;             // !found: why no branch can be written
  std::string file;
  int line = 0, col = 0;       // 1-based, right after the then-block's closing `}`
  bool in_macro = false;       // in a macro body: every inserted line needs a ` \` continuation
  int continuation_col = 0;    // in_macro: column of the `\` ending the `}` line (0: none there)
  std::string indent;          // leading whitespace of the `}` line
  std::string condition;       // source text of the if's condition ("full_nvlink_")
  // The statements of a sibling branch whose condition does not test NVLink
  // and that launches (the world-size-2 one-stage branch), one source line
  // each as written there, continuations removed.
  std::vector<std::string> launch;
  std::string kernel;          // the kernel that branch launches
  Location launch_where;       // where that branch's statements start
};

// A place where the dispatch's execution ends.
struct Leaf {
  LeafKind kind;
  ExprPtr condition;   // path condition reaching it (over config + opaques)
  std::string kernel;  // Launch: kernel name (template name, no args)
  std::string text;    // Throw: message text if literal; None: why (e.g. "if without else")
  Location spelling;   // where the code is written (inside a macro definition)
  Location expansion;  // where it is expanded (the REDUCE_CASE(n) line); == spelling outside macros
  ElseSite else_site;  // None: where an `else` could go (found only for an if without else)
};

struct Dispatch {
  std::string class_name;
  std::string function;   // e.g. "allreduce"
  Location where;
  // The dispatch function's signature, for a harness that calls it (selftest):
  // its parameters as written, its enclosing namespaces ("flashinfer::comm"),
  // whether it is a template and whether it is a static member.
  std::vector<CppParam> params;
  std::string ns;
  bool is_template = false;
  bool is_static = false;
  // Template parameters, in order, of the function and of its class ("type",
  // "bool", "int" or "other"): a harness instantiates them.
  struct TemplateParam {
    std::string name, kind;
  };
  std::vector<TemplateParam> template_params, class_template_params;
  std::vector<Leaf> leaves;
  std::vector<OpaqueSymbol> opaques;
  std::vector<std::string> env_reads;   // std::getenv names
  std::vector<std::string> notes;       // parse problems, stubbed includes, ...
  // Clang errors inside the dispatch function: code there that clang dropped
  // or could not type, a launch perhaps. A gap is then never certain: it names
  // them (LG008), for the path without a kernel may be one the tool misread.
  std::vector<OpaqueSymbol> broken;
  // Trace facts.
  std::vector<OpBinding> bindings;
  std::vector<CppEntry> entries;
  std::vector<CtorInfo> ctors;          // constructors of the dispatch class
  std::vector<MemberUse> member_uses;   // in the dispatch's conditions
  // launch == OR of the Launch leaves' conditions, etc.
  ExprPtr launchCondition() const;
  ExprPtr throwCondition() const;
};


// What a counterexample assumes of a term, in the user's words: "the loop
// `for i in range(world_size)` at custom_all_reduce.py:33 does not run",
// "`ops.meta_size()` = 0 (custom_all_reduce.py:120)", "p2p_ok is true".
std::string assumptionInWords(const std::string& name, const OpaqueSymbol* o, const std::string& value);

enum class Severity { Error, Warning, Note };
const char* severityName(Severity s);

// A concrete configuration: the counterexample of a finding.
struct Config {
  std::optional<std::int64_t> world_size;
  std::optional<bool> full_nvlink;
  std::optional<std::int64_t> nbytes;
  std::vector<std::pair<std::string, std::optional<std::string>>> env;  // NAME -> value (nullopt: unset)
  std::vector<std::pair<std::string, std::string>> assumed;  // opaque/probe -> value
  std::vector<std::string> assumed_words;  // the same, as a user reads them (assumptionInWords)
  // Other config variables the gate reads or hands down (a policy's inputs
  // and outputs: numel, variant, blocks) -> value.
  std::vector<std::pair<std::string, std::int64_t>> values;
  // The same for text values the gate hands down (an algorithm's name).
  std::vector<std::pair<std::string, std::string>> texts;
};

// Inclusive range of message sizes (bytes); hi < 0 means no upper bound.
struct ByteRange {
  std::int64_t lo = 0;
  std::int64_t hi = -1;
};

// An inline `layergate: ignore[...]` comment that covers a finding: the
// finding is kept (JSON and SARIF mark it) but no longer counts.
struct Suppression {
  std::string justification;  // text after the codes, "" when none
  Location where;             // the comment
};

// A fix suggestion (tool/fix): text edits, as ruff and clang-tidy offer them.
// Lines and columns are 1-based, columns in bytes; start == end inserts.
struct TextPos {
  int line = 0;
  int col = 0;
};
struct Edit {
  std::string file;
  TextPos start, end;
  std::string replacement;
  bool operator==(const Edit& o) const {
    return file == o.file && start.line == o.start.line && start.col == o.start.col && end.line == o.end.line &&
           end.col == o.end.col && replacement == o.replacement;
  }
};
enum class FixSafety { Safe, Unsafe };
const char* fixSafetyName(FixSafety s);  // "safe" / "unsafe"

// Configuration cells in words, as messages and fixes name them: "world
// sizes 4, 6, 8 without NVLink", "world size 3" (NVLink not given, or both
// values given), "world size 3 and world sizes 4, 6 without NVLink" (mixed).
std::string cellsText(const std::vector<std::pair<std::int64_t, std::optional<bool>>>& cells);
struct Fix {
  FixSafety safety = FixSafety::Safe;
  std::string description;
  std::vector<Edit> edits;
};

struct Finding {
  std::string rule;      // "LG001"
  Severity severity = Severity::Error;
  std::string message;
  // The configuration cell in the words the message starts with ("world size
  // 4 without NVLink"); empty for a finding of no cell. The text report groups
  // findings whose messages differ only in it.
  std::string cell;
  Config config;
  std::optional<ByteRange> sizes;   // the gap's message sizes in its cell
  // First = primary: the line every format reports the finding at and where
  // its suppression comment goes. For a gap, the check a patch opened when
  // there is one (role "opened": the configurations got in there), else the
  // Python line that admits the counterexample (role "gate").
  std::vector<Location> locations;
  std::vector<Hop> trace;
  std::optional<Suppression> suppressed;
  // Stable under unrelated edits (see report/Baseline.h): rule, file, the
  // admitting line's text, the cell and the enclosing function, never the line number.
  std::string fingerprint;
  // Fix suggestions, the safe one first (tool/fix/Fix.h).
  std::vector<Fix> fixes;

  const Location* primary() const { return locations.empty() ? nullptr : &locations.front(); }
  // The line that admits the configurations: the primary, or the first
  // location after the checks a patch opened. Fingerprints hash it, so that
  // they do not depend on which line the report shows first.
  const Location* admitting() const {
    for (const auto& l : locations)
      if (l.role != "opened") return &l;
    return primary();
  }
};

}  // namespace layergate::model
