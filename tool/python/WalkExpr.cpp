// Walker: names, lookup and expressions (attributes, subscripts, literals, chains, comparisons).
#include "python/Walker.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layergate::python::detail {

// --- names ----------------------------------------------------------------

std::string Walker::resolveAlias(const std::string& name) const {
  auto it = cur_->aliases.find(name);
  return it == cur_->aliases.end() ? name : it->second;
}

// "a.b.c" for a chain of identifiers and attributes, first part alias-resolved.
std::string Walker::dotted(TSNode n) const {
  std::vector<std::string> parts;
  while (is(n, "attribute")) {
    parts.push_back(text(field(n, "attribute")));
    n = field(n, "object");
  }
  if (!is(n, "identifier")) return "";
  std::string out = resolveAlias(text(n));
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += "." + *it;
  return out;
}

bool Walker::isEnvModule(TSNode n, const State& st) const {
  if (!is(n, "identifier")) return false;
  std::string name = text(n);
  if (st.locals.count(name)) return false;
  std::string last = lastComponent(resolveAlias(name));
  for (const auto& m : spec_.env_modules)
    if (m == name || m == last) return true;
  return false;
}

// vLLM's envs.py: a module-level dict from each name to a lambda that reads
// it (`"NAME": lambda: os.getenv("NAME", None)`, `.lower()`, int(...)). The
// lambda's body, evaluated in its module, is how the gate sees the value.
std::optional<Value> Walker::envLambdaRead(const std::string& var) {
  for (const auto& m : mods_) {
    std::vector<TSNode> stack;
    for (TSNode k : named(m->root))
      if (is(k, "expression_statement") || is(k, "if_statement")) stack.push_back(k);
    int budget = 20000;  // nodes looked at per module
    while (!stack.empty() && budget-- > 0) {
      TSNode n = stack.back();
      stack.pop_back();
      if (is(n, "pair")) {
        TSNode key = field(n, "key"), val = field(n, "value");
        if (!is(key, "string") || !is(val, "lambda")) continue;
        Value k = parseString(key);
        if (k.k != Value::K::Str || k.e->op != Op::StrConst || k.e->s != var) continue;
        TSNode body = field(val, "body");
        if (ts_node_is_null(body)) continue;
        Value v;
        {
          ModuleScope scope(*this, m.get());
          State st;
          Frame f{Frame::Kind::Module};
          Ctx c;
          v = eval(body, st, f, c);
        }
        // (Merge: a value or None, `os.getenv("NAME")`.)
        if (v.k != Value::K::Str && v.k != Value::K::Int && v.k != Value::K::Bool && v.k != Value::K::None &&
            v.k != Value::K::Merge)
          return std::nullopt;
        note("envs." + var + " read as declared at " + m->file->path + ":" +
             std::to_string(ts_node_start_point(n).row + 1) + " (lambda: " + shortText(body) + ")");
        if (v.k == Value::K::Bool) v.env = var;
        v.env_seen.push_back(var);
        return v;
      }
      if (is(n, "function_definition") || is(n, "class_definition")) continue;
      for (TSNode k : named(n)) stack.push_back(k);
    }
  }
  return std::nullopt;
}

