// The dispatch walker's state and members (internal to lg_cpp): one Walker
// per walk; its members are defined in DispatchLaunch.cpp, DispatchEval.cpp and
// DispatchWalker.cpp, by section.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"
#include "cpp/DispatchWalker.h"
#include "model/Model.h"
#include "target/Target.h"

namespace layergate::cpp::detail::walker {

using namespace clang;
namespace m = layergate::model;
using m::ExprPtr;

// ---------------------------------------------------------------------------
// Symbolic values.

struct Val {
  enum Kind { Unknown, Bool, Int, Str, Ptr } kind = Unknown;
  ExprPtr e;        // Bool/Int/Str: the value; Ptr: the string pointed to (Str)
  ExprPtr nonnull;  // Ptr: whether the pointer is non-null
  static Val unknown() { return {}; }
  static Val boolean(ExprPtr x) { return {Bool, std::move(x), nullptr}; }
  static Val integer(ExprPtr x) { return {Int, std::move(x), nullptr}; }
  static Val ptr(ExprPtr nn, ExprPtr s) { return {Ptr, std::move(s), std::move(nn)}; }
};

struct LaunchInfo {
  std::string kernel;
  SourceLocation loc;
  // 2: the kernel is named where the dispatch launches it (<<<>>>, a launch
  // API, or a launch helper given the kernel as an argument); 1: a helper
  // launches a kernel of its own (a copy before the real launch). A path keeps
  // its first launch of the highest rank.
  int rank = 2;
};

struct KernelAt {
  std::string name;
  int rank = 2;
};

struct Reason {
  std::string text;
  SourceLocation loc;
  int prio = 0;  // 2: an arm without launch beside arms that launch; 1: any other implicit arm
  const IfStmt* no_else = nullptr;  // the reason is this if's missing else (for the unsafe fix)
};

// The locals of one path, shared between the paths a branch forks until one
// of them writes (a switch forks a state per case label; copying every map
// was a tenth of a dispatch walk).
class Locals {
 public:
  using Map = std::map<const VarDecl*, Val>;
  const Val* find(const VarDecl* v) const {
    if (!m_) return nullptr;
    auto it = m_->find(v);
    return it == m_->end() ? nullptr : &it->second;
  }
  void set(const VarDecl* v, Val x) { mut()[v] = std::move(x); }
  const Map& view() const {
    static const Map empty;
    return m_ ? *m_ : empty;
  }
  Map& mut() {
    if (!m_) m_ = std::make_shared<Map>();
    else if (m_.use_count() > 1) m_ = std::make_shared<Map>(*m_);
    return *m_;
  }
  bool sharedWith(const Locals& o) const { return m_ == o.m_; }

 private:
  std::shared_ptr<Map> m_;
};

struct State {
  ExprPtr pc = m::True();
  Locals locals;
  std::map<std::string, ExprPtr> facts;  // config var name -> constant known on this path
  std::optional<LaunchInfo> launch;
  Reason reason;
};

struct Flow {
  std::vector<State> normal, breaks, continues;
};

struct RawLeaf {
  m::LeafKind kind;
  ExprPtr cond;
  std::string kernel, text;
  SourceLocation loc;
  const IfStmt* no_else = nullptr;
};

// AST helpers shared by the sections (DispatchLaunch.cpp).
const Expr* strip(const Expr* e);
const Expr* stripCasts(const Expr* e);
std::string calleeName(const Expr* callee);

// ---------------------------------------------------------------------------

class Walker {
 public:
  Walker(ASTContext& ctx, const target::CppDispatchSpec& spec, const WalkOptions& opts)
      : ctx_(ctx), sm_(ctx.getSourceManager()), spec_(spec), opts_(opts) {}

  void setClass(const CXXRecordDecl* rd) { current_class_ = rd; }

  // --- launch discovery, in DispatchLaunch.cpp ---------------------------------

  std::vector<const FunctionDecl*> calleesOf(const CallExpr* call);
  std::string kernelOfFunction(const FunctionDecl* fd);
  std::string kernelArgName(const Expr* a, int depth = 0);
  std::optional<KernelAt> launchAt(const Stmt* s);
  std::optional<LaunchInfo> findLaunch(const Stmt* root);

  // --- text and locations, in DispatchEval.cpp ---------------------------------

  static std::string squash(llvm::StringRef in);
  std::string textOf(const Stmt* e);
  m::Location loc(SourceLocation l, bool spelling, const char* role, const std::string& note = {});

  // --- opaques and config variables, in DispatchEval.cpp -----------------------

