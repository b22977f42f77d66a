// Records and classes of the given files: what a policy function builds and
// hands down (issue 13). A class of a given file is a "pyclass" object; its
// class-level constants are its attributes (an IntEnum's members are ints);
// calling a dataclass or NamedTuple gives a "record" whose fields are the
// class's annotated names in order; dataclasses.replace / _replace copy one
// with fields changed; r.f reads a field through merged values.
#include <algorithm>

#include "python/Walker.h"

namespace layergate::python::detail {

std::optional<Value> Walker::classRef(const std::string& dotted, const Module* from) {
  if (dotted.empty()) return std::nullopt;
  auto ref = [&](const Module* m, const std::string& name) -> std::optional<Value> {
    if (!m || !m->classes.count(name)) return std::nullopt;
    for (std::size_t i = 0; i < mods_.size(); ++i)
      if (mods_[i].get() == m) {
        Value v = vObject("pyclass", name);
        v.name = std::to_string(i);
        return v;
      }
    return std::nullopt;
  };
  if (dotted.find('.') == std::string::npos) return ref(from, dotted);
  auto comps = splitDots(dotted);
  std::string cls = comps.back();
  comps.pop_back();
  return ref(findModule(comps, from), cls);
}

Module* Walker::classModule(const Value& cls) const {
  if (cls.k != Value::K::Object || cls.tag != "pyclass" || cls.name.empty()) return nullptr;
  std::size_t i = std::stoul(cls.name);
  return i < mods_.size() ? mods_[i].get() : nullptr;
}

namespace {

// `x: int` / `x: int = 3` in a class body (tree-sitter: an assignment with a type).
bool annotatedField(TSNode stmt, TSNode& name, TSNode& def) {
  if (!is(stmt, "expression_statement")) return false;
  TSNode as = firstNamed(stmt);
  if (!is(as, "assignment") || ts_node_is_null(field(as, "type"))) return false;
  name = field(as, "left");
  def = field(as, "right");
  return is(name, "identifier");
}

}  // namespace

Value Walker::classAttr(const Value& cls, const std::string& attr, TSNode at) {
  Module* m = classModule(cls);
  if (!m) return unknown(at);
  const std::string key = cls.name + ":" + cls.text;
  // Entering the module may walk its body first, which may read this class's
  // attributes (`_NAMES = {Cls.A: ...}` after the class): that walk fills
  // the memo, and it is not walked twice.
  std::optional<ModuleScope> scope;
  if (!class_attr_memo_.count(key)) scope.emplace(*this, m);
  auto& memo = class_attr_memo_[key];
  if (memo.empty()) {
    memo["\x01"] = Value{};  // walked (an empty class stays empty)
    if (!scope) scope.emplace(*this, m);
    TSNode body = field(m->classes.at(cls.text), "body");
    State s;
    Frame f{Frame::Kind::Class};
    Ctx c;
    // An Enum's members remember their class (for its properties and
    // methods: `algo.algo_name`); enum.auto() numbers them 1, 2, ... after
    // the last int member.
    TSNode supers = field(m->classes.at(cls.text), "superclasses");
    bool is_enum = !ts_node_is_null(supers) && text(supers).find("Enum") != std::string::npos;
    std::int64_t next_auto = 1;
    for (TSNode k : named(body)) {
      if (!is(k, "expression_statement")) continue;
      TSNode as = firstNamed(k);
      if (!is(as, "assignment") || !is(field(as, "left"), "identifier") || ts_node_is_null(field(as, "right")))
        continue;
      TSNode rhs = field(as, "right");
      Value v;
      if (is_enum && is(rhs, "call") && lastComponent(resolveAlias(dotted(field(rhs, "function")))) == "auto")
        v = vInt(model::IntC(next_auto));
      else
        v = eval(rhs, s, f, c);
      std::string n = text(field(as, "left"));
      if (is_enum && v.k == Value::K::Int && v.e->op == Op::IntConst) {
        next_auto = v.e->i + 1;
        v.tag = "enum";
        v.name = cls.name;
        v.text = cls.text;
      }
      s.locals[n] = v;
      memo[n] = v;
    }
  }
  if (attr == "__members__") {  // an Enum's members by name (`name in Cls.__members__`)
    std::vector<Value> names;
    for (const auto& [n, v] : memo)
      if (n != "\x01" && n.rfind("_", 0) != 0) names.push_back(vStr(model::StrC(n)));
    return vList(std::move(names));
  }
  auto it = memo.find(attr);
  if (it != memo.end() && it->second.k != Value::K::Undef) return it->second;
  return unknown(at);
}

Value Walker::enumByName(const Value& cls, const Value& name, TSNode at, Ctx& cx) {
  classAttr(cls, "__members__", at);  // walks the class body once
  const auto& memo = class_attr_memo_[cls.name + ":" + cls.text];
  Value r = unknown(at);
  ExprPtr matched = model::False();
  for (const auto& [n, v] : memo) {
    if (n == "\x01" || n.rfind("_", 0) == 0) continue;
    ExprPtr eq = strEq(name, vStr(model::StrC(n)));
    r = merge(eq, v, r);
    matched = model::Or(matched, eq);
  }
  // KeyError for any other name.
  cx.raises = model::Or(cx.raises, model::And(cx.guard, model::Not(matched)));
  return r;
}

Value Walker::constructRecord(const Value& cls, TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  Module* m = classModule(cls);
  if (!m || a.splat) return unknown(call);
  TSNode def = m->classes.at(cls.text);
  // A class with its own __init__ is not a plain record.
  if (m->funcs.count(cls.text + ".__init__")) return unknown(call);
  std::vector<std::string> names;
  std::vector<TSNode> defaults;
  {
    for (TSNode k : named(field(def, "body"))) {
      TSNode n{}, d{};
      if (annotatedField(k, n, d)) {
        names.push_back(text(n));
        defaults.push_back(d);
      }
    }
  }
  if (names.empty() || a.pos.size() > names.size()) return unknown(call);
  Value r = vObject("record", cls.text);
  r.name = cls.name;
  r.fields = names;
  r.items.assign(names.size(), Value{});
  r.loc = loc(call);
  for (std::size_t i = 0; i < a.pos.size(); ++i) r.items[i] = eval(a.pos[i], st, fr, cx);
  for (const auto& [k, v] : a.kw) {
    auto it = std::find(names.begin(), names.end(), k);
    if (it == names.end()) return unknown(call);  // TypeError: not ours to model
    r.items[static_cast<std::size_t>(it - names.begin())] = eval(v, st, fr, cx);
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (r.items[i].k == Value::K::Undef) {
      if (ts_node_is_null(defaults[i])) return unknown(call);  // missing argument: TypeError
      ModuleScope scope(*this, m);
      State s;
      Frame f{Frame::Kind::Class};
      Ctx c;
      r.items[i] = eval(defaults[i], s, f, c);
    }
  for (auto& v : r.items)
    if (v.origin.empty()) v.origin.push_back(hop("record field", call));
  return r;
}

Value Walker::replaceRecord(const Value& rec, const Args& a, std::size_t first_kw_pos, TSNode call, State& st,
                            Frame& fr, Ctx& cx) {
  if (a.splat || a.pos.size() > first_kw_pos) return unknown(call);
  if (rec.k == Value::K::Merge) {
    Value ta = replaceRecord(*rec.a, a, first_kw_pos, call, st, fr, cx);
    Value tb = replaceRecord(*rec.b, a, first_kw_pos, call, st, fr, cx);
    return merge(rec.cond, ta, tb);
  }
  if (rec.k == Value::K::None) return rec;  // AttributeError / TypeError path: stays None-like
  if (rec.k != Value::K::Object || rec.tag != "record") return unknown(call);
  Value r = rec;
  for (const auto& [k, v] : a.kw) {
    auto it = std::find(r.fields.begin(), r.fields.end(), k);
    if (it == r.fields.end()) return unknown(call);
    Value nv = eval(v, st, fr, cx);
    nv.origin.push_back(hop("record field", call));
    r.items[static_cast<std::size_t>(it - r.fields.begin())] = nv;
  }
  return r;
}

std::optional<Value> Walker::recordField(const Value& v, const std::string& f) {
  if (v.k == Value::K::Merge) {
    auto x = recordField(*v.a, f), y = recordField(*v.b, f);
    if (x && y) return merge(v.cond, *x, *y);
    // One side is no record: on those paths the read raises or reads
    // something else; the other side's field is what the record paths see.
    if (x && (v.b->k == Value::K::None)) return x;
    if (y && (v.a->k == Value::K::None)) return y;
    return std::nullopt;
  }
  if (v.k != Value::K::Object || v.tag != "record") return std::nullopt;
  auto it = std::find(v.fields.begin(), v.fields.end(), f);
  if (it == v.fields.end()) return std::nullopt;
  return v.items[static_cast<std::size_t>(it - v.fields.begin())];
}

// The class of a record or an Enum member, as a "pyclass" value.
std::optional<Value> Walker::classOf(const Value& v) const {
  if (v.name.empty()) return std::nullopt;
  if ((v.k == Value::K::Object && v.tag == "record") || (v.k == Value::K::Int && v.tag == "enum")) {
    Value c = vObject("pyclass", v.text);
    c.name = v.name;
    return c;
  }
  return std::nullopt;
}

// A def in the class body of a record or an Enum member.
const FuncInfo* Walker::memberDef(const Value& v, const std::string& attr) const {
  auto c = classOf(v);
  if (!c) return nullptr;
  Module* m = classModule(*c);
  if (!m) return nullptr;
  auto it = m->funcs.find(c->text + "." + attr);
  return it == m->funcs.end() ? nullptr : &it->second;
}

// v.attr(...) / v.attr (a property) where v is a record or an Enum member
// of a given class, through merges: the def inlined with self = v. A path
// whose value is None keeps None (the call raises there: no value flows on).
std::optional<Value> Walker::memberCall(const Value& v, const std::string& attr, bool property, TSNode call,
                                        const Args& a, State& st, Frame& fr, Ctx& cx) {
  if (v.k == Value::K::Merge) {
    auto x = memberCall(*v.a, attr, property, call, a, st, fr, cx);
    auto y = memberCall(*v.b, attr, property, call, a, st, fr, cx);
    if (x && y) return merge(v.cond, *x, *y);
    if (x && v.b->k == Value::K::None) return merge(v.cond, *x, *v.b);
    if (y && v.a->k == Value::K::None) return merge(v.cond, *v.a, *y);
    return std::nullopt;
  }
  const FuncInfo* fi = memberDef(v, attr);
  if (!fi || fi->is_property != property || fi->is_static || fi->is_classmethod) return std::nullopt;
  return callFunction(*fi, attr, v, call, a, st, fr, cx);
}

// A record of the class the annotation `ann` names, each field an unknown
// (a nested record where the field's own annotation names a record class):
// what a call returns that the walker could not follow but whose def says
// `-> Heuristic`. The fields' unknowns are named after the call and the field.
std::optional<Value> Walker::typedUnknown(TSNode ann, const Module* in, TSNode call, const std::string& prefix,
                                          int depth) {
  if (ts_node_is_null(ann) || depth > 3) return std::nullopt;
  auto c = classRef(text(ann), in);
  if (!c) return std::nullopt;
  Module* m = classModule(*c);
  if (!m || m->funcs.count(c->text + ".__init__")) return std::nullopt;
  Value r = vObject("record", c->text);
  r.name = c->name;
  r.loc = loc(call);
  for (TSNode k : named(field(m->classes.at(c->text), "body"))) {
    TSNode n{}, d{};
    if (!annotatedField(k, n, d)) continue;
    std::string f = text(n);
    TSNode fty = field(firstNamed(k), "type");
    if (is(fty, "type")) fty = firstNamed(fty);
    std::optional<Value> sub = typedUnknown(fty, m, call, prefix + "." + f, depth + 1);
    Value u = sub ? *sub : unknown(call);
    if (!sub) {
      u.text = prefix + "." + f;
      u.name = u.text;
    }
    r.fields.push_back(f);
    r.items.push_back(u);
  }
  if (r.fields.empty()) return std::nullopt;
  return r;
}

// A dict display: its (key, value) pairs, in order, as items 2i and 2i+1.
Value Walker::evalDict(TSNode n, State& st, Frame& fr, Ctx& cx) {
  Value d = vObject("dict", shortText(n));
  for (TSNode k : named(n)) {
    if (!is(k, "pair")) return unknown(n);  // **splat, comprehension
    d.items.push_back(eval(field(k, "key"), st, fr, cx));
    d.items.push_back(eval(field(k, "value"), st, fr, cx));
  }
  return d;
}

// d[k] (KeyError where no key matches: those paths raise) or d.get(k, dflt).
Value Walker::dictLookup(const Value& d, const Value& key, const Value* dflt, TSNode at, Ctx& cx) {
  // Without a default, the paths no key matches raise: the last pair's value
  // stands for them (it is never read there).
  if (!dflt && d.items.size() < 2) {
    cx.raises = model::Or(cx.raises, cx.guard);
    return unknown(at);
  }
  Value r = dflt ? *dflt : d.items.back();
  ExprPtr matched = model::False();
  for (std::size_t i = d.items.size(); i >= 2; i -= 2) {
    ExprPtr eq = eqv(key, d.items[i - 2], at);
    r = merge(eq, d.items[i - 1], r);
    matched = model::Or(matched, eq);
  }
  if (!dflt) cx.raises = model::Or(cx.raises, model::And(cx.guard, model::Not(matched)));
  return r;
}

}  // namespace layergate::python::detail
