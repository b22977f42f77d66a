// Walker: platform objects. A probe asked of a platform object
// (`current_platform.is_fully_connected(ids)`) is a method of the platform
// class chosen at import time (vLLM's and Aphrodite's `platforms/` package:
// `cuda.py` for the CUDA target). A fork may force the answer there, before
// anything is probed: `if envs.SOME_FLAG: return True` at the top of the
// method, or `return True` outright. That forcing is part of the gate: the
// probe's value becomes "true when forced, else the machine's answer".
#include "python/Walker.h"

#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/Errors.h"

namespace layergate::python::detail {

namespace {

// The target's platform names, from its platform flags that hold
// ("is_cuda": true -> "cuda"): the platform module's file is named after one.
std::vector<std::string> platformNames(const std::map<std::string, bool>& flags) {
  std::vector<std::string> out;
  for (const auto& [flag, on] : flags) {
    if (!on) continue;
    std::string n = flag;
    while (!n.empty() && n[0] == '_') n.erase(0, 1);
    if (n.rfind("is_", 0) != 0) continue;
    n = n.substr(3);
    if (n.empty() || n.find('_') != std::string::npos) continue;  // is_cuda_alike: a family, not a platform
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

}  // namespace

Module* Walker::diskModule(const std::string& path) {
  namespace fs = std::filesystem;
  std::string norm = fs::path(path).lexically_normal().generic_string();
  for (auto& m : mods_)
    if (fs::path(m->file->path).lexically_normal().generic_string() == norm) return m.get();
  if (disk_files_.size() >= kMaxDiskModules) return nullptr;
  std::error_code ec;
  auto size = fs::file_size(norm, ec);
  if (ec || size > limits_.max_bytes) return nullptr;
  std::ifstream in(norm, std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream ss;
  ss << in.rdbuf();
  disk_files_.push_back(std::make_unique<SourceFile>(SourceFile{norm, ss.str()}));
  Module* m = addModule(*disk_files_.back(), true);
  try {
    checkSyntax(*m);
  } catch (const InputError&) {
    m->syntax_ok = false;
    return nullptr;
  }
  collectDecls(*m);
  gate_.files.push_back(norm);
  return m;
}

// The forcing of `probe` in the platform classes behind `object` (the
// dotted origin of the object the probe is asked of), computed once.
const Walker::PlatformForcing& Walker::platformForcing(const std::string& object, const std::string& probe) {
  namespace fs = std::filesystem;
  auto key = object + "\x1f" + probe;
  auto it = platform_forcing_.find(key);
  if (it != platform_forcing_.end()) return it->second;
  PlatformForcing& out = platform_forcing_[key];
  auto comps = splitDots(object);
  if (comps.size() < 2 || !cur_) return out;
  std::string pkg = joinDots({comps.begin(), comps.end() - 1});
  std::string init = findOnDisk(pkg, *cur_);
  if (init.empty() || fs::path(init).filename() != "__init__.py") return out;
  fs::path dir = fs::path(init).parent_path();
  // The platform modules of the target: files of the package named after
  // the target's platform (cuda.py), in name order.
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".py") continue;
    std::string stem = e.path().stem().string();
    for (const auto& n : platformNames(spec_.platform_flags))
      if (stem == n || stem.rfind(n + "_", 0) == 0) files.push_back(e.path().generic_string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    Module* m = diskModule(f);
    if (!m) continue;
    for (const auto& [cname, cls] : m->classes)
      for (TSNode k : named(field(cls, "body"))) {
        TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
        if (!is(def, "function_definition") || text(field(def, "name")) != probe) continue;
        forcingIn(m, def, out);
      }
  }
  return out;
}

// The leading statements of a probe method that answer true before probing:
// `return True`, or `if C: return True` where C reads only the environment
// and constants. The first statement of any other kind ends the look.
void Walker::forcingIn(Module* m, TSNode def, PlatformForcing& out) {
  ModuleScope scope(*this, m);
  auto isTrueReturn = [&](TSNode s) {
    if (!is(s, "return_statement")) return false;
    TSNode v = firstNamed(s);
    return !ts_node_is_null(v) && is(v, "true");
  };
  auto isNoise = [&](TSNode s) {  // a docstring or a log line
    if (!is(s, "expression_statement")) return false;
    TSNode e = firstNamed(s);
    if (is(e, "string")) return true;
    return is(e, "call") && isLoggingObject(baseName(field(e, "function")));
  };
  for (TSNode s : named(field(def, "body"))) {
    if (is(s, "comment") || isNoise(s)) continue;
    if (isTrueReturn(s)) {
      out.cond = out.cond ? model::Or(out.cond, model::True()) : model::True();
      out.where.push_back(loc(s, "platform"));
      return;
    }
    if (!is(s, "if_statement") || !ts_node_is_null(field(s, "alternative"))) return;
    TSNode body = field(s, "consequence");
    TSNode first{};
    for (TSNode b : named(body))
      if (!is(b, "comment") && !isNoise(b)) {
        first = b;
        break;
      }
    if (ts_node_is_null(first) || !isTrueReturn(first)) return;
    State st;
    Frame fr{Frame::Kind::Module};
    Ctx cx;
    Value c = eval(field(s, "condition"), st, fr, cx);
    if (c.k != Value::K::Bool && c.k != Value::K::Str && c.k != Value::K::Merge) return;
    ExprPtr t = truthy(c);
    for (const auto& v : model::varsOf(t))
      if (model::envNameOf(v.name).empty()) return;  // a parameter, a probe: the method's own work
    out.cond = out.cond ? model::Or(out.cond, t) : t;
    out.where.push_back(loc(first, "platform"));
  }
}

Value Walker::platformProbe(Value v, TSNode call) {
  TSNode fn = field(call, "function");
  if (!is(fn, "attribute")) return v;
  std::string probe = text(field(fn, "attribute"));
  std::string object = dotted(field(fn, "object"));
  if (object.find('.') == std::string::npos) return v;
  const PlatformForcing& f = platformForcing(object, probe);
  if (!f.cond) return v;
  Value t = vBool(model::True());
  t.origin = v.origin;
  for (const auto& w : f.where) {
    model::Hop h;
    h.hop = "platform override";
    h.where = w;
    h.where.role = "trace";
    t.origin.push_back(h);
  }
  std::string names;
  for (const auto& r : model::varsOf(f.cond)) {
    std::string n = model::envNameOf(r.name);
    if (!n.empty() && names.find(n) == std::string::npos) names += (names.empty() ? "" : ", ") + n;
  }
  note(probe + " of " + object + " answers true " + (names.empty() ? "always" : "by " + names) +
       ", before it probes anything (" + f.where.front().file + ":" + std::to_string(f.where.front().line) + ")");
  Value r = merge(f.cond, t, v);
  if (!model::isTrue(f.cond)) {
    r.origin = t.origin;
  }
  return r;
}

// A branch for another platform than the target's (`elif _is_musa:`, `if
// current_platform.is_rocm():`) that sets the NVLink flag to a literal True
// whatever the links: the walk takes the target's platform and never enters
// it, but on that platform the flag is forced (LG003). Found by reading the
// gate class: the names assigned from an NVLink probe, and the branches whose
// condition names a platform flag the target sets false that assign True to
// one of those names.
void Walker::platformLiteralFlags(TSNode cls) {
  if (ts_node_is_null(cls)) return;
  ModuleScope scope(*this, gate_mod_);
  auto isNvlinkProbeCall = [&](TSNode v) {
    if (!is(v, "call")) return false;
    std::string f = text(field(v, "function"));
    std::string last = lastComponent(f);
    auto p = spec_.probes.find(last);
    return p != spec_.probes.end() && spec_.roles.isLink(p->second);
  };
  std::vector<TSNode> all;
  std::vector<TSNode> stack{field(cls, "body")};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    all.push_back(n);
    for (TSNode k : named(n)) stack.push_back(k);
  }
  std::set<std::string> flagNames;
  for (TSNode n : all)
    if (is(n, "assignment") && isNvlinkProbeCall(field(n, "right"))) flagNames.insert(text(field(n, "left")));
  if (flagNames.empty()) return;
  // False on the target's platform, read off the condition's shape alone: a
  // platform flag the target sets false (a name, an attribute, a call), an
  // `and` with such a side, an `or` of two such (not `_is_cuda or _is_hip`).
  std::function<bool(TSNode)> dead = [&](TSNode c) -> bool {
    if (is(c, "parenthesized_expression")) return dead(firstNamed(c));
    if (is(c, "boolean_operator")) {
      std::string op = text(ts_node_child(c, 1));
      bool l = dead(field(c, "left")), r = dead(field(c, "right"));
      return op == "and" ? (l || r) : (l && r);
    }
    std::string key;
    if (is(c, "identifier")) key = text(c);
    else if (is(c, "attribute")) key = text(c);
    else if (is(c, "call")) key = text(field(c, "function"));
    else return false;
    auto f = spec_.platform_flags.find(key);
    if (f == spec_.platform_flags.end()) f = spec_.platform_flags.find(lastComponent(key));
    return f != spec_.platform_flags.end() && !f->second;
  };
  for (TSNode n : all) {
    if (!is(n, "if_statement") && !is(n, "elif_clause")) continue;
    TSNode cond = field(n, "condition");
    if (!dead(cond)) continue;
    for (TSNode b : named(field(n, "consequence"))) {
      if (!is(b, "expression_statement")) continue;
      TSNode as = firstNamed(b);
      if (!is(as, "assignment") || !is(field(as, "right"), "true")) continue;
      std::string name = text(field(as, "left"));
      if (!flagNames.count(name)) continue;
      model::GateCheck g;
      g.condition = model::True();
      g.text = "`" + name + " = True` under `" + shortText(cond) + "`";
      g.where = loc(as, "platform branch");
      g.where.note = shortText(b);
      gate_.platform_forced.push_back(g);
    }
  }
}

}  // namespace layergate::python::detail