Value Walker::envModuleRead(const std::string& var, TSNode at) {
  envRead(var, at);
  if (auto v = envLambdaRead(var)) return *v;
  // The declaration in a given (or followed) file: `VAR = EnvBool(True)` in a
  // class body (SGLang's environ.py): a boolean with that default.
  for (const auto& m : mods_)
    for (const auto& [cname, cls] : m->classes)
      for (TSNode k : named(field(cls, "body"))) {
        if (!is(k, "expression_statement")) continue;
        TSNode as = firstNamed(k);
        if (!is(as, "assignment") || text(field(as, "left")) != var) continue;
        TSNode rhs = field(as, "right");
        if (!is(rhs, "call")) continue;
        std::string ctor = lastComponent(text(field(rhs, "function")));
        TSNode arg = firstNamed(field(rhs, "arguments"));
        bool lit = !ts_node_is_null(arg) && (is(arg, "true") || is(arg, "false"));
        if (ctor.find("Int") != std::string::npos && ctor.find("Bool") == std::string::npos &&
            !ts_node_is_null(arg) && !is(arg, "keyword_argument")) {
          // `VAR = EnvInt(16 * 1024)` / `EnvInt(None)`: int(value) when set, else the default
          Value dflt;
          {
            ModuleScope scope(*this, m.get());
            State s;
            Frame f{Frame::Kind::Module};
            Ctx c;
            dflt = eval(arg, s, f, c);
          }
          if (dflt.k == Value::K::Int || dflt.k == Value::K::None) {
            note("envs." + var + " read as declared at " + m->file->path + ":" +
                 std::to_string(ts_node_start_point(as).row + 1) + " (" + ctor + ", default " + shortText(arg) +
                 "): int(value) when set, else the default");
            Value set = vInt(model::StrToInt(model::EnvValue(var)));
            Value v = merge(model::EnvIsSet(var), set, dflt);
            v.env_seen.push_back(var);
            return v;
          }
        }
        if (ctor.find("Str") != std::string::npos && !ts_node_is_null(arg) && !is(arg, "keyword_argument")) {
          // `VAR = EnvStr("auto")` / `EnvStr(None)`: the value when set, else the default
          Value dflt;
          {
            ModuleScope scope(*this, m.get());
            State s;
            Frame f{Frame::Kind::Module};
            Ctx c;
            dflt = eval(arg, s, f, c);
          }
          if (dflt.k == Value::K::Str || dflt.k == Value::K::None) {
            note("envs." + var + " read as declared at " + m->file->path + ":" +
                 std::to_string(ts_node_start_point(as).row + 1) + " (" + ctor + ", default " + shortText(arg) +
                 "): the value when set, else the default");
            Value raw = vStr(model::EnvValue(var));
            Value v = dflt.k == Value::K::Str ? vStr(model::Ite(model::EnvIsSet(var), raw.e, dflt.e))
                                              : merge(model::EnvIsSet(var), raw, dflt);
            v.env_seen.push_back(var);
            return v;
          }
        }
        if (ctor.find("Bool") == std::string::npos || !lit) continue;
        bool dflt = is(arg, "true");
        note("envs." + var + " read as declared at " + m->file->path + ":" +
             std::to_string(ts_node_start_point(as).row + 1) + " (" + ctor + ", default " + (dflt ? "True" : "False") +
             "): true when set to 1/true/True/TRUE, else the default when unset (assumed)");
        Value v = vBool(iteB(model::EnvIsSet(var), envTruthyValue(var), model::BoolC(dflt)));
        v.env = var;
        return v;
      }
  note("envs." + var + " read as a boolean flag: true when set to 1/true/True/TRUE (assumed)");
  Value v = vBool(model::And(model::EnvIsSet(var), envTruthyValue(var)));
  v.env = var;
  return v;
}

// What an import binds to `name` (an alias of this module): a class of a
// given file, a module object, or a name imported from a module.
Value Walker::importedValue(const std::string& name, TSNode at) {
  std::string origin = resolveAlias(name);
  // a class of a given file, imported by name (its constants, its records)
  if (auto c = classRef(origin, cur_)) return *c;
  Value o = vObject(origin == "os.environ" ? "environ" : "module", origin);
  if (cur_->from_names.count(name) && origin != "os.environ") {
    // `from M import FLAG`: FLAG may be a plain value (an availability
    // flag, a kill switch). A given M says what it holds; otherwise its
    // truth is not known.
    auto comps = splitDots(origin);
    std::string last = comps.back();
    comps.pop_back();
    Module* m = comps.empty() ? nullptr : findModule(comps, cur_);
    if (m && m != cur_ && !m->funcs.count(last) && !m->classes.count(last) && !m->aliases.count(last)) {
      ensureWalked(m);
      auto g = m->globals.find(last);
      if (g != m->globals.end() && reboundElsewhere(m, last, at)) return unknown(at);
      if (g != m->globals.end() && g->second.k != Value::K::Undef && g->second.k != Value::K::Unknown)
        return g->second;
    }
    Resolved r = resolveDotted(origin, cur_, 0);
    if (!r.mod || r.mod == cur_) {
      o.truth_unknown = true;
      o.name = name;
      o.loc = loc(at);
    }
  }
  return o;
}

