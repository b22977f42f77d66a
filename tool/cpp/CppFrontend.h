// C++ frontend: Clang LibTooling in CUDA host mode over the dispatch header.
//
// Takes: the C++/CUDA files and the target's CppDispatchSpec. Returns: the
// Dispatch of the first matching class::function: its leaves (launch / throw /
// none), each with a path condition over config variables and both spelling and
// expansion locations. Throws InputError for files that are missing, binary, or
// hold no such dispatch.
#pragma once

#include <string>
#include <vector>

#include "model/Model.h"
#include "model/Source.h"
#include "target/Target.h"

namespace layergate::cpp {

struct ParseOptions {
  bool real_cuda_sdk = false;             // use /usr/local/cuda headers instead of the bundled stubs
  std::string cuda_path = "/usr/local/cuda";
  std::vector<std::string> include_dirs;  // extra -I
  std::vector<std::string> extra_args;    // passed to clang as is
  int max_depth = 200;                    // statement/expression nesting in the dispatch
  std::size_t max_paths = 20000;          // paths through the dispatch
};

// The target's include directories (cpp.include_dirs, relative to the
// checkout root, some directory above the files): each looked up from each
// file's directory upwards, nearest first; those found, absolute, once each.
// The parse adds them as -I; `selftest --header` compiles its harness with them.
std::vector<std::string> targetIncludeDirs(const std::vector<std::string>& files, const std::vector<std::string>& rel);

model::Dispatch extractDispatch(const std::vector<std::string>& files,
                                const target::CppDispatchSpec& spec,
                                const ParseOptions& options = {});

// Comments (clang's raw lexer) and function/class line spans of one file,
// for suppressions and fingerprints; `name` is how the file is shown.
model::SourceFacts sourceFacts(const std::string& text, const std::string& name);

}  // namespace layergate::cpp
