// The lines changed since --diff-base's commit (see DiffBase.h), from git.
#include "cli/DiffBase.h"

#include <filesystem>
#include <sstream>

#include "model/Errors.h"
#include "selftest/Process.h"

namespace layergate::driver {
namespace {

namespace fs = std::filesystem;

std::string resolved(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p.lexically_normal() : c).string();
}

// git's arguments as a list, never a shell line: a REF is passed as it is.
selftest::ChildResult git(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-c", "core.quotePath=false"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = selftest::runChild(argv, 120.0);
  if (!r.started) throw InputError("--diff-base needs git: " + r.error);
  return r;
}

// "12" or "12,3" of a hunk header: the first line and how many.
std::pair<int, int> range(const std::string& s) {
  auto comma = s.find(',');
  int first = std::stoi(s.substr(0, comma));
  int count = comma == std::string::npos ? 1 : std::stoi(s.substr(comma + 1));
  return {first, count};
}

}  // namespace

report::ChangedLines parseUnifiedDiff(const std::string& diff, const std::string& top) {
  report::ChangedLines out;
  std::istringstream in(diff);
  std::string line, file;
  while (std::getline(in, line)) {
    if (line.rfind("+++ ", 0) == 0) {
      // "+++ b/path" (the prefixes asked for), "+++ /dev/null" for a deleted file.
      file = line.rfind("+++ b/", 0) == 0 ? resolved(fs::path(top) / line.substr(6)) : "";
      continue;
    }
    if (line.rfind("@@ ", 0) != 0 || file.empty()) continue;
    auto plus = line.find(" +");
    if (plus == std::string::npos) continue;
    auto end = line.find(' ', plus + 2);
    try {
      auto [first, count] = range(line.substr(plus + 2, end == std::string::npos ? std::string::npos : end - plus - 2));
      auto& lines = out[file];
      if (count == 0) {
        // Only deleted lines (a check removed opens a gap there): the new
        // file's lines around the deletion count as changed.
        lines.insert(first);
        lines.insert(first + 1);
      }
      for (int i = 0; i < count; ++i) lines.insert(first + i);
    } catch (const std::exception&) {
      // A header not in git's shape: nothing is known changed from it.
    }
  }
  return out;
}

report::ChangedLines changedSince(const std::string& ref, const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::absolute(path.empty() ? "." : path, ec);
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  // A REF starting with "-" would reach git as an option.
  if (ref.empty() || ref[0] == '-') throw InputError("--diff-base: '" + ref + "' is not a commit");
  auto top = git({"-C", dir.string(), "rev-parse", "--show-toplevel"});
  std::string root = selftest::lastLine(top.output);
  if (top.exit_code != 0 || root.empty() || root[0] != '/')
    throw InputError("--diff-base: " + dir.lexically_normal().string() + " is not in a git checkout");
  auto commit = git({"-C", root, "rev-parse", "--verify", "--quiet", ref + "^{commit}"});
  std::string hash = selftest::lastLine(commit.output);
  if (commit.exit_code != 0 || hash.empty())
    throw InputError("--diff-base: git cannot resolve '" + ref + "' to a commit in " + root);
  // The working tree against the commit, changed lines only, with the
  // default prefixes whatever the user's configuration says.
  auto diff = git({"-C", root, "diff", "--unified=0", "--no-color", "--no-ext-diff", "--find-renames",
                   "--src-prefix=a/", "--dst-prefix=b/", hash, "--"});
  if (diff.exit_code != 0) throw InputError("--diff-base: git diff " + ref + " failed: " + selftest::lastLine(diff.output));
  report::ChangedLines out = parseUnifiedDiff(diff.output, root);
  // Files git does not track yet are new in every line.
  auto untracked = git({"-C", root, "ls-files", "--others", "--exclude-standard", "-z"});
  if (untracked.exit_code == 0) {
    std::size_t b = 0;
    for (std::size_t e; (e = untracked.output.find('\0', b)) != std::string::npos; b = e + 1)
      if (e > b) out[resolved(fs::path(root) / untracked.output.substr(b, e - b))].insert(0);
  }
  return out;
}

}  // namespace layergate::driver
