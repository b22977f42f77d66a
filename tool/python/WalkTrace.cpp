// Walker: trace facts: origins of values, native calls, op wrappers (forwarders).
#include "python/Walker.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layergate::python::detail {

// --- trace origins ----------------------------------------------------------

bool Walker::sameHop(const model::Hop& x, const model::Hop& y) {
  return x.hop == y.hop && x.where.file == y.where.file && x.where.line == y.where.line &&
         x.where.col == y.where.col;
}

void Walker::addHops(std::vector<model::Hop>& to, const std::vector<model::Hop>& from) {
  for (const auto& h : from) {
    bool dup = false;
    for (const auto& t : to) dup = dup || sameHop(t, h);
    if (!dup) to.push_back(h);
  }
}

// The value came from a probe (possibly patched), not only from a literal.
bool Walker::hasSource(const Value& v) {
  for (const auto& h : v.origin)
    if (h.hop == "probe" || h.hop == "monkeypatch") return true;
  return false;
}

void Walker::unionOrigin(Value& v, const Value& a, const Value& b) {
  // oldest first: the probe's journey before a literal that overrides it
  bool swap = !hasSource(a) && hasSource(b);
  v.origin = swap ? b.origin : a.origin;
  addHops(v.origin, swap ? a.origin : b.origin);
  v.env_seen = a.env_seen;
  for (const auto& e : b.env_seen)
    if (std::find(v.env_seen.begin(), v.env_seen.end(), e) == v.env_seen.end()) v.env_seen.push_back(e);
}

model::Hop Walker::hop(const std::string& kind, TSNode at) const {
  model::Hop h;
  h.hop = kind;
  h.where = loc(at, "trace");
  h.where.note = shortText(at);
  return h;
}

bool Walker::mentionsEnv(const ExprPtr& e) {
  if (!e) return false;
  for (const auto& r : model::varsOf(e))
    if (!model::envNameOf(r.name).empty()) return true;
  return false;
}

// A hop at an if/elif: located at the statement, described by its condition.
model::Hop Walker::ifHop(const std::string& kind, TSNode at) const {
  model::Hop h = hop(kind, at);
  TSNode c = field(at, "condition");
  if ((is(at, "if_statement") || is(at, "elif_clause")) && !ts_node_is_null(c))
    h.where.note = (is(at, "elif_clause") ? "elif " : "if ") + shortText(c);
  return h;
}

bool Walker::isBoolLiteral(const Value& v) { return v.k == Value::K::Bool && v.e && model::isConst(v.e); }

