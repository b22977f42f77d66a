#include "cli/Analysis.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/Check.h"
#include "discover/Discover.h"
#include "fix/Fix.h"
#include "jobs/Jobs.h"
#include "jobs/Trace.h"
#include "link/CppChecks.h"
#include "link/WorldSize.h"
#include "link/Link.h"
#include "model/Errors.h"
#include "python/PythonFrontend.h"
#include "report/Baseline.h"
#include "report/Suppress.h"

namespace layergate::driver {

namespace fs = std::filesystem;

namespace {

// Why a file cannot be opened for reading, in lower case as a compiler says
// it ("permission denied"); "" when it can.
std::string openError(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  std::string why = std::strerror(errno);
  if (!why.empty()) why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
  return why;
}

}  // namespace

void requireReadable(const std::vector<std::string>& paths) {
  std::string why;
  for (const auto& p : paths) {
    std::error_code ec;
    std::string e = !fs::exists(fs::status(p, ec)) ? "no such file" : fs::is_directory(p, ec) ? "" : openError(p);
    if (!e.empty() && why.find(p + ": ") == std::string::npos) why += (why.empty() ? "" : "; ") + p + ": " + e;
  }
  if (!why.empty()) throw InputError(why);
}

std::string readSource(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path + ": no such file");
  if (fs::is_directory(st)) throw InputError(path + ": is a directory, expected a file");
  if (!fs::is_regular_file(st)) throw InputError(path + ": not a regular file");
  auto size = fs::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw InputError(path + ": file is " + std::to_string(size) + " bytes, over the limit of " +
                     std::to_string(max_bytes) + " " + limitHint("max-file-bytes"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string why = openError(path);
    throw InputError(path + ": cannot read the file: " + (why.empty() ? "open failed" : why));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": read error");
  return ss.str();
}

target::Target selectTarget(const target::RuleSet& rules, const std::string& name) {
  if (target::isTargetFile(name)) {
    target::RuleSet with = rules;
    auto same = [&](const std::string& f) { return fs::absolute(f).lexically_normal() == fs::absolute(name).lexically_normal(); };
    if (std::none_of(with.files.begin(), with.files.end(), same)) with.files.push_back(name);
    for (auto& t : target::loadTargets(with))
      if (same(t.file)) return t;
    throw InputError(name + ": its target is replaced by a later one of the same name");
  }
  auto targets = target::loadTargets(rules);
  std::string want = name.empty() ? "custom-allreduce" : name;
  for (auto& t : targets)
    if (t.name == want) return t;
  if (name.empty()) return targets.front();
  std::string names;
  for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t.name;
  throw InputError("unknown target '" + name + "' (known: " + names + "; or a target file: --target FILE.json)");
}

namespace {

// A path as a compiler prints it: relative to the working directory when it
// is below it, else as it is.
std::string shownPath(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec).lexically_normal();
  fs::path rel = abs.lexically_relative(fs::current_path(ec));
  return rel.empty() || *rel.begin() == ".." ? abs.string() : rel.string();
}

// The C++ sources in the given C++ files' folders, not given themselves,
// that define one of `functions` as a bool function (a check), in name order.
std::vector<std::string> checkFilesBeside(const std::vector<std::string>& functions,
                                          const std::vector<std::string>& cpp_files, std::size_t max_bytes) {
  std::vector<std::string> out;
  std::set<fs::path> given, dirs;
  for (const auto& f : cpp_files) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(f, ec);
    given.insert(p);
    dirs.insert(p.parent_path());
  }
  std::vector<std::regex> defs;
  for (const auto& fn : functions)
    defs.emplace_back("(^|[\\s*&(])bool\\s+(\\w+::)*" + fn + "\\s*\\([^;{]*\\)\\s*(const\\s*)?\\{");
  constexpr std::size_t kMaxFilesPerFolder = 256;
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<fs::path> candidates;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end && candidates.size() < kMaxFilesPerFolder;
         it.increment(ec)) {
      std::string ext = it->path().extension().string();
      if (ext != ".cu" && ext != ".cc" && ext != ".cpp" && ext != ".cxx" && ext != ".cuh" && ext != ".h" &&
          ext != ".hpp")
        continue;
      if (!it->is_regular_file(ec) || given.count(it->path()) || it->file_size(ec) > max_bytes) continue;
      candidates.push_back(it->path());
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& c : candidates) {
      std::ifstream in(c, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      bool defines = false;
      for (std::size_t i = 0; i < functions.size() && !defines; ++i)
        defines = text.find(functions[i]) != std::string::npos && std::regex_search(text, defs[i]);
      if (defines) out.push_back(c.lexically_relative(fs::current_path()).string());
    }
  }
  return out;
}

