#include <algorithm>
#include "selftest/FromAnalysis.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/Analysis.h"
#include "cli/Scan.h"
#include "model/Errors.h"
#include "selftest/EntryHarness.h"

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
// message size (a policy's inputs and outputs).
std::set<std::string> handedDown(const model::Gate& g) {
  std::set<std::string> out;
  for (const auto& v : model::varsOf(g.predicate()))
    if (v.kind == model::VarKind::Config && v.sort == model::Sort::Int && v.name != model::kWorldSize &&
        v.name != model::kNbytes && model::envNameOf(v.name).empty())
      out.insert(v.name);
  return out;
}

}  // namespace

Plan makePlan(const Options& o) {
  Plan plan;
  if (!o.plan.empty()) {
    std::ifstream in(o.plan);
    if (!in) throw InputError(o.plan + ": cannot read the plan");
    try {
      return planFromJson(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      throw InputError(o.plan + ": " + e.what());
    }
  }
  std::string python = o.python;
  driver::Request base;
  base.target = o.target;
  base.rules_dir = o.rules_dir;
  base.cpp.include_dirs = o.include_dirs;
  if (!o.check_path.empty()) {
    if (!fs::is_directory(o.check_path)) throw InputError(o.check_path + ": --check takes a directory (a checkout)");
    driver::ScanRequest sr{o.check_path, base, {}};
    driver::ScanResult s = driver::scan(sr);
    plan.has_static = true;
    plan.matrix = matrixFromResult(s.results.front());
    if (s.results.size() > 1)
      plan.notes.push_back(std::to_string(s.results.size()) + " gates found under " + o.check_path +
                           "; the first (" + s.units.front().target + ") is used");
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
    target::Target tgt = driver::selectTarget(o.rules_dir, o.target);
    const std::string text = driver::readSource(o.header, 8u << 20);
    // A dispatch called with what the gate hands down needs one example
    // configuration per leaf; worked out only when a harness can call it.
    req.want_examples = [&](const model::Gate& g, const model::Dispatch& d) {
      if (!entryDispatch(d)) return false;
      try {
        planEntryHarness(d, o.header, text, tgt.cpp.members, handedDown(g), 0);
        return true;
      } catch (const HarnessError&) {
        return false;
      }
    };
    req.python_files = {python};
    req.cpp_files = {o.header};
    report::Result r = driver::analyse(req);
    StaticMatrix m = matrixFromResult(r);
    if (plan.has_static && (m.python != plan.matrix.python || m.cpp != plan.matrix.cpp))
      plan.notes.push_back("the machine's verdict below is for " + m.python + " + " + m.cpp + " (the --header analysis)");
    plan.has_static = true;
    plan.matrix = m;
    plan.header = fs::absolute(o.header).lexically_normal().string();
    try {
      // A class the harness constructs (v1), or a function called with what
      // the gate hands down (a policy's launch config).
      const bool entry = entryDispatch(r.dispatch);
      std::set<std::string> values;
      int elem_size = 0;
      for (const auto& c : m.cells)
        for (const auto& e : c.examples)
          for (const auto& [k, v] : e.values) {
            values.insert(k);
            if (k == "elem_size" && (elem_size == 0 || v == 2)) elem_size = static_cast<int>(v);
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
      HarnessSpec spec = entry ? planEntryHarness(r.dispatch, o.header, text, tgt.cpp.members, values, elem_size)
                               : planHarness(r.dispatch, o.header, text, tgt.cpp.members, o.include_dirs);
      plan.harness_source = generateHarness(spec);
      plan.harness_shims = spec.shims;
      plan.harness_calls = spec.describe();
      plan.harness_notes = spec.notes;
    } catch (const HarnessError& e) {
      plan.harness_error = e.what();
    }
  } else if (!o.python.empty()) {
    throw InputError("--python goes with --header FILE");
  }
  return plan;
}

int selftestCommand(const Options& o) {
  Plan plan = makePlan(o);
  if (!o.save_plan.empty()) {
    std::ofstream(o.save_plan) << planJson(plan).dump(2) << "\n";
    std::cerr << "layergate selftest: plan written to " << o.save_plan << "\n";
  }
  if (!o.emit_harness.empty()) {
    if (plan.header.empty()) throw InputError("--emit-harness needs --header FILE");
    if (!plan.harness_error.empty()) {
      std::cerr << "layergate selftest: no harness for " << plan.header << ": " << plan.harness_error << "\n";
      return kExitFailed;
    }
    std::cout << writeHarness(plan, o.emit_harness) << "\n";
    std::cout << "calls: " << plan.harness_calls << "\n";
    for (const auto& n : plan.harness_notes) std::cout << "note: " << n << "\n";
    return kExitPassed;
  }
  return runSelftest(o, plan, probeMachine(), std::cout);
}

}  // namespace layergate::selftest
