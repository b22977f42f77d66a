// C++ frontend: parse the given .cuh/.cu files with Clang in CUDA host mode
// (bundled stub headers by default), find Class::dispatch, and hand its body
// to the path walker. Missing includes get empty in-memory files; Clang errors
// are counted and reported as notes, never fatal to the analysis.
#include "cpp/CppFrontend.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Basic/Stack.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Basic/Version.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Lexer.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Sema/ExternalSemaSource.h"
#include "clang/Sema/Lookup.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "clang/Tooling/Tooling.h"
#include "cpp/DispatchWalker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/xxhash.h"
#include <unistd.h>
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/thread.h"
#include "model/Errors.h"
#include "target/Paths.h"

#ifndef LAYERGATE_CLANG_RESOURCE_DIR
#define LAYERGATE_CLANG_RESOURCE_DIR "/usr/lib/llvm-19/lib/clang/19"
#endif

namespace layergate::cpp {
namespace {

using namespace clang;

// Directory where empty files stand in for angle-bracket includes that
// cannot be found. It exists only in the in-memory overlay.
constexpr const char* kMissingDir = "/__layergate_missing__";

std::string normalized(llvm::StringRef p) {
  llvm::SmallString<256> s(p);
  llvm::sys::fs::make_absolute(s);
  llvm::sys::path::remove_dots(s, /*remove_dot_dot=*/true);
  return std::string(s.str());
}

std::string dirOf(const std::string& path) {
  llvm::SmallString<256> s(llvm::sys::path::parent_path(normalized(path)));
  return s.empty() ? std::string(".") : std::string(s.str());
}

bool startsWithDir(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// ---------------------------------------------------------------------------
// Diagnostics: count errors, remember the first one; never print.

class CollectingDiags : public DiagnosticConsumer {
 public:
  void HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < DiagnosticsEngine::Error) return;
    ++errors;
    if (level == DiagnosticsEngine::Fatal) fatal = true;
    if (info.hasSourceManager() && info.getLocation().isValid() && located.size() < kMaxLocated) {
      llvm::SmallString<256> m;
      info.FormatDiagnostic(m);
      located.push_back({info.getLocation(), std::string(m.str())});
    }
    if (!first.empty() && !(level == DiagnosticsEngine::Fatal && first_fatal.empty())) return;
    llvm::SmallString<256> msg;
    info.FormatDiagnostic(msg);
    std::string where;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      PresumedLoc p = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (p.isValid()) where = std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ": ";
    }
    std::string text = where + std::string(msg.str());
    if (first.empty()) first = text;
    if (level == DiagnosticsEngine::Fatal && first_fatal.empty()) first_fatal = text;
  }
  unsigned errors = 0;
  bool fatal = false;
  std::string first, first_fatal;
  // Every error with a location (the first kMaxLocated), for the dispatch to
  // find those inside it while the source manager lives.
  static constexpr std::size_t kMaxLocated = 4096;
  std::vector<std::pair<SourceLocation, std::string>> located;
};

// ---------------------------------------------------------------------------
// One parse of one file.

// A constructor of a class of the spec, with whether its body was seen.
struct CtorFact {
  model::CtorInfo info;
  bool has_body = false;
};

// Trace facts (issue 3) from one translation unit.
struct TraceFacts {
  std::vector<model::OpBinding> bindings;
  std::vector<model::CppEntry> entries;
  std::vector<CtorFact> ctors;
  std::vector<model::MemberUse> member_uses;  // only from the TU whose dispatch was walked
  std::vector<std::string> declared_missing;  // functions named in registrations but declared nowhere
};

struct ParseResult {
  bool found = false;
  model::Dispatch dispatch;
  std::vector<std::string> notes;
  std::exception_ptr error;  // InputError from the walker
  TraceFacts facts;
};

class DeclareMissingOps;

struct ParseJob {
  std::string path;  // as given by the caller
  const std::vector<std::string>* inputs = nullptr;  // every file the caller gave
  bool want_dispatch = true;  // false once another file gave the dispatch
  llvm::IntrusiveRefCntPtr<DeclareMissingOps> missing_ops;
  const target::CppDispatchSpec* spec = nullptr;
  const ParseOptions* options = nullptr;
  std::string stub_dir;
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> memfs;
  std::map<std::string, std::string> stubbed;  // path of the empty file -> note
  std::set<std::string> stub_noted;
  const CollectingDiags* diags = nullptr;
  ParseResult result;
};

class IncludeWatcher : public PPCallbacks {
 public:
  IncludeWatcher(ParseJob& job, SourceManager& sm) : job_(job), sm_(sm) {}
  void InclusionDirective(SourceLocation hash, const Token&, StringRef, bool, CharSourceRange,
                          OptionalFileEntryRef file, StringRef, StringRef, const Module*, bool,
                          SrcMgr::CharacteristicKind) override {
    if (!file) return;
    std::string p = normalized(file->getName());
    auto it = job_.stubbed.find(p);
    if (it == job_.stubbed.end()) return;
    if (job_.stub_noted.insert(p).second) job_.result.notes.push_back(it->second);
  }
  bool FileNotFound(StringRef name) override {
    // Safety net for includes the pre-scan could not see (computed names).
    std::string n = "stubbed missing include \"" + name.str() + "\" (found while parsing)";
    if (job_.stub_noted.insert("?" + name.str()).second) job_.result.notes.push_back(n);
    return true;
  }

