// The driver: runs the pipeline stages in order for one check request.
//
// Takes: the files, the target and options. Returns: a report::Result.
// Throws InputError for bad input (the CLI turns it into exit status 2).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/Config.h"
#include "cpp/CppFrontend.h"
#include "report/Report.h"
#include "solve/Solver.h"
#include "target/Target.h"

namespace layergate::driver {

struct Request {
  std::vector<std::string> python_files;
  std::vector<std::string> cpp_files;
  std::string target;     // empty: the default target
  target::RuleSet rules;  // the bundled rules, the user's (--rules), a --target FILE
  cpp::ParseOptions cpp;
  solve::Options solve;
  std::size_t max_file_bytes = 8u << 20;
  int max_depth = 200;  // nesting, both frontends
  bool strict = false;  // possible gaps (LG008) are errors
  // One example configuration per reachable dispatch leaf in each admitted
  // cell (selftest's harness), when this says the examples will be used.
  std::function<bool(const model::Gate&, const model::Dispatch&)> want_examples;
  // The configuration's rule policy (select/ignore, severities, per-file
  // ignores); null: every rule at its own severity. Inline suppressions
  // apply either way.
  std::shared_ptr<const config::Settings> settings;
  // A per-configuration route of the gate to analyse (model::Route::module):
  // its configurations against the given C++ (the route's own sources).
  std::string route;
  // The files past the gate and the dispatch are what discovery found beside
  // the dispatch by content (no layout names them): a break of the flag's
  // chain there is expected, a note rather than LG006.
  bool chain_by_content = false;
};

// The target of that name among the rules (empty: the default one), or the
// target a .json file describes (target::isTargetFile), read with the rules so
// that its "extends" resolves. InputError names the known targets.
target::Target selectTarget(const target::RuleSet& rules, const std::string& name);
report::Result analyse(const Request& request);

// After the checks: severities and the rule policy, inline suppressions
// (LG010/LG011), fingerprints. Reads the files the findings point at.
void finishFindings(const Request& req, report::Result& r);

// Reads a whole file; InputError (one line) when it is missing, not a regular
// file, unreadable or larger than max_bytes.
std::string readSource(const std::string& path, std::size_t max_bytes);

// Every input that cannot be opened for reading, all named in one
// InputError ("a.py: no such file; b.cuh: permission denied"), so that a
// user fixes them in one go; nothing when all can be read.
void requireReadable(const std::vector<std::string>& paths);

}  // namespace layergate::driver
