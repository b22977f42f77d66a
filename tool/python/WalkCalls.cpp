// Walker: calls: arguments, env reads, builtins, probes, inlining functions of the given files.
#include "python/Walker.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace layergate::python::detail {

// --- calls ------------------------------------------------------------------

Walker::Args Walker::parseArgs(TSNode args) {
  Args a;
  if (!is(args, "argument_list")) {
    a.splat = true;  // generator argument
    return a;
  }
  for (TSNode k : named(args)) {
    if (is(k, "keyword_argument")) a.kw.push_back({text(field(k, "name")), field(k, "value")});
    else if (is(k, "list_splat") || is(k, "dictionary_splat")) a.splat = true;
    else a.pos.push_back(k);
  }
  return a;
}

TSNode Walker::argAt(const Args& a, std::size_t i, const char* kw) {
  if (i < a.pos.size()) return a.pos[i];
  for (auto& [k, v] : a.kw)
    if (k == kw) return v;
  return TSNode{};
}

Value Walker::envGet(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  if (a.pos.empty()) return unknown(call);
  Value key = eval(a.pos[0], st, fr, cx);
  if (key.k != Value::K::Str || key.e->op != Op::StrConst) return unknown(call);
  const std::string& name = key.e->s;
  envRead(name, call);
  TSNode dn = argAt(a, 1, "default");
  Value raw = vStr(model::EnvValue(name));
  ExprPtr set = model::EnvIsSet(name);
  if (ts_node_is_null(dn)) return merge(set, raw, vNone());
  Value d = eval(dn, st, fr, cx);
  if (d.k == Value::K::Str) return vStr(model::Ite(set, raw.e, d.e));
  return merge(set, raw, d);
}

Value Walker::envBool(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  if (a.pos.empty()) return unknown(call);
  Value key = eval(a.pos[0], st, fr, cx);
  if (key.k != Value::K::Str || key.e->op != Op::StrConst) return unknown(call);
  const std::string& name = key.e->s;
  envRead(name, call);
  ExprPtr dflt = model::False();
  TSNode dn = argAt(a, 1, "default");
  if (!ts_node_is_null(dn)) {
    Value d = eval(dn, st, fr, cx);
    if (d.k == Value::K::Str && d.e->op == Op::StrConst) {
      std::string l = lower(d.e->s);
      dflt = model::BoolC(l == "true" || l == "1");
    } else {
      dflt = truthy(d);
    }
  }
  return vBool(iteB(model::EnvIsSet(name), envTruthyValue(name), dflt));
}

