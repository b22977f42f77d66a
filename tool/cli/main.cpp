// layergate command line.
//
// Exit statuses (stable, for CI):
//   0  no finding at or above --fail-on (default: error)
//   1  findings at or above --fail-on
//   2  bad usage or bad input (one-line reason on stderr)
//   3  internal error (a bug in layergate; please report it)
//   4  selftest only: no CUDA GPU here, nothing to test
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <limits>

#include "checks/Check.h"
#include "cli/Allocator.h"
#include "cli/Analysis.h"
#include "cli/DiffBase.h"
#include "cli/Fixes.h"
#include "cli/GateAnalysis.h"
#include "cli/Output.h"
#include "cli/Scan.h"
#include "config/Config.h"
#include "gates/Gates.h"
#include "discover/FilesRegex.h"
#include "jobs/Jobs.h"
#include "jobs/Trace.h"
#include "model/Errors.h"
#include "report/Baseline.h"
#include "report/Report.h"
#include "selftest/FromAnalysis.h"
#include "target/Paths.h"

namespace {

using namespace layergate;

constexpr int kExitClean = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

struct CheckArgs {
  driver::Request req;
  std::vector<std::string> paths;  // positional: one directory, or files
  std::size_t max_files = 200000;
  int max_dir_depth = 256;
  std::string format = "text";
  std::string fail_on = "error";
  std::string color = "auto";
  std::string output;  // --output FILE; empty: stdout
  bool matrix = false, trace = false, verbose = false;  // text: --matrix, --trace, --verbose (both and the notes)
  std::string platform = "all";                         // --platform
  config::Overrides overrides;  // flags given on the command line
  bool show_settings = false;
  bool list_gates = false;  // --list-gates
  std::string baseline, write_baseline;
  std::string diff_base;  // --diff-base REF
  bool diff = false, fix = false, unsafe_fixes = false;  // --diff, --fix, --unsafe-fixes
  std::string command;  // the command line, for the HTML page
};

// --diff: the fixes as unified diffs instead of the report (what an unsafe
// C++ branch needs before use on stderr). --fix: write them, say what was
// written, and return true: the caller analyses the files again and reports
// that. Sets *diffed when the diff was the output.
bool fixes(const CheckArgs& a, const std::vector<std::pair<std::string, report::Result*>>& results,
           driver::ReportOut& out, bool* diffed, driver::FixOutcome& o) {
  *diffed = false;
  if (!a.diff && !a.fix) return false;
  o = driver::runFixes(results, a.unsafe_fixes, a.fix && !a.diff);
  if (a.diff) {
    out.stream() << o.diff;
    for (const auto& c : o.selftests)
      std::cerr << "layergate: the C++ branch is unsafe until this passes on a machine of those configurations: " << c << "\n";
    *diffed = true;
    return false;
  }
  // What was applied: with the text report on stdout, before it; else on stderr.
  std::ostream& say = a.format == "text" && a.output.empty() ? out.stream() : std::cerr;
  // As ruff says it: fixes left out because they are unsafe are counted.
  std::string hidden = o.unsafe_hidden == 0 ? std::string()
                       : fmt::format("{} fix{} available with --unsafe-fixes", o.unsafe_hidden, o.unsafe_hidden == 1 ? "" : "es");
  if (o.files.empty()) {
    say << "layergate: " << (hidden.empty() ? "nothing to fix" : "nothing to fix safely; " + hidden) << "\n";
    return false;
  }
  say << "layergate: " << o.summary() << "\n";
  for (const auto& line : o.applied) say << "  " << line << "\n";
  for (const auto& c : o.selftests) say << "  prove the C++ branch on your GPUs (a machine of those configurations): " << c << "\n";
  if (!hidden.empty()) say << "  " << hidden << " (not applied)\n";
  say << "layergate: after the fixes:\n";
  return true;
}

// --color always/never wins; with auto, NO_COLOR (set and not empty: no-color.org)
// turns colour off, else FORCE_COLOR (force-color.org) turns it on even in a
// pipe or a file (a CI log that renders escapes), else a terminal on stdout
// decides (never for --output FILE).
bool useColor(const CheckArgs& a) {
  if (a.color != "auto") return a.color == "always";
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  if (set("NO_COLOR")) return false;
  if (set("FORCE_COLOR")) return true;
  return a.output.empty() && isatty(STDOUT_FILENO);
}

report::TextOptions textOptions(const CheckArgs& a) {
  report::TextOptions o;
  o.color = useColor(a);
  o.matrix = a.matrix || a.verbose;
  o.trace = a.trace || a.verbose;
  o.notes = a.verbose;
  return o;
}

int exitStatus(const CheckArgs& a, int errors, int warnings) {
  if (!a.write_baseline.empty())
    std::cerr << "layergate: wrote baseline " << a.write_baseline << " (exit status 0: its findings are accepted)\n";
  if (a.fail_on == "never" || !a.write_baseline.empty()) return kExitClean;
  return (a.fail_on == "warning" ? errors + warnings : errors) > 0 ? kExitFindings : kExitClean;
}

// The path a check starts from: the configuration file is looked up from
// it, and --diff-base's checkout is the one it is in.
std::string startPath(const CheckArgs& a) {
  return !a.paths.empty() ? a.paths[0] : !a.req.python_files.empty() ? a.req.python_files[0]
                                   : !a.req.cpp_files.empty()    ? a.req.cpp_files[0] : ".";
}

// --write-baseline, then --baseline, then --diff-base: what is left is what
// the report shows. After --fix the files are analysed again and the
// baseline written again, from the fixed files (and their lines changed
// since --diff-base's commit read again); the caller says once that it was
// written. base: the directory the results' paths are relative to.
void baselines(const CheckArgs& a, const std::vector<report::Result*>& results, const std::string& base) {
  if (!a.write_baseline.empty())
    report::writeBaseline(a.write_baseline, std::vector<const report::Result*>(results.begin(), results.end()));
  if (!a.baseline.empty()) {
    report::Baseline b = report::readBaseline(a.baseline);
    for (auto* r : results) report::applyBaseline(*r, b);
  }
  if (!a.diff_base.empty()) {
    report::ChangedLines changed = driver::changedSince(a.diff_base, startPath(a));
    for (auto* r : results) report::applyDiffBase(*r, changed, base);
  }
}

// The configuration file and the command line, applied to the check's options.
void configure(CheckArgs& a) {
  auto s = std::make_shared<config::Settings>(config::resolve(startPath(a), a.overrides));
  a.fail_on = s->fail_on.value;
  a.req.solve.max_world_size = s->max_world_size.value;
  a.req.solve.rlimit = s->solver_rlimit.value;
  a.req.strict = s->strict.value;
  a.req.rules.bundled = s->bundled_rules.value;
  a.req.rules.dirs = s->rules_dirs.value;
  a.req.max_depth = static_cast<int>(s->max_depth.value);
  a.req.cpp.max_paths = static_cast<std::size_t>(s->max_paths.value);
  a.req.max_file_bytes = static_cast<std::size_t>(s->max_file_bytes.value);
  a.max_files = static_cast<std::size_t>(s->max_files.value);
  a.max_dir_depth = static_cast<int>(s->max_dir_depth.value);
  a.req.settings = s;
  // --target FILE: read now, so that a bad file stops the run before any
  // analysis with one line.
  if (target::isTargetFile(a.req.target)) {
    driver::selectTarget(a.req.rules, a.req.target);
    a.req.target = std::filesystem::absolute(a.req.target).lexically_normal().string();
  }
}

// The rules read before any file is (a rules directory that is missing, a
// target file with a typo: one line, exit 2), and --platform: "all" or a
// platform some target declares.
void checkRulesAndPlatform(const CheckArgs& a) {
  target::RuleSet rules = a.req.rules;
  if (target::isTargetFile(a.req.target)) rules.files.push_back(a.req.target);
  auto targets = target::loadTargets(rules);
  if (a.platform == "all") return;
  std::string known;
  for (const auto& t : targets) {
    if (t.platform == a.platform) return;
    if (known.find(t.platform) == std::string::npos) known += ", " + t.platform;
  }
  throw InputError("unknown platform '" + a.platform + "' (--platform: all" + known + ")");
}

// A directory: discover the gates under it (paths in the output relative to
// it). Files: classified by extension, added to --python/--cpp.
int runScan(const CheckArgs& a, driver::ReportOut& out) {
  driver::ScanRequest sr{a.paths[0], a.req, {}, a.platform};
  sr.discover.max_files = a.max_files;
  sr.discover.max_depth = a.max_dir_depth;
  const bool from_root = a.format == "sarif";  // SARIF's paths stay relative to the root, its URIs' base
  auto analyseAll = [&] {
    driver::ScanResult s = driver::scan(sr);
    // Paths as seen from the working directory.
    if (!from_root) driver::showFromWorkingDirectory(s, a.paths[0]);
    std::vector<report::Result*> all;
    for (auto& r : s.results) all.push_back(&r);
    baselines(a, all, from_root ? a.paths[0] : "");
    return s;
  };
  driver::ScanResult s = analyseAll();
  std::vector<std::pair<std::string, report::Result*>> with_base;
  for (auto& r : s.results) with_base.push_back({from_root ? a.paths[0] : "", &r});
  bool diffed = false;
  driver::FixOutcome fixed;
  if (fixes(a, with_base, out, &diffed, fixed)) {
    s = analyseAll();
    with_base.clear();
    for (auto& r : s.results) with_base.push_back({from_root ? a.paths[0] : "", &r});
    driver::markUnproven(fixed, with_base);
  }
  if (diffed) {
  } else if (a.format == "json") {
    out.stream() << driver::renderScanJson(s);
  } else if (a.format == "sarif") {
    out.stream() << driver::renderScanSarif(s, {a.paths[0], a.paths[0]});
  } else if (a.format == "html") {
    out.stream() << driver::renderScanHtml(s, driver::htmlOptions(a.output, ".", a.paths[0], a.command));
  } else if (a.format == "concise") {
    out.stream() << driver::renderScanConcise(s);
  } else if (a.format == "github") {
    out.stream() << driver::renderScanGithub(s);
  } else if (a.format == "gitlab") {
    out.stream() << driver::renderScanGitlab(s);
  } else {
    out.stream() << driver::renderScanText(s, textOptions(a));
  }
  out.finish();
  int errors = driver::countAtLeast(s, model::Severity::Error);
  return exitStatus(a, errors, driver::countAtLeast(s, model::Severity::Warning) - errors);
}

// A check that stopped (exit status 2 or 3) with --output and a format for
// machines: the file says so instead of being left empty, for CI uploads it
// whatever the exit status (a SARIF upload of an empty file fails the job
// with a message about JSON, not the reason). Never throws: the reason on
// stderr is what matters.
void writeFailedReport(const CheckArgs& a, const std::string& reason, int status) noexcept {
  if (a.output.empty() || (a.format != "sarif" && a.format != "json")) return;
  try {
    // A directory scan (the paths in SARIF relative to it), or files.
    bool files = !a.req.python_files.empty() || !a.req.cpp_files.empty() || a.paths.size() > 1;
    if (!files && !a.paths.empty() && !std::filesystem::is_directory(a.paths[0]))
      files = !std::filesystem::path(a.paths[0]).extension().empty();
    std::string root = files ? "" : a.paths.empty() ? "." : a.paths[0];
    std::ofstream out(a.output, std::ios::binary | std::ios::trunc);
    out << (a.format == "sarif" ? report::renderSarifFailure(reason, status, {root, root})
                                : report::renderJsonFailure(reason, status, !files));
  } catch (...) {
  }
}

// --list-gates: every native-op call of the checkout, its conditions, the
// C++ entry its op is registered to, and whether it is analysed (gates/).
int runListGates(const CheckArgs& a) {
  if (a.paths.size() != 1 || !a.req.python_files.empty() || !a.req.cpp_files.empty() ||
      !std::filesystem::is_directory(a.paths[0]))
    throw InputError("--list-gates takes one directory (a checkout), not files");
  if (a.format != "text" && a.format != "json")
    throw InputError("--list-gates writes text or json, not " + a.format);
  target::RuleSet rules = a.req.rules;
  if (target::isTargetFile(a.req.target)) rules.files.push_back(a.req.target);
  auto targets = target::loadTargets(rules);
  discover::Options o;
  o.max_files = a.max_files;
  gates::Inventory inv = gates::inventory(a.paths[0], targets, o);
  driver::analyseGates(inv, a.paths[0], a.req);
  driver::ReportOut out(a.output);
  out.stream() << (a.format == "json" ? gates::renderJson(inv) : gates::renderText(inv, a.verbose));
  out.finish();
  return kExitClean;
}

int runCheck(CheckArgs a) {
  configure(a);
  // The text report lists a family's admitted regions, and per cell the
  // gate's message sizes and what the dispatch runs, only with --matrix:
  // without it, none of those searches runs (a finding's sizes are its gap's,
  // searched apart).
  if (a.format == "text" || a.format == "concise" || a.format == "github" || a.format == "gitlab")
    a.req.solve.regions = a.req.solve.sizes = a.req.solve.dispatch_parts = a.matrix || a.verbose;
  if (a.show_settings) {
    std::cout << config::describe(*a.req.settings);
    return kExitClean;
  }
  checkRulesAndPlatform(a);
  // No path and no files: the working directory, as `ruff check` takes it.
  if (a.paths.empty() && a.req.python_files.empty() && a.req.cpp_files.empty()) a.paths.push_back(".");
  if (a.list_gates) return runListGates(a);
  // A commit git cannot resolve, or no checkout: said before the analysis runs.
  if (!a.diff_base.empty()) driver::changedSince(a.diff_base, startPath(a));
  driver::ReportOut out(a.output);
  bool dir = false;
  for (const auto& p : a.paths) dir = dir || std::filesystem::is_directory(p);
  if (dir) {
    if (a.paths.size() > 1 || !a.req.python_files.empty() || !a.req.cpp_files.empty())
      throw InputError("give one directory, or files (positionally or with --python/--cpp), not both");
    return runScan(a, out);
  }
  for (const auto& p : a.paths) {
    auto ext = std::filesystem::path(p).extension().string();
    if (ext == ".py" || ext == ".pyi")
      a.req.python_files.push_back(p);
    else if (ext == ".cuh" || ext == ".cu" || ext == ".h" || ext == ".hpp" || ext == ".hh" || ext == ".cc" ||
             ext == ".cpp" || ext == ".cxx" || ext == ".muh" || ext == ".mu")
      a.req.cpp_files.push_back(p);
    else if (!std::filesystem::exists(p))
      throw InputError(p + ": no such file or directory");
    else
      throw InputError(p + ": not a directory, a Python file (.py) or a C++/CUDA file (.cuh, .cu, .h, .cpp, ...)");
  }
  auto analyseOnce = [&] {
    report::Result r = driver::analyse(a.req);
    if (a.platform != "all" && r.platform != a.platform)
      throw InputError("the files given are a " + r.platform + " gate (target " + r.target + "), not " + a.platform +
                       " (--platform)");
    baselines(a, {&r}, "");
    return r;
  };
  report::Result r = analyseOnce();
  bool diffed = false;
  driver::FixOutcome fixed;
  if (fixes(a, {{"", &r}}, out, &diffed, fixed)) {
    r = analyseOnce();
    driver::markUnproven(fixed, {{"", &r}});
  }
  if (diffed) {
  } else if (a.format == "json") {
    out.stream() << report::renderJson(r);
  } else if (a.format == "sarif") {
    out.stream() << report::renderSarif(r);
  } else if (a.format == "html") {
    auto checked = std::filesystem::path(r.python_files.empty() ? r.cpp_files.at(0) : r.python_files[0]).parent_path();
    out.stream() << report::renderHtml({{"", &r}}, {},
                                       driver::htmlOptions(a.output, ".", checked.empty() ? "." : checked.string(), a.command));
  } else if (a.format == "concise") {
    auto c = report::countGroups(r);
    out.stream() << report::renderConcise(r) << report::conciseCount(c.errors, c.warnings);
  } else if (a.format == "github") {
    out.stream() << report::renderGithub(r);
  } else if (a.format == "gitlab") {
    out.stream() << report::renderGitlab(r);
  } else {
    out.stream() << report::renderText(r, textOptions(a));
  }
  out.finish();
  int errors = report::countAtLeast(r, model::Severity::Error);
  return exitStatus(a, errors, report::countAtLeast(r, model::Severity::Warning) - errors);
}

// A rule by its code (LG001, any case) or its name (admitted-no-kernel), as
// `layergate rules` lists them.
int runExplain(const std::string& id) {
  std::string key = id;
  for (auto& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& r : checks::allRules())
    if (r.name == id) key = r.id;
  const auto& docs = report::ruleDocs();
  auto it = docs.find(key);
  if (it == docs.end() || !checks::findRule(key)) {
    std::string known;
    for (const auto& r : checks::allRules()) known += (known.empty() ? "" : ", ") + r.id + " " + r.name;
    throw InputError("unknown rule '" + id + "' (known: " + known + ")");
  }
  std::cout << report::explainText(it->second);
  return kExitClean;
}

int runRules() {
  for (const auto& r : checks::allRules())
    std::cout << fmt::format("{}  {:<8} {:<26} {}\n", r.id, model::severityName(r.severity), r.name, r.summary);
  return kExitClean;
}

// The targets in force, a user's marked with its file (and the one it replaces).
int runTargets(const target::RuleSet& rules, bool files_regex) {
  auto targets = target::loadTargets(rules);
  const std::string bundled = rules.bundled_dir.empty() ? target::defaultRulesDir() : rules.bundled_dir;
  if (files_regex) {
    std::cout << discover::filesRegex(targets, target::loadChains(bundled)) << "\n";
    return kExitClean;
  }
  for (const auto& t : targets) {
    std::string whose;
    if (!rules.bundled || t.file.rfind(bundled, 0) != 0)
      whose = " [" + t.file + (t.replaces.empty() ? "" : ", replaces " + t.replaces) + "]";
    std::cout << fmt::format("{:<24} {}{}\n", t.name, t.description, whose);
  }
  return kExitClean;
}

}  // namespace

