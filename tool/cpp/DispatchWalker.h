// Path enumeration over a dispatch function's body (internal to lg_cpp).
//
// Takes: the Clang AST of the chosen dispatch (the uninstantiated pattern of a
// member function template, or a plain member function) and the target's
// CppDispatchSpec. Returns: the Dispatch leaves (launch / throw / none), each
// with its path condition over config variables, plus env reads and opaques.
// Throws InputError when the body nests deeper than max_depth or has more
// paths than the cap.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "clang/Basic/SourceLocation.h"

#include "model/Model.h"
#include "target/Target.h"

namespace clang {
class ASTContext;
class FunctionDecl;
class SourceLocation;
class TemplateDecl;
}  // namespace clang

namespace layergate::cpp::detail {

struct WalkOptions {
  int max_depth = 200;
  // Clang rejected something in the translation unit: a launch in the text
  // that the AST lacks is one clang dropped (read from the text). Asked when
  // needed: instantiating a template during the walk may add errors.
  std::function<bool()> tu_has_errors;
  // Gives a function template's specialization its body (clang instantiates
  // only what the walk follows; see CppFrontend.cpp); unset: no bodies are
  // added.
  std::function<void(const clang::FunctionDecl*, clang::SourceLocation)> instantiate;
  // Whether clang reported an error inside the range (unset: none known).
  std::function<bool(clang::SourceRange)> errors_in;
  std::size_t max_paths = 20000;
  // File name to report for a location's file (the caller's spelling for the
  // files it gave us).
  std::function<std::string(const clang::SourceLocation&)> file_name;
  // Whether a declaration at this location is in the user's files (not a
  // system header or a bundled stub): only such functions are followed.
  std::function<bool(const clang::SourceLocation&)> is_user_code;
};

// Whether fd's body (or the bodies of user functions it calls) launches a
// kernel.
bool bodyLaunches(clang::ASTContext& ctx, const clang::FunctionDecl* fd, const WalkOptions& opts);

// The parameters of a template (null: none), as the model names their kinds.
std::vector<model::Dispatch::TemplateParam> templateParams(const clang::TemplateDecl* td);

// The condition under which fd, a function returning bool, returns true (its
// bool and integer parameters as Var("param:NAME")); null when fd does not
// return bool or has no body. Throws InputError as walkDispatch.
model::ExprPtr walkPredicate(clang::ASTContext& ctx, const clang::FunctionDecl* fd,
                             const target::CppDispatchSpec& spec, const WalkOptions& opts,
                             std::vector<model::OpaqueSymbol>& opaques);

// Where a dispatch walk went: per statement it ran, the condition under which
// it did. at(l): that of the innermost statement around l (its expansion and,
// inside a macro, its spelling), OR-ed over the expansions; True when no
// statement the walk ran holds l (a declaration clang dropped at the top).
class Reached {
 public:
  struct Span {
    clang::SourceLocation exp_begin, exp_end, sp_begin, sp_end;
    std::vector<model::ExprPtr> pcs;  // the paths that ran it (their OR)
  };
  const clang::SourceManager* sm = nullptr;
  std::vector<Span> spans;
  // Functions the walk entered at their calls (cpp.follow_calls): a clang
  // error inside one is the dispatch's too.
  std::vector<const clang::FunctionDecl*> followed;
  model::ExprPtr at(clang::SourceLocation l) const;
};

model::Dispatch walkDispatch(clang::ASTContext& ctx, const clang::FunctionDecl* fd,
                             const target::CppDispatchSpec& spec, const WalkOptions& opts, Reached* reached);

model::Dispatch walkDispatch(clang::ASTContext& ctx, const clang::FunctionDecl* fd,
                             const target::CppDispatchSpec& spec, const WalkOptions& opts);

}  // namespace layergate::cpp::detail
