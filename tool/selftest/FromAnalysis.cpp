#include "selftest/FromAnalysis.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/Analysis.h"
#include "cli/Scan.h"
#include "model/Errors.h"
#include "selftest/EntryHarness.h"
#include "selftest/PlanFile.h"
#include "selftest/Process.h"

namespace layergate::selftest {

namespace fs = std::filesystem;

StaticMatrix matrixFromResult(const report::Result& r) {
  StaticMatrix m;
  for (size_t i = 0; i < r.python_files.size(); ++i) m.python += (i ? " " : "") + r.python_files[i];
  for (size_t i = 0; i < r.cpp_files.size(); ++i) m.cpp += (i ? " " : "") + r.cpp_files[i];
  for (const auto& v : r.matrix) {
    StaticCell c;
    c.world_size = v.cell.world_size;
    c.full_nvlink = v.cell.full_nvlink;
    switch (v.gate.state) {
      case solve::GateState::Blocked: c.gate = "blocked"; break;
      case solve::GateState::Admitted: c.gate = "admitted"; break;
      case solve::GateState::AdmittedWhen: c.gate = "admitted_when"; break;
      case solve::GateState::Undecided: c.gate = "undecided"; break;
    }
    if (v.undecided) c.gate = "undecided";
    c.condition = v.gate.condition;
    if (v.gate.sizes) {
      c.has_sizes = true;
      c.gate_lo = v.gate.sizes->lo;
      c.gate_hi = v.gate.sizes->unbounded() ? -1 : v.gate.sizes->hi;
    }
    for (const auto& p : v.dispatch) {
      if (!p.when.empty()) continue;  // the harness runs with the C++-only env unset
      StaticPart sp;
      sp.kind = p.kind == model::LeafKind::Launch ? "launch" : p.kind == model::LeafKind::Throw ? "throw" : "none";
      sp.kernel = p.kernel;
      sp.lo = p.sizes.lo;
      sp.hi = p.sizes.unbounded() ? -1 : p.sizes.hi;
      sp.precondition = p.precondition;
      c.parts.push_back(sp);
    }
    for (const auto& e : v.examples) {
      // The harness runs with the environment it was given: an example that
      // needs a variable the C++ side reads set to some value is not run
      // (the other cells of the matrix still are).
      bool cpp_env = false;
      for (const auto& [name, value] : e.config.env)
        cpp_env |= value && std::find(r.dispatch.env_reads.begin(), r.dispatch.env_reads.end(), name) !=
                                r.dispatch.env_reads.end();
      if (cpp_env) continue;
      StaticExample se;
      se.kind = e.kind == model::LeafKind::Launch ? "launch" : e.kind == model::LeafKind::Throw ? "throw" : "none";
      se.kernel = e.kernel;
      se.bytes = e.config.nbytes.value_or(0);
      se.values = e.config.values;
      se.texts = e.config.texts;
      se.env = solve::describeEnv(e.config.env);
      c.examples.push_back(std::move(se));
    }
    m.cells.push_back(std::move(c));
  }
  return m;
}

namespace {

bool entryDispatch(const model::Dispatch& d) { return d.class_name.empty() || d.is_static; }

// The integers the gate reads or hands down besides the world size and the
// message size (a policy's inputs and outputs), or (texts) the strings it
// hands down (an algorithm's name).
std::set<std::string> handedDown(const model::Gate& g, const model::Roles& roles, bool texts = false) {
  std::set<std::string> out;
  for (const auto& v : model::varsOf(g.predicate()))
    if (v.kind == model::VarKind::Config && v.sort == (texts ? model::Sort::Str : model::Sort::Int) &&
        !roles.isRanks(v.name) && !roles.isBytes(v.name) && model::envNameOf(v.name).empty())
      out.insert(v.name);
  return out;
}

// The header first, then the files around it: those its includes name (beside
// it or under the include directories, three levels deep) and the other
// sources of its directory (an object's constructor defined out of line).
std::vector<SourceText> headerSet(const std::string& header, const std::vector<std::string>& include_dirs) {
  std::vector<SourceText> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p) {
    const std::string key = fs::absolute(p).lexically_normal().string();
    if (out.size() >= 96 || !seen.insert(key).second || !fs::is_regular_file(p)) return false;
    try {
      out.push_back({key, driver::readSource(key, 2u << 20)});
    } catch (const std::exception&) {
      return false;
    }
    return true;
  };
  add(header);
  static const std::regex inc("^\\s*#\\s*include\\s*[<\"]([^>\"]+)[>\"]");
  std::size_t level_begin = 0;
  for (int depth = 0; depth < 3; ++depth) {
    const std::size_t level_end = out.size();
    for (std::size_t i = level_begin; i < level_end; ++i) {
      const fs::path dir = fs::path(out[i].path).parent_path();
      std::istringstream lines(out[i].text);
      for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, inc)) continue;
        const std::string name = m[1].str();
        if (fs::exists(dir / name)) add(dir / name);
        else
          for (const auto& d : include_dirs)
            if (fs::exists(fs::path(d) / name)) {
              add(fs::path(d) / name);
              break;
            }
      }
    }
    level_begin = level_end;
  }
  std::error_code ec;
  std::vector<fs::path> siblings;
  for (const auto& e : fs::directory_iterator(fs::path(header).parent_path(), ec)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".cuh" || ext == ".h" || ext == ".hpp" || ext == ".cu") siblings.push_back(e.path());
  }
  std::sort(siblings.begin(), siblings.end());
  for (const auto& s : siblings) add(s);
  return out;
}

}  // namespace

