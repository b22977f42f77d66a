// Reports: what an analysis found, rendered for people (clang-style text and
// the configuration matrix; an HTML page) and for scripts (JSON, SARIF).
//
// Takes: a Result (filled by the driver). Returns: text. Knows nothing about
// how the result was computed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/Model.h"
#include "solve/Solver.h"
#include "solve/Space.h"

namespace layergate::report {

struct Result {
  std::string target;
  std::string platform;  // the target's ("cuda", "rocm"): the text report groups analyses by it
  std::vector<std::string> python_files;
  std::vector<std::string> cpp_files;
  model::Gate gate;
  model::Dispatch dispatch;
  std::vector<model::Finding> findings;
  std::vector<solve::CellVerdict> matrix;
  // A family described as data: its variables and the regions of their
  // product (instead of the world size × NVLink matrix).
  target::Variables variables;
  std::optional<solve::SpaceResult> space;
  // The cell analysis: the target's variables in the ranks, link and bytes
  // roles, by which a counterexample names its values.
  model::Roles roles;
  std::vector<model::Hop> trace;  // the NVLink flag from the Python probe to the C++ branch
  // Each value the gate hands down, from where Python computes it to the
  // C++ conditions that read it (link::traceValues).
  struct ValueTrace {
    std::string var, field;
    std::vector<model::Hop> hops;
    bool reaches_cpp = false;
  };
  std::vector<ValueTrace> value_traces;
  // The selection layer (issue 13), when a given file defines the target's
  // selection function: which class it returns, per arm the cells (as the
  // matrix's gate column: always, when ENV=..., never).
  std::optional<model::Selection> selection;
  std::vector<std::vector<solve::CellVerdict>> selection_cells;  // one per selection->arms
  int baselined = 0;              // findings left out because the --baseline holds them
  // Findings --diff-base set aside: none of their locations is on a line
  // changed since its commit. Listed (text, JSON), never counted.
  std::vector<model::Finding> preexisting;
  // Why findings got no fix (also in gate.notes): the text report says it
  // under the findings, where the other notes are shown only on request.
  std::vector<std::string> fix_notes;
  // Where `--fix --unsafe-fixes` inserted a C++ branch ("file:line:col"):
  // its launch counts as a kernel here, though only `layergate selftest`
  // shows it correct, and the report says so beside "no gaps".
  std::vector<std::string> unproven;
};

struct TextOptions {
  bool color = false;
  bool matrix = false;   // --matrix: the configuration matrix (and the selection layer's)
  bool trace = false;    // --trace: the flag trace and the values handed down
  bool notes = false;    // --verbose: what the analysis assumed or skipped (layergate: note: lines)
  bool details = true;   // the counterexample and its assumptions under each diagnostic
};

// Findings as a compiler groups diagnostics: one per rule and cause, the
// cells that share the rule, the message but for the cell, the Python line
// that admits them and the C++ path (a macro expanded per world size counts
// once). A group is what every format counts and shows once: a text or
// concise diagnostic, a SARIF result, an HTML card, an entry of JSON's
// "diagnostics". Suppressed findings are left out unless suppressed_too
// (then they group only with findings the same comment suppresses).
struct FindingGroup {
  std::vector<const model::Finding*> members;  // report order; the first is the counterexample shown
  std::string message;                         // "world sizes 4, 6, 8 without NVLink: the Python gate admits ..."
  // The members' primary location (Finding::primary: the check a patch
  // opened, else the admitting line), its note naming what differs per cell.
  model::Location primary;
  std::vector<model::Location> notes;  // the other locations, each once; expansions name their world sizes
  std::vector<const model::Fix*> fixes;  // distinct fixes of the members, safe ones first
  const model::Finding& first() const { return *members.front(); }
  bool suppressed() const { return first().suppressed.has_value(); }
};
std::vector<FindingGroup> groupFindings(const Result& r, bool suppressed_too = false);

// The text report: grouped diagnostics with their fixes and one
// counterexample each, then the summary; a run with nothing to report says
// so in a line. Matrix, traces and notes per TextOptions.
std::string renderText(const Result& r, const TextOptions& o = {});
// `--output-format concise`: one line per group, `path:line:col: RULE message`
// (no summary: the caller counts over every analysis, conciseCount).
std::string renderConcise(const Result& r);
std::string conciseCount(int errors, int warnings);
// `--output-format github`: GitHub Actions workflow commands, one line per
// error or warning group at its primary location
// (`::error file=F,line=L,col=C,title=LG001::message`; CiFormats.cpp).
std::string renderGithub(const Result& r);
// A workflow command's message (`%`, CR, LF escaped) and property value
// (those and `:` and `,`), as GitHub's toolkit escapes them.
std::string githubEscapeData(const std::string& s);
std::string githubEscapeProperty(const std::string& s);
// `--output-format gitlab`: GitLab Code Quality, a JSON array with one issue
// per group (description, check_name, fingerprint, severity, location).
std::string renderGitlab(const Result& r);
// "no gaps: 12 configurations admitted, each reaches a kernel", "" when the
// result has something to report (unsuppressed findings).
std::string cleanText(const Result& r);
// "1 error (3 configurations), 0 warnings" over groups; cells counted when they differ.
struct GroupCounts {
  int errors = 0, warnings = 0, error_cells = 0, warning_cells = 0;
};
GroupCounts countGroups(const Result& r);
std::string summaryText(const GroupCounts& c);
// "; clang errors in the dispatch, first at F:L: ..." when clang errors lie on
// the dispatch's paths (the summary line says so without --verbose); "" else.
std::string clangErrorsText(const Result& r);
std::string renderJson(const Result& r);
// SARIF 2.1.0 (GitHub code scanning). Artifact URIs are relative to
// %SRCROOT% (run.originalUriBaseIds): srcroot (the scanned folder); a file
// outside it gets an absolute file: URI. base: the directory the Result's
// relative paths are relative to. Both "" = the working directory.
struct SarifOptions {
  std::string srcroot;
  std::string base;
};
std::string renderSarif(const Result& r, const SarifOptions& o = {});
// A check that stopped before its report (exit status 2 or 3), as a log that
// code scanning still reads: one run, the driver as usual, no results, the
// invocation not successful and the one-line reason its error notification.
std::string renderSarifFailure(const std::string& reason, int exit_code, const SarifOptions& o = {});
// The same in JSON: the report's shape (scan: a directory's) with nothing in
// it and `error`, the reason; no summary, for nothing was counted.
std::string renderJsonFailure(const std::string& reason, int exit_code, bool scan);
// A path's SARIF artifactLocation: uri (percent-encoded) and uriBaseId
// ("%SRCROOT%", or "" for an absolute file: URI).
struct SarifUri {
  std::string uri, base_id;
};
SarifUri sarifUri(const std::string& path, const SarifOptions& o);

// A selection arm's cell in words: "by default", "when ENV=v", "-" (never), "undecided".
std::string selectionCell(const solve::CellVerdict& v);

// One self-contained HTML page (HtmlReport.cpp): what was checked (checkout,
// commit, date, command), the summary, then per analysis the findings with
// their fixes, the matrix as a coloured grid and the flag trace; file:line
// links relative to the page. file_base: the directory the Results' relative
// paths are relative to (the working directory); page_dir: where the page
// will be (links are made relative to it); both absolute.
struct HtmlOptions {
  std::string title;
  std::string file_base;
  std::string page_dir;
  // Under the title: what was checked and how (each left out when empty).
  std::string checkout;  // the checkout's name (its folder)
  std::string checked;   // the folder or files given
  std::string commit;    // the commit checked out
  std::string date;      // when the report was made
  std::string command;   // the command line
};
struct HtmlSection {
  std::string heading;  // "custom_all_reduce.py + custom_all_reduce.cuh (target ...)"
  const Result* result = nullptr;
};
std::string renderHtml(const std::vector<HtmlSection>& sections, const std::vector<std::string>& notes, const HtmlOptions& o);

// "world_size=4 full_nvlink=false nbytes=16 NAME=1" (text and HTML reports):
// the cell's values by the names of the variables in their roles.
std::string configText(const model::Config& c, const model::Roles& names);

// Count of unsuppressed findings at or above a severity (for exit statuses).
int countAtLeast(const Result& r, model::Severity s);
// Findings an inline `layergate: ignore[...]` covers.
int countSuppressed(const Result& r);
// " (2 suppressed, 1 baselined, 1 pre-existing)" for the summary line, ""
// when all are 0.
std::string suppressedText(int suppressed, int baselined, int preexisting = 0);
// The findings --diff-base set aside, one line per group ("" when none).
std::string preexistingText(const Result& r);

}  // namespace layergate::report

namespace layergate::report {
// docs/rules/<ID>.md, embedded at build time: id -> markdown.
const std::map<std::string, std::string>& ruleDocs();
// A rule's markdown as `layergate explain` prints it (ExplainText.cpp): each
// link as its text and where it goes ("policy gates (docs/policy-gates.md)"),
// code as written.
std::string explainText(const std::string& md);
}  // namespace layergate::report
