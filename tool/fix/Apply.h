// Applying fix edits to file text and showing them as unified diffs (for
// `layergate check --diff` and `--fix`).
//
// Takes: text and edits (1-based line/col, columns in bytes). Returns: the new
// text, or a unified diff (3 lines of context, `--- a/PATH` / `+++ b/PATH`
// headers as git writes them, for `git apply` or `patch -p1`; an absolute
// PATH is shown relative to the working directory). Throws InputError for an
// edit outside the text or edits that overlap.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/Model.h"

namespace layergate::fix {

std::string applyEdits(const std::string& text, std::vector<model::Edit> edits);
std::string unifiedDiff(const std::string& path, const std::string& before, const std::string& after);

// The edits of the findings' fixes per file, each edit once: the safe fixes,
// and the unsafe ones too when `unsafe`. `fixed`: how many findings have a fix taken.
std::map<std::string, std::vector<model::Edit>> collectEdits(const std::vector<const model::Finding*>& findings,
                                                             bool unsafe, int* fixed = nullptr);
// Does the finding have a fix that collectEdits(.., unsafe) takes?
bool takesFix(const model::Finding& f, bool unsafe);

}  // namespace layergate::fix
