// Configuration: [tool.layergate] in pyproject.toml, or the top level of
// .layergate.toml, found by walking up from the scanned path as ruff does (the
// nearest directory wins; in one directory .layergate.toml wins over
// pyproject.toml, and a pyproject.toml without [tool.layergate] does not
// count). Read with toml++; command-line flags override the file.
//
// Takes: where the scan starts (a directory or a file), or --config FILE, and
// the command line's overrides. Returns: Settings, each value with where it
// came from ("pyproject.toml:7", "command line", "default"), and the rule
// policy they imply (which rules run, at which severity, in which files).
// Throws InputError "FILE:LINE:COL: ..." for unknown keys and bad values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/Model.h"
#include "solve/Solver.h"

namespace layergate::config {

template <class T>
struct Setting {
  T value{};
  std::string origin = "default";  // "pyproject.toml:7", "command line", "default"
};

struct PerFileIgnore {
  std::string glob;                 // relative to the configuration's directory
  std::vector<std::string> codes;   // rule codes or prefixes
  std::string origin;
};

// A glob relative to a directory: "vendor" (any path component of that name),
// "tests/**", "**/generated_*.py", "a/b.py". fnmatch(3) per component, "**"
// for any number of components; a pattern that matches a directory covers
// everything under it.
bool pathMatches(const std::string& glob, const std::string& relative_path);

struct Settings {
  std::string file;      // the configuration file read, as shown ("" when none)
  std::string base_dir;  // absolute: what the file's globs and paths are relative to
  Setting<std::vector<std::string>> select{{"ALL"}};
  Setting<std::vector<std::string>> ignore;
  // The command line's --select replaces the file's selection (and its
  // ignore list); its --ignore removes more, as in ruff.
  std::optional<Setting<std::vector<std::string>>> cli_select;
  Setting<std::vector<std::string>> cli_ignore;
  std::map<std::string, Setting<model::Severity>> severity;  // rule code -> severity
  Setting<std::string> fail_on{"error"};
  Setting<int> max_world_size{8};
  Setting<unsigned> solver_rlimit{solve::kDefaultRlimit};  // Z3's resource limit per query
  Setting<bool> strict{false};
  // The user's rules directories (absolute), read after the bundled rules
  // unless bundled_rules is false (target::RuleSet).
  Setting<std::vector<std::string>> rules_dirs;
  Setting<bool> bundled_rules{true};
  // The analysis limits (limitHint): each message that hits one names its
  // flag and its key here.
  Setting<std::int64_t> max_depth{200};         // nesting in either language
  Setting<std::int64_t> max_paths{20000};       // paths through a dispatch
  Setting<std::int64_t> max_files{200000};      // files a directory scan looks at
  Setting<std::int64_t> max_dir_depth{256};     // directory levels a scan enters
  Setting<std::int64_t> max_file_bytes{8 << 20};
  Setting<std::vector<std::string>> exclude;
  std::vector<PerFileIgnore> per_file_ignores;

  // The rule policy.
  bool enabled(const std::string& rule) const;
  std::optional<model::Severity> severityOf(const std::string& rule) const;
  // Per-file ignores: `path` as the analysis sees it (relative to the current
  // directory, or absolute).
  bool ignoredIn(const std::string& rule, const std::string& path) const;
  // `exclude`, for a directory scan: `path` as for ignoredIn.
  bool excluded(const std::string& path) const;
  // Severity overrides, then select/ignore and per-file ignores (dropped).
  void apply(std::vector<model::Finding>& findings) const;
};

struct Overrides {
  std::optional<std::string> config_file;  // --config FILE
  bool isolated = false;                   // --isolated: read no configuration file
  std::optional<std::vector<std::string>> select, ignore;
  std::optional<std::string> fail_on;
  std::optional<int> max_world_size;
  std::optional<unsigned> solver_rlimit;
  std::optional<bool> strict;
  std::optional<std::vector<std::string>> rules_dirs;
  std::optional<bool> bundled_rules;
  // Limits by their key ("max-depth"), as given on the command line.
  std::map<std::string, std::int64_t> limits;
};

// The limits a user can raise: key (the flag without its dashes, the
// configuration key), its allowed range. The order is --show-settings'.
struct LimitKey {
  const char* key;
  std::int64_t min, max;
  Setting<std::int64_t> Settings::*field;
};
const std::vector<LimitKey>& limitKeys();

// The configuration file that applies to `start` (a directory or a file):
// "" when there is none.
std::string findConfigFile(const std::string& start);
// Reads one file (pyproject.toml: its [tool.layergate]; any other name: the
// top-level table) into `into`.
void readConfigFile(const std::string& path, Settings& into);
Settings resolve(const std::string& start, const Overrides& overrides);

// --show-settings: every setting, its value and where it came from.
std::string describe(const Settings& s);

}  // namespace layergate::config
