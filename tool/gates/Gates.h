// Gates: every native-op call of a checkout that runs under a condition,
// paired with the C++ entry its op is registered to. The model's object for
// a layered gate found from the code (Python admission site -> op -> C++
// entry -> variables); bundled targets are priors that name families.
//
// Takes: a checkout's root (and the discovery options: excludes, limits).
// Returns: the inventory: each call, its conditions, its op's registration
// and entry, and whether it is analysed, with the reason when it is not.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "discover/Discover.h"
#include "gates/Registrations.h"
#include "gates/Sites.h"

namespace layergate::gates {

// A quantity the call hands to the entry: the Python argument, the entry's
// parameter it becomes (by position, through the wrappers), and whether a
// condition on the call's path reads it.
struct Variable {
  std::string python;  // the argument as written at the site
  int position = -1;   // the op's argument position
  std::string param;   // the entry's parameter (the schema's name when the definition gives none)
  std::string type;    // as the entry (or the schema) writes it
  bool tested = false; // a condition on the path reads it
};

struct Gate {
  Site site;
  // The registration that binds the op (an impl for a CUDA key first, then
  // a def with a function, then any), and the entry's definition.
  bool python_op = false;  // the op is defined in Python (torch.library, a register-custom-op helper)
  bool registered = false;
  Registration registration;
  std::string schema;  // the op's schema, from its def
  bool defined = false;
  Definition entry;
  std::vector<Variable> variables;
  // "analysed" (by a bundled target, or by the generic model), else why not.
  std::string status;
  std::string reason;
  // The reason's key once an analysis set it ("analysed", "no-variable",
  // "unread"); empty: reasonKey() derives it from the fields above.
  std::string key;
  // The analysis of the gate with no target (cli/GateAnalysis.h): counts,
  // its diagnostics one per line, and its variables ("group_size <- self.group_size").
  int errors = 0, warnings = 0;
  std::vector<std::string> findings;
  std::vector<std::string> variable_names;
  // Configurations the gate admits and the entry serves: per variable the
  // entry reads, its expression there, its value in C++ and in the report's words.
  struct Value {
    std::string expr, cpp, words;
  };
  std::vector<std::vector<Value>> served;
  // The C++ lines its errors reject at ("csrc/x.cu:19"), each once.
  std::vector<std::string> rejected_at;
};

struct Inventory {
  std::string root;
  std::vector<Gate> gates;       // every native-op call outside tests, under a condition or not
  std::vector<Site> test_sites;  // calls in tests, benchmarks and examples (not gates)
  std::size_t python_files = 0, cpp_files = 0, registrations = 0;
  std::vector<std::string> notes;
};

// Targets: the bundled (and the user's) targets, whose units mark the sites
// in their gate files as analysed by that target.
Inventory inventory(const std::string& root, const std::vector<target::Target>& targets, const discover::Options& o);

// Whether text reads the expression e: e itself at word boundaries, or, for
// a plain name, its attributes and calls (`x.shape[-1]`, `x.size(0)`).
bool reads(const std::string& text, const std::string& e);

// The reasons a call under a condition is not analysed, as counted in the
// summary (stable words; docs/discovery.md lists them).
std::string reasonKey(const Gate& g);

// `check --list-gates`: every gate (site -> op -> entry -> conditions), the
// ones not analysed with their reason, and the counts.
std::string renderText(const Inventory& inv, bool verbose);
std::string renderJson(const Inventory& inv);

}  // namespace layergate::gates
