// Walker: the symbolic executor of the gate class (private to the Python
// frontend). Takes the given files, the target's PythonGateSpec and limits;
// run() returns the Gate. The method bodies live in Walk*.cpp by concept:
// values, expressions, calls, modules, patches, trace, statements; Walker.cpp
// holds text/locations, symbols and the structure (run, pruneTentative).
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/Errors.h"
#include "model/Model.h"
#include "python/PythonFrontend.h"
#include "python/Scope.h"
#include "python/Syntax.h"
#include "python/Value.h"
#include "target/Target.h"

namespace layergate::python::detail {

// A guard against formulas so deep that destroying them would exhaust the
// stack: real gates run a few hundred statements, even with helpers inlined.
constexpr int kMaxStatements = 10000;
// Operands of one flat `a and b and ...` / `a + b + ...` chain.
constexpr std::size_t kMaxChain = 10000;
// Depth of a value merged from many branches before it becomes opaque.
constexpr int kMaxMergeDepth = 32;
constexpr int kMaxInlineDepth = 8;

class Walker {
 public:
  Walker(const std::vector<SourceFile>& f, const target::PythonGateSpec& s, const Limits& l)
      : files_(f), spec_(s), limits_(l) {}
  ~Walker() {
    for (auto& m : mods_)
      if (m->tree) ts_tree_delete(m->tree);
  }

  model::Gate run();
  // The selection layer's function (spec.selection_functions), nullopt when
  // no given file defines one (WalkPolicy.cpp).
  std::optional<model::Selection> runSelection();

  // Bounds on following imports onto disk (modules of the checkout that were
  // not given): how many files, and how many import hops from the gate.
  static constexpr std::size_t kMaxDiskModules = 48;
  static constexpr int kMaxImportHops = 2;

 private:
  const std::vector<SourceFile>& files_;
  const target::PythonGateSpec& spec_;
  Limits limits_;
  model::Gate gate_;

  std::vector<std::unique_ptr<Module>> mods_;
  std::vector<std::unique_ptr<SourceFile>> disk_files_;  // modules found by following imports
  Module* gate_mod_ = nullptr;
  Module* cur_ = nullptr;  // the module whose names are in scope
  mutable const Module* last_mod_ = nullptr;
  std::vector<Patch> patches_;
  bool collecting_patches_ = false;
  std::set<const void*> forwarder_defs_;  // def nodes that are op wrappers
  std::map<const void*, int> forwarder_index_;  // def node -> index into gate_.forwarders
  int forwarder_depth_ = 0;               // inside an inlined op wrapper
  int aux_depth_ = 0;                     // walking another module's body or a patch scan
  int aux_statements_ = 0;
  int tentative_ = 0;
  int env_read_calls_ = 0;  // what is recorded now is kept only if the gate's formulas use it
  std::set<std::string> tentative_env_, tentative_opaques_;
  std::map<std::pair<const void*, uint32_t>, std::size_t> native_index_;
  std::map<std::string, Value> class_consts_;
  std::map<std::string, FuncInfo> methods_;
  // Defs inside functions (`def force_thresholds(h): ...` in a constructor),
  // by index; a local holding one is an Object tagged "localfn".
  std::deque<FuncInfo> local_fns_;
  std::string class_name_;
  int depth_ = 0;
  int statements_ = 0;
  int merged_ = 0;
  std::vector<const void*> call_stack_;
  std::map<std::string, Sort> opaque_sorts_;
  std::map<std::string, VarKind> opaque_kinds_;
  int probe_depth_ = 0;  // inside the inlined body of a probe function
  std::set<std::string> noted_;
  bool strict_attrs_ = false;  // reading an unset self attribute raises
  // Module-level gate (vLLM early 2024): a function of the gate module that
  // builds the class. While it is walked, each construction of the class
  // walks the constructor and leaves its exits (absolute conditions) here.
  const FuncInfo* builder_ = nullptr;
  std::vector<Exit> constructions_;

