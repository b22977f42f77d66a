// Solver: gate × dispatch in Z3.
//
// Takes: a Gate and a Dispatch over shared config variables. Returns: answers
// to the questions the checks and the report ask, per configuration cell
// (world size × NVLink): does the gate admit it (and under which env values,
// up to which size), which kernel runs for which sizes, and is there a config
// that the gate admits and the dispatch serves with no kernel or a throw (with
// a concrete counterexample). Never reads source.
//
// What is free and what is not (DESIGN.md, "an error is a proof"): config
// variables, env values and hardware probes are what a user's machine
// decides, so a gap may choose them. Python code the frontend did not
// interpret (VarKind::Opaque) is not: a gap is *certain* only when it holds
// for every value of those terms; one that holds for some of their values is
// reported with the terms it depends on (LG008). On the C++ side a launch
// counts as reachable if some value of the dispatch's opaque conditions
// (capture status, registered buffer...) reaches it, so that precondition
// checks the Python gate cannot see do not become findings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/Model.h"
#include "target/Variables.h"

namespace layergate::solve {

struct Cell {
  int world_size = 0;
  bool full_nvlink = false;
  // Neither layer reads the NVLink flag (a policy gate over PCIe kernels):
  // the cell stands for both values, and full_nvlink means nothing.
  bool nvlink_any = false;
};

// Inclusive range of message sizes in bytes; hi == kUnbounded means no upper bound.
inline constexpr std::int64_t kMaxBytes = std::int64_t(1) << 40;
struct SizeRange {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  bool unbounded() const { return hi >= kMaxBytes; }
  std::string str() const;  // "16 B .. 8 MiB-16", "512 KiB .. inf"
};

enum class GateState { Blocked, Admitted, AdmittedWhen, Undecided };
const char* gateStateName(GateState s);

struct CellGate {
  GateState state = GateState::Blocked;
  std::string condition;             // AdmittedWhen: e.g. "SGLANG_FORCE_CUSTOM_AR_PCIE=1"
  std::vector<std::pair<std::string, std::optional<std::string>>> env;  // the env that admits
  std::optional<SizeRange> sizes;    // admitted message sizes
};

struct DispatchPart {
  model::LeafKind kind;
  std::string kernel;  // Launch: kernel; Throw: message; None: why
  SizeRange sizes;
  model::Location where;
  bool precondition = false;  // a throw/fall-through reached only through the dispatch's own opaque preconditions
  // Reached only when an env variable that only C++ reads is set (an
  // algorithm override): "VLLM_CUSTOM_ALLREDUCE_ALGO=2stage"; empty: with
  // those variables unset, as a user who sets nothing runs.
  std::string when;
};

enum class GapKind { NoKernel, Throws };

struct Gap {
  GapKind kind;
  Cell cell;
  model::Config counterexample;
  SizeRange sizes;                          // gap message sizes in this cell
  const model::Leaf* leaf = nullptr;        // the None/Throw leaf the counterexample reaches
  const model::GateCheck* admit = nullptr;  // the per-call return that admits it
  std::vector<const model::GateCheck*> opened;  // constructor checks that env values open
  // Holds whatever the uninterpreted Python terms evaluate to (an error);
  // otherwise `depends_on` names the terms whose values it needs (a warning).
  bool certain = true;
  std::vector<model::OpaqueSymbol> depends_on;
  // Certain gaps: uninterpreted terms that switch the whole feature (the gate
  // admits nothing unless each has this value), and that value. The gap is
  // proven on the assumption that the feature is on.
  std::vector<std::pair<model::OpaqueSymbol, bool>> assuming;
  // The values of the element-role variable (a tensor's dtype) for which it
  // holds, when not all of them: the dispatch serves the others.
  std::vector<std::string> element_values;
};

// LG009's question: a config the gate admits for which the dispatch throws
// only because of the value of an environment variable outside the strings
// the C++ accepts (an algorithm override): the C++ side validates input,
// whether or not Python reads the variable too.
struct EnvRejection {
  std::string env;                 // NAME
  model::Config config;            // the admitted config, with NAME's rejected value
  const model::Leaf* leaf = nullptr;  // the throw
  std::vector<std::string> accepted;  // string values of NAME that the dispatch compares with
};

// One configuration of a cell that the gate admits and that reaches one
// dispatch leaf: what a harness runs to see that leaf on hardware (selftest).
struct Example {
  model::LeafKind kind;  // Launch: a kernel runs; None / Throw: a gap (LG001 / LG002)
  std::string kernel;    // Launch: kernel; otherwise the leaf's text
  model::Location where;
  model::Config config;  // world size, nbytes (smallest there), env, values handed down
};

struct CellVerdict {
  Cell cell;
  CellGate gate;
  std::vector<DispatchPart> dispatch;
  std::vector<Example> examples;  // filled on request (Solver::examples)
  bool undecided = false;   // a query ran out of time
  std::string undecided_reason;
  // Admitted configurations of this cell that call another op library than
  // the analysed chain's (a per-configuration route): where they go. Not
  // analysed here; never "no kernel".
  std::vector<std::string> routed_elsewhere;
};

inline constexpr unsigned kDefaultRlimit = 20000000;

struct Options {
  // The target's declared variables. Solver: those in the ranks, link and
  // bytes roles are the cells' group size, link flag and message size
  // (model/Roles.h), their bounds its domain; a rank probe is one of the
  // group's. The cells run over min..max_world_size within those bounds.
  target::Variables variables;
  int min_world_size = 1;
  int max_world_size = 8;
  // Z3's resource limit per query (its `rlimit`: a count of the solver's
  // steps, the same on every machine, whatever the load or --jobs), so that a
  // verdict, and an LG007 give-up, never depend on the wall clock. The
  // default is about a few seconds of work on a laptop core, far above what
  // any query of the bundled fixtures takes. 0: no limit.
  unsigned rlimit = kDefaultRlimit;
  bool sizes = true;           // matrix(): the admitted message sizes per cell (a search of many queries)
  // matrix(): what the dispatch runs in each cell, with its message sizes (a
  // query per leaf and cell, and a search per range); off: the gate's part
  // of each cell only (a report that lists no matrix).
  bool dispatch_parts = true;
  // solveSpace(): the admitted regions per kernel (a search of many queries;
  // a report that lists no regions asks only whether the gate admits any).
  bool regions = true;
  // A gate restated from the conditions on a call's path (cli/GateAnalysis.h),
  // whose variables are these parameter names: an uninterpreted Boolean call
  // whose text mentions none of them (`isinstance(meta, dict)`,
  // `current_platform.is_cuda()`) is a feature switch like a bare name. Empty
  // (a target's gate): a call with arguments is never one, since its
  // arguments may be a configuration quantity under another name.
  std::vector<std::string> switch_calls_without;
};

// LG003's question: a config the gate admits in which the flag C++ receives
// is true while the hardware probe says no NVLink.
struct ForcedFlag {
  model::Config config;              // world size, env that forces it
  bool unconditional = false;        // forced with no env variable set
  std::vector<std::string> kernels;  // the NVLink-branch kernels that then run
};

class SpaceSolver;  // Space.cpp: the same translation over declared variables

class Solver {
  friend class SpaceSolver;

