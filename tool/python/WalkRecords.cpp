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
  auto& memo = class_attr_memo_[cls.name + ":" + cls.text];
  if (memo.empty()) {
    memo["\x01"] = Value{};  // walked (an empty class stays empty)
    ModuleScope scope(*this, m);
    TSNode body = field(m->classes.at(cls.text), "body");
    State s;
    Frame f{Frame::Kind::Class};
    Ctx c;
    for (TSNode k : named(body)) {
      if (!is(k, "expression_statement")) continue;
      TSNode as = firstNamed(k);
      if (!is(as, "assignment") || !is(field(as, "left"), "identifier") || ts_node_is_null(field(as, "right")))
        continue;
      Value v = eval(field(as, "right"), s, f, c);
      std::string n = text(field(as, "left"));
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

}  // namespace layergate::python::detail
