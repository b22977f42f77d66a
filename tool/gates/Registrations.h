// Registrations: which C++ function each native op is bound to, read from
// the C++ sources' registration blocks by content (they move between files
// and versions, so never by path).
//
// Takes: C++ source texts. Returns: the registrations they hold, and the
// definitions of given function names. Reads tokens (clang's raw lexer: no
// preprocessing, no headers), so both branches of an `#ifdef USE_ROCM` are
// seen, each registration with the line it stands on.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace layergate::gates {

// One op bound to a C++ function (or declared by its schema alone).
struct Registration {
  enum class Kind { Schema, Def, Impl, Pybind, TvmFfi };
  Kind kind = Kind::Def;
  // The library's namespace as written: `_C`, `sgl_kernel`, or a build-time
  // name (`TORCH_EXTENSION_NAME`, `CONCAT(TORCH_EXTENSION_NAME, _moe_C)`);
  // for pybind11, the module's name.
  std::string ns;
  std::string op;        // `rms_norm` (an overload `.out` is in `overload`)
  std::string overload;  // "" for the default one
  std::string schema;    // the def's schema when it gives one: "rms_norm(Tensor! out, ...) -> ()"
  std::string function;  // the C++ function bound (unqualified), "" for a schema alone or a lambda
  bool lambda = false;   // bound to a lambda written in place (its body is at file:line)
  std::string dispatch_key;  // impl's: "CUDA", "kCUDA", "CPU", ... ("" when none)
  std::string file;
  int line = 0;
};

// The registrations in one file's text (file is only recorded).
std::vector<Registration> scanRegistrations(const std::string& text, const std::string& file);

// Whether the namespace as written in a registration can be the one Python
// names (`torch.ops.<python_ns>`): equal, or equal with the build-time
// extension name standing for any prefix (`CONCAT(TORCH_EXTENSION_NAME,
// _moe_C)` is `*_moe_C`; `TORCH_EXTENSION_NAME` alone is any name). Exact
// is 2, by the build-time name 1, no match 0.
int namespaceMatch(const std::string& written, const std::string& python_ns);

// A function definition found in a C++ text.
struct Definition {
  std::string name;       // unqualified
  std::string qualified;  // as written before the '(' ("vllm::rms_norm" or "rms_norm")
  std::string file;
  int line = 0;           // of the name
  int body_line = 0;      // of the '{'
  std::size_t offset = 0; // byte offset of the name
  // The parameters as written: type and name ("const torch::Tensor&", "a").
  std::vector<std::pair<std::string, std::string>> params;
};

// The parameters of an op schema, "rms_norm(Tensor! out, float eps=1e-6) -> ()":
// type and name ("Tensor!", "out"); the keyword-only marker left out.
std::vector<std::pair<std::string, std::string>> schemaParams(const std::string& schema);

// The definitions (bodies, not declarations) of the wanted names at
// namespace scope, or of class members defined outside the class.
std::vector<Definition> scanDefinitions(const std::string& text, const std::string& file,
                                        const std::set<std::string>& wanted);

}  // namespace layergate::gates
