#include "discover/Discover.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

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
#include <string_view>

#include "jobs/Jobs.h"
#include "jobs/Trace.h"
#include "model/Errors.h"

#include "python/PythonFrontend.h"

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
    for (const auto& p : extensionVariants(t.discovery.cpp_paths)) add(p);
    for (const auto& p : extensionVariants(t.discovery.chain_cpp)) add(p);
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

std::string joinNames(const std::vector<std::string>& v, const char* sep);

// Units of one target. Python files in `claimed` were taken by a more
// specific target and are left alone.
std::vector<Unit> unitsOf(const target::Target& t, const std::vector<std::string>& files,
                          const std::set<std::string>& claimed, const Accept& accept) {
  std::vector<Unit> out;
  auto py = matching(t.discovery.python_paths, files);
  auto cc = matching(t.discovery.cpp_paths, files);
  for (auto it = py.begin(); it != py.end();)
    it = claimed.count(it->first) || (accept && !accept(t, it->first, true)) ? py.erase(it) : std::next(it);
  auto keepAccepted = [&](std::map<std::string, std::string>& m) {
    for (auto it = m.begin(); it != m.end();) it = !accept(t, it->first, false) ? m.erase(it) : std::next(it);
  };
  if (accept) keepAccepted(cc);
  // No dispatch at the layout's own paths: the same paths in another
  // dispatch extension (a port's .muh/.mu), taken only for their text (the
  // class and its dispatch method defined there), so never without accept.
  std::string matchedBy;
  if (cc.empty() && accept && !py.empty()) {
    cc = matching(extensionVariants(t.discovery.cpp_paths), files);
    keepAccepted(cc);
    if (!cc.empty()) {
      std::string cls = t.cpp.class_names.empty() ? "" : t.cpp.class_names.front() + "::";
      std::string fn = t.cpp.dispatch_functions.empty() ? "" : t.cpp.dispatch_functions.front();
      matchedBy = "dispatch found by content: " + cc.begin()->first + " defines " + cls + fn + " (the layout names " +
                  joinNames(t.discovery.cpp_paths, ", ") + ")";
    }
  }
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
      // The flag's chain under the same root, after the gate and the
      // dispatch, in the order the layout lists it (the gate's op module
      // before the kernel's wrapper); the files a version lacks are left out.
      auto chain = [&](const std::vector<std::string>& patterns, std::vector<std::string>& into, bool variants) {
        for (const auto& pat : patterns) {
          size_t before = into.size();
          for (const auto& [f, p] : matching({pat}, files))
            if (p == prefix && std::find(into.begin(), into.end(), f) == into.end()) into.push_back(f);
          // A dispatch found in a port's spelling: its chain is spelled so too.
          if (variants && into.size() == before)
            for (const auto& [f, p] : matching(extensionVariants({pat}), files))
              if (p == prefix && std::find(into.begin(), into.end(), f) == into.end()) into.push_back(f);
        }
      };
      chain(t.discovery.chain_python, u.python_files, false);
      chain(t.discovery.chain_cpp, u.cpp_files, !matchedBy.empty());
      u.matched_by = matchedBy;
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
    out.push_back({t.name, {f}, {*best}, matchedBy});
  }
  return out;
}