namespace {

// The checkout a header belongs to, whose headers a saved plan carries: the
// --check directory, else the header's git checkout, else the working
// directory, else the header's own directory.
std::string projectRoot(const Options& o, const std::string& header) {
  const fs::path h = fs::absolute(header).lexically_normal();
  auto holds = [&](const fs::path& dir) {
    const std::string rel = h.lexically_relative(dir).string();
    return !rel.empty() && rel.rfind("..", 0) != 0;
  };
  if (!o.check_path.empty() && holds(fs::absolute(o.check_path).lexically_normal()))
    return fs::absolute(o.check_path).lexically_normal().string();
  ChildResult git = runChild({"git", "-C", h.parent_path().string(), "rev-parse", "--show-toplevel"}, 10);
  if (git.started && !git.timed_out && git.exit_code == 0 && !lastLine(git.output).empty() &&
      holds(fs::path(lastLine(git.output))))
    return lastLine(git.output);
  if (holds(fs::current_path())) return fs::current_path().string();
  return h.parent_path().string();
}

// What a harness around one dispatch header is planned from: the target, the
// include directories (the target's for this header, then -I) and the header
// with the files around it.
struct HeaderContext {
  target::Target tgt;
  std::vector<std::string> target_dirs, include_dirs;
  std::vector<SourceText> sources;
};

HeaderContext headerContext(const Options& o, const target::RuleSet& rules, const std::string& header,
                            const std::string& target_name) {
  HeaderContext hc;
  hc.tgt = driver::selectTarget(rules, target_name);
  hc.target_dirs = cpp::targetIncludeDirs({header}, hc.tgt.cpp.include_dirs);
  hc.include_dirs = o.include_dirs;
  hc.include_dirs.insert(hc.include_dirs.end(), hc.target_dirs.begin(), hc.target_dirs.end());
  hc.sources = headerSet(header, hc.include_dirs);
  return hc;
}

// The harness of one gate around `header`, from its analysis `r` (whose
// matrix is plan.matrix): a class the harness constructs (v1), or a function
// called with what the gate hands down (a policy's launch config).
void planGateHarness(Plan& plan, const report::Result& r, const std::string& header, const HeaderContext& hc,
                     const Options& o) {
  plan.header = fs::absolute(header).lexically_normal().string();
  for (const auto& s : hc.sources) plan.harness_files.push_back(s.path);
  plan.harness_root = projectRoot(o, header);
  try {
    const StaticMatrix& m = plan.matrix;
    const bool entry = entryDispatch(r.dispatch);
    std::set<std::string> values, texts;
    std::set<int> world_sizes;
    int elem_size = 0;
    for (const auto& c : m.cells)
      for (const auto& e : c.examples) {
        world_sizes.insert(c.world_size);
        for (const auto& [k, t] : e.texts) texts.insert(k);
        for (const auto& [k, v] : e.values) {
          values.insert(k);
          if (k == "elem_size" && (elem_size == 0 || v == 2)) elem_size = static_cast<int>(v);
        }
      }
    // A text value (an algorithm's name) travels in the harness's argument:
    // one it cannot carry is not run (said).
    {
      std::size_t dropped = 0;
      for (auto& c : plan.matrix.cells) {
        const auto before = c.examples.size();
        c.examples.erase(std::remove_if(c.examples.begin(), c.examples.end(),
                                        [](const StaticExample& e) {
                                          for (const auto& [k, t] : e.texts)
                                            if (!passableText(t)) return true;
                                          return false;
                                        }),
                         c.examples.end());
        dropped += before - c.examples.size();
      }
      if (dropped)
        plan.notes.push_back(std::to_string(dropped) +
                             " example cell(s) not run: a text value they hand down has characters other than "
                             "letters, digits, '_', '.' and '-'");
    }
    // One element type per harness: examples at another element size are
    // not run (said, never judged with the wrong type).
    if (entry && elem_size != 0) {
      std::size_t dropped = 0;
      for (auto& c : plan.matrix.cells) {
        auto other = [&](const StaticExample& e) {
          for (const auto& [k, v] : e.values)
            if (k == "elem_size" && v != elem_size) return true;
          return false;
        };
        const auto before = c.examples.size();
        c.examples.erase(std::remove_if(c.examples.begin(), c.examples.end(), other), c.examples.end());
        dropped += before - c.examples.size();
      }
      if (dropped)
        plan.notes.push_back(std::to_string(dropped) + " example cell(s) at an element size other than " +
                             std::to_string(elem_size) + " B not run: the harness is built for one element type");
    }
    const auto members = memberRoles(hc.tgt.cpp.members, hc.tgt.roles);
    const bool read = !hc.sources.empty() && hc.sources.front().path == plan.header;
    HarnessSpec spec = entry ? planEntryHarness(r.dispatch, header, hc.sources, members, values, texts, elem_size)
                             : planHarness(r.dispatch, header, read ? hc.sources.front().text : driver::readSource(header, 8u << 20),
                                           members, o.include_dirs);
    spec.world_sizes.assign(world_sizes.begin(), world_sizes.end());
    plan.harness_source = generateHarness(spec);
    // How the header is compiled: the target's standard, macros and include
    // directories (and -I, which the GPU box does not get); tvm-ffi's headers
    // and library where the entry takes its objects.
    if (!hc.tgt.cpp.std.empty()) plan.harness_std = hc.tgt.cpp.std;
    plan.harness_defines = hc.tgt.cpp.defines;
    plan.harness_include_dirs = hc.target_dirs;
    for (const auto& d : o.include_dirs) plan.harness_include_dirs.push_back(fs::absolute(d).lexically_normal().string());
    plan.harness_tvm_ffi = spec.tvm_ffi;
    plan.harness_shims = spec.shims;
    plan.harness_calls = spec.describe();
    plan.harness_notes = spec.notes;
  } catch (const HarnessError& e) {
    plan.harness_error = e.what();
  }
}

// The file of a unit --check found that holds its dispatch: where the
// frontend found the dispatch function, if it is one of the unit's files.
std::string dispatchFile(const discover::Unit& u, const report::Result& r) {
  const std::string& where = r.dispatch.where.file;
  if (!where.empty() && std::find(u.cpp_files.begin(), u.cpp_files.end(), where) != u.cpp_files.end()) return where;
  return u.cpp_files.empty() ? where : u.cpp_files.front();
}

}  // namespace

