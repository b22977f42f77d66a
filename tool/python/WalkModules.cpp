// Walker: the given files as modules: names, imports, resolving dotted names, walking bodies, declarations.
#include "python/Walker.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "jobs/Trace.h"
#include "model/Errors.h"
#include "python/Parse.h"

namespace layergate::python::detail {

// --- given files: modules and imports -------------------------------------------

std::vector<std::string> Walker::splitDots(const std::string& d) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : d) {
    if (ch == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

std::string Walker::joinDots(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ".") + p;
  return out;
}

// A file's module names: every suffix of its path components, so that
// a/b/sgl_kernel/allreduce.py answers to allreduce, sgl_kernel.allreduce, ...
// and a package's __init__.py to its folder. A '.' inside a folder name
// cannot be imported; it is kept apart from the separators.
void Walker::moduleNames(Module& m) {
  std::string p = std::filesystem::path(m.file->path).lexically_normal().generic_string();
  std::vector<std::string> comps;
  std::string cur;
  for (char ch : p + "/") {
    if (ch == '/') {
      if (!cur.empty() && cur != ".") comps.push_back(cur);
      cur.clear();
    } else {
      cur += ch == '.' ? '\x1f' : ch;
    }
  }
  if (comps.empty()) return;
  std::string& last = comps.back();
  const std::string py = "\x1fpy";
  if (last.size() > py.size() && last.compare(last.size() - py.size(), py.size(), py) == 0)
    last.resize(last.size() - py.size());
  m.pkg.assign(comps.begin(), comps.end() - 1);
  if (last == "__init__") comps.pop_back();
  m.comps = comps;
}

Module* Walker::findModule(const std::vector<std::string>& comps, const Module* from) const {
  Module* best = nullptr;
  std::size_t best_common = 0;
  std::size_t n = comps.size();
  if (n == 0) return nullptr;
  for (const auto& m : mods_) {
    if (m->comps.size() < n || !std::equal(comps.begin(), comps.end(), m->comps.end() - static_cast<long>(n)))
      continue;
    std::size_t common = 0;
    if (from)
      while (common < from->pkg.size() && common < m->comps.size() && from->pkg[common] == m->comps[common])
        ++common;
    if (!best || common > best_common) best = m.get(), best_common = common;
  }
  return best;
}

// A dotted name (alias-resolved) to a module or function of the given files.
// The import must name a suffix of the file's path; when no given file
// answers to the full package path, leading packages are dropped (a fixture
// that lays the files out flat).
Walker::Resolved Walker::resolveDotted(const std::string& dotted, const Module* from, int depth) {
  if (depth > 8 || dotted.empty()) return {};
  auto comps = splitDots(dotted);
  for (std::size_t skip = 0; skip < comps.size(); ++skip)
    for (std::size_t k = comps.size(); k > skip; --k) {
      std::vector<std::string> part(comps.begin() + static_cast<long>(skip), comps.begin() + static_cast<long>(k));
      Module* m = findModule(part, from);
      if (!m) continue;
      Resolved r = resolveIn(m, {comps.begin() + static_cast<long>(k), comps.end()}, depth);
      if (r.mod) return r;
    }
  return {};
}

Walker::Resolved Walker::resolveIn(Module* m, const std::vector<std::string>& rest, int depth) {
  if (rest.empty()) return {m, nullptr};
  const std::string& name = rest[0];
  auto al = m->aliases.find(name);
  if (al == m->aliases.end()) {
    auto f = m->funcs.find(name);
    if (f != m->funcs.end() && rest.size() == 1) return {m, &f->second};
    if (rest.size() == 2) {
      auto g = m->funcs.find(name + "." + rest[1]);  // Class.staticmethod
      if (g != m->funcs.end()) return {m, &g->second};
    }
    return {};
  }
  std::vector<std::string> parts = splitDots(al->second);
  parts.insert(parts.end(), rest.begin() + 1, rest.end());
  return resolveDotted(joinDots(parts), m, depth + 1);
}

// The module body of a given file other than the gate's, walked once when a
// name of it is first needed; what it records counts only if the gate uses it.
void Walker::ensureWalked(Module* m) {
  if (!m || m->walked) return;
  trace::Scope scope("Walk module", m->file->path);
  m->walked = 1;
  Module* saved = cur_;
  bool collecting = collecting_patches_;
  auto stack = call_stack_.size();
  cur_ = m;
  ++aux_depth_;
  ++tentative_;
  collecting_patches_ = true;
  State st;
  std::string problem;
  try {
    Frame fr{Frame::Kind::Module};
    walkBlock(m->root, st, fr);
  } catch (const AuxAbort&) {
    problem = "more than " + std::to_string(kMaxStatements) + " statements in the given helper files";
  } catch (const InputError& e) {
    problem = e.what();
  }
  m->globals = st.locals;
  call_stack_.resize(stack);
  collecting_patches_ = collecting;
  --tentative_;
  --aux_depth_;
  cur_ = saved;
  m->walked = 2;
  if (!problem.empty()) note(m->file->path + ": module body read in part (" + problem + ")");
}

// Imports, functions and classes of a file, before anything is walked, in
// source order (a later def of a name replaces an earlier one, as in Python).
// Module-level branches on the platform are decided for the target: SGLang's
// op wrappers define each op once under `if torch.version.hip is not None:`
// (or `if is_hip():`) and again under `else:`, with other arities; only the
// target's definitions exist at run time.
void Walker::collectDecls(Module& m) {
  Module* saved = cur_;
  cur_ = &m;
  std::vector<std::pair<TSNode, bool>> guards;
  collectBlock(m, m.root, 0, guards);
  cur_ = saved;
}

void Walker::collectBlock(Module& m, TSNode block, int depth, std::vector<std::pair<TSNode, bool>>& guards) {
  if (depth > limits_.max_depth) return;
  for (TSNode k : named(block)) {
    TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
    TSNode dec = is(k, "decorated_definition") ? k : TSNode{};
    if (is(k, "import_statement") || is(k, "import_from_statement")) {
      recordImport(k);
    } else if (is(def, "function_definition")) {
      if (!guards.empty()) m.def_guards[def.id] = guards;
      m.funcs[text(field(def, "name"))] = funcInfo(def, dec, false);
    } else if (is(def, "class_definition")) {
      std::string cname = text(field(def, "name"));
      m.classes[cname] = def;
      for (TSNode s : named(field(def, "body"))) {
        TSNode md = is(s, "decorated_definition") ? field(s, "definition") : s;
        if (!is(md, "function_definition")) continue;
        m.funcs[cname + "." + text(field(md, "name"))] = funcInfo(md, is(s, "decorated_definition") ? s : TSNode{}, true);
      }
    } else if (is(k, "if_statement")) {
      // if / elif / else in order: a decided-true branch is the only one
      // taken; a decided-false one is skipped; an undecided one may run.
      std::vector<std::pair<TSNode, TSNode>> clauses{{field(k, "condition"), field(k, "consequence")}};
      for (TSNode a : named(k))
        if (is(a, "elif_clause")) clauses.push_back({field(a, "condition"), field(a, "consequence")});
        else if (is(a, "else_clause")) clauses.push_back({TSNode{}, field(a, "body")});
      // A clause the target does not decide guards its definitions; the
      // clauses after it run only when it was false.
      std::size_t pushed = 0;
      for (const auto& [cond, body] : clauses) {
        std::optional<bool> v = ts_node_is_null(cond) ? std::optional<bool>(true) : platformTruth(cond);
        if (v && !*v) continue;
        if (!v) guards.push_back({cond, true});
        collectBlock(m, body, depth + 1, guards);
        if (v) break;
        guards.back().second = false;
        ++pushed;
      }
      guards.resize(guards.size() - pushed);
    } else if (is(k, "try_statement") || is(k, "except_clause") || is(k, "except_group_clause") ||
               is(k, "finally_clause") || is(k, "else_clause") || is(k, "with_statement") || is(k, "block")) {
      collectBlock(m, k, depth + 1, guards);
    }
  }
}

std::optional<bool> Walker::platformTruth(TSNode c) const {
  if (ts_node_is_null(c)) return std::nullopt;
  if (is(c, "parenthesized_expression")) return platformTruth(firstNamed(c));
  if (is(c, "not_operator")) {
    auto v = platformTruth(field(c, "argument"));
    if (v) return !*v;
    return std::nullopt;
  }
  if (is(c, "boolean_operator")) {
    auto a = platformTruth(field(c, "left")), b = platformTruth(field(c, "right"));
    bool is_and = text(field(c, "operator")) == "and";
    if (is_and) {
      if ((a && !*a) || (b && !*b)) return false;
      if (a && b) return true;
      return std::nullopt;
    }
    if ((a && *a) || (b && *b)) return true;
    if (a && b) return false;
    return std::nullopt;
  }
  auto flag = [&](TSNode n) -> std::optional<bool> {
    std::string t = text(n);
    auto it = spec_.platform_flags.find(t);  // a dotted value (torch.version.hip) or a name
    if (it != spec_.platform_flags.end()) return it->second;
    if (is(n, "attribute")) {
      it = spec_.platform_flags.find(text(field(n, "attribute")));
      if (it != spec_.platform_flags.end() && it->first.find('.') == std::string::npos) return it->second;
    }
    return std::nullopt;
  };
  if (is(c, "identifier") || is(c, "attribute")) return flag(c);
  if (is(c, "call")) {
    TSNode args = field(c, "arguments");
    if (!named(args).empty()) return std::nullopt;
    return flag(field(c, "function"));
  }
  if (is(c, "comparison_operator")) {
    // X is None / X is not None over a platform value that is None off its platform
    auto ops = children(c, false);
    auto kids = named(c);
    if (kids.size() != 2 || !is(kids[1], "none")) return std::nullopt;
    std::string op;
    for (TSNode o : ops)
      if (!ts_node_is_named(o)) op += (op.empty() ? "" : " ") + std::string(ts_node_type(o));
    auto v = flag(kids[0]);
    if (!v) return std::nullopt;
    if (op == "is not") return *v;
    if (op == "is") return !*v;
  }
  return std::nullopt;
}

Module* Walker::addModule(const SourceFile& f, bool from_disk) {
  auto m = std::make_unique<Module>();
  m->file = &f;
  m->from_disk = from_disk;
  m->tree = parsePython(f.text);
  if (!m->tree) throw InputError(f.path + ": could not be parsed");
  m->root = ts_tree_root_node(m->tree);
  moduleNames(*m);
  mods_.push_back(std::move(m));
  return mods_.back().get();
}

// A dotted module name to a file beside `from`: the nearest ancestor folder
// of `from` under which the name's path exists (python/ for sglang.srt.x),
// the longest module prefix first (a.b.c may be a module, or a name in a.b).
std::string Walker::findOnDisk(const std::string& dotted, const Module& from) const {
  namespace fs = std::filesystem;
  std::vector<std::string> comps = splitDots(dotted);
  for (const auto& c : comps)
    if (c.empty()) return "";
  fs::path dir = fs::path(from.file->path).parent_path();
  for (int up = 0; up < 12; ++up) {
    for (std::size_t k = comps.size(); k > 0; --k) {
      fs::path p = dir;
      for (std::size_t i = 0; i < k; ++i) p /= comps[i];
      std::error_code ec;
      fs::path file = p;
      file += ".py";
      if (fs::is_regular_file(file, ec)) return file.lexically_normal().generic_string();
      fs::path init = p / "__init__.py";
      if (fs::is_regular_file(init, ec)) return init.lexically_normal().generic_string();
    }
    if (dir.empty() || dir == dir.root_path()) break;
    fs::path parent = dir.parent_path();
    if (parent == dir) break;
    dir = parent;
  }
  return "";
}

void Walker::followImports() {
  std::vector<std::pair<Module*, int>> frontier;
  for (auto& m : mods_)
    if (m.get() == gate_mod_) frontier.push_back({m.get(), 0});
  std::set<std::string> loaded;
  for (auto& m : mods_) loaded.insert(std::filesystem::path(m->file->path).lexically_normal().generic_string());
  std::vector<std::string> followed;
  while (!frontier.empty() && disk_files_.size() < kMaxDiskModules) {
    auto [from, hops] = frontier.front();
    frontier.erase(frontier.begin());
    if (hops >= kMaxImportHops) continue;
    std::vector<std::string> targets;
    for (const auto& [local, origin] : from->aliases) targets.push_back(origin);
    for (const auto& origin : targets) {
      if (disk_files_.size() >= kMaxDiskModules) break;
      // A given file answers to the whole dotted path (no leading packages
      // dropped: that fallback is for flat layouts, and would take
      // sgl_kernel/allreduce.py for srt...custom_all_reduce_ops).
      bool given = false;
      auto comps = splitDots(origin);
      for (std::size_t k = comps.size(); k > 0 && !given; --k)
        given = findModule({comps.begin(), comps.begin() + static_cast<long>(k)}, from) != nullptr && k > 1;
      if (given) continue;
      std::string path = findOnDisk(origin, *from);
      if (path.empty() || !loaded.insert(path).second) continue;
      std::error_code ec;
      auto size = std::filesystem::file_size(path, ec);
      if (ec || size > limits_.max_bytes) continue;
      trace::Scope scope("Import", path);
      std::ifstream in(path, std::ios::binary);
      if (!in) continue;
      std::ostringstream ss;
      ss << in.rdbuf();
      disk_files_.push_back(std::make_unique<SourceFile>(SourceFile{path, ss.str()}));
      Module* m = addModule(*disk_files_.back(), true);
      try {
        checkSyntax(*m);
      } catch (const InputError&) {
        m->syntax_ok = false;
      }
      collectDecls(*m);
      followed.push_back(path);
      frontier.push_back({m, hops + 1});
    }
  }
  for (const auto& p : followed) gate_.files.push_back(p);
}

void Walker::recordImport(TSNode n) {
  if (is(n, "import_statement")) {
    for (TSNode k : named(n)) {
      if (is(k, "dotted_name")) {
        std::string d = text(k);
        std::string first = d.substr(0, d.find('.'));
        cur_->aliases[first] = first;
        cur_->import_at[first] = n;
      } else if (is(k, "aliased_import")) {
        cur_->aliases[text(field(k, "alias"))] = text(field(k, "name"));
        cur_->import_at[text(field(k, "alias"))] = n;
      }
    }
    return;
  }
  // from M import a, b as c
  std::string mod = text(field(n, "module_name"));
  TSNode modnode = field(n, "module_name");
  if (is(modnode, "relative_import")) {
    // from . import y / from ..x import f: relative to this file's package
    std::size_t dots = 0;
    std::string rest;
    for (TSNode k : children(modnode, false)) {
      if (is(k, "import_prefix")) dots = text(k).size();
      else if (is(k, "dotted_name")) rest = text(k);
    }
    std::vector<std::string> base = cur_->pkg;
    for (std::size_t i = 1; i < dots && !base.empty(); ++i) base.pop_back();
    if (!rest.empty())
      for (const auto& part : splitDots(rest)) base.push_back(part);
    mod = joinDots(base);
  }
  for (TSNode k : named(n)) {
    if (ts_node_eq(k, modnode)) continue;
    std::string local;
    if (is(k, "dotted_name")) cur_->aliases[local = text(k)] = mod + "." + text(k);
    else if (is(k, "aliased_import")) cur_->aliases[local = text(field(k, "alias"))] = mod + "." + text(field(k, "name"));
    if (!local.empty()) cur_->from_names.insert(local), cur_->import_at[local] = n;
  }
}

FuncInfo Walker::funcInfo(TSNode def, TSNode decorated, bool is_method) {
  FuncInfo fi;
  fi.node = def;
  fi.mod = cur_;
  fi.is_method = is_method;
  if (cur_) {
    auto g = cur_->def_guards.find(def.id);
    if (g != cur_->def_guards.end()) fi.guards = g->second;
  }
  if (!ts_node_is_null(decorated))
    for (TSNode d : named(decorated)) {
      if (!is(d, "decorator")) continue;
      std::string t = text(d);
      if (t.find("staticmethod") != std::string::npos) fi.is_static = true;
      if (t.find("classmethod") != std::string::npos) fi.is_classmethod = true;
      if (t == "@property" || t == "@functools.cached_property" || t == "@cached_property") fi.is_property = true;
    }
  return fi;
}

}  // namespace layergate::python::detail