Value Walker::builtin(const std::string& f, TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx, bool& handled) {
  handled = true;
  if ((f == "all" || f == "any") && a.pos.size() == 1 && !a.splat) {
    Value v = eval(a.pos[0], st, fr, cx);
    if (v.k == Value::K::Bool) return v;
    if (v.k == Value::K::List) {
      std::vector<ExprPtr> xs;
      for (const auto& it : v.items) xs.push_back(truthy(it));
      return vBool(f == "all" ? model::AndAll(xs) : model::OrAll(xs));
    }
    return unknown(call);
  }
  if (f == "len" && a.pos.size() == 1) {
    Value v = eval(a.pos[0], st, fr, cx);
    if (ExprPtr n = lengthOf(v)) return vInt(n);
    if (v.k == Value::K::Str && v.e->op == Op::StrConst) return vInt(model::IntC(static_cast<int64_t>(v.e->s.size())));
    return unknown(call);
  }
  if (f == "int" && a.pos.size() == 1) {
    // int(None) raises TypeError: those paths die, the others convert
    ExprPtr none;
    Value x = withoutNone(eval(a.pos[0], st, fr, cx), none);
    cx.raises = model::Or(cx.raises, model::And(cx.guard, none));
    if (x.k == Value::K::Undef) return unknown(call);
    return toIntAt(x, call);
  }
  // range() with constant bounds (`ws in range(2, 9)`, `list(range(2, 17))`): its ints.
  if (f == "range" && !a.pos.empty() && a.pos.size() <= 3 && a.kw.empty() && !a.splat) {
    std::vector<std::int64_t> k;
    for (TSNode p : a.pos) {
      Value v = eval(p, st, fr, cx);
      if (v.k != Value::K::Int || v.e->op != Op::IntConst) return unknown(call);
      k.push_back(v.e->i);
    }
    std::int64_t lo = k.size() == 1 ? 0 : k[0], hi = k.size() == 1 ? k[0] : k[1], step = k.size() == 3 ? k[2] : 1;
    if (step == 0 || (hi - lo) / step > 4096) return unknown(call);
    std::vector<Value> xs;
    for (std::int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) xs.push_back(vInt(model::IntC(i)));
    return vList(std::move(xs));
  }
  if ((f == "list" || f == "tuple") && a.pos.size() == 1 && a.kw.empty() && !a.splat) {
    Value v = eval(a.pos[0], st, fr, cx);
    if (v.k == Value::K::List) return v;
    return unknown(call);
  }
  if (f == "bool") {
    if (a.pos.empty()) return vBool(model::False());
    Value x = eval(a.pos[0], st, fr, cx);
    Value r = vBool(truthy(x));
    r.origin = x.origin;
    r.env_seen = x.env_seen;
    return r;
  }
  if (f == "str" && a.pos.size() == 1) {
    Value v = eval(a.pos[0], st, fr, cx);
    if (v.k == Value::K::Str) return v;
    if (v.k == Value::K::Int && v.e->op == Op::IntConst) return vStr(model::StrC(std::to_string(v.e->i)));
    if (v.k == Value::K::Bool && model::isConst(v.e)) return vStr(model::StrC(v.e->b ? "True" : "False"));
    return unknown(call);
  }
  if ((f == "min" || f == "max") && a.pos.size() >= 2 && a.kw.empty() && !a.splat) {
    ExprPtr acc;
    for (TSNode k : a.pos) {
      ExprPtr q = asInt(eval(k, st, fr, cx));
      if (!q) return unknown(call);
      acc = acc ? model::Ite(model::Cmp(f == "min" ? Op::Le : Op::Ge, acc, q), acc, q) : q;
    }
    return vInt(acc);
  }
  handled = false;
  return Value{};
}

Value Walker::toIntAt(const Value& v, TSNode call) {
  if (v.k == Value::K::Unknown) return unknown(call);
  return toInt(v, call);
}

// Python builtins and logging: never candidate native ops.
bool Walker::notAnOp(const std::string& name) {
  static const std::set<std::string> names{
      "isinstance", "issubclass", "range", "list", "dict", "set", "tuple", "frozenset", "len", "print",
      "getattr", "hasattr", "setattr", "delattr", "super", "enumerate", "zip", "sorted", "reversed", "map",
      "filter", "sum", "abs", "round", "float", "type", "id", "hash", "iter", "next", "repr", "format", "open",
      "object", "min", "max", "any", "all", "int", "bool", "str", "bytes", "callable", "vars", "divmod", "pow",
      "staticmethod", "classmethod", "property", "NotImplementedError", "ValueError", "RuntimeError",
      "AssertionError", "TypeError", "KeyError", "Exception"};
  return names.count(name) > 0;
}

bool Walker::isLoggingObject(const std::string& base) {
  std::string b = lower(base);
  return b == "logger" || b == "logging" || b == "log" || b == "_logger" || b == "warnings" ||
         b.find("logger") != std::string::npos;
}

// The leftmost identifier of a.b.c (empty when it is not a plain chain).
std::string Walker::baseName(TSNode n) const {
  while (is(n, "attribute")) n = field(n, "object");
  return is(n, "identifier") ? text(n) : "";
}

