// Python frontend: symbolic execution of the gate class with state merging.
//
// The walker runs once over each statement of the constructor and of the
// per-call method (and of the helpers they call), carrying one merged state:
// at an `if` both branches are walked and their variables joined with Ite on
// the branch condition, so the formulas grow with the code, not with the
// number of paths. Values keep Python's meaning (truthiness, None, strings
// from the environment); whatever the walker does not understand becomes an
// opaque symbol named after its source text, created only when a condition
// actually uses it.
#include "python/PythonFrontend.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/Errors.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace layergate::python {
namespace {

using model::ExprPtr;
using model::Location;
using model::Op;
using model::Sort;
using model::VarKind;

// A guard against formulas so deep that destroying them would exhaust the
// stack: real gates run a few hundred statements, even with helpers inlined.
constexpr int kMaxStatements = 10000;
// Operands of one flat `a and b and ...` / `a + b + ...` chain.
constexpr std::size_t kMaxChain = 10000;
// Depth of a value merged from many branches before it becomes opaque.
constexpr int kMaxMergeDepth = 32;
constexpr int kMaxInlineDepth = 8;

// ---------------------------------------------------------------------------
// tree-sitter helpers

bool is(TSNode n, const char* type) { return !ts_node_is_null(n) && std::strcmp(ts_node_type(n), type) == 0; }

TSNode field(TSNode n, const char* name) {
  return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
}

bool isExtra(TSNode n) { return is(n, "comment") || is(n, "line_continuation"); }

// Children through a cursor: ts_node_child(i) is linear in i.
std::vector<TSNode> children(TSNode n, bool named_only) {
  std::vector<TSNode> out;
  if (ts_node_is_null(n)) return out;
  TSTreeCursor c = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      TSNode k = ts_tree_cursor_current_node(&c);
      if (named_only && (!ts_node_is_named(k) || isExtra(k))) continue;
      if (!named_only && isExtra(k)) continue;
      out.push_back(k);
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
  return out;
}

std::vector<TSNode> named(TSNode n) { return children(n, true); }

TSNode firstNamed(TSNode n) {
  for (TSNode k : named(n)) return k;
  return TSNode{};
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string lastComponent(const std::string& dotted) {
  auto p = dotted.rfind('.');
  return p == std::string::npos ? dotted : dotted.substr(p + 1);
}

// ---------------------------------------------------------------------------
// Values

struct Value;
using ValueP = std::shared_ptr<const Value>;

struct Value {
  enum class K { Undef, None, Bool, Int, Str, List, Object, Unknown, Merge };
  K k = K::Undef;
  ExprPtr e;                 // Bool / Int / Str
  bool lowered = false;      // Str: known to be lower-cased (s.lower())
  std::string env;           // Bool read through an env module: the variable
  std::vector<Value> items;  // List (lists, tuples, sets)
  std::string text;          // Unknown / Object: source text
  std::string tag;           // Object: self/class/tensor/environ/module; Unknown: numel/elemsize
  std::string name;          // Unknown: Var name to use; tagged: the tensor
  Location loc;
  ExprPtr cond;              // Merge: cond ? *a : *b
  ValueP a, b;
  int depth = 0;
};

Value vNone() { Value v; v.k = Value::K::None; return v; }
Value vBool(ExprPtr e) { Value v; v.k = Value::K::Bool; v.e = std::move(e); return v; }
Value vInt(ExprPtr e) { Value v; v.k = Value::K::Int; v.e = std::move(e); return v; }
Value vStr(ExprPtr e, bool lowered = false) {
  Value v; v.k = Value::K::Str; v.e = std::move(e); v.lowered = lowered; return v;
}
Value vList(std::vector<Value> items) { Value v; v.k = Value::K::List; v.items = std::move(items); return v; }
Value vObject(std::string tag, std::string text) {
  Value v; v.k = Value::K::Object; v.tag = std::move(tag); v.text = std::move(text); return v;
}

// Bool if-then-else folded into and/or where one side is constant.
ExprPtr iteB(const ExprPtr& c, const ExprPtr& t, const ExprPtr& e) {
  if (model::isTrue(c)) return t;
  if (model::isFalse(c)) return e;
  if (t == e) return t;
  if (model::isTrue(t)) return model::Or(c, e);
  if (model::isFalse(t)) return model::And(model::Not(c), e);
  if (model::isTrue(e)) return model::Or(model::Not(c), t);
  if (model::isFalse(e)) return model::And(c, t);
  if (e == c) return model::And(c, t);
  if (t == c) return model::Or(c, e);
  return model::Ite(c, t, e);
}

ExprPtr boolToInt(const ExprPtr& b) { return model::Ite(b, model::IntC(1), model::IntC(0)); }

// ---------------------------------------------------------------------------
// Walk state

struct State {
  ExprPtr prefix = model::True();  // absolute condition at the start of the block
  ExprPtr rel = model::True();     // paths still alive since then
  std::map<std::string, Value> locals;
  std::map<std::string, Value> attrs;  // self.<name>
  bool broke = false;                  // after break/continue
  bool dead() const { return model::isFalse(rel) || model::isFalse(prefix); }
  ExprPtr full() const { return model::And(prefix, rel); }
};

struct Exit {
  ExprPtr cond;  // relative to the frame's start
  Value value;
  std::map<std::string, Value> attrs;
  TSNode node{};  // the return statement (null: fell off the end)
};

struct Frame {
  enum class Kind { Module, Class, Ctor, PerCall, Helper } kind;
  explicit Frame(Kind k) : kind(k) {}
  ExprPtr entry = model::True();  // absolute condition at frame entry
  bool in_ctor = false;            // the constructor or a helper it calls
  std::vector<Exit> returns;
  std::vector<ExprPtr> deaths;  // relative conditions of raising paths
  struct If { TSNode cond; bool negated; };
  std::vector<If> ifs;
};

struct Ctx {
  ExprPtr guard = model::True();   // condition (relative to the state) of evaluating here
  ExprPtr raises = model::False(); // paths that raise while evaluating
};

struct Param {
  std::string name;
  TSNode def{};
  bool has_default = false;
  bool star = false, kwstar = false, kw_only = false;
};

struct FuncInfo {
  TSNode node{};
  bool is_static = false, is_classmethod = false;
  bool is_method = false;
};

// ---------------------------------------------------------------------------

class Walker {
 public:
  Walker(const SourceFile& f, const target::PythonGateSpec& s, const Limits& l)
      : file_(f), spec_(s), limits_(l), src_(f.text) {}

  model::Gate run();

 private:
  const SourceFile& file_;
  const target::PythonGateSpec& spec_;
  Limits limits_;
  const std::string& src_;
  model::Gate gate_;

  std::map<std::string, std::string> aliases_;  // local name -> dotted origin
  std::map<std::string, FuncInfo> module_funcs_;
  std::map<std::string, Value> globals_;
  std::map<std::string, Value> class_consts_;
  std::map<std::string, FuncInfo> methods_;
  std::string class_name_;
  int depth_ = 0;
  int statements_ = 0;
  int merged_ = 0;
  std::vector<const void*> call_stack_;
  std::map<std::string, Sort> opaque_sorts_;
  std::set<std::string> noted_;
  bool strict_attrs_ = false;  // reading an unset self attribute raises

  // --- text and locations ---------------------------------------------------
  std::string text(TSNode n) const {
    if (ts_node_is_null(n)) return "";
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    return src_.substr(a, b - a);
  }
  std::string shortText(TSNode n) const {
    std::string t = text(n), out;
    bool space = false;
    for (char ch : t) {
      if (ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ' || ch == '\\') {
        space = !out.empty();
        continue;
      }
      if (space) out += ' ';
      space = false;
      out += ch;
    }
    if (out.size() > 120) out = out.substr(0, 117) + "...";
    return out;
  }
  Location loc(TSNode n, const std::string& role = "") const {
    Location l;
    l.file = file_.path;
    TSPoint p = ts_node_start_point(n);
    l.line = static_cast<int>(p.row) + 1;
    l.col = static_cast<int>(p.column) + 1;
    l.role = role;
    return l;
  }
  std::string where(TSNode n) const {
    Location l = loc(n);
    return file_.path + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  [[noreturn]] void fail(TSNode n, const std::string& msg) const { throw InputError(where(n) + ": " + msg); }
  void note(const std::string& n) {
    if (noted_.insert(n).second) gate_.notes.push_back(n);
  }

  struct DepthGuard {
    Walker& w;
    DepthGuard(Walker& w_, TSNode n) : w(w_) {
      if (++w.depth_ > w.limits_.max_depth)
        w.fail(n, "nesting deeper than " + std::to_string(w.limits_.max_depth) + " levels; not analysed");
    }
    ~DepthGuard() { --w.depth_; }
  };

  // --- symbols ----------------------------------------------------------------
  ExprPtr opaqueVar(std::string name, const std::string& txt, Sort sort, const Location& where) {
    auto it = opaque_sorts_.find(name);
    if (it != opaque_sorts_.end() && it->second != sort) {
      name += sort == Sort::Int ? "#int" : sort == Sort::Str ? "#str" : "#bool";
      it = opaque_sorts_.find(name);
    }
    if (it == opaque_sorts_.end()) {
      opaque_sorts_[name] = sort;
      model::OpaqueSymbol o;
      o.name = name;
      o.text = txt;
      o.where = where;
      o.where.role = "opaque";
      gate_.opaques.push_back(o);
    }
    return model::Var(name, sort, VarKind::Opaque);
  }

  Value unknown(TSNode n) {
    Value v;
    v.k = Value::K::Unknown;
    v.text = shortText(n);
    v.loc = loc(n);
    return v;
  }

  ExprPtr probeVar(const std::string& probe) {
    Sort s = (probe == model::kWorldSize || probe == model::kNbytes || probe == "rank") ? Sort::Int : Sort::Bool;
    VarKind k = (probe == model::kWorldSize || probe == model::kFullNvlink || probe == model::kNbytes)
                    ? VarKind::Config
                    : VarKind::Probe;
    return model::Var(probe, s, k);
  }

  void envRead(const std::string& name, TSNode at) {
    if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), name) != gate_.env_reads.end()) return;
    gate_.env_reads.push_back(name);
    gate_.env_read_locs.push_back(loc(at, "env"));
  }

