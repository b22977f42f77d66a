// Path enumeration over the dispatch body: statements are executed
// symbolically over sets of path states; each path ends in a leaf (launch,
// throw, or none). Conditions become model::Expr over config variables;
// whatever is not understood becomes an opaque symbol named after its text.
#include "cpp/DispatchWalker.h"

#include "cpp/FixFacts.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/raw_ostream.h"
#include "model/Errors.h"

namespace layergate::cpp::detail {
namespace {

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

struct State {
  ExprPtr pc = m::True();
  std::map<const VarDecl*, Val> locals;
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

const Expr* strip(const Expr* e) {
  while (e) {
    if (auto* p = dyn_cast<ParenExpr>(e)) e = p->getSubExpr();
    else if (auto* c = dyn_cast<ExprWithCleanups>(e)) e = c->getSubExpr();
    else if (auto* t = dyn_cast<MaterializeTemporaryExpr>(e)) e = t->getSubExpr();
    else if (auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) e = b->getSubExpr();
    else if (auto* ce = dyn_cast<ConstantExpr>(e)) e = ce->getSubExpr();
    else break;
  }
  return e;
}

const Expr* stripCasts(const Expr* e) {
  while (true) {
    e = strip(e);
    if (auto* c = dyn_cast_or_null<CastExpr>(e)) e = c->getSubExpr();
    else return e;
  }
}

std::string calleeName(const Expr* callee) {
  callee = stripCasts(callee);
  if (!callee) return {};
  if (auto* d = dyn_cast<DeclRefExpr>(callee)) return d->getDecl()->getNameAsString();
  if (auto* u = dyn_cast<UnresolvedLookupExpr>(callee)) return u->getName().getAsString();
  if (auto* u = dyn_cast<UnresolvedMemberExpr>(callee)) return u->getMemberName().getAsString();
  if (auto* me = dyn_cast<MemberExpr>(callee)) return me->getMemberDecl()->getNameAsString();
  if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(callee)) return dm->getMember().getAsString();
  if (auto* ds = dyn_cast<DependentScopeDeclRefExpr>(callee)) return ds->getDeclName().getAsString();
  return {};
}

bool isLaunchApi(const std::string& n) {
  return n == "cudaLaunchKernel" || n == "cudaLaunchKernelEx" || n == "cudaLaunchCooperativeKernel" ||
         n == "cudaLaunchKernelExC" || n == "hipLaunchKernelGGL" || n == "hipLaunchKernel" ||
         n == "cuLaunchKernel" || n == "cuLaunchKernelEx";
}

// The name of the function an expression refers to (a kernel argument of a
// launch API, possibly cast or address-taken).
std::string functionRefName(const Expr* e) {
  e = stripCasts(e);
  if (auto* u = dyn_cast_or_null<UnaryOperator>(e))
    if (u->getOpcode() == UO_AddrOf) e = stripCasts(u->getSubExpr());
  if (!e) return {};
  if (auto* d = dyn_cast<DeclRefExpr>(e))
    if (isa<FunctionDecl>(d->getDecl())) return d->getDecl()->getNameAsString();
  if (auto* u = dyn_cast<UnresolvedLookupExpr>(e)) return u->getName().getAsString();
  return {};
}

// ---------------------------------------------------------------------------

class Walker {
 public:
  Walker(ASTContext& ctx, const target::CppDispatchSpec& spec, const WalkOptions& opts)
      : ctx_(ctx), sm_(ctx.getSourceManager()), spec_(spec), opts_(opts) {}

  void setClass(const CXXRecordDecl* rd) { current_class_ = rd; }

  // --- launch discovery ------------------------------------------------------

  // Functions (or templates' patterns) a call may reach that have bodies in
  // user code.
  std::vector<const FunctionDecl*> calleesOf(const CallExpr* call) {
    std::vector<const FunctionDecl*> out;
    auto add = [&](const NamedDecl* nd) {
      if (!nd) return;
      const FunctionDecl* fd = nullptr;
      if (auto* ft = dyn_cast<FunctionTemplateDecl>(nd)) fd = ft->getTemplatedDecl();
      else fd = dyn_cast<FunctionDecl>(nd);
      if (!fd) return;
      if (auto* pat = fd->getTemplateInstantiationPattern()) fd = pat;
      const FunctionDecl* def = nullptr;
      if (!fd->getBody(def) || !def) return;
      if (def->hasAttr<CUDAGlobalAttr>()) return;
      if (opts_.is_user_code && !opts_.is_user_code(def->getLocation())) return;
      out.push_back(def);
    };
    if (auto* fd = call->getDirectCallee()) add(fd);
    if (!out.empty()) return out;
    const Expr* callee = stripCasts(call->getCallee());
    if (auto* u = dyn_cast_or_null<OverloadExpr>(callee)) {
      for (auto* d : u->decls()) add(d->getUnderlyingDecl());
    } else if (auto* me = dyn_cast_or_null<MemberExpr>(callee)) {
      add(me->getMemberDecl());
    } else if (callee && !callee->getType().isNull() && !callee->getType()->isDependentType() &&
               callee->getType()->getAsCXXRecordDecl()) {
      // A functor called with dependent arguments (`Launcher(grid, block)(kernel<T>, args)`):
      // its call operators.
      const CXXRecordDecl* rd = callee->getType()->getAsCXXRecordDecl();
      if (rd->hasDefinition())
        for (auto* nd : rd->getDefinition()->lookup(ctx_.DeclarationNames.getCXXOperatorName(OO_Call))) add(nd);
    } else if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(callee)) {
      // this->helper<T>(...) in a template: look the name up in the class.
      if (current_class_)
        for (auto* d : current_class_->decls())
          if (auto* nd = dyn_cast<NamedDecl>(d))
            if (nd->getDeclName() == dm->getMember()) add(nd);
    }
    return out;
  }

  // The first kernel a function body launches (directly or through calls).
  std::string kernelOfFunction(const FunctionDecl* fd) {
    auto it = fn_memo_.find(fd);
    if (it != fn_memo_.end()) return it->second;
    fn_memo_[fd] = "";  // cycle guard
    std::string k;
    if (auto l = findLaunch(fd->getBody())) k = l->kernel;
    fn_memo_[fd] = k;
    return k;
  }

  // The kernel an argument of a launch helper names: a function, a local
  // initialised from one (each arm of a conditional), else its text.
  std::string kernelArgName(const Expr* a, int depth = 0) {
    const Expr* e = stripCasts(a);
    if (auto* u = dyn_cast_or_null<UnaryOperator>(e); u && u->getOpcode() == UO_AddrOf) e = stripCasts(u->getSubExpr());
    std::string f = functionRefName(a);
    if (!f.empty() || depth > 8) return f;
    if (auto* co = dyn_cast_or_null<ConditionalOperator>(e)) {
      std::string t = kernelArgName(co->getTrueExpr(), depth + 1), x = kernelArgName(co->getFalseExpr(), depth + 1);
      if (t.empty() || x.empty()) return {};
      return t == x ? t : t + " | " + x;
    }
    if (auto* d = dyn_cast_or_null<DeclRefExpr>(e))
      if (auto* vd = dyn_cast<VarDecl>(d->getDecl()); vd && vd->hasLocalStorage() && !isa<ParmVarDecl>(vd))
        if (const Expr* init = vd->getInit()) return kernelArgName(init, depth + 1);
    // A kernel held by a (static, constexpr) variable or a variable template
    // (`kernel_pull<1, Graph>`): its name, without template arguments as for
    // functions.
    if (auto* d = dyn_cast_or_null<DeclRefExpr>(e)) {
      if (auto* vd = dyn_cast<VarDecl>(d->getDecl()); vd && !vd->hasLocalStorage()) return vd->getNameAsString();
      return {};
    }
    if (auto* o = dyn_cast_or_null<OverloadExpr>(e)) return o->getName().getAsString();
    if (auto* ds = dyn_cast_or_null<DependentScopeDeclRefExpr>(e)) return ds->getDeclName().getAsString();
    if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(e)) return dm->getMember().getAsString();
    return {};
  }

