// Parse: the tree-sitter tree of a Python source text, parsed once per run.
//
// A checkout's analyses read the same modules (the gate, the op wrappers,
// the env and platform modules their imports reach) and each pass of an
// analysis reads them again; every text is parsed once and each reader gets
// its own copy of the tree (copies are cheap, and are what lets threads read
// one tree at once). The texts parsed stay until the run ends, up to a bound
// on their size (a long-running caller such as a fuzzer starts afresh past it).
#pragma once

#include <tree_sitter/api.h>

#include <cstddef>
#include <optional>
#include <string>

namespace layergate::python {

// The tree of text, or null when tree-sitter gives none; the caller deletes
// it (ts_tree_delete).
TSTree* parsePython(const std::string& text);

// How many texts tree-sitter parsed in this run (not served from the cache).
std::size_t textsParsed();

// A whole-tree check's verdict on a text (the walker's syntax check: where
// the first construct it refuses starts, or that there is none), kept with
// the text's tree so that the check walks each text once per run; nothing
// when the text was not checked (or not parsed) yet.
std::optional<long> syntaxVerdict(const std::string& text);
void rememberSyntaxVerdict(const std::string& text, long verdict);

}  // namespace layergate::python
