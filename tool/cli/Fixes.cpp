#include "cli/Fixes.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/Analysis.h"
#include "fix/Apply.h"
#include "model/Errors.h"

namespace layergate::driver {

namespace fs = std::filesystem;

std::string FixOutcome::summary() const {
  return fmt::format("fixed {} finding{} in {} file{}", fixed, fixed == 1 ? "" : "s", files.size(),
                     files.size() == 1 ? "" : "s");
}

FixOutcome runFixes(const std::vector<std::pair<std::string, report::Result*>>& results, bool unsafe, bool write) {
  FixOutcome o;
  std::map<std::string, std::vector<model::Edit>> edits;  // by path as given (base joined)
  for (const auto& [base, r] : results) {
    std::vector<const model::Finding*> fs_;
    for (const auto& f : r->findings) fs_.push_back(&f);
    int n = 0;
    for (auto& [file, es] : fix::collectEdits(fs_, unsafe, &n)) {
      std::string path = base.empty() || base == "." ? file : (fs::path(base) / file).lexically_normal().string();
      for (auto e : es) {
        e.file = path;
        edits[path].push_back(e);
      }
    }
    o.fixed += n;
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
  if (write)
    for (const auto& [base, r] : results) {
      auto& v = r->findings;
      v.erase(std::remove_if(v.begin(), v.end(), [&](const model::Finding& f) {
                return !f.suppressed && fix::takesFix(f, unsafe);
              }),
              v.end());
    }
  return o;
}

}  // namespace layergate::driver
