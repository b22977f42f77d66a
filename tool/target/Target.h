// Target descriptions: the data in rules/targets/*.json that tells the
// frontends which class, methods, probes and members make up one layered gate.
//
// Takes: a JSON file. Returns: a Target. Frontends read only the spec part
// that concerns them; nothing here is specific to one fixture or one project.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/Variables.h"

namespace layergate::target {

struct PythonGateSpec {
  std::vector<std::string> class_names;       // "CustomAllreduce"
  std::vector<std::string> per_call_methods;  // "should_custom_ar"
  std::string enabling_attr = "disabled";     // self.<attr> = <enabling_value>
  bool enabling_value = false;
  // Call name (last dotted component) -> the variable it reads: a declared
  // one (its type gives the sort; a declared probe stays one), or a bool
  // probe of the machine by that name ("p2p_ok").
  std::map<std::string, std::string> probes;
  // Platform flags fixed by the target: a bare name, an attribute's last
  // component or a call's last component -> its value on this platform.
  std::map<std::string, bool> platform_flags;
  // Values the target declares, over its variables: a bare or dotted name
  // ("_ON_GFX9", "torch.half") or a call by its last component with "()"
  // ("on_gfx9()") -> the term it is (a GPU generation compared with one of
  // its values, a dtype constant). Read before what the code computes there
  // (a probe of the machine the analysis does not run on).
  std::map<std::string, Term> values;
  Variables variables;  // the target's (Target::variables), for the terms
  model::Roles roles;   // the target's (Target::roles)
  // Helpers that read an env var as a bool ("true"/"1", any case, is true).
  std::vector<std::string> bool_env_helpers;
  // Modules whose attributes are env vars (envs.NAME, envs.NAME.get()).
  std::vector<std::string> env_modules;
  // The selection layer (issue 13): module-level functions that return the
  // implementation class to use (SGLang's dispatch_custom_allreduce); when a
  // given file defines one, the report says per cell which class it returns.
  std::vector<std::string> selection_functions;
  // Values a class gate hands down (issue 13): self attribute as the
  // constructor leaves it on the admitted paths -> the config variable the C++
  // side reads (quick all-reduce's qr_quant_level -> quant_level).
  std::map<std::string, std::string> outputs;
  // Values handed down per call (issue 13): the config variable the C++ side
  // reads <- argument `argument` (0-based) of the call named `call` that the
  // per-message method `method` makes (directly or in a helper it calls), on
  // the paths that reach it (CustomAllReduceV2.custom_all_reduce ->
  // module.all_reduce(comm, input, algo.algo_name, pull_arg): "algo").
  // attribute: a property ("shot") or a method called without arguments
  // ("is_push()") of that argument, when the value handed down is that
  // (the first CustomAllReduceV2: obj.all_reduce(input, algo), whose wrapper
  // passes algo.shot to the JIT module algo.is_push() chooses).
  struct CallOutput {
    std::string method, call;
    int argument = 0;
    std::string attribute;
  };
  std::map<std::string, CallOutput> call_outputs;
  // The calls this target's dispatch receives: those where a value handed
  // down per call equals this (a wrapper that sends push and pull to two JIT
  // modules: one target each, "only_when": {"pushes": true}); a conjunct of
  // the gate. Booleans are 0/1.
  std::map<std::string, std::int64_t> only_when;
  // A policy gate (issue 13): a module-level function whose return value is
  // the gate (None: not admitted) and whose record fields are the values it
  // hands down (a kernel variant, a block count). Empty: a class gate.
  struct PolicyInput {
    std::string param;                 // the function's parameter
    std::string var;                   // the config variable it is (the group size, "numel")
    std::vector<std::int64_t> values;  // the values a caller passes (empty: any within min/max)
    std::optional<std::int64_t> min, max;
    // The parameter is an optional object (a tensor or None) and the
    // variable, a declared bool, says whether it is given.
    bool present = false;
  };
  struct Policy {
    std::vector<std::string> functions;         // "get_pcie_ipc_launch_config"
    std::vector<PolicyInput> inputs;
    std::map<std::string, std::string> outputs; // record field -> config variable the C++ receives
    std::vector<std::string> nbytes_product;    // parameters whose product is the message size
    // The function returns whether the fast path runs (a bool), not a
    // record or None.
    bool returns_bool = false;
    bool active() const { return !functions.empty(); }
  } policy;
};

struct CppDispatchSpec {
  std::vector<std::string> class_names;         // "CustomAllreduce"; none: a free function
  std::vector<std::string> dispatch_functions;  // "allreduce"
  // Member or variable name -> config variable.
  std::map<std::string, std::string> members;
  // Local names that hold the message size in bytes.
  std::vector<std::string> byte_count_names;
  // Include directories relative to the checkout root ("include_dirs"), e.g. a
  // JIT kernel's own headers: each is looked up beside the dispatch file and
  // in every directory above it (nearest first) and added as -I where found.
  std::vector<std::string> include_dirs;
  // Macros the build defines ("defines": "NAME" or "NAME=VALUE"), added as -D.
  std::vector<std::string> defines;
  // Language standard the dispatch is compiled with ("std": "c++20"); empty: c++17.
  std::string std;
  // Functions, class templates (a constructor call such as RuntimeCheck(...))
  // or macros whose first argument is a precondition ("preconditions"): at a
  // call the path splits into a throw leaf where the argument is false and the
  // path that goes on with it true.
  std::vector<std::string> preconditions;
  // Expressions of the dispatch, by their source text without blanks
  // ("query.size(2)", "is_navi_gpu()", "at::ScalarType::Half") -> the term
  // they are over the target's variables.
  std::map<std::string, Term> values;
  Variables variables;  // the target's (Target::variables), for the terms
  model::Roles roles;   // the target's (Target::roles)
  // Functions of the given files that the walk enters at their calls (a
  // launcher template that switches on more of the configuration), rather
  // than counting their launches as the call's.
  bool follow_calls = false;
};

// How `layergate check DIR` finds this target's files (tool/discover/). Paths
// are suffixes of root-relative paths, matched a component at a time with
// fnmatch(3) globs, `**` standing for any number of components. Never
// inherited through "extends": each layout states its own.
struct Discovery {
  std::vector<std::string> python_paths;  // the Python gate file(s)
  std::vector<std::string> cpp_paths;     // the C++ dispatch file(s)
  // Marker files that must exist (under the same root, when same_root) for the
  // layout to apply: tells apart layouts that share the gate and dispatch paths.
  std::vector<std::string> required_paths;
  // Gate and dispatch sit under one checkout root: the part of the path before
  // the pattern must be the same. False: each gate is paired with the nearest
  // dispatch file (longest shared directory), for layouts that span checkouts.
  bool same_root = true;
  // Used only when no other target matched anything (the generic target).
  bool fallback = false;
  // The rest of the flag's chain, added to a unit when present under the same
  // root: the op wrapper module (Python), the .cu entry and the bindings (C++).
  std::vector<std::string> chain_python;
  std::vector<std::string> chain_cpp;
  // Other files the analysis reads when the gate imports them (helper, env
  // and platform modules, an op module found by import): patterns as above,
  // used only for `layergate targets --files-regex`, never to find a gate.
  std::vector<std::string> reads;
};

struct Target {
  std::string name;
  std::string description;
  // "extends": the base target's name. A layout file states only its
  // discovery and its differences; objects merge key by key over the base's,
  // a null value deletes the base's key, anything else replaces it.
  std::string extends;
  std::string platform = "cuda";
  Discovery discovery;
  PythonGateSpec python;
  CppDispatchSpec cpp;
  // The configuration variables the target declares (docs/targets.md). With
  // one in the "ranks" role the analysis is per cell (group size × link
  // flag, model/Roles.h); without, over the regions of their product.
  Variables variables;
  model::Roles roles;  // which declared variable plays which role
  // A layered gate whose files discovery recognises but that layergate has no
  // model of yet ("unmodelled": why). `check DIR` says it is present and not
  // analysed, never that it is clean.
  std::string unmodelled;
  // Where it was read from, and the file of the target of the same name it
  // replaces ("" when none): a user's target over a bundled one (RuleSet).
  std::string file;
  std::string replaces;
};

// The target descriptions a run reads, as ruff and Semgrep take a user's
// rules: the bundled rules directory (unless `bundled` is false), then each
// of the user's directories in order, then single target files (`--target
// FILE`). A target whose name was already read replaces that one (and says
// so in Target::replaces); "extends" names any target of the set. A user's
// directory holds targets/*.json as the bundled one does, or the *.json
// files themselves, and may hold a selection/ folder.
struct RuleSet {
  bool bundled = true;
  std::string bundled_dir;  // "": defaultRulesDir()
  std::vector<std::string> dirs;
  std::vector<std::string> files;
};

// A --target value that is a file, not a name: it ends in .json or holds a '/'.
bool isTargetFile(const std::string& name_or_path);

// Throws InputError with the file name and the JSON problem. A file with
// "extends" is resolved against the other *.json files in its directory.
Target loadTarget(const std::string& path);
// One self-contained description ("extends" is refused: there is nothing to
// resolve it against).
Target parseTarget(const std::string& json_text, const std::string& origin);
// All targets in <dir>/targets/, "extends" resolved, sorted by name. InputError
// for a duplicate name, an unknown base or an "extends" cycle.
std::vector<Target> loadTargets(const std::string& dir);
// Every target of the set, "extends" resolved, sorted by name. InputError for
// a set with no directory at all, a directory with no target descriptions, a
// duplicate name inside one directory or file list, and what loadTargets refuses.
std::vector<Target> loadTargets(const RuleSet& rules);
// The directories of the set in the order they are read (the bundled one
// first when it is read), for what else they hold (selection/).
std::vector<std::string> ruleDirs(const RuleSet& rules);
// The rules/ directory: $LAYERGATE_RULES, else ../share/layergate/rules beside
// the binary (installed), else the source tree it was built from (paths::rulesDir).
std::string defaultRulesDir();

}  // namespace layergate::target