 private:
  ParseJob& job_;
  SourceManager& sm_;
};

class FindDispatch : public RecursiveASTVisitor<FindDispatch> {
 public:
  explicit FindDispatch(const target::CppDispatchSpec& spec) : spec_(spec) {}
  // A member function of one of the spec's classes, or, when the spec names no
  // class, a namespace-scope function (a free function template such as a
  // dispatch on the ranks per node).
  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (!fd->doesThisDeclarationHaveABody() || fd->isTemplateInstantiation()) return true;
    std::string fn = fd->getNameAsString();
    bool fnOk = false, clsOk = false;
    for (auto& f : spec_.dispatch_functions) fnOk |= (f == fn);
    if (auto* md = dyn_cast<CXXMethodDecl>(fd)) {
      std::string cls = md->getParent()->getNameAsString();
      for (auto& c : spec_.class_names) clsOk |= (c == cls);
    } else {
      clsOk = spec_.class_names.empty() && fd->getDeclContext()->getRedeclContext()->isFileContext();
    }
    if (fnOk && clsOk) found.push_back(fd);
    return true;
  }
  std::vector<const FunctionDecl*> found;

 private:
  const target::CppDispatchSpec& spec_;
};

// ---------------------------------------------------------------------------
// Trace facts (issue 3): op registrations, entry functions and the objects
// they construct, the dispatch class's constructors, and the dispatch
// conditions that read a config member. Found by shapes and positions, never
// by the flag's spelling.

// Registration blocks (TORCH_LIBRARY..., PYBIND11_MODULE) expand, through the
// bundled stubs, to functions named layergate_*. A function they name that no
// given file declares (its header, e.g. sgl_kernel_ops.h, was not given) is
// declared on the fly as `int name(...)`, so that `&name` stays in the AST.
class DeclareMissingOps : public ExternalSemaSource {
 public:
  Sema* sema = nullptr;
  std::vector<std::string> names;

  bool LookupUnqualified(LookupResult& r, Scope*) override {
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

 private:
  std::map<const IdentifierInfo*, FunctionDecl*> made_;
};

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

class TraceCollector {
 public:
  TraceCollector(ASTContext& ctx, const target::CppDispatchSpec& spec,
                 std::function<std::string(const SourceLocation&)> file_name,
                 std::function<bool(SourceLocation)> in_given)
      : ctx_(ctx), sm_(ctx.getSourceManager()), spec_(spec), file_name_(std::move(file_name)),
        in_given_(std::move(in_given)) {}