  ExprPtr opaque(const std::string& text, m::Sort sort, SourceLocation where);
  // The opaque term of an expression (its text); inside a template pattern,
  // one made of a dependent expression is remembered (TemplateFrame).
  ExprPtr opaqueOf(const Expr* e, m::Sort sort);
  ExprPtr configVar(const std::string& name, m::Sort sort, const State& st);
  Val memberVal(const std::string& member, QualType type, const State& st);
  void noteEnv(const std::string& name);
  // The target's variable in the bytes role, as the path knows it; nullptr
  // when the target declares none (the expression is then evaluated as any).
  ExprPtr byteCount(const State& st);
  bool isByteCountName(llvm::StringRef n) const;
  static bool containsSizeof(const Stmt* s);
  static bool isSizeofProduct(const Expr* e);

  // --- expression evaluation, in DispatchEval.cpp ------------------------------

  static m::Sort sortOfType(QualType t);
  static bool isStringType(QualType t);
  Val opaqueOfType(const Expr* e);
  static bool readsEnv(const Stmt* s);
  std::optional<std::int64_t> constInt(const Expr* e);
  ExprPtr asBool(const Val& v, const Expr* e);
  ExprPtr asInt(const Val& v, const Expr* e);
  static ExprPtr cmp(m::Op op, ExprPtr a, ExprPtr b);
  static bool strParts(const Val& v, ExprPtr& nonnull, ExprPtr& s);
  Val compare(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st);
  Val arith(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st);
  std::optional<std::string> literalString(const Expr* e);
  Val evalCall(const CallExpr* c, State& st);
  Val convert(const Val& v, QualType to, const Expr* e);
  Val eval(const Expr* e, State& st);
  Val evalInner(const Expr* e, State& st);
  ExprPtr condition(const Expr* e, State& st);
  static void addFacts(State& st, const ExprPtr& c, bool truth);

  // --- joining paths, in DispatchWalker.cpp ------------------------------------

  static void conjuncts(const ExprPtr& e, std::vector<ExprPtr>& out);
  static bool same(const ExprPtr& a, const ExprPtr& b);
  static bool contains(const std::vector<ExprPtr>& xs, const ExprPtr& x);
  static ExprPtr orMerge(const ExprPtr& a, const ExprPtr& b);
  static bool sameVal(const Val& a, const Val& b);
  std::string stateKey(const State& st);
  void mergeStates(std::vector<State>& states);

  // --- statements, in DispatchWalker.cpp ---------------------------------------

  void checkPaths(std::size_t n, const Stmt* at);
  void setReason(State& st, std::string text, SourceLocation where, int prio, const IfStmt* no_else = nullptr);
  bool effects(const Expr* e, State& st);
  void assign(const Expr* lhs, const Val& v, State& st);
  void assignments(const Expr* e, State& st);
  Val initValue(const VarDecl* vd, State& st);
  void execDecl(const DeclStmt* ds, std::vector<State>& states, std::vector<State>& alive);
  Flow exec(const Stmt* s, std::vector<State> in, int depth);
  Flow execIf(const IfStmt* is, std::vector<State> in, int depth);
  struct CaseLabel {
    const SwitchCase* label;
    std::size_t index;  // position in the flattened body
  };
  Flow execSwitch(const SwitchStmt* sw, std::vector<State> in, int depth);
  Flow execLoop(const Stmt* s, std::vector<State> in, int depth);
  std::optional<Flow> followCall(const Expr* e, std::vector<State>& in, int depth);
  // The pattern to walk for a call of fd, an implicit specialization of a
  // function template (its template's value parameters then bound to fd's
  // arguments); null when fd is none or its pattern is not walked so.
  const FunctionDecl* patternToWalk(const FunctionDecl* fd);
  // Expressions the target declares (cpp.values), by their text without blanks.
  std::optional<Val> declaredVal(const Expr* e);
  // A test of the element type (`std::is_same_v<T, half>`,
  // `std::is_same<T, half>::value`) as a test of the variable in the
  // element role; nullopt when e is none (or the target declares none).
  std::optional<Val> elementTypeTest(const Expr* e);
  // The dispatch's type template parameter that its pointer parameters point
  // to (`T* input`): the element type, as (depth, index); set by run().
  void findElementParam(const FunctionDecl* fd);

  // --- preconditions (cpp.preconditions), in DispatchLaunch.cpp ----------------

  struct Precondition {
    const Expr* cond;
    std::string message;
    SourceLocation loc;
  };

  bool isPreconditionName(llvm::StringRef n) const;
  bool inPreconditionMacro(SourceLocation l) const;
  static std::string typeName(QualType t);
  std::string checkMessage(llvm::ArrayRef<const Expr*> rest);
  std::optional<Precondition> preconditionOf(const Expr* e);
  bool precondition(const Precondition& p, State& st);

  // --- leaves, in DispatchWalker.cpp -------------------------------------------

  void finishThrow(State& st, const CXXThrowExpr* t);
  void throwLeaf(const ExprPtr& pc, const std::string& msg, SourceLocation where);
  void finishEnd(State& st, SourceLocation end);

