// Discovery: which layered gates a directory holds, found from the target
// descriptions' path patterns (rules/targets/*.json, "discovery").
//
// Takes: a root directory and the targets. Returns: the units to analyse (a
// target with its Python gate and C++ dispatch files, paths relative to the
// root, '/'-separated), sorted. Never follows a symlinked directory (so a
// symlink loop cannot hang the walk), skips VCS, build and vendored trees and
// what the checkout's .gitignore leaves out (Options::ignored), and stops with
// an InputError past Options::max_files.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "target/Target.h"

namespace layergate::discover {

struct Options {
  std::size_t max_files = 200000;  // files seen (skipped trees not counted)
  int max_depth = 256;
  // The configuration's `exclude`: a root-relative file or directory the walk
  // leaves out (an excluded directory is not entered; its files are not counted).
  std::function<bool(const std::string& rel)> exclude;
  // What git ignores under the root (.gitignore files, .git/info/exclude):
  // root-relative paths, a directory's with a trailing '/' (as `git ls-files
  // --ignored --directory` lists them). The walk leaves them out and says
  // how many in a note. Empty outside a git checkout: the built-in skips
  // (isSkippedDirName) are then all there is.
  std::set<std::string> ignored;
};

// One analysis to run.
struct Unit {
  std::string target;
  std::vector<std::string> python_files;  // root-relative
  std::vector<std::string> cpp_files;
  // How the dispatch was found: "" when its path is the layout's own; else
  // "dispatch found by content: ..." (a file of another dispatch extension beside the
  // layout's path that defines the target's class and method, such as a
  // MUSA port's .muh), or "route: ..." (a per-configuration route of the
  // gate to another op library, analysed against that library's C++).
  std::string matched_by;
  // The chain past the dispatch was found by content beside it (the fallback
  // layout names none).
  bool chain_by_content = false;
};

// A file whose path fits a gate or dispatch pattern but whose text does not
// define one of the target's classes (an op-wrapper module named
// custom_all_reduce.py, a header of another kernel with the same name).
struct Rejected {
  std::string file;    // root-relative
  std::string reason;  // "no class CustomAllreduce or CustomAllReduce (9 module-level functions: an op-wrapper module)"
};

struct Result {
  std::string root;                // the directory walked, as given
  std::vector<Unit> units;         // sorted by files, then target
  std::vector<std::string> notes;  // e.g. a directory that could not be read
  std::vector<std::string> candidates;  // files whose name fits some pattern, sorted
  std::vector<Rejected> rejected;       // candidates no target took for their text, sorted
  std::size_t files_seen = 0;
};

// Whether a file may be target's gate (python) or dispatch (!python). The
// walk reads each candidate once and takes it only when it defines one of
// the target's classes; match() without it goes by paths alone.
using Accept = std::function<bool(const target::Target& t, const std::string& file, bool python)>;

// Walks root and matches the files against the targets. Empty units when
// nothing matches; see requireUnits.
Result discover(const std::string& root, const std::vector<target::Target>& targets, const Options& options = {});

// The matching alone, over root-relative paths (what discover does after the
// walk; a separate step so it can be tested without a file system).
std::vector<Unit> match(const std::vector<std::string>& files, const std::vector<target::Target>& targets,
                        const Accept& accept = {});

// InputError "no layered gate found under ROOT (looked for: ...)" when the
// result holds no unit; says which half was found when only one was, which
// candidates were not taken and why, and, for a gate alone, the op module its
// native calls go through (read from r.root) and the layouts across checkouts
// that would pair it with a dispatch beside it.
void requireUnits(const Result& r, const std::vector<target::Target>& targets, const std::string& root);

// The extensions a dispatch may be kept in (CUDA, C++ and MUSA spellings):
// a file at a layout's dispatch or chain path with another of these is the
// same file in a port's spelling, taken when its text defines the target's
// class and dispatch method.
const std::vector<std::string>& dispatchExtensions();

// Whether C++ source text defines the target's dispatch: its dispatch
// function declared or defined (not only called through an object) and, for
// a class method, a definition of one of its classes. What a port's spelling
// is taken for, and what picks the target of files given without one.
bool definesDispatch(const std::string& text, const target::Target& t);

// The layout's patterns with the last component's extension swapped for
// each other dispatch extension (none for a pattern without one).
std::vector<std::string> extensionVariants(const std::vector<std::string>& patterns);

// The root-relative files under root whose last component keep() takes,
// sorted: the walk discover() makes (its skips, excludes and limits), for a
// stage that reads other files than the targets' (gates/). Its notes (a
// directory that could not be read) are appended to *notes.
std::vector<std::string> walkFiles(const std::string& root, const Options& options,
                                   const std::function<bool(const std::string& name)>& keep,
                                   std::vector<std::string>* notes = nullptr);

// Directory names the walk never enters (dot-directories, build outputs:
// build, build-*, build_*, cmake-build-*, but not builders/ or buildkite/;
// vendored trees such as third_party, node_modules, __pycache__, site-packages).
bool isSkippedDirName(const std::string& name);

// Matches a pattern against the end of a root-relative path, a component at a
// time: fnmatch(3) per component, "**" for any number of components. Returns
// true and sets *prefix to the unmatched leading part ("" or "a/b/").
bool matchSuffix(const std::string& pattern, const std::string& path, std::string* prefix = nullptr);

}  // namespace layergate::discover
