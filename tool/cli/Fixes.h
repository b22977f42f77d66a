// `check --diff` and `check --fix`: the findings' fixes shown as unified
// diffs or written to the files (tool/fix plans and applies the edits).
//
// Takes: the results with the directory their paths are relative to ("" for
// the working directory), whether unsafe fixes are taken (then the C++ branch
// *instead of* the Python guard for the configurations it serves, never both:
// fix::planFixes). Returns: the diffs, what was applied (one line per fix),
// and for each C++ branch the `layergate selftest` command that proves it.
// The caller analyses the fixed files again for the verdict after the fix.
// Throws InputError when a file cannot be read or written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/Report.h"

namespace layergate::driver {

struct FixOutcome {
  std::string diff;                   // unified diffs, file by file
  int fixed = 0;                      // configurations (findings) a fix was taken for
  std::vector<std::string> files;     // the files changed
  std::vector<std::string> applied;   // "safe fix at FILE:LINE:COL: description", one per fix taken
  std::vector<std::string> selftests; // `layergate selftest --header ... --python ...`, one per C++ branch
  // Without --unsafe-fixes: the unsafe fixes of findings no safe fix covers
  // (ruff's hidden fixes), each once.
  int unsafe_hidden = 0;
  // With it: each C++ branch taken, by the path of its file and where it goes
  // ("custom_all_reduce.cuh:182:6"): a launch the analysis counts as a kernel
  // though nothing has run it yet.
  struct Branch {
    std::string path, at;
  };
  std::vector<Branch> branches;
  std::string summary() const;        // "fixed 3 configurations in 1 file"
};

FixOutcome runFixes(const std::vector<std::pair<std::string, report::Result*>>& results, bool unsafe, bool write);

// After the fixed files are analysed again: each result whose C++ files hold
// a branch the fixes inserted says so (report::Result::unproven).
void markUnproven(const FixOutcome& o, const std::vector<std::pair<std::string, report::Result*>>& results);

}  // namespace layergate::driver