// Env vars the value depends on (condition and leaves of a merge included).
void Walker::envsOf(const Value& v, std::vector<std::string>& out) {
  auto add = [&](const ExprPtr& e) {
    if (!e) return;
    for (const auto& r : model::varsOf(e)) {
      std::string n = model::envNameOf(r.name);
      if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  };
  if (v.k == Value::K::Merge) {
    add(v.cond);
    envsOf(*v.a, out);
    envsOf(*v.b, out);
  } else if (v.k == Value::K::Bool || v.k == Value::K::Int || v.k == Value::K::Str) {
    add(v.e);
  }
}

// A traced value that now also depends on an env var it did not depend on
// before: the flag is (partly) forced by the environment here.
void Walker::envOverride(Value& v, const std::function<model::Hop()>& at) {
  if (v.origin.empty()) return;
  std::vector<std::string> envs;
  envsOf(v, envs);
  bool fresh = false;
  for (const auto& e : envs)
    if (std::find(v.env_seen.begin(), v.env_seen.end(), e) == v.env_seen.end()) {
      v.env_seen.push_back(e);
      fresh = true;
    }
  if (fresh) addHops(v.origin, {at()});
}

// An assignment (local or attribute) of a traced value.
void Walker::traceStore(Value& v, const std::string& kind, TSNode stmt) {
  if (ts_node_is_null(stmt)) return;
  if (v.origin.empty() && !isBoolLiteral(v)) return;
  envOverride(v, [&] { return hop("env override", stmt); });
  addHops(v.origin, {hop(kind, stmt)});
}

// --- given files: calls, op wrappers, native calls ---------------------------------

bool Walker::recordingResults(const Frame& fr, TSNode call) const {
  return !fr.in_ctor && aux_depth_ == 0 && !collecting_patches_ && gate_.result_calls.size() < 64;
}

bool Walker::recordingCalls(const Frame& fr, TSNode call) const {
  return fr.in_ctor && forwarder_depth_ == 0 && aux_depth_ == 0 && !collecting_patches_ &&
         &modOf(call) == gate_mod_;
}

std::string Walker::opName(const std::string& callee) {
  std::vector<std::string> parts = splitDots(callee);
  while (parts.size() > 1 && (parts.back() == "default" || parts.back() == "__call__")) parts.pop_back();
  return parts.empty() ? callee : parts.back();
}

// The value as a Bool/Int expression for the trace, or null. A flag that is,
// on some path, the answer of code not interpreted (a peer-to-peer check a
// fork returns in place of the NVLink query) is that answer as the opaque
// bool the gate's conditions read: C++ gets the same value the gate tested.
ExprPtr Walker::flagExpr(const Value& v) {
  // The sort of the value's known leaves; unknown leaves take it when bool.
  std::function<std::optional<Sort>(const Value&)> sortOf = [&](const Value& w) -> std::optional<Sort> {
    if ((w.k == Value::K::Bool || w.k == Value::K::Int) && w.e) return w.e->sort;
    if (w.k != Value::K::Merge) return std::nullopt;
    if (auto s = sortOf(*w.a)) return s;
    return sortOf(*w.b);
  };
  auto s = sortOf(v);
  bool opaqueBools = s && *s == Sort::Bool;
  std::function<ExprPtr(const Value&)> build = [&](const Value& w) -> ExprPtr {
    switch (w.k) {
      case Value::K::Bool:
      case Value::K::Int: return w.e;
      case Value::K::Unknown: return opaqueBools ? materialize(w, Sort::Bool) : nullptr;
      case Value::K::Merge: {
        ExprPtr x = build(*w.a), y = build(*w.b);
        if (x && y) {
          if (x->sort != y->sort) return nullptr;
          return x->sort == Sort::Bool ? iteB(w.cond, x, y) : model::Ite(w.cond, x, y);
        }
        auto absent = [](const Value& u) { return u.k == Value::K::Undef || u.k == Value::K::None; };
        if (x && absent(*w.b)) return x;
        if (y && absent(*w.a)) return y;
        return nullptr;
      }
      default: return nullptr;
    }
  };
  return build(v);
}

// A call from the gate class to a function it does not define. Its
// arguments are evaluated on copies: the gate's own semantics (which never
// looked into such calls' arguments) stay as they were.
void Walker::recordNative(TSNode call, TSNode fnnode, const std::string& name, State& st, Frame& fr, Ctx& cx,
                          int wrapper) {
  model::NativeCall nc;
  nc.wrapper = wrapper;
  nc.callee = shortText(fnnode);
  nc.name = name.empty() ? opName(nc.callee) : name;
  nc.reached = model::And(fr.entry, model::And(st.full(), cx.guard));
  nc.where = loc(call, "native call");
  nc.where.note = shortText(call);
  nc.result = shortText(call);  // the name unknown(call) materialises under
  routeNative(fnnode, nc.name, nc.reached, st, fr, cx);
  auto rejects = gate_.rejects;
  int stmts = statements_;
  State sc = st;
  Ctx cc = cx;
  ++tentative_;
  int pos = 0;
  TSNode args = field(call, "arguments");
  for (TSNode k : is(args, "argument_list") ? named(args) : std::vector<TSNode>{}) {
    model::CallArg ca;
    ca.where = loc(k, "argument");
    Value v;
    if (is(k, "keyword_argument")) {
      ca.keyword = text(field(k, "name"));
      ca.text = shortText(field(k, "value"));
      v = eval(field(k, "value"), sc, fr, cc);
    } else if (is(k, "list_splat") || is(k, "dictionary_splat")) {
      if (is(k, "list_splat")) ca.position = pos++;
      else ca.keyword = "**";
      ca.text = shortText(k);
    } else {
      ca.position = pos++;
      ca.text = shortText(k);
      v = eval(k, sc, fr, cc);
    }
    ca.value = flagExpr(v);
    ca.length = lengthOf(v);
    if (ca.value) {
      ca.origin = v.origin;
      Value w = v;
      envOverride(w, [&] { return hop("env override", k); });
      ca.origin = w.origin;
    }
    nc.args.push_back(std::move(ca));
  }
  --tentative_;
  gate_.rejects = std::move(rejects);
  statements_ = stmts;
  if (!fr.in_ctor) {
    // A result call: once per call site and path (the link stage needs its
    // arguments' values, which differ only by the path's bindings).
    gate_.result_calls.push_back(std::move(nc));
    return;
  }
  addNative(std::move(nc), call);
}

void Walker::addNative(model::NativeCall nc, TSNode call) {
  auto key = std::make_pair(static_cast<const void*>(call.tree), ts_node_start_byte(call));
  auto it = native_index_.find(key);
  if (it == native_index_.end()) {
    native_index_[key] = gate_.native_calls.size();
    gate_.native_calls.push_back(std::move(nc));
    return;
  }
  // reached again (a helper called twice, the deferred method run per exit)
  model::NativeCall& old = gate_.native_calls[it->second];
  for (std::size_t i = 0; i < old.args.size() && i < nc.args.size(); ++i) {
    auto& o = old.args[i];
    auto& n = nc.args[i];
    if (o.value && n.value && o.value->sort == n.value->sort && o.value != n.value)
      o.value = o.value->sort == Sort::Bool ? iteB(nc.reached, n.value, o.value) : model::Ite(nc.reached, n.value, o.value);
    else if (!o.value)
      o.value = n.value;
    addHops(o.origin, n.origin);
  }
  old.reached = model::Or(old.reached, nc.reached);
}

// --- op wrappers ---------------------------------------------------------------------

bool Walker::externalCallee(TSNode f, const std::vector<Param>& params, Module& m, int* reached) {
  if (reached) *reached = -1;
  auto isParam = [&](const std::string& n) {
    for (const auto& p : params)
      if (p.name == n) return true;
    return false;
  };
  Module* saved = cur_;
  cur_ = &m;
  bool ext = true;
  std::string base = baseName(f);
  std::string last = is(f, "identifier") ? lastComponent(resolveAlias(text(f))) : text(field(f, "attribute"));
  std::string d = is(f, "identifier") ? resolveAlias(text(f)) : dotted(f);
  if (base.empty() || isParam(base) || base == "self" || base == "cls") ext = false;
  else if (is(f, "identifier") && (notAnOp(base) || (m.funcs.count(base) && !m.aliases.count(base)))) ext = false;
  else if (spec_.probes.count(last) || spec_.platform_flags.count(last) ||
           std::find(spec_.bool_env_helpers.begin(), spec_.bool_env_helpers.end(), last) !=
               spec_.bool_env_helpers.end())
    ext = false;
  else if (d == "os.getenv" || d == "os.environ.get" || isLoggingObject(base))
    ext = false;
  else if (m.aliases.count(base)) {
    // A function of another file is a native call only when it is itself an
    // op wrapper (a chain: SGLang's ops module over sgl_kernel.allreduce).
    Resolved r = resolveDotted(d, &m);
    if (r.fn && !forwarder_defs_.count(r.fn->node.id)) ext = false;
    if (r.fn && ext && reached) {
      auto it = forwarder_index_.find(r.fn->node.id);
      if (it != forwarder_index_.end()) *reached = it->second;
    }
  }
  cur_ = saved;
  return ext;
}

void Walker::findForwarders(Module& m) {
  std::vector<std::pair<std::string, FuncInfo>> fs(m.funcs.begin(), m.funcs.end());
  std::sort(fs.begin(), fs.end(),
            [](const auto& x, const auto& y) { return ts_node_start_byte(x.second.node) < ts_node_start_byte(y.second.node); });
  for (const auto& [key, fi] : fs) {
    if (fi.is_method && !fi.is_static) continue;
    if (forwarder_defs_.count(fi.node.id)) continue;  // found in an earlier pass
    if (&m == gate_mod_ && key.rfind(class_name_ + ".", 0) == 0) continue;
    auto params = parseParams(field(fi.node, "parameters"));
    model::Forwarder best;
    int best_score = 0;
    bool splat_note = false;
    std::vector<TSNode> stack{field(fi.node, "body")};
    std::vector<TSNode> calls;
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      if (is(n, "function_definition") || is(n, "lambda") || is(n, "class_definition") ||
          is(n, "decorated_definition"))
        continue;
      if (is(n, "call")) calls.push_back(n);
      for (TSNode k : named(n)) stack.push_back(k);
    }
    std::sort(calls.begin(), calls.end(),
              [](TSNode x, TSNode y) { return ts_node_start_byte(x) < ts_node_start_byte(y); });
    for (TSNode c : calls) {
      TSNode f = field(c, "function");
      if (!is(f, "identifier") && !is(f, "attribute")) continue;
      TSNode args = field(c, "arguments");
      if (!is(args, "argument_list")) continue;
      int reached = -1;
      if (!externalCallee(f, params, m, &reached)) continue;
      model::Forwarder fw;
      fw.call.wrapper = reached;
      fw.call.callee = shortText(f);
      fw.call.name = opName(fw.call.callee);
      fw.call.where = loc(c, "wrapper call");
      fw.call.where.note = shortText(c);
      int score = 0, pos = 0;
      bool splat = false;
      for (TSNode k : named(args)) {
        model::CallArg ca;
        ca.where = loc(k, "argument");
        TSNode v = k;
        if (is(k, "keyword_argument")) {
          ca.keyword = text(field(k, "name"));
          v = field(k, "value");
        } else if (is(k, "dictionary_splat")) {
          ca.keyword = "**";
        } else {
          ca.position = pos++;
        }
        ca.text = shortText(v);
        // a literal passed on in place of a parameter: the value the next layer gets
        if (is(v, "true")) ca.value = model::True();
        else if (is(v, "false")) ca.value = model::False();
        int idx = -1;
        if (is(v, "identifier"))
          for (std::size_t i = 0; i < params.size(); ++i)
            if (params[i].name == text(v) && !params[i].star && !params[i].kwstar) idx = static_cast<int>(i);
        if (is(v, "list_splat") || is(v, "dictionary_splat")) {
          std::string inner = text(firstNamed(v));
          for (const auto& p : params)
            if (p.name == inner) splat = true;
        }
        if (idx >= 0) ++score;
        fw.call.args.push_back(ca);
        fw.arg_param.push_back(idx);
      }
      if (score == 0 && !splat) continue;
      if (score > best_score || (best_score == 0 && best.call.callee.empty())) {
        best = fw;
        best_score = score;
        splat_note = splat;
      }
    }
    if (best.call.callee.empty()) continue;
    best.name = text(field(fi.node, "name"));
    for (const auto& p : params) {
      best.params.push_back(p.name);
      best.param_locs.push_back(loc(p.node, "wrapper parameter"));
    }
    best.where = loc(fi.node, "wrapper");
    best.where.note = "def " + best.name;
    if (splat_note)
      note("op wrapper " + best.name + " (" + where(fi.node) + ") passes *args/**kwargs on to " + best.call.callee +
           "; argument positions through it are not followed");
    forwarder_index_[fi.node.id] = static_cast<int>(gate_.forwarders.size());
    gate_.forwarders.push_back(best);
    forwarder_defs_.insert(fi.node.id);
  }
}

}  // namespace layergate::python::detail
