// Discovery: which layered gates a directory holds, found from the target
// descriptions' path patterns (rules/targets/*.json, "discovery").
//
// Takes: a root directory and the targets. Returns: the units to analyse (a
// target with its Python gate and C++ dispatch files, paths relative to the
// root, '/'-separated), sorted. Never follows a symlinked directory (so a
// symlink loop cannot hang the walk), skips VCS, build and vendored trees, and
// stops with an InputError past Options::max_files.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "target/Target.h"

namespace layergate::discover {

struct Options {
  std::size_t max_files = 200000;  // files seen (skipped trees not counted)
  int max_depth = 256;
};

// One analysis to run.
struct Unit {
  std::string target;
  std::vector<std::string> python_files;  // root-relative
  std::vector<std::string> cpp_files;
};

struct Result {
  std::vector<Unit> units;         // sorted by files, then target
  std::vector<std::string> notes;  // e.g. a directory that could not be read
  std::vector<std::string> candidates;  // files whose name fits some pattern, sorted
  std::size_t files_seen = 0;
};

// Walks root and matches the files against the targets. Empty units when
// nothing matches; see requireUnits.
Result discover(const std::string& root, const std::vector<target::Target>& targets, const Options& options = {});

// The matching alone, over root-relative paths (what discover does after the
// walk; a separate step so it can be tested without a file system).
std::vector<Unit> match(const std::vector<std::string>& files, const std::vector<target::Target>& targets);

// InputError "no layered gate found under ROOT (looked for: ...)" when the
// result holds no unit; says which half was found when only one was.
void requireUnits(const Result& r, const std::vector<target::Target>& targets, const std::string& root);

// Directory names the walk never enters (dot-directories, build*, vendored
// trees such as third_party, node_modules, __pycache__, site-packages).
bool isSkippedDirName(const std::string& name);

// Matches a pattern against the end of a root-relative path, a component at a
// time: fnmatch(3) per component, "**" for any number of components. Returns
// true and sets *prefix to the unmatched leading part ("" or "a/b/").
bool matchSuffix(const std::string& pattern, const std::string& path, std::string* prefix = nullptr);

}  // namespace layergate::discover