Value Walker::lookup(const std::string& name, const State& st, TSNode at) {
  // A name the target declares is what the target says, whether the code
  // computes it at module level or in the function (`ON_GFX9 = any(...)`
  // over the device's architecture string).
  if (auto dv = declaredValue(name, at)) return *dv;
  auto it = st.locals.find(name);
  if (it != st.locals.end() && it->second.k != Value::K::Undef) return it->second;
  // a global a function rebound on this path (`global X; X = ...`)
  auto ga = st.attrs.find(globalKey(name));
  if (ga != st.attrs.end() && ga->second.k != Value::K::Undef) return ga->second;
  auto g = cur_->globals.find(name);
  if (g != cur_->globals.end() && reboundElsewhere(cur_, name, at)) return unknown(at);
  if (g != cur_->globals.end() && g->second.k != Value::K::Unknown && g->second.k != Value::K::Undef) return g->second;
  auto pf = spec_.platform_flags.find(name);
  if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
  if (g != cur_->globals.end() && g->second.k != Value::K::Undef) return g->second;
  auto c = class_consts_.find(name);
  if (c != class_consts_.end()) return c->second;
  if (name == class_name_ && !class_name_.empty()) return vObject("class", name);
  if (cur_->aliases.count(name)) return importedValue(name, at);
  if (auto c = classRef(name, cur_)) return *c;
  return unknown(at);
}

// --- expressions ------------------------------------------------------------

Value Walker::eval(TSNode n, State& st, Frame& fr, Ctx& cx) {
  DepthGuard g(*this, n);
  const char* t = ts_node_type(n);
  if (!std::strcmp(t, "identifier")) return lookup(text(n), st, n);
  if (!std::strcmp(t, "true")) return vBool(model::True());
  if (!std::strcmp(t, "false")) return vBool(model::False());
  if (!std::strcmp(t, "none")) return vNone();
  if (!std::strcmp(t, "integer")) return parseInt(n);
  if (!std::strcmp(t, "string")) return parseString(n);
  if (!std::strcmp(t, "concatenated_string")) {
    std::string s;
    for (TSNode k : named(n)) {
      Value p = parseString(k);
      if (p.k != Value::K::Str) return unknown(n);
      s += p.e->s;
    }
    return vStr(model::StrC(s));
  }
  if (!std::strcmp(t, "parenthesized_expression")) {
    TSNode k = firstNamed(n);
    return ts_node_is_null(k) ? unknown(n) : eval(k, st, fr, cx);
  }
  if (!std::strcmp(t, "list") || !std::strcmp(t, "tuple") || !std::strcmp(t, "set") ||
      !std::strcmp(t, "expression_list")) {
    std::vector<Value> xs;
    for (TSNode k : named(n)) {
      if (is(k, "list_splat") || is(k, "dictionary_splat")) return unknown(n);
      xs.push_back(eval(k, st, fr, cx));
    }
    return vList(std::move(xs));
  }
  if (!std::strcmp(t, "dictionary")) return evalDict(n, st, fr, cx);
  if (!std::strcmp(t, "list_comprehension")) {
    // [f(x) for x in xs]: one element per iteration (a filter or a second
    // loop makes the length unknown)
    std::vector<TSNode> clauses;
    for (TSNode k : named(n))
      if (is(k, "for_in_clause") || is(k, "if_clause")) clauses.push_back(k);
    if (clauses.size() == 1 && is(clauses[0], "for_in_clause"))
      if (ExprPtr count = iterationCount(field(clauses[0], "right"), st, fr, cx)) return vSized(count);
    return unknown(n);
  }
  if (!std::strcmp(t, "not_operator")) {
    Value a = eval(field(n, "argument"), st, fr, cx);
    Value r = vBool(model::Not(truthy(a)));
    r.origin = a.origin;
    r.env_seen = a.env_seen;
    return r;
  }
  if (!std::strcmp(t, "boolean_operator")) return evalBoolChain(n, st, fr, cx);
  if (!std::strcmp(t, "comparison_operator")) return evalCompare(n, st, fr, cx);
  if (!std::strcmp(t, "binary_operator")) return evalArithChain(n, st, fr, cx);
  if (!std::strcmp(t, "unary_operator")) {
    std::string op = text(field(n, "operator"));
    Value v = eval(field(n, "argument"), st, fr, cx);
    if (op == "+" ) return v;
    if (op == "-") {
      ExprPtr x = asInt(v);
      return x ? vInt(model::Neg(x)) : unknown(n);
    }
    return unknown(n);
  }
  if (!std::strcmp(t, "conditional_expression")) {
    auto ks = named(n);
    if (ks.size() != 3) return unknown(n);
    ExprPtr c = truthy(eval(ks[1], st, fr, cx));
    Ctx ca{model::And(cx.guard, c), cx.raises};
    Value a = model::isFalse(c) ? Value{} : eval(ks[0], st, fr, ca);
    Ctx cb{model::And(cx.guard, model::Not(c)), ca.raises};
    Value b = model::isTrue(c) ? Value{} : eval(ks[2], st, fr, cb);
    cx.raises = cb.raises;
    return merge(c, a, b);
  }
  if (!std::strcmp(t, "named_expression")) {
    Value v = eval(field(n, "value"), st, fr, cx);
    st.locals[text(field(n, "name"))] = v;
    return v;
  }
  if (!std::strcmp(t, "attribute")) return evalAttribute(n, st, fr, cx);
  if (!std::strcmp(t, "call")) return evalCall(n, st, fr, cx);
  if (!std::strcmp(t, "subscript")) return evalSubscript(n, st, fr, cx);
  return unknown(n);
}

