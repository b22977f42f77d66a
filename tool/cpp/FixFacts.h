// Facts for the unsafe fix of LG001 (internal to lg_cpp): where an `if`
// without `else` that ends a no-launch path could get its `else`, and which
// launch that `else` could reuse.
//
// Takes: the branch-less IfStmt, a parent map of the dispatch body, and the
// walker's answers (does an `if` test NVLink, the kernel a statement launches).
// Returns: a model::ElseSite; not found, its `why` says what is missing.
#pragma once

#include <functional>
#include <string>

#include "model/Model.h"

namespace clang {
class IfStmt;
class ParentMap;
class SourceLocation;
class SourceManager;
class Stmt;
}  // namespace clang

namespace layergate::cpp::detail {

struct ElseSiteQueries {
  // Whether the walker saw the if's condition read the NVLink flag.
  std::function<bool(const clang::IfStmt*)> tests_nvlink;
  // The kernel a statement launches (through calls too), "" none.
  std::function<std::string(const clang::Stmt*)> kernel_of;
  std::function<model::Location(clang::SourceLocation)> spelling;  // file:line:col of a spelling location
};

model::ElseSite elseSite(const clang::SourceManager& sm, const clang::ParentMap& parents, const clang::IfStmt* is,
                         const std::string& cond_text, const ElseSiteQueries& q);

}  // namespace layergate::cpp::detail