  // Spellings of an env value that a case-insensitive comparison accepts.
  static std::vector<std::string> spellings(const std::string& c) {
    std::vector<std::string> out{c};
    std::string cap = c, up = c;
    if (!cap.empty()) cap[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(cap[0])));
    for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (cap != c) out.push_back(cap);
    if (up != c && up != cap) out.push_back(up);
    return out;
  }
  ExprPtr envTruthyValue(const std::string& name) {
    std::vector<ExprPtr> xs;
    for (const char* s : {"1", "true", "True", "TRUE"})
      xs.push_back(model::Cmp(Op::Eq, model::EnvValue(name), model::StrC(s)));
    return model::OrAll(xs);
  }

  // --- value semantics -------------------------------------------------------
  ExprPtr materialize(const Value& v, Sort s) {
    std::string name = v.name.empty() ? v.text : v.name;
    if (name.empty()) name = "<unknown>";
    return opaqueVar(name, v.text.empty() ? name : v.text, s, v.loc);
  }

  ExprPtr truthy(const Value& v) {
    switch (v.k) {
      case Value::K::Undef:
      case Value::K::None: return model::False();
      case Value::K::Bool: return v.e;
      case Value::K::Int: return model::Cmp(Op::Ne, v.e, model::IntC(0));
      case Value::K::Str: return model::Cmp(Op::Ne, v.e, model::StrC(""));
      case Value::K::List: return model::BoolC(!v.items.empty());
      case Value::K::Object: return model::True();
      case Value::K::Unknown: return materialize(v, Sort::Bool);
      case Value::K::Merge: return iteB(v.cond, truthy(*v.a), truthy(*v.b));
    }
    return model::False();
  }

  // The value as an int expression, or null when it is not a number.
  ExprPtr asInt(const Value& v) {
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

  Value merge(const ExprPtr& c, const Value& a, const Value& b) {
    using K = Value::K;
    if (model::isTrue(c)) return a;
    if (model::isFalse(c)) return b;
    if (a.k == K::Undef) return b;
    if (b.k == K::Undef) return a;
    if (a.k == b.k) {
      switch (a.k) {
        case K::None: return a;
        case K::Bool: {
          Value v = vBool(iteB(c, a.e, b.e));
          if (a.env == b.env) v.env = a.env;
          return v;
        }
        case K::Int: return vInt(model::Ite(c, a.e, b.e));
        case K::Str: return vStr(model::Ite(c, a.e, b.e), a.lowered && b.lowered);
        case K::List:
          if (a.items.size() == b.items.size()) {
            std::vector<Value> xs;
            for (std::size_t i = 0; i < a.items.size(); ++i) xs.push_back(merge(c, a.items[i], b.items[i]));
            return vList(std::move(xs));
          }
          break;
        case K::Object:
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

  std::map<std::string, Value> mergeMaps(const ExprPtr& c, const std::map<std::string, Value>& a,
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

  ExprPtr opaqueCond(TSNode site) {
    if (ts_node_is_null(site)) {
      Location l;
      return opaqueVar("<condition>", "<condition>", Sort::Bool, l);
    }
    return opaqueVar(shortText(site), shortText(site), Sort::Bool, loc(site));
  }

  ExprPtr strEq(const Value& a, const Value& b) {
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

  ExprPtr eqv(const Value& a, const Value& b, TSNode site) {
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

  ExprPtr isNone(const Value& v, TSNode site) {
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

  ExprPtr order(Op op, const Value& a, const Value& b, TSNode site) {
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

  ExprPtr contains(const Value& x, const Value& c, TSNode site) {
    switch (c.k) {
      case Value::K::List: {
        std::vector<ExprPtr> xs;
        for (const auto& it : c.items) xs.push_back(eqv(x, it, site));
        return model::OrAll(xs);
      }
      case Value::K::Merge: return iteB(c.cond, contains(x, *c.a, site), contains(x, *c.b, site));
      case Value::K::Object:
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

  Value arith(const std::string& op, const Value& a, const Value& b, TSNode site) {
    using K = Value::K;
    if (a.k == K::Merge) return merge(a.cond, arith(op, *a.a, b, site), arith(op, *a.b, b, site));
    if (b.k == K::Merge) return merge(b.cond, arith(op, a, *b.a, site), arith(op, a, *b.b, site));
    if (op == "*" && a.k == K::Unknown && b.k == K::Unknown && !a.tag.empty() && !b.tag.empty() &&
        a.tag != b.tag && a.name == b.name && (a.tag == "numel" || b.tag == "numel"))
      return vInt(probeVar(model::kNbytes));
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

  Value toInt(const Value& v, TSNode site) {
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

  Value applyStrMethod(const Value& v, const std::string& m, TSNode site) {
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

  // --- names ----------------------------------------------------------------
  std::string resolveAlias(const std::string& name) const {
    auto it = aliases_.find(name);
    return it == aliases_.end() ? name : it->second;
  }

  // "a.b.c" for a chain of identifiers and attributes, first part alias-resolved.
  std::string dotted(TSNode n) const {
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

  bool isEnvModule(TSNode n, const State& st) const {
    if (!is(n, "identifier")) return false;
    std::string name = text(n);
    if (st.locals.count(name)) return false;
    std::string last = lastComponent(resolveAlias(name));
    for (const auto& m : spec_.env_modules)
      if (m == name || m == last) return true;
    return false;
  }

  Value envModuleRead(const std::string& var, TSNode at) {
    envRead(var, at);
    note("envs." + var + " read as a boolean flag: true when set to 1/true/True/TRUE (assumed)");
    Value v = vBool(model::And(model::EnvIsSet(var), envTruthyValue(var)));
    v.env = var;
    return v;
  }

  Value lookup(const std::string& name, const State& st, TSNode at) {
    auto it = st.locals.find(name);
    if (it != st.locals.end() && it->second.k != Value::K::Undef) return it->second;
    auto g = globals_.find(name);
    if (g != globals_.end() && g->second.k != Value::K::Unknown && g->second.k != Value::K::Undef) return g->second;
    auto pf = spec_.platform_flags.find(name);
    if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
    if (g != globals_.end() && g->second.k != Value::K::Undef) return g->second;
    auto c = class_consts_.find(name);
    if (c != class_consts_.end()) return c->second;
    if (name == class_name_ && !class_name_.empty()) return vObject("class", name);
    if (aliases_.count(name)) {
      std::string origin = resolveAlias(name);
      return vObject(origin == "os.environ" ? "environ" : "module", origin);
    }
    return unknown(at);
  }

  // --- expressions ------------------------------------------------------------
  Value eval(TSNode n, State& st, Frame& fr, Ctx& cx) {
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
    if (!std::strcmp(t, "not_operator")) return vBool(model::Not(truthy(eval(field(n, "argument"), st, fr, cx))));
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

  Value parseInt(TSNode n) {
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

  Value parseString(TSNode n) {
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

  void checkChain(std::size_t n, TSNode at) {
    if (n > kMaxChain)
      fail(at, "expression chain of more than " + std::to_string(kMaxChain) + " operands; not analysed");
  }

  Value evalBoolChain(TSNode n, State& st, Frame& fr, Ctx& cx) {
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
      if (v.k == Value::K::Bool && w.k == Value::K::Bool && v.env.empty() && w.env.empty())
        v = vBool(is_and ? model::And(v.e, w.e) : model::Or(v.e, w.e));
      else
        v = is_and ? merge(t, w, v) : merge(t, v, w);
    }
    return v;
  }

  Value evalArithChain(TSNode n, State& st, Frame& fr, Ctx& cx) {
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

  Value evalCompare(TSNode n, State& st, Frame& fr, Ctx& cx) {
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
        else r = opaqueCond(n);
        if (op == "is not") r = model::Not(r);
      } else {
        r = opaqueCond(n);
      }
      parts.push_back(r);
    }
    return vBool(model::AndAll(parts));
  }

  Value evalAttribute(TSNode n, State& st, Frame& fr, Ctx& cx) {
    TSNode obj = field(n, "object");
    std::string attr = text(field(n, "attribute"));
    if (isEnvModule(obj, st)) return envModuleRead(attr, n);
    std::string d = dotted(n);
    if (d == "os.environ") return vObject("environ", d);
    Value o = eval(obj, st, fr, cx);
    if (o.k == Value::K::Object) {
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
      if (o.tag == "tensor") {
        if (attr == "nbytes") return vInt(probeVar(model::kNbytes));
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
    return unknown(n);
  }

  Value evalSubscript(TSNode n, State& st, Frame& fr, Ctx& cx) {
    TSNode obj = field(n, "value");
    auto subs = named(n);
    if (subs.size() != 2) return unknown(n);
    Value o = eval(obj, st, fr, cx);
    Value i = eval(subs[1], st, fr, cx);
    if (o.k == Value::K::Object && o.tag == "environ" && i.k == Value::K::Str && i.e->op == Op::StrConst) {
      const std::string& name = i.e->s;
      envRead(name, n);
      // KeyError when unset: those paths raise.
      cx.raises = model::Or(cx.raises, model::And(cx.guard, model::Not(model::EnvIsSet(name))));
      return vStr(model::EnvValue(name));
    }
    if (o.k == Value::K::List && i.k == Value::K::Int && i.e->op == Op::IntConst) {
      int64_t k = i.e->i, sz = static_cast<int64_t>(o.items.size());
      if (k < 0) k += sz;
      if (k >= 0 && k < sz) return o.items[static_cast<std::size_t>(k)];
    }
    return unknown(n);
  }

  // --- calls ------------------------------------------------------------------
  struct Args {
    std::vector<TSNode> pos;
    std::vector<std::pair<std::string, TSNode>> kw;
    bool splat = false;
  };
  Args parseArgs(TSNode args) {
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
  TSNode argAt(const Args& a, std::size_t i, const char* kw) {
    if (i < a.pos.size()) return a.pos[i];
    for (auto& [k, v] : a.kw)
      if (k == kw) return v;
    return TSNode{};
  }

  Value envGet(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
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

  Value envBool(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
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

  Value builtin(const std::string& f, TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx, bool& handled) {
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
      if (v.k == Value::K::List) return vInt(model::IntC(static_cast<int64_t>(v.items.size())));
      if (v.k == Value::K::Str && v.e->op == Op::StrConst) return vInt(model::IntC(static_cast<int64_t>(v.e->s.size())));
      return unknown(call);
    }
    if (f == "int" && a.pos.size() == 1) return toIntAt(eval(a.pos[0], st, fr, cx), call);
    if (f == "bool") {
      if (a.pos.empty()) return vBool(model::False());
      return vBool(truthy(eval(a.pos[0], st, fr, cx)));
    }
    if (f == "str" && a.pos.size() == 1) {
      Value v = eval(a.pos[0], st, fr, cx);
      if (v.k == Value::K::Str) return v;
      if (v.k == Value::K::Int && v.e->op == Op::IntConst) return vStr(model::StrC(std::to_string(v.e->i)));
      if (v.k == Value::K::Bool && model::isConst(v.e)) return vStr(model::StrC(v.e->b ? "True" : "False"));
      return unknown(call);
    }
    if ((f == "min" || f == "max") && a.pos.size() == 2) {
      Value x = eval(a.pos[0], st, fr, cx), y = eval(a.pos[1], st, fr, cx);
      ExprPtr p = asInt(x), q = asInt(y);
      if (!p || !q) return unknown(call);
      return vInt(model::Ite(model::Cmp(f == "min" ? Op::Le : Op::Ge, p, q), p, q));
    }
    handled = false;
    return Value{};
  }

  Value toIntAt(const Value& v, TSNode call) {
    if (v.k == Value::K::Unknown) return unknown(call);
    return toInt(v, call);
  }

  Value evalCall(TSNode n, State& st, Frame& fr, Ctx& cx) {
    TSNode fn = field(n, "function");
    Args a = parseArgs(field(n, "arguments"));
    if (is(fn, "identifier")) {
      std::string name = text(fn);
      bool local = st.locals.count(name) > 0 && fr.kind != Frame::Kind::Module;
      std::string origin = resolveAlias(name);
      std::string last = lastComponent(origin);
      if (!local) {
        auto mf = module_funcs_.find(name);
        if (mf != module_funcs_.end() && !aliases_.count(name))
          return callFunction(mf->second, name, Value{}, n, a, st, fr, cx);
        bool handled = false;
        if (!aliases_.count(name)) {
          Value b = builtin(name, n, a, st, fr, cx, handled);
          if (handled) return b;
        }
        if (origin == "os.getenv" || (name == "getenv" && !aliases_.count(name)))
          return envGet(n, a, st, fr, cx);
        if (std::find(spec_.bool_env_helpers.begin(), spec_.bool_env_helpers.end(), last) !=
            spec_.bool_env_helpers.end())
          return envBool(n, a, st, fr, cx);
        auto p = spec_.probes.find(last);
        if (p != spec_.probes.end()) return probeValue(p->second);
        auto pf = spec_.platform_flags.find(last);
        if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
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
      Value o = eval(obj, st, fr, cx);
      if (o.k == Value::K::Object && o.tag == "environ" && attr == "get") return envGet(n, a, st, fr, cx);
      if (o.k == Value::K::Object && (o.tag == "self" || o.tag == "class")) {
        auto m = methods_.find(attr);
        if (m != methods_.end()) {
          Value self = o;
          if (m->second.is_static) self = Value{};
          if (m->second.is_classmethod) self = vObject("class", class_name_);
          return callFunction(m->second, attr, self, n, a, st, fr, cx);
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
      if (p != spec_.probes.end()) return probeValue(p->second);
      auto pf = spec_.platform_flags.find(attr);
      if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
      return unknown(n);
    }
    return unknown(n);
  }

  Value probeValue(const std::string& probe) {
    ExprPtr v = probeVar(probe);
    return v->sort == Sort::Int ? vInt(v) : vBool(v);
  }

  std::vector<Param> parseParams(TSNode params) {
    std::vector<Param> out;
    bool kw_only = false;
    for (TSNode k : named(params)) {
      Param p;
      p.kw_only = kw_only;
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

  Value defaultValue(const Param& p) {
    State s;
    Frame f{Frame::Kind::Helper};
    Ctx c;
    return eval(p.def, s, f, c);
  }

  Value paramUnknown(const std::string& name, TSNode at) {
    Value u;
    u.k = Value::K::Unknown;
    u.name = "param:" + name;
    u.text = "parameter " + name;
    u.loc = loc(at);
    return u;
  }

  // Inline a function of this file: bind the arguments, walk the body with its
  // own frame, merge the exits into one value and the attributes it leaves.
  Value callFunction(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, const Args& a,
                     State& st, Frame& fr, Ctx& cx) {
    // A probe wrapper of this file counts when it changes the probe's meaning
    // (an env override); otherwise the probe's own variable says more.
    auto probe = spec_.probes.find(fname);
    if (a.splat || std::find(call_stack_.begin(), call_stack_.end(), fi.node.id) != call_stack_.end() ||
        call_stack_.size() >= static_cast<std::size_t>(kMaxInlineDepth)) {
      if (probe != spec_.probes.end()) return probeValue(probe->second);
      if (!a.splat) note("call to " + fname + " at " + where(call) + " not inlined (recursion or depth)");
      return unknown(call);
    }
    std::vector<Param> params = parseParams(field(fi.node, "parameters"));
    std::vector<Value> pos;
    for (TSNode k : a.pos) pos.push_back(eval(k, st, fr, cx));
    std::map<std::string, Value> kw;
    for (auto& [k, v] : a.kw) kw[k] = eval(v, st, fr, cx);

    auto env_before = gate_.env_reads.size();
    auto opaques_before = gate_.opaques.size();
    auto notes_before = gate_.notes.size();
    auto rejects_before = gate_.rejects.size();
    auto sorts_before = opaque_sorts_;
    auto noted_before = noted_;

    State cs;
    cs.attrs = st.attrs;
    std::size_t pi = 0, ai = 0;
    if (fi.is_method && (fi.is_static ? false : true)) {
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

    Frame cf{Frame::Kind::Helper};
    cf.entry = model::And(fr.entry, model::And(st.full(), cx.guard));
    cf.in_ctor = fr.in_ctor;
    call_stack_.push_back(fi.node.id);
    walkBlock(field(fi.node, "body"), cs, cf);
    call_stack_.pop_back();

    std::vector<Exit> exits = cf.returns;
    if (!cs.dead()) exits.push_back(Exit{cs.full(), vNone(), cs.attrs, TSNode{}});
    ExprPtr died = model::OrAll(cf.deaths);

    if (probe != spec_.probes.end() && gate_.env_reads.size() == env_before) {
      // roll back what the walk recorded: the probe variable replaces it
      gate_.opaques.resize(opaques_before);
      gate_.notes.resize(notes_before);
      gate_.rejects.resize(rejects_before);
      opaque_sorts_ = sorts_before;
      noted_ = noted_before;
      return probeValue(probe->second);
    }

    cx.raises = model::Or(cx.raises, model::And(cx.guard, died));
    if (exits.empty()) return vNone();
    Value v = exits.back().value;
    std::map<std::string, Value> attrs = exits.back().attrs;
    for (std::size_t i = exits.size() - 1; i-- > 0;) {
      v = merge(exits[i].cond, exits[i].value, v);
      attrs = mergeMaps(exits[i].cond, exits[i].attrs, attrs);
    }
    st.attrs = mergeMaps(cx.guard, attrs, st.attrs);
    return v;
  }

  // --- statements ---------------------------------------------------------------
  void settle(State& st, Frame& fr, Ctx& cx, TSNode stmt) {
    if (model::isFalse(cx.raises)) return;
    ExprPtr d = model::And(st.full(), cx.raises);
    fr.deaths.push_back(d);
    if (fr.in_ctor) recordReject(model::And(fr.entry, d), fr, stmt);
    st.rel = model::And(st.rel, model::Not(cx.raises));
  }

  void recordReject(const ExprPtr& cond, const Frame& fr, TSNode stmt) {
    if (model::isFalse(cond)) return;
    model::GateCheck g;
    g.condition = cond;
    if (!fr.ifs.empty()) {
      const auto& f = fr.ifs.back();
      g.text = f.negated ? "not (" + shortText(f.cond) + ")" : shortText(f.cond);
      g.where = loc(f.cond, "reject");
      // the line of the `if`, not of its condition
      TSNode parent = ts_node_parent(f.cond);
      if (!ts_node_is_null(parent)) g.where = loc(parent, "reject");
    } else {
      g.text = shortText(stmt);
      g.where = loc(stmt, "reject");
    }
    gate_.rejects.push_back(g);
  }

  Value evalStmtExpr(TSNode n, State& st, Frame& fr, TSNode stmt) {
    Ctx cx;
    Value v = eval(n, st, fr, cx);
    settle(st, fr, cx, stmt);
    return v;
  }

  void walkBlock(TSNode block, State& st, Frame& fr) {
    if (ts_node_is_null(block)) return;
    if (!is(block, "block") && !is(block, "module")) {
      walkStmt(block, st, fr);
      return;
    }
    for (TSNode s : named(block)) {
      if (st.dead() || st.broke) break;
      walkStmt(s, st, fr);
    }
  }

  void assignTarget(TSNode t, const Value& v, State& st, Frame& fr) {
    if (is(t, "identifier")) {
      st.locals[text(t)] = v;
      return;
    }
    if (is(t, "attribute")) {
      TSNode obj = field(t, "object");
      if (is(obj, "identifier")) {
        auto it = st.locals.find(text(obj));
        if (it != st.locals.end() && it->second.k == Value::K::Object && it->second.tag == "self")
          st.attrs[text(field(t, "attribute"))] = v;
      }
      return;
    }
    if (is(t, "pattern_list") || is(t, "tuple_pattern") || is(t, "list_pattern") || is(t, "tuple") ||
        is(t, "list") || is(t, "expression_list")) {
      auto ts = named(t);
      bool simple = v.k == Value::K::List && v.items.size() == ts.size();
      for (std::size_t i = 0; i < ts.size(); ++i) {
        if (simple) {
          assignTarget(ts[i], v.items[i], st, fr);
        } else {
          Value u = unknown(ts[i]);
          u.text = shortText(ts[i]) + " (unpacked from line " + std::to_string(loc(t).line) + ")";
          assignTarget(ts[i], u, st, fr);
        }
      }
      return;
    }
    if (is(t, "parenthesized_expression")) {
      assignTarget(firstNamed(t), v, st, fr);
      return;
    }
    if (is(t, "list_splat_pattern")) assignTarget(firstNamed(t), unknown(t), st, fr);
    // subscripts and attributes of other objects do not touch the gate state
  }

  void walkAssign(TSNode n, State& st, Frame& fr, TSNode stmt) {
    std::vector<TSNode> targets;
    TSNode cur = n;
    while (is(cur, "assignment")) {
      targets.push_back(field(cur, "left"));
      TSNode r = field(cur, "right");
      if (ts_node_is_null(r)) return;  // annotation only
      cur = r;
    }
    Value v = evalStmtExpr(cur, st, fr, stmt);
    for (TSNode t : targets) assignTarget(t, v, st, fr);
  }

  void walkAugAssign(TSNode n, State& st, Frame& fr, TSNode stmt) {
    TSNode l = field(n, "left");
    std::string op = text(field(n, "operator"));
    op = op.substr(0, op.size() - 1);
    Ctx cx;
    Value old = eval(l, st, fr, cx);
    Value r = eval(field(n, "right"), st, fr, cx);
    settle(st, fr, cx, stmt);
    assignTarget(l, arith(op, old, r, n), st, fr);
  }

  // State for a branch taken under condition c.
  static State branch(const State& base, const ExprPtr& c) {
    State s = base;
    s.prefix = model::And(base.full(), c);
    s.rel = model::True();
    s.broke = false;
    return s;
  }

  // Join two branches that both started from base, split on c.
  State join(const State& base, const ExprPtr& c, const State& t, const State& e) {
    State m = base;
    m.rel = model::And(base.rel, iteB(c, t.rel, e.rel));
    if (t.dead() && e.dead()) {
      m.rel = model::False();
      return m;
    }
    if (t.dead()) {
      m.locals = e.locals, m.attrs = e.attrs, m.broke = e.broke;
    } else if (e.dead()) {
      m.locals = t.locals, m.attrs = t.attrs, m.broke = t.broke;
    } else {
      m.locals = mergeMaps(c, t.locals, e.locals);
      m.attrs = mergeMaps(c, t.attrs, e.attrs);
      m.broke = t.broke && e.broke;
    }
    return m;
  }

  struct Clause {
    std::function<ExprPtr(State&)> cond;  // evaluated on the state where earlier clauses failed
    std::function<void(State&)> body;
    TSNode if_cond{};  // for reject texts
  };

  void walkChain(const std::vector<Clause>& clauses, const std::function<void(State&)>* else_body, TSNode last_cond,
                 State& st, Frame& fr) {
    std::vector<State> bases, taken;
    std::vector<ExprPtr> conds;
    State cur = st;
    for (const auto& cl : clauses) {
      ExprPtr c = cl.cond(cur);
      State t = branch(cur, c);
      if (model::isFalse(c)) {
        t.rel = model::False();
      } else {
        if (!ts_node_is_null(cl.if_cond)) fr.ifs.push_back({cl.if_cond, false});
        cl.body(t);
        if (!ts_node_is_null(cl.if_cond)) fr.ifs.pop_back();
      }
      bases.push_back(cur);
      taken.push_back(t);
      conds.push_back(c);
      cur = branch(cur, model::Not(c));
      if (model::isTrue(c)) cur.rel = model::False();
      if (cur.dead()) break;
    }
    if (else_body && !cur.dead()) {
      if (!ts_node_is_null(last_cond)) fr.ifs.push_back({last_cond, true});
      (*else_body)(cur);
      if (!ts_node_is_null(last_cond)) fr.ifs.pop_back();
    }
    State m = cur;
    for (std::size_t i = taken.size(); i-- > 0;) m = join(bases[i], conds[i], taken[i], m);
    st = m;
  }

  void walkIf(TSNode n, State& st, Frame& fr) {
    std::vector<Clause> cls;
    std::vector<std::pair<TSNode, TSNode>> arms{{field(n, "condition"), field(n, "consequence")}};
    TSNode else_body{};
    for (TSNode k : named(n)) {
      if (is(k, "elif_clause")) arms.push_back({field(k, "condition"), field(k, "consequence")});
      else if (is(k, "else_clause")) else_body = field(k, "body");
    }
    for (auto& [c, b] : arms) {
      TSNode cn = c, bn = b;
      cls.push_back(Clause{[this, cn, &fr, n](State& s) { return truthy(evalStmtExpr(cn, s, fr, n)); },
                           [this, bn, &fr](State& s) { walkBlock(bn, s, fr); }, cn});
    }
    std::function<void(State&)> eb = [this, else_body, &fr](State& s) { walkBlock(else_body, s, fr); };
    walkChain(cls, ts_node_is_null(else_body) ? nullptr : &eb, arms.back().first, st, fr);
  }

  void walkLoop(TSNode n, State& st, Frame& fr) {
    bool is_for = is(n, "for_statement");
    std::string header = is_for ? "for " + shortText(field(n, "left")) + " in " + shortText(field(n, "right"))
                                : "while " + shortText(field(n, "condition"));
    int line = loc(n).line;
    ExprPtr iterates = opaqueVar("loop@L" + std::to_string(line) + ": " + header, header + " iterates", Sort::Bool,
                                 loc(n));
    TSNode body = field(n, "body");
    std::vector<Clause> cls;
    cls.push_back(Clause{[&, n](State& s) {
                           if (is_for) return iterates;
                           return model::And(iterates, truthy(evalStmtExpr(field(n, "condition"), s, fr, n)));
                         },
                         [&, n, body](State& s) {
                           if (is_for) {
                             Value u = unknown(field(n, "left"));
                             u.text = "element of " + shortText(field(n, "right"));
                             assignTarget(field(n, "left"), u, s, fr);
                           }
                           walkBlock(body, s, fr);
                           s.broke = false;
                         },
                         TSNode{}});
    walkChain(cls, nullptr, TSNode{}, st, fr);
    st.broke = false;
    for (TSNode k : named(n))
      if (is(k, "else_clause") && !st.dead()) walkBlock(field(k, "body"), st, fr);
  }

  void walkTry(TSNode n, State& st, Frame& fr) {
    TSNode body = field(n, "body");
    std::vector<TSNode> handlers;
    TSNode else_clause{}, finally_clause{};
    for (TSNode k : named(n)) {
      if (is(k, "except_clause") || is(k, "except_group_clause")) handlers.push_back(k);
      else if (is(k, "else_clause")) else_clause = k;
      else if (is(k, "finally_clause")) finally_clause = k;
    }
    if (!handlers.empty()) {
      int line = loc(n).line;
      TSNode first = firstNamed(body);
      std::string what = ts_node_is_null(first) ? "try" : shortText(first);
      ExprPtr ok = opaqueVar("try@L" + std::to_string(line) + " ok: " + what,
                             "the try block at line " + std::to_string(line) + " completes without an exception",
                             Sort::Bool, loc(n));
      std::vector<Clause> cls;
      cls.push_back(Clause{[ok](State&) { return ok; },
                           [this, body, else_clause, &fr](State& s) {
                             walkBlock(body, s, fr);
                             if (!ts_node_is_null(else_clause) && !s.dead()) walkBlock(field(else_clause, "body"), s, fr);
                           },
                           TSNode{}});
      for (std::size_t i = 0; i + 1 < handlers.size(); ++i) {
        TSNode h = handlers[i];
        TSNode hv = field(h, "value");
        std::string ht = ts_node_is_null(hv) ? "except" : shortText(hv);
        ExprPtr c = opaqueVar("except@L" + std::to_string(loc(h).line) + ": " + ht,
                              "the exception is caught by `except " + ht + "`", Sort::Bool, loc(h));
        cls.push_back(Clause{[c](State&) { return c; }, [this, h, &fr](State& s) { walkHandler(h, s, fr); },
                             TSNode{}});
      }
      TSNode lastH = handlers.back();
      std::function<void(State&)> eb = [this, lastH, &fr](State& s) { walkHandler(lastH, s, fr); };
      walkChain(cls, &eb, TSNode{}, st, fr);
    } else {
      walkBlock(body, st, fr);
    }
    if (!ts_node_is_null(finally_clause) && !st.dead())
      for (TSNode k : named(finally_clause))
        if (is(k, "block")) walkBlock(k, st, fr);
  }

  void walkHandler(TSNode h, State& s, Frame& fr) {
    TSNode alias = field(h, "alias");
    if (!ts_node_is_null(alias)) assignTarget(alias, unknown(alias), s, fr);
    for (TSNode k : named(h))
      if (is(k, "block")) walkBlock(k, s, fr);
  }

  void recordImport(TSNode n) {
    if (is(n, "import_statement")) {
      for (TSNode k : named(n)) {
        if (is(k, "dotted_name")) {
          std::string d = text(k);
          std::string first = d.substr(0, d.find('.'));
          aliases_[first] = first;
        } else if (is(k, "aliased_import")) {
          aliases_[text(field(k, "alias"))] = text(field(k, "name"));
        }
      }
      return;
    }
    // from M import a, b as c
    std::string mod = text(field(n, "module_name"));
    TSNode modnode = field(n, "module_name");
    for (TSNode k : named(n)) {
      if (ts_node_eq(k, modnode)) continue;
      if (is(k, "dotted_name")) aliases_[text(k)] = mod + "." + text(k);
      else if (is(k, "aliased_import")) aliases_[text(field(k, "alias"))] = mod + "." + text(field(k, "name"));
    }
  }

  FuncInfo funcInfo(TSNode def, TSNode decorated, bool is_method) {
    FuncInfo fi;
    fi.node = def;
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

  void walkStmt(TSNode n, State& st, Frame& fr) {
    DepthGuard g(*this, n);
    if (++statements_ > kMaxStatements)
      fail(n, "more than " + std::to_string(kMaxStatements) + " statements on the analysed paths; not analysed");
    const char* t = ts_node_type(n);
    if (!std::strcmp(t, "expression_statement")) {
      for (TSNode k : named(n)) {
        if (is(k, "assignment")) walkAssign(k, st, fr, n);
        else if (is(k, "augmented_assignment")) walkAugAssign(k, st, fr, n);
        else evalStmtExpr(k, st, fr, n);
      }
    } else if (!std::strcmp(t, "return_statement")) {
      TSNode v = firstNamed(n);
      Value val = ts_node_is_null(v) ? vNone() : evalStmtExpr(v, st, fr, n);
      if (st.dead()) return;
      if (fr.kind == Frame::Kind::Ctor)
        recordReject(model::And(fr.entry, model::And(st.full(), model::Not(enabled(st.attrs)))), fr, n);
      fr.returns.push_back(Exit{st.full(), val, st.attrs, n});
      st.rel = model::False();
    } else if (!std::strcmp(t, "raise_statement")) {
      fr.deaths.push_back(st.full());
      if (fr.in_ctor) recordReject(model::And(fr.entry, st.full()), fr, n);
      st.rel = model::False();
    } else if (!std::strcmp(t, "assert_statement")) {
      TSNode c = firstNamed(n);
      ExprPtr cond = truthy(evalStmtExpr(c, st, fr, n));
      ExprPtr fails = model::And(st.full(), model::Not(cond));
      if (!model::isFalse(fails)) {
        fr.deaths.push_back(fails);
        if (fr.in_ctor) {
          fr.ifs.push_back({c, true});
          recordReject(model::And(fr.entry, fails), fr, n);
          fr.ifs.pop_back();
        }
      }
      st.rel = model::And(st.rel, cond);
    } else if (!std::strcmp(t, "if_statement")) {
      walkIf(n, st, fr);
    } else if (!std::strcmp(t, "for_statement") || !std::strcmp(t, "while_statement")) {
      walkLoop(n, st, fr);
    } else if (!std::strcmp(t, "try_statement")) {
      walkTry(n, st, fr);
    } else if (!std::strcmp(t, "with_statement")) {
      walkBlock(field(n, "body"), st, fr);
    } else if (!std::strcmp(t, "break_statement") || !std::strcmp(t, "continue_statement")) {
      note("break/continue: the rest of the loop body is assumed to run on those paths too");
      st.broke = true;
    } else if (!std::strcmp(t, "import_statement") || !std::strcmp(t, "import_from_statement")) {
      recordImport(n);
    } else if (!std::strcmp(t, "function_definition") || !std::strcmp(t, "decorated_definition")) {
      TSNode def = !std::strcmp(t, "decorated_definition") ? field(n, "definition") : n;
      TSNode dec = !std::strcmp(t, "decorated_definition") ? n : TSNode{};
      if (!is(def, "function_definition")) return;
      std::string name = text(field(def, "name"));
      if (fr.kind == Frame::Kind::Module) {
        module_funcs_[name] = funcInfo(def, dec, false);
        st.locals.erase(name);
      } else if (fr.kind == Frame::Kind::Class) {
        methods_[name] = funcInfo(def, dec, true);
      }
      // nested defs inside functions are not followed
    } else if (!std::strcmp(t, "class_definition")) {
      // classes are found separately
    } else if (!std::strcmp(t, "match_statement")) {
      note("match statement at " + where(n) + " not modelled");
    }
    // pass, global, nonlocal, delete, type aliases: nothing to do
  }

  ExprPtr enabled(const std::map<std::string, Value>& attrs) {
    auto it = attrs.find(spec_.enabling_attr);
    if (it == attrs.end() || it->second.k == Value::K::Undef) return model::False();
    return eqv(it->second, vBool(model::BoolC(spec_.enabling_value)), TSNode{});
  }

  // The public method that leads, through self.<m>() calls, to the method
  // holding the enabling statement `en`.
  std::string deferredEntry(TSNode en) {
    std::string holder;
    for (auto& [name, fi] : methods_)
      if (ts_node_start_byte(en) >= ts_node_start_byte(fi.node) && ts_node_end_byte(en) <= ts_node_end_byte(fi.node))
        holder = name;
    if (holder.empty()) return "";
    std::string cur = holder;
    std::set<std::string> seen{cur};
    for (;;) {
      std::string caller;
      for (auto& [name, fi] : methods_) {
        if (name == "__init__" || seen.count(name)) continue;
        if (text(fi.node).find("self." + cur + "(") != std::string::npos) {
          caller = name;
          break;
        }
      }
      if (caller.empty()) return cur;
      seen.insert(caller);
      cur = caller;
    }
  }

  // --- structure ----------------------------------------------------------------
  void checkSyntax(TSNode root);
  std::vector<TSNode> findClasses(TSNode root, const std::string& name);
  TSNode findEnabling(TSNode fn);
};

// Input checks that need no tree.
void checkBytes(const SourceFile& f, const Limits& limits) {
  if (f.text.size() > limits.max_bytes)
    throw InputError(f.path + ": file too large (" + std::to_string(f.text.size()) + " bytes; limit " +
                     std::to_string(limits.max_bytes) + ")");
  if (f.text.find('\0') != std::string::npos) throw InputError(f.path + ": binary file, not Python source");
  const auto* s = reinterpret_cast<const unsigned char*>(f.text.data());
  std::size_t n = f.text.size(), i = 0;
  int line = 1;
  while (i < n) {
    unsigned char c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;
    if (ok && len == 3) {
      unsigned cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      ok = cp >= 0x800 && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok && len == 4) {
      unsigned cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (!ok)
      throw InputError(f.path + ":" + std::to_string(line) + ": not UTF-8 (invalid byte 0x" +
                       [&] {
                         const char* hex = "0123456789abcdef";
                         return std::string{hex[c >> 4], hex[c & 15]};
                       }() +
                       " at offset " + std::to_string(i) + "); not Python 3 source");
    if (c == '\n') ++line;
    i += len;
  }
}

void Walker::checkSyntax(TSNode root) {
  // Iterative pre-order walk: the first error, or a Python 2 construct that
  // the grammar still accepts (print/exec statements, `<>`, `except X, e`).
  TSTreeCursor c = ts_tree_cursor_new(root);
  bool has_error = ts_node_has_error(root);
  TSNode bad{};
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    bool descend = true;
    if (has_error && (!std::strcmp(ts_node_type(n), "ERROR") || ts_node_is_missing(n))) {
      bad = n;
      break;
    }
    const char* t = ts_node_type(n);
    if (!std::strcmp(t, "print_statement") || !std::strcmp(t, "exec_statement") || !std::strcmp(t, "<>") ||
        (!std::strcmp(t, ",") && is(ts_node_parent(n), "except_clause"))) {
      bad = n;
      break;
    }
    if (!has_error && (ts_node_child_count(n) == 0)) descend = false;
    if (descend && ts_tree_cursor_goto_first_child(&c)) continue;
    bool moved = false;
    while (!moved) {
      if (ts_tree_cursor_goto_next_sibling(&c)) {
        moved = true;
      } else if (!ts_tree_cursor_goto_parent(&c)) {
        break;
      }
    }
    if (!moved) break;
  }
  ts_tree_cursor_delete(&c);
  if (!ts_node_is_null(bad)) fail(bad, "syntax error: not valid Python 3");
  if (has_error) fail(root, "syntax error: not valid Python 3");
}

std::vector<TSNode> Walker::findClasses(TSNode root, const std::string& name) {
  // Module-level classes, also inside module-level if/try/with blocks.
  std::vector<TSNode> out, stack{root};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    auto ks = named(n);
    for (auto it = ks.rbegin(); it != ks.rend(); ++it) {
      TSNode k = *it;
      TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
      if (is(def, "class_definition")) {
        if (text(field(def, "name")) == name) out.push_back(def);
        continue;
      }
      if (is(k, "function_definition") || is(k, "decorated_definition")) continue;
      if (is(k, "if_statement") || is(k, "elif_clause") || is(k, "else_clause") || is(k, "try_statement") ||
          is(k, "except_clause") || is(k, "finally_clause") || is(k, "with_statement") || is(k, "block"))
        stack.push_back(k);
    }
  }
  std::sort(out.begin(), out.end(), [](TSNode a, TSNode b) { return ts_node_start_byte(a) < ts_node_start_byte(b); });
  return out;
}

TSNode Walker::findEnabling(TSNode fn) {
  std::vector<TSNode> stack{fn};
  TSNode best{};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (is(n, "assignment")) {
      TSNode l = field(n, "left"), r = field(n, "right");
      if (is(l, "attribute") && is(field(l, "object"), "identifier") && text(field(l, "object")) == "self" &&
          text(field(l, "attribute")) == spec_.enabling_attr &&
          is(r, spec_.enabling_value ? "true" : "false")) {
        if (ts_node_is_null(best) || ts_node_start_byte(n) < ts_node_start_byte(best)) best = n;
      }
    }
    for (TSNode k : named(n)) stack.push_back(k);
  }
  return best;
}

model::Gate Walker::run() {
  checkBytes(file_, limits_);
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  TSTree* tree = ts_parser_parse_string(parser, nullptr, src_.data(), static_cast<uint32_t>(src_.size()));
  ts_parser_delete(parser);
  if (!tree) throw InputError(file_.path + ": could not be parsed");
  std::unique_ptr<TSTree, void (*)(TSTree*)> owner(tree, ts_tree_delete);
  TSNode root = ts_tree_root_node(tree);
  checkSyntax(root);

  // The class: the first name of the spec that the file defines.
  TSNode cls{};
  for (const auto& name : spec_.class_names) {
    auto found = findClasses(root, name);
    if (found.empty()) continue;
    cls = found.back();
    class_name_ = name;
    if (found.size() > 1)
      note("class " + name + " is defined " + std::to_string(found.size()) + " times; Python binds the last one (line " +
           std::to_string(loc(cls).line) + "), which is the one analysed");
    break;
  }
  if (ts_node_is_null(cls)) {
    std::string looked;
    for (const auto& n : spec_.class_names) looked += (looked.empty() ? "" : ", ") + n;
    throw InputError(file_.path + ": no class " + (spec_.class_names.empty() ? "" : spec_.class_names[0]) +
                     " (looked for: " + looked + ")");
  }
  gate_.class_name = class_name_;
  gate_.class_loc = loc(cls, "gate");

  // Module level: imports, constants, platform flags, helper functions.
  {
    State st;
    Frame fr{Frame::Kind::Module};
    walkBlock(root, st, fr);
    globals_ = st.locals;
  }
  // Class body: constants and methods.
  {
    State st;
    Frame fr{Frame::Kind::Class};
    walkBlock(field(cls, "body"), st, fr);
    class_consts_ = st.locals;
  }
  auto init = methods_.find("__init__");
  if (init == methods_.end()) fail(cls, "class " + class_name_ + " has no __init__");
  TSNode en = findEnabling(init->second.node);
  if (ts_node_is_null(en))
    for (auto& [name, fi] : methods_)
      if (ts_node_is_null(en)) en = findEnabling(fi.node);
  if (ts_node_is_null(en))
    fail(init->second.node, "__init__ of " + class_name_ + " never sets self." + spec_.enabling_attr + " = " +
                                (spec_.enabling_value ? "True" : "False") + " (unknown layout)");
  gate_.enabling = loc(en, "enabling");

  // Constructor.
  std::map<std::string, Value> snapshot;
  {
    TSNode fn = init->second.node;
    auto params = parseParams(field(fn, "parameters"));
    State st;
    Value self = vObject("self", "self");
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Param& p = params[i];
      if (i == 0) {
        st.locals[p.name] = self;
        continue;
      }
      if (p.star || p.kwstar) {
        st.locals[p.name] = vObject("module", p.name);
      } else if (p.has_default) {
        Value d = defaultValue(p);
        st.locals[p.name] = d;
        std::string shown = d.k == Value::K::Int || d.k == Value::K::Bool || d.k == Value::K::Str ? d.e->str()
                                                                                                   : shortText(p.def);
        note("constructor parameter " + p.name + " taken at its default (" + shortText(p.def) +
             (shown != shortText(p.def) ? " = " + shown : "") + ")");
      } else if (p.name == "group" || p.name == "device") {
        st.locals[p.name] = vObject("module", p.name);
      } else {
        st.locals[p.name] = paramUnknown(p.name, fn);
      }
    }
    // An instance that never sets the attribute is not enabled (reading it
    // later raises AttributeError).
    st.attrs[spec_.enabling_attr] = vBool(model::BoolC(!spec_.enabling_value));
    Frame fr{Frame::Kind::Ctor};
    fr.in_ctor = true;
    walkBlock(field(fn, "body"), st, fr);
    std::vector<Exit> exits = fr.returns;
    if (!st.dead()) exits.push_back(Exit{st.full(), vNone(), st.attrs, TSNode{}});
    // Deferred enabling (newer vLLM): self.disabled = False sits in a method
    // that a later call reaches (finalize_p2p -> _complete_init). Run that
    // entry method once on the state the constructor leaves.
    bool in_init = ts_node_start_byte(en) >= ts_node_start_byte(fn) && ts_node_end_byte(en) <= ts_node_end_byte(fn);
    if (!in_init && !exits.empty()) {
      std::string entry = deferredEntry(en);
      if (!entry.empty()) {
        note("self." + spec_.enabling_attr + " is enabled outside __init__; the gate assumes " + entry +
             "() runs once after the constructor");
        // Run it from each way the constructor can finish, so that each run
        // sees exactly the attributes that path set; reading one that the
        // path never set raises AttributeError there.
        const FuncInfo& mi = methods_.at(entry);
        auto mp = parseParams(field(mi.node, "parameters"));
        std::vector<Exit> after;
        strict_attrs_ = true;
        for (const auto& x : exits) {
          State ds;
          ds.prefix = x.cond;
          ds.attrs = x.attrs;
          for (std::size_t i = 0; i < mp.size(); ++i)
            ds.locals[mp[i].name] = i == 0 && !mi.is_static ? self
                                    : mp[i].has_default ? defaultValue(mp[i])
                                                        : paramUnknown(mp[i].name, mi.node);
          Frame df{Frame::Kind::Ctor};
          df.in_ctor = true;
          walkBlock(field(mi.node, "body"), ds, df);
          for (auto& r : df.returns) after.push_back(r);
          if (!ds.dead()) after.push_back(Exit{ds.full(), vNone(), ds.attrs, TSNode{}});
        }
        strict_attrs_ = false;
        exits = after;
      }
    }
    std::vector<ExprPtr> adm;
    std::vector<std::pair<ExprPtr, const std::map<std::string, Value>*>> admitted;
    for (const auto& x : exits) {
      ExprPtr a = model::And(x.cond, enabled(x.attrs));
      if (model::isFalse(a)) continue;
      adm.push_back(a);
      admitted.push_back({a, &x.attrs});
    }
    gate_.admit = model::OrAll(adm);
    if (!admitted.empty()) {
      snapshot = *admitted.back().second;
      for (std::size_t i = admitted.size() - 1; i-- > 0;)
        snapshot = mergeMaps(admitted[i].first, *admitted[i].second, snapshot);
    }
    snapshot[spec_.enabling_attr] = vBool(model::BoolC(spec_.enabling_value));
  }

  // Per-call predicate.
  const FuncInfo* pc = nullptr;
  for (const auto& m : spec_.per_call_methods) {
    auto it = methods_.find(m);
    if (it != methods_.end()) {
      pc = &it->second;
      break;
    }
  }
  if (!pc) {
    std::string looked;
    for (const auto& n : spec_.per_call_methods) looked += (looked.empty() ? "" : ", ") + n;
    gate_.has_per_call = false;
    gate_.per_call = model::True();
    note("no per-call method (looked for: " + looked + "); the gate is the constructor alone");
  } else {
    TSNode fn = pc->node;
    gate_.has_per_call = true;
    gate_.per_call_loc = loc(fn, "per-call");
    auto params = parseParams(field(fn, "parameters"));
    State st;
    st.attrs = snapshot;
    std::size_t i = 0;
    if (!pc->is_static && !params.empty()) st.locals[params[i++].name] = vObject("self", "self");
    bool tensor_bound = false;
    for (; i < params.size(); ++i) {
      const Param& p = params[i];
      if (!tensor_bound && !p.star && !p.kwstar) {
        st.locals[p.name] = vObject("tensor", p.name);
        tensor_bound = true;
      } else if (p.has_default) {
        st.locals[p.name] = defaultValue(p);
      } else {
        st.locals[p.name] = paramUnknown(p.name, fn);
      }
    }
    Frame fr{Frame::Kind::PerCall};
    walkBlock(field(fn, "body"), st, fr);
    std::vector<ExprPtr> terms;
    for (const auto& x : fr.returns) {
      ExprPtr t = model::And(x.cond, truthy(x.value));
      if (model::isFalse(t)) continue;
      terms.push_back(t);
      model::GateCheck g;
      g.condition = t;
      g.text = shortText(x.node);
      g.where = loc(x.node, "admit");
      gate_.admits.push_back(g);
    }
    gate_.per_call = model::OrAll(terms);
  }
  return gate_;
}

}  // namespace

model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec, const Limits& limits) {
  Walker w(file, spec, limits);
  return w.run();
}

}  // namespace layergate::python
