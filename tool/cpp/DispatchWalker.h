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

model::Dispatch walkDispatch(clang::ASTContext& ctx, const clang::FunctionDecl* fd,
                             const target::CppDispatchSpec& spec, const WalkOptions& opts);

}  // namespace layergate::cpp::detail