int main(int argc, char** argv) {
  cli::setUpAllocator();
  CLI::App app{"layergate: verifies layered gates — a Python gate that admits a fast path and the\n"
               "C++/CUDA dispatch that picks its kernel — and reports every configuration the\n"
               "gate admits but no kernel serves (first target: the custom all-reduce of SGLang and vLLM).",
               "layergate"};
  // Like clang's InstalledDir line: where this binary takes its data from.
  app.set_version_flag("--version", [] {
    return fmt::format("layergate {}\nrules: {}\nstubs: {}\nallocator: {}", LAYERGATE_VERSION, paths::rulesDir(),
                       paths::stubDir(), cli::allocatorName());
  });
  app.require_subcommand(1);
  app.footer("Exit status: 0 clean, 1 findings (see --fail-on), 2 bad usage or input, 3 internal error;\n"
             "selftest: 4 when there is no CUDA GPU (see 'layergate selftest --help').\n"
             "Run 'layergate explain LG001' for a rule's documentation.");

  CheckArgs ca;
  std::vector<std::string> rules_dirs;
  bool no_bundled_rules = false;
  auto* check = app.add_subcommand("check", "Check a Python gate against a C++ dispatch (a directory: find them)");
  check->add_option("PATH", ca.paths,
                    "A directory to scan for gates (see 'layergate targets'; default: the working directory), or the files "
                    "(.py gate, .cuh/.cu dispatch)")
      ->type_name("PATH");
  check->add_option("--python,-p", ca.req.python_files, "Python gate module (custom_all_reduce.py)")
      ->type_name("FILE")
      ->allow_extra_args(false);
  check->add_option("--cpp,-c", ca.req.cpp_files, "C++/CUDA dispatch header or source (custom_all_reduce.cuh); repeatable")
      ->type_name("FILE")
      ->allow_extra_args(false);
  check->add_option("--format,-f,--output-format", ca.format,
                    "Output format (concise: one line per diagnostic, for CI logs; github: GitHub Actions annotations; "
                    "gitlab: GitLab Code Quality JSON; html: one self-contained page)")
      ->check(CLI::IsMember({"text", "concise", "json", "sarif", "html", "github", "gitlab"}))
      ->capture_default_str();
  check->add_option("--output,-o", ca.output, "Write the report to FILE instead of stdout")->type_name("FILE");
  check->add_option("--fail-on", ca.fail_on, "Lowest severity that makes the exit status 1")
      ->check(CLI::IsMember({"error", "warning", "never"}))
      ->capture_default_str();
  check->add_option("--target", ca.req.target,
                    "Target to use: a name (see 'layergate targets') or a target file (.json); with a directory, "
                    "analyse every gate found with it")
      ->type_name("NAME|FILE");
  std::string time_trace;
  check->add_option("--time-trace", time_trace,
                    "Write where the run's time went to FILE: a Chrome trace (Perfetto, chrome://tracing), one track "
                    "per thread, clang's own phases included")
      ->type_name("FILE");
  unsigned jobs_n = 0;
  check->add_option("--jobs,-j", jobs_n,
                    "Analyses, and the C++ parses inside each, run at once (default: the number of CPUs; 1: one after another)")
      ->check(CLI::Range(1u, 1024u))
      ->type_name("N");
  // The limits: each also a key of the configuration file (config::limitKeys), checked there.
  std::map<std::string, std::int64_t> limits = {{"max-files", 200000}, {"max-dir-depth", 256},
                                                {"max-file-bytes", 8 << 20}, {"max-depth", 200}, {"max-paths", 20000}};
  check->add_option("--max-files", limits["max-files"], "With a directory: stop with an error past this many files")
      ->capture_default_str()->type_name("N");
  check->add_option("--max-dir-depth", limits["max-dir-depth"], "With a directory: skip directories deeper than this (a note says which)")
      ->capture_default_str()->type_name("N");
  check->add_option("--rules", rules_dirs,
                    "A directory of your own target descriptions (targets/*.json or *.json), read after the bundled "
                    "ones: a target of a bundled name replaces it; repeatable")
      ->type_name("DIR")
      ->allow_extra_args(false);
  check->add_flag("--no-bundled-rules", no_bundled_rules, "Read only --rules and --target FILE, not the bundled target descriptions");
  check->add_option("--solver-rlimit", ca.req.solve.rlimit,
                    "Z3's resource limit per query (steps, not time: the same verdict on every machine and with any "
                    "--jobs); a query past it is reported as LG007")
      ->check(CLI::Range(1u, std::numeric_limits<unsigned>::max()))
      ->type_name("N")
      ->capture_default_str();
  // Replaced by --solver-rlimit: a time limit made verdicts depend on the machine's load.
  std::string timeout_ms;
  check->add_option("--timeout-ms", timeout_ms)->group("");
  check->add_option("--max-world-size", ca.req.solve.max_world_size, "Largest world size in the configuration matrix")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  check->add_option("--max-file-bytes", limits["max-file-bytes"], "Refuse input files larger than this")->capture_default_str();
  check->add_option("--max-depth", limits["max-depth"], "Refuse code nested deeper than this (both languages)")
      ->check(CLI::Range(8, 500))
      ->capture_default_str();
  check->add_option("--max-paths", limits["max-paths"], "Refuse a dispatch with more paths than this")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  check->add_flag("--cuda-sdk", ca.req.cpp.real_cuda_sdk, "Parse with the real CUDA SDK headers instead of the bundled stubs");
  check->add_option("--cuda-path", ca.req.cpp.cuda_path, "CUDA SDK location for --cuda-sdk")->capture_default_str();
  check->add_option("-I", ca.req.cpp.include_dirs, "Extra include directory for the C++ files")->type_name("DIR")->allow_extra_args(false);
  check->add_flag("--strict", ca.req.strict,
                  "Possible gaps (LG008: they hold only for some values of code the analysis did not interpret) are errors");
  check->add_flag("--matrix,!--no-matrix", ca.matrix, "Text output: the configuration matrix (and the selection layer's); --no-matrix: the default");
  check->add_flag("--trace", ca.trace, "Text output: the NVLink flag's trace and the values handed down, Python to C++");
  check->add_flag("--verbose,-v", ca.verbose,
                  "Text output: every analysis in full, with the matrix, the traces and the notes on what was assumed");
  check->add_option("--platform", ca.platform,
                    "Analyse only the gates of this platform (a target's \"platform\": cuda, rocm, ...), or all")
      ->capture_default_str();
  check->add_option("--color", ca.color,
                    "Colour in text output (auto: NO_COLOR or FORCE_COLOR, set and not empty, else a terminal)")->check(CLI::IsMember({"auto", "always", "never"}))->capture_default_str();
  std::vector<std::string> select, ignore;
  check->add_option("--select", select, "Rules to run (codes or prefixes, comma-separated; replaces the configuration's)")
      ->delimiter(',')->type_name("CODES");
  check->add_option("--ignore", ignore, "Rules not to run (codes or prefixes, comma-separated; added to the configuration's)")
      ->delimiter(',')->type_name("CODES");
  std::string config_file;
  check->add_option("--config", config_file, "Configuration file (default: .layergate.toml or pyproject.toml [tool.layergate], "
                                             "nearest the scanned path)")->type_name("FILE");
  check->add_flag("--isolated", ca.overrides.isolated, "Read no configuration file");
  check->add_flag("--list-gates", ca.list_gates,
                  "Print every native-op call of the checkout under a condition: its conditions, the C++ entry its op "
                  "is registered to, and whether it is analysed (--verbose: the unconditional calls too)");
  check->add_flag("--show-settings", ca.show_settings, "Print the settings in force and where each comes from, then exit");
  check->add_option("--baseline", ca.baseline, "Report only findings not in this earlier report (layergate JSON or SARIF)")
      ->type_name("FILE");
  check->add_flag("--diff", ca.diff, "Print the fixes of the findings as unified diffs (safe ones; see --unsafe-fixes) "
                                     "instead of the report; the exit status is check's");
  check->add_flag("--fix", ca.fix, "Apply the safe fixes in place, say what was applied, then check the fixed files again");
  check->add_flag("--unsafe-fixes", ca.unsafe_fixes,
                  "With --diff or --fix: LG001's C++ branch instead of the Python guard for the configurations it "
                  "serves (unsafe until `layergate selftest`, whose command --fix prints, shows it correct)");
  check->add_option("--diff-base", ca.diff_base,
                    "In a git checkout: fail only on findings on lines changed since REF (git diff REF, the working "
                    "tree); the others are listed as pre-existing and not counted")
      ->type_name("REF");
  check->add_option("--write-baseline", ca.write_baseline, "Write the findings of this run to FILE, for --baseline")
      ->type_name("FILE");

  auto* explain = app.add_subcommand("explain", "Print a rule's documentation");
  std::string rule_id;
  explain->add_option("RULE", rule_id, "Rule code or name, e.g. LG001 or admitted-no-kernel")->required();

  selftest::Options so;
  auto* st = app.add_subcommand(
      "selftest",
      "On a GPU machine: topology, this machine's static verdict, the reference kernels checked bit for bit "
      "(and over a PCIe stand-in), speed against NCCL with fitted thresholds, and your own dispatch run per cell");
  st->add_option("--check", so.check_path, "Checkout to analyse; prints the verdict for this machine's configuration")
      ->type_name("DIR");
  st->add_option("--header", so.header, "Your dispatch header: build a harness around it with nvcc and run every cell")
      ->type_name("FILE");
  st->add_option("--python", so.python, "The Python gate for --header (default: the one --check finds, or custom_all_reduce.py beside the header)")
      ->type_name("FILE");
  st->add_option("-I", so.include_dirs, "Extra include directory for --header")->type_name("DIR")->allow_extra_args(false);
  st->add_option("--target", so.target, "Target: a name (see 'layergate targets') or a target file (.json)");
  st->add_option("--rules", so.rules_dir, "A directory of your own target descriptions, read after the bundled ones")->type_name("DIR");
  st->add_flag("--quick", so.quick, "A one-minute run: fewer sizes, groups and replays");
  st->add_option("--format,-f", so.format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  st->add_option("--kernels-dir", so.kernels_dir, "Where layergate_allreduce_check and _bench are (default: beside layergate, or the build tree)")
      ->type_name("DIR");
  st->add_option("--nvcc", so.nvcc, "nvcc for the --header harness (default: $NVCC, /usr/local/cuda/bin/nvcc, PATH)")->type_name("PATH");
  st->add_option("--tvm-ffi", so.tvm_ffi,
                 "tvm-ffi for a harness around a JIT entry: a prefix with include/ and lib/libtvm_ffi.so (default: "
                 "$LAYERGATE_TVM_FFI, or python3's tvm_ffi package)")
      ->type_name("PREFIX");
  st->add_option("--work-dir", so.work_dir, "Where the harness is written and built (default: a new temporary directory)")->type_name("DIR");
  st->add_option("--thresholds-out", so.thresholds_out, "Where the fitted thresholds (JSON) are written")->capture_default_str();
  st->add_option("--skip", so.skip, "Leave out a phase")->check(CLI::IsMember({"proof", "standin", "speed", "harness"}))->allow_extra_args(false);
  st->add_option("--cell-timeout", so.cell_timeout_s, "Seconds before a harness cell counts as a hang")->check(CLI::Range(0.001, 86400.0))->capture_default_str();
  st->add_option("--emit-harness", so.emit_harness, "Write the --header harness sources to DIR and stop (no GPU needed)")->type_name("DIR");
  st->add_option("--save-plan", so.save_plan,
                 "Write the static side (every gate's matrix and harness) to FILE and the headers the harnesses include "
                 "to the folder beside it (FILE's name, extension .d), to run elsewhere with layergate_selftest_gpu --plan")
      ->type_name("FILE");
  st->add_option("--plan", so.plan, "Read the static side from FILE instead of analysing")->type_name("FILE");
  st->add_flag("--check-plan", so.check_plan, "With --plan: check that every header the plan names is there, say what it runs, and stop");
  st->footer("Exit status: 0 every phase passed, 1 a phase failed (the failing cases are named), 2 bad usage or input,\n"
             "3 internal error, 4 no CUDA GPU found: nothing to test here (CI without a GPU).");

  auto* rules = app.add_subcommand("rules", "List every rule");
  auto* targets = app.add_subcommand("targets", "List the target descriptions in the rules directory");
  targets->add_option("--rules", rules_dirs, "A directory of your own target descriptions, read after the bundled ones; repeatable")
      ->type_name("DIR")
      ->allow_extra_args(false);
  targets->add_flag("--no-bundled-rules", no_bundled_rules, "List only the --rules directories' targets");
  bool files_regex = false;
  targets->add_flag("--files-regex", files_regex,
                    "Print a regex (Python's re) of the repository paths whose change can change a verdict: the "
                    "targets' gates, dispatches, chains, helper and env modules, bindings and configuration (for "
                    "pre-commit's files: or a CI path filter)");

  // An unknown command is named as such (CLI11 would say "A subcommand is
  // required"): the first argument is the command, the top level takes only flags.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      found = found || sub->check_name(argv[1]);
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "layergate: error: unknown command '" << argv[1] << "' (commands: " << known << "; see --help)\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "layergate: error: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }

  try {
    if (*check) {
      auto given = [&](const char* flag) { return check->get_option(flag)->count() > 0; };
      auto& ov = ca.overrides;
      if (given("--jobs")) jobs::setLimit(jobs_n);
      if (given("--select")) ov.select = select;
      if (given("--ignore")) ov.ignore = ignore;
      if (given("--config")) ov.config_file = config_file;
      if (given("--fail-on")) ov.fail_on = ca.fail_on;
      if (given("--max-world-size")) ov.max_world_size = ca.req.solve.max_world_size;
      if (given("--solver-rlimit")) ov.solver_rlimit = ca.req.solve.rlimit;
      if (given("--timeout-ms"))
        throw InputError("--timeout-ms is gone: the solver's limit is --solver-rlimit N (Z3's resource limit per query, "
                         "the same verdict on every machine)");
      if (given("--strict")) ov.strict = true;
      if (given("--rules")) ov.rules_dirs = rules_dirs;
      if (no_bundled_rules) ov.bundled_rules = false;
      for (const auto& [key, value] : limits)
        if (given(("--" + key).c_str())) ov.limits[key] = value;
      ca.command = driver::commandLine(argc, argv);
      if (given("--time-trace")) trace::start();
      int status = kExitInternal;
      try {
        status = runCheck(ca);
      } catch (const InputError& e) {
        writeFailedReport(ca, e.what(), kExitUsage);
        throw;
      } catch (const std::bad_alloc&) {
        writeFailedReport(ca, "out of memory", kExitUsage);
        throw;
      } catch (const std::exception& e) {
        writeFailedReport(ca, std::string("internal error: ") + e.what(), kExitInternal);
        throw;
      }
      if (std::string why; !trace::finish(time_trace, &why))
        throw InputError(time_trace + ": cannot write the time trace: " + why);
      return status;
    }
    if (*st) {
      so.self_exe = argv[0];
      return selftest::selftestCommand(so);
    }
    if (*explain) return runExplain(rule_id);
    if (*rules) return runRules();
    if (*targets) return runTargets(target::RuleSet{!no_bundled_rules, "", rules_dirs, {}}, files_regex);
  } catch (const InputError& e) {
    std::cout.flush();
    std::cerr << "layergate: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "layergate: error: out of memory\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "layergate: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return kExitUsage;
}