// The selection layer: per class the selection function can return, the
// cells in which it does (each arm as a gate over an empty dispatch: the
// matrix's gate column says always / when ENV=... / never). Reads nothing of
// the analysis's own solver: each arm has a solver of its own, so the arms
// run side by side where the job budget allows.
struct SelectionLayer {
  std::optional<model::Selection> selection;
  std::vector<std::vector<solve::CellVerdict>> cells;  // one per arm
  std::string note;                                    // why it was not analysed
};

SelectionLayer selectionLayer(const std::vector<python::SourceFile>& sources, const target::PythonGateSpec& spec,
                              const python::Limits& limits, const solve::Options& options) {
  SelectionLayer out;
  if (spec.selection_functions.empty()) return out;
  try {
    out.selection = python::extractSelection(sources, spec, limits);
  } catch (const InputError& e) {
    out.note = std::string("selection layer not analysed: ") + e.what();
    return out;
  }
  if (!out.selection) return out;
  const auto& arms = out.selection->arms;
  out.cells.resize(arms.size());
  jobs::forEach(arms.size(), [&](std::size_t i) {
    model::Dispatch none;
    model::Gate g;
    g.admit = arms[i].condition;
    g.env_reads = out.selection->env_reads;
    g.opaques = out.selection->opaques;
    g.assumed = out.selection->assumed;
    solve::Options o = options;
    o.sizes = false;  // which class, not which sizes: the class's own gate bounds those
    solve::Solver s(g, none, o);
    out.cells[i] = s.matrix();
  });
  return out;
}

// Files given without --target: the target whose dispatch they define, by
// content (a class or struct of its class name and a function of its
// dispatch name, whatever the file is called); the default target first,
// and the default when none matches.
target::Target targetByContent(const Request& req) {
  auto targets = target::loadTargets(req.rules);
  std::string text;
  for (const auto& p : req.cpp_files) text += readSource(p, req.max_file_bytes) + "\n";
  auto defines = [&](const target::Target& t) { return discover::definesDispatch(text, t); };
  target::Target fallback = selectTarget(req.rules, "");
  if (defines(fallback)) return fallback;
  for (auto& t : targets)
    if (defines(t)) return t;
  return fallback;
}

// Per-configuration routes (model::Route): the admitted configurations of
// each cell that call another op library than the analysed chain's are not
// analysed here; the matrix and the notes say where they go.
std::string routeText(const model::Route& rt) {
  std::string s = rt.receiver + " is " + rt.module;
  if (rt.kind.empty()) return s + " (another op library)";
  s += " (a " + rt.kind;
  if (!rt.sources.empty()) {
    std::string files;
    for (const auto& f : rt.sources) files += (files.empty() ? "" : ", ") + f;
    s += " built from " + files;
  }
  if (!rt.sources_missing.empty()) {
    std::string files;
    for (const auto& f : rt.sources_missing) files += (files.empty() ? "" : ", ") + f;
    s += std::string(rt.sources.empty() ? " built from " : "; also ") + files + ", not in the tree";
  }
  if (!rt.sources_unresolved.empty()) s += "; sources not spelled as paths: " + rt.sources_unresolved.front();
  return s + ")";
}