Value Walker::evalCall(TSNode n, State& st, Frame& fr, Ctx& cx) {
  Args a = parseArgs(field(n, "arguments"));
  if (!call_out_) return evalCallInner(n, a, st, fr, cx);
  // Looking for a call that hands a value down: it may sit in the arguments
  // of a call the walker does not follow (torch.from_dlpack(op(...))).
  TSNode fn = field(n, "function");
  std::string callee = is(fn, "identifier") ? text(fn) : is(fn, "attribute") ? text(field(fn, "attribute")) : "";
  if (callee == call_out_->call) captureCallOutput(n, a, st, fr, cx);
  Value v = evalCallInner(n, a, st, fr, cx);
  if (v.k == Value::K::Unknown) {
    Ctx scratch = cx;
    for (TSNode k : a.pos) eval(k, st, fr, scratch);
    for (const auto& [kw, k] : a.kw) eval(k, st, fr, scratch);
  }
  return v;
}

Value Walker::evalCallInner(TSNode n, const Args& a, State& st, Frame& fr, Ctx& cx) {
  TSNode fn = field(n, "function");
  // A call whose value the target declares (a probe of the GPU generation).
  if (!spec_.values.empty()) {
    std::string callee = is(fn, "identifier") ? text(fn) : is(fn, "attribute") ? text(field(fn, "attribute")) : "";
    if (!callee.empty())
      if (auto dv = declaredValue(callee + "()", n)) return *dv;
  }
  if (is(fn, "identifier")) {
    std::string name = text(fn);
    bool local = st.locals.count(name) > 0 && fr.kind != Frame::Kind::Module;
    if (local) {
      const Value& lf = st.locals.at(name);
      if (lf.k == Value::K::Object && lf.tag == "localfn" && !lf.name.empty()) {
        std::size_t i = std::stoul(lf.name);
        if (i < local_fns_.size()) return callFunction(local_fns_[i], name, Value{}, n, a, st, fr, cx);
      }
    }
    // a probe captured before it was patched: `orig = platform.is_fully_connected`
    {
      auto li = st.locals.find(name);
      const Value* held = li != st.locals.end() ? &li->second : nullptr;
      if (!held) {
        auto g = cur_->globals.find(name);
        if (g != cur_->globals.end()) held = &g->second;
      }
      if (held && held->k == Value::K::Object && held->tag == "probefn") {
        auto p = spec_.probes.find(held->text);
        if (p != spec_.probes.end()) return probeAt(p->second, n);
      }
    }
    std::string origin = resolveAlias(name);
    std::string last = lastComponent(origin);
    if (!local) {
      if (builder_ && name == class_name_ && cur_ == gate_mod_ && !cur_->funcs.count(name))
        return construct(n, a, st, fr, cx);
      if (name == "setattr" && collecting_patches_) notePatchSetattr(n, a, st, fr, cx);
      auto mf = cur_->funcs.find(name);
      if (mf != cur_->funcs.end() && !cur_->aliases.count(name))
        return callGiven(mf->second, name, Value{}, n, fn, a, st, fr, cx);
      // a dataclass / NamedTuple of a given file: a record
      if (auto c = classRef(cur_->aliases.count(name) ? origin : name, cur_)) return constructRecord(*c, n, a, st, fr, cx);
      if (origin == "dataclasses.replace" && !a.pos.empty())
        return replaceRecord(eval(a.pos[0], st, fr, cx), a, 1, n, st, fr, cx);
      bool handled = false;
      if (!cur_->aliases.count(name)) {
        Value b = builtin(name, n, a, st, fr, cx, handled);
        if (handled) return b;
      }
      if (origin == "os.getenv" || (name == "getenv" && !cur_->aliases.count(name)))
        return envGet(n, a, st, fr, cx);
      if (std::find(spec_.bool_env_helpers.begin(), spec_.bool_env_helpers.end(), last) !=
          spec_.bool_env_helpers.end())
        return envBool(n, a, st, fr, cx);
      auto pf = spec_.platform_flags.find(last);
      if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
      // a function of another given file, imported by name
      if (cur_->aliases.count(name)) {
        Resolved r = resolveDotted(origin, cur_);
        if (r.fn) return callGiven(*r.fn, last, Value{}, n, fn, a, st, fr, cx);
      }
      auto p = spec_.probes.find(last);
      if (p != spec_.probes.end()) return applyPatches(last, probeAt(p->second, n), n, a, st, fr, cx);
      if (!notAnOp(name) && (recordingCalls(fr, n) || recordingResults(fr, n))) recordNative(n, fn, "", st, fr, cx);
    }
    return unknown(n);
  }
  if (is(fn, "attribute")) {
    TSNode obj = field(fn, "object");
    std::string attr = text(field(fn, "attribute"));
    // envs.X.get()
    if (attr == "get" && is(obj, "attribute") && isEnvModule(field(obj, "object"), st))
      return envModuleRead(text(field(obj, "attribute")), n);
    std::string d = dotted(fn);
    if (d == "os.getenv" || d == "os.environ.get") return envGet(n, a, st, fr, cx);
    bool special = spec_.platform_flags.count(attr) ||
                   std::find(spec_.bool_env_helpers.begin(), spec_.bool_env_helpers.end(), attr) !=
                       spec_.bool_env_helpers.end();
    std::string base = baseName(fn);
    if (!special && !base.empty() && cur_->aliases.count(base) &&
        (fr.kind == Frame::Kind::Module || !st.locals.count(base))) {
      // mod.f(...) where mod is (or leads to) one of the given files
      Resolved r = resolveDotted(d, cur_);
      if (r.fn) return callGiven(*r.fn, attr, Value{}, n, fn, a, st, fr, cx);
    }
    if (d == "dataclasses.replace" && !a.pos.empty()) return replaceRecord(eval(a.pos[0], st, fr, cx), a, 1, n, st, fr, cx);
    Value o = eval(obj, st, fr, cx);
    if (o.k == Value::K::Object && o.tag == "environ" && attr == "get") return envGet(n, a, st, fr, cx);
    if (attr == "_replace" && ((o.k == Value::K::Object && o.tag == "record") || o.k == Value::K::Merge))
      return replaceRecord(o, a, 0, n, st, fr, cx);
    if (o.k == Value::K::Object && o.tag == "module")
      if (auto c = classRef(o.text + "." + attr, cur_)) return constructRecord(*c, n, a, st, fr, cx);
    if (o.k == Value::K::Object && o.tag == "dict" && attr == "get" && !a.pos.empty() && a.pos.size() <= 2 &&
        a.kw.empty() && !a.splat) {
      Value key = eval(a.pos[0], st, fr, cx);
      Value dflt = a.pos.size() == 2 ? eval(a.pos[1], st, fr, cx) : vNone();
      return dictLookup(o, key, &dflt, n, cx);
    }
    // a method of a record's or an Enum member's class
    if (auto mv = memberCall(o, attr, false, n, a, st, fr, cx)) return *mv;
    if (o.k == Value::K::Object && (o.tag == "self" || o.tag == "class")) {
      auto m = methods_.find(attr);
      if (m != methods_.end()) {
        Value self = o;
        if (m->second.is_static) self = Value{};
        if (m->second.is_classmethod) self = vObject("class", class_name_);
        Value v = callFunction(m->second, attr, self, n, a, st, fr, cx);
        if (spec_.probes.count(attr)) v = applyPatches(attr, v, n, a, st, fr, cx);
        return v;
      }
    }
    if (o.k == Value::K::Object && o.tag == "tensor") {
      if (attr == "numel" || attr == "element_size") {
        Value u = unknown(n);
        u.tag = attr == "numel" ? "numel" : "elemsize";
        u.name = o.text;
        u.text = shortText(n);
        return u;
      }
      return unknown(n);
    }
    if (attr == "lower" || attr == "upper" || attr == "strip") {
      if (o.k == Value::K::Str || o.k == Value::K::Merge || o.k == Value::K::None)
        return applyStrMethod(o, attr, n);
    }
    if (std::find(spec_.bool_env_helpers.begin(), spec_.bool_env_helpers.end(), attr) !=
        spec_.bool_env_helpers.end())
      return envBool(n, a, st, fr, cx);
    auto p = spec_.probes.find(attr);
    if (p != spec_.probes.end()) return applyPatches(attr, probeAt(p->second, n), n, a, st, fr, cx);
    auto pf = spec_.platform_flags.find(attr);
    if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
    if (!isLoggingObject(base) && !(o.k == Value::K::Object && o.tag == "environ") &&
        (recordingCalls(fr, n) || recordingResults(fr, n)))
      recordNative(n, fn, "", st, fr, cx);
    return unknown(n);
  }
  return unknown(n);
}