  // --- facts for the unsafe fix (cpp/FixFacts.h), in DispatchWalker.cpp --------

  bool readsNvlink(const ExprPtr& c) const;
  bool testsNvlink(const IfStmt* is);
  m::ElseSite elseSiteOf(const RawLeaf& r, const Stmt* body);
  void noteOnce(const std::string& n);

  // --- driver, in DispatchWalker.cpp -------------------------------------------

  m::Dispatch run(const FunctionDecl* fd);
  // A check written in C++ (a function returning bool that a Python gate
  // calls through an op): the condition under which it returns true, its
  // bool and integer parameters as Var("param:NAME"); the opaque terms it
  // reads, with their locations.
  ExprPtr runPredicate(const FunctionDecl* fd, std::vector<m::OpaqueSymbol>& opaques);

 private:
  ASTContext& ctx_;
  SourceManager& sm_;
  const target::CppDispatchSpec& spec_;
  const WalkOptions& opts_;
  const CXXRecordDecl* current_class_ = nullptr;
  std::string fn_name_;
  std::map<const FunctionDecl*, std::string> fn_memo_;
  std::map<const Stmt*, std::optional<LaunchInfo>> stmt_memo_;
  std::map<std::string, SourceLocation> opaque_where_;
  std::vector<std::string> env_reads_;
  std::vector<std::string> notes_;
  std::vector<RawLeaf> raw_;
  std::set<const IfStmt*> nvlink_ifs_;  // ifs whose condition read the NVLink flag on some path
  std::unique_ptr<ParentMap> parents_;
  std::set<const VarDecl*> globals_in_eval_;
  // Launches clang dropped (a kernel whose types come from a missing header
  // is invalid, and its launches vanish without a diagnostic in the
  // dispatch): blocks whose source text launches (`<<<`, or a macro whose
  // definition does) but whose AST holds no launch.
  std::optional<std::string> droppedLaunch(const CompoundStmt* cs);
  std::map<const CompoundStmt*, std::optional<std::string>> dropped_memo_;
  std::optional<std::set<std::string>> launching_macros_;
  std::set<std::string> launchingMacros();
  bool textLaunches(const Stmt* s, const std::set<std::string>& macros);
  Reached* reached_ = nullptr;           // where the walk went (set by walkDispatch's caller)
  std::map<const Stmt*, std::vector<ExprPtr>> stmt_pc_;  // the conditions of the paths that ran it
 public:
  void recordReach(Reached* r) { reached_ = r; }
 private:
  bool predicate_mode_ = false;          // runPredicate: returns are the result, not leaves
  ExprPtr returns_true_ = m::False();
  // Functions the walk entered (cpp.follow_calls), innermost last, and where
  // each one's returns go.
  std::vector<const FunctionDecl*> entered_;
  std::vector<std::vector<State>*> inline_returns_;
  // What a followed function does, per function and argument values: its
  // throws and its ways back (one per kernel it launched first).
  struct CallSummary {
    struct Exit {
      ExprPtr pc;
      std::optional<LaunchInfo> launch;
    };
    std::vector<RawLeaf> leaves;
    std::vector<Exit> exits;
  };
  std::map<std::string, CallSummary> summaries_;
  CallSummary summarise(const FunctionDecl* def, const std::vector<Val>& args, int depth);
  // A followed specialization of a function template is walked as its
  // pattern, its template's value parameters (HEAD_SIZE, BLOCK_SIZE, a bool
  // or an enum) bound to the specialization's arguments: clang need not
  // instantiate it, and the specializations that differ only in arguments
  // the body never reads share one walk. A walk whose result rests on what
  // only the instantiation knows (a type parameter, a call the
  // instantiation would resolve and follow) is dropped for the
  // instantiation's.
  struct TemplateFrame {
    std::map<const NamedDecl*, Val> bound;
    std::set<const NamedDecl*> read;   // bound parameters the walk evaluated
    std::set<std::string> dependent;   // opaque terms made of dependent expressions
    bool unresolved = false;           // a dependent call to a function of the user's files
  };
  std::vector<TemplateFrame> tframes_;
  struct PatternSummary {
    std::vector<std::pair<const NamedDecl*, ExprPtr>> reads;  // the bound values it read
    CallSummary summary;
  };
  std::map<std::string, std::vector<PatternSummary>> pattern_summaries_;
  std::set<const FunctionDecl*> pattern_failed_;  // patterns walked through their instantiations
  std::set<const FunctionDecl*> pattern_checked_;  // patterns looked at for clang errors
  int eval_depth_ = 0;
  std::optional<std::pair<unsigned, unsigned>> element_param_;
};

}  // namespace layergate::cpp::detail::walker