void walk(const std::string& root, const Options& o, const std::function<bool(const std::string&)>& keep, Result& r,
          std::vector<std::string>& kept) {
  struct Dir {
    std::string rel;  // "" for the root, else "a/b"
    int depth;
  };
  std::vector<Dir> stack{{"", 0}};
  std::vector<std::string> ignored;  // what .gitignore left out that the walk would have entered or kept
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
        // `dist` is a build output (wheels, archives), except where it is a
        // Python package, regular or namespace: it holds .py modules (a
        // kernel library keeps its gate under <pkg>/dist/).
        bool package = false;
        if (name == "dist")
          if (DIR* sub = opendir((root + "/" + rel).c_str())) {
            while (dirent* f = readdir(sub)) {
              std::string fn = f->d_name;
              if (fn.size() > 3 && fn.compare(fn.size() - 3, 3, ".py") == 0) package = true;
            }
            closedir(sub);
          }
        if ((isSkippedDirName(name) && !package) || (o.exclude && o.exclude(rel))) continue;
        if (o.ignored.count(rel + "/")) {
          ignored.push_back(rel + "/");
          continue;
        }
        if (d.depth + 1 > o.max_depth) {
          r.notes.push_back(rel + ": deeper than " + std::to_string(o.max_depth) + " levels, skipped " +
                            limitHint("max-dir-depth"));
          continue;
        }
        subdirs.push_back({rel, d.depth + 1});
        continue;
      }
      if (type != DT_REG && type != DT_LNK) continue;  // sockets, fifos, devices
      if (o.exclude && o.exclude(rel)) continue;
      if (o.ignored.count(rel)) {
        if (keep(name)) ignored.push_back(rel);  // (only names a target may read: the others say nothing)
        continue;
      }
      // A symlink counts as a file only when it points at one; a symlinked
      // directory is never entered.
      if (++r.files_seen > o.max_files) {
        closedir(dir);
        throw InputError(root + ": more than " + std::to_string(o.max_files) +
                         " files under the scanned directory; point layergate at the checkout " + limitHint("max-files"));
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
  // A gate kept in an ignored folder is not looked for: say so, so that
  // "no layered gate found" can be traced to the .gitignore.
  if (!ignored.empty()) {
    std::sort(ignored.begin(), ignored.end());
    constexpr std::size_t kNamed = 5;
    std::string names;
    for (std::size_t i = 0; i < ignored.size() && i < kNamed; ++i) names += (i ? ", " : "") + ignored[i];
    if (ignored.size() > kNamed) names += ", ...";
    r.notes.push_back(std::to_string(ignored.size()) + (ignored.size() == 1 ? " path" : " paths") +
                      " skipped by .gitignore (git ls-files --ignored): " + names);
  }
}


// At most max_bytes of the file (a buffer of the file's size, not of the
// bound: zeroing megabytes per file cost more than reading it).
// error: why the file could not be opened ("permission denied"), when it could not.
std::string readText(const std::string& path, std::size_t max_bytes = 8u << 20, std::string* error = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error) {
      *error = std::strerror(errno);
      if (!error->empty()) (*error)[0] = static_cast<char>(std::tolower(static_cast<unsigned char>((*error)[0])));
    }
    return {};
  }
  std::string s;
  char buf[1 << 16];
  while (s.size() < max_bytes && in.read(buf, static_cast<std::streamsize>(std::min(sizeof buf, max_bytes - s.size())))
                                     .gcount() > 0)
    s.append(buf, static_cast<std::size_t>(in.gcount()));
  return s;
}

std::vector<std::string> textLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(l);
  }
  return out;
}

size_t indentOf(const std::string& l) {
  size_t i = 0;
  while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
  return i;
}

bool isIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// What a candidate's text says about it: the classes it defines (Python:
// `class X`, C++: `class X` / `struct X` not followed by ';'), and, for
// Python, its module-level functions.
struct FileFacts {
  bool read = false;
  std::string unreadable;  // why the file could not be read ("permission denied")
  std::set<std::string> classes;
  std::set<std::string> methods;  // C++: wanted function names declared or defined (not only called)
  int module_functions = 0;
  std::set<std::string> functions;  // Python: module-level defs
};

// Parsed with tree-sitter-python (the Python frontend's outline): a class
// named in a string or a comment is not a class.
FileFacts pythonFacts(const std::string& text) {
  FileFacts f;
  f.read = true;
  python::Outline o = python::outline(text);
  f.classes.insert(o.classes.begin(), o.classes.end());
  f.module_functions = o.module_functions;
  f.functions.insert(o.functions.begin(), o.functions.end());
  return f;
}

// A function name is declared or defined, not called through an object:
// `name(` or `name<...>(` not after `.`/`->` (a .cu that calls
// `fa->allreduce<half>(...)` does not define the dispatch).
bool declaresFunction(const std::string& text, const std::string& name) {
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    if (at > 0 && isIdent(text[at - 1])) continue;
    size_t e = at + name.size();
    if (e < text.size() && isIdent(text[e])) continue;
    size_t b = at;
    while (b > 0 && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
    if (b > 0 && text[b - 1] == '.') continue;
    if (b > 1 && text[b - 1] == '>' && text[b - 2] == '-') continue;
    while (e < text.size() && std::isspace(static_cast<unsigned char>(text[e]))) ++e;
    if (e < text.size() && text[e] == '<') {  // template arguments of a declaration's name are rare; skip them
      int depth = 0;
      for (; e < text.size(); ++e) {
        if (text[e] == '<') ++depth;
        if (text[e] == '>' && --depth == 0) break;
      }
      ++e;
      while (e < text.size() && std::isspace(static_cast<unsigned char>(text[e]))) ++e;
    }
    if (e < text.size() && text[e] == '(') return true;
  }
  return false;
}