  // Kernel launched by this node itself (not its children), if any.
  std::optional<KernelAt> launchAt(const Stmt* s) {
    if (auto* k = dyn_cast<CUDAKernelCallExpr>(s)) {
      std::string n = calleeName(k->getCallee());
      return KernelAt{n.empty() ? std::string("<kernel>") : n, 2};
    }
    if (auto* c = dyn_cast<CallExpr>(s)) {
      std::string n = calleeName(c->getCallee());
      if (isLaunchApi(n)) {
        for (const Expr* a : c->arguments()) {
          std::string k = functionRefName(a);
          if (!k.empty()) return KernelAt{k, 2};
        }
        // The kernel is a parameter of a launch helper (`launch(Kernel kernel,
        // ...)`): its name, which the helper's call site resolves to the
        // argument (see below).
        for (const Expr* a : c->arguments())
          if (auto* d = dyn_cast<DeclRefExpr>(stripCasts(a)))
            if (auto* p = dyn_cast<ParmVarDecl>(d->getDecl()))
              if (p->getType()->isDependentType() || p->getType()->isFunctionPointerType() ||
                  p->getType().getNonReferenceType()->isFunctionPointerType())
                return KernelAt{p->getNameAsString(), 2};
        return KernelAt{n, 2};
      }
      for (const FunctionDecl* fd : calleesOf(c)) {
        std::string k = kernelOfFunction(fd);
        if (k.empty()) continue;
        // A launch helper that launches its parameter (`kernel<<<...>>>`
        // with `kernel` a parameter): the kernel is the argument passed.
        // (A call operator's object is not among the arguments of a plain
        // CallExpr on a dependent functor, but is argument 0 of a resolved
        // CXXOperatorCallExpr.)
        unsigned shift = isa<CXXOperatorCallExpr>(c) && isa<CXXMethodDecl>(fd) ? 1 : 0;
        for (unsigned i = 0; i < fd->getNumParams() && i + shift < c->getNumArgs(); ++i)
          if (fd->getParamDecl(i)->getName() == k) {
            std::string a = kernelArgName(c->getArg(i + shift));
            return KernelAt{a.empty() ? k : a, 2};
          }
        // An immediately invoked lambda (`[&] { ... }()`, AT_DISPATCH) is
        // the dispatch's own code; a named helper's kernel ranks lower.
        bool inlineLambda = false;
        if (auto* oc = dyn_cast<CXXOperatorCallExpr>(c); oc && oc->getNumArgs() >= 1)
          inlineLambda = isa<LambdaExpr>(stripCasts(oc->getArg(0)));
        else if (c->getCallee())
          inlineLambda = isa<LambdaExpr>(stripCasts(c->getCallee()));
        return KernelAt{k, inlineLambda ? 2 : 1};
      }
    }
    return std::nullopt;
  }

  // First launch in source order in a statement tree (lambdas included, but
  // not a lambda's declaration `auto f = [&] {...};`: its calls launch).
  std::optional<LaunchInfo> findLaunch(const Stmt* root) {
    if (!root) return std::nullopt;
    if (auto* e = dyn_cast<Expr>(root); e && isa<LambdaExpr>(stripCasts(e))) return std::nullopt;
    auto memo = stmt_memo_.find(root);
    if (memo != stmt_memo_.end()) return memo->second;
    std::optional<LaunchInfo> found;
    std::vector<const Stmt*> stack{root};
    while (!stack.empty() && !found) {
      const Stmt* s = stack.back();
      stack.pop_back();
      if (!s) continue;
      if (auto k = launchAt(s)) {
        found = LaunchInfo{k->name, s->getBeginLoc(), k->rank};
        break;
      }
      if (auto* ds = dyn_cast<DeclStmt>(s)) {
        std::vector<const Decl*> decls(ds->decl_begin(), ds->decl_end());
        for (auto it = decls.rbegin(); it != decls.rend(); ++it)
          if (auto* vd = dyn_cast<VarDecl>(*it))
            if (const Expr* init = vd->getInit(); init && !isa<LambdaExpr>(stripCasts(init))) stack.push_back(init);
        continue;
      }
      std::vector<const Stmt*> kids(s->child_begin(), s->child_end());
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    stmt_memo_[root] = found;
    return found;
  }

  // --- text and locations ------------------------------------------------------

  static std::string squash(llvm::StringRef in) {
    std::string out;
    bool space = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
      char c = in[i];
      if (c == '\\' && i + 1 < in.size() && (in[i + 1] == '\n' || in[i + 1] == '\r')) {
        space = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        space = true;
        continue;
      }
      if (space && !out.empty()) out += ' ';
      space = false;
      out += c;
    }
    return out;
  }

  std::string textOf(const Stmt* e) {
    if (!e) return "?";
    const LangOptions& lo = ctx_.getLangOpts();
    SourceLocation b = sm_.getSpellingLoc(e->getBeginLoc());
    SourceLocation en = sm_.getSpellingLoc(e->getEndLoc());
    if (b.isValid() && en.isValid() && sm_.getFileID(b) == sm_.getFileID(en)) {
      unsigned ob = sm_.getFileOffset(b), oe = sm_.getFileOffset(en);
      if (ob <= oe && oe - ob < 400) {
        llvm::StringRef t = Lexer::getSourceText(CharSourceRange::getTokenRange(b, en), sm_, lo);
        if (!t.empty() && !t.contains("#define")) return squash(t);
      }
    }
    std::string s;
    llvm::raw_string_ostream os(s);
    e->printPretty(os, nullptr, PrintingPolicy(lo));
    return squash(os.str());
  }

  m::Location loc(SourceLocation l, bool spelling, const char* role, const std::string& note = {}) {
    m::Location out;
    out.role = role;
    out.note = note;
    if (l.isInvalid()) return out;
    SourceLocation f = spelling ? sm_.getSpellingLoc(l) : sm_.getExpansionLoc(l);
    if (f.isInvalid()) return out;
    out.file = opts_.file_name ? opts_.file_name(f) : sm_.getFilename(f).str();
    out.line = static_cast<int>(sm_.getSpellingLineNumber(f));
    out.col = static_cast<int>(sm_.getSpellingColumnNumber(f));
    return out;
  }

  // --- opaques and config variables -------------------------------------------

  ExprPtr opaque(const std::string& text, m::Sort sort, SourceLocation where) {
    if (!opaque_where_.count(text)) opaque_where_[text] = where;
    return m::Var(text, sort, m::VarKind::Opaque);
  }

  ExprPtr configVar(const std::string& name, m::Sort sort, const State& st) {
    auto f = st.facts.find(name);
    if (f != st.facts.end() && f->second->sort == sort) return f->second;
    return m::Var(name, sort);
  }

  Val memberVal(const std::string& member, QualType type, const State& st) {
    auto it = spec_.members.find(member);
    if (it == spec_.members.end()) return Val::unknown();
    const std::string& cfg = it->second;
    if (isStringType(type)) return Val{Val::Str, configVar(cfg, m::Sort::Str, st), nullptr};
    m::Sort sort;
    if (cfg == m::kFullNvlink) sort = m::Sort::Bool;
    else if (cfg == m::kWorldSize || cfg == m::kNbytes) sort = m::Sort::Int;
    else sort = (!type.isNull() && type->isBooleanType()) ? m::Sort::Bool : m::Sort::Int;
    ExprPtr v = configVar(cfg, sort, st);
    return sort == m::Sort::Bool ? Val::boolean(v) : Val::integer(v);
  }

  void noteEnv(const std::string& name) {
    for (auto& n : env_reads_)
      if (n == name) return;
    env_reads_.push_back(name);
  }

  bool isByteCountName(llvm::StringRef n) const {
    for (auto& b : spec_.byte_count_names)
      if (n == b) return true;
    return false;
  }

  static bool containsSizeof(const Stmt* s) {
    std::vector<const Stmt*> stack{s};
    while (!stack.empty()) {
      const Stmt* x = stack.back();
      stack.pop_back();
      if (!x) continue;
      if (auto* u = dyn_cast<UnaryExprOrTypeTraitExpr>(x))
        if (u->getKind() == UETT_SizeOf) return true;
      for (auto* c : x->children()) stack.push_back(c);
    }
    return false;
  }

  // A product in which one factor involves sizeof(...): a byte count.
  static bool isSizeofProduct(const Expr* e) {
    std::vector<const Stmt*> stack{e};
    while (!stack.empty()) {
      const Stmt* x = stack.back();
      stack.pop_back();
      if (!x) continue;
      if (auto* b = dyn_cast<BinaryOperator>(x))
        if (b->getOpcode() == BO_Mul && (containsSizeof(b->getLHS()) || containsSizeof(b->getRHS())))
          return true;
      if (auto* op = dyn_cast<CXXOperatorCallExpr>(x))
        if (op->getOperator() == OO_Star && op->getNumArgs() == 2 &&
            (containsSizeof(op->getArg(0)) || containsSizeof(op->getArg(1))))
          return true;
      if (isa<CallExpr>(x) && !isa<CXXOperatorCallExpr>(x)) continue;  // f(sizeof(T) * n) is not the count
      for (auto* c : x->children()) stack.push_back(c);
    }
    return false;
  }

  // --- expression evaluation -----------------------------------------------------

  static m::Sort sortOfType(QualType t) { return t->isBooleanType() ? m::Sort::Bool : m::Sort::Int; }

  static bool isStringType(QualType t) {
    if (t.isNull()) return false;
    t = t.getNonReferenceType();
    if (auto* rd = t->getAsCXXRecordDecl()) {
      auto n = rd->getName();
      return n == "basic_string" || n == "basic_string_view" || n == "string" || n == "string_view";
    }
    std::string s = t.getAsString();
    return s.find("std::string") != std::string::npos || s.find("string_view") != std::string::npos ||
           s.find("basic_string") != std::string::npos;
  }

  // Opaque leaf for a name or member not understood, by its type.
  Val opaqueOfType(const Expr* e) {
    QualType t = e->getType();
    if (t.isNull() || t->isDependentType()) return Val::unknown();
    if (t->isBooleanType()) return Val::boolean(opaque(textOf(e), m::Sort::Bool, e->getBeginLoc()));
    if (t->isIntegralOrEnumerationType()) return Val::integer(opaque(textOf(e), m::Sort::Int, e->getBeginLoc()));
    return Val::unknown();
  }

