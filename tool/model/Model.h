// The gate model: what each frontend hands to the solver.
//
// Gate (from the Python frontend): the predicate "the fast path is used for
// this config", as the constructor's admission condition and the per-call
// predicate, with source locations. Dispatch (from the C++ frontend): the
// leaves of the kernel-choosing function (launch / throw / fall-through), each
// with its path condition. Both are over the config variables of Expr.h.
#pragma once

#include <optional>
#include <string>
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

// A symbol the frontend could not interpret, reported so the user knows what
// the verdict assumes (opaques are existentially free: "if this can be true").
struct OpaqueSymbol {
  std::string name;  // the Var name used in expressions
  std::string text;  // source text it stands for
  Location where;
};

// One condition the gate checks, for the report ("world_size > 2 and not
// full_nvlink -> return" at file:line).
struct GateCheck {
  ExprPtr condition;   // the path condition under which the gate stops here
  std::string text;    // source text of the deciding condition
  Location where;
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
  // admit AND per_call: what LG001/LG002 query.
  ExprPtr predicate() const { return And(admit, per_call); }
  // Environment variables the gate reads (NAME), in first-read order.
  std::vector<std::string> env_reads;
  std::vector<Location> env_read_locs;
  std::vector<OpaqueSymbol> opaques;
  std::vector<std::string> notes;   // approximations the walker made
};

enum class LeafKind { Launch, Throw, None };

// A place where the dispatch's execution ends.
struct Leaf {
  LeafKind kind;
  ExprPtr condition;   // path condition reaching it (over config + opaques)
  std::string kernel;  // Launch: kernel name (template name, no args)
  std::string text;    // Throw: message text if literal; None: why (e.g. "if without else")
  Location spelling;   // where the code is written (inside a macro definition)
  Location expansion;  // where it is expanded (the REDUCE_CASE(n) line); == spelling outside macros
};

struct Dispatch {
  std::string class_name;
  std::string function;   // e.g. "allreduce"
  Location where;
  std::vector<Leaf> leaves;
  std::vector<OpaqueSymbol> opaques;
  std::vector<std::string> env_reads;   // std::getenv names
  std::vector<std::string> notes;       // parse problems, stubbed includes, ...
  // launch == OR of the Launch leaves' conditions, etc.
  ExprPtr launchCondition() const;
  ExprPtr throwCondition() const;
};

// One step of the flag's journey from the Python probe to the C++ branch.
struct Hop {
  std::string hop;     // "probe", "attribute", "call argument #4", "member", "branch condition"
  Location where;
};

enum class Severity { Error, Warning, Note };
const char* severityName(Severity s);

// A concrete configuration: the counterexample of a finding.
struct Config {
  std::optional<std::int64_t> world_size;
  std::optional<bool> full_nvlink;
  std::optional<std::int64_t> nbytes;
  std::vector<std::pair<std::string, std::optional<std::string>>> env;  // NAME -> value (nullopt: unset)
  std::vector<std::pair<std::string, std::string>> assumed;  // opaque/probe -> value
};

// Inclusive range of message sizes (bytes); hi < 0 means no upper bound.
struct ByteRange {
  std::int64_t lo = 0;
  std::int64_t hi = -1;
};

struct Finding {
  std::string rule;      // "LG001"
  Severity severity = Severity::Error;
  std::string message;
  Config config;
  std::optional<ByteRange> sizes;   // the gap's message sizes in its cell
  std::vector<Location> locations;  // first = primary (the Python gate line)
  std::vector<Hop> trace;
};

}  // namespace layergate::model