FileFacts cppFacts(const std::string& text, const std::set<std::string>& wanted,
                   const std::set<std::string>& functions = {}) {
  FileFacts f;
  f.read = true;
  for (const auto& fn : functions)
    if (declaresFunction(text, fn)) f.methods.insert(fn);
  for (const auto& name : wanted)
    for (const char* kw : {"class", "struct"}) {
      std::string k = kw;
      for (size_t at = text.find(k); at != std::string::npos; at = text.find(k, at + 1)) {
        if (at > 0 && isIdent(text[at - 1])) continue;
        size_t b = at + k.size();
        if (b >= text.size() || !std::isspace(static_cast<unsigned char>(text[b]))) continue;
        while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
        if (text.compare(b, name.size(), name) != 0) continue;
        size_t e = b + name.size();
        if (e < text.size() && isIdent(text[e])) continue;
        while (e < text.size() && std::isspace(static_cast<unsigned char>(text[e]))) ++e;
        if (e < text.size() && (text[e] == ';' || text[e] == '>' || text[e] == ',')) continue;  // a declaration
        f.classes.insert(name);
      }
    }
  return f;
}

bool matchesAny(const std::vector<std::string>& patterns, const std::string& f) {
  for (const auto& p : patterns)
    if (matchSuffix(p, f)) return true;
  return false;
}

std::string joinNames(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The module a Python gate calls its native ops through: the in-tree module
// bound by one of its imports whose alias the gate calls most attributes on,
// and the namespaces its functions forward those calls to (the first dotted
// call in each function's body). Empty when no import resolves in the tree.
struct OpModule {
  std::string file;                     // root-relative
  std::vector<std::string> namespaces;  // "torch.ops._C_vllm_ar", "sgl_kernel.ops"
};

OpModule gateOpModule(const std::string& root, const std::string& gate) {
  OpModule out;
  std::string text = readText(root + "/" + gate);
  if (text.empty()) return out;
  auto exists = [&](const std::string& rel) {
    struct stat st;
    return stat((root + "/" + rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  // Directories to resolve an absolute import from: the gate's and each
  // above it, up to the root ("" last).
  std::vector<std::string> bases;
  for (std::string d = dirOf(gate);; d = dirOf(d)) {
    bases.push_back(d.empty() ? "" : d + "/");
    if (d.empty()) break;
  }
  auto resolve = [&](std::string dotted) -> std::string {
    std::vector<std::string> from = bases;
    if (!dotted.empty() && dotted[0] == '.') {  // relative: the gate's package, then up one per extra dot
      size_t dots = dotted.find_first_not_of('.');
      if (dots == std::string::npos) dots = dotted.size();
      if (dots > bases.size()) return {};
      from = {bases[dots - 1]};
      dotted = dotted.substr(dots);
    }
    std::string rel;
    for (char c : dotted) rel += c == '.' ? '/' : c;
    for (const auto& b : from)
      for (const std::string& f : {b + rel + ".py", b + rel + "/__init__.py"})
        if (!rel.empty() && exists(f)) return f;
    return {};
  };
  static const std::regex fromAs(R"(^\s*from\s+([\w.]+)\s+import\s+(\w+)(?:\s+as\s+(\w+))?\s*(?:#.*)?$)");
  static const std::regex importAs(R"(^\s*import\s+([\w.]+)\s+as\s+(\w+)\s*(?:#.*)?$)");
  std::map<std::string, std::string> modules;  // alias -> file
  for (const auto& l : textLines(text)) {
    std::smatch m;
    if (std::regex_match(l, m, fromAs)) {
      std::string base = m[1].str();
      std::string dotted = base + (base.back() == '.' ? "" : ".") + m[2].str();
      std::string f = resolve(dotted);
      if (!f.empty()) modules.emplace(m[3].matched ? m[3].str() : m[2].str(), f);
    } else if (std::regex_match(l, m, importAs)) {
      std::string f = resolve(m[1].str());
      if (!f.empty()) modules.emplace(m[2].str(), f);
    }
  }
  // The alias the gate calls the most distinct attributes of.
  std::string alias;
  std::vector<std::string> calls;
  for (const auto& [a, f] : modules) {
    std::regex call("\\b" + a + R"(\.(\w+)\s*\()");
    std::vector<std::string> names;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator(); ++it)
      if (std::find(names.begin(), names.end(), (*it)[1].str()) == names.end()) names.push_back((*it)[1].str());
    if (names.size() > calls.size()) alias = a, calls = names;
  }
  if (alias.empty()) return out;
  out.file = modules[alias];
  auto lines = textLines(readText(root + "/" + out.file));
  static const std::regex def(R"(^\s*(?:async\s+)?def\s+(\w+)\s*\()");
  static const std::regex dotted(R"(([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*\()");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, def) ||
        std::find(calls.begin(), calls.end(), m[1].str()) == calls.end())
      continue;
    size_t ind = indentOf(lines[i]);
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const auto& l = lines[j];
      if (l.find_first_not_of(" \t") == std::string::npos) continue;
      if (indentOf(l) <= ind) break;
      std::smatch c;
      if (!std::regex_search(l, c, dotted)) continue;
      std::string callee = c[1].str();
      std::string ns = callee.substr(0, callee.rfind('.'));
      if (ns != "self" && std::find(out.namespaces.begin(), out.namespaces.end(), ns) == out.namespaces.end())
        out.namespaces.push_back(ns);
      break;
    }
  }
  return out;
}

}  // namespace