  static bool readsEnv(const Stmt* s) {
    std::vector<const Stmt*> stack{s};
    while (!stack.empty()) {
      const Stmt* x = stack.back();
      stack.pop_back();
      if (!x) continue;
      if (auto* c = dyn_cast<CallExpr>(x)) {
        std::string n = calleeName(c->getCallee());
        if (n == "getenv" || n == "secure_getenv") return true;
      }
      for (auto* k : x->children()) stack.push_back(k);
    }
    return false;
  }

  std::optional<std::int64_t> constInt(const Expr* e) {
    if (!e || e->isValueDependent() || e->isTypeDependent() || e->containsErrors()) return std::nullopt;
    QualType t = e->getType();
    if (t.isNull() || !(t->isIntegralOrEnumerationType())) return std::nullopt;
    Expr::EvalResult r;
    if (e->EvaluateAsInt(r, ctx_, Expr::SE_NoSideEffects) && r.Val.isInt())
      return r.Val.getInt().getExtValue();
    return std::nullopt;
  }

  ExprPtr asBool(const Val& v, const Expr* e) {
    switch (v.kind) {
      case Val::Bool: return v.e;
      case Val::Int: return cmp(m::Op::Ne, v.e, m::IntC(0));
      case Val::Ptr: return v.nonnull;
      case Val::Str: return m::True();
      case Val::Unknown: break;
    }
    return opaque(textOf(e), m::Sort::Bool, e->getBeginLoc());
  }

  ExprPtr asInt(const Val& v, const Expr* e) {
    switch (v.kind) {
      case Val::Int: return v.e;
      case Val::Bool: return m::Ite(v.e, m::IntC(1), m::IntC(0));
      default: break;
    }
    return nullptr;
  }

  // Cmp with folding through Ite of constants: (0 if c else 1) == 0  ->  c.
  static ExprPtr cmp(m::Op op, ExprPtr a, ExprPtr b) {
    if (a->op == m::Op::Ite && m::isConst(b) && m::isConst(a->args[1]) && m::isConst(a->args[2]))
      return m::Ite(a->args[0], m::Cmp(op, a->args[1], b), m::Cmp(op, a->args[2], b));
    if (b->op == m::Op::Ite && m::isConst(a) && m::isConst(b->args[1]) && m::isConst(b->args[2]))
      return m::Ite(b->args[0], m::Cmp(op, a, b->args[1]), m::Cmp(op, a, b->args[2]));
    return m::Cmp(op, std::move(a), std::move(b));
  }

  // String-ish value: Ptr or Str -> (nonnull, str).
  static bool strParts(const Val& v, ExprPtr& nonnull, ExprPtr& s) {
    if (v.kind == Val::Ptr) {
      nonnull = v.nonnull;
      s = v.e;
      return s != nullptr;
    }
    if (v.kind == Val::Str) {
      nonnull = m::True();
      s = v.e;
      return true;
    }
    return false;
  }

  Val compare(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st) {
    m::Op op;
    switch (opc) {
      case BO_EQ: op = m::Op::Eq; break;
      case BO_NE: op = m::Op::Ne; break;
      case BO_LT: op = m::Op::Lt; break;
      case BO_LE: op = m::Op::Le; break;
      case BO_GT: op = m::Op::Gt; break;
      case BO_GE: op = m::Op::Ge; break;
      default: return Val::unknown();
    }
    Val a = eval(lhs, st), b = eval(rhs, st);
    // Pointer null tests: getenv(X) != nullptr.
    auto isNull = [](const Val& v) { return v.kind == Val::Ptr && m::isFalse(v.nonnull); };
    auto isZeroInt = [](const Val& v) { return v.kind == Val::Int && v.e->op == m::Op::IntConst && v.e->i == 0; };
    if ((op == m::Op::Eq || op == m::Op::Ne) && a.kind == Val::Ptr && (isNull(b) || isZeroInt(b)))
      return Val::boolean(op == m::Op::Eq ? m::Not(a.nonnull) : a.nonnull);
    if ((op == m::Op::Eq || op == m::Op::Ne) && b.kind == Val::Ptr && (isNull(a) || isZeroInt(a)))
      return Val::boolean(op == m::Op::Eq ? m::Not(b.nonnull) : b.nonnull);
    // String equality: std::string(getenv(X)) == "v", strcmp handled in eval.
    ExprPtr an, as, bn, bs;
    if ((op == m::Op::Eq || op == m::Op::Ne) && strParts(a, an, as) && strParts(b, bn, bs) &&
        (a.kind == Val::Str || b.kind == Val::Str || isStringType(lhs->getType()) || isStringType(rhs->getType()))) {
      ExprPtr eq = m::And(m::And(an, bn), m::Cmp(m::Op::Eq, as, bs));
      return Val::boolean(op == m::Op::Eq ? eq : m::Not(eq));
    }
    if (a.kind == Val::Bool && b.kind == Val::Bool && (op == m::Op::Eq || op == m::Op::Ne)) {
      ExprPtr eq = m::Or(m::And(a.e, b.e), m::And(m::Not(a.e), m::Not(b.e)));
      if (m::isConst(b.e)) eq = b.e->b ? a.e : m::Not(a.e);
      else if (m::isConst(a.e)) eq = a.e->b ? b.e : m::Not(b.e);
      return Val::boolean(op == m::Op::Eq ? eq : m::Not(eq));
    }
    ExprPtr x = asInt(a, lhs), y = asInt(b, rhs);
    if (!x || !y) return Val::boolean(opaque(textOf(whole), m::Sort::Bool, whole->getBeginLoc()));
    return Val::boolean(cmp(op, x, y));
  }

  Val arith(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st) {
    if (opc == BO_Mul && (containsSizeof(lhs) || containsSizeof(rhs)))
      return Val::integer(configVar(m::kNbytes, m::Sort::Int, st));
    Val a = eval(lhs, st), b = eval(rhs, st);
    ExprPtr x = asInt(a, lhs), y = asInt(b, rhs);
    if (!x || !y) return opaqueOfType(whole);
    switch (opc) {
      case BO_Add: return Val::integer(m::Arith(m::Op::Add, x, y));
      case BO_Sub: return Val::integer(m::Arith(m::Op::Sub, x, y));
      case BO_Mul: return Val::integer(m::Arith(m::Op::Mul, x, y));
      case BO_Div: return Val::integer(m::Arith(m::Op::Div, x, y));
      case BO_Rem: return Val::integer(m::Arith(m::Op::Mod, x, y));
      case BO_Shl:
        if (y->op == m::Op::IntConst && y->i >= 0 && y->i < 62)
          return Val::integer(m::Arith(m::Op::Mul, x, m::IntC(std::int64_t(1) << y->i)));
        break;
      case BO_Shr:
        if (y->op == m::Op::IntConst && y->i >= 0 && y->i < 62)
          return Val::integer(m::Arith(m::Op::Div, x, m::IntC(std::int64_t(1) << y->i)));
        break;
      default: break;
    }
    return opaqueOfType(whole);
  }

  // The env var name a getenv argument names, if literal.
  std::optional<std::string> literalString(const Expr* e) {
    e = stripCasts(e);
    if (auto* s = dyn_cast_or_null<StringLiteral>(e)) return s->getString().str();
    if (auto* d = dyn_cast_or_null<DeclRefExpr>(e))
      if (auto* vd = dyn_cast<VarDecl>(d->getDecl()))
        if (vd->getType().isConstQualified() || vd->isConstexpr())
          if (const Expr* init = vd->getInit()) return literalString(init);
    return std::nullopt;
  }

