// Walker: value semantics: truthiness, ints, merges, equality, order, membership, arithmetic, string methods.
#include "python/Walker.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace layergate::python::detail {

// --- value semantics -------------------------------------------------------

ExprPtr Walker::materialize(const Value& v, Sort s) {
  std::string name = v.name.empty() ? v.text : v.name;
  if (name.empty()) name = "<unknown>";
  return opaqueVar(name, v.text.empty() ? name : v.text, s, v.loc);
}

ExprPtr Walker::truthy(const Value& v) {
  switch (v.k) {
    case Value::K::Undef:
    case Value::K::None: return model::False();
    case Value::K::Bool: return v.e;
    case Value::K::Int: return model::Cmp(Op::Ne, v.e, model::IntC(0));
    case Value::K::Str: return model::Cmp(Op::Ne, v.e, model::StrC(""));
    case Value::K::List: return model::BoolC(!v.items.empty());
    // a dict display is its pairs (key, value, ...): empty is false
    case Value::K::Object:
      if (v.truth_unknown) return opaqueVar(v.name, v.name, Sort::Bool, v.loc);
      if (v.tag == "sized") return model::Cmp(Op::Gt, v.e, model::IntC(0));
      return model::BoolC(v.tag != "dict" || !v.items.empty());
    case Value::K::Unknown: return materialize(v, Sort::Bool);
    case Value::K::Merge: return iteB(v.cond, truthy(*v.a), truthy(*v.b));
  }
  return model::False();
}

// The value as an int expression, or null when it is not a number.
ExprPtr Walker::asInt(const Value& v) {
  switch (v.k) {
    case Value::K::Int: return v.e;
    case Value::K::Bool: return boolToInt(v.e);
    case Value::K::Unknown: return materialize(v, Sort::Int);
    case Value::K::Merge: {
      ExprPtr a = asInt(*v.a), b = asInt(*v.b);
      if (!a || !b) return nullptr;
      return model::Ite(v.cond, a, b);
    }
    default: return nullptr;
  }
}

// v without its None leaves (Undef when it is None on every path); `none`
// gets the condition under which it is None.
Value Walker::withoutNone(const Value& v, ExprPtr& none) {
  if (v.k == Value::K::None) {
    none = model::True();
    return Value{};
  }
  if (v.k != Value::K::Merge) {
    none = model::False();
    return v;
  }
  ExprPtr na, nb;
  Value a = withoutNone(*v.a, na), b = withoutNone(*v.b, nb);
  none = iteB(v.cond, na, nb);
  if (a.k == Value::K::Undef) return b;
  if (b.k == Value::K::Undef) return a;
  return merge(v.cond, a, b);
}

// The value as a string expression (an unknown or a non-string leaf: an
// opaque string), or null.
ExprPtr Walker::asStr(const Value& v) {
  switch (v.k) {
    case Value::K::Str: return v.e;
    case Value::K::Merge: {
      ExprPtr a = asStr(*v.a), b = asStr(*v.b);
      if (!a || !b) return nullptr;
      return model::Ite(v.cond, a, b);
    }
    case Value::K::Undef: return nullptr;
    default: return materialize(v, Sort::Str);
  }
}

Value Walker::merge(const ExprPtr& c, const Value& a, const Value& b) {
  if (model::isTrue(c)) return a;
  if (model::isFalse(c)) return b;
  Value v = mergeRaw(c, a, b);
  unionOrigin(v, a, b);
  return v;
}

