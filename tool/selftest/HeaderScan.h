// A light reading of a CUDA header's text for the self-test harnesses
// (Harness.h, EntryHarness.h): comments, strings and preprocessor lines
// blanked so that braces can be counted; a class's member functions and the
// enclosing namespaces (scanClass, in Harness.h); the functions declared at
// namespace scope (scanFunctions). Types are compared as written: the
// harness is compiled by nvcc, which has the last word.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "selftest/Harness.h"

namespace layergate::selftest {

std::string trim(std::string s);
std::string squeeze(const std::string& s);  // runs of white space -> one space
bool isIdent(char c);
bool hasWord(const std::string& s, const std::string& w);
std::string lower(std::string s);
std::string blank(const std::string& text);
std::size_t matchClose(const std::string& s, std::size_t open);
std::string baseType(std::string t);  // "const T *" -> "T"
int stars(const std::string& t);
bool isIntegral(const std::string& t);
std::string qualify(const std::string& type, const std::string& ns);
void replaceAll(std::string& s, const std::string& from, const std::string& to);

// A function defined at namespace scope (not in a class), with the
// namespaces around it, outermost first.
struct NamespaceFunction {
  std::vector<std::string> namespaces;
  HeaderMethod fn;
};
std::vector<NamespaceFunction> scanFunctions(const std::string& text);

}  // namespace layergate::selftest
