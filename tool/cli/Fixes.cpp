#include "cli/Fixes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/Analysis.h"
#include "fix/Apply.h"
#include "fix/Fix.h"
#include "model/Errors.h"
#include "selftest/Process.h"

namespace layergate::driver {

namespace fs = std::filesystem;

std::string FixOutcome::summary() const {
  return fmt::format("fixed {} configuration{} in {} file{}", fixed, fixed == 1 ? "" : "s", files.size(),
                     files.size() == 1 ? "" : "s");
}

namespace {

std::string joined(const std::string& base, const std::string& file) {
  return base.empty() || base == "." ? file : (fs::path(base) / file).lexically_normal().string();
}

using selftest::shellWord;

// The command that runs the dispatch with the C++ branch on this machine's
// GPUs, every cell the gate admits (`layergate selftest --header`).
std::string selftestCommand(const std::string& base, const report::Result& r, const std::string& header) {
  std::string gate = r.gate.class_loc.valid() ? r.gate.class_loc.file : r.python_files.empty() ? "" : r.python_files[0];
  std::string cmd = "layergate selftest --header " + shellWord(joined(base, header));
  if (!gate.empty()) cmd += " --python " + shellWord(joined(base, gate));
  if (!r.target.empty()) cmd += " --target " + shellWord(r.target);
  return cmd;
}

}  // namespace

FixOutcome runFixes(const std::vector<std::pair<std::string, report::Result*>>& results, bool unsafe, bool write) {
  FixOutcome o;
  std::map<std::string, std::vector<model::Edit>> edits;  // by path as given (base joined)
  for (const auto& [base, r] : results) {
    fix::FixPlan plan = fix::planFixes(r->gate, r->findings, unsafe);
    o.fixed += static_cast<int>(plan.guarded.size() + plan.branched.size());
    for (const auto& x : plan.applied) {
      std::string at = x.edits.empty() ? std::string()
                                       : fmt::format("{}:{}:{}", joined(base, x.edits[0].file), x.edits[0].start.line,
                                                     x.edits[0].start.col);
      o.applied.push_back(fmt::format("{} fix at {}: {}", model::fixSafetyName(x.safety), at, x.description));
      if (x.safety == model::FixSafety::Unsafe && !x.edits.empty()) {
        std::string cmd = selftestCommand(base, *r, x.edits[0].file);
        if (std::find(o.selftests.begin(), o.selftests.end(), cmd) == o.selftests.end()) o.selftests.push_back(cmd);
        o.branches.push_back({joined(base, x.edits[0].file), at});
      }
    }
    if (!unsafe) {
      std::vector<const model::Fix*> hidden;
      for (const auto& f : r->findings) {
        if (f.suppressed || std::find(plan.guarded.begin(), plan.guarded.end(), &f) != plan.guarded.end()) continue;
        for (const auto& x : f.fixes)
          if (x.safety == model::FixSafety::Unsafe &&
              std::none_of(hidden.begin(), hidden.end(), [&](const model::Fix* h) { return h->edits == x.edits; }))
            hidden.push_back(&x);
      }
      o.unsafe_hidden += static_cast<int>(hidden.size());
    }
    for (const auto& [file, es] : plan.edits) {
      std::string path = joined(base, file);
      for (auto e : es) {
        e.file = path;
        edits[path].push_back(e);
      }
    }
  }
  for (const auto& [path, es] : edits) {
    std::string before = readSource(path, std::size_t(1) << 30);
    std::string after = fix::applyEdits(before, es);
    if (after == before) continue;
    o.diff += fix::unifiedDiff(path, before, after);
    o.files.push_back(path);
    if (!write) continue;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << after;
    out.close();
    if (!out) throw InputError(path + ": cannot write the fixed file");
  }
  return o;
}

void markUnproven(const FixOutcome& o, const std::vector<std::pair<std::string, report::Result*>>& results) {
  for (const auto& [base, r] : results)
    for (const auto& b : o.branches)
      for (const auto& f : r->cpp_files)
        if (joined(base, f) == b.path) r->unproven.push_back(b.at);
}

}  // namespace layergate::driver