  Val evalCall(const CallExpr* c, State& st) {
    std::string n = calleeName(c->getCallee());
    unsigned na = c->getNumArgs();
    if ((n == "getenv" || n == "secure_getenv") && na == 1) {
      if (auto name = literalString(c->getArg(0))) {
        noteEnv(*name);
        return Val::ptr(configVar(m::envSetVar(*name), m::Sort::Bool, st), m::EnvValue(*name));
      }
      ExprPtr nn = opaque(textOf(c) + " != nullptr", m::Sort::Bool, c->getBeginLoc());
      return Val::ptr(nn, opaque(textOf(c), m::Sort::Str, c->getBeginLoc()));
    }
    if ((n == "strcmp" || n == "strcasecmp") && na == 2) {
      ExprPtr an, as, bn, bs;
      Val a = eval(c->getArg(0), st), b = eval(c->getArg(1), st);
      if (strParts(a, an, as) && strParts(b, bn, bs)) {
        ExprPtr eq = m::And(m::And(an, bn), m::Cmp(m::Op::Eq, as, bs));
        return Val::integer(m::Ite(eq, m::IntC(0), m::IntC(1)));
      }
      return opaqueOfType(c);
    }
    if ((n == "atoi" || n == "atol" || n == "atoll" || n == "stoi" || n == "stol" || n == "stoll" ||
         n == "strtol" || n == "strtoll" || n == "strtoul" || n == "strtoull") && na >= 1) {
      ExprPtr nn, s;
      Val a = eval(c->getArg(0), st);
      if (strParts(a, nn, s)) return Val::integer(m::StrToInt(s));
      return opaqueOfType(c);
    }
    if ((n == "min" || n == "max") && na == 2) {
      Val a = eval(c->getArg(0), st), b = eval(c->getArg(1), st);
      ExprPtr x = asInt(a, c->getArg(0)), y = asInt(b, c->getArg(1));
      if (x && y) {
        ExprPtr lt = cmp(m::Op::Lt, x, y);
        return Val::integer(n == "min" ? m::Ite(lt, x, y) : m::Ite(lt, y, x));
      }
      return opaqueOfType(c);
    }
    if (auto* mc = dyn_cast<CXXMemberCallExpr>(c)) {
      if ((n == "c_str" || n == "data") && mc->getImplicitObjectArgument()) {
        Val o = eval(mc->getImplicitObjectArgument(), st);
        if (o.kind == Val::Ptr || o.kind == Val::Str) return o;
      }
      // std::string algo = env ? env : ""; if (!algo.empty()) ...
      if (n == "empty" && na == 0 && mc->getImplicitObjectArgument() &&
          isStringType(mc->getImplicitObjectArgument()->getType())) {
        ExprPtr nn, s;
        Val o = eval(mc->getImplicitObjectArgument(), st);
        if (strParts(o, nn, s)) return Val::boolean(m::Or(m::Not(nn), m::Cmp(m::Op::Eq, s, m::StrC(""))));
      }
    }
    if (auto* op = dyn_cast<CXXOperatorCallExpr>(c)) {
      BinaryOperatorKind bk;
      bool isBin = true;
      switch (op->getOperator()) {
        case OO_EqualEqual: bk = BO_EQ; break;
        case OO_ExclaimEqual: bk = BO_NE; break;
        case OO_Less: bk = BO_LT; break;
        case OO_LessEqual: bk = BO_LE; break;
        case OO_Greater: bk = BO_GT; break;
        case OO_GreaterEqual: bk = BO_GE; break;
        case OO_AmpAmp: bk = BO_LAnd; break;
        case OO_PipePipe: bk = BO_LOr; break;
        default: isBin = false; break;
      }
      if (isBin && op->getNumArgs() == 2) {
        if (bk == BO_LAnd || bk == BO_LOr) {
          ExprPtr x = asBool(eval(op->getArg(0), st), op->getArg(0));
          ExprPtr y = asBool(eval(op->getArg(1), st), op->getArg(1));
          return Val::boolean(bk == BO_LAnd ? m::And(x, y) : m::Or(x, y));
        }
        return compare(bk, op->getArg(0), op->getArg(1), op, st);
      }
      if (op->getOperator() == OO_Exclaim && op->getNumArgs() == 1)
        return Val::boolean(m::Not(asBool(eval(op->getArg(0), st), op->getArg(0))));
    }
    return opaqueOfType(c);
  }

  Val convert(const Val& v, QualType to, const Expr* e) {
    if (to.isNull() || to->isDependentType()) return v;
    if (to->isBooleanType()) {
      if (v.kind == Val::Bool) return v;
      if (v.kind == Val::Int || v.kind == Val::Ptr) return Val::boolean(asBool(v, e));
      return v;
    }
    if (to->isIntegralOrEnumerationType()) {
      if (v.kind == Val::Bool) return Val::integer(m::Ite(v.e, m::IntC(1), m::IntC(0)));
      return v;
    }
    return v;
  }

  Val eval(const Expr* e, State& st) {
    if (!e) return Val::unknown();
    if (++eval_depth_ > 4000) {
      --eval_depth_;
      return Val::unknown();
    }
    Val v = evalInner(e, st);
    --eval_depth_;
    return v;
  }