Value Walker::probeValue(const std::string& probe) {
  ExprPtr v = probeVar(probe);
  return v->sort == Sort::Int ? vInt(v) : vBool(v);
}

// The probe's value at a call: its variable, with the call as first hop.
Value Walker::probeAt(const std::string& probe, TSNode call) {
  Value v = probeValue(probe);
  v.origin.push_back(hop("probe", call));
  return platformProbe(v, call);
}

// --- given files: calls, op wrappers, native calls ---------------------------------

// A call to a function defined in one of the given files.
Value Walker::callGiven(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, TSNode fnnode,
                        const Args& a, State& st, Frame& fr, Ctx& cx) {
  bool fwd = forwarder_defs_.count(fi.node.id) > 0;
  if (fwd && recordingCalls(fr, call)) {
    scopeToDefinition(fi, fname, call, model::And(fr.entry, model::And(st.full(), cx.guard)));
    auto it = forwarder_index_.find(fi.node.id);
    recordNative(call, fnnode, fname, st, fr, cx, it == forwarder_index_.end() ? -1 : it->second);
  }
  if (fwd) ++forwarder_depth_;
  Value v = callFunction(fi, fname, self, call, a, st, fr, cx);
  if (fwd) --forwarder_depth_;
  if (v.k == Value::K::Unknown) {
    // not followed, but its def says what it returns: `-> Heuristic`
    TSNode rt = field(fi.node, "return_type");
    if (is(rt, "type")) rt = firstNamed(rt);
    if (auto r = typedUnknown(rt, fi.mod, call, shortText(call))) {
      note("the result of " + shortText(call) + " at " + where(call) + " is taken as a " + r->text +
           " with unknown fields (its def's annotation)");
      v = *r;
    }
  }
  if (spec_.probes.count(fname)) v = applyPatches(fname, v, call, a, st, fr, cx);
  return v;
}

