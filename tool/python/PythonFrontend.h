// Python frontend: tree-sitter-python over the gate module.
//
// Takes: one Python source file and the target's PythonGateSpec. Returns: the
// Gate of the first class named in the spec: the constructor's admission
// condition (paths reaching the enabling statement) and the per-call predicate,
// over config variables. Throws InputError (one line, file first) for input that
// is not Python or holds no such class.
#pragma once

#include <string>

#include "model/Model.h"
#include "target/Target.h"

namespace layergate::python {

struct SourceFile {
  std::string path;  // as shown in diagnostics
  std::string text;  // whole file contents
};

struct Limits {
  int max_depth = 200;       // statement/expression nesting
  std::size_t max_bytes = 8u << 20;
};

model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec,
                        const Limits& limits = {});

}  // namespace layergate::python