Value Walker::parseInt(TSNode n) {
  std::string s;
  for (char ch : text(n))
    if (ch != '_') s += ch;
  try {
    std::size_t used = 0;
    long long v;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) v = std::stoll(s.substr(2), &used, 16), used += 2;
    else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) v = std::stoll(s.substr(2), &used, 8), used += 2;
    else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) v = std::stoll(s.substr(2), &used, 2), used += 2;
    else v = std::stoll(s, &used, 10);
    if (used == s.size()) return vInt(model::IntC(v));
  } catch (...) {
  }
  return unknown(n);
}

Value Walker::parseString(TSNode n) {
  if (!is(n, "string")) return unknown(n);
  std::string out;
  bool raw = false;
  for (TSNode k : children(n, false)) {
    if (is(k, "string_start")) {
      std::string p = lower(text(k));
      if (p.find('f') != std::string::npos || p.find('b') != std::string::npos) {
        // f-strings with interpolation and bytes are not modelled as text
        for (TSNode q : named(n))
          if (is(q, "interpolation")) return unknown(n);
        if (p.find('b') != std::string::npos) return unknown(n);
      }
      raw = p.find('r') != std::string::npos;
    } else if (is(k, "string_content")) {
      std::string c = text(k);
      if (raw) {
        out += c;
        continue;
      }
      for (std::size_t i = 0; i < c.size(); ++i) {
        if (c[i] != '\\' || i + 1 == c.size()) {
          out += c[i];
          continue;
        }
        char e = c[++i];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case '0': out += '\0'; break;
          case '\\': out += '\\'; break;
          case '\'': out += '\''; break;
          case '"': out += '"'; break;
          case '\n': break;
          default: out += '\\'; out += e; break;
        }
      }
    } else if (is(k, "interpolation")) {
      return unknown(n);
    }
  }
  return vStr(model::StrC(out));
}

void Walker::checkChain(std::size_t n, TSNode at) {
  if (n > kMaxChain)
    fail(at, "expression chain of more than " + std::to_string(kMaxChain) + " operands; not analysed");
}

Value Walker::evalBoolChain(TSNode n, State& st, Frame& fr, Ctx& cx) {
  std::string op = text(field(n, "operator"));
  std::vector<TSNode> rights;
  TSNode cur = n;
  while (is(cur, "boolean_operator") && text(field(cur, "operator")) == op) {
    rights.push_back(field(cur, "right"));
    checkChain(rights.size(), n);
    cur = field(cur, "left");
  }
  std::reverse(rights.begin(), rights.end());
  bool is_and = op == "and";
  Value v = eval(cur, st, fr, cx);
  for (TSNode r : rights) {
    ExprPtr t = truthy(v);
    if (is_and ? model::isFalse(t) : model::isTrue(t)) continue;  // short-circuit
    Ctx sub{model::And(cx.guard, is_and ? t : model::Not(t)), cx.raises};
    Value w = eval(r, st, fr, sub);
    cx.raises = sub.raises;
    if (v.k == Value::K::Bool && w.k == Value::K::Bool && v.env.empty() && w.env.empty()) {
      Value r = vBool(is_and ? model::And(v.e, w.e) : model::Or(v.e, w.e));
      unionOrigin(r, v, w);
      v = r;
    } else
      v = is_and ? merge(t, w, v) : merge(t, v, w);
  }
  return v;
}