void markRoutes(report::Result& r, solve::Solver& solver, const model::Roles& roles) {
  if (r.gate.routes.empty()) return;
  model::ExprPtr admitted = model::And(model::And(r.gate.admit, r.gate.per_call), r.gate.bound);
  auto ws = model::Var(roles.ranks, model::Sort::Int);
  auto nvl = model::Var(roles.link, model::Sort::Bool);
  for (const auto& rt : r.gate.routes) {
    std::string text = routeText(rt);
    bool any = false;
    for (auto& v : r.matrix) {
      model::ExprPtr cell = model::Cmp(model::Op::Eq, ws, model::IntC(v.cell.world_size));
      if (!v.cell.nvlink_any) cell = model::And(cell, v.cell.full_nvlink ? nvl : model::Not(nvl));
      if (!solver.possible(model::AndAll({admitted, r.gate.assumed, rt.condition, cell}))) continue;
      v.routed_elsewhere.push_back(text);
      any = true;
    }
    if (any)
      r.gate.notes.push_back("not analysed here: the configurations where " + text + " (" + rt.where.file + ":" +
                             std::to_string(rt.where.line) + "); their op calls (" +
                             [&] {
                               std::string o;
                               for (const auto& x : rt.ops) o += (o.empty() ? "" : ", ") + x;
                               return o;
                             }() +
                             ") do not reach the analysed dispatch, whose op module is " + rt.analysed_module);
  }
}

}  // namespace

