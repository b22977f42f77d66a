// Scanning a directory: discovery (tool/discover/), then one analysis per
// unit it found, every path in the results relative to the scanned root
// (until showFromWorkingDirectory).
//
// Takes: the root and the options of a check. Returns: the units and their
// report::Results, in discovery order. Throws InputError when nothing is found
// (exit status 2, never "no findings") or when every unit fails.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/Analysis.h"
#include "cli/Chain.h"
#include "discover/Discover.h"

namespace layergate::driver {

struct ScanRequest {
  std::string root;
  Request base;  // options for each analysis; its file lists are ignored
  discover::Options discover;
  // --platform: analyse only the units whose target declares this platform
  // ("all": every unit). The others are counted in ScanResult::skipped.
  std::string platform = "all";
};

struct ScanResult {
  std::vector<discover::Unit> units;    // the units analysed
  std::vector<report::Result> results;  // one per unit, same order
  std::vector<std::string> notes;       // discovery notes, units that could not be analysed
  // Units found and not analysed: a target layergate has no model of yet, or
  // an analysis that stopped (bad input); with the reason. Never clean.
  struct Unanalysed {
    discover::Unit unit;
    std::string reason;
    bool unmodelled = false;  // true: no model yet; false: the analysis stopped
    std::string platform;     // its target's
  };
  std::vector<Unanalysed> unanalysed;
  std::map<std::string, int> skipped;  // platform -> units found and left out by --platform
  // The selection layer in vLLM's shape, when the checkout has one (cli/Chain.h).
  std::vector<ChainVerdict> chains;
};

ScanResult scan(const ScanRequest& request);

// Every path of the scan (results, units, notes and messages that quote
// them) made relative to the working directory, as a compiler prints the
// paths it was given: the root in front of each root-relative path
// (ScanPaths.cpp). Before rendering; fingerprints are left as they are.
void showFromWorkingDirectory(ScanResult& s, const std::string& root);

// Per platform (when there are several) each analysis: its diagnostics in
// full, or one line when it has nothing to report and no detail was asked for.
std::string renderScanText(const ScanResult& s, const report::TextOptions& o);
// One line per finding group of every analysis, then the count.
std::string renderScanConcise(const ScanResult& s);
// Every analysis's GitHub workflow commands (report::renderGithub), then an
// annotation per unit not analysed.
std::string renderScanGithub(const ScanResult& s);
// One GitLab Code Quality array: every analysis's issues, then an issue per
// unit not analysed (check_name "not-analysed").
std::string renderScanGitlab(const ScanResult& s);
// {"tool", "analyses": [the single-check JSON of each unit], "notes", "summary"}
std::string renderScanJson(const ScanResult& s);
// One run holding every unit's results (code scanning wants one run per tool);
// artifact URIs relative to %SRCROOT%: o.srcroot, the scanned root, and
// o.base the root too while the results' paths are relative to it.
std::string renderScanSarif(const ScanResult& s, const report::SarifOptions& o = {});
// One page, a section per unit (o.file_base: the scanned root).
std::string renderScanHtml(const ScanResult& s, const report::HtmlOptions& o);
int countAtLeast(const ScanResult& s, model::Severity severity);

}  // namespace layergate::driver
