// Which changed files can change a verdict: a regular expression over
// repository-relative paths (Python's re.search, as pre-commit's `files:`
// applies it), built from the target descriptions, so that a hook or a CI
// path filter runs the check when one of them changes
// (`layergate targets --files-regex`).
//
// Takes: the targets and the selection layers. Returns: `(^|/)(...)$` over
// - each layout's Python files (gate, op wrappers, markers) as their path
//   patterns, `**` for any folders;
// - each layout's C++ files (dispatch, its .cu entry, the bindings, in every
//   dispatch extension) by name, since the generic layout finds the entry and
//   bindings by content beside a dispatch of any path;
// - the selection layers' files;
// - the other files a layout's analysis reads when the gate imports them
//   ("discovery": {"reads": [...]}: helper modules such as `*_utils.py`,
//   SGLang's environ.py, the platform package, an op module) and each
//   target's env modules ("env_modules": envs.py);
// - the configuration files (.layergate.toml, pyproject.toml).
// Not in it: the headers a dispatch includes, and an op library a gate routes
// some configurations to (its sources are the fork's own names).
// Each alternative once, sorted.
#pragma once

#include <string>
#include <vector>

#include "target/Chains.h"
#include "target/Target.h"

namespace layergate::discover {

std::string filesRegex(const std::vector<target::Target>& targets, const std::vector<target::ChainSpec>& chains);

// A discovery pattern as a regex over the end of a path: fnmatch's `*`, `?`
// and `[...]` within a component, `**` for any number of components.
std::string patternRegex(const std::string& pattern);

}  // namespace layergate::discover