  Val evalInner(const Expr* e, State& st) {
    e = strip(e);
    if (auto k = constInt(e)) {
      if (e->getType()->isBooleanType()) return Val::boolean(m::BoolC(*k != 0));
      // Enum constants and constexprs fold; an expression mentioning a
      // config member never reaches here (it is not a constant).
      return Val::integer(m::IntC(*k));
    }
    if (auto* b = dyn_cast<CXXBoolLiteralExpr>(e)) return Val::boolean(m::BoolC(b->getValue()));
    if (auto* i = dyn_cast<IntegerLiteral>(e)) return Val::integer(m::IntC(static_cast<std::int64_t>(i->getValue().getZExtValue())));
    if (auto* ch = dyn_cast<CharacterLiteral>(e)) return Val::integer(m::IntC(ch->getValue()));
    if (auto* s = dyn_cast<StringLiteral>(e)) return Val::ptr(m::True(), m::StrC(s->getString().str()));
    if (isa<CXXNullPtrLiteralExpr>(e) || isa<GNUNullExpr>(e)) return Val::ptr(m::False(), m::StrC(""));
    if (auto* ic = dyn_cast<ImplicitCastExpr>(e)) {
      Val v = eval(ic->getSubExpr(), st);
      if (ic->getCastKind() == CK_NullToPointer) return Val::ptr(m::False(), m::StrC(""));
      return convert(v, ic->getType(), ic->getSubExpr());
    }
    if (auto* ce = dyn_cast<ExplicitCastExpr>(e)) {
      Val v = eval(ce->getSubExpr(), st);
      if (isStringType(ce->getType()) && (v.kind == Val::Ptr || v.kind == Val::Str)) return v;
      return convert(v, ce->getType(), ce->getSubExpr());
    }
    if (auto* cc = dyn_cast<CXXConstructExpr>(e)) {
      if (cc->getNumArgs() == 0 && isStringType(cc->getType())) return Val{Val::Str, m::StrC(""), nullptr};
      if (cc->getNumArgs() >= 1 && (isStringType(cc->getType()) || cc->getNumArgs() == 1)) {
        Val v = eval(cc->getArg(0), st);
        if (v.kind == Val::Ptr || v.kind == Val::Str) return v;
      }
      return Val::unknown();
    }
    if (auto* uc = dyn_cast<CXXUnresolvedConstructExpr>(e)) {
      if (uc->getNumArgs() == 1) {
        Val v = eval(uc->getArg(0), st);
        if (v.kind == Val::Ptr || v.kind == Val::Str) return v;
        return convert(v, uc->getTypeAsWritten(), uc->getArg(0));
      }
      return Val::unknown();
    }
    if (auto* d = dyn_cast<DeclRefExpr>(e)) {
      const ValueDecl* vd = d->getDecl();
      std::string name = vd->getNameAsString();
      if (auto* var = dyn_cast<VarDecl>(vd)) {
        auto it = st.locals.find(var);
        if (it != st.locals.end()) return it->second;
        if (spec_.members.count(name)) return memberVal(name, d->getType(), st);
        if (var->hasLocalStorage() && isByteCountName(name))
          return Val::integer(configVar(m::kNbytes, m::Sort::Int, st));
        if (var->getType().isConstQualified() || var->isConstexpr())
          if (const Expr* init = var->getInit()) {
            if (auto k = constInt(init)) return Val::integer(m::IntC(*k));
            if (auto s = literalString(init)) return Val::ptr(m::True(), m::StrC(*s));
          }
        // A namespace-scope or class static initialised from the environment
        // (static const char* kAlgo = std::getenv("X");): its initialiser.
        if (!var->hasLocalStorage() && var->getInit() && readsEnv(var->getInit()) &&
            globals_in_eval_.insert(var).second) {
          Val v = eval(var->getInit(), st);
          globals_in_eval_.erase(var);
          if (v.kind != Val::Unknown) return convert(v, var->getType(), var->getInit());
        }
        return opaqueOfType(d);
      }
      if (auto* ec = dyn_cast<EnumConstantDecl>(vd)) return Val::integer(m::IntC(ec->getInitVal().getExtValue()));
      if (spec_.members.count(name)) return memberVal(name, d->getType(), st);
      return opaqueOfType(d);
    }
    if (auto* me = dyn_cast<MemberExpr>(e)) {
      std::string name = me->getMemberDecl()->getNameAsString();
      if (spec_.members.count(name)) return memberVal(name, me->getType(), st);
      return opaqueOfType(me);
    }
    if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(e)) {
      std::string name = dm->getMember().getAsString();
      if (spec_.members.count(name)) return memberVal(name, QualType(), st);
      return Val::unknown();
    }
    if (auto* u = dyn_cast<UnaryOperator>(e)) {
      switch (u->getOpcode()) {
        case UO_LNot: return Val::boolean(m::Not(asBool(eval(u->getSubExpr(), st), u->getSubExpr())));
        case UO_Minus: {
          Val v = eval(u->getSubExpr(), st);
          if (ExprPtr x = asInt(v, u->getSubExpr())) return Val::integer(m::Neg(x));
          return opaqueOfType(u);
        }
        case UO_Plus: return eval(u->getSubExpr(), st);
        default: return opaqueOfType(u);
      }
    }
    if (auto* b = dyn_cast<BinaryOperator>(e)) {
      switch (b->getOpcode()) {
        case BO_LAnd:
        case BO_LOr: {
          ExprPtr x = asBool(eval(b->getLHS(), st), b->getLHS());
          ExprPtr y = asBool(eval(b->getRHS(), st), b->getRHS());
          return Val::boolean(b->getOpcode() == BO_LAnd ? m::And(x, y) : m::Or(x, y));
        }
        case BO_EQ: case BO_NE: case BO_LT: case BO_LE: case BO_GT: case BO_GE:
          return compare(b->getOpcode(), b->getLHS(), b->getRHS(), b, st);
        case BO_Add: case BO_Sub: case BO_Mul: case BO_Div: case BO_Rem: case BO_Shl: case BO_Shr:
          return arith(b->getOpcode(), b->getLHS(), b->getRHS(), b, st);
        case BO_Comma: return eval(b->getRHS(), st);
        default: return opaqueOfType(b);
      }
    }
    if (auto* co = dyn_cast<ConditionalOperator>(e)) {
      ExprPtr c = asBool(eval(co->getCond(), st), co->getCond());
      Val t = eval(co->getTrueExpr(), st), f = eval(co->getFalseExpr(), st);
      if (t.kind == Val::Ptr && f.kind == Val::Ptr && t.e && f.e)
        return Val::ptr(m::Ite(c, t.nonnull, f.nonnull), m::Ite(c, t.e, f.e));
      if (t.kind == f.kind && (t.kind == Val::Bool || t.kind == Val::Int || t.kind == Val::Str))
        return Val{t.kind, m::Ite(c, t.e, f.e), nullptr};
      if ((t.kind == Val::Ptr || t.kind == Val::Str) && (f.kind == Val::Ptr || f.kind == Val::Str)) {
        ExprPtr tn, ts, fn, fs;
        strParts(t, tn, ts);
        strParts(f, fn, fs);
        return Val::ptr(m::Ite(c, tn, fn), m::Ite(c, ts, fs));
      }
      return opaqueOfType(co);
    }
    if (auto* c = dyn_cast<CallExpr>(e)) {
      if (isa<CUDAKernelCallExpr>(c)) return Val::unknown();
      return evalCall(c, st);
    }
    return opaqueOfType(e);
  }

  // A branch condition: never silently true or false. When the translation
  // mentions no config variable, the whole condition is one opaque symbol.
  ExprPtr condition(const Expr* e, State& st) {
    ExprPtr c = asBool(eval(e, st), e);
    if (m::isConst(c)) return c;
    bool hasConfig = false;
    for (auto& v : m::varsOf(c))
      if (v.kind != m::VarKind::Opaque) hasConfig = true;
    if (!hasConfig) {
      std::string t = textOf(e);
      if (!(c->op == m::Op::Var && c->s == t)) c = opaque(t, m::Sort::Bool, e->getBeginLoc());
    }
    return c;
  }

  static void addFacts(State& st, const ExprPtr& c, bool truth) {
    switch (c->op) {
      case m::Op::Not: addFacts(st, c->args[0], !truth); return;
      case m::Op::And:
        if (truth) for (auto& a : c->args) addFacts(st, a, true);
        return;
      case m::Op::Or:
        if (!truth) for (auto& a : c->args) addFacts(st, a, false);
        return;
      case m::Op::Var:
        if (c->sort == m::Sort::Bool && c->var_kind == m::VarKind::Config) st.facts[c->s] = m::BoolC(truth);
        return;
      case m::Op::Eq:
      case m::Op::Ne: {
        if ((c->op == m::Op::Eq) != truth) return;
        const ExprPtr& a = c->args[0];
        const ExprPtr& b = c->args[1];
        if (a->op == m::Op::Var && a->var_kind == m::VarKind::Config && m::isConst(b)) st.facts[a->s] = b;
        else if (b->op == m::Op::Var && b->var_kind == m::VarKind::Config && m::isConst(a)) st.facts[b->s] = a;
        return;
      }
      default: return;
    }
  }

  // --- joining paths ---------------------------------------------------------------
  //
  // Paths that meet again after a branch with the same launch, reason, facts
  // and locals are one path with the disjunction of their conditions; this
  // keeps the path count and the leaf conditions small.

  static void conjuncts(const ExprPtr& e, std::vector<ExprPtr>& out) {
    if (e->op == m::Op::And) {
      for (auto& a : e->args) conjuncts(a, out);
      return;
    }
    if (!m::isTrue(e)) out.push_back(e);
  }

  static bool same(const ExprPtr& a, const ExprPtr& b) {
    if (a == b) return true;
    if (!a || !b) return false;
    return a->op == b->op && a->sort == b->sort && a->str() == b->str();
  }

  static bool contains(const std::vector<ExprPtr>& xs, const ExprPtr& x) {
    for (auto& y : xs)
      if (same(x, y)) return true;
    return false;
  }

  // (C and R1) or (C and R2), with c or (not c and X) = c or X.
  static ExprPtr orMerge(const ExprPtr& a, const ExprPtr& b) {
    std::vector<ExprPtr> ca, cb, common, ra, rb;
    conjuncts(a, ca);
    conjuncts(b, cb);
    for (auto& x : ca) (contains(cb, x) ? common : ra).push_back(x);
    for (auto& x : cb)
      if (!contains(common, x)) rb.push_back(x);
    if (ra.empty() || rb.empty()) return m::AndAll(common);
    auto dropNegation = [](const std::vector<ExprPtr>& one, std::vector<ExprPtr>& other) {
      if (one.size() != 1) return false;
      for (std::size_t i = 0; i < other.size(); ++i)
        if (same(m::Not(one[0]), other[i])) {
          other.erase(other.begin() + static_cast<long>(i));
          return true;
        }
      return false;
    };
    if (dropNegation(ra, rb) && rb.empty()) return m::AndAll(common);
    if (dropNegation(rb, ra) && ra.empty()) return m::AndAll(common);
    return m::And(m::AndAll(common), m::Or(m::AndAll(ra), m::AndAll(rb)));
  }

  static bool sameVal(const Val& a, const Val& b) {
    return a.kind == b.kind && (a.e == b.e || (a.e && b.e && same(a.e, b.e))) &&
           (a.nonnull == b.nonnull || (a.nonnull && b.nonnull && same(a.nonnull, b.nonnull)));
  }

  std::string stateKey(const State& st) {
    std::string k;
    if (st.launch) k = "L" + st.launch->kernel + "@" + std::to_string(st.launch->loc.getRawEncoding());
    else k = "R" + st.reason.text + "@" + std::to_string(st.reason.loc.getRawEncoding()) + "#" + std::to_string(st.reason.prio);
    for (auto& [n, v] : st.facts) k += "|" + n + "=" + v->str();
    return k;
  }

  void mergeStates(std::vector<State>& states) {
    if (states.size() < 2) return;
    std::vector<State> out;
    std::map<std::string, std::vector<std::size_t>> byKey;
    for (State& st : states) {
      std::string k = stateKey(st);
      bool merged = false;
      for (std::size_t idx : byKey[k]) {
        State& acc = out[idx];
        bool ok = true;
        for (auto& [var, v] : acc.locals) {
          auto it = st.locals.find(var);
          if (it != st.locals.end() && !sameVal(v, it->second)) {
            ok = false;
            break;
          }
        }
        if (!ok) continue;
        acc.pc = orMerge(acc.pc, st.pc);
        for (auto it = acc.locals.begin(); it != acc.locals.end();)
          it = st.locals.count(it->first) ? std::next(it) : acc.locals.erase(it);
        merged = true;
        break;
      }
      if (!merged) {
        byKey[k].push_back(out.size());
        out.push_back(std::move(st));
      }
    }
    states = std::move(out);
  }

  // --- statements --------------------------------------------------------------------

  void checkPaths(std::size_t n, const Stmt* at) {
    if (n > opts_.max_paths) {
      m::Location l = loc(at->getBeginLoc(), false, "dispatch");
      throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                       std::to_string(opts_.max_paths) + " paths; giving up");
    }
  }

  void setReason(State& st, std::string text, SourceLocation where, int prio, const IfStmt* no_else = nullptr) {
    if (prio >= st.reason.prio) st.reason = Reason{std::move(text), where, prio, no_else};
  }

  // Effects of an expression statement: throw, launch, assignments to locals.
  // Returns false when the path ends here (throw).
  bool effects(const Expr* e, State& st) {
    if (auto p = preconditionOf(e)) return precondition(*p, st);
    const Expr* s = stripCasts(e);
    if (auto* t = dyn_cast_or_null<CXXThrowExpr>(s)) {
      finishThrow(st, t);
      return false;
    }
    if (auto l = findLaunch(e))
      if (!st.launch || l->rank > st.launch->rank) st.launch = l;
    assignments(e, st);
    return true;
  }

  // --- preconditions (cpp.preconditions) -------------------------------------

  struct Precondition {
    const Expr* cond;
    std::string message;
    SourceLocation loc;
  };

  bool isPreconditionName(llvm::StringRef n) const {
    for (const auto& p : spec_.preconditions)
      if (n == p) return true;
    return false;
  }

  // Whether a location is inside the expansion of a listed macro.
  bool inPreconditionMacro(SourceLocation l) const {
    for (int i = 0; l.isMacroID() && i < 32; ++i) {
      llvm::StringRef name = Lexer::getImmediateMacroName(l, sm_, ctx_.getLangOpts());
      if (isPreconditionName(name)) return true;
      l = sm_.getImmediateMacroCallerLoc(l);
    }
    return false;
  }

  static std::string typeName(QualType t) {
    if (t.isNull()) return {};
    if (auto* d = t->getContainedDeducedType())
      if (auto* dt = dyn_cast<DeducedTemplateSpecializationType>(d))
        if (auto* td = dt->getTemplateName().getAsTemplateDecl()) return td->getNameAsString();
    if (auto* ts = t->getAs<TemplateSpecializationType>())
      if (auto* td = ts->getTemplateName().getAsTemplateDecl()) return td->getNameAsString();
    if (auto* rd = t->getAsCXXRecordDecl()) return rd->getNameAsString();
    return {};
  }

  // The message of a failed check: its literal arguments, other arguments as {text}.
  std::string checkMessage(llvm::ArrayRef<const Expr*> rest) {
    std::string msg;
    for (const Expr* a : rest) {
      if (!a || isa<CXXDefaultArgExpr>(a)) continue;
      if (auto lit = literalString(a)) msg += *lit;
      else msg += "{" + textOf(a) + "}";
    }
    return msg;
  }

  // A statement-level call of a precondition: a function or a class (template)
  // constructed from the condition, by name, or any call spelled by a listed macro.
  std::optional<Precondition> preconditionOf(const Expr* e) {
    if (spec_.preconditions.empty()) return std::nullopt;
    for (int i = 0; e && i < 16; ++i) {
      e = strip(e);
      if (auto* ic = dyn_cast_or_null<ImplicitCastExpr>(e)) {
        e = ic->getSubExpr();
        continue;
      }
      break;
    }
    if (!e) return std::nullopt;
    std::string name;
    std::vector<const Expr*> args;
    if (auto* fc = dyn_cast<CXXFunctionalCastExpr>(e)) {
      name = typeName(fc->getTypeAsWritten());
      const Expr* sub = strip(fc->getSubExpr());
      if (auto* cc = dyn_cast_or_null<CXXConstructExpr>(sub))
        for (const Expr* a : cc->arguments()) args.push_back(a);
      else args.push_back(fc->getSubExpr());
    } else if (auto* cc = dyn_cast<CXXConstructExpr>(e)) {
      if (cc->getConstructor()) name = cc->getConstructor()->getParent()->getNameAsString();
      for (const Expr* a : cc->arguments()) args.push_back(a);
    } else if (auto* uc = dyn_cast<CXXUnresolvedConstructExpr>(e)) {
      name = typeName(uc->getTypeAsWritten());
      for (const Expr* a : uc->arguments()) args.push_back(a);
    } else if (auto* c = dyn_cast<CallExpr>(e); c && !isa<CUDAKernelCallExpr>(c)) {
      name = calleeName(c->getCallee());
      for (const Expr* a : c->arguments()) args.push_back(a);
    } else {
      return std::nullopt;
    }
    if (args.empty() || !(isPreconditionName(name) || inPreconditionMacro(e->getBeginLoc()))) return std::nullopt;
    return Precondition{args[0], checkMessage(llvm::ArrayRef<const Expr*>(args).drop_front()), e->getBeginLoc()};
  }

  // The path splits: a throw leaf where the condition is false; the path goes
  // on (returns true) where it holds.
  bool precondition(const Precondition& p, State& st) {
    ExprPtr c = condition(p.cond->IgnoreParens(), st);
    ExprPtr fails = m::And(st.pc, m::Not(c));
    if (!m::isFalse(fails)) throwLeaf(fails, p.message.empty() ? textOf(p.cond->IgnoreParens()) : p.message, p.loc);
    ExprPtr holds = m::And(st.pc, c);
    if (m::isFalse(holds)) return false;
    st.pc = holds;
    addFacts(st, c, true);
    return true;
  }

  void assign(const Expr* lhs, const Val& v, State& st) {
    lhs = stripCasts(lhs);
    if (auto* d = dyn_cast_or_null<DeclRefExpr>(lhs))
      if (auto* var = dyn_cast<VarDecl>(d->getDecl()))
        if (var->hasLocalStorage()) st.locals[var] = v;
  }

  void assignments(const Expr* e, State& st) {
    e = strip(e);
    if (!e) return;
    if (auto* b = dyn_cast<BinaryOperator>(e)) {
      if (b->getOpcode() == BO_Comma) {
        assignments(b->getLHS(), st);
        assignments(b->getRHS(), st);
        return;
      }
      if (b->getOpcode() == BO_Assign) {
        const Expr* l = stripCasts(b->getLHS());
        Val v = eval(b->getRHS(), st);
        if (auto* d = dyn_cast_or_null<DeclRefExpr>(l))
          if (isByteCountName(d->getDecl()->getName()) || isSizeofProduct(b->getRHS()))
            v = Val::integer(configVar(m::kNbytes, m::Sort::Int, st));
        assign(b->getLHS(), v, st);
        return;
      }
      if (auto* ca = dyn_cast<CompoundAssignOperator>(b)) {
        BinaryOperatorKind k;
        switch (ca->getOpcode()) {
          case BO_AddAssign: k = BO_Add; break;
          case BO_SubAssign: k = BO_Sub; break;
          case BO_MulAssign: k = BO_Mul; break;
          case BO_DivAssign: k = BO_Div; break;
          case BO_RemAssign: k = BO_Rem; break;
          case BO_ShlAssign: k = BO_Shl; break;
          case BO_ShrAssign: k = BO_Shr; break;
          default: assign(ca->getLHS(), opaqueOfType(ca->getLHS()), st); return;
        }
        assign(ca->getLHS(), arith(k, ca->getLHS(), ca->getRHS(), ca, st), st);
        return;
      }
    }
    if (auto* u = dyn_cast<UnaryOperator>(e)) {
      if (u->isIncrementDecrementOp()) {
        Val v = eval(u->getSubExpr(), st);
        if (ExprPtr x = asInt(v, u->getSubExpr()))
          assign(u->getSubExpr(), Val::integer(m::Arith(u->isIncrementOp() ? m::Op::Add : m::Op::Sub, x, m::IntC(1))), st);
        else
          assign(u->getSubExpr(), Val::unknown(), st);
      }
      return;
    }
    if (auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
      if (op->getOperator() == OO_Equal && op->getNumArgs() == 2) assign(op->getArg(0), eval(op->getArg(1), st), st);
    }
  }

  Val initValue(const VarDecl* vd, State& st) {
    const Expr* init = vd->getInit();
    if (isByteCountName(vd->getName()) || (init && isSizeofProduct(init)))
      return Val::integer(configVar(m::kNbytes, m::Sort::Int, st));
    if (!init) {
      QualType t = vd->getType();
      if (!t.isNull() && !t->isDependentType() && (t->isIntegralOrEnumerationType()))
        return Val::integer(opaque(vd->getNameAsString(), sortOfType(t), vd->getLocation()));
      return Val::unknown();
    }
    Val v = eval(init, st);
    if (v.kind == Val::Unknown) return v;
    return convert(v, vd->getType(), init);
  }

  void execDecl(const DeclStmt* ds, std::vector<State>& states, std::vector<State>& alive) {
    for (State& st : states) {
      bool ok = true;
      for (const Decl* d : ds->decls()) {
        auto* vd = dyn_cast<VarDecl>(d);
        if (!vd) continue;
        if (const Expr* init = vd->getInit())
          if (!effects(init, st)) {
            ok = false;
            break;
          }
        st.locals[vd] = initValue(vd, st);
      }
      if (ok) alive.push_back(std::move(st));
    }
  }

  Flow exec(const Stmt* s, std::vector<State> in, int depth) {
    Flow out;
    if (in.empty()) return out;
    if (!s) {
      out.normal = std::move(in);
      return out;
    }
    if (depth > opts_.max_depth) {
      m::Location l = loc(s->getBeginLoc(), false, "dispatch");
      throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch nests statements deeper than " +
                       std::to_string(opts_.max_depth) + " levels; giving up");
    }
    checkPaths(in.size(), s);
    if (auto* cs = dyn_cast<CompoundStmt>(s)) {
      std::vector<State> cur = std::move(in);
      for (const Stmt* c : cs->body()) {
        if (cur.empty()) break;
        Flow f = exec(c, std::move(cur), depth + 1);
        cur = std::move(f.normal);
        for (auto& b : f.breaks) out.breaks.push_back(std::move(b));
        for (auto& b : f.continues) out.continues.push_back(std::move(b));
        checkPaths(out.breaks.size() + cur.size(), c);
      }
      out.normal = std::move(cur);
      return out;
    }
    if (auto* is = dyn_cast<IfStmt>(s)) return execIf(is, std::move(in), depth);
    if (auto* sw = dyn_cast<SwitchStmt>(s)) return execSwitch(sw, std::move(in), depth);
    if (isa<BreakStmt>(s)) {
      out.breaks = std::move(in);
      return out;
    }
    if (isa<ContinueStmt>(s)) {
      out.continues = std::move(in);
      return out;
    }
    if (auto* rs = dyn_cast<ReturnStmt>(s)) {
      for (State& st : in) {
        if (rs->getRetValue() && !effects(rs->getRetValue(), st)) continue;
        // An explicit return is itself the decision: the leaf sits there.
        if (!st.launch) st.reason = Reason{"return without a launch", rs->getBeginLoc(), 3, nullptr};
        finishEnd(st, rs->getBeginLoc());
      }
      return out;
    }
    if (auto* ds = dyn_cast<DeclStmt>(s)) {
      execDecl(ds, in, out.normal);
      return out;
    }
    if (auto* e = dyn_cast<Expr>(s)) {
      for (State& st : in)
        if (effects(e, st)) out.normal.push_back(std::move(st));
      return out;
    }
    if (auto* cs = dyn_cast<CaseStmt>(s)) return exec(cs->getSubStmt(), std::move(in), depth + 1);
    if (auto* ds = dyn_cast<DefaultStmt>(s)) return exec(ds->getSubStmt(), std::move(in), depth + 1);
    if (auto* as = dyn_cast<AttributedStmt>(s)) return exec(as->getSubStmt(), std::move(in), depth + 1);
    if (auto* ls = dyn_cast<LabelStmt>(s)) return exec(ls->getSubStmt(), std::move(in), depth + 1);
    if (auto* ts = dyn_cast<CXXTryStmt>(s)) {
      noteOnce("try/catch in the dispatch: handlers are not followed");
      return exec(ts->getTryBlock(), std::move(in), depth + 1);
    }
    if (isa<ForStmt>(s) || isa<WhileStmt>(s) || isa<DoStmt>(s) || isa<CXXForRangeStmt>(s))
      return execLoop(s, std::move(in), depth);
    if (isa<GotoStmt>(s) || isa<IndirectGotoStmt>(s)) noteOnce("goto in the dispatch is not followed");
    out.normal = std::move(in);
    return out;
  }

  Flow execIf(const IfStmt* is, std::vector<State> in, int depth) {
    Flow out;
    if (is->getInit()) {
      Flow f = exec(is->getInit(), std::move(in), depth + 1);
      in = std::move(f.normal);
    }
    if (const DeclStmt* cv = is->getConditionVariableDeclStmt()) {
      std::vector<State> alive;
      execDecl(cv, in, alive);
      in = std::move(alive);
    }
    bool thenLaunches = findLaunch(is->getThen()).has_value();
    bool elseLaunches = is->getElse() && findLaunch(is->getElse()).has_value();
    std::string condText = textOf(is->getCond());
    std::vector<State> thenIn, elseIn;
    if (is->isConsteval()) {
      out.normal = std::move(in);
      return out;
    }
    for (State& st : in) {
      ExprPtr c = condition(is->getCond(), st);
      if (readsNvlink(c)) nvlink_ifs_.insert(is);
      ExprPtr tpc = m::And(st.pc, c), epc = m::And(st.pc, m::Not(c));
      if (!m::isFalse(tpc)) {
        State t = st;
        t.pc = tpc;
        addFacts(t, c, true);
        if (!thenLaunches && elseLaunches)
          setReason(t, "if (" + condText + ") is taken and launches no kernel", is->getIfLoc(), 2);
        thenIn.push_back(std::move(t));
      }
      if (!m::isFalse(epc)) {
        State e = std::move(st);
        e.pc = epc;
        addFacts(e, c, false);
        if (!is->getElse())
          setReason(e, "if (" + condText + ") has no else", is->getIfLoc(), thenLaunches ? 2 : 1, is);
        else if (thenLaunches && !elseLaunches)
          setReason(e, "the else of if (" + condText + ") launches no kernel", is->getIfLoc(), 2);
        elseIn.push_back(std::move(e));
      }
    }
    Flow t = exec(is->getThen(), std::move(thenIn), depth + 1);
    Flow e;
    if (is->getElse()) e = exec(is->getElse(), std::move(elseIn), depth + 1);
    else e.normal = std::move(elseIn);
    for (Flow* f : {&t, &e}) {
      for (auto& x : f->normal) out.normal.push_back(std::move(x));
      for (auto& x : f->breaks) out.breaks.push_back(std::move(x));
      for (auto& x : f->continues) out.continues.push_back(std::move(x));
    }
    mergeStates(out.normal);
    mergeStates(out.breaks);
    return out;
  }

  struct CaseLabel {
    const SwitchCase* label;
    std::size_t index;  // position in the flattened body
  };

  Flow execSwitch(const SwitchStmt* sw, std::vector<State> in, int depth) {
    Flow out;
    if (sw->getInit()) in = exec(sw->getInit(), std::move(in), depth + 1).normal;
    if (const DeclStmt* cv = sw->getConditionVariableDeclStmt()) {
      std::vector<State> alive;
      execDecl(cv, in, alive);
      in = std::move(alive);
    }
    // Flatten: top-level statements of the body; a chain `case A: case B: s`
    // gives labels A and B at the position of s.
    std::vector<const Stmt*> seq;
    std::vector<CaseLabel> labels;
    const DefaultStmt* deflt = nullptr;
    std::size_t defaultIndex = 0;
    std::vector<const Stmt*> top;
    if (auto* body = dyn_cast_or_null<CompoundStmt>(sw->getBody())) top.assign(body->body_begin(), body->body_end());
    else if (sw->getBody()) top.push_back(sw->getBody());
    for (const Stmt* s : top) {
      const Stmt* cur = s;
      while (auto* sc = dyn_cast<SwitchCase>(cur)) {
        if (auto* d = dyn_cast<DefaultStmt>(sc)) {
          deflt = d;
          defaultIndex = seq.size();
        } else {
          labels.push_back({sc, seq.size()});
        }
        cur = sc->getSubStmt();
      }
      seq.push_back(cur);
    }
    bool anyLaunch = findLaunch(sw->getBody()).has_value();
    std::string subject = textOf(sw->getCond());
    auto runFrom = [&](std::size_t start, std::vector<State> states) {
      std::vector<State> cur = std::move(states);
      for (std::size_t i = start; i < seq.size() && !cur.empty(); ++i) {
        Flow f = exec(seq[i], std::move(cur), depth + 1);
        cur = std::move(f.normal);
        for (auto& b : f.breaks) out.normal.push_back(std::move(b));
        for (auto& c : f.continues) out.continues.push_back(std::move(c));
        checkPaths(out.normal.size() + cur.size(), seq[i]);
      }
      for (auto& c : cur) out.normal.push_back(std::move(c));
    };
    for (State& st : in) {
      Val subj = eval(sw->getCond(), st);
      ExprPtr x = asInt(subj, sw->getCond());
      bool opaqueSubject = false;
      if (!x || [&] {
            for (auto& v : m::varsOf(x))
              if (v.kind != m::VarKind::Opaque) return false;
            return !m::isConst(x);
          }()) {
        x = opaque(subject, m::Sort::Int, sw->getCond()->getBeginLoc());
        opaqueSubject = true;
      }
      (void)opaqueSubject;
      std::vector<ExprPtr> matched;
      std::vector<std::pair<std::size_t, State>> starts;
      for (const CaseLabel& cl : labels) {
        auto* cs = cast<CaseStmt>(cl.label);
        ExprPtr hit;
        Val lo = eval(cs->getLHS(), st);
        ExprPtr lov = asInt(lo, cs->getLHS());
        if (!lov) lov = opaque(textOf(cs->getLHS()), m::Sort::Int, cs->getLHS()->getBeginLoc());
        if (cs->caseStmtIsGNURange() && cs->getRHS()) {
          ExprPtr hiv = asInt(eval(cs->getRHS(), st), cs->getRHS());
          if (!hiv) hiv = opaque(textOf(cs->getRHS()), m::Sort::Int, cs->getRHS()->getBeginLoc());
          hit = m::And(m::Cmp(m::Op::Ge, x, lov), m::Cmp(m::Op::Le, x, hiv));
        } else {
          hit = m::Cmp(m::Op::Eq, x, lov);
        }
        matched.push_back(hit);
        ExprPtr pc = m::And(st.pc, hit);
        if (m::isFalse(pc)) continue;
        State c = st;
        c.pc = pc;
        addFacts(c, hit, true);
        starts.push_back({cl.index, std::move(c)});
      }
      ExprPtr none = m::Not(m::OrAll(matched));
      ExprPtr npc = m::And(st.pc, none);
      std::optional<State> rest;
      if (!m::isFalse(npc)) {
        State d = std::move(st);
        d.pc = npc;
        addFacts(d, none, true);
        if (!deflt)
          setReason(d, "no case for " + subject + " and no default", sw->getSwitchLoc(), anyLaunch ? 2 : 1);
        rest = std::move(d);
      }
      for (auto& [idx, c] : starts) {
        std::vector<State> one;
        one.push_back(std::move(c));
        runFrom(idx, std::move(one));
      }
      if (rest) {
        std::vector<State> one;
        one.push_back(std::move(*rest));
        if (deflt) runFrom(defaultIndex, std::move(one));
        else out.normal.push_back(std::move(one.front()));
      }
    }
    mergeStates(out.normal);
    return out;
  }

  Flow execLoop(const Stmt* s, std::vector<State> in, int depth) {
    Flow out;
    const Stmt* body = nullptr;
    const Expr* cond = nullptr;
    bool doLoop = false;
    if (auto* f = dyn_cast<ForStmt>(s)) {
      if (f->getInit()) in = exec(f->getInit(), std::move(in), depth + 1).normal;
      cond = f->getCond();
      body = f->getBody();
    } else if (auto* w = dyn_cast<WhileStmt>(s)) {
      if (const DeclStmt* cv = w->getConditionVariableDeclStmt()) {
        std::vector<State> alive;
        execDecl(cv, in, alive);
        in = std::move(alive);
      }
      cond = w->getCond();
      body = w->getBody();
    } else if (auto* d = dyn_cast<DoStmt>(s)) {
      body = d->getBody();
      doLoop = true;
    } else if (auto* r = dyn_cast<CXXForRangeStmt>(s)) {
      body = r->getBody();
    }
    bool bodyLaunches = findLaunch(body).has_value();
    std::vector<State> enter;
    for (State& st : in) {
      if (doLoop) {
        enter.push_back(std::move(st));
        continue;
      }
      ExprPtr c = m::True();
      if (cond) c = condition(cond, st);
      else if (auto* r = dyn_cast<CXXForRangeStmt>(s))
        c = opaque("range of " + textOf(r->getRangeInit()) + " is not empty", m::Sort::Bool, s->getBeginLoc());
      ExprPtr tpc = m::And(st.pc, c), epc = m::And(st.pc, m::Not(c));
      if (!m::isFalse(epc)) {
        State e = st;
        e.pc = epc;
        addFacts(e, c, false);
        setReason(e, "loop body not entered", s->getBeginLoc(), bodyLaunches ? 2 : 1);
        out.normal.push_back(std::move(e));
      }
      if (!m::isFalse(tpc)) {
        State t = std::move(st);
        t.pc = tpc;
        addFacts(t, c, true);
        enter.push_back(std::move(t));
      }
    }
    Flow f = exec(body, std::move(enter), depth + 1);
    // One pass of the body stands for all iterations.
    for (auto& x : f.normal) out.normal.push_back(std::move(x));
    for (auto& x : f.breaks) out.normal.push_back(std::move(x));
    for (auto& x : f.continues) out.normal.push_back(std::move(x));
    mergeStates(out.normal);
    return out;
  }

  // --- leaves -------------------------------------------------------------------------

  void finishThrow(State& st, const CXXThrowExpr* t) {
    std::string msg;
    std::vector<const Stmt*> stack{t->getSubExpr()};
    while (!stack.empty() && msg.empty()) {
      const Stmt* x = stack.back();
      stack.pop_back();
      if (!x) continue;
      if (auto* sl = dyn_cast<StringLiteral>(x)) {
        msg = sl->getString().str();
        break;
      }
      std::vector<const Stmt*> kids(x->child_begin(), x->child_end());
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    throwLeaf(st.pc, msg, t->getBeginLoc());
  }

  // One throw leaf: a throw expression, or a failed precondition.
  void throwLeaf(const ExprPtr& pc, const std::string& msg, SourceLocation where) {
    raw_.push_back({m::LeafKind::Throw, pc, "", msg, where, nullptr});
    if (raw_.size() > opts_.max_paths) {
      m::Location l = loc(where, false, "dispatch");
      throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                       std::to_string(opts_.max_paths) + " paths; giving up");
    }
  }

  void finishEnd(State& st, SourceLocation end) {
    if (st.launch) {
      raw_.push_back({m::LeafKind::Launch, st.pc, st.launch->kernel, "", st.launch->loc, nullptr});
    } else if (st.reason.prio > 0) {
      raw_.push_back({m::LeafKind::None, st.pc, "", st.reason.text, st.reason.loc, st.reason.no_else});
    } else {
      raw_.push_back({m::LeafKind::None, st.pc, "", "end of " + fn_name_ + " reached without a launch", end, nullptr});
    }
    if (raw_.size() > opts_.max_paths) {
      m::Location l = loc(end, false, "dispatch");
      throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                       std::to_string(opts_.max_paths) + " paths; giving up");
    }
  }

  // --- facts for the unsafe fix (cpp/FixFacts.h) ---------------------------------

  static bool readsNvlink(const ExprPtr& c) {
    for (const auto& v : m::varsOf(c))
      if (v.name == m::kFullNvlink) return true;
    return false;
  }

  // An if the paths never evaluated (a sibling of an arm its case excludes)
  // is asked on a fresh path, without its reads counting as the dispatch's.
  bool testsNvlink(const IfStmt* is) {
    if (nvlink_ifs_.count(is)) return true;
    auto env = env_reads_;
    auto notes = notes_;
    State fresh;
    bool r = readsNvlink(condition(is->getCond(), fresh));
    env_reads_ = env;
    notes_ = notes;
    return r;
  }

  m::ElseSite elseSiteOf(const RawLeaf& r, const Stmt* body) {
    m::ElseSite none;
    if (!r.no_else || !body) {
      none.why = "the path does not end at an if without else (" + r.text + ")";
      return none;
    }
    if (!parents_) parents_ = std::make_unique<ParentMap>(const_cast<Stmt*>(body));
    ElseSiteQueries q;
    q.tests_nvlink = [this](const IfStmt* is) { return testsNvlink(is); };
    q.kernel_of = [this](const Stmt* s) {
      auto l = findLaunch(s);
      return l ? l->kernel : std::string();
    };
    q.spelling = [this](SourceLocation l) { return loc(l, true, "fix"); };
    return elseSite(sm_, *parents_, r.no_else, textOf(r.no_else->getCond()), q);
  }

  void noteOnce(const std::string& n) {
    for (auto& x : notes_)
      if (x == n) return;
    notes_.push_back(n);
  }

  // --- driver -------------------------------------------------------------------------

  m::Dispatch run(const FunctionDecl* fd) {
    m::Dispatch d;
    fn_name_ = fd->getNameAsString();
    if (auto* md = dyn_cast<CXXMethodDecl>(fd)) {
      current_class_ = md->getParent();
      d.class_name = current_class_->getNameAsString();
    }
    d.function = fn_name_;
    d.where = loc(fd->getLocation(), false, "dispatch", d.class_name + "::" + fn_name_);
    const Stmt* body = fd->getBody();
    std::vector<State> start(1);
    Flow f = exec(body, std::move(start), 0);
    SourceLocation end = body ? body->getEndLoc() : fd->getEndLoc();
    for (State& st : f.normal) finishEnd(st, end);
    for (State& st : f.breaks) finishEnd(st, end);
    for (State& st : f.continues) finishEnd(st, end);

    // Merge leaves with the same kind, kernel, text and locations.
    struct Key {
      int kind;
      std::string kernel, text;
      std::string sf;
      int sl, sc;
      std::string ef;
      int el, ec;
      bool operator<(const Key& o) const {
        return std::tie(kind, kernel, text, sf, sl, sc, ef, el, ec) <
               std::tie(o.kind, o.kernel, o.text, o.sf, o.sl, o.sc, o.ef, o.el, o.ec);
      }
    };
    std::map<Key, std::size_t> index;
    for (const RawLeaf& r : raw_) {
      if (m::isFalse(r.cond)) continue;
      const char* role = r.kind == m::LeafKind::Launch ? "launch" : r.kind == m::LeafKind::Throw ? "throw" : "no-launch";
      std::string note = r.kind == m::LeafKind::Launch ? r.kernel : r.text;
      m::Location sp = loc(r.loc, true, role, note), ex = loc(r.loc, false, role, note);
      Key k{static_cast<int>(r.kind), r.kernel, r.text, sp.file, sp.line, sp.col, ex.file, ex.line, ex.col};
      auto it = index.find(k);
      if (it != index.end()) {
        auto& leaf = d.leaves[it->second];
        leaf.condition = orMerge(leaf.condition, r.cond);
        continue;
      }
      index[k] = d.leaves.size();
      d.leaves.push_back(m::Leaf{r.kind, r.cond, r.kernel, r.text, sp, ex, {}});
      if (r.kind == m::LeafKind::None) d.leaves.back().else_site = elseSiteOf(r, body);
    }
    // Opaques that appear in some leaf condition.
    std::set<std::string> seen;
    for (const auto& leaf : d.leaves)
      for (const auto& v : m::varsOf(leaf.condition))
        if (v.kind == m::VarKind::Opaque && seen.insert(v.name).second) {
          auto it = opaque_where_.find(v.name);
          m::OpaqueSymbol o;
          o.name = v.name;
          o.text = v.name;
          if (it != opaque_where_.end()) o.where = loc(it->second, false, "opaque", v.name);
          d.opaques.push_back(o);
        }
    d.env_reads = env_reads_;
    d.notes = notes_;
    return d;
  }

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
  int eval_depth_ = 0;
};

}  // namespace

bool bodyLaunches(ASTContext& ctx, const FunctionDecl* fd, const WalkOptions& opts) {
  target::CppDispatchSpec none;
  Walker w(ctx, none, opts);
  if (auto* md = dyn_cast<CXXMethodDecl>(fd)) w.setClass(md->getParent());
  return !w.kernelOfFunction(fd).empty();
}

model::Dispatch walkDispatch(ASTContext& ctx, const FunctionDecl* fd, const target::CppDispatchSpec& spec,
                             const WalkOptions& opts) {
  Walker w(ctx, spec, opts);
  return w.run(fd);
}

}  // namespace layergate::cpp::detail