std::vector<Plan> makePlan(const Options& o) {
  if (!o.plan.empty()) {
    try {
      return loadPlan(o.plan);
    } catch (const std::exception& e) {
      throw InputError(o.plan + ": " + e.what());
    }
  }
  std::vector<Plan> gates;
  std::string python = o.python;
  driver::Request base;
  base.target = o.target;
  if (!o.rules_dir.empty()) base.rules.dirs.push_back(o.rules_dir);
  base.cpp.include_dirs = o.include_dirs;
  if (!o.check_path.empty()) {
    if (!fs::is_directory(o.check_path)) throw InputError(o.check_path + ": --check takes a directory (a checkout)");
    // Without --header, every gate found gets its harness: examples for the
    // dispatches a harness calls with what the gate hands down.
    if (o.header.empty()) base.want_examples = [](const model::Gate&, const model::Dispatch& d) { return entryDispatch(d); };
    driver::ScanRequest sr{o.check_path, base, {}};
    driver::ScanResult s = driver::scan(sr);
    for (std::size_t i = 0; i < s.results.size(); ++i) {
      Plan plan;
      plan.target = s.units[i].target;
      plan.has_static = true;
      plan.matrix = matrixFromResult(s.results[i]);
      if (o.header.empty()) {
        const std::string header = (fs::path(o.check_path) / dispatchFile(s.units[i], s.results[i])).string();
        plan.harness_optional = true;
        try {
          planGateHarness(plan, s.results[i], header, headerContext(o, base.rules, header, plan.target), o);
        } catch (const InputError& e) {
          plan.harness_error = e.what();
        }
      }
      gates.push_back(std::move(plan));
    }
    if (python.empty() && !s.units.front().python_files.empty())
      python = (fs::path(o.check_path) / s.units.front().python_files.front()).string();
  }
  if (!o.header.empty()) {
    if (python.empty()) {
      fs::path sibling = fs::path(o.header).parent_path() / "custom_all_reduce.py";
      if (fs::exists(sibling)) python = sibling.string();
      else throw InputError("--header needs the Python gate: give --python FILE (or --check DIR)");
    }
    driver::Request req = base;
    driver::readSource(o.header, 8u << 20);  // a missing or binary header is named before the analysis
    const HeaderContext hc = headerContext(o, base.rules, o.header, o.target);
    // A dispatch called with what the gate hands down needs one example
    // configuration per leaf; worked out only when a harness can call it.
    req.want_examples = [&](const model::Gate& g, const model::Dispatch& d) {
      if (!entryDispatch(d)) return false;
      try {
        planEntryHarness(d, o.header, hc.sources, memberRoles(hc.tgt.cpp.members, hc.tgt.roles), handedDown(g, hc.tgt.roles),
                         handedDown(g, hc.tgt.roles, true), 0);
        return true;
      } catch (const HarnessError&) {
        return false;
      }
    };
    req.python_files = {python};
    req.cpp_files = {o.header};
    report::Result r = driver::analyse(req);
    Plan plan;
    plan.has_static = true;
    plan.matrix = matrixFromResult(r);
    if (!gates.empty()) {
      const StaticMatrix& first = gates.front().matrix;
      if (plan.matrix.python != first.python || plan.matrix.cpp != first.cpp)
        plan.notes.push_back("the machine's verdict below is for " + plan.matrix.python + " + " + plan.matrix.cpp +
                             " (the --header analysis)");
    }
    planGateHarness(plan, r, o.header, hc, o);
    gates = {std::move(plan)};
  } else if (!o.python.empty()) {
    throw InputError("--python goes with --header FILE");
  }
  return gates;
}

int selftestCommand(const Options& o) {
  if (o.check_plan) {
    if (o.plan.empty()) throw InputError("--check-plan goes with --plan FILE");
    std::cout << describePlan(makePlan(o), o.plan);
    return kExitPassed;
  }
  std::vector<Plan> gates = makePlan(o);
  if (!o.save_plan.empty()) std::cerr << "layergate selftest: " << savePlan(gates, o.save_plan) << "\n";
  if (!o.emit_harness.empty()) {
    if (o.header.empty()) throw InputError("--emit-harness needs --header FILE");
    const Plan& plan = gates.front();
    if (!plan.harness_error.empty()) {
      std::cerr << "layergate selftest: no harness for " << plan.header << ": " << plan.harness_error << "\n";
      return kExitFailed;
    }
    std::cout << writeHarness(plan, o.emit_harness) << "\n";
    std::cout << "calls: " << plan.harness_calls << "\n";
    for (const auto& n : plan.harness_notes) std::cout << "note: " << n << "\n";
    return kExitPassed;
  }
  return runSelftest(o, gates, probeMachine(), std::cout);
}

}  // namespace layergate::selftest