  // --- text and locations ---------------------------------------------------
  const Module& modOf(TSNode n) const;
  std::string text(TSNode n) const;
  std::string shortText(TSNode n) const;
  Location loc(TSNode n, const std::string& role = "") const;
  std::string where(TSNode n) const;
  [[noreturn]] void fail(TSNode n, const std::string& msg) const;
  void note(const std::string& n);

  struct DepthGuard {
    Walker& w;
    DepthGuard(Walker& w_, TSNode n) : w(w_) {
      if (++w.depth_ > w.limits_.max_depth)
        w.fail(n, "nesting deeper than " + std::to_string(w.limits_.max_depth) + " levels; not analysed " +
                      limitHint("max-depth"));
    }
    ~DepthGuard() { --w.depth_; }
  };

  // --- symbols ----------------------------------------------------------------
  ExprPtr opaqueVar(std::string name, const std::string& txt, Sort sort, const Location& where,
                    VarKind kind = VarKind::Opaque);
  Value unknown(TSNode n);
  ExprPtr probeVar(const std::string& probe);
  // The target's variable in the bytes role (a tensor's byte count, numel ×
  // element size); none when it declares none.
  std::optional<Value> byteCount();
  void envRead(const std::string& name, TSNode at);
  static std::vector<std::string> spellings(const std::string& c);
  ExprPtr envTruthyValue(const std::string& name);

  // --- value semantics -------------------------------------------------------
  ExprPtr materialize(const Value& v, Sort s);
  ExprPtr truthy(const Value& v);
  std::optional<Value> declaredValue(const std::string& key, TSNode at);
  ExprPtr asInt(const Value& v);
  // The length of a list value (a display, a sized list, a merge of them), or
  // null when it is not known.
  ExprPtr lengthOf(const Value& v);
  // How many times `for ... in <iterable>` runs: range(a, b), a list of known
  // length, enumerate() of one; null when not known.
  ExprPtr iterationCount(TSNode iterable, State& st, Frame& fr, Ctx& cx);
  // Lists the loop body appends to exactly once on every path through it (no
  // break, continue, return or nested loop on the way): after the loop each
  // holds its length before plus one per iteration.
  std::vector<std::string> appendedOncePerIteration(TSNode body);
  Value importedValue(const std::string& name, TSNode at);
  Value evalSlice(const Value& seq, TSNode slice, State& st, Frame& fr, Ctx& cx);
  ExprPtr asStr(const Value& v);
  Value withoutNone(const Value& v, ExprPtr& none);

  // --- trace origins ----------------------------------------------------------
  static bool sameHop(const model::Hop& x, const model::Hop& y);
  static void addHops(std::vector<model::Hop>& to, const std::vector<model::Hop>& from);
  static bool hasSource(const Value& v);
  static void unionOrigin(Value& v, const Value& a, const Value& b);
  model::Hop hop(const std::string& kind, TSNode at) const;
  static bool mentionsEnv(const ExprPtr& e);
  model::Hop ifHop(const std::string& kind, TSNode at) const;
  static bool isBoolLiteral(const Value& v);
  static void envsOf(const Value& v, std::vector<std::string>& out);
  void envOverride(Value& v, const std::function<model::Hop()>& at);
  void traceStore(Value& v, const std::string& kind, TSNode stmt);
  Value merge(const ExprPtr& c, const Value& a, const Value& b);
  Value mergeRaw(const ExprPtr& c, const Value& a, const Value& b);
  std::map<std::string, Value> mergeMaps(const ExprPtr& c, const std::map<std::string, Value>& a,
                                         const std::map<std::string, Value>& b);
  ExprPtr opaqueCond(TSNode site);
  ExprPtr strEq(const Value& a, const Value& b);
  ExprPtr eqv(const Value& a, const Value& b, TSNode site);
  ExprPtr isNone(const Value& v, TSNode site);
  ExprPtr order(Op op, const Value& a, const Value& b, TSNode site);
  ExprPtr contains(const Value& x, const Value& c, TSNode site);
  Value arith(const std::string& op, const Value& a, const Value& b, TSNode site);
  Value toInt(const Value& v, TSNode site);
  Value applyStrMethod(const Value& v, const std::string& m, TSNode site);

