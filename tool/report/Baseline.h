// Fingerprints and baselines. A fingerprint is a hash of the rule, the
// admitting line's file (as the report shows it; Finding::admitting), its
// text (comments dropped, whitespace collapsed), the configuration cell
// (world size, NVLink) and the enclosing function's name — never the line
// number, nor which line the report shows first, so it survives
// unrelated edits that move the finding, and changes when the finding's line
// or cell does. Equal keys get "-2", "-3", ... in report order.
//
// A baseline is an earlier report (layergate JSON, from --format json or
// --write-baseline, or SARIF): a run given it reports only the findings whose
// fingerprint it does not hold, each entry matching at most one finding.
// --diff-base sets findings aside the same way, by the lines they are on
// (cli/DiffBase.h reads those from git).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/Model.h"
#include "model/Source.h"
#include "report/Report.h"

namespace layergate::report {

// FNV-1a 64 of s as 16 hex digits: the same on every run and build.
std::string stableHash(const std::string& s);

// Fills Finding::fingerprint; `files` holds (at least) the primary files.
void assignFingerprints(std::vector<model::Finding>& findings, const std::map<std::string, model::SourceText>& files);

// fingerprint -> how many findings of the baseline have it.
using Baseline = std::map<std::string, int>;
// InputError (one line) when the file is missing or not such a report.
Baseline readBaseline(const std::string& path);
// Drops the unsuppressed findings the baseline holds; returns how many.
int applyBaseline(Result& r, Baseline& b);
// --diff-base: the lines changed since a commit, by file (absolute, symlinks
// resolved); a file's line 0 stands for every line (a file new to git).
using ChangedLines = std::map<std::string, std::set<int>>;
// Sets aside into r.preexisting the unsuppressed findings none of whose
// locations (primary, notes, expansions) is on a changed line; their paths
// are relative to `base` ("" = the working directory). Returns how many.
int applyDiffBase(Result& r, const ChangedLines& changed, const std::string& base);
// The unsuppressed findings of every result, as a layergate JSON report
// holding only findings (rule, severity, message, file, line, fingerprint).
void writeBaseline(const std::string& path, const std::vector<const Result*>& results);

}  // namespace layergate::report