Value Walker::mergeRaw(const ExprPtr& c, const Value& a, const Value& b) {
  using K = Value::K;
  if (model::isTrue(c)) return a;
  if (model::isFalse(c)) return b;
  if (a.k == K::Undef) return b;
  if (b.k == K::Undef) return a;
  if ((a.k == K::Object && a.tag == "sized") || (b.k == K::Object && b.tag == "sized")) {
    // lists of known length on both sides: the length is chosen by c
    ExprPtr la = lengthOf(a), lb = lengthOf(b);
    if (la && lb) return vSized(model::Ite(c, la, lb));
  }
  if (a.k == b.k) {
    switch (a.k) {
      case K::None: return a;
      case K::Bool: {
        Value v = vBool(iteB(c, a.e, b.e));
        if (a.env == b.env) v.env = a.env;
        return v;
      }
      case K::Int: {
        // Members of one Enum stay members of it (their properties and
        // methods read the merged value: `algo.shot` after an if/elif chain).
        Value v = vInt(model::Ite(c, a.e, b.e));
        if (a.tag == "enum" && b.tag == "enum" && a.text == b.text && a.name == b.name) {
          v.tag = a.tag;
          v.text = a.text;
          v.name = a.name;
        }
        return v;
      }
      case K::Str: return vStr(model::Ite(c, a.e, b.e), a.lowered && b.lowered);
      case K::List:
        if (a.items.size() == b.items.size()) {
          std::vector<Value> xs;
          for (std::size_t i = 0; i < a.items.size(); ++i) xs.push_back(merge(c, a.items[i], b.items[i]));
          return vList(std::move(xs));
        }
        break;
      case K::Object:
        if (a.tag == "record" || b.tag == "record") {
          if (a.tag == b.tag && a.text == b.text && a.fields == b.fields) {
            Value r = a;
            for (std::size_t i = 0; i < a.items.size(); ++i) r.items[i] = merge(c, a.items[i], b.items[i]);
            return r;
          }
          break;
        }
        if (a.tag == b.tag && a.text == b.text) return a;
        break;
      case K::Unknown:
        if (a.text == b.text && a.name == b.name) return a;
        break;
      default: break;
    }
  }
  if ((a.k == K::Bool && b.k == K::Int) || (a.k == K::Int && b.k == K::Bool))
    return vInt(model::Ite(c, asInt(a), asInt(b)));
  Value m;
  m.k = K::Merge;
  m.cond = c;
  m.a = std::make_shared<Value>(a);
  m.b = std::make_shared<Value>(b);
  m.depth = 1 + std::max(a.depth, b.depth);
  if (m.depth > kMaxMergeDepth) {
    Value u;
    u.k = K::Unknown;
    u.text = "value merged from many branches #" + std::to_string(++merged_);
    u.loc = a.loc.valid() ? a.loc : b.loc;
    note("a value merged from more than " + std::to_string(kMaxMergeDepth) + " branches became opaque");
    return u;
  }
  return m;
}

std::map<std::string, Value> Walker::mergeMaps(const ExprPtr& c, const std::map<std::string, Value>& a,
                                               const std::map<std::string, Value>& b) {
  if (model::isTrue(c)) return a;
  if (model::isFalse(c)) return b;
  std::map<std::string, Value> out = b;
  for (const auto& [k, va] : a) {
    auto it = b.find(k);
    out[k] = merge(c, va, it == b.end() ? Value{} : it->second);
  }
  return out;
}

ExprPtr Walker::opaqueCond(TSNode site) {
  if (ts_node_is_null(site)) {
    Location l;
    return opaqueVar("<condition>", "<condition>", Sort::Bool, l);
  }
  return opaqueVar(shortText(site), shortText(site), Sort::Bool, loc(site));
}

ExprPtr Walker::strEq(const Value& a, const Value& b) {
  // a and b are Str values
  if (a.lowered && b.e->op == Op::StrConst && !b.lowered) {
    if (lower(b.e->s) != b.e->s) return model::False();
    std::vector<ExprPtr> xs;
    for (const auto& s : spellings(b.e->s)) xs.push_back(model::Cmp(Op::Eq, a.e, model::StrC(s)));
    return model::OrAll(xs);
  }
  if (b.lowered && a.e->op == Op::StrConst && !a.lowered) return strEq(b, a);
  return model::Cmp(Op::Eq, a.e, b.e);
}

ExprPtr Walker::eqv(const Value& a, const Value& b, TSNode site) {
  using K = Value::K;
  if (a.k == K::Merge) return iteB(a.cond, eqv(*a.a, b, site), eqv(*a.b, b, site));
  if (b.k == K::Merge) return iteB(b.cond, eqv(a, *b.a, site), eqv(a, *b.b, site));
  if (a.k == K::Undef || b.k == K::Undef) return opaqueCond(site);
  if (a.k == K::None && b.k == K::None) return model::True();
  if (a.k == K::None || b.k == K::None) {
    const Value& o = a.k == K::None ? b : a;
    if (o.k == K::Unknown || o.k == K::Object) return opaqueCond(site);
    return model::False();
  }
  // an env-module flag compared with a string: compare the raw value
  if (a.k == K::Bool && !a.env.empty() && b.k == K::Str)
    return model::And(model::EnvIsSet(a.env), strEq(vStr(model::EnvValue(a.env)), b));
  if (b.k == K::Bool && !b.env.empty() && a.k == K::Str) return eqv(b, a, site);
  bool an = a.k == K::Bool || a.k == K::Int, bn = b.k == K::Bool || b.k == K::Int;
  if (a.k == K::Bool && b.k == K::Bool) return iteB(a.e, b.e, model::Not(b.e));
  if (an && bn) return model::Cmp(Op::Eq, asInt(a), asInt(b));
  if (a.k == K::Str && b.k == K::Str) return strEq(a, b);
  if ((an && b.k == K::Str) || (a.k == K::Str && bn)) return model::False();
  if (a.k == K::List && b.k == K::List) {
    if (a.items.size() != b.items.size()) return model::False();
    std::vector<ExprPtr> xs;
    for (std::size_t i = 0; i < a.items.size(); ++i) xs.push_back(eqv(a.items[i], b.items[i], site));
    return model::AndAll(xs);
  }
  if (a.k == K::List && (bn || b.k == K::Str)) return model::False();
  if (b.k == K::List && (an || a.k == K::Str)) return model::False();
  if (a.k == K::Unknown && (bn || b.k == K::Str)) {
    Sort s = b.k == K::Str ? Sort::Str : b.k == K::Bool ? Sort::Bool : Sort::Int;
    if (s == Sort::Bool) return iteB(materialize(a, s), b.e, model::Not(b.e));
    return model::Cmp(Op::Eq, materialize(a, s), b.e);
  }
  if (b.k == K::Unknown && (an || a.k == K::Str)) return eqv(b, a, site);
  return opaqueCond(site);
}