// The op module defines this wrapper only under module-level conditions the
// target leaves open (`if use_vllm_ops: def init_custom_ar(...) -> vLLM's op`
// / `else: ... -> ours`). On a path where the gate calls it while they fail,
// the name is another definition, whose C++ is not the dispatch checked here:
// those configurations are left out of the check (Gate::scope: path ->
// conditions) and a note says so, rather than being compared with a dispatch
// they never reach.
void Walker::scopeToDefinition(const FuncInfo& fi, const std::string& fname, TSNode call, const ExprPtr& path) {
  if (fi.guards.empty()) return;
  ExprPtr in = model::True();
  std::string conds;
  {
    ModuleScope scope(*this, fi.mod);
    State s;
    Frame f{Frame::Kind::Module};
    for (const auto& [cond, positive] : fi.guards) {
      Ctx c;
      ExprPtr e = truthy(eval(cond, s, f, c));
      in = model::And(in, positive ? e : model::Not(e));
      // what fails the guard: a taken-when-true clause false, an else's earlier clause true
      conds += std::string(conds.empty() ? "" : " or ") + "`" + shortText(cond) + "` is " +
               (positive ? "false" : "true");
    }
  }
  if (model::isTrue(in)) return;
  // Every path that reaches the call narrows the scope; the note is said once per call.
  gate_.scope = model::And(gate_.scope, model::Or(model::Not(path), in));
  auto seen = scoped_calls_.find(call.id);
  if (seen != scoped_calls_.end()) {
    auto& u = gate_.unchecked[seen->second];
    u.condition = model::Or(u.condition, model::And(path, model::Not(in)));
    return;
  }
  scoped_calls_[call.id] = gate_.unchecked.size();
  gate_.unchecked.push_back(
      {model::And(path, model::Not(in)),
       "not checked: configurations that reach the call of " + fname + " at " + where(call) + " where " + conds +
           " (" + where(fi.guards.back().first) + "): " + fname +
           " is then another definition, whose C++ is not this dispatch",
       loc(call, "unchecked call")});
}