Value Walker::evalArithChain(TSNode n, State& st, Frame& fr, Ctx& cx) {
  std::vector<std::pair<std::string, TSNode>> rights;
  TSNode cur = n;
  while (is(cur, "binary_operator")) {
    rights.push_back({text(field(cur, "operator")), field(cur, "right")});
    checkChain(rights.size(), n);
    cur = field(cur, "left");
  }
  std::reverse(rights.begin(), rights.end());
  Value v = eval(cur, st, fr, cx);
  for (auto& [op, r] : rights) {
    Value w = eval(r, st, fr, cx);
    v = arith(op, v, w, n);
  }
  return v;
}

Value Walker::evalCompare(TSNode n, State& st, Frame& fr, Ctx& cx) {
  std::vector<TSNode> operands;
  std::vector<std::string> ops;
  for (TSNode k : children(n, false)) {
    if (ts_node_is_named(k)) operands.push_back(k);
    else ops.push_back(ts_node_type(k));
  }
  if (operands.size() != ops.size() + 1 || ops.empty()) return unknown(n);
  std::vector<Value> vals;
  for (TSNode k : operands) vals.push_back(eval(k, st, fr, cx));
  std::vector<ExprPtr> parts;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Value &a = vals[i], &b = vals[i + 1];
    const std::string& op = ops[i];
    ExprPtr r;
    if (op == "==") r = eqv(a, b, n);
    else if (op == "!=") r = model::Not(eqv(a, b, n));
    else if (op == "<") r = order(Op::Lt, a, b, n);
    else if (op == "<=") r = order(Op::Le, a, b, n);
    else if (op == ">") r = order(Op::Gt, a, b, n);
    else if (op == ">=") r = order(Op::Ge, a, b, n);
    else if (op == "in") r = contains(a, b, n);
    else if (op == "not in") r = model::Not(contains(a, b, n));
    else if (op == "is" || op == "is not") {
      if (b.k == Value::K::None) r = isNone(a, operands[i]);
      else if (a.k == Value::K::None) r = isNone(b, operands[i + 1]);
      else if (a.k == Value::K::Bool && b.k == Value::K::Bool) r = eqv(a, b, n);
      else if (b.k == Value::K::Bool && model::isConst(b.e)) {
        // `x is True` where x is a bool on some paths and None on others
        // (a helper's `return` without a value): the bool paths' value.
        std::function<ExprPtr(const Value&)> same = [&](const Value& v) -> ExprPtr {
          if (v.k == Value::K::None) return model::False();
          if (v.k == Value::K::Bool) return b.e->b ? v.e : model::Not(v.e);
          if (v.k == Value::K::Merge) return iteB(v.cond, same(*v.a), same(*v.b));
          return opaqueCond(n);
        };
        r = same(a);
      } else {
        r = opaqueCond(n);
      }
      if (op == "is not") r = model::Not(r);
    } else {
      r = opaqueCond(n);
    }
    parts.push_back(r);
  }
  return vBool(model::AndAll(parts));
}

