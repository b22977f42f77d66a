// Syntax: small helpers over tree-sitter-python nodes (type tests, fields,
// named children without comments) and string helpers used by the walker.
// Take nodes or strings; return nodes, node lists or strings; no state.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <vector>

namespace layergate::python::detail {

bool is(TSNode n, const char* type);
TSNode field(TSNode n, const char* name);
bool isExtra(TSNode n);
std::vector<TSNode> children(TSNode n, bool named_only);
std::vector<TSNode> named(TSNode n);
TSNode firstNamed(TSNode n);
std::string lower(std::string s);
std::string lastComponent(const std::string& dotted);

}  // namespace layergate::python::detail