std::vector<Param> Walker::parseParams(TSNode params) {
  std::vector<Param> out;
  bool kw_only = false;
  for (TSNode k : named(params)) {
    Param p;
    p.kw_only = kw_only;
    p.node = k;
    if (is(k, "identifier")) p.name = text(k);
    else if (is(k, "typed_parameter")) {
      TSNode id = firstNamed(k);
      if (is(id, "list_splat_pattern")) p.star = true, kw_only = true, p.name = text(firstNamed(id));
      else if (is(id, "dictionary_splat_pattern")) p.kwstar = true, p.name = text(firstNamed(id));
      else p.name = text(id);
    } else if (is(k, "default_parameter") || is(k, "typed_default_parameter")) {
      p.name = text(field(k, "name"));
      p.def = field(k, "value");
      p.has_default = true;
    } else if (is(k, "list_splat_pattern")) {
      p.star = true, kw_only = true, p.name = text(firstNamed(k));
    } else if (is(k, "dictionary_splat_pattern")) {
      p.kwstar = true, p.name = text(firstNamed(k));
    } else if (is(k, "keyword_separator")) {
      kw_only = true;
      continue;
    } else {
      continue;  // positional separator
    }
    out.push_back(p);
  }
  return out;
}

Value Walker::defaultValue(const Param& p) {
  State s;
  Frame f{Frame::Kind::Helper};
  Ctx c;
  return eval(p.def, s, f, c);
}

Value Walker::paramUnknown(const std::string& name, TSNode at) {
  // A parameter of the gate's entry named as one of the configuration
  // quantities its probes give (world_size, rank): the caller hands it that
  // quantity (a constructor or factory parameter is how the world size
  // reaches a gate built by its caller), so it is that variable, never an
  // uninterpreted term (quantified over, it would decouple the gate's world
  // size from the dispatch's).
  for (const auto& [probe, var] : spec_.probes)
    if (var == name) {
      Value v = probeValue(var);
      v.origin.push_back(hop("parameter", at));
      return v;
    }
  Value u;
  u.k = Value::K::Unknown;
  u.name = "param:" + name;
  u.text = "parameter " + name;
  u.loc = loc(at);
  return u;
}

// Bind call arguments to a function's parameters in a fresh state.
void Walker::bindParams(const std::vector<Param>& params, bool is_method, const Value& self,
                        const std::vector<Value>& pos, std::map<std::string, Value> kw, TSNode call, State& cs) {
  std::size_t pi = 0, ai = 0;
  if (is_method) {
    if (!params.empty()) cs.locals[params[0].name] = self.k == Value::K::Undef ? Value{} : self;
    pi = 1;
    if (self.k == Value::K::Undef && !pos.empty()) {  // Class.method(obj, ...)
      cs.locals[params.empty() ? "self" : params[0].name] = pos[0];
      ai = 1;
    }
  }
  for (; pi < params.size(); ++pi) {
    const Param& p = params[pi];
    if (p.star || p.kwstar) {
      cs.locals[p.name] = unknown(call);
      if (p.star) ai = pos.size();
      continue;
    }
    if (!p.kw_only && ai < pos.size()) cs.locals[p.name] = pos[ai++];
    else if (kw.count(p.name)) cs.locals[p.name] = kw[p.name];
    else if (p.has_default) cs.locals[p.name] = defaultValue(p);
    else cs.locals[p.name] = paramUnknown(p.name, call);
  }
}