Value Walker::evalAttribute(TSNode n, State& st, Frame& fr, Ctx& cx) {
  TSNode obj = field(n, "object");
  std::string attr = text(field(n, "attribute"));
  if (isEnvModule(obj, st)) return envModuleRead(attr, n);
  std::string d = dotted(n);
  if (d == "os.environ") return vObject("environ", d);
  if (auto dv = declaredValue(d, n)) return *dv;
  // A platform value by its dotted name (torch.version.hip): None off its
  // platform, some version string on it.
  if (d.find('.') != std::string::npos) {
    auto dv = spec_.platform_flags.find(d);
    if (dv != spec_.platform_flags.end()) return dv->second ? vObject("module", d) : vNone();
  }
  Value o = eval(obj, st, fr, cx);
  if (auto fv = recordField(o, attr)) return *fv;
  // An Enum member is its value here (IntEnum members are ints): m.value is m.
  if (attr == "value" && o.k == Value::K::Int) return o;
  // a property of a record's or an Enum member's class
  if (auto pv = memberCall(o, attr, true, n, Args{}, st, fr, cx)) return *pv;
  if (o.k == Value::K::Object && o.tag == "pyclass") return classAttr(o, attr, n);
  if (o.k == Value::K::Object) {
    if (o.tag == "module") {
      // a class of a given file reached through a module (`policy.IpcVariant`)
      if (auto c = classRef(o.text + "." + attr, cur_)) return *c;
    }
    if (o.tag == "self") {
      auto it = st.attrs.find(attr);
      if (it != st.attrs.end() && it->second.k != Value::K::Undef) return it->second;
      auto c = class_consts_.find(attr);
      if (c != class_consts_.end()) return c->second;
      if (strict_attrs_ && !methods_.count(attr)) cx.raises = model::Or(cx.raises, cx.guard);
      Value u = unknown(n);
      return u;
    }
    if (o.tag == "class") {
      auto c = class_consts_.find(attr);
      if (c != class_consts_.end()) return c->second;
      return unknown(n);
    }
    if (o.tag == "module") {
      // A module-level value of another file (`ops.IS_CUSTOM_AR_AVAILABLE`):
      // what its body leaves in that name, walked once.
      Resolved r = resolveDotted(o.text, cur_, 0);
      if (r.mod && !r.fn && r.mod != cur_) {
        ensureWalked(r.mod);
        auto g = r.mod->globals.find(attr);
        if (g != r.mod->globals.end() && reboundElsewhere(r.mod, attr, n)) return unknown(n);
        if (g != r.mod->globals.end() && g->second.k != Value::K::Undef && g->second.k != Value::K::Unknown)
          return g->second;
      }
    }
    if (o.tag == "tensor") {
      std::optional<Value> bytes = attr == "nbytes" ? byteCount() : std::nullopt;
      if (bytes) return *bytes;
      if (attr == "itemsize") {
        Value u = unknown(n);
        u.tag = "elemsize";
        u.name = o.text;
        u.text = o.text + ".element_size()";
        return u;
      }
      return unknown(n);
    }
  }
  auto pf = spec_.platform_flags.find(attr);
  if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
  // a probe taken as a function (`orig = platform.is_fully_connected`)
  if (collecting_patches_ && spec_.probes.count(attr) && !is(ts_node_parent(n), "call")) {
    Value f = vObject("probefn", attr);
    f.loc = loc(n);
    return f;
  }
  return unknown(n);
}

Value Walker::evalSubscript(TSNode n, State& st, Frame& fr, Ctx& cx) {
  TSNode obj = field(n, "value");
  auto subs = named(n);
  if (subs.size() != 2) return unknown(n);
  Value o = eval(obj, st, fr, cx);
  if (is(subs[1], "slice")) return evalSlice(o, subs[1], st, fr, cx);
  Value i = eval(subs[1], st, fr, cx);
  if (o.k == Value::K::Object && o.tag == "pyclass" && (i.k == Value::K::Str || i.k == Value::K::Merge))
    return enumByName(o, i, n, cx);
  if (o.k == Value::K::Object && o.tag == "environ" && i.k == Value::K::Str && i.e->op == Op::StrConst) {
    const std::string& name = i.e->s;
    envRead(name, n);
    // KeyError when unset: those paths raise.
    cx.raises = model::Or(cx.raises, model::And(cx.guard, model::Not(model::EnvIsSet(name))));
    return vStr(model::EnvValue(name));
  }
  if (o.k == Value::K::Object && o.tag == "dict") return dictLookup(o, i, nullptr, n, cx);
  // t[k] with a constant k, through values merged from branches
  // (a dict chosen on some paths, d = A if cond else B: each looked up under
  // its own paths, so that a key one of them lacks raises only there)
  std::function<std::optional<Value>(const Value&)> at = [&](const Value& x) -> std::optional<Value> {
    if (x.k == Value::K::Merge) {
      const ExprPtr guard = cx.guard;
      cx.guard = model::And(guard, x.cond);
      auto a = at(*x.a);
      cx.guard = model::And(guard, model::Not(x.cond));
      auto b = at(*x.b);
      cx.guard = guard;
      if (a && b) return merge(x.cond, *a, *b);
      return std::nullopt;
    }
    if (x.k == Value::K::Object && x.tag == "dict") return dictLookup(x, i, nullptr, n, cx);
    if (x.k == Value::K::List && i.k == Value::K::Int && i.e->op == Op::IntConst) {
      int64_t k = i.e->i, sz = static_cast<int64_t>(x.items.size());
      if (k < 0) k += sz;
      if (k >= 0 && k < sz) return x.items[static_cast<std::size_t>(k)];
    }
    return std::nullopt;
  };
  if (auto v = at(o)) return *v;
  return unknown(n);
}

