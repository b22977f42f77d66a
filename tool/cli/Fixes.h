// `check --diff` and `check --fix`: the findings' fix edits shown as unified
// diffs or written to the files (tool/fix does the edits and diffs).
//
// Takes: the results with the directory their paths are relative to ("" for
// the working directory), whether unsafe fixes count. Returns: the diffs, and
// for --fix what was written; --fix also drops the fixed findings from the
// results, so that the report and the exit status are what is left.
// Throws InputError when a file cannot be read or written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/Report.h"

namespace layergate::driver {

struct FixOutcome {
  std::string diff;                // unified diffs, file by file
  int fixed = 0;                   // findings whose fix was taken
  std::vector<std::string> files;  // the files changed
  std::string summary() const;     // "fixed 3 findings in 1 file"
};

FixOutcome runFixes(const std::vector<std::pair<std::string, report::Result*>>& results, bool unsafe, bool write);

}  // namespace layergate::driver