  std::string text(const Stmt* e) {
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

  model::Location loc(SourceLocation l, bool spelling, const char* role, const std::string& note = {}) {
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

  // The source line a location is written on (its spelling).
  llvm::StringRef lineText(SourceLocation l) {
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

  // Whether an error's code may be a kernel launch: its line, or the line of
  // the macro use it expands from, launches (<<<, a launch API or helper).
  bool mayLaunch(SourceLocation l) {
    for (int i = 0; i < 16 && l.isValid(); ++i) {
      llvm::StringRef t = lineText(l);
      if (t.contains("<<<") || t.contains("aunch")) return true;
      if (!l.isMacroID()) break;
      l = sm_.getImmediateMacroCallerLoc(l);
    }
    return false;
  }

  // Clang errors inside a function (where the code is expanded, so a macro
  // used there counts) that may hide a launch: on a launching line, or any
  // when the walker saw no launch at all there (clang drops a statement that
  // names a declaration it rejected, such as a kernel whose parameter types
  // come from a missing header). The first few, with their messages.
  std::vector<model::OpaqueSymbol> errorsInside(const FunctionDecl* fd,
                                                const std::vector<std::pair<SourceLocation, std::string>>& errors,
                                                bool launches_seen) {
    std::vector<model::OpaqueSymbol> out;
    SourceLocation b = sm_.getExpansionLoc(fd->getBeginLoc()), e = sm_.getExpansionLoc(fd->getEndLoc());
    if (b.isInvalid() || e.isInvalid() || sm_.getFileID(b) != sm_.getFileID(e)) return out;
    unsigned ob = sm_.getFileOffset(b), oe = sm_.getFileOffset(e);
    std::size_t n = 0;
    for (const auto& [l, msg] : errors) {
      SourceLocation x = sm_.getExpansionLoc(l);
      if (x.isInvalid() || sm_.getFileID(x) != sm_.getFileID(b)) continue;
      unsigned ox = sm_.getFileOffset(x);
      if (ox < ob || ox > oe) continue;
      if (launches_seen && !mayLaunch(l)) continue;
      if (++n > 3) continue;
      model::OpaqueSymbol o;
      o.name = "clang error in the dispatch";
      o.text = "clang error: " + msg;
      o.where = loc(l, false, "dispatch", "not understood: " + msg);
      out.push_back(std::move(o));
    }
    if (n > 3) {
      model::OpaqueSymbol o;
      o.name = o.text = std::to_string(n - 3) + " more clang error" + (n - 3 == 1 ? "" : "s") + " in the dispatch";
      out.push_back(std::move(o));
    }
    return out;
  }

  // --- parameters ---------------------------------------------------------------

  std::string paramType(const ParmVarDecl* p) {
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

  std::vector<model::CppParam> params(const FunctionDecl* fd) {
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
  static std::set<const VarDecl*> reassigned(const Stmt* body) {
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
  static int paramIndex(const Expr* e, const FunctionDecl* fd, const std::set<const VarDecl*>& reassigned,
                        int depth = 0) {
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

  // --- constructions --------------------------------------------------------------

  bool isSpecClass(llvm::StringRef name) const {
    for (const auto& c : spec_.class_names)
      if (name == c) return true;
    return false;
  }

  // The spec class a type names (possibly namespaced or dependent), or "".
  std::string specClassOf(QualType t) const {
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

  static std::vector<const Expr*> ctorArgs(const Expr* init) {
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

  void addConstruction(std::vector<model::Construction>& out, const std::string& cls,
                       const std::vector<const Expr*>& args, SourceLocation where, const FunctionDecl* fd,
                       const std::set<const VarDecl*>& re) {
    model::Construction c;
    c.class_name = cls;
    for (const Expr* a : args) {
      c.arg_texts.push_back(text(a));
      c.arg_param.push_back(paramIndex(a, fd, re));
      c.arg_locs.push_back(loc(a->getBeginLoc(), false, "argument", c.arg_texts.back()));
    }
    c.where = loc(where, false, "construction", cls);
    out.push_back(std::move(c));
  }

  std::vector<model::Construction> constructions(const FunctionDecl* fd) {
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

  void entry(const FunctionDecl* fd) {
    if (isa<CXXMethodDecl>(fd) || !fd->doesThisDeclarationHaveABody() || fd->isTemplateInstantiation()) return;
    if (!fd->getIdentifier() || fd->getName().starts_with("layergate_")) return;
    if (fd->hasAttr<CUDAGlobalAttr>() || (fd->hasAttr<CUDADeviceAttr>() && !fd->hasAttr<CUDAHostAttr>())) return;
    if (!in_given_(fd->getLocation())) return;
    model::CppEntry e;
    e.name = fd->getNameAsString();
    e.params = params(fd);
    e.constructs = constructions(fd);
    e.where = loc(fd->getLocation(), false, "entry", e.name);
    facts.entries.push_back(std::move(e));
  }

  static const MemberExpr* memberOfThis(const Expr* e) {
    auto* me = dyn_cast_or_null<MemberExpr>(stripTrivia(e));
    if (!me) return nullptr;
    const Expr* base = stripTrivia(me->getBase());
    if (me->isImplicitAccess() || isa_and_nonnull<CXXThisExpr>(base)) return me;
    return nullptr;
  }

  void ctor(const CXXConstructorDecl* cd) {
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
  static std::vector<model::CppParam> schemaParams(const std::string& schema) {
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

  static std::string literal(const Expr* e) {
    e = stripValue(e);
    if (auto* s = dyn_cast_or_null<StringLiteral>(e)) return s->getString().str();
    return {};
  }

  // The function an argument refers to: &fn, fn, (&fn), TORCH_BOX(&fn),
  // torch::dispatch(kCUDA, &fn).
  std::string functionRef(const Expr* e, int depth = 0) {
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

  void binding(const std::string& method, const std::vector<const Expr*>& args, const Expr* call) {
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

  void call(const CallExpr* c) {
    const Expr* callee = stripTrivia(c->getCallee());
    std::string method;
    if (auto* me = dyn_cast_or_null<MemberExpr>(callee)) method = me->getMemberDecl()->getNameAsString();
    else if (auto* um = dyn_cast_or_null<UnresolvedMemberExpr>(callee)) method = um->getMemberName().getAsString();
    else if (auto* dm = dyn_cast_or_null<CXXDependentScopeMemberExpr>(callee)) method = dm->getMember().getAsString();
    else return;
    std::vector<const Expr*> args(c->arg_begin(), c->arg_end());
    binding(method, args, c);
  }

  void recovery(const RecoveryExpr* r) {
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

  void memberUses(const FunctionDecl* dispatch) {
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
      else if (auto* ce = dyn_cast<CallExpr>(s); ce && ce->getNumArgs() > 0 && !spec_.preconditions.empty()) {
        // A precondition check the target names (RuntimeCheck(cond, ...)): its condition.
        std::string callee;
        if (const FunctionDecl* fd = ce->getDirectCallee()) callee = fd->getNameAsString();
        else if (auto* ul = dyn_cast<UnresolvedLookupExpr>(ce->getCallee()->IgnoreImpCasts())) callee = ul->getName().getAsString();
        if (std::find(spec_.preconditions.begin(), spec_.preconditions.end(), callee) != spec_.preconditions.end())
          scan(ce->getArg(0), "precondition");
      }
      std::vector<const Stmt*> kids(s->child_begin(), s->child_end());
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
    std::stable_sort(facts.member_uses.begin(), facts.member_uses.end(),
                     [](const model::MemberUse& a, const model::MemberUse& b) {
                       return std::tie(a.where.file, a.where.line, a.where.col) <
                              std::tie(b.where.file, b.where.line, b.where.col);
                     });
  }

  TraceFacts facts;

 private:
  ASTContext& ctx_;
  SourceManager& sm_;
  const target::CppDispatchSpec& spec_;
  std::function<std::string(const SourceLocation&)> file_name_;
  std::function<bool(SourceLocation)> in_given_;
};

class TraceVisitor : public RecursiveASTVisitor<TraceVisitor> {
 public:
  explicit TraceVisitor(TraceCollector& c) : c_(c) {}
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (auto* cd = dyn_cast<CXXConstructorDecl>(fd)) c_.ctor(cd);
    else c_.entry(fd);
    return true;
  }
  bool VisitCallExpr(CallExpr* c) {
    c_.call(c);
    return true;
  }
  bool VisitRecoveryExpr(RecoveryExpr* r) {
    c_.recovery(r);
    return true;
  }

 private:
  TraceCollector& c_;
};

class Consumer : public SemaConsumer {
 public:
  Consumer(ParseJob& job, CompilerInstance& ci) : job_(job), ci_(ci) {}

  void InitializeSema(Sema& s) override {
    if (!job_.missing_ops) return;
    job_.missing_ops->sema = &s;
    s.addExternalSource(job_.missing_ops.get());
  }
  void ForgetSema() override {
    if (job_.missing_ops) job_.missing_ops->sema = nullptr;
  }

  // Keep host bodies only: kernels and device functions are not needed.
  bool shouldSkipFunctionBody(Decl* d) override {
    const FunctionDecl* fd = d->getAsFunction();
    if (!fd) return false;
    // Library and stub bodies are never needed: only user host code is walked.
    SourceManager& sm = ci_.getSourceManager();
    SourceLocation l = sm.getExpansionLoc(d->getLocation());
    if (sm.isInSystemHeader(l)) return true;
    if (fd->hasAttr<CUDAGlobalAttr>()) return true;
    if (fd->hasAttr<CUDADeviceAttr>() && !fd->hasAttr<CUDAHostAttr>()) return true;
    return false;
  }

  void HandleTranslationUnit(ASTContext& ctx) override {
    try {
      SourceManager& sm = ctx.getSourceManager();
      // Map files the caller named to the caller's spelling of the path.
      std::map<llvm::sys::fs::UniqueID, std::string> given;
      if (job_.inputs)
        for (const auto& f : *job_.inputs)
          if (auto fe = ci_.getFileManager().getOptionalFileRef(f)) given.emplace(fe->getUniqueID(), f);
      if (auto fe = ci_.getFileManager().getOptionalFileRef(job_.path)) given[fe->getUniqueID()] = job_.path;
      std::string stubs = normalized(job_.stub_dir);
      detail::WalkOptions wo;
      wo.max_depth = job_.options->max_depth;
      wo.max_paths = job_.options->max_paths;
      wo.file_name = [&sm, given](const SourceLocation& l) -> std::string {
        FileID id = sm.getFileID(l);
        OptionalFileEntryRef fe = sm.getFileEntryRefForID(id);
        if (!fe) return sm.getFilename(l).str();
        auto it = given.find(fe->getUniqueID());
        if (it != given.end()) return it->second;
        llvm::SmallString<256> s(fe->getName());
        llvm::sys::path::remove_dots(s, true);
        return std::string(s.str());
      };
      wo.is_user_code = [&sm, stubs](const SourceLocation& l) -> bool {
        if (l.isInvalid()) return false;
        SourceLocation e = sm.getExpansionLoc(l);
        if (sm.isInSystemHeader(e)) return false;
        std::string f = normalized(sm.getFilename(e));
        return !startsWithDir(f, stubs);
      };
      auto inGiven = [&sm, given](SourceLocation l) -> bool {
        if (l.isInvalid()) return false;
        OptionalFileEntryRef fe = sm.getFileEntryRefForID(sm.getFileID(sm.getExpansionLoc(l)));
        return fe && given.count(fe->getUniqueID());
      };
      TraceCollector trace(ctx, *job_.spec, wo.file_name, inGiven);
      if (job_.want_dispatch) {
        FindDispatch finder(*job_.spec);
        finder.TraverseDecl(ctx.getTranslationUnitDecl());
        if (!finder.found.empty()) {
          const FunctionDecl* chosen = finder.found.front();
          for (const FunctionDecl* md : finder.found)
            if (detail::bodyLaunches(ctx, md, wo)) {
              chosen = md;
              break;
            }
          job_.result.dispatch = detail::walkDispatch(ctx, chosen, *job_.spec, wo);
          job_.result.dispatch.params = trace.params(chosen);
          job_.result.dispatch.is_template = chosen->getDescribedFunctionTemplate() != nullptr ||
                                             chosen->isTemplateInstantiation() || chosen->isDependentContext();
          if (auto* md = dyn_cast<CXXMethodDecl>(chosen)) job_.result.dispatch.is_static = md->isStatic();
          for (const DeclContext* dc = chosen->getDeclContext(); dc; dc = dc->getParent())
            if (auto* nd = dyn_cast<NamespaceDecl>(dc); nd && !nd->isAnonymousNamespace())
              job_.result.dispatch.ns = nd->getNameAsString() + (job_.result.dispatch.ns.empty() ? "" : "::") +
                                        job_.result.dispatch.ns;
          job_.result.found = true;
          trace.memberUses(chosen);
          if (job_.diags) {
            bool launches = false;
            for (const auto& l : job_.result.dispatch.leaves) launches |= l.kind == model::LeafKind::Launch;
            job_.result.dispatch.broken = trace.errorsInside(chosen, job_.diags->located, launches);
          }
        }
      }
      // Op registrations, entry functions and constructors: only this TU's
      // own top-level declarations in user code (never the precompiled prelude).
      TraceVisitor visitor(trace);
      for (Decl* d : ctx.getTranslationUnitDecl()->noload_decls()) {
        if (d->isImplicit() || !wo.is_user_code(d->getLocation())) continue;
        visitor.TraverseDecl(d);
      }
      job_.result.facts = std::move(trace.facts);
      if (job_.missing_ops) job_.result.facts.declared_missing = job_.missing_ops->names;
    } catch (...) {
      job_.result.error = std::current_exception();
    }
  }

 private:
  ParseJob& job_;
  CompilerInstance& ci_;
};

class Action : public ASTFrontendAction {
 public:
  explicit Action(ParseJob& job) : job_(job) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, StringRef) override {
    ci.getPreprocessor().addPPCallbacks(std::make_unique<IncludeWatcher>(job_, ci.getSourceManager()));
    return std::make_unique<Consumer>(job_, ci);
  }

 private:
  ParseJob& job_;
};

// Pre-scan the file and the local headers it includes for #include lines that
// no search directory resolves; give each an empty in-memory file.
class PreScan {
 public:
  PreScan(ParseJob& job, const HeaderSearchOptions& hs) : job_(job) {
    for (const auto& e : hs.UserEntries) {
      std::string p = normalized(e.Path);
      bool user = (e.Group == frontend::Angled || e.Group == frontend::Quoted) && p != kMissingDir;
      dirs_.push_back({p, user, e.Path});
    }
    stubs_ = normalized(job.stub_dir);
  }

  void scan(const std::string& file, const std::string& shown, int depth) {
    std::string key = normalized(file);
    if (depth > 32 || !visited_.insert(key).second) return;
    auto buf = llvm::MemoryBuffer::getFile(file);
    if (!buf) return;
    static const std::regex inc(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    std::istringstream in((*buf)->getBuffer().str());
    std::string line;
    int lineNo = 0;
    std::string dir = dirOf(file);
    while (std::getline(in, line)) {
      ++lineNo;
      std::smatch mt;
      if (line.find("include") == std::string::npos || !std::regex_search(line, mt, inc)) continue;
      bool quoted = mt[1] == "\"";
      std::string name = mt[2];
      std::string found;
      bool user = false;
      if (quoted) {
        std::string c = normalized(dir + "/" + name);
        if (llvm::sys::fs::is_regular_file(c)) {
          found = c;
          user = !startsWithDir(c, stubs_);
        }
      }
      std::string raw;  // as the search directory spells it
      for (std::size_t i = 0; found.empty() && i < dirs_.size(); ++i) {
        std::string c = normalized(dirs_[i].first + "/" + name);
        if (llvm::sys::fs::is_regular_file(c)) {
          found = c;
          raw = dirs_[i].raw + "/" + name;
          user = dirs_[i].second && !startsWithDir(c, stubs_);
        }
      }
      if (!found.empty()) {
        if (user) {
          // the caller's spelling when it is a given file, else the -I's
          std::string spelled = raw.empty() || llvm::sys::path::is_absolute(raw) ? found : raw;
          if (job_.inputs)
            for (const auto& in : *job_.inputs)
              if (normalized(in) == found) spelled = in;
          scan(found, spelled, depth + 1);
        }
        continue;
      }
      // Missing: an empty file where Clang will look first.
      std::string target;
      if (quoted) target = normalized(dir + "/" + name);
      else if (name.find("..") == std::string::npos) target = std::string(kMissingDir) + "/" + name;
      else continue;
      if (job_.stubbed.count(target)) continue;
      job_.memfs->addFile(target, 0, llvm::MemoryBuffer::getMemBuffer("", target));
      std::string spelled = quoted ? "\"" + name + "\"" : "<" + name + ">";
      job_.stubbed[target] = "stubbed missing include " + spelled + " (" + shown + ":" + std::to_string(lineNo) + ")";
    }
  }

 private:
  ParseJob& job_;
  struct Dir {
    std::string first;  // normalized
    bool second;        // user code
    std::string raw;    // as given with -I
  };
  std::vector<Dir> dirs_;
  std::string stubs_;
  std::set<std::string> visited_;
};

class ToolAct : public tooling::ToolAction {
 public:
  explicit ToolAct(ParseJob& job) : job_(job) {}
  bool runInvocation(std::shared_ptr<CompilerInvocation> inv, FileManager* files,
                     std::shared_ptr<PCHContainerOperations> pch, DiagnosticConsumer* diags) override {
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getDiagnosticOpts().ShowCarets = false;  // no "N errors generated" on stderr
    PreScan(job_, inv->getHeaderSearchOpts()).scan(job_.path, job_.path, 0);
    CompilerInstance ci(std::move(pch));
    ci.setInvocation(std::move(inv));
    ci.setFileManager(files);
    ci.createDiagnostics(diags, /*ShouldOwnClient=*/false);
    if (!ci.hasDiagnostics()) return false;
    ci.createSourceManager(*files);
    Action action(job_);
    bool ok = ci.ExecuteAction(action);
    files->clearStatCache();
    return ok;
  }

 private:
  ParseJob& job_;
};

std::vector<std::string> commandLine(const std::string& path, const ParseOptions& o, const std::string& stubs,
                                     const std::vector<std::string>& inputs, const std::string& pch = {}) {
  std::vector<std::string> a = {"layergate-clang",
                                "-x", "cuda",
                                "--cuda-host-only",
                                "-nocudalib",
                                "-std=c++17",
                                "-fsyntax-only",
                                "-Wno-unknown-cuda-version",
                                "-D__restrict__=",
                                "-fno-delayed-template-parsing",
                                "-ferror-limit=0",
                                "-fno-spell-checking",
                                "-w",
                                "-resource-dir", LAYERGATE_CLANG_RESOURCE_DIR};
  if (o.real_cuda_sdk) {
    a.push_back("--cuda-path=" + o.cuda_path);
    a.insert(a.end(), {"-isystem", stubs + "/torch", "-isystem", stubs + "/tvm-ffi", "-idirafter", stubs + "/sdk-shim"});
  } else {
    a.insert(a.end(), {"-nocudainc", "-isystem", stubs + "/cuda", "-isystem", stubs + "/torch", "-isystem",
                       stubs + "/tvm-ffi"});
    if (!pch.empty()) a.insert(a.end(), {"-include-pch", pch});
    else if (path != stubs + "/layergate_pch.h") a.insert(a.end(), {"-include", stubs + "/layergate_cuda_prelude.h"});
  }
  if (path == stubs + "/layergate_pch.h") {  // building the PCH: no per-input options
    for (const auto& x : o.extra_args) a.push_back(x);
    a.push_back(path);
    return a;
  }
  std::set<std::string> seen;
  for (const auto& f : inputs) {
    std::string d = dirOf(f);
    if (seen.insert(d).second) a.push_back("-I" + d);
  }
  for (const auto& d : o.include_dirs) a.push_back("-I" + d);
  a.push_back("-idirafter");
  a.push_back(kMissingDir);
  for (const auto& x : o.extra_args) a.push_back(x);
  a.push_back(path);
  return a;
}

// --- precompiled prelude --------------------------------------------------------
//
// The prelude and the standard headers dispatch headers include are parsed
// once into a PCH in the user's cache directory and loaded lazily afterwards:
// most of a parse is spent in those headers. Any problem: parse without it.

class PchToolAct : public tooling::ToolAction {
 public:
  explicit PchToolAct(std::string out) : out_(std::move(out)) {}
  bool runInvocation(std::shared_ptr<CompilerInvocation> inv, FileManager* files,
                     std::shared_ptr<PCHContainerOperations> pch, DiagnosticConsumer* diags) override {
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getFrontendOpts().OutputFile = out_;
    inv->getDiagnosticOpts().ShowCarets = false;
    CompilerInstance ci(std::move(pch));
    ci.setInvocation(std::move(inv));
    ci.setFileManager(files);
    ci.createDiagnostics(diags, /*ShouldOwnClient=*/false);
    if (!ci.hasDiagnostics()) return false;
    ci.createSourceManager(*files);
    GeneratePCHAction action;
    bool ok = ci.ExecuteAction(action);
    files->clearStatCache();
    return ok;
  }

 private:
  std::string out_;
};

std::string cacheDir() {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = "/tmp/layergate-" + std::to_string(getuid());
  return base + "/layergate";
}

// Path of a usable PCH for these options, building it if needed; empty when
// precompiling is off or failed.
std::string preludePch(const ParseOptions& o, const std::string& stubs) {
  if (o.real_cuda_sdk) return {};
  if (const char* off = std::getenv("LAYERGATE_NO_PCH"); off && *off && std::string(off) != "0") return {};
  std::string header = stubs + "/layergate_pch.h";
  std::vector<std::string> args = commandLine(header, o, stubs, {});
  std::string key = clang::getClangFullVersion();
  for (const auto& a : args) key += "\n" + a;
  for (const char* f : {"/layergate_pch.h", "/layergate_cuda_prelude.h", "/cuda/layergate_half_types.h"}) {
    auto buf = llvm::MemoryBuffer::getFile(stubs + f);
    if (!buf) return {};
    key += (*buf)->getBuffer().str();
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(llvm::xxh3_64bits(key)));
  std::string dir = cacheDir();
  std::string out = dir + "/prelude-" + hex + ".pch";
  if (llvm::sys::fs::exists(out)) return out;
  if (llvm::sys::fs::create_directories(dir)) return {};
  std::string tmp = out + ".tmp" + std::to_string(getpid());
  CollectingDiags diags;
  PchToolAct act(tmp);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions());
  tooling::ToolInvocation inv(args, &act, files.get(), std::make_shared<PCHContainerOperations>());
  inv.setDiagnosticConsumer(&diags);
  bool ok = inv.run() && diags.errors == 0 && llvm::sys::fs::exists(tmp);
  if (!ok || llvm::sys::fs::rename(tmp, out)) {
    llvm::sys::fs::remove(tmp);
    return {};
  }
  return out;
}

struct FileParse {
  ParseResult result;
  unsigned errors = 0;
  bool fatal = false;
  std::string first_error, first_fatal;
};

FileParse parseOne(const std::string& path, const std::vector<std::string>& inputs,
                   const target::CppDispatchSpec& spec, const ParseOptions& options, const std::string& pch,
                   bool want_dispatch) {
  ParseJob job;
  job.path = path;
  job.inputs = &inputs;
  job.want_dispatch = want_dispatch;
  job.missing_ops = llvm::makeIntrusiveRefCnt<DeclareMissingOps>();
  job.spec = &spec;
  job.options = &options;
  job.stub_dir = paths::stubDir();
  job.memfs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  job.memfs->addFile(std::string(kMissingDir) + "/.layergate", 0, llvm::MemoryBuffer::getMemBuffer(""));
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(job.memfs);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(), overlay);
  CollectingDiags diags;
  job.diags = &diags;
  ToolAct act(job);
  tooling::ToolInvocation inv(commandLine(path, options, job.stub_dir, inputs, pch), &act, files.get(),
                              std::make_shared<PCHContainerOperations>());
  inv.setDiagnosticConsumer(&diags);
  inv.run();
  FileParse out;
  out.result = std::move(job.result);
  out.errors = diags.errors;
  out.fatal = diags.fatal;
  out.first_error = diags.first;
  out.first_fatal = diags.first_fatal;
  return out;
}

std::string readChecked(const std::string& path) {
  if (!llvm::sys::fs::exists(path)) throw InputError(path + ": no such file");
  if (llvm::sys::fs::is_directory(path)) throw InputError(path + ": is a directory, not a C++/CUDA file");
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) throw InputError(path + ": cannot read: " + buf.getError().message());
  llvm::StringRef text = (*buf)->getBuffer();
  if (text.contains('\0')) throw InputError(path + ": binary file, not C++/CUDA source");
  return text.str();
}

// Trace facts of all files, each fact once (a .cu includes the .cuh: the
// same constructor or entry is seen by both parses).
class FactMerger {
 public:
  void add(TraceFacts&& f) {
    for (auto& b : f.bindings)
      if (seen_.insert("b|" + b.kind + "|" + b.op + "|" + key(b.where)).second) bindings.push_back(std::move(b));
    for (auto& e : f.entries)
      if (seen_.insert("e|" + e.name + "|" + key(e.where)).second) entries.push_back(std::move(e));
    for (auto& c : f.ctors) {
      std::string sig = c.info.class_name + "(";
      for (const auto& p : c.info.params) sig += p.type + ",";
      auto it = ctor_index_.find(sig);
      if (it == ctor_index_.end()) {
        ctor_index_[sig] = ctors.size();
        ctors.push_back(std::move(c));
      } else if (!ctors[it->second].has_body && c.has_body) {
        ctors[it->second] = std::move(c);  // the definition wins over a declaration
      }
    }
    for (auto& n : f.declared_missing)
      if (seen_.insert("m|" + n).second) declared_missing.push_back(n);
  }
  std::vector<model::OpBinding> bindings;
  std::vector<model::CppEntry> entries;
  std::vector<CtorFact> ctors;
  std::vector<std::string> declared_missing;

 private:
  static std::string key(const model::Location& l) {
    return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  std::set<std::string> seen_;
  std::map<std::string, std::size_t> ctor_index_;
};

// The target's compile settings (cpp.include_dirs, cpp.defines, cpp.std) over
// the caller's options. An include directory is relative to the checkout
// root, which is some directory above the dispatch file: each is looked up
// from the file's own directory upwards, nearest first, and added where it
// exists (several files under different roots: each root's copy).
ParseOptions withTargetSettings(const ParseOptions& in, const target::CppDispatchSpec& spec,
                                const std::vector<std::string>& files) {
  ParseOptions o = in;
  std::set<std::string> seen(o.include_dirs.begin(), o.include_dirs.end());
  for (const auto& rel : spec.include_dirs)
    for (const auto& f : files) {
      std::string dir = dirOf(f);
      for (int up = 0; up < 64 && !dir.empty(); ++up) {
        std::string c = normalized(dir + "/" + rel);
        if (llvm::sys::fs::is_directory(c)) {
          if (seen.insert(c).second) o.include_dirs.push_back(c);
          break;
        }
        std::string parent(llvm::sys::path::parent_path(dir));
        if (parent == dir) break;
        dir = parent;
      }
    }
  if (!spec.std.empty()) o.extra_args.insert(o.extra_args.begin(), "-std=" + spec.std);
  for (std::size_t i = 0; i < spec.defines.size(); ++i)
    o.extra_args.insert(o.extra_args.begin() + static_cast<long>(i) + (spec.std.empty() ? 0 : 1), "-D" + spec.defines[i]);
  return o;
}

model::Dispatch extractImpl(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                            const ParseOptions& caller_options) {
  if (files.empty()) throw InputError("no C++/CUDA file given");
  const ParseOptions options = withTargetSettings(caller_options, spec, files);
  // Rank files: those that define a class of the spec first, then those that
  // mention it, then the rest (bindings, other entry files). Every file is
  // parsed for trace facts; the dispatch is walked once, in the first file
  // that has it.
  std::vector<std::pair<int, std::string>> ranked;
  std::set<std::string> unique;
  for (const auto& f : files) {
    std::string text = readChecked(f);
    if (!unique.insert(normalized(f)).second) continue;
    int rank = 2;
    for (const auto& c : spec.class_names) {
      std::regex def("\\b(class|struct)\\s+" + c + "\\b");
      if (std::regex_search(text, def)) rank = std::min(rank, 0);
      else if (text.find(c) != std::string::npos) rank = std::min(rank, 1);
    }
    ranked.push_back({rank, f});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string what = (spec.class_names.empty() ? std::string("?") : spec.class_names.front()) + "::" +
                     (spec.dispatch_functions.empty() ? std::string("?") : spec.dispatch_functions.front());
  FileParse last;
  bool found = false;
  model::Dispatch d;
  std::vector<std::string> notes, later_notes;
  std::vector<model::MemberUse> member_uses;
  FactMerger facts;
  auto addNote = [](std::vector<std::string>& v, std::string n) {
    for (const auto& x : v)
      if (x == n) return;
    v.push_back(std::move(n));
  };
  for (const auto& [rank, f] : ranked) {
    std::string pch = preludePch(options, paths::stubDir());
    FileParse p = parseOne(f, files, spec, options, pch, !found);
    if (!pch.empty() && p.fatal) {  // perhaps a stale PCH (headers upgraded): parse without it
      llvm::StringRef msg(p.first_fatal);
      if (msg.contains_insensitive("precompiled") || msg.contains("PCH") || msg.contains("AST file"))
        llvm::sys::fs::remove(pch);
      p = parseOne(f, files, spec, options, {}, !found);
    }
    if (p.result.error) std::rethrow_exception(p.result.error);
    if (p.fatal) {
      if (!found) throw InputError(f + ": clang fatal error, cannot analyse: " + p.first_fatal);
      addNote(later_notes, f + ": clang fatal error, trace facts from it may be missing: " + p.first_fatal);
      continue;
    }
    if (p.result.found && !found) member_uses = std::move(p.result.facts.member_uses);
    facts.add(std::move(p.result.facts));
    if (p.result.found && !found) {
      found = true;
      d = std::move(p.result.dispatch);
      for (auto& n : p.result.notes) addNote(notes, std::move(n));
      if (p.errors > 0)
        addNote(notes, std::to_string(p.errors) + " clang error" + (p.errors == 1 ? "" : "s") + " while parsing " +
                           f + " (analysis went on), first: " + p.first_error);
      for (auto& n : d.notes) addNote(notes, std::move(n));
      continue;
    }
    for (auto& n : p.result.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) addNote(later_notes, std::move(n));
    // Errors already reported for a header this file includes are not news.
    bool known = false;
    for (const auto& n : notes) known |= !p.first_error.empty() && llvm::StringRef(n).ends_with(p.first_error);
    if (p.errors > 0 && !known)
      addNote(later_notes, std::to_string(p.errors) + " clang error" + (p.errors == 1 ? "" : "s") +
                               " while parsing " + f + " (trace facts went on), first: " + p.first_error);
    if (!found) last = std::move(p);
  }
  if (!found) {
    std::string names;
    for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
    std::string msg = names + ": no dispatch " + what + " with a body found";
    if (last.errors > 0)
      msg += " (" + std::to_string(last.errors) + " clang error" + (last.errors == 1 ? "" : "s") +
             ", first: " + last.first_error + ")";
    throw InputError(msg);
  }
  for (auto& n : later_notes) addNote(notes, std::move(n));
  if (!facts.declared_missing.empty()) {
    std::size_t k = facts.declared_missing.size();
    std::string n = std::to_string(k) + " function" + (k == 1 ? "" : "s") +
                    " named in op registrations declared in no given file (e.g. " + facts.declared_missing.front() +
                    "): their header was not given";
    addNote(notes, n);
  }
  d.notes = std::move(notes);
  d.bindings = std::move(facts.bindings);
  d.entries = std::move(facts.entries);
  for (auto& c : facts.ctors)
    if (c.info.class_name == d.class_name) d.ctors.push_back(std::move(c.info));
  d.member_uses = std::move(member_uses);
  return d;
}

}  // namespace

model::Dispatch extractDispatch(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                                const ParseOptions& options) {
  // Clang and the walker recurse over the source's nesting; run them on a
  // thread with a large stack so hostile inputs end in an InputError.
  model::Dispatch out;
  std::exception_ptr err;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] {
    clang::noteBottomOfStack();
    try {
      out = extractImpl(files, spec, options);
    } catch (...) {
      err = std::current_exception();
    }
  });
  worker.join();
  if (err) std::rethrow_exception(err);
  return out;
}

}  // namespace layergate::cpp
