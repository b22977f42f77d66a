#include "discover/Discover.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "model/Errors.h"

namespace layergate::discover {
namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : path) {
    if (c == '/') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string lastComponent(const std::string& path) {
  auto at = path.rfind('/');
  return at == std::string::npos ? path : path.substr(at + 1);
}

// Pattern components pc[i..] against path components xc[j..], to the end.
bool matchFrom(const std::vector<std::string>& pc, size_t i, const std::vector<std::string>& xc, size_t j) {
  if (i == pc.size()) return j == xc.size();
  if (pc[i] == "**") {
    for (size_t k = j; k <= xc.size(); ++k)
      if (matchFrom(pc, i + 1, xc, k)) return true;
    return false;
  }
  if (j == xc.size()) return false;
  if (fnmatch(pc[i].c_str(), xc[j].c_str(), 0) != 0) return false;
  return matchFrom(pc, i + 1, xc, j + 1);
}

// Files whose last component could match some pattern: the only ones kept
// from the walk (the others are only counted).
struct NameFilter {
  std::vector<std::string> last;  // last pattern components
  bool any = false;               // a pattern ends in "**"
  bool operator()(const std::string& name) const {
    if (any) return true;
    for (const auto& l : last)
      if (fnmatch(l.c_str(), name.c_str(), 0) == 0) return true;
    return false;
  }
};

NameFilter filterFor(const std::vector<target::Target>& targets) {
  NameFilter f;
  auto add = [&](const std::string& p) {
    auto c = split(p);
    if (c.empty()) return;
    if (c.back() == "**") f.any = true;
    f.last.push_back(c.back());
  };
  for (const auto& t : targets) {
    for (const auto& p : t.discovery.python_paths) add(p);
    for (const auto& p : t.discovery.cpp_paths) add(p);
    for (const auto& p : t.discovery.required_paths) add(p);
    for (const auto& p : t.discovery.chain_python) add(p);
    for (const auto& p : t.discovery.chain_cpp) add(p);
  }
  std::sort(f.last.begin(), f.last.end());
  f.last.erase(std::unique(f.last.begin(), f.last.end()), f.last.end());
  return f;
}

// path -> prefix for every path matching one of the patterns.
std::map<std::string, std::string> matching(const std::vector<std::string>& patterns,
                                            const std::vector<std::string>& files) {
  std::map<std::string, std::string> out;
  for (const auto& f : files)
    for (const auto& p : patterns) {
      std::string prefix;
      if (matchSuffix(p, f, &prefix)) {
        out.emplace(f, prefix);
        break;
      }
    }
  return out;
}

std::string dirOf(const std::string& path) {
  auto at = path.rfind('/');
  return at == std::string::npos ? "" : path.substr(0, at);
}

size_t sharedDirs(const std::string& a, const std::string& b) {
  auto x = split(dirOf(a)), y = split(dirOf(b));
  size_t n = 0;
  while (n < x.size() && n < y.size() && x[n] == y[n]) ++n;
  return n;
}

bool requiredPresent(const target::Target& t, const std::vector<std::string>& files, const std::string* prefix) {
  for (const auto& r : t.discovery.required_paths) {
    bool found = false;
    for (const auto& f : files) {
      std::string p;
      if (matchSuffix(r, f, &p) && (!prefix || p == *prefix)) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

// Units of one target. Python files in `claimed` were taken by a more
// specific target and are left alone.
std::vector<Unit> unitsOf(const target::Target& t, const std::vector<std::string>& files,
                          const std::set<std::string>& claimed) {
  std::vector<Unit> out;
  auto py = matching(t.discovery.python_paths, files);
  auto cc = matching(t.discovery.cpp_paths, files);
  for (auto it = py.begin(); it != py.end();) it = claimed.count(it->first) ? py.erase(it) : std::next(it);
  if (py.empty() || cc.empty()) return out;
  if (t.discovery.same_root) {
    // One unit per checkout root holding both halves (and the markers).
    std::map<std::string, Unit> byRoot;
    for (const auto& [f, prefix] : py) byRoot[prefix].python_files.push_back(f);
    for (const auto& [f, prefix] : cc)
      if (byRoot.count(prefix)) byRoot[prefix].cpp_files.push_back(f);
    for (auto& [prefix, u] : byRoot) {
      if (u.cpp_files.empty() || !requiredPresent(t, files, &prefix)) continue;
      u.target = t.name;
      // The flag's chain under the same root, after the gate and the dispatch.
      for (const auto& [f, p] : matching(t.discovery.chain_python, files))
        if (p == prefix && std::find(u.python_files.begin(), u.python_files.end(), f) == u.python_files.end())
          u.python_files.push_back(f);
      for (const auto& [f, p] : matching(t.discovery.chain_cpp, files))
        if (p == prefix && std::find(u.cpp_files.begin(), u.cpp_files.end(), f) == u.cpp_files.end())
          u.cpp_files.push_back(f);
      out.push_back(std::move(u));
    }
    return out;
  }
  if (!requiredPresent(t, files, nullptr)) return out;
  // Across checkouts: each gate with the dispatch that shares most of its
  // directories (ties: the first path, so the choice does not depend on the walk).
  for (const auto& [f, prefix] : py) {
    const std::string* best = nullptr;
    size_t bestShared = 0;
    for (const auto& [c, cprefix] : cc) {
      size_t s = sharedDirs(f, c);
      if (!best || s > bestShared) best = &c, bestShared = s;
    }
    out.push_back({t.name, {f}, {*best}});
  }
  return out;
}

void walk(const std::string& root, const Options& o, const NameFilter& keep, Result& r,
          std::vector<std::string>& kept) {
  struct Dir {
    std::string rel;  // "" for the root, else "a/b"
    int depth;
  };
  std::vector<Dir> stack{{"", 0}};
  while (!stack.empty()) {
    Dir d = std::move(stack.back());
    stack.pop_back();
    std::string abs = d.rel.empty() ? root : root + "/" + d.rel;
    DIR* dir = opendir(abs.c_str());
    if (!dir) {
      if (d.rel.empty()) throw InputError(root + ": cannot read directory");
      r.notes.push_back(d.rel + ": cannot read directory, skipped");
      continue;
    }
    std::vector<Dir> subdirs;
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string rel = d.rel.empty() ? name : d.rel + "/" + name;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (lstat((root + "/" + rel).c_str(), &st) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
      }
      if (type == DT_DIR) {
        if (isSkippedDirName(name)) continue;
        if (d.depth + 1 > o.max_depth) {
          r.notes.push_back(rel + ": deeper than " + std::to_string(o.max_depth) + " levels, skipped");
          continue;
        }
        subdirs.push_back({rel, d.depth + 1});
        continue;
      }
      if (type != DT_REG && type != DT_LNK) continue;  // sockets, fifos, devices
      // A symlink counts as a file only when it points at one; a symlinked
      // directory is never entered.
      if (++r.files_seen > o.max_files) {
        closedir(dir);
        throw InputError(root + ": more than " + std::to_string(o.max_files) +
                         " files under the scanned directory (--max-files); point layergate at the checkout, or raise the limit");
      }
      if (!keep(name)) continue;
      if (type == DT_LNK) {
        struct stat st;
        if (stat((root + "/" + rel).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      }
      kept.push_back(rel);
    }
    closedir(dir);
    // Push in reverse so that directories are visited in name order (only the
    // notes' order depends on it: the kept files are sorted afterwards).
    std::sort(subdirs.begin(), subdirs.end(), [](const Dir& a, const Dir& b) { return a.rel > b.rel; });
    for (auto& s : subdirs) stack.push_back(std::move(s));
  }
}

}  // namespace

bool isSkippedDirName(const std::string& name) {
  if (name.empty() || name[0] == '.') return true;  // .git, .hg, .venv, .tox, .cache, ...
  if (name.rfind("build", 0) == 0 || name.rfind("cmake-build", 0) == 0) return true;
  static const std::set<std::string> skipped = {
      "node_modules", "__pycache__", "third_party", "third-party", "thirdparty", "3rdparty",
      "vendor",       "vendored",    "external",    "externals",   "site-packages", "dist-packages",
      "venv",         "dist",        "_deps"};
  if (skipped.count(name)) return true;
  auto dot = name.rfind(".egg-info");
  return dot != std::string::npos && dot + 9 == name.size();
}

bool matchSuffix(const std::string& pattern, const std::string& path, std::string* prefix) {
  auto pc = split(pattern), xc = split(path);
  if (pc.empty()) return false;
  // The longest match wins (the shortest prefix), so a "**" pattern names
  // the outermost checkout.
  for (size_t start = 0; start < xc.size(); ++start) {
    if (!matchFrom(pc, 0, xc, start)) continue;
    if (prefix) {
      prefix->clear();
      for (size_t k = 0; k < start; ++k) *prefix += xc[k] + "/";
    }
    return true;
  }
  return false;
}

std::vector<Unit> match(const std::vector<std::string>& files_in, const std::vector<target::Target>& targets) {
  std::vector<std::string> files = files_in;
  std::sort(files.begin(), files.end());
  // Most specific first: layouts within one checkout, then layouts across
  // checkouts, then (only when nothing else matched) the fallback.
  std::vector<Unit> units;
  std::set<std::string> claimed;
  auto phase = [&](auto&& pick) {
    std::vector<Unit> found;
    for (const auto& t : targets)
      if (pick(t))
        for (auto& u : unitsOf(t, files, claimed)) found.push_back(std::move(u));
    for (const auto& u : found) claimed.insert(u.python_files.begin(), u.python_files.end());
    units.insert(units.end(), found.begin(), found.end());
  };
  phase([](const target::Target& t) { return !t.discovery.fallback && t.discovery.same_root; });
  phase([](const target::Target& t) { return !t.discovery.fallback && !t.discovery.same_root; });
  if (units.empty()) phase([](const target::Target& t) { return t.discovery.fallback; });

  // Two layouts naming the same files: keep the one with more markers (the
  // more specific), then the first name.
  std::map<std::string, const target::Target*> byName;
  for (const auto& t : targets) byName[t.name] = &t;
  auto markers = [&](const Unit& u) { return byName.at(u.target)->discovery.required_paths.size(); };
  std::sort(units.begin(), units.end(), [&](const Unit& a, const Unit& b) {
    if (a.python_files != b.python_files) return a.python_files < b.python_files;
    if (a.cpp_files != b.cpp_files) return a.cpp_files < b.cpp_files;
    if (markers(a) != markers(b)) return markers(a) > markers(b);
    return a.target < b.target;
  });
  units.erase(std::unique(units.begin(), units.end(),
                          [](const Unit& a, const Unit& b) {
                            return a.python_files == b.python_files && a.cpp_files == b.cpp_files;
                          }),
              units.end());
  return units;
}

Result discover(const std::string& root, const std::vector<target::Target>& targets, const Options& options) {
  struct stat st;
  if (stat(root.c_str(), &st) != 0) throw InputError(root + ": no such file or directory");
  if (!S_ISDIR(st.st_mode)) throw InputError(root + ": not a directory");
  Result r;
  walk(root, options, filterFor(targets), r, r.candidates);
  std::sort(r.candidates.begin(), r.candidates.end());
  r.units = match(r.candidates, targets);
  return r;
}

void requireUnits(const Result& r, const std::vector<target::Target>& targets, const std::string& root) {
  if (!r.units.empty()) return;
  std::vector<std::string> py, cc;
  for (const auto& t : targets) {
    for (const auto& p : t.discovery.python_paths) py.push_back(lastComponent(p));
    for (const auto& p : t.discovery.cpp_paths) cc.push_back(lastComponent(p));
  }
  auto join = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " or ") + x;
    return s;
  };
  std::string names;
  for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t.name;
  // Half a gate: say which half, it is usually a layout we do not know yet.
  std::string foundPy, foundCc;
  for (const auto& f : r.candidates)
    for (const auto& t : targets) {
      if (foundPy.empty() && !matching(t.discovery.python_paths, {f}).empty()) foundPy = f;
      if (foundCc.empty() && !matching(t.discovery.cpp_paths, {f}).empty()) foundCc = f;
    }
  if (!foundPy.empty() && foundCc.empty())
    throw InputError("no layered gate found under " + root + ": found the Python gate " + foundPy +
                     " but no C++ dispatch (" + join(cc) + "); name it with --cpp FILE");
  if (foundPy.empty() && !foundCc.empty())
    throw InputError("no layered gate found under " + root + ": found the C++ dispatch " + foundCc +
                     " but no Python gate (" + join(py) + "); name it with --python FILE");
  throw InputError("no layered gate found under " + root + " (looked for: a Python gate " + join(py) +
                   " and a C++ dispatch " + join(cc) + " in the layouts " + names +
                   "; skipped .git, build and vendored trees; name the files with --python/--cpp)");
}

}  // namespace layergate::discover