// `new [ns::]C(` or `make_unique<[ns::]C>` / `make_shared<...>` in C++ text:
// the text constructs class C (a plain scan: files may be large).
static bool constructsClass(const std::string& text, const std::string& c) {
  for (std::size_t at = text.find(c); at != std::string::npos; at = text.find(c, at + 1)) {
    std::size_t end = at + c.size();
    if ((at > 0 && isIdent(text[at - 1])) || (end < text.size() && isIdent(text[end]))) continue;
    std::size_t b = at;  // back over `ns::` qualifiers
    while (b >= 2 && text.compare(b - 2, 2, "::") == 0) {
      b -= 2;
      while (b > 0 && isIdent(text[b - 1])) --b;
    }
    std::size_t e = end;
    while (e < text.size() && std::isspace(static_cast<unsigned char>(text[e]))) ++e;
    std::size_t k = b;
    while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
    bool after_new = k >= 3 && text.compare(k - 3, 3, "new") == 0 && (k == 3 || !isIdent(text[k - 4])) && k < b;
    if (after_new && e < text.size() && text[e] == '(') return true;
    for (const char* m : {"make_unique<", "make_shared<"}) {
      std::size_t n = std::strlen(m);
      if (b >= n && text.compare(b - n, n, m) == 0 && e < text.size() && text[e] == '>') return true;
    }
  }
  return false;
}

bool definesDispatch(const std::string& text, const target::Target& t) {
  std::set<std::string> classes(t.cpp.class_names.begin(), t.cpp.class_names.end());
  std::set<std::string> fns(t.cpp.dispatch_functions.begin(), t.cpp.dispatch_functions.end());
  FileFacts f = cppFacts(text, classes, fns);
  if (f.methods.empty()) return false;
  if (classes.empty()) return true;
  return !f.classes.empty();
}

const std::vector<std::string>& dispatchExtensions() {
  static const std::vector<std::string> exts = {".cuh", ".h", ".hpp", ".muh", ".cu", ".mu"};
  return exts;
}

std::vector<std::string> extensionVariants(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const auto& p : patterns) {
    auto slash = p.rfind('/');
    auto dot = p.rfind('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) continue;
    std::string ext = p.substr(dot), stem = p.substr(0, dot);
    const auto& exts = dispatchExtensions();
    if (std::find(exts.begin(), exts.end(), ext) == exts.end()) continue;
    for (const auto& e : exts)
      if (e != ext && std::find(patterns.begin(), patterns.end(), stem + e) == patterns.end() &&
          std::find(out.begin(), out.end(), stem + e) == out.end())
        out.push_back(stem + e);
  }
  return out;
}

