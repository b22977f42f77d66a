// Trace facts (internal to lg_cpp): what one translation unit registers,
// constructs and reads, gathered by TraceCollector (CppTraceFacts.cpp).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "cpp/DispatchWalker.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Sema/ExternalSemaSource.h"
#include "model/Model.h"
#include "target/Target.h"

namespace layergate::cpp::detail::parse {

// A clang error with its location, kept while the source manager lives.
struct LocatedError {
  clang::SourceLocation at;
  std::string message;
  // clang's parser gave up here ("Parse Issue"): the statement may be read
  // as another than the one written. A name a missing or stand-in header
  // did not declare can cause one (`lib::Check<T>(x)` with no `lib`), so it
  // weakens the paths through its statement, whatever that statement is.
  bool syntax = false;
  // The preprocessor or lexer gave up ("Lexical or Preprocessor Issue": an
  // unterminated macro call, an unbalanced #if): the text itself is broken,
  // whatever was declared, and what follows may be swallowed (an
  // unterminated macro call eats the cases after it). No path of the
  // function holding it is known.
  bool lexical = false;
};


using namespace clang;

// ---------------------------------------------------------------------------
// Trace facts (issue 3): op registrations, entry functions and the objects
// they construct, the dispatch class's constructors, and the dispatch
// conditions that read a config member. Found by shapes and positions, never
// by the flag's spelling.

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

// Registration blocks (TORCH_LIBRARY..., PYBIND11_MODULE) expand, through the
// bundled stubs, to functions named layergate_*. A function they name that no
// given file declares (its header, e.g. sgl_kernel_ops.h, was not given) is
// declared on the fly as `int name(...)`, so that `&name` stays in the AST.
class DeclareMissingOps : public ExternalSemaSource {
 public:
  Sema* sema = nullptr;
  std::vector<std::string> names;

  bool LookupUnqualified(LookupResult& r, Scope*) override;

 private:
  std::map<const IdentifierInfo*, FunctionDecl*> made_;
};

class TraceCollector {
 public:
  TraceCollector(ASTContext& ctx, const target::CppDispatchSpec& spec,
                 std::function<std::string(const SourceLocation&)> file_name,
                 std::function<bool(SourceLocation)> in_given)
      : ctx_(ctx), sm_(ctx.getSourceManager()), spec_(spec), file_name_(std::move(file_name)),
        in_given_(std::move(in_given)) {}

  std::string text(const Stmt* e);
  model::Location loc(SourceLocation l, bool spelling, const char* role, const std::string& note = {});

  // Clang errors inside a function (where the code is expanded, so a macro
  // used there counts) that may hide a launch: a syntax error anywhere, a
  // semantic one on a launching line, or any when the walker saw no launch at
  // all there (clang drops a statement that names a declaration it rejected,
  // such as a kernel whose parameter types come from a missing header). The
  // first few, with their messages.
  std::vector<model::OpaqueSymbol> errorsInside(const FunctionDecl* fd, const std::vector<LocatedError>& errors,
                                                bool launches_seen, const detail::Reached* reached = nullptr);
  // The first lexical or preprocessor error inside a function's text, or
  // null: its branches are not what was written (the dispatch is then not
  // analysed at all).
  const LocatedError* lexicalErrorInside(const FunctionDecl* fd, const std::vector<LocatedError>& errors);
  // The offsets of a function's text in its file, to the body's closing
  // brace as written; false when it spans files.
  bool textRange(const FunctionDecl* fd, unsigned& begin, unsigned& end);
  llvm::StringRef lineText(SourceLocation l);  // the source line a location is spelled on
  bool mayLaunch(SourceLocation l);  // its line, or a macro use it expands from, launches

  // --- parameters ---------------------------------------------------------------

  std::string paramType(const ParmVarDecl* p);
  std::vector<model::CppParam> params(const FunctionDecl* fd);
  static std::set<const VarDecl*> reassigned(const Stmt* body);
  static int paramIndex(const Expr* e, const FunctionDecl* fd, const std::set<const VarDecl*>& reassigned,
                        int depth = 0);
  // Index of fd's parameter whose `.size()` e is (through casts, or a local
  // initialised from it and never reassigned), else -1.
  static int sizeOfParam(const Expr* e, const FunctionDecl* fd, const std::set<const VarDecl*>& reassigned,
                         int depth = 0);

  // --- constructions --------------------------------------------------------------

  bool isSpecClass(llvm::StringRef name) const;
  std::string specClassOf(QualType t) const;
  static std::vector<const Expr*> ctorArgs(const Expr* init);
  void addConstruction(std::vector<model::Construction>& out, const std::string& cls,
                       const std::vector<const Expr*>& args, SourceLocation where, const FunctionDecl* fd,
                       const std::set<const VarDecl*>& re);
  std::vector<model::Construction> constructions(const FunctionDecl* fd);

  // --- entries and constructors ---------------------------------------------------

  void entry(const FunctionDecl* fd);
  static const MemberExpr* memberOfThis(const Expr* e);
  void ctor(const CXXConstructorDecl* cd);

  // --- bindings -------------------------------------------------------------------

  static std::vector<model::CppParam> schemaParams(const std::string& schema);
  static std::string literal(const Expr* e);
  std::string functionRef(const Expr* e, int depth = 0);
  void binding(const std::string& method, const std::vector<const Expr*>& args, const Expr* call);
  void call(const CallExpr* c);
  void recovery(const RecoveryExpr* r);

  // --- member uses in the dispatch's conditions ------------------------------------

  void memberUses(const FunctionDecl* dispatch);
  const Expr* preconditionCondition(const Stmt* s) const;

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

}  // namespace layergate::cpp::detail::parse