// Inline a function of a given file: bind the arguments, walk the body with
// its own frame, merge the exits into one value and the attributes it leaves.
Value Walker::callFunction(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, const Args& a,
                           State& st, Frame& fr, Ctx& cx) {
  auto probe = spec_.probes.find(fname);
  if (a.splat || std::find(call_stack_.begin(), call_stack_.end(), fi.node.id) != call_stack_.end() ||
      call_stack_.size() >= static_cast<std::size_t>(kMaxInlineDepth)) {
    if (probe != spec_.probes.end()) return probeAt(probe->second, call);
    if (!a.splat) note("call to " + fname + " at " + where(call) + " not inlined (recursion or depth)");
    return unknown(call);
  }
  std::vector<Value> pos;
  for (TSNode k : a.pos) pos.push_back(eval(k, st, fr, cx));
  std::map<std::string, Value> kw;
  for (auto& [k, v] : a.kw) kw[k] = eval(v, st, fr, cx);
  return inlineBody(fi, fname, self, call, pos, kw, st, fr, cx, true);
}

// probe_rules: a function named after a probe stands for the probe unless it
// reads the environment (then its env-dependent answers are kept: a spoof).
Value Walker::inlineBody(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call,
                         const std::vector<Value>& pos, const std::map<std::string, Value>& kw, State& st, Frame& fr,
                         Ctx& cx, bool probe_rules) {
  auto probe = probe_rules ? spec_.probes.find(fname) : spec_.probes.end();
  if (std::find(call_stack_.begin(), call_stack_.end(), fi.node.id) != call_stack_.end() ||
      call_stack_.size() >= static_cast<std::size_t>(kMaxInlineDepth)) {
    if (probe != spec_.probes.end()) return probeAt(probe->second, call);
    note("call to " + fname + " at " + where(call) + " not inlined (recursion or depth)");
    return unknown(call);
  }
  ModuleScope scope(*this, fi.mod);
  std::vector<Param> params = parseParams(field(fi.node, "parameters"));

  int env_calls_before = env_read_calls_;
  auto env_before = gate_.env_reads;
  auto env_locs_before = gate_.env_read_locs;
  auto opaques_before = gate_.opaques.size();
  auto notes_before = gate_.notes.size();
  auto rejects_before = gate_.rejects.size();
  auto sorts_before = opaque_sorts_;
  auto noted_before = noted_;
  auto natives_before = gate_.native_calls;
  auto native_index_before = native_index_;

  State cs;
  cs.attrs = st.attrs;
  if (fi.nested) cs.locals = st.locals;  // its closure: the enclosing function's locals at the call
  bindParams(params, fi.is_method && !fi.is_static, self, pos, kw, call, cs);

  Frame cf{Frame::Kind::Helper};
  cf.entry = model::And(fr.entry, model::And(st.full(), cx.guard));
  cf.in_ctor = fr.in_ctor;
  call_stack_.push_back(fi.node.id);
  if (probe != spec_.probes.end()) ++probe_depth_;
  walkBlock(field(fi.node, "body"), cs, cf);
  if (probe != spec_.probes.end()) --probe_depth_;
  call_stack_.pop_back();

  std::vector<Exit> exits = cf.returns;
  if (!cs.dead()) exits.push_back(Exit{cs.full(), vNone(), cs.attrs, TSNode{}});
  ExprPtr died = model::OrAll(cf.deaths);

  // A probe of the gate's own file that reads the environment is inlined
  // whole (as it always was); one of another file keeps only its env-dependent
  // answers (a spoof: the real probe's code, e.g. NVML queries, says less than
  // the probe's variable).
  bool whole = fi.mod == gate_mod_ && env_read_calls_ != env_calls_before;
  if (probe != spec_.probes.end() && !whole) {
    // The answers that depend on the environment are a spoof and are kept;
    // the rest is the probe itself, whose variable says more than its code.
    std::vector<std::size_t> spoof;
    if (env_read_calls_ != env_calls_before)
      for (std::size_t i = 0; i < exits.size(); ++i) {
        std::vector<std::string> envs;
        envsOf(exits[i].value, envs);
        if (exits[i].env_guarded || !envs.empty()) spoof.push_back(i);
      }
    Value v = probeAt(probe->second, call);
    for (std::size_t j = spoof.size(); j-- > 0;) {
      const Exit& x = exits[spoof[j]];
      Value m = merge(x.cond, x.value, v);
      m.origin = v.origin;
      addHops(m.origin, x.value.origin);
      m.env_seen = v.env_seen;
      v = m;
    }
    // the hop: the env-reading `if` that guards the answer, else the return
    for (std::size_t i : spoof) {
      TSNode at = !ts_node_is_null(exits[i].env_if) ? exits[i].env_if : exits[i].node;
      if (!ts_node_is_null(at)) addHops(v.origin, {ifHop("env override", at)});
    }
    envsOf(v, v.env_seen);
    // keep only what the kept answers use
    std::set<std::string> used;
    collectVars(v, used);
    std::vector<model::OpaqueSymbol> kept;
    for (std::size_t i = opaques_before; i < gate_.opaques.size(); ++i)
      if (used.count(gate_.opaques[i].name)) kept.push_back(gate_.opaques[i]);
      else opaque_sorts_.erase(gate_.opaques[i].name);
    gate_.opaques.resize(opaques_before);
    gate_.opaques.insert(gate_.opaques.end(), kept.begin(), kept.end());
    for (std::size_t i = env_before.size(); i < gate_.env_reads.size(); ++i) {
      const std::string& n = gate_.env_reads[i];
      if (used.count(model::envVar(n)) || used.count(model::envSetVar(n))) {
        env_before.push_back(n);
        env_locs_before.push_back(gate_.env_read_locs[i]);
      }
    }
    gate_.env_reads = env_before;
    gate_.env_read_locs = env_locs_before;
    gate_.rejects.resize(rejects_before);
    gate_.native_calls = natives_before;
    native_index_ = native_index_before;
    if (spoof.empty()) {
      gate_.notes.resize(notes_before);
      noted_ = noted_before;
      opaque_sorts_ = sorts_before;
    }
    return v;
  }

  cx.raises = model::Or(cx.raises, model::And(cx.guard, died));
  if (exits.empty()) return vNone();
  Value v = exits.back().value;
  std::map<std::string, Value> attrs = exits.back().attrs;
  for (std::size_t i = exits.size() - 1; i-- > 0;) {
    v = merge(exits[i].cond, exits[i].value, v);
    attrs = mergeMaps(exits[i].cond, exits[i].attrs, attrs);
  }
  // a traced answer that the environment can change here: at the first
  // return that an env-reading condition guards
  TSNode at = call;
  for (const auto& x : exits)
    if (x.env_guarded && !ts_node_is_null(x.node)) {
      at = !ts_node_is_null(x.env_if) ? x.env_if : x.node;
      break;
    }
  envOverride(v, [&] { return ifHop("env override", at); });
  st.attrs = mergeMaps(cx.guard, attrs, st.attrs);
  return v;
}

void Walker::collectVars(const Value& v, std::set<std::string>& out) {
  auto add = [&](const ExprPtr& e) {
    if (e)
      for (const auto& r : model::varsOf(e)) out.insert(r.name);
  };
  if (v.k == Value::K::Merge) {
    add(v.cond);
    collectVars(*v.a, out);
    collectVars(*v.b, out);
  } else {
    add(v.e);
    if (v.k == Value::K::Unknown) out.insert(v.name.empty() ? v.text : v.name);
  }
}

}  // namespace layergate::python::detail