// seq[a:b] (no step): Python's length of the slice, from the bounds and the
// sequence's length (negative bounds count from the end, both are clipped).
Value Walker::evalSlice(const Value& seq, TSNode slice, State& st, Frame& fr, Ctx& cx) {
  ExprPtr len = lengthOf(seq);
  if (!len) return unknown(slice);
  TSNode parts[3] = {TSNode{}, TSNode{}, TSNode{}};
  int colons = 0;
  for (uint32_t i = 0; i < ts_node_child_count(slice); ++i) {
    TSNode c = ts_node_child(slice, i);
    if (!ts_node_is_named(c)) {
      if (!std::strcmp(ts_node_type(c), ":")) ++colons;
      continue;
    }
    if (colons < 3) parts[colons] = c;
  }
  if (!ts_node_is_null(parts[2])) return unknown(slice);  // a step
  auto bound = [&](TSNode b, ExprPtr dflt) -> ExprPtr {
    if (ts_node_is_null(b)) return dflt;
    ExprPtr x = asInt(eval(b, st, fr, cx));
    if (!x) return nullptr;
    ExprPtr from_end = model::Arith(Op::Add, len, x);
    ExprPtr zero = model::IntC(0);
    return model::Ite(model::Cmp(Op::Lt, x, zero), model::Ite(model::Cmp(Op::Lt, from_end, zero), zero, from_end),
                      model::Ite(model::Cmp(Op::Gt, x, len), len, x));
  };
  ExprPtr a = bound(parts[0], model::IntC(0)), b = bound(parts[1], len);
  if (!a || !b) return unknown(slice);
  return vSized(model::Ite(model::Cmp(Op::Gt, b, a), model::Arith(Op::Sub, b, a), model::IntC(0)));
}

ExprPtr Walker::iterationCount(TSNode it, State& st, Frame& fr, Ctx& cx) {
  if (ts_node_is_null(it)) return nullptr;
  if (is(it, "call")) {
    std::string f = text(field(it, "function"));
    std::vector<TSNode> args = named(field(it, "arguments"));
    if (cur_->aliases.count(f)) return nullptr;
    if (f == "range" && (args.size() == 1 || args.size() == 2)) {
      ExprPtr stop = asInt(eval(args.back(), st, fr, cx));
      ExprPtr start = args.size() == 2 ? asInt(eval(args[0], st, fr, cx)) : model::IntC(0);
      if (!stop || !start) return nullptr;
      return model::Ite(model::Cmp(Op::Gt, stop, start), model::Arith(Op::Sub, stop, start), model::IntC(0));
    }
    if (f == "enumerate" && args.size() == 1) return lengthOf(eval(args[0], st, fr, cx));
    return nullptr;
  }
  return lengthOf(eval(it, st, fr, cx));
}

}  // namespace layergate::python::detail

namespace layergate::python::detail {

// A name, dotted name or call ("NAME()") whose value the target declares
// (PythonGateSpec::values), as a value over the target's variables.
std::optional<Value> Walker::declaredValue(const std::string& key, TSNode at) {
  if (spec_.values.empty() || key.empty()) return std::nullopt;
  auto it = spec_.values.find(key);
  if (it == spec_.values.end()) return std::nullopt;
  ExprPtr e = target::termExpr(it->second, spec_.variables);
  if (!e) return std::nullopt;
  Value v = e->sort == Sort::Bool ? vBool(e) : e->sort == Sort::Int ? vInt(e) : vStr(e);
  v.origin.push_back(hop("declared value", at));
  return v;
}

}  // namespace layergate::python::detail