ExprPtr Walker::isNone(const Value& v, TSNode site) {
  switch (v.k) {
    case Value::K::None: return model::True();
    case Value::K::Merge: return iteB(v.cond, isNone(*v.a, site), isNone(*v.b, site));
    case Value::K::Unknown:
    case Value::K::Undef:
      return opaqueVar(v.text.empty() ? shortText(site) : v.text + " is None",
                       v.text.empty() ? shortText(site) : v.text + " is None", Sort::Bool, loc(site));
    default: return model::False();
  }
}

ExprPtr Walker::order(Op op, const Value& a, const Value& b, TSNode site) {
  if (a.k == Value::K::Merge) return iteB(a.cond, order(op, *a.a, b, site), order(op, *a.b, b, site));
  if (b.k == Value::K::Merge) return iteB(b.cond, order(op, a, *b.a, site), order(op, a, *b.b, site));
  if (a.k == Value::K::Str && b.k == Value::K::Str && a.e->op == Op::StrConst && b.e->op == Op::StrConst) {
    int c = a.e->s.compare(b.e->s);
    switch (op) {
      case Op::Lt: return model::BoolC(c < 0);
      case Op::Le: return model::BoolC(c <= 0);
      case Op::Gt: return model::BoolC(c > 0);
      default: return model::BoolC(c >= 0);
    }
  }
  bool an = a.k == Value::K::Bool || a.k == Value::K::Int || a.k == Value::K::Unknown;
  bool bn = b.k == Value::K::Bool || b.k == Value::K::Int || b.k == Value::K::Unknown;
  if (an && bn && !(a.k == Value::K::Unknown && b.k == Value::K::Unknown))
    return model::Cmp(op, asInt(a), asInt(b));
  return opaqueCond(site);
}

ExprPtr Walker::contains(const Value& x, const Value& c, TSNode site) {
  switch (c.k) {
    case Value::K::List: {
      std::vector<ExprPtr> xs;
      for (const auto& it : c.items) xs.push_back(eqv(x, it, site));
      return model::OrAll(xs);
    }
    case Value::K::Merge: return iteB(c.cond, contains(x, *c.a, site), contains(x, *c.b, site));
    case Value::K::Object:
      if (c.tag == "dict") {  // a key of the dict display
        std::vector<ExprPtr> xs;
        for (std::size_t i = 0; i + 1 < c.items.size(); i += 2) xs.push_back(eqv(x, c.items[i], site));
        return model::OrAll(xs);
      }
      if (c.tag == "environ" && x.k == Value::K::Str && x.e->op == Op::StrConst) {
        envRead(x.e->s, site);
        return model::EnvIsSet(x.e->s);
      }
      return opaqueCond(site);
    case Value::K::Str:
      if (x.k == Value::K::Str && x.e->op == Op::StrConst && c.e->op == Op::StrConst)
        return model::BoolC(c.e->s.find(x.e->s) != std::string::npos);
      return opaqueCond(site);
    default: return opaqueCond(site);
  }
}

