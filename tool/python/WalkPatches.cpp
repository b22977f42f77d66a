// Walker: monkeypatched probes: finding patch sites, recording and applying patches.
#include "python/Walker.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "model/Errors.h"

namespace layergate::python::detail {

// --- monkeypatched probes ------------------------------------------------------------

bool Walker::isPatchSite(TSNode n) const {
  if (is(n, "assignment")) {
    TSNode l = field(n, "left");
    return is(l, "attribute") && spec_.probes.count(text(field(l, "attribute")));
  }
  if (is(n, "call") && text(field(n, "function")) == "setattr") {
    auto ks = named(field(n, "arguments"));
    if (ks.size() >= 3 && is(ks[1], "string")) {
      std::string s = text(ks[1]);
      if (s.size() >= 2) return spec_.probes.count(s.substr(1, s.size() - 2)) > 0;
    }
  }
  return false;
}

bool Walker::hasPatchSite(TSNode root) const {
  std::vector<TSNode> stack{root};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (isPatchSite(n)) return true;
    for (TSNode k : named(n)) stack.push_back(k);
  }
  return false;
}

bool Walker::looksLikeClass(const std::string& objText) {
  std::string last = lastComponent(objText);
  return !last.empty() && std::isupper(static_cast<unsigned char>(last[0]));
}

void Walker::addPatch(const std::string& probe, TSNode value, TSNode target, const std::string& obj,
                      const ExprPtr& cond, TSNode at) {
  for (const auto& p : patches_)
    if (p.id == target.id) return;
  Patch p;
  p.probe = probe;
  p.value = value;
  p.bind_self = looksLikeClass(obj);
  p.cond = cond;
  p.mod = cur_;
  p.where = loc(at, "monkeypatch");
  p.where.note = shortText(at);
  p.id = target.id;
  patches_.push_back(p);
}

void Walker::notePatchTarget(TSNode t, TSNode rhs, State& st, Frame& fr) {
  if (!is(t, "attribute")) return;
  std::string attr = text(field(t, "attribute"));
  if (!spec_.probes.count(attr)) return;
  TSNode stmt = ts_node_parent(t);
  addPatch(attr, rhs, t, text(field(t, "object")), model::And(fr.entry, st.full()), is(stmt, "assignment") ? stmt : t);
}

void Walker::notePatchSetattr(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  if (a.pos.size() < 3) return;
  Value name = eval(a.pos[1], st, fr, cx);
  if (name.k != Value::K::Str || name.e->op != Op::StrConst || !spec_.probes.count(name.e->s)) return;
  addPatch(name.e->s, a.pos[2], call, text(a.pos[0]), model::And(fr.entry, model::And(st.full(), cx.guard)), call);
}

// Functions that patch a probe (a plugin's register()): walked on their own,
// assuming they run (the framework calls them).
void Walker::scanPatchFunctions(Module& m) {
  std::vector<std::pair<std::string, FuncInfo>> fs(m.funcs.begin(), m.funcs.end());
  std::sort(fs.begin(), fs.end(),
            [](const auto& x, const auto& y) { return ts_node_start_byte(x.second.node) < ts_node_start_byte(y.second.node); });
  for (const auto& [name, fi] : fs) {
    if (&m == gate_mod_ && name.rfind(class_name_ + ".", 0) == 0) continue;
    if (!hasPatchSite(field(fi.node, "body"))) continue;
    ModuleScope scope(*this, &m);
    ++aux_depth_;
    ++tentative_;
    bool collecting = collecting_patches_;
    collecting_patches_ = true;
    auto stack = call_stack_.size();
    try {
      State st;
      for (const auto& p : parseParams(field(fi.node, "parameters")))
        st.locals[p.name] = p.has_default ? defaultValue(p) : paramUnknown(p.name, fi.node);
      Frame fr{Frame::Kind::Helper};
      call_stack_.push_back(fi.node.id);
      walkBlock(field(fi.node, "body"), st, fr);
    } catch (const AuxAbort&) {
    } catch (const InputError&) {
    }
    call_stack_.resize(stack);
    collecting_patches_ = collecting;
    --tentative_;
    --aux_depth_;
  }
}