bool isSkippedDirName(const std::string& name) {
  if (name.empty() || name[0] == '.') return true;  // .git, .hg, .venv, .tox, .cache, ...
  // Build trees by their usual names (build, build-asan, build_release,
  // cmake-build-debug), not every word that starts with "build" (a builders/
  // package may hold a gate).
  if (name == "build" || name.rfind("build-", 0) == 0 || name.rfind("build_", 0) == 0 ||
      name.rfind("cmake-build-", 0) == 0)
    return true;
  static const std::set<std::string> skipped = {
      "node_modules", "__pycache__", "third_party", "third-party", "thirdparty", "3rdparty",
      "vendor",       "vendored",    "external",    "externals",   "site-packages", "dist-packages",
      "venv",         "dist",        "_deps"};
  if (skipped.count(name)) return true;
  auto dot = name.rfind(".egg-info");
  return dot != std::string::npos && dot + 9 == name.size();
}

// The last component of a path as split() gives it (trailing slashes dropped).
std::string_view lastOf(std::string_view p) {
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  auto at = p.rfind('/');
  return at == std::string_view::npos ? p : p.substr(at + 1);
}

bool matchSuffix(const std::string& pattern, const std::string& path, std::string* prefix) {
  // Most pairs differ in their last components: said without splitting
  // either (a scan tries every candidate against every target's patterns).
  std::string_view pl = lastOf(pattern), xl = lastOf(path);
  if (pl.empty() || xl.empty()) return false;
  if (pl != "**") {
    if (pl.find_first_of("*?[\\") == std::string_view::npos) {
      if (pl != xl) return false;
    } else if (fnmatch(std::string(pl).c_str(), std::string(xl).c_str(), 0) != 0) {
      return false;
    }
  }
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

std::vector<Unit> match(const std::vector<std::string>& files_in, const std::vector<target::Target>& targets,
                        const Accept& accept) {
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
        for (auto& u : unitsOf(t, files, claimed, accept)) found.push_back(std::move(u));
    for (const auto& u : found) claimed.insert(u.python_files.begin(), u.python_files.end());
    units.insert(units.end(), found.begin(), found.end());
  };
  phase([](const target::Target& t) { return !t.discovery.fallback && t.discovery.same_root; });
  phase([](const target::Target& t) { return !t.discovery.fallback && !t.discovery.same_root; });
  // The fallback, for a gate class no layout found (a tree whose only layout
  // match is another kind of gate, such as a quick all-reduce beside it).
  std::set<std::string> found;
  for (const auto& u : units)
    for (const auto& t : targets)
      if (t.name == u.target) found.insert(t.python.class_names.begin(), t.python.class_names.end());
  phase([&](const target::Target& t) {
    if (!t.discovery.fallback) return false;
    for (const auto& c : t.python.class_names)
      if (found.count(c)) return false;
    return true;
  });

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

std::vector<std::string> walkFiles(const std::string& root, const Options& options,
                                   const std::function<bool(const std::string& name)>& keep,
                                   std::vector<std::string>* notes) {
  struct stat st;
  if (stat(root.c_str(), &st) != 0) throw InputError(root + ": no such file or directory");
  if (!S_ISDIR(st.st_mode)) throw InputError(root + ": not a directory");
  Result r;
  std::vector<std::string> kept;
  walk(root, options, keep, r, kept);
  std::sort(kept.begin(), kept.end());
  if (notes) notes->insert(notes->end(), r.notes.begin(), r.notes.end());
  return kept;
}

Result discover(const std::string& root, const std::vector<target::Target>& targets, const Options& options) {
  struct stat st;
  if (stat(root.c_str(), &st) != 0) throw InputError(root + ": no such file or directory");
  if (!S_ISDIR(st.st_mode)) throw InputError(root + ": not a directory");
  Result r;
  r.root = root;
  std::optional<trace::Scope> phase(std::in_place, "Walk the tree");
  walk(root, options, filterFor(targets), r, r.candidates);
  std::sort(r.candidates.begin(), r.candidates.end());
  phase.emplace("Read the candidates", std::to_string(r.candidates.size()) + " files");

  // Read each gate or dispatch candidate once: a file takes a target's role
  // only when it defines one of that target's classes.
  std::set<std::string> cppClasses, cppFunctions;
  for (const auto& t : targets) {
    cppClasses.insert(t.cpp.class_names.begin(), t.cpp.class_names.end());
    cppFunctions.insert(t.cpp.dispatch_functions.begin(), t.cpp.dispatch_functions.end());
  }
  std::map<std::string, FileFacts> py, cc, ported;  // ported: another dispatch extension
  std::vector<std::vector<std::string>> variants;
  for (const auto& t : targets) variants.push_back(extensionVariants(t.discovery.cpp_paths));
  // Side by side (a Python candidate is parsed), each file's facts kept per
  // index; the maps are filled in the candidates' order.
  enum CppRole { kNone, kCc, kPort };
  std::vector<std::optional<FileFacts>> py_of(r.candidates.size());
  std::vector<std::pair<CppRole, FileFacts>> cc_of(r.candidates.size(), {kNone, FileFacts{}});
  jobs::forEach(r.candidates.size(), [&](std::size_t i) {
    const std::string& f = r.candidates[i];
    bool isPy = false, isCc = false, isPort = false;
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const auto& t = targets[k];
      isPy = isPy || matchesAny(t.discovery.python_paths, f);
      isCc = isCc || matchesAny(t.discovery.cpp_paths, f);
      isPort = isPort || matchesAny(variants[k], f);
    }
    std::string error;
    if (isPy) py_of[i] = pythonFacts(readText(root + "/" + f, 8u << 20, &error)), py_of[i]->unreadable = error;
    if (isCc) cc_of[i] = {kCc, cppFacts(readText(root + "/" + f, 8u << 20, &error), cppClasses)};
    else if (isPort) cc_of[i] = {kPort, cppFacts(readText(root + "/" + f, 8u << 20, &error), cppClasses, cppFunctions)};
    if (isCc || isPort) cc_of[i].second.unreadable = error;
  });
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const std::string& f = r.candidates[i];
    if (py_of[i]) py[f] = std::move(*py_of[i]);
    if (cc_of[i].first == kCc) cc[f] = std::move(cc_of[i].second);
    if (cc_of[i].first == kPort) ported[f] = std::move(cc_of[i].second);
  }
  auto defines = [](const FileFacts& facts, const std::vector<std::string>& names) {
    if (names.empty()) return true;
    for (const auto& n : names)
      if (facts.classes.count(n)) return true;
    return false;
  };
  Accept accept = [&](const target::Target& t, const std::string& f, bool python) {
    if (!python && !matchesAny(t.discovery.cpp_paths, f)) {
      // A port's spelling: the class and the dispatch method, both, and a
      // target whose dispatch is a class method.
      auto it = ported.find(f);
      if (it == ported.end() || t.cpp.class_names.empty() || !defines(it->second, t.cpp.class_names)) return false;
      for (const auto& fn : t.cpp.dispatch_functions)
        if (it->second.methods.count(fn)) return true;
      return false;
    }
    auto& facts = python ? py : cc;
    auto it = facts.find(f);
    if (it == facts.end()) return true;
    // A policy gate's file (a platform module) holds the gate only in the
    // versions that define one of its functions.
    if (python && t.python.class_names.empty() && t.python.policy.active()) {
      for (const auto& fn : t.python.policy.functions)
        if (it->second.functions.count(fn)) return true;
      return false;
    }
    return defines(it->second, python ? t.python.class_names : t.cpp.class_names);
  };
  phase.emplace("Match the layouts");
  r.units = match(r.candidates, targets, accept);
  phase.emplace("Follow the chains");
  // A layout no description names (the fallback): the rest of the flag's
  // chain is found by content beside the dispatch header, since no layout
  // lists it: the C++ sources there that construct the dispatch class (the
  // op entry), then those that register ops, when an entry was found.
  for (auto& u : r.units) {
    auto t = std::find_if(targets.begin(), targets.end(), [&](const target::Target& x) { return x.name == u.target; });
    if (t == targets.end() || !t->discovery.fallback || u.cpp_files.size() != 1) continue;
    std::string dir = dirOf(u.cpp_files[0]);
    std::vector<std::string> entries, registrations;
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(root + "/" + dir, ec)) {
      std::string ext = e.path().extension().string();
      if (e.is_regular_file(ec) && (ext == ".cu" || ext == ".cpp" || ext == ".cc" || ext == ".cxx"))
        names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      std::string rel = dir.empty() ? n : dir + "/" + n;
      std::string text = readText(root + "/" + rel);
      bool constructs = std::any_of(t->cpp.class_names.begin(), t->cpp.class_names.end(),
                                    [&](const std::string& c) { return constructsClass(text, c); });
      if (constructs) entries.push_back(rel);
      else if (text.find("TORCH_LIBRARY") != std::string::npos || text.find("PYBIND11_MODULE") != std::string::npos)
        registrations.push_back(rel);
    }
    if (entries.empty()) continue;
    u.cpp_files.insert(u.cpp_files.end(), entries.begin(), entries.end());
    u.cpp_files.insert(u.cpp_files.end(), registrations.begin(), registrations.end());
    u.chain_by_content = true;
  }

  // The candidates no target takes, and why, for the message when nothing matched.
  auto reject = [&](const std::map<std::string, FileFacts>& facts, bool python) {
    for (const auto& [f, x] : facts) {
      std::vector<std::string> wanted;
      bool taken = false;
      for (const auto& t : targets) {
        if (!matchesAny(python ? t.discovery.python_paths : t.discovery.cpp_paths, f)) continue;
        const auto& names = python ? t.python.class_names : t.cpp.class_names;
        if (defines(x, names)) taken = true;
        for (const auto& n : names)
          if (std::find(wanted.begin(), wanted.end(), n) == wanted.end()) wanted.push_back(n);
      }
      if (taken) continue;
      // An unreadable file says why, not that it lacks the class.
      std::string why = !x.unreadable.empty() ? "cannot read it: " + x.unreadable : "no class " + joinNames(wanted, " or ");
      if (python && x.classes.empty() && x.module_functions > 0)
        why += " (" + std::to_string(x.module_functions) + " module-level function" + (x.module_functions == 1 ? "" : "s") +
               " and no class: an op-wrapper module, not a gate)";
      r.rejected.push_back({f, why});
    }
  };
  reject(py, true);
  reject(cc, false);
  std::sort(r.rejected.begin(), r.rejected.end(), [](const Rejected& a, const Rejected& b) { return a.file < b.file; });
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
  std::set<std::string> rejected;
  std::string notTaken;  // "; F is not one: no class X"
  for (const auto& x : r.rejected) {
    rejected.insert(x.file);
    notTaken += "; " + x.file + " is not one: " + x.reason;
  }
  // Half a gate: say which half, it is usually a layout we do not know yet.
  std::string foundPy, foundCc;
  for (const auto& f : r.candidates) {
    if (rejected.count(f)) continue;
    for (const auto& t : targets) {
      if (foundPy.empty() && matchesAny(t.discovery.python_paths, f)) foundPy = f;
      if (foundCc.empty() && matchesAny(t.discovery.cpp_paths, f)) foundCc = f;
    }
  }
  if (!foundPy.empty() && foundCc.empty()) {
    std::string more = notTaken;
    // Where the gate's native calls go, when its op module is in the tree.
    OpModule ops = r.root.empty() ? OpModule{} : gateOpModule(r.root, foundPy);
    if (!ops.file.empty()) {
      more += "; the gate's ops come from " + ops.file;
      if (!ops.namespaces.empty()) more += ", which forwards to " + joinNames(ops.namespaces, ", ");
    }
    // Layouts that pair this gate with a dispatch in another checkout: the
    // ones naming the gate most exactly.
    size_t best = 0;
    std::vector<std::string> beside;
    for (const auto& t : targets) {
      if (t.discovery.same_root || t.discovery.fallback || t.discovery.cpp_paths.empty()) continue;
      for (const auto& p : t.discovery.python_paths) {
        if (!matchSuffix(p, foundPy)) continue;
        size_t n = split(p).size();
        std::string hint = "a checkout beside it with " + t.discovery.cpp_paths.front() + " would be found by the " +
                           t.name + " layout";
        if (n > best) best = n, beside.clear();
        if (n == best) beside.push_back(hint);
      }
    }
    if (!beside.empty()) more += " (" + joinNames(beside, "; ") + ")";
    throw InputError("no layered gate found under " + root + ": found the Python gate " + foundPy +
                     " but no C++ dispatch (" + join(cc) + ")" + more + "; name it with --cpp FILE");
  }
  if (foundPy.empty() && !foundCc.empty())
    throw InputError("no layered gate found under " + root + ": found the C++ dispatch " + foundCc +
                     " but no Python gate (" + join(py) + ")" + notTaken + "; name it with --python FILE");
  throw InputError("no layered gate found under " + root + " (looked for: a Python gate " + join(py) +
                   " and a C++ dispatch " + join(cc) + " in the layouts " + names + notTaken +
                   "; skipped .git, build and vendored trees; name the files with --python/--cpp)");
}

}  // namespace layergate::discover
