// --diff-base REF: the lines of a git checkout changed since a commit (as
// Semgrep's --baseline-commit), so that a check fails only on the findings a
// change touches and lists the others as pre-existing.
//
// Takes: the commit as git names it and a path inside the checkout. Returns:
// the changed lines of the working tree against that commit, by absolute
// file (report/Baseline.h's ChangedLines). Throws InputError (one line) when
// the path is not in a git checkout or git cannot resolve the commit.
#pragma once

#include <string>

#include "report/Baseline.h"

namespace layergate::driver {

report::ChangedLines changedSince(const std::string& ref, const std::string& path);

// `git diff --unified=0` output, its paths relative to `top`, as
// changed lines: what a hunk adds or changes, and for a hunk that only
// deletes, the lines on either side of the deletion.
report::ChangedLines parseUnifiedDiff(const std::string& diff, const std::string& top);

}  // namespace layergate::driver
