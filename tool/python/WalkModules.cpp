// Walker: the given files as modules: names, imports, resolving dotted names, walking bodies, declarations.
#include "python/Walker.h"

#include <filesystem>
#include <string>
#include <vector>

#include "model/Errors.h"

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

// Imports, functions and classes of a file, before anything is walked.
void Walker::collectDecls(Module& m) {
  Module* saved = cur_;
  cur_ = &m;
  std::vector<TSNode> stack{m.root};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    for (TSNode k : named(n)) {
      TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
      TSNode dec = is(k, "decorated_definition") ? k : TSNode{};
      if (is(k, "import_statement") || is(k, "import_from_statement")) {
        recordImport(k);
      } else if (is(def, "function_definition")) {
        FuncInfo fi = funcInfo(def, dec, false);
        m.funcs[text(field(def, "name"))] = fi;
      } else if (is(def, "class_definition")) {
        std::string cname = text(field(def, "name"));
        m.classes[cname] = def;
        for (TSNode s : named(field(def, "body"))) {
          TSNode md = is(s, "decorated_definition") ? field(s, "definition") : s;
          if (!is(md, "function_definition")) continue;
          FuncInfo fi = funcInfo(md, is(s, "decorated_definition") ? s : TSNode{}, true);
          m.funcs[cname + "." + text(field(md, "name"))] = fi;
        }
      } else if (is(k, "if_statement") || is(k, "elif_clause") || is(k, "else_clause") ||
                 is(k, "try_statement") || is(k, "except_clause") || is(k, "finally_clause") ||
                 is(k, "with_statement") || is(k, "block")) {
        stack.push_back(k);
      }
    }
  }
  cur_ = saved;
}

void Walker::recordImport(TSNode n) {
  if (is(n, "import_statement")) {
    for (TSNode k : named(n)) {
      if (is(k, "dotted_name")) {
        std::string d = text(k);
        std::string first = d.substr(0, d.find('.'));
        cur_->aliases[first] = first;
      } else if (is(k, "aliased_import")) {
        cur_->aliases[text(field(k, "alias"))] = text(field(k, "name"));
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
    if (is(k, "dotted_name")) cur_->aliases[text(k)] = mod + "." + text(k);
    else if (is(k, "aliased_import")) cur_->aliases[text(field(k, "alias"))] = mod + "." + text(field(k, "name"));
  }
}

FuncInfo Walker::funcInfo(TSNode def, TSNode decorated, bool is_method) {
  FuncInfo fi;
  fi.node = def;
  fi.mod = cur_;
  fi.is_method = is_method;
  if (!ts_node_is_null(decorated))
    for (TSNode d : named(decorated)) {
      if (!is(d, "decorator")) continue;
      std::string t = text(d);
      if (t.find("staticmethod") != std::string::npos) fi.is_static = true;
      if (t.find("classmethod") != std::string::npos) fi.is_classmethod = true;
    }
  return fi;
}

}  // namespace layergate::python::detail
