// Walker: platform objects. A probe asked of a platform object
// (`current_platform.is_fully_connected(ids)`) is a method of the platform
// class chosen at import time (vLLM's and Aphrodite's `platforms/` package:
// `cuda.py` for the CUDA target). A fork may answer there before anything is
// probed: `if envs.SOME_FLAG: return True` at the top of the method, `return
// True` outright, or `if envs.SOME_FLAG: return cls._can_p2p_all(ids)` (a
// peer-to-peer check in place of the NVLink query). That answer is part of the
// gate: the probe's value becomes "the override's answer when its condition
// holds, else the machine's answer".
#include "python/Walker.h"

#include <filesystem>
#include <functional>
#include <fstream>
#include <optional>
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

// The leading statements of a probe method that answer before probing:
// `return True`, or `if C: return X` where C reads only the environment and
// constants (an `else` ends the look after it). X is the answer C++ then
// gets: a literal True, or another check than the method's own query
// (`return cls._can_p2p_all(ids)`: peer-to-peer, which PCIe GPUs pass), kept
// as that check's value. A return of the same probe
// (`super().is_fully_connected(ids)`) answers the same question and is no
// override. The first statement of any other kind ends the look.
void Walker::forcingIn(Module* m, TSNode def, PlatformForcing& out) {
  ModuleScope scope(*this, m);
  auto isNoise = [&](TSNode s) {  // a docstring or a log line
    if (!is(s, "expression_statement")) return false;
    TSNode e = firstNamed(s);
    if (is(e, "string")) return true;
    return is(e, "call") && isLoggingObject(baseName(field(e, "function")));
  };
  // The method's parameters (cls, the device ids) as unknowns: an answer that
  // reads them is the other check's own work.
  State params;
  for (const auto& p : parseParams(field(def, "parameters"))) params.locals[p.name] = paramUnknown(p.name, def);
  // The answer a `return` gives, or nothing when it is the probe's own.
  auto answer = [&](TSNode ret) -> std::optional<Value> {
    TSNode x = firstNamed(ret);
    if (ts_node_is_null(x)) return vNone();
    if (is(x, "true")) return vBool(model::True());
    if (is(x, "call")) {
      std::string last = lastComponent(text(field(x, "function")));
      auto p = spec_.probes.find(last);
      if (p != spec_.probes.end() && spec_.roles.isLink(p->second)) return std::nullopt;
    }
    // Evaluated aside: the calls there are no native calls of the gate.
    ++aux_depth_;
    ++tentative_;
    State st = params;
    Frame fr{Frame::Kind::Helper};
    Ctx cx;
    Value v;
    try {
      v = eval(x, st, fr, cx);
    } catch (const AuxAbort&) {
      v = unknown(x);
    }
    --tentative_;
    --aux_depth_;
    v.origin.clear();
    return v;
  };
  auto add = [&](ExprPtr cond, TSNode ret) {
    auto v = answer(ret);
    // None and False say "no link": never more than the probe may answer,
    // and classes are alternatives, so they must not mask another's override.
    if (!v || v->k == Value::K::None || (v->k == Value::K::Bool && model::isFalse(v->e))) return;
    Location w = loc(ret, "platform");
    w.note = shortText(ret);
    TSNode x = firstNamed(ret);
    out.overrides.push_back({std::move(cond), *v, ts_node_is_null(x) ? "None" : shortText(x), w});
  };
  for (TSNode s : named(field(def, "body"))) {
    if (is(s, "comment") || isNoise(s)) continue;
    if (is(s, "return_statement")) {
      // Unconditional: a literal True forces the answer; anything else is how
      // this class answers (a delegation to its query, False without NVML).
      if (is(firstNamed(s), "true")) add(model::True(), s);
      return;
    }
    if (!is(s, "if_statement")) return;
    TSNode body = field(s, "consequence");
    TSNode first{};
    for (TSNode b : named(body))
      if (!is(b, "comment") && !isNoise(b)) {
        first = b;
        break;
      }
    if (ts_node_is_null(first) || !is(first, "return_statement")) return;
    TSNode alt = field(s, "alternative");
    if (!ts_node_is_null(alt) && !is(alt, "else_clause")) return;  // an elif: a chain this look does not read
    State st;
    Frame fr{Frame::Kind::Module};
    Ctx cx;
    Value c = eval(field(s, "condition"), st, fr, cx);
    if (c.k != Value::K::Bool && c.k != Value::K::Str && c.k != Value::K::Merge) return;
    ExprPtr t = truthy(c);
    for (const auto& v : model::varsOf(t))
      if (model::envNameOf(v.name).empty()) return;  // a parameter, a probe: the method's own work
    add(t, first);
    if (!ts_node_is_null(alt)) return;  // the else is the method's own query
  }
}

Value Walker::platformProbe(Value v, TSNode call) {
  TSNode fn = field(call, "function");
  if (!is(fn, "attribute")) return v;
  std::string probe = text(field(fn, "attribute"));
  std::string object = dotted(field(fn, "object"));
  if (object.find('.') == std::string::npos) return v;
  const PlatformForcing& f = platformForcing(object, probe);
  if (f.overrides.empty()) return v;
  // The hops: where the probe was asked, then each override, oldest first.
  std::vector<model::Hop> origin = v.origin;
  for (const auto& o : f.overrides) {
    model::Hop h;
    h.hop = "platform override";
    h.where = o.where;
    h.where.role = "trace";
    origin.push_back(h);
  }
  Value r = v;
  for (std::size_t i = f.overrides.size(); i-- > 0;) r = merge(f.overrides[i].cond, f.overrides[i].value, r);
  r.origin = origin;
  for (const auto& o : f.overrides) {
    std::string names;
    for (const auto& x : model::varsOf(o.cond)) {
      std::string n = model::envNameOf(x.name);
      if (!n.empty() && names.find(n) == std::string::npos) names += (names.empty() ? "" : ", ") + n;
    }
    bool literal = o.value.k == Value::K::Bool && o.value.e && model::isTrue(o.value.e);
    std::string what = literal ? "true" : "`" + o.text + "`";
    note(probe + " of " + object + " answers " + what + " " + (names.empty() ? "always" : "by " + names) +
         ", before it probes anything (" + o.where.file + ":" + std::to_string(o.where.line) + ")");
  }
  return r;
}