Value Walker::arith(const std::string& op, const Value& a, const Value& b, TSNode site) {
  using K = Value::K;
  if (a.k == K::Merge) return merge(a.cond, arith(op, *a.a, b, site), arith(op, *a.b, b, site));
  if (b.k == K::Merge) return merge(b.cond, arith(op, a, *b.a, site), arith(op, a, *b.b, site));
  if (op == "*" && a.k == K::Unknown && b.k == K::Unknown && !a.tag.empty() && !b.tag.empty() &&
      a.tag != b.tag && a.name == b.name && (a.tag == "numel" || b.tag == "numel")) {
    std::optional<Value> bytes = byteCount();
    if (bytes) return *bytes;
  }
  if (a.k == K::Str && b.k == K::Str && op == "+" && a.e->op == Op::StrConst && b.e->op == Op::StrConst)
    return vStr(model::StrC(a.e->s + b.e->s));
  if (a.k == K::List && b.k == K::List && op == "+") {
    std::vector<Value> xs = a.items;
    xs.insert(xs.end(), b.items.begin(), b.items.end());
    return vList(std::move(xs));
  }
  if (a.k == K::List && op == "*" && b.k == K::Int && b.e->op == Op::IntConst && b.e->i >= 0 &&
      a.items.size() * static_cast<std::size_t>(b.e->i) <= 1024) {
    std::vector<Value> xs;
    for (int64_t i = 0; i < b.e->i; ++i) xs.insert(xs.end(), a.items.begin(), a.items.end());
    return vList(std::move(xs));
  }
  if (op == "*" && (b.k == K::Int || b.k == K::Bool) && (a.k == K::List || (a.k == K::Object && a.tag == "sized"))) {
    // [x] * n: n copies (none for n <= 0)
    ExprPtr n = asInt(b);
    return vSized(model::Arith(Op::Mul, lengthOf(a), model::Ite(model::Cmp(Op::Gt, n, model::IntC(0)), n, model::IntC(0))));
  }
  if (op == "*" && (a.k == K::Int || a.k == K::Bool) && (b.k == K::List || (b.k == K::Object && b.tag == "sized")))
    return arith(op, b, a, site);
  if (op == "+" && lengthOf(a) && lengthOf(b) && (a.k != K::List || b.k != K::List))
    return vSized(model::Arith(Op::Add, lengthOf(a), lengthOf(b)));
  bool an = a.k == K::Bool || a.k == K::Int || a.k == K::Unknown;
  bool bn = b.k == K::Bool || b.k == K::Int || b.k == K::Unknown;
  if (!an || !bn) return unknown(site);
  static const std::map<std::string, Op> ops{{"+", Op::Add}, {"-", Op::Sub}, {"*", Op::Mul},
                                             {"//", Op::Div}, {"%", Op::Mod}};
  auto it = ops.find(op);
  ExprPtr x = asInt(a), y = asInt(b);
  if (it != ops.end()) return vInt(model::Arith(it->second, x, y));
  if (x->op == Op::IntConst && y->op == Op::IntConst) {
    int64_t p = x->i, q = y->i;
    if (op == "<<" && q >= 0 && q < 62) return vInt(model::IntC(p << q));
    if (op == ">>" && q >= 0 && q < 63) return vInt(model::IntC(p >> q));
    if (op == "&") return vInt(model::IntC(p & q));
    if (op == "|") return vInt(model::IntC(p | q));
    if (op == "^") return vInt(model::IntC(p ^ q));
    if (op == "**" && q >= 0 && q < 63) {
      int64_t r = 1;
      for (int64_t i = 0; i < q; ++i) r *= p;
      return vInt(model::IntC(r));
    }
  }
  return unknown(site);
}

Value Walker::toInt(const Value& v, TSNode site) {
  switch (v.k) {
    case Value::K::Int: return v;
    case Value::K::Bool: return vInt(boolToInt(v.e));
    case Value::K::Str: return vInt(model::StrToInt(v.e));
    case Value::K::Merge: return merge(v.cond, toInt(*v.a, site), toInt(*v.b, site));
    case Value::K::Unknown: {
      Value u = unknown(site);
      return u;
    }
    default: return unknown(site);
  }
}

Value Walker::applyStrMethod(const Value& v, const std::string& m, TSNode site) {
  switch (v.k) {
    case Value::K::Str:
      if (v.e->op == Op::StrConst) {
        if (m == "lower") return vStr(model::StrC(lower(v.e->s)));
        if (m == "upper") {
          std::string s = v.e->s;
          for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          return vStr(model::StrC(s));
        }
        if (m == "strip") {
          std::string s = v.e->s;
          auto b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
          return vStr(model::StrC(b == std::string::npos ? "" : s.substr(b, e - b + 1)));
        }
      }
      if (m == "lower") return vStr(v.e, true);
      if (m == "strip") {
        note("str.strip() on a value from the environment is assumed to change nothing");
        return v;
      }
      return unknown(site);
    case Value::K::Merge: return merge(v.cond, applyStrMethod(*v.a, m, site), applyStrMethod(*v.b, m, site));
    case Value::K::None: return v;  // AttributeError on the unset path; kept as None
    default: return unknown(site);
  }
}

ExprPtr Walker::lengthOf(const Value& v) {
  switch (v.k) {
    case Value::K::List: return model::IntC(static_cast<int64_t>(v.items.size()));
    case Value::K::Object: return v.tag == "sized" ? v.e : nullptr;
    case Value::K::Merge: {
      ExprPtr a = lengthOf(*v.a), b = lengthOf(*v.b);
      return a && b ? model::Ite(v.cond, a, b) : nullptr;
    }
    default: return nullptr;
  }
}

}  // namespace layergate::python::detail
