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

namespace layergate::report {

struct Result {
  std::string target;
  std::vector<std::string> python_files;
  std::vector<std::string> cpp_files;
  model::Gate gate;
  model::Dispatch dispatch;
  std::vector<model::Finding> findings;
  std::vector<solve::CellVerdict> matrix;
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
};

struct TextOptions {
  bool color = false;
  bool matrix = true;
  bool details = true;  // counterexample lines and assumptions under each finding
};

std::string renderText(const Result& r, const TextOptions& o = {});
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

// "world_size=4 full_nvlink=false nbytes=16 NAME=1" (text and HTML reports).
std::string configText(const model::Config& c);

// Count of unsuppressed findings at or above a severity (for exit statuses).
int countAtLeast(const Result& r, model::Severity s);
// Findings an inline `layergate: ignore[...]` covers.
int countSuppressed(const Result& r);
// " (2 suppressed, 1 baselined)" for the summary line, "" when both are 0.
std::string suppressedText(int suppressed, int baselined);

}  // namespace layergate::report

namespace layergate::report {
// docs/rules/<ID>.md, embedded at build time: id -> markdown.
const std::map<std::string, std::string>& ruleDocs();
}  // namespace layergate::report