  // --- names ----------------------------------------------------------------
  std::string resolveAlias(const std::string& name) const;
  std::string dotted(TSNode n) const;
  bool isEnvModule(TSNode n, const State& st) const;
  Value envModuleRead(const std::string& var, TSNode at);
  std::optional<Value> envLambdaRead(const std::string& var);
  Value lookup(const std::string& name, const State& st, TSNode at);

  // --- expressions ------------------------------------------------------------
  Value eval(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value parseInt(TSNode n);
  Value parseString(TSNode n);
  void checkChain(std::size_t n, TSNode at);
  Value evalBoolChain(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value evalArithChain(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value evalCompare(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value evalAttribute(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value evalSubscript(TSNode n, State& st, Frame& fr, Ctx& cx);

  // --- calls ------------------------------------------------------------------
  struct Args {
    std::vector<TSNode> pos;
    std::vector<std::pair<std::string, TSNode>> kw;
    bool splat = false;
  };
  Args parseArgs(TSNode args);
  TSNode argAt(const Args& a, std::size_t i, const char* kw);
  Value envGet(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  Value envBool(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  Value builtin(const std::string& f, TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx, bool& handled);
  Value toIntAt(const Value& v, TSNode call);
  static bool notAnOp(const std::string& name);
  static bool isLoggingObject(const std::string& base);
  std::string baseName(TSNode n) const;
  Value evalCall(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value evalCallInner(TSNode n, const Args& a, State& st, Frame& fr, Ctx& cx);
  Value probeValue(const std::string& probe);
  Value probeAt(const std::string& probe, TSNode call);

  // --- platform objects (WalkPlatform.cpp) ---------------------------------------
  // A probe method of the platform class chosen at import that answers
  // something else than its own query before probing: under `cond` (env and
  // constants only) it returns `value` (a literal, or another check's answer:
  // a peer-to-peer test in place of the NVLink query), at `where`. In order:
  // the first override whose condition holds answers.
  struct PlatformOverride {
    ExprPtr cond;
    Value value;
    std::string text;  // the answer as written
    Location where;
  };
  struct PlatformForcing {
    std::vector<PlatformOverride> overrides;
  };
  std::map<std::string, PlatformForcing> platform_forcing_;
  Module* diskModule(const std::string& path);
  const PlatformForcing& platformForcing(const std::string& object, const std::string& probe);
  void forcingIn(Module* m, TSNode def, PlatformForcing& out);
  Value platformProbe(Value v, TSNode call);
  void platformLiteralFlags(TSNode cls);

  // --- per-configuration routes (WalkRoutes.cpp) ------------------------------------
  std::string staticPath(TSNode n, int depth);
  model::Route describeRoute(const Value& v, const ExprPtr& cond);
  TSNode jitBuildIn(const Module& m, const std::string& name);
  std::pair<Module*, TSNode> jitLibrary(const Value& v);
  void describeJit(model::Route& r, Module* m, TSNode call);
  void routeNative(TSNode fnnode, const std::string& op, const ExprPtr& path, State& st, Frame& fr, Ctx& cx);

  // --- given files: calls, op wrappers, native calls ---------------------------------
  Value callGiven(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, TSNode fnnode,
                  const Args& a, State& st, Frame& fr, Ctx& cx);
  bool recordingCalls(const Frame& fr, TSNode call) const;
  static std::string opName(const std::string& callee);
  ExprPtr flagExpr(const Value& v);
  // Outside the constructor: a call whose result the gate may use (a per-call
  // check through an op), kept in Gate::result_calls for the link stage.
  bool recordingResults(const Frame& fr, TSNode call) const;
  void recordNative(TSNode call, TSNode fnnode, const std::string& name, State& st, Frame& fr, Ctx& cx,
                    int wrapper = -1);
  void addNative(model::NativeCall nc, TSNode call);
  std::vector<Param> parseParams(TSNode params);
  Value defaultValue(const Param& p);
  Value paramUnknown(const std::string& name, TSNode at);
  void bindParams(const std::vector<Param>& params, bool is_method, const Value& self, const std::vector<Value>& pos,
                  std::map<std::string, Value> kw, TSNode call, State& cs);

  struct ModuleScope {
    Walker& w;
    Module* saved;
    ModuleScope(Walker& w_, Module* m) : w(w_), saved(w_.cur_) {
      if (m) {
        if (m != w.gate_mod_) w.ensureWalked(m);
        w.cur_ = m;
      }
    }
    ~ModuleScope() { w.cur_ = saved; }
  };

  Value callFunction(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, const Args& a,
                     State& st, Frame& fr, Ctx& cx);
  Value inlineBody(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call,
                   const std::vector<Value>& pos, const std::map<std::string, Value>& kw, State& st, Frame& fr,
                   Ctx& cx, bool probe_rules);
  void collectVars(const Value& v, std::set<std::string>& out);

  // --- given files: modules and imports -------------------------------------------
  struct AuxAbort {};

  static std::vector<std::string> splitDots(const std::string& d);
  static std::string joinDots(const std::vector<std::string>& parts);
  static void moduleNames(Module& m);
  Module* findModule(const std::vector<std::string>& comps, const Module* from) const;

  struct Resolved {
    Module* mod = nullptr;
    const FuncInfo* fn = nullptr;
  };

  Resolved resolveDotted(const std::string& dotted, const Module* from, int depth = 0);
  Resolved resolveIn(Module* m, const std::vector<std::string>& rest, int depth);
  void ensureWalked(Module* m);
  // `global X` in the function around `id` names it (module globals a
  // function rebinds: SGLang's first CustomAllReduceV2 fills its threshold
  // table lazily so). Such a store goes to the state under globalKey, which
  // later reads of X on that path see; before it, X is the value the module
  // body leaves (as for any global: the first call).
  bool declaredGlobal(TSNode id);
  const std::set<std::string>& globalsDeclaredIn(TSNode fn);
  // A module global that some function of its module rebinds (`global X;
  // X = ...`: state an initialisation function sets later) holds its
  // import-time value only at module level and in the functions that rebind
  // it (the first call); read anywhere else it is not known (vLLM's
  // `get_tensor_model_parallel_cpu_group()` asserts its group was set).
  bool reboundElsewhere(Module* m, const std::string& name, TSNode at);
  std::map<const Module*, std::set<std::string>> rebound_globals_;
  std::string globalKey(const std::string& name) const;
  std::map<const void*, std::set<std::string>> global_decls_;
  void collectDecls(Module& m);
  void collectBlock(Module& m, TSNode block, int depth, std::vector<std::pair<TSNode, bool>>& guards);
  // A forwarder defined under undecided module-level conditions: the dispatch
  // is checked only where they hold (Gate::scope), said in a note.
  void scopeToDefinition(const FuncInfo& fi, const std::string& fname, TSNode call, const ExprPtr& path);
  std::map<const void*, std::size_t> scoped_calls_;  // call node -> its entry in Gate::unchecked
  // A condition on the platform alone (the target's platform flags, `is_hip()`,
  // `torch.version.hip is not None`), decided for the target platform; nullopt
  // when it reads anything else.
  std::optional<bool> platformTruth(TSNode cond) const;
  Module* addModule(const SourceFile& f, bool from_disk);
  // Modules the gate imports (and, within kMaxImportHops, what they import)
  // that no given file answers to, read from disk beside the given files.
  void followImports();
  std::string findOnDisk(const std::string& dotted, const Module& from) const;

  // --- monkeypatched probes ------------------------------------------------------------
  bool isPatchSite(TSNode n) const;
  bool hasPatchSite(TSNode root) const;
  static bool looksLikeClass(const std::string& objText);
  void addPatch(const std::string& probe, TSNode value, TSNode target, const std::string& obj, const ExprPtr& cond,
                TSNode at);
  void notePatchTarget(TSNode t, TSNode rhs, State& st, Frame& fr);
  void notePatchSetattr(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  void scanPatchFunctions(Module& m);
  Value applyPatches(const std::string& probe, Value orig, TSNode call, const Args& a, State& st, Frame& fr,
                     Ctx& cx);
  Value evalPatch(const Patch& p, TSNode call, const std::vector<Value>& pos, const std::map<std::string, Value>& kw,
                  State& st, Frame& fr, Ctx& cx);

  // --- op wrappers ---------------------------------------------------------------------
  // `reached`: the forwarder a call of another given file resolves to (its
  // index into gate_.forwarders), else -1.
  bool externalCallee(TSNode f, const std::vector<Param>& params, Module& m, int* reached = nullptr);
  void findForwarders(Module& m);

  // --- statements ---------------------------------------------------------------
  void settle(State& st, Frame& fr, Ctx& cx, TSNode stmt);
  void recordReject(const ExprPtr& cond, const Frame& fr, TSNode stmt);
  Value evalStmtExpr(TSNode n, State& st, Frame& fr, TSNode stmt);
  void walkBlock(TSNode block, State& st, Frame& fr);
  void assignTarget(TSNode t, const Value& v0, State& st, Frame& fr, TSNode stmt = TSNode{});
  void walkAssign(TSNode n, State& st, Frame& fr, TSNode stmt);
  void walkAugAssign(TSNode n, State& st, Frame& fr, TSNode stmt);
  static State branch(const State& base, const ExprPtr& c);
  State join(const State& base, const ExprPtr& c, const State& t, const State& e);

  struct Clause {
    std::function<ExprPtr(State&)> cond;  // evaluated on the state where earlier clauses failed
    std::function<void(State&)> body;
    TSNode if_cond{};  // for reject texts
  };

  void walkChain(const std::vector<Clause>& clauses, const std::function<void(State&)>* else_body, TSNode last_cond,
                 State& st, Frame& fr, TSNode site = TSNode{});
  void overrideAtJoin(std::map<std::string, Value>& merged, const std::map<std::string, Value>& t,
                      const std::map<std::string, Value>& e, TSNode site);
  void walkIf(TSNode n, State& st, Frame& fr);
  void walkLoop(TSNode n, State& st, Frame& fr);
  void walkTry(TSNode n, State& st, Frame& fr);
  // A try body of imports (and flag assignments of literals beside them).
  static bool importsOnly(TSNode body);
  void walkHandler(TSNode h, State& s, Frame& fr);
  void recordImport(TSNode n);
  FuncInfo funcInfo(TSNode def, TSNode decorated, bool is_method);
  void walkStmt(TSNode n, State& st, Frame& fr);
  ExprPtr enabled(const std::map<std::string, Value>& attrs);
  std::string deferredEntry(TSNode en);

  // --- module-level gate (WalkBuilder.cpp) ----------------------------------------
  TSNode findConstruction(TSNode fn) const;
  const FuncInfo* findBuilder(TSNode& construction);
  std::vector<Exit> walkBuilder(const FuncInfo& bf, const std::string& name);
  Value construct(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  // The constructor's parameters bound for a walk of __init__: `self`, the
  // arguments given (none when the constructor is the gate itself), else the
  // default (said in a note), else an unknown located at `at`.
  void bindCtorParams(const std::vector<Param>& params, const std::vector<Value>& pos,
                      std::map<std::string, Value>& kw, TSNode at, State& st);

  // --- records and classes of the given files (WalkRecords.cpp) --------------------
  // A class a name leads to (a class of `from`, or one imported from a given
  // file), as a "pyclass" object; nullopt when it leads to none.
  std::optional<Value> classRef(const std::string& dotted, const Module* from);
  Module* classModule(const Value& cls) const;
  // Cls.NAME: a class-level constant (an enum member's value), else unknown.
  Value classAttr(const Value& cls, const std::string& attr, TSNode at);
  // Cls[name] for an Enum: the member whose name is `name` (KeyError otherwise).
  Value enumByName(const Value& cls, const Value& name, TSNode at, Ctx& cx);
  // Cls(...) for a dataclass or NamedTuple: a record of its annotated fields.
  Value constructRecord(const Value& cls, TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  // dataclasses.replace(r, f=v) / r._replace(f=v).
  Value replaceRecord(const Value& rec, const Args& a, std::size_t first_kw_pos, TSNode call, State& st, Frame& fr,
                      Ctx& cx);
  // r.f, through merges; nullopt when `v` is no record (or lacks f on some path).
  std::optional<Value> recordField(const Value& v, const std::string& f);
  std::map<std::string, std::map<std::string, Value>> class_attr_memo_;
  std::optional<Value> classOf(const Value& v) const;
  const FuncInfo* memberDef(const Value& v, const std::string& attr) const;
  // v.m(...) / v.prop for a record or an Enum member: the class's def inlined
  // with self = v; nullopt when v's class has no such def.
  std::optional<Value> memberCall(const Value& v, const std::string& attr, bool property, TSNode call, const Args& a,
                                  State& st, Frame& fr, Ctx& cx);
  // An unknown result of a def annotated `-> Cls` (a record class): a Cls
  // record with unknown fields.
  std::optional<Value> typedUnknown(TSNode ann, const Module* in, TSNode call, const std::string& prefix, int depth = 0);
  Value evalDict(TSNode n, State& st, Frame& fr, Ctx& cx);
  Value dictLookup(const Value& d, const Value& key, const Value* dflt, TSNode at, Ctx& cx);

  // --- policy gate and selection layer (WalkPolicy.cpp) -----------------------------
  model::Gate runPolicy();
  // A value the gate hands down to C++: Gate::outputs and Gate::bound.
  void handDown(const std::string& var, const std::string& field, const Value& v, const Location& where,
                Sort sort = Sort::Int);
  // Per-call hand-downs (python.call_outputs), Walker.cpp.
  void walkPerMessage(const FuncInfo& m, const std::map<std::string, Value>& snapshot, Frame& fr);
  void callOutputs(const std::map<std::string, Value>& snapshot);
  void captureCallOutput(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx);
  struct Capture {
    ExprPtr reached;
    Value value;
    Location where;
  };
  const target::PythonGateSpec::CallOutput* call_out_ = nullptr;
  std::vector<Capture> captures_;
  // Parses and declares every file, then finds the first module-level function
  // named in `names`; walks its module's body. nullptr when no file defines one.
  const FuncInfo* setupFunction(const std::vector<std::string>& names, std::string& fname);

  // --- structure ----------------------------------------------------------------
  void pruneTentative();
  // Throws at the first construct the walker refuses in m (a syntax error,
  // or Python 2 that the grammar still accepts).
  void checkSyntax(const Module& m);
  static TSNode firstRefused(TSNode root);  // null: none
  std::vector<TSNode> findClasses(TSNode root, const std::string& name);
  TSNode findEnabling(TSNode fn);

  // --- fix sites (WalkFixSite.cpp) ------------------------------------------------
  // The enabling statement's state, captured when the constructor's walk reaches it.
  TSNode enabling_stmt_{};
  bool enabling_seen_ = false;
  std::map<std::string, Value> enabling_locals_, enabling_attrs_;
  void captureEnabling(TSNode stmt, const State& st);
  // Gate::guard_site: in the per-call method `pc` (attributes as `snapshot`
  // holds them), else before the enabling statement `en`; `builder`: the gate
  // is a module-level function (no statement to guard).
  void findGuardSite(const FuncInfo* pc, const std::map<std::string, Value>& snapshot, TSNode en, bool builder);
  std::optional<std::string> lineIndent(TSNode n) const;
};

}  // namespace layergate::python::detail