report::Result analyse(const Request& req) {
  if (req.python_files.empty()) throw InputError("no Python gate file given (--python FILE)");
  if (req.cpp_files.empty()) throw InputError("no C++ dispatch file given (--cpp FILE)");
  std::vector<std::string> inputs = req.python_files;
  inputs.insert(inputs.end(), req.cpp_files.begin(), req.cpp_files.end());
  requireReadable(inputs);
  target::Target tgt = req.target.empty() ? targetByContent(req) : selectTarget(req.rules, req.target);
  if (tgt.variables.empty())
    throw InputError("target " + tgt.name + " declares no configuration variables (\"variables\", docs/targets.md)");

  report::Result r;
  r.target = tgt.name;
  r.platform = tgt.platform;
  r.roles = tgt.roles;
  r.python_files = req.python_files;
  r.cpp_files = req.cpp_files;

  // The gate lives in one of the Python files (the first that holds the
  // class); the others are its helper modules, op wrappers and plugins.
  python::Limits limits;
  limits.max_bytes = req.max_file_bytes;
  limits.max_depth = req.max_depth;
  limits.route = req.route;
  // The two frontends side by side where the job budget allows: neither reads
  // the other's result. An error of the Python side is the one reported when
  // both stop, as when they run one after the other.
  std::vector<python::SourceFile> sources;
  jobs::forEach(2, [&](std::size_t side) {
    if (side == 0) {
      trace::Scope scope("Python frontend", req.python_files.front());
      for (const auto& path : req.python_files) sources.push_back({path, readSource(path, req.max_file_bytes)});
      r.gate = python::extractGate(sources, tgt.python, limits);
      // A user's target of a bundled name: the report says whose was used.
      if (!tgt.replaces.empty())
        r.gate.notes.push_back("target " + tgt.name + " is read from " + shownPath(tgt.file) + ", which replaces " +
                               shownPath(tgt.replaces));
      return;
    }
    trace::Scope scope("C++ frontend", req.cpp_files.front());
    for (const auto& path : req.cpp_files) readSource(path, req.max_file_bytes);  // existence, size
    cpp::ParseOptions cpp_options = req.cpp;
    cpp_options.max_depth = req.max_depth;
    r.dispatch = cpp::extractDispatch(req.cpp_files, tgt.cpp, cpp_options);
  });
  if (!tgt.roles.cells()) {
    // A family described as data: the regions of its variables' product.
    r.variables = tgt.variables;
    {
      trace::Scope scope("Regions");
      r.space = solve::solveSpace(r.gate, r.dispatch, tgt.variables, req.solve);
    }
    r.findings = checks::spaceFindings(r.gate, r.dispatch, *r.space);
    if (req.strict)
      for (auto& f : r.findings)
        if (f.rule == "LG008") f.severity = model::Severity::Error;
    if (r.space->truncated)
      r.gate.notes.push_back("more regions than the report lists: each list stops at its first regions");
    finishFindings(req, r);
    return r;
  }
  // A check the gate calls through an op whose body no given file holds is
  // looked up beside the given C++ files, as a compiler finds an include
  // (vLLM of mid-2024: should_custom_ar in the .cu beside the header).
  if (std::vector<std::string> missing = link::uninterpretedChecks(r.gate, r.dispatch); !missing.empty()) {
    std::vector<std::string> found = checkFilesBeside(missing, req.cpp_files, req.max_file_bytes);
    if (!found.empty()) {
      trace::Scope scope("C++ frontend", found.front());
      std::vector<std::string> files = req.cpp_files;
      files.insert(files.end(), found.begin(), found.end());
      cpp::ParseOptions cpp_options = req.cpp;
      cpp_options.max_depth = req.max_depth;
      r.dispatch = cpp::extractDispatch(files, tgt.cpp, cpp_options);
      r.cpp_files = files;
    }
    for (const auto& fn : link::uninterpretedChecks(r.gate, r.dispatch))
      r.dispatch.notes.push_back(fn + ", a check the gate calls through an op, is defined in no given file nor beside them: "
                                 "give the C++ file that defines it (--cpp) to have it read");
    for (const auto& f : found)
      r.dispatch.notes.push_back("read " + f + " beside the given files: it defines a check the gate calls");
  }
  // A check the gate calls through an op whose C++ body was given is read
  // like Python code, with the arguments the call passes.
  link::interpretCppChecks(r.gate, r.dispatch, tgt.python.probes, tgt.variables);
  // The cells are over the target's group size, link flag and message size.
  solve::Options cell_options = req.solve;
  cell_options.variables = tgt.variables;

  // The analysis's own solver, and the selection layer's solvers, side by
  // side: they share nothing. The selection layer's note comes after the
  // analysis's, as when they run one after the other.
  SelectionLayer sel;
  jobs::forEach(2, [&](std::size_t part) {
    if (part == 1) {
      trace::Scope scope("Selection layer");
      sel = selectionLayer(sources, tgt.python, limits, cell_options);
      return;
    }
    // Follow the flag across the boundary; the C++ side of the flag is then
    // the value Python passes, not the hardware probe.
    std::optional<trace::Scope> phase(std::in_place, "Link");
    link::FlagLink flag = link::traceFlag(r.gate, r.dispatch, tgt.roles.link);
    r.trace = flag.hops;
    for (auto& v : link::traceValues(r.gate, r.dispatch, tgt.cpp.members))
      r.value_traces.push_back({v.var, v.field, std::move(v.hops), v.reaches_cpp});
    // With just the gate and the dispatch header the chain between them (op
    // wrapper, bindings, .cu entry) was not given, so its break is expected:
    // say so in a note. With more files, a break is a finding (LG006).
    // So too for the fallback layout, whose chain is only what was found
    // beside the dispatch by content.
    if (req.python_files.size() + req.cpp_files.size() <= 2 || req.chain_by_content) {
      auto& ps = flag.problems;
      for (auto it = ps.begin(); it != ps.end();)
        if (it->rule == "LG006") {
          r.dispatch.notes.push_back(it->message + " (LG003/LG005 need the whole chain: give the op wrapper, bindings and .cu files too)");
          it = ps.erase(it);
        } else {
          ++it;
        }
    }
    // The world size C++ receives, when it is not the group's size (a gate that
    // hands C++ a per-node slice of its handles).
    link::WorldSizeLink ws = link::traceWorldSize(r.gate, r.dispatch, tgt.cpp.members, tgt.roles.ranks);
    phase.emplace("Solver");
    solve::Solver solver(r.gate, r.dispatch, cell_options, flag.value, ws.value);
    // Said only where it differs from the group's size in some admitted configuration.
    if (ws.value &&
        solver.possible(model::And(r.gate.predicate(),
                                   model::Cmp(model::Op::Ne, ws.value, model::Var(tgt.roles.ranks, model::Sort::Int)))))
      r.dispatch.notes.push_back("the C++ world size is " + std::string(ws.length ? "the length of " : "") + "`" + ws.text +
                                 "` (" + ws.at.file + ":" + std::to_string(ws.at.line) +
                                 "), as the gate computes it, not the group's size");
    phase.emplace("Checks");
    checks::CheckContext ctx{r.gate, r.dispatch, solver, flag.member.empty() ? nullptr : &flag};
    r.findings = checks::runChecks(ctx);
    for (const auto& u : r.gate.unchecked)
      if (solver.possible(u.condition)) r.gate.notes.push_back(u.text);
    if (req.strict)
      for (auto& f : r.findings)
        if (f.rule == "LG008") f.severity = model::Severity::Error;
    phase.emplace("Matrix");
    r.matrix = solver.matrix();
    markRoutes(r, solver, tgt.roles);
    if (req.want_examples && req.want_examples(r.gate, r.dispatch))
      for (auto& v : r.matrix) {
        if (v.undecided || v.gate.state == solve::GateState::Blocked) continue;
        try {
          v.examples = solver.examples(v.cell);
        } catch (const solve::UndecidedError& e) {
          r.dispatch.notes.push_back(std::string("no example configurations for the self-test: ") + e.what());
        }
      }
  });
  trace::Scope finishing("Findings");
  if (!sel.note.empty()) r.gate.notes.push_back(sel.note);
  r.selection = std::move(sel.selection);
  r.selection_cells = std::move(sel.cells);
  finishFindings(req, r);
  return r;
}

