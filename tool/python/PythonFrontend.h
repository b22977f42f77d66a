// Python frontend: tree-sitter-python over the gate module.
//
// Takes: the given Python files (the gate module, helper modules, op wrappers,
// plugins) and the target's PythonGateSpec. The gate file is the first that
// defines a class named in the spec; imports between the given files are
// followed (a file answers to every suffix of its path as a dotted module
// name). Returns: the Gate of that class: the constructor's admission condition
// (paths reaching the enabling statement) and the per-call predicate, over
// config variables, with helpers of any given file inlined and monkeypatched
// probes applied; plus the trace facts: the native calls the gate class makes
// (arguments with values and origins) and the op wrappers of every file.
// Throws InputError (one line, file first) for input that is not Python or
// where no file holds such a class.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/Model.h"
#include "model/Source.h"
#include "target/Target.h"

namespace layergate::python {

struct SourceFile {
  std::string path;  // as shown in diagnostics
  std::string text;  // whole file contents
};

struct Limits {
  int max_depth = 200;       // statement/expression nesting
  std::size_t max_bytes = 8u << 20;
  // A per-configuration route to analyse instead of the given chain's: the
  // text of the op library value (Gate::routes' module) whose configurations
  // are in scope; empty: the given chain's op module.
  std::string route;
};

// What a module defines, for discovery (no walk): the names of its classes
// (at any depth) and how many functions it defines at module level.
struct Outline {
  std::vector<std::string> classes;
  int module_functions = 0;
  std::vector<std::string> functions;  // the module-level defs' names
};
Outline outline(const std::string& text);

// Comments and def/class line spans, for suppressions and fingerprints.
model::SourceFacts sourceFacts(const std::string& text);

model::Gate extractGate(const std::vector<SourceFile>& files, const target::PythonGateSpec& spec,
                        const Limits& limits = {});
// The selection layer: the first module-level function named in
// spec.selection_functions that a given file defines, walked like a policy
// (its parameters unknown, probes and env free); nullopt when none is defined.
std::optional<model::Selection> extractSelection(const std::vector<SourceFile>& files,
                                                 const target::PythonGateSpec& spec, const Limits& limits = {});

// One file: the same as a list of one.
model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec,
                        const Limits& limits = {});

}  // namespace layergate::python