// The patched probe's answer at a call, over the original one.
Value Walker::applyPatches(const std::string& probe, Value orig, TSNode call, const Args& a, State& st, Frame& fr,
                           Ctx& cx) {
  bool any = false;
  for (const auto& p : patches_) any = any || p.probe == probe;
  if (!any || a.splat) return orig;
  std::vector<Value> pos;
  for (TSNode k : a.pos) pos.push_back(eval(k, st, fr, cx));
  std::map<std::string, Value> kw;
  for (auto& [k, v] : a.kw) kw[k] = eval(v, st, fr, cx);
  for (const auto& p : patches_) {
    if (p.probe != probe) continue;
    if (std::find(call_stack_.begin(), call_stack_.end(), p.id) != call_stack_.end()) continue;
    call_stack_.push_back(p.id);
    Value pv = evalPatch(p, call, pos, kw, st, fr, cx);
    call_stack_.pop_back();
    std::vector<model::Hop> o{hop("probe", call)};
    model::Hop mp;
    mp.hop = "monkeypatch";
    mp.where = p.where;
    mp.where.role = "trace";
    o.push_back(mp);
    addHops(o, pv.origin);
    pv.origin = o;
    Value m = merge(p.cond, pv, orig);
    if (!model::isTrue(p.cond)) {
      m.origin = pv.origin;
      addHops(m.origin, orig.origin);
    }
    orig = m;
  }
  return orig;
}

Value Walker::evalPatch(const Patch& p, TSNode call, const std::vector<Value>& pos,
                        const std::map<std::string, Value>& kw, State& st, Frame& fr, Ctx& cx) {
  TSNode r = p.value;
  bool bind_self = p.bind_self;
  for (;;) {
    if (is(r, "parenthesized_expression")) {
      r = firstNamed(r);
      continue;
    }
    if (is(r, "call")) {
      std::string f = lastComponent(text(field(r, "function")));
      auto ks = named(field(r, "arguments"));
      if ((f == "staticmethod" || f == "classmethod") && !ks.empty()) {
        bind_self = false;
        r = ks[0];
        continue;
      }
    }
    break;
  }
  ModuleScope scope(*this, p.mod);
  if (is(r, "lambda")) {
    State ls;
    ls.attrs = st.attrs;
    bindParams(parseParams(field(r, "parameters")), bind_self, vObject("module", "patched object"), pos, kw, call, ls);
    Frame lf{Frame::Kind::Helper};
    lf.entry = model::And(fr.entry, model::And(st.full(), cx.guard));
    lf.in_ctor = fr.in_ctor;
    return eval(field(r, "body"), ls, lf, cx);
  }
  Resolved res;
  if (is(r, "identifier")) {
    std::string name = text(r);
    auto f = cur_->funcs.find(name);
    if (f != cur_->funcs.end() && !cur_->aliases.count(name)) res = {cur_, &f->second};
    else if (cur_->aliases.count(name)) res = resolveDotted(resolveAlias(name), cur_);
  } else if (is(r, "attribute")) {
    std::string base = baseName(r);
    if (cur_->aliases.count(base)) res = resolveDotted(dotted(r), cur_);
  }
  if (res.fn) {
    FuncInfo fi = *res.fn;
    if (bind_self && !fi.is_static) fi.is_method = true;
    if (!bind_self && fi.is_method && !fi.is_static) fi.is_static = true;  // staticmethod(f) of a method
    return inlineBody(fi, text(field(fi.node, "name")), bind_self ? vObject("module", "patched object") : Value{},
                      call, pos, kw, st, fr, cx, false);
  }
  Value u = unknown(r);
  u.text = "patched " + p.probe + " (" + shortText(r) + ")";
  return u;
}

}  // namespace layergate::python::detail