// A branch for another platform than the target's (`elif _is_musa:`, `if
// current_platform.is_rocm():`, `if torch.version.hip is not None:`, the
// `else` of `if _is_cuda:`) that sets the NVLink flag to a literal True
// whatever the links: the walk takes the target's platform and never enters
// it, but on that platform the flag is forced (LG003). Found by reading the
// gate class: the names that hold the NVLink probe's answer (assigned from
// the probe, or from such a name: `self.full_nvlink = full_nvlink`), and the
// branches that the target's platform flags alone close that assign True to
// one of those names. A branch an env var or a constant decides is no such
// branch: the walk enters it, and the solver sees the forced value.
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
  // The names the probe's answer is copied to, to a fixed point.
  for (bool grew = true; grew;) {
    grew = false;
    for (TSNode n : all) {
      if (!is(n, "assignment")) continue;
      TSNode r = field(n, "right");
      if ((is(r, "identifier") || is(r, "attribute")) && flagNames.count(text(r)) &&
          flagNames.insert(text(field(n, "left"))).second)
        grew = true;
    }
  }
  // The condition's value on the target's platform, read off its shape
  // alone: a platform flag (a name, an attribute, a call), its comparison
  // with None (a flag the target sets false is None there: `torch.version.hip
  // is not None`), `not`, `and`, `or`. Anything else: not known.
  std::function<std::optional<bool>(TSNode)> onTarget = [&](TSNode c) -> std::optional<bool> {
    if (is(c, "parenthesized_expression")) return onTarget(firstNamed(c));
    if (is(c, "not_operator")) {
      auto v = onTarget(field(c, "argument"));
      if (v) return !*v;
      return std::nullopt;
    }
    if (is(c, "boolean_operator")) {
      bool conj = text(ts_node_child(c, 1)) == "and";
      auto l = onTarget(field(c, "left")), r = onTarget(field(c, "right"));
      if ((l && *l != conj) || (r && *r != conj)) return !conj;  // a false side of an and, a true side of an or
      if (l && r) return conj;
      return std::nullopt;
    }
    if (is(c, "comparison_operator")) {
      auto ks = named(c);
      if (ks.size() != 2) return std::nullopt;
      int none = is(ks[0], "none") ? 0 : is(ks[1], "none") ? 1 : -1;
      if (none < 0) return std::nullopt;
      auto v = onTarget(ks[1 - none]);
      if (!v) return std::nullopt;
      // the operator: its anonymous tokens (`is not` is one), blanks squeezed
      std::string op;
      for (uint32_t i = 0; i < ts_node_child_count(c); ++i) {
        TSNode t = ts_node_child(c, i);
        if (ts_node_is_named(t)) continue;
        for (char ch : text(t))
          if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\\') op += ch;
          else if (!op.empty() && op.back() != ' ') op += ' ';
        if (!op.empty() && op.back() != ' ') op += ' ';
      }
      while (!op.empty() && op.back() == ' ') op.pop_back();
      if (op == "is not" || op == "!=") return *v;  // set (not None) exactly when the flag holds
      if (op == "is" || op == "==") return !*v;
      return std::nullopt;
    }
    std::string key;
    if (is(c, "identifier")) key = text(c);
    else if (is(c, "attribute")) key = text(c);
    else if (is(c, "call")) key = text(field(c, "function"));
    else return std::nullopt;
    auto f = spec_.platform_flags.find(key);
    if (f == spec_.platform_flags.end()) f = spec_.platform_flags.find(lastComponent(key));
    if (f == spec_.platform_flags.end()) return std::nullopt;
    return f->second;
  };
  auto forcedIn = [&](TSNode block, const std::string& under) {
    for (TSNode b : named(block)) {
      if (!is(b, "expression_statement")) continue;
      TSNode as = firstNamed(b);
      if (!is(as, "assignment") || !is(field(as, "right"), "true")) continue;
      std::string name = text(field(as, "left"));
      if (!flagNames.count(name)) continue;
      model::GateCheck g;
      g.condition = model::True();
      g.text = "`" + name + " = True` under " + under;
      g.where = loc(as, "platform branch");
      g.where.note = shortText(b);
      gate_.platform_forced.push_back(g);
    }
  };
  for (TSNode n : all) {
    if (!is(n, "if_statement")) continue;
    // The clauses in order: one the target's platform takes closes the rest.
    bool taken = false;
    std::string before;
    auto clause = [&](TSNode cond, TSNode body) {
      auto v = onTarget(cond);
      if (taken || (v && !*v)) forcedIn(body, "`" + shortText(cond) + "`");
      if (v && *v) taken = true;
      before += (before.empty() ? "" : " or ") + shortText(cond);
    };
    clause(field(n, "condition"), field(n, "consequence"));
    for (TSNode k : named(n)) {
      if (is(k, "elif_clause")) clause(field(k, "condition"), field(k, "consequence"));
      else if (is(k, "else_clause") && taken) forcedIn(field(k, "body"), "the `else` of `" + before + "`");
    }
  }
}

}  // namespace layergate::python::detail
