// Trace facts (issue 3): op registrations, entry functions and the objects
// they construct, the dispatch class's constructors, and the member uses in
// the dispatch's conditions.
#include "cpp/CppTraceFacts.h"

#include "cpp/DispatchWalker.h"
#include "model/Errors.h"

#include <algorithm>
#include <regex>
#include <tuple>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/Lex/Lexer.h"
#include "clang/Sema/Lookup.h"
#include "clang/Sema/Sema.h"

namespace layergate::cpp::detail::parse {

bool DeclareMissingOps::LookupUnqualified(LookupResult& r, Scope*) {
  if (!sema || r.isForRedeclaration() || r.getLookupKind() != Sema::LookupOrdinaryName) return false;
  const IdentifierInfo* id = r.getLookupName().getAsIdentifierInfo();
  if (!id) return false;
  const FunctionDecl* cur = sema->getCurFunctionDecl(/*AllowLambda=*/true);
  if (!cur || !cur->getIdentifier() || !cur->getName().starts_with("layergate_")) return false;
  FunctionDecl*& fd = made_[id];
  if (!fd) {
    ASTContext& c = sema->Context;
    FunctionProtoType::ExtProtoInfo epi;
    epi.Variadic = true;
    QualType t = c.getFunctionType(c.IntTy, {}, epi);
    SourceLocation l = r.getNameLoc();
    fd = FunctionDecl::Create(c, c.getTranslationUnitDecl(), l, l, r.getLookupName(), t,
                              c.getTrivialTypeSourceInfo(t, l), SC_Extern);
    fd->setImplicit(true);
    names.push_back(id->getName().str());
  }
  r.addDecl(fd);
  return true;
}

namespace {

std::string squashText(llvm::StringRef in) {
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

const Expr* stripTrivia(const Expr* e) {
  while (e) {
    if (auto* p = dyn_cast<ParenExpr>(e)) e = p->getSubExpr();
    else if (auto* c = dyn_cast<ExprWithCleanups>(e)) e = c->getSubExpr();
    else if (auto* t = dyn_cast<MaterializeTemporaryExpr>(e)) e = t->getSubExpr();
    else if (auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) e = b->getSubExpr();
    else if (auto* ce = dyn_cast<ConstantExpr>(e)) e = ce->getSubExpr();
    else if (auto* ic = dyn_cast<ImplicitCastExpr>(e)) e = ic->getSubExpr();
    else break;
  }
  return e;
}

// Strip parentheses and casts (implicit and explicit) and copy/conversion
// constructions of one argument: what value is passed.
const Expr* stripValue(const Expr* e) {
  for (int i = 0; e && i < 64; ++i) {
    e = stripTrivia(e);
    if (auto* c = dyn_cast_or_null<CastExpr>(e)) e = c->getSubExpr();
    else if (auto* cc = dyn_cast_or_null<CXXConstructExpr>(e);
             cc && cc->getNumArgs() == 1 && !isa<CXXTemporaryObjectExpr>(cc))
      e = cc->getArg(0);
    else break;
  }
  return e;
}

}  // namespace

std::string TraceCollector::text(const Stmt* e) {
  if (!e) return {};
  SourceLocation b = sm_.getSpellingLoc(e->getBeginLoc());
  SourceLocation en = sm_.getSpellingLoc(e->getEndLoc());
  if (b.isValid() && en.isValid() && sm_.getFileID(b) == sm_.getFileID(en)) {
    unsigned ob = sm_.getFileOffset(b), oe = sm_.getFileOffset(en);
    if (ob <= oe && oe - ob < 2000) {
      llvm::StringRef t = Lexer::getSourceText(CharSourceRange::getTokenRange(b, en), sm_, ctx_.getLangOpts());
      if (!t.empty() && !t.contains("#define")) return squashText(t);
    }
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  e->printPretty(os, nullptr, PrintingPolicy(ctx_.getLangOpts()));
  return squashText(os.str());
}

model::Location TraceCollector::loc(SourceLocation l, bool spelling, const char* role, const std::string& note) {
  model::Location out;
  out.role = role;
  out.note = note;
  if (l.isInvalid()) return out;
  SourceLocation f = spelling ? sm_.getSpellingLoc(l) : sm_.getExpansionLoc(l);
  if (f.isInvalid()) return out;
  out.file = file_name_(f);
  out.line = static_cast<int>(sm_.getSpellingLineNumber(f));
  out.col = static_cast<int>(sm_.getSpellingColumnNumber(f));
  return out;
}

// --- clang errors inside the dispatch -------------------------------------------

llvm::StringRef TraceCollector::lineText(SourceLocation l) {
  l = sm_.getSpellingLoc(l);
  if (l.isInvalid()) return {};
  bool bad = false;
  llvm::StringRef buf = sm_.getBufferData(sm_.getFileID(l), &bad);
  if (bad) return {};
  unsigned o = sm_.getFileOffset(l);
  std::size_t b = buf.rfind('\n', o), e = buf.find('\n', o);
  b = b == llvm::StringRef::npos ? 0 : b + 1;
  return buf.slice(b, e == llvm::StringRef::npos ? buf.size() : e);
}

bool TraceCollector::mayLaunch(SourceLocation l) {
  for (int i = 0; i < 16 && l.isValid(); ++i) {
    llvm::StringRef t = lineText(l);
    if (t.contains("<<<") || t.contains("aunch")) return true;
    if (!l.isMacroID()) break;
    l = sm_.getImmediateMacroCallerLoc(l);
  }
  return false;
}

bool TraceCollector::textRange(const FunctionDecl* fd, unsigned& ob, unsigned& oe) {
  SourceLocation b = sm_.getExpansionLoc(fd->getBeginLoc()), e = sm_.getExpansionLoc(fd->getEndLoc());
  if (b.isInvalid() || e.isInvalid() || sm_.getFileID(b) != sm_.getFileID(e)) return false;
  ob = sm_.getFileOffset(b);
  oe = sm_.getFileOffset(e);
  // Where the body's braces close as written: after a syntax error clang may
  // end the function early (an unterminated macro call runs to the end of
  // the file), and the error sits past the end clang recorded.
  const auto* body = dyn_cast_or_null<CompoundStmt>(fd->getBody());
  SourceLocation lb = body ? sm_.getExpansionLoc(body->getLBracLoc()) : SourceLocation();
  if (lb.isInvalid() || sm_.getFileID(lb) != sm_.getFileID(b)) return true;
  bool bad = false;
  llvm::StringRef buf = sm_.getBufferData(sm_.getFileID(lb), &bad);
  if (bad) return true;
  Lexer raw(sm_.getLocForStartOfFile(sm_.getFileID(lb)), ctx_.getLangOpts(), buf.begin(),
            buf.begin() + sm_.getFileOffset(lb), buf.end());
  int depth = 0;
  Token tok;
  for (raw.LexFromRawLexer(tok); tok.isNot(tok::eof); raw.LexFromRawLexer(tok)) {
    if (tok.is(tok::l_brace)) ++depth;
    if (tok.is(tok::r_brace) && --depth == 0) {
      oe = std::max(oe, sm_.getFileOffset(tok.getLocation()));
      return true;
    }
  }
  oe = std::max<unsigned>(oe, buf.size());  // never closed: to the end of the file
  return true;
}

const LocatedError* TraceCollector::lexicalErrorInside(const FunctionDecl* fd, const std::vector<LocatedError>& errors) {
  unsigned ob = 0, oe = 0;
  if (!textRange(fd, ob, oe)) return nullptr;
  FileID file = sm_.getFileID(sm_.getExpansionLoc(fd->getBeginLoc()));
  for (const LocatedError& err : errors) {
    if (!err.lexical) continue;
    SourceLocation x = sm_.getExpansionLoc(err.at);
    if (x.isInvalid() || sm_.getFileID(x) != file) continue;
    unsigned ox = sm_.getFileOffset(x);
    if (ox >= ob && ox <= oe) return &err;
  }
  return nullptr;
}

std::vector<model::OpaqueSymbol> TraceCollector::errorsInside(const FunctionDecl* fd,
                                                              const std::vector<LocatedError>& errors,
                                                              bool launches_seen, const detail::Reached* reached) {
  model::ExprPtr more_reached = model::False();
  bool more_parse = false;
  std::vector<model::OpaqueSymbol> out;
  unsigned ob = 0, oe = 0;
  if (!textRange(fd, ob, oe)) return out;
  SourceLocation b = sm_.getExpansionLoc(fd->getBeginLoc());
  std::size_t n = 0;
  for (const auto& [l, msg, syntax, lexical] : errors) {
    SourceLocation x = sm_.getExpansionLoc(l);
    if (x.isInvalid() || sm_.getFileID(x) != sm_.getFileID(b)) continue;
    unsigned ox = sm_.getFileOffset(x);
    if (ox < ob || ox > oe) continue;
    if (launches_seen && !syntax && !mayLaunch(l)) continue;
    // Only the paths through the statement clang could not type are in doubt.
    model::ExprPtr at = reached ? reached->at(l) : model::True();
    if (++n > 3) {
      more_reached = model::Or(more_reached, at);
      more_parse |= syntax;
      continue;
    }
    model::OpaqueSymbol o;
    o.name = "clang error in the dispatch";
    o.text = "clang error: " + msg;
    o.where = loc(l, false, "dispatch", "not understood: " + msg);
    o.reached = at;
    o.parse_error = syntax;
    out.push_back(std::move(o));
  }
  if (n > 3) {
    model::OpaqueSymbol o;
    o.name = o.text = std::to_string(n - 3) + " more clang error" + (n - 3 == 1 ? "" : "s") + " in the dispatch";
    o.reached = more_reached;
    o.parse_error = more_parse;
    out.push_back(std::move(o));
  }
  return out;
}

// --- parameters ---------------------------------------------------------------

std::string TraceCollector::paramType(const ParmVarDecl* p) {
  if (p->getIdentifier()) {
    SourceLocation b = sm_.getSpellingLoc(p->getBeginLoc()), n = sm_.getSpellingLoc(p->getLocation());
    if (b.isValid() && n.isValid() && sm_.getFileID(b) == sm_.getFileID(n) &&
        sm_.getFileOffset(b) < sm_.getFileOffset(n)) {
      std::string t = squashText(
          Lexer::getSourceText(CharSourceRange::getCharRange(b, n), sm_, ctx_.getLangOpts()));
      if (!t.empty()) return t;
    }
  } else if (TypeSourceInfo* tsi = p->getTypeSourceInfo()) {
    SourceRange r = tsi->getTypeLoc().getSourceRange();
    SourceLocation b = sm_.getSpellingLoc(r.getBegin()), e = sm_.getSpellingLoc(r.getEnd());
    if (b.isValid() && e.isValid() && sm_.getFileID(b) == sm_.getFileID(e)) {
      std::string t = squashText(
          Lexer::getSourceText(CharSourceRange::getTokenRange(b, e), sm_, ctx_.getLangOpts()));
      if (!t.empty()) return t;
    }
  }
  return p->getOriginalType().getAsString(PrintingPolicy(ctx_.getLangOpts()));
}

std::vector<model::CppParam> TraceCollector::params(const FunctionDecl* fd) {
  std::vector<model::CppParam> out;
  for (const ParmVarDecl* p : fd->parameters()) {
    model::CppParam cp;
    cp.type = paramType(p);
    cp.name = p->getNameAsString();
    cp.where = loc(p->getLocation(), false, "parameter", cp.name);
    if (p->hasDefaultArg()) {
      cp.has_default = true;
      SourceRange r = p->getDefaultArgRange();
      SourceLocation b = sm_.getSpellingLoc(r.getBegin()), e = sm_.getSpellingLoc(r.getEnd());
      if (b.isValid() && e.isValid() && sm_.getFileID(b) == sm_.getFileID(e))
        cp.default_text = squashText(
            Lexer::getSourceText(CharSourceRange::getTokenRange(b, e), sm_, ctx_.getLangOpts()));
      else if (const Expr* d = p->hasUnparsedDefaultArg() ? nullptr : p->getInit())
        cp.default_text = text(d);
    }
    out.push_back(std::move(cp));
  }
  return out;
}

// Locals of a body that are assigned, incremented or have their address
// taken after their initialisation: not stand-ins for their initialiser.
std::set<const VarDecl*> TraceCollector::reassigned(const Stmt* body) {
  std::set<const VarDecl*> out;
  auto var = [](const Expr* e) -> const VarDecl* {
    e = stripTrivia(e);
    if (auto* d = dyn_cast_or_null<DeclRefExpr>(e)) return dyn_cast<VarDecl>(d->getDecl());
    return nullptr;
  };
  std::vector<const Stmt*> stack{body};
  while (!stack.empty()) {
    const Stmt* s = stack.back();
    stack.pop_back();
    if (!s) continue;
    if (auto* b = dyn_cast<BinaryOperator>(s)) {
      if (b->isAssignmentOp())
        if (auto* v = var(b->getLHS())) out.insert(v);
    } else if (auto* u = dyn_cast<UnaryOperator>(s)) {
      if (u->isIncrementDecrementOp() || u->getOpcode() == UO_AddrOf)
        if (auto* v = var(u->getSubExpr())) out.insert(v);
    } else if (auto* op = dyn_cast<CXXOperatorCallExpr>(s)) {
      if (op->isAssignmentOp() && op->getNumArgs() >= 1)
        if (auto* v = var(op->getArg(0))) out.insert(v);
    }
    for (const Stmt* c : s->children()) stack.push_back(c);
  }
  return out;
}

// Index of fd's parameter that e is (through casts, or a local initialised
// from it and never reassigned), else -1.
int TraceCollector::paramIndex(const Expr* e, const FunctionDecl* fd, const std::set<const VarDecl*>& reassigned,
                               int depth) {
  e = stripValue(e);
  auto* d = dyn_cast_or_null<DeclRefExpr>(e);
  if (!d) return -1;
  if (auto* p = dyn_cast<ParmVarDecl>(d->getDecl())) {
    for (unsigned i = 0; i < fd->getNumParams(); ++i)
      if (fd->getParamDecl(i) == p) return static_cast<int>(i);
    return -1;
  }
  if (auto* v = dyn_cast<VarDecl>(d->getDecl()))
    if (v->isLocalVarDecl() && !reassigned.count(v) && v->getInit() && depth < 8)
      return paramIndex(v->getInit(), fd, reassigned, depth + 1);
  return -1;
}

int TraceCollector::sizeOfParam(const Expr* e, const FunctionDecl* fd, const std::set<const VarDecl*>& reassigned,
                                int depth) {
  e = stripValue(e);
  if (!e || depth > 8) return -1;
  if (auto* m = dyn_cast<CXXMemberCallExpr>(e)) {
    const CXXMethodDecl* md = m->getMethodDecl();
    if (md && md->getIdentifier() && md->getName() == "size" && m->getNumArgs() == 0)
      return paramIndex(m->getImplicitObjectArgument(), fd, reassigned);
    return -1;
  }
  if (auto* d = dyn_cast<DeclRefExpr>(e))
    if (auto* v = dyn_cast<VarDecl>(d->getDecl()))
      if (v->isLocalVarDecl() && !reassigned.count(v) && v->getInit())
        return sizeOfParam(v->getInit(), fd, reassigned, depth + 1);
  return -1;
}

// --- constructions --------------------------------------------------------------

bool TraceCollector::isSpecClass(llvm::StringRef name) const {
  for (const auto& c : spec_.class_names)
    if (name == c) return true;
  return false;
}

// The spec class a type names (possibly namespaced or dependent), or "".
std::string TraceCollector::specClassOf(QualType t) const {
  if (t.isNull()) return {};
  t = t.getNonReferenceType();
  if (auto* rd = t->getAsCXXRecordDecl())
    return isSpecClass(rd->getName()) ? rd->getName().str() : std::string();
  std::string s = t.getUnqualifiedType().getAsString();
  if (auto lt = s.find('<'); lt != std::string::npos) s = s.substr(0, lt);
  if (auto c = s.rfind("::"); c != std::string::npos) s = s.substr(c + 2);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return isSpecClass(s) ? s : std::string();
}

std::vector<const Expr*> TraceCollector::ctorArgs(const Expr* init) {
  std::vector<const Expr*> out;
  init = stripTrivia(init);
  if (!init) return out;
  if (auto* ce = dyn_cast<CXXConstructExpr>(init)) {
    for (const Expr* a : ce->arguments()) {
      if (isa<CXXDefaultArgExpr>(a)) break;  // not written: the default applies
      out.push_back(a);
    }
  } else if (auto* pl = dyn_cast<ParenListExpr>(init)) {
    for (unsigned i = 0; i < pl->getNumExprs(); ++i) out.push_back(pl->getExpr(i));
  } else if (auto* il = dyn_cast<InitListExpr>(init)) {
    for (const Expr* a : il->inits()) out.push_back(a);
  } else if (auto* re = dyn_cast<RecoveryExpr>(init)) {
    for (const Expr* a : re->subExpressions()) out.push_back(a);
  } else {
    out.push_back(init);
  }
  return out;
}

void TraceCollector::addConstruction(std::vector<model::Construction>& out, const std::string& cls,
                                     const std::vector<const Expr*>& args, SourceLocation where,
                                     const FunctionDecl* fd, const std::set<const VarDecl*>& re) {
  model::Construction c;
  c.class_name = cls;
  for (const Expr* a : args) {
    c.arg_texts.push_back(text(a));
    c.arg_param.push_back(paramIndex(a, fd, re));
    c.arg_size_of.push_back(sizeOfParam(a, fd, re));
    c.arg_locs.push_back(loc(a->getBeginLoc(), false, "argument", c.arg_texts.back()));
  }
  c.where = loc(where, false, "construction", cls);
  out.push_back(std::move(c));
}

std::vector<model::Construction> TraceCollector::constructions(const FunctionDecl* fd) {
  std::vector<model::Construction> out;
  const Stmt* body = fd->getBody();
  if (!body) return out;
  std::set<const VarDecl*> re = reassigned(body);
  std::set<const Expr*> done;
  std::vector<const Stmt*> stack{body};
  while (!stack.empty()) {
    const Stmt* s = stack.back();
    stack.pop_back();
    if (!s) continue;
    if (auto* ne = dyn_cast<CXXNewExpr>(s)) {
      std::string cls = specClassOf(ne->getAllocatedType());
      if (!cls.empty()) {
        std::vector<const Expr*> args;
        if (const Expr* init = ne->getInitializer()) args = ctorArgs(init);
        if (const CXXConstructExpr* ce = ne->getConstructExpr()) done.insert(ce);
        addConstruction(out, cls, args, ne->getBeginLoc(), fd, re);
      }
    } else if (auto* ce = dyn_cast<CXXConstructExpr>(s); ce && !done.count(ce)) {
      const CXXConstructorDecl* ctor = ce->getConstructor();
      std::string cls = specClassOf(ce->getType());
      if (!cls.empty() && !(ctor && ctor->isCopyOrMoveConstructor()))
        addConstruction(out, cls, ctorArgs(ce), ce->getBeginLoc(), fd, re);
    } else if (auto* uc = dyn_cast<CXXUnresolvedConstructExpr>(s)) {
      std::string cls = specClassOf(uc->getTypeAsWritten());
      if (!cls.empty()) {
        std::vector<const Expr*> args(uc->arg_begin(), uc->arg_end());
        addConstruction(out, cls, args, uc->getBeginLoc(), fd, re);
      }
    } else if (auto* call = dyn_cast<CallExpr>(s); call && !isa<CXXMemberCallExpr>(call)) {
      // std::make_unique<C>(args) / std::make_shared<C>(args)
      const Expr* callee = stripTrivia(call->getCallee());
      llvm::ArrayRef<TemplateArgumentLoc> targs;
      std::string name;
      if (auto* dr = dyn_cast_or_null<DeclRefExpr>(callee)) {
        name = dr->getDecl()->getNameAsString();
        targs = dr->template_arguments();
      } else if (auto* ul = dyn_cast_or_null<UnresolvedLookupExpr>(callee)) {
        name = ul->getName().getAsString();
        targs = ul->template_arguments();
      }
      if ((name == "make_unique" || name == "make_shared") && !targs.empty() &&
          targs[0].getArgument().getKind() == TemplateArgument::Type) {
        std::string cls = specClassOf(targs[0].getArgument().getAsType());
        if (!cls.empty()) {
          std::vector<const Expr*> args(call->arg_begin(), call->arg_end());
          addConstruction(out, cls, args, call->getBeginLoc(), fd, re);
        }
      }
    }
    std::vector<const Stmt*> kids(s->child_begin(), s->child_end());
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  std::stable_sort(out.begin(), out.end(), [](const model::Construction& a, const model::Construction& b) {
    return std::tie(a.where.line, a.where.col) < std::tie(b.where.line, b.where.col);
  });
  return out;
}

// --- entries and constructors ---------------------------------------------------

void TraceCollector::entry(const FunctionDecl* fd) {
  if (isa<CXXMethodDecl>(fd) || !fd->doesThisDeclarationHaveABody() || fd->isTemplateInstantiation()) return;
  if (!fd->getIdentifier() || fd->getName().starts_with("layergate_")) return;
  if (fd->hasAttr<CUDAGlobalAttr>() || (fd->hasAttr<CUDADeviceAttr>() && !fd->hasAttr<CUDAHostAttr>())) return;
  if (!in_given_(fd->getLocation())) return;
  model::CppEntry e;
  e.name = fd->getNameAsString();
  e.params = params(fd);
  e.constructs = constructions(fd);
  e.where = loc(fd->getLocation(), false, "entry", e.name);
  if (fd->getReturnType()->isBooleanType()) {
    detail::WalkOptions wo;
    wo.file_name = file_name_;
    wo.is_user_code = [this](const SourceLocation& l) { return in_given_(l); };
    try {
      e.returns_true = detail::walkPredicate(ctx_, fd, spec_, wo, e.opaques);
    } catch (const InputError&) {
      e.returns_true = nullptr;  // too deep or too many paths: left uninterpreted
    }
  }
  facts.entries.push_back(std::move(e));
}

const MemberExpr* TraceCollector::memberOfThis(const Expr* e) {
  auto* me = dyn_cast_or_null<MemberExpr>(stripTrivia(e));
  if (!me) return nullptr;
  const Expr* base = stripTrivia(me->getBase());
  if (me->isImplicitAccess() || isa_and_nonnull<CXXThisExpr>(base)) return me;
  return nullptr;
}

void TraceCollector::ctor(const CXXConstructorDecl* cd) {
  if (cd->isImplicit() || cd->isDeleted() || cd->isCopyOrMoveConstructor()) return;
  const CXXRecordDecl* rd = cd->getParent();
  if (!rd || !isSpecClass(rd->getName())) return;
  const FunctionDecl* def = cd->getDefinition();
  if (def && def != cd) return;  // the definition is visited by itself
  CtorFact f;
  f.info.class_name = rd->getNameAsString();
  f.info.params = params(cd);
  f.info.where = loc(cd->getLocation(), false, "constructor", f.info.class_name);
  f.has_body = cd->doesThisDeclarationHaveABody();
  std::set<const VarDecl*> re = reassigned(cd->getBody());
  for (const CXXCtorInitializer* init : cd->inits()) {
    if (!init->isWritten() || !init->isAnyMemberInitializer()) continue;
    const Expr* value = init->getInit();
    std::vector<const Expr*> args = ctorArgs(value);
    const Expr* one = args.size() == 1 ? args.front() : value;
    model::MemberInit mi;
    mi.member = init->getAnyMember()->getNameAsString();
    mi.param = args.size() == 1 ? paramIndex(one, cd, re) : -1;
    mi.text = args.size() == 1 ? text(one) : text(value);
    mi.where = loc(init->getSourceLocation(), false, "member-init", mi.member);
    f.info.inits.push_back(std::move(mi));
  }
  // Body assignments: member = value;
  std::vector<const Stmt*> stack{cd->getBody()};
  std::vector<std::pair<const Expr*, const Expr*>> assigns;
  while (!stack.empty()) {
    const Stmt* s = stack.back();
    stack.pop_back();
    if (!s) continue;
    if (auto* b = dyn_cast<BinaryOperator>(s); b && b->getOpcode() == BO_Assign)
      assigns.push_back({b->getLHS(), b->getRHS()});
    else if (auto* op = dyn_cast<CXXOperatorCallExpr>(s);
             op && op->getOperator() == OO_Equal && op->getNumArgs() == 2)
      assigns.push_back({op->getArg(0), op->getArg(1)});
    if (isa<LambdaExpr>(s)) continue;
    std::vector<const Stmt*> kids(s->child_begin(), s->child_end());
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  for (auto& [lhs, rhs] : assigns) {
    std::string member;
    if (const MemberExpr* me = memberOfThis(lhs)) member = me->getMemberDecl()->getNameAsString();
    else if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(stripTrivia(lhs)))
      if (dm->isImplicitAccess() || isa_and_nonnull<CXXThisExpr>(stripTrivia(dm->getBase())))
        member = dm->getMember().getAsString();
    if (member.empty()) continue;
    model::MemberInit mi;
    mi.member = member;
    mi.param = paramIndex(rhs, cd, re);
    mi.text = text(rhs);
    mi.where = loc(lhs->getBeginLoc(), false, "member-assign", member);
    f.info.inits.push_back(std::move(mi));
  }
  facts.ctors.push_back(std::move(f));
}

// --- bindings -------------------------------------------------------------------

// "name(int a, bool b=True) -> int": the parameters of a torch schema.
std::vector<model::CppParam> TraceCollector::schemaParams(const std::string& schema) {
  std::vector<model::CppParam> out;
  std::size_t open = schema.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::size_t close = std::string::npos;
  for (std::size_t i = open; i < schema.size(); ++i) {
    if (schema[i] == '(' || schema[i] == '[') ++depth;
    else if (schema[i] == ')' || schema[i] == ']') {
      if (--depth == 0) {
        close = i;
        break;
      }
    }
  }
  if (close == std::string::npos) close = schema.size();
  std::string body = schema.substr(open + 1, close - open - 1);
  std::vector<std::string> parts;
  std::string cur;
  depth = 0;
  for (char c : body) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  auto trim = [](std::string s) {
    std::size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  for (std::string p : parts) {
    p = squashText(trim(p));
    if (p.empty() || p == "*") continue;
    model::CppParam cp;
    depth = 0;
    std::size_t eq = std::string::npos, lastSpace = std::string::npos;
    for (std::size_t i = 0; i < p.size(); ++i) {
      char c = p[i];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (depth == 0 && c == '=' && eq == std::string::npos) eq = i;
      if (depth == 0 && c == ' ' && eq == std::string::npos) lastSpace = i;
    }
    std::string decl = p;
    if (eq != std::string::npos) {
      cp.has_default = true;
      cp.default_text = trim(p.substr(eq + 1));
      decl = trim(p.substr(0, eq));
      lastSpace = decl.rfind(' ');
    }
    if (lastSpace == std::string::npos || lastSpace >= decl.size()) {
      cp.type = decl;
    } else {
      cp.type = trim(decl.substr(0, lastSpace));
      cp.name = trim(decl.substr(lastSpace + 1));
    }
    out.push_back(std::move(cp));
  }
  return out;
}

std::string TraceCollector::literal(const Expr* e) {
  e = stripValue(e);
  if (auto* s = dyn_cast_or_null<StringLiteral>(e)) return s->getString().str();
  return {};
}

// The function an argument refers to: &fn, fn, (&fn), TORCH_BOX(&fn),
// torch::dispatch(kCUDA, &fn).
std::string TraceCollector::functionRef(const Expr* e, int depth) {
  e = stripValue(e);
  if (!e || depth > 4) return {};
  if (auto* u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_AddrOf) e = stripValue(u->getSubExpr());
  if (auto* d = dyn_cast_or_null<DeclRefExpr>(e))
    if (isa<FunctionDecl>(d->getDecl())) return d->getDecl()->getNameAsString();
  if (auto* o = dyn_cast_or_null<OverloadExpr>(e)) return o->getName().getAsString();
  if (auto* c = dyn_cast_or_null<CallExpr>(e))
    for (const Expr* a : c->arguments())
      if (std::string f = functionRef(a, depth + 1); !f.empty()) return f;
  return {};
}

void TraceCollector::binding(const std::string& method, const std::vector<const Expr*>& args, const Expr* call) {
  if ((method != "def" && method != "impl") || args.empty()) return;
  if (!in_given_(call->getBeginLoc())) return;
  std::string lit = literal(args[0]);
  if (lit.empty()) return;
  model::OpBinding b;
  std::string head = lit.substr(0, lit.find('('));
  while (!head.empty() && (head.back() == ' ' || head.back() == '\n')) head.pop_back();
  if (auto c = head.rfind("::"); c != std::string::npos) head = head.substr(c + 2);  // "ns::op"
  if (auto dot = head.find('.'); dot != std::string::npos) head = head.substr(0, dot);  // "op.overload"
  b.op = head;
  for (std::size_t i = 1; i < args.size() && b.function.empty(); ++i) b.function = functionRef(args[i]);
  if (b.function.empty() && args.size() > 1) {
    // Not resolved (a parse error): the source text still names it.
    static const std::regex ref(R"(&\s*([A-Za-z_][A-Za-z_0-9]*(::[A-Za-z_][A-Za-z_0-9]*)*))");
    std::string t = text(call);
    std::smatch m;
    std::string last;
    for (auto it = std::sregex_iterator(t.begin(), t.end(), ref); it != std::sregex_iterator(); ++it)
      last = (*it)[1];
    if (auto c = last.rfind("::"); c != std::string::npos) last = last.substr(c + 2);
    b.function = last;
  }
  if (method == "impl") {
    b.kind = "torch-impl";
  } else if (lit.find('(') != std::string::npos) {
    b.kind = "torch-schema";
    b.schema_params = schemaParams(lit);
    // Locate each parameter inside the (possibly multi-line, concatenated)
    // string literal, so that the trace points at the line that names it.
    if (auto* sl = dyn_cast_or_null<StringLiteral>(stripValue(args[0])); sl && sl->isOrdinary()) {
      std::size_t from = lit.find('(');
      for (auto& p : b.schema_params) {
        if (p.name.empty() || from == std::string::npos) continue;
        std::size_t at = lit.find(p.name, from);
        if (at == std::string::npos) continue;
        from = at + p.name.size();
        p.where = loc(sl->getLocationOfByte(static_cast<unsigned>(at), sm_, ctx_.getLangOpts(), ctx_.getTargetInfo()),
                      false, "schema-parameter", p.name);
      }
    }
  } else if (!b.function.empty()) {
    b.kind = "pybind11";
  } else {
    return;
  }
  b.where = loc(call->getBeginLoc(), false, "binding", lit);
  facts.bindings.push_back(std::move(b));
}

void TraceCollector::call(const CallExpr* c) {
  const Expr* callee = stripTrivia(c->getCallee());
  std::string method;
  if (auto* me = dyn_cast_or_null<MemberExpr>(callee)) method = me->getMemberDecl()->getNameAsString();
  else if (auto* um = dyn_cast_or_null<UnresolvedMemberExpr>(callee)) method = um->getMemberName().getAsString();
  else if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(callee)) method = dm->getMember().getAsString();
  else return;
  std::vector<const Expr*> args(c->arg_begin(), c->arg_end());
  binding(method, args, c);
}

void TraceCollector::recovery(const RecoveryExpr* r) {
  auto subs = r->subExpressions();
  if (subs.empty()) return;
  const Expr* callee = stripTrivia(subs[0]);
  std::string method;
  if (auto* me = dyn_cast_or_null<MemberExpr>(callee)) method = me->getMemberDecl()->getNameAsString();
  else if (auto* um = dyn_cast_or_null<UnresolvedMemberExpr>(callee)) method = um->getMemberName().getAsString();
  else if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(callee)) method = dm->getMember().getAsString();
  else return;
  std::vector<const Expr*> args(subs.begin() + 1, subs.end());
  binding(method, args, r);
}

// --- member uses in the dispatch's conditions ------------------------------------

// The condition of a precondition check the target names (RuntimeCheck(cond,
// ...)): a function called with it, or a class constructed from it (SGLang's
// RuntimeCheck is a struct whose constructor checks: a functional cast, a
// temporary object or, in a template, an unresolved construct expression).
const Expr* TraceCollector::preconditionCondition(const Stmt* s) const {
  if (spec_.preconditions.empty()) return nullptr;
  auto named = [&](const std::string& n) {
    return std::find(spec_.preconditions.begin(), spec_.preconditions.end(), n) != spec_.preconditions.end();
  };
  auto typeName = [](QualType t) -> std::string {
    if (t.isNull()) return {};
    if (auto* ts = t->getAs<TemplateSpecializationType>())
      if (auto* td = ts->getTemplateName().getAsTemplateDecl()) return td->getNameAsString();
    if (auto* rd = t->getAsCXXRecordDecl()) return rd->getNameAsString();
    return {};
  };
  if (auto* ce = dyn_cast<CallExpr>(s); ce && ce->getNumArgs() > 0) {
    std::string callee;
    if (const FunctionDecl* fd = ce->getDirectCallee()) callee = fd->getNameAsString();
    else if (auto* ul = dyn_cast<UnresolvedLookupExpr>(ce->getCallee()->IgnoreImpCasts())) callee = ul->getName().getAsString();
    return named(callee) ? ce->getArg(0) : nullptr;
  }
  if (auto* fc = dyn_cast<CXXFunctionalCastExpr>(s); fc && named(typeName(fc->getTypeAsWritten()))) {
    if (auto* cc = dyn_cast<CXXConstructExpr>(fc->getSubExpr()->IgnoreImplicit()); cc && cc->getNumArgs() > 0)
      return cc->getArg(0);
    return fc->getSubExpr();
  }
  if (auto* cc = dyn_cast<CXXConstructExpr>(s); cc && cc->getNumArgs() > 0 && cc->getConstructor() &&
                                                 named(cc->getConstructor()->getParent()->getNameAsString()))
    return cc->getArg(0);
  if (auto* uc = dyn_cast<CXXUnresolvedConstructExpr>(s); uc && uc->getNumArgs() > 0 && named(typeName(uc->getTypeAsWritten())))
    return uc->getArg(0);
  return nullptr;
}

void TraceCollector::memberUses(const FunctionDecl* dispatch) {
  std::set<std::tuple<std::string, std::string, int, int>> seen;
  auto scan = [&](const Expr* cond, const char* role = "member-use") {
    if (!cond) return;
    std::vector<const Stmt*> stack{cond};
    while (!stack.empty()) {
      const Stmt* s = stack.back();
      stack.pop_back();
      if (!s) continue;
      std::string name;
      if (auto* me = dyn_cast<MemberExpr>(s)) name = me->getMemberDecl()->getNameAsString();
      else if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(s)) name = dm->getMember().getAsString();
      else if (auto* dr = dyn_cast<DeclRefExpr>(s)) name = dr->getDecl()->getNameAsString();
      auto it = name.empty() ? spec_.members.end() : spec_.members.find(name);
      if (it != spec_.members.end()) {
        model::MemberUse u;
        u.member = name;
        u.config = it->second;
        u.where = loc(cond->getBeginLoc(), true, role, text(cond));
        if (seen.insert({u.member, u.where.file, u.where.line, u.where.col}).second)
          facts.member_uses.push_back(std::move(u));
      }
      for (const Stmt* c : s->children()) stack.push_back(c);
    }
  };
  std::vector<const Stmt*> stack{dispatch->getBody()};
  while (!stack.empty()) {
    const Stmt* s = stack.back();
    stack.pop_back();
    if (!s) continue;
    if (auto* is = dyn_cast<IfStmt>(s)) scan(is->getCond());
    else if (auto* sw = dyn_cast<SwitchStmt>(s)) scan(sw->getCond());
    else if (auto* co = dyn_cast<AbstractConditionalOperator>(s)) scan(co->getCond());
    else if (auto* w = dyn_cast<WhileStmt>(s)) scan(w->getCond());
    else if (auto* f = dyn_cast<ForStmt>(s)) scan(f->getCond());
    else if (auto* d = dyn_cast<DoStmt>(s)) scan(d->getCond());
    else if (const Expr* cond = preconditionCondition(s)) scan(cond, "precondition");
    std::vector<const Stmt*> kids(s->child_begin(), s->child_end());
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  std::stable_sort(facts.member_uses.begin(), facts.member_uses.end(),
                   [](const model::MemberUse& a, const model::MemberUse& b) {
                     return std::tie(a.where.file, a.where.line, a.where.col) <
                            std::tie(b.where.file, b.where.line, b.where.col);
                   });
}

}  // namespace layergate::cpp::detail::parse
