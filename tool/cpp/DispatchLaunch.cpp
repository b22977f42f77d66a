// Launch discovery (which kernel a statement or function launches, through
// helpers and lambdas) and preconditions (checks that split a path in two).
#include "cpp/DispatchWalkerImpl.h"

#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/Lex/Lexer.h"

namespace layergate::cpp::detail::walker {

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

namespace {

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

}  // namespace

// --- launch discovery ------------------------------------------------------

// Functions (or templates' patterns) a call may reach that have bodies in
// user code.
std::vector<const FunctionDecl*> Walker::calleesOf(const CallExpr* call) {
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
std::string Walker::kernelOfFunction(const FunctionDecl* fd) {
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
std::string Walker::kernelArgName(const Expr* a, int depth) {
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
std::optional<KernelAt> Walker::launchAt(const Stmt* s) {
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
std::optional<LaunchInfo> Walker::findLaunch(const Stmt* root) {
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

// --- preconditions (cpp.preconditions) -------------------------------------

bool Walker::isPreconditionName(llvm::StringRef n) const {
  for (const auto& p : spec_.preconditions)
    if (n == p) return true;
  return false;
}

// Whether a location is inside the expansion of a listed macro.
bool Walker::inPreconditionMacro(SourceLocation l) const {
  for (int i = 0; l.isMacroID() && i < 32; ++i) {
    llvm::StringRef name = Lexer::getImmediateMacroName(l, sm_, ctx_.getLangOpts());
    if (isPreconditionName(name)) return true;
    l = sm_.getImmediateMacroCallerLoc(l);
  }
  return false;
}

std::string Walker::typeName(QualType t) {
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
std::string Walker::checkMessage(llvm::ArrayRef<const Expr*> rest) {
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
std::optional<Walker::Precondition> Walker::preconditionOf(const Expr* e) {
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
bool Walker::precondition(const Precondition& p, State& st) {
  ExprPtr c = condition(p.cond->IgnoreParens(), st);
  ExprPtr fails = m::And(st.pc, m::Not(c));
  if (!m::isFalse(fails)) throwLeaf(fails, p.message.empty() ? textOf(p.cond->IgnoreParens()) : p.message, p.loc);
  ExprPtr holds = m::And(st.pc, c);
  if (m::isFalse(holds)) return false;
  st.pc = holds;
  addFacts(st, c, true);
  return true;
}

}  // namespace layergate::cpp::detail::walker