void finishFindings(const Request& req, report::Result& r) {
  // Every input (a suppression there that matched nothing is LG011) and
  // every file a finding points at (its primary and admitting lines: a
  // suppression may be on either, the fingerprint reads the latter).
  std::vector<std::string> paths = r.python_files;
  paths.insert(paths.end(), r.cpp_files.begin(), r.cpp_files.end());
  for (const auto& f : r.findings)
    for (const auto* l : {f.primary(), f.admitting()})
      if (l && !l->file.empty()) paths.push_back(l->file);
  std::map<std::string, model::SourceText> files;
  for (const auto& p : paths) {
    if (files.count(p)) continue;
    model::SourceText src;
    src.text = readSource(p, req.max_file_bytes);
    auto ext = fs::path(p).extension().string();
    src.facts = ext == ".py" || ext == ".pyi" ? python::sourceFacts(src.text) : cpp::sourceFacts(src.text, p);
    files.emplace(p, std::move(src));
  }
  auto enabled = [&](const std::string& rule) { return !req.settings || req.settings->enabled(rule); };
  if (req.settings) req.settings->apply(r.findings);
  report::applySuppressions(r.findings, files, enabled);
  if (req.settings) req.settings->apply(r.findings);  // LG010/LG011 follow the policy too
  report::assignFingerprints(r.findings, files);
  r.fix_notes.clear();
  fix::suggestFixes(r.gate, r.dispatch, r.findings, r.fix_notes);
  r.gate.notes.insert(r.gate.notes.end(), r.fix_notes.begin(), r.fix_notes.end());
}

}  // namespace layergate::driver