 public:
  // flag_value: the value the C++ flag receives (from the flag trace), over
  // config variables; nullptr: the C++ flag is the hardware probe itself.
  // ws_value: the world size C++ receives (the length of the list Python
  // passes, or the integer), over Python's variables; nullptr: the group's
  // size itself.
  Solver(const model::Gate& gate, const model::Dispatch& dispatch, Options options = {},
         model::ExprPtr flag_value = nullptr, model::ExprPtr ws_value = nullptr);
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  std::vector<Cell> cells() const;
  // Whether the gate, the dispatch or the flag's value mention full_nvlink.
  bool readsNvlink() const { return reads_nvlink_; }
  // The configuration matrix, one verdict per cell (computed once, cached).
  const std::vector<CellVerdict>& matrix();
  // A config in `cell` that the gate admits and for which the dispatch can
  // reach no launch and: a fall-through (NoKernel) or only a throw (Throws).
  // Throws UndecidedError when Z3 gives up.
  std::optional<Gap> findGap(const Cell& cell, GapKind kind);
  std::optional<ForcedFlag> findForcedFlag();
  // One per env variable whose values the dispatch rejects in a configuration
  // the gate admits: a C++-only one at any value, one Python reads too at a
  // value outside the strings the dispatch compares it with.
  std::vector<EnvRejection> findEnvRejections();

  // One example per dispatch leaf the gate reaches in `cell` (launches, and
  // the fall-throughs and throws no launch covers), at the smallest size, with
  // env variables unset where they can be, and every other integer the gate
  // reads or hands down kept at most `small` where the gate allows it (so that
  // ranks sharing one GPU can run it: blocks, threads); a launch also at the
  // largest size of its range up to `large`. Throws UndecidedError.
  std::vector<Example> examples(const Cell& cell, std::int64_t small = 16, std::int64_t large = 1 << 20);

  // Whether some configuration (any world size, size, env) makes a Python-side
  // condition true; Z3 giving up answers true.
  bool possible(const model::ExprPtr& e);

  const model::Gate& gate() const { return gate_; }
  const model::Dispatch& dispatch() const { return dispatch_; }

 private:
  bool reads_nvlink_ = true;
  std::optional<Gap> computeGap(const Cell& cell, GapKind kind);
  // Found once: every cell's gap asks.
  const target::Variable* elementVariable();
  const target::Variable* element_ = nullptr;
  bool element_known_ = false;
  // Env variables the dispatch reads and compares with string constants
  // (an algorithm override), with those strings: a throw for a value outside
  // them is input validation (LG009), whoever else reads the variable.
  std::vector<std::pair<std::string, std::vector<std::string>>> validatedEnv() const;
  struct Impl;
  const model::Gate& gate_;
  const model::Dispatch& dispatch_;
  std::unique_ptr<Impl> impl_;
  std::optional<std::vector<CellVerdict>> matrix_;
  std::map<std::pair<int, int>, std::optional<Gap>> gaps_;  // (cell index, kind) -> findGap's answer
};

// Z3 answered "unknown" (its resource limit reached, or incompleteness) for a
// query on a cell.
class UndecidedError : public std::runtime_error {
 public:
  UndecidedError(const Cell& c, const std::string& why);
  Cell cell;
};

std::string describeEnv(const std::vector<std::pair<std::string, std::optional<std::string>>>& env);


}  // namespace layergate::solve
