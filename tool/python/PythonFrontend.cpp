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
#include <cctype>
#include <filesystem>
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
struct Module;

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
  // Trace: the hops this value went through (probe call, monkeypatch, local,
  // attribute, env override), oldest first; env vars already accounted for by
  // an "env override" hop.
  std::vector<model::Hop> origin;
  std::vector<std::string> env_seen;
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
  bool env_guarded = false;  // inside an if (of this frame) whose condition reads the environment
  TSNode env_if{};           // the innermost such if/elif
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
  struct Guard { ExprPtr cond; TSNode stmt; };
  std::vector<Guard> guards;  // conditions of the enclosing branches of this frame, and their if/elif
};

struct Ctx {
  ExprPtr guard = model::True();   // condition (relative to the state) of evaluating here
  ExprPtr raises = model::False(); // paths that raise while evaluating
};

struct Param {
  std::string name;
  TSNode node{};  // the parameter as written (for locations)
  TSNode def{};
  bool has_default = false;
  bool star = false, kwstar = false, kw_only = false;
};

struct FuncInfo {
  TSNode node{};
  bool is_static = false, is_classmethod = false;
  bool is_method = false;
  Module* mod = nullptr;  // the file that defines it
};

// One given Python file.
struct Module {
  const SourceFile* file = nullptr;
  TSTree* tree = nullptr;
  TSNode root{};
  std::vector<std::string> comps;  // module path components (".py" and __init__ dropped)
  std::vector<std::string> pkg;    // the package it is in (for relative imports)
  std::map<std::string, std::string> aliases;  // local name -> dotted origin
  std::map<std::string, FuncInfo> funcs;       // module-level functions
  std::map<std::string, TSNode> classes;       // module-level classes
  std::map<std::string, Value> globals;
  int walked = 0;  // 0 not yet, 1 walking, 2 done
  bool syntax_ok = true;
};

// A probe replaced by an assignment in a given file (a monkeypatch).
struct Patch {
  std::string probe;  // the attribute name that was assigned
  TSNode value{};     // the right-hand side (lambda, function, staticmethod(f))
  bool bind_self = false;  // assigned on a class without staticmethod: called as a method
  ExprPtr cond;       // under which the assignment runs
  Module* mod = nullptr;
  Location where;
  const void* id = nullptr;
};

// ---------------------------------------------------------------------------

class Walker {
 public:
  Walker(const std::vector<SourceFile>& f, const target::PythonGateSpec& s, const Limits& l)
      : files_(f), spec_(s), limits_(l) {}
  ~Walker() {
    for (auto& m : mods_)
      if (m->tree) ts_tree_delete(m->tree);
  }

  model::Gate run();

 private:
  const std::vector<SourceFile>& files_;
  const target::PythonGateSpec& spec_;
  Limits limits_;
  model::Gate gate_;

  std::vector<std::unique_ptr<Module>> mods_;
  Module* gate_mod_ = nullptr;
  Module* cur_ = nullptr;  // the module whose names are in scope
  mutable const Module* last_mod_ = nullptr;
  std::vector<Patch> patches_;
  bool collecting_patches_ = false;
  std::set<const void*> forwarder_defs_;  // def nodes that are op wrappers
  int forwarder_depth_ = 0;               // inside an inlined op wrapper
  int aux_depth_ = 0;                     // walking another module's body or a patch scan
  int aux_statements_ = 0;
  int tentative_ = 0;
  int env_read_calls_ = 0;  // what is recorded now is kept only if the gate's formulas use it
  std::set<std::string> tentative_env_, tentative_opaques_;
  std::map<std::pair<const void*, uint32_t>, std::size_t> native_index_;
  std::map<std::string, Value> class_consts_;
  std::map<std::string, FuncInfo> methods_;
  std::string class_name_;
  int depth_ = 0;
  int statements_ = 0;
  int merged_ = 0;
  std::vector<const void*> call_stack_;
  std::map<std::string, Sort> opaque_sorts_;
  std::map<std::string, VarKind> opaque_kinds_;
  int probe_depth_ = 0;  // inside the inlined body of a probe function
  std::set<std::string> noted_;
  bool strict_attrs_ = false;  // reading an unset self attribute raises

  // --- text and locations ---------------------------------------------------
  const Module& modOf(TSNode n) const {
    if (last_mod_ && last_mod_->tree == n.tree) return *last_mod_;
    for (const auto& m : mods_)
      if (m->tree == n.tree) return *(last_mod_ = m.get());
    return gate_mod_ ? *gate_mod_ : *mods_.front();
  }
  std::string text(TSNode n) const {
    if (ts_node_is_null(n)) return "";
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    return modOf(n).file->text.substr(a, b - a);
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
    l.file = modOf(n).file->path;
    TSPoint p = ts_node_start_point(n);
    l.line = static_cast<int>(p.row) + 1;
    l.col = static_cast<int>(p.column) + 1;
    l.role = role;
    return l;
  }
  std::string where(TSNode n) const {
 Location l = loc(n);
    return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  [[noreturn]] void fail(TSNode n, const std::string& msg) const { throw InputError(where(n) + ": " + msg); }
  void note(const std::string& n) {
    if (tentative_ > 0) return;
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
  ExprPtr opaqueVar(std::string name, const std::string& txt, Sort sort, const Location& where,
                    VarKind kind = VarKind::Opaque) {
    auto it = opaque_sorts_.find(name);
    if (it != opaque_sorts_.end() && it->second != sort) {
      name += sort == Sort::Int ? "#int" : sort == Sort::Str ? "#str" : "#bool";
      it = opaque_sorts_.find(name);
    }
    // What a probe's own code computes (its NVML loop, its peer-access test)
    // is the probe's answer: free like the probe. A symbol keeps the kind it
    // was first made with.
    if (probe_depth_ > 0 && kind == VarKind::Opaque) kind = VarKind::Probe;
    auto kk = opaque_kinds_.emplace(name, kind).first;
    kind = kk->second;
    if (it != opaque_sorts_.end() && tentative_ == 0) tentative_opaques_.erase(name);
    if (it == opaque_sorts_.end()) {
      if (tentative_ > 0) tentative_opaques_.insert(name);
      opaque_sorts_[name] = sort;
      model::OpaqueSymbol o;
      o.name = name;
      o.text = txt;
      o.where = where;
      o.where.role = "opaque";
      o.free = kind == VarKind::Probe;
      gate_.opaques.push_back(o);
    }
    return model::Var(name, sort, kind);
  }

  Value unknown(TSNode n) {
    Value v;
    v.k = Value::K::Unknown;
    v.text = shortText(n);
    v.loc = loc(n);
    return v;
  }

  ExprPtr probeVar(const std::string& probe) {
    Sort s = (probe == model::kWorldSize || probe == model::kNbytes || probe == "rank" || probe == "device_count")
                 ? Sort::Int
                 : Sort::Bool;
    VarKind k = (probe == model::kWorldSize || probe == model::kFullNvlink || probe == model::kNbytes)
                    ? VarKind::Config
                    : VarKind::Probe;
    return model::Var(probe, s, k);
  }

  void envRead(const std::string& name, TSNode at) {
    ++env_read_calls_;
    if (std::find(gate_.env_reads.begin(), gate_.env_reads.end(), name) != gate_.env_reads.end()) {
      if (tentative_ == 0) tentative_env_.erase(name);
      return;
    }
    if (tentative_ > 0) tentative_env_.insert(name);
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

  // --- trace origins ----------------------------------------------------------
  static bool sameHop(const model::Hop& x, const model::Hop& y) {
    return x.hop == y.hop && x.where.file == y.where.file && x.where.line == y.where.line &&
           x.where.col == y.where.col;
  }
  static void addHops(std::vector<model::Hop>& to, const std::vector<model::Hop>& from) {
    for (const auto& h : from) {
      bool dup = false;
      for (const auto& t : to) dup = dup || sameHop(t, h);
      if (!dup) to.push_back(h);
    }
  }
  // The value came from a probe (possibly patched), not only from a literal.
  static bool hasSource(const Value& v) {
    for (const auto& h : v.origin)
      if (h.hop == "probe" || h.hop == "monkeypatch") return true;
    return false;
  }
  static void unionOrigin(Value& v, const Value& a, const Value& b) {
    // oldest first: the probe's journey before a literal that overrides it
    bool swap = !hasSource(a) && hasSource(b);
    v.origin = swap ? b.origin : a.origin;
    addHops(v.origin, swap ? a.origin : b.origin);
    v.env_seen = a.env_seen;
    for (const auto& e : b.env_seen)
      if (std::find(v.env_seen.begin(), v.env_seen.end(), e) == v.env_seen.end()) v.env_seen.push_back(e);
  }
  model::Hop hop(const std::string& kind, TSNode at) const {
    model::Hop h;
    h.hop = kind;
    h.where = loc(at, "trace");
    h.where.note = shortText(at);
    return h;
  }
  static bool mentionsEnv(const ExprPtr& e) {
    if (!e) return false;
    for (const auto& r : model::varsOf(e))
      if (!model::envNameOf(r.name).empty()) return true;
    return false;
  }
  // A hop at an if/elif: located at the statement, described by its condition.
  model::Hop ifHop(const std::string& kind, TSNode at) const {
    model::Hop h = hop(kind, at);
    TSNode c = field(at, "condition");
    if ((is(at, "if_statement") || is(at, "elif_clause")) && !ts_node_is_null(c))
      h.where.note = (is(at, "elif_clause") ? "elif " : "if ") + shortText(c);
    return h;
  }
  static bool isBoolLiteral(const Value& v) { return v.k == Value::K::Bool && v.e && model::isConst(v.e); }
  // Env vars the value depends on (condition and leaves of a merge included).
  static void envsOf(const Value& v, std::vector<std::string>& out) {
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
  void envOverride(Value& v, const std::function<model::Hop()>& at) {
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
  void traceStore(Value& v, const std::string& kind, TSNode stmt) {
    if (ts_node_is_null(stmt)) return;
    if (v.origin.empty() && !isBoolLiteral(v)) return;
    envOverride(v, [&] { return hop("env override", stmt); });
    addHops(v.origin, {hop(kind, stmt)});
  }

  Value merge(const ExprPtr& c, const Value& a, const Value& b) {
    if (model::isTrue(c)) return a;
    if (model::isFalse(c)) return b;
    Value v = mergeRaw(c, a, b);
    unionOrigin(v, a, b);
    return v;
  }

  Value mergeRaw(const ExprPtr& c, const Value& a, const Value& b) {
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
    auto it = cur_->aliases.find(name);
    return it == cur_->aliases.end() ? name : it->second;
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
    auto g = cur_->globals.find(name);
    if (g != cur_->globals.end() && g->second.k != Value::K::Unknown && g->second.k != Value::K::Undef) return g->second;
    auto pf = spec_.platform_flags.find(name);
    if (pf != spec_.platform_flags.end()) return vBool(model::BoolC(pf->second));
    if (g != cur_->globals.end() && g->second.k != Value::K::Undef) return g->second;
    auto c = class_consts_.find(name);
    if (c != class_consts_.end()) return c->second;
    if (name == class_name_ && !class_name_.empty()) return vObject("class", name);
    if (cur_->aliases.count(name)) {
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
      if (v.k == Value::K::Bool && w.k == Value::K::Bool && v.env.empty() && w.env.empty()) {
        Value r = vBool(is_and ? model::And(v.e, w.e) : model::Or(v.e, w.e));
        unionOrigin(r, v, w);
        v = r;
      } else
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
    // a probe taken as a function (`orig = platform.is_fully_connected`)
    if (collecting_patches_ && spec_.probes.count(attr) && !is(ts_node_parent(n), "call")) {
      Value f = vObject("probefn", attr);
      f.loc = loc(n);
      return f;
    }
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

  // Python builtins and logging: never candidate native ops.
  static bool notAnOp(const std::string& name) {
    static const std::set<std::string> names{
        "isinstance", "issubclass", "range", "list", "dict", "set", "tuple", "frozenset", "len", "print",
        "getattr", "hasattr", "setattr", "delattr", "super", "enumerate", "zip", "sorted", "reversed", "map",
        "filter", "sum", "abs", "round", "float", "type", "id", "hash", "iter", "next", "repr", "format", "open",
        "object", "min", "max", "any", "all", "int", "bool", "str", "bytes", "callable", "vars", "divmod", "pow",
        "staticmethod", "classmethod", "property", "NotImplementedError", "ValueError", "RuntimeError",
        "AssertionError", "TypeError", "KeyError", "Exception"};
    return names.count(name) > 0;
  }
  static bool isLoggingObject(const std::string& base) {
    std::string b = lower(base);
    return b == "logger" || b == "logging" || b == "log" || b == "_logger" || b == "warnings" ||
           b.find("logger") != std::string::npos;
  }
  // The leftmost identifier of a.b.c (empty when it is not a plain chain).
  std::string baseName(TSNode n) const {
    while (is(n, "attribute")) n = field(n, "object");
    return is(n, "identifier") ? text(n) : "";
  }

  Value evalCall(TSNode n, State& st, Frame& fr, Ctx& cx) {
    TSNode fn = field(n, "function");
    Args a = parseArgs(field(n, "arguments"));
    if (is(fn, "identifier")) {
      std::string name = text(fn);
      bool local = st.locals.count(name) > 0 && fr.kind != Frame::Kind::Module;
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
        if (name == "setattr" && collecting_patches_) notePatchSetattr(n, a, st, fr, cx);
        auto mf = cur_->funcs.find(name);
        if (mf != cur_->funcs.end() && !cur_->aliases.count(name))
          return callGiven(mf->second, name, Value{}, n, fn, a, st, fr, cx);
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
        if (!notAnOp(name) && recordingCalls(fr, n)) recordNative(n, fn, "", st, fr, cx);
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
      Value o = eval(obj, st, fr, cx);
      if (o.k == Value::K::Object && o.tag == "environ" && attr == "get") return envGet(n, a, st, fr, cx);
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
      if (!isLoggingObject(base) && !(o.k == Value::K::Object && o.tag == "environ") && recordingCalls(fr, n))
        recordNative(n, fn, "", st, fr, cx);
      return unknown(n);
    }
    return unknown(n);
  }

  Value probeValue(const std::string& probe) {
    ExprPtr v = probeVar(probe);
    return v->sort == Sort::Int ? vInt(v) : vBool(v);
  }
  // The probe's value at a call: its variable, with the call as first hop.
  Value probeAt(const std::string& probe, TSNode call) {
    Value v = probeValue(probe);
    v.origin.push_back(hop("probe", call));
    return v;
  }

  // --- given files: calls, op wrappers, native calls ---------------------------------
  // A call to a function defined in one of the given files.
  Value callGiven(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, TSNode fnnode,
                  const Args& a, State& st, Frame& fr, Ctx& cx) {
    bool fwd = forwarder_defs_.count(fi.node.id) > 0;
    if (fwd && recordingCalls(fr, call)) recordNative(call, fnnode, fname, st, fr, cx);
    if (fwd) ++forwarder_depth_;
    Value v = callFunction(fi, fname, self, call, a, st, fr, cx);
    if (fwd) --forwarder_depth_;
    if (spec_.probes.count(fname)) v = applyPatches(fname, v, call, a, st, fr, cx);
    return v;
  }

  bool recordingCalls(const Frame& fr, TSNode call) const {
    return fr.in_ctor && forwarder_depth_ == 0 && aux_depth_ == 0 && !collecting_patches_ &&
           &modOf(call) == gate_mod_;
  }

  static std::string opName(const std::string& callee) {
    std::vector<std::string> parts = splitDots(callee);
    while (parts.size() > 1 && (parts.back() == "default" || parts.back() == "__call__")) parts.pop_back();
    return parts.empty() ? callee : parts.back();
  }

  // The value as a Bool/Int expression for the trace, or null.
  ExprPtr flagExpr(const Value& v) {
    switch (v.k) {
      case Value::K::Bool:
      case Value::K::Int: return v.e;
      case Value::K::Merge: {
        ExprPtr x = flagExpr(*v.a), y = flagExpr(*v.b);
        if (x && y) {
          if (x->sort != y->sort) return nullptr;
          return x->sort == Sort::Bool ? iteB(v.cond, x, y) : model::Ite(v.cond, x, y);
        }
        auto absent = [](const Value& w) { return w.k == Value::K::Undef || w.k == Value::K::None; };
        if (x && absent(*v.b)) return x;
        if (y && absent(*v.a)) return y;
        return nullptr;
      }
      default: return nullptr;
    }
  }

  // A call from the gate class to a function it does not define. Its
  // arguments are evaluated on copies: the gate's own semantics (which never
  // looked into such calls' arguments) stay as they were.
  void recordNative(TSNode call, TSNode fnnode, const std::string& name, State& st, Frame& fr, Ctx& cx) {
    model::NativeCall nc;
    nc.callee = shortText(fnnode);
    nc.name = name.empty() ? opName(nc.callee) : name;
    nc.reached = model::And(fr.entry, model::And(st.full(), cx.guard));
    nc.where = loc(call, "native call");
    nc.where.note = shortText(call);
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
    addNative(std::move(nc), call);
  }

  void addNative(model::NativeCall nc, TSNode call) {
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

  std::vector<Param> parseParams(TSNode params) {
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

  // Bind call arguments to a function's parameters in a fresh state.
  void bindParams(const std::vector<Param>& params, bool is_method, const Value& self, const std::vector<Value>& pos,
                  std::map<std::string, Value> kw, TSNode call, State& cs) {
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

  struct ModuleScope {
    Walker& w;
    Module* saved;
    ModuleScope(Walker& w_, Module* m) : w(w_), saved(w_.cur_) {
      if (m) {
        if (m != w.gate_mod_) w.ensureWalked(m);
        w.cur_ = m;
      }
    }
    ~ModuleScope() { w.cur_ = saved; }
  };

  // Inline a function of a given file: bind the arguments, walk the body with
  // its own frame, merge the exits into one value and the attributes it leaves.
  Value callFunction(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call, const Args& a,
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
  Value inlineBody(const FuncInfo& fi, const std::string& fname, const Value& self, TSNode call,
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

  void collectVars(const Value& v, std::set<std::string>& out) {
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

  // --- given files: modules and imports -------------------------------------------
  struct AuxAbort {};

  static std::vector<std::string> splitDots(const std::string& d) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : d) {
      if (ch == '.') {
        out.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    out.push_back(cur);
    return out;
  }
  static std::string joinDots(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ".") + p;
    return out;
  }

  // A file's module names: every suffix of its path components, so that
  // a/b/sgl_kernel/allreduce.py answers to allreduce, sgl_kernel.allreduce, ...
  // and a package's __init__.py to its folder. A '.' inside a folder name
  // cannot be imported; it is kept apart from the separators.
  static void moduleNames(Module& m) {
    std::string p = std::filesystem::path(m.file->path).lexically_normal().generic_string();
    std::vector<std::string> comps;
    std::string cur;
    for (char ch : p + "/") {
      if (ch == '/') {
        if (!cur.empty() && cur != ".") comps.push_back(cur);
        cur.clear();
      } else {
        cur += ch == '.' ? '\x1f' : ch;
      }
    }
    if (comps.empty()) return;
    std::string& last = comps.back();
    const std::string py = "\x1fpy";
    if (last.size() > py.size() && last.compare(last.size() - py.size(), py.size(), py) == 0)
      last.resize(last.size() - py.size());
    m.pkg.assign(comps.begin(), comps.end() - 1);
    if (last == "__init__") comps.pop_back();
    m.comps = comps;
  }

  Module* findModule(const std::vector<std::string>& comps, const Module* from) const {
    Module* best = nullptr;
    std::size_t best_common = 0;
    std::size_t n = comps.size();
    if (n == 0) return nullptr;
    for (const auto& m : mods_) {
      if (m->comps.size() < n || !std::equal(comps.begin(), comps.end(), m->comps.end() - static_cast<long>(n)))
        continue;
      std::size_t common = 0;
      if (from)
        while (common < from->pkg.size() && common < m->comps.size() && from->pkg[common] == m->comps[common])
          ++common;
      if (!best || common > best_common) best = m.get(), best_common = common;
    }
    return best;
  }

  struct Resolved {
    Module* mod = nullptr;
    const FuncInfo* fn = nullptr;
  };

  // A dotted name (alias-resolved) to a module or function of the given files.
  // The import must name a suffix of the file's path; when no given file
  // answers to the full package path, leading packages are dropped (a fixture
  // that lays the files out flat).
  Resolved resolveDotted(const std::string& dotted, const Module* from, int depth = 0) {
    if (depth > 8 || dotted.empty()) return {};
    auto comps = splitDots(dotted);
    for (std::size_t skip = 0; skip < comps.size(); ++skip)
      for (std::size_t k = comps.size(); k > skip; --k) {
        std::vector<std::string> part(comps.begin() + static_cast<long>(skip), comps.begin() + static_cast<long>(k));
        Module* m = findModule(part, from);
        if (!m) continue;
        Resolved r = resolveIn(m, {comps.begin() + static_cast<long>(k), comps.end()}, depth);
        if (r.mod) return r;
      }
    return {};
  }

  Resolved resolveIn(Module* m, const std::vector<std::string>& rest, int depth) {
    if (rest.empty()) return {m, nullptr};
    const std::string& name = rest[0];
    auto al = m->aliases.find(name);
    if (al == m->aliases.end()) {
      auto f = m->funcs.find(name);
      if (f != m->funcs.end() && rest.size() == 1) return {m, &f->second};
      if (rest.size() == 2) {
        auto g = m->funcs.find(name + "." + rest[1]);  // Class.staticmethod
        if (g != m->funcs.end()) return {m, &g->second};
      }
      return {};
    }
    std::vector<std::string> parts = splitDots(al->second);
    parts.insert(parts.end(), rest.begin() + 1, rest.end());
    return resolveDotted(joinDots(parts), m, depth + 1);
  }

  // The module body of a given file other than the gate's, walked once when a
  // name of it is first needed; what it records counts only if the gate uses it.
  void ensureWalked(Module* m) {
    if (!m || m->walked) return;
    m->walked = 1;
    Module* saved = cur_;
    bool collecting = collecting_patches_;
    auto stack = call_stack_.size();
    cur_ = m;
    ++aux_depth_;
    ++tentative_;
    collecting_patches_ = true;
    State st;
    std::string problem;
    try {
      Frame fr{Frame::Kind::Module};
      walkBlock(m->root, st, fr);
    } catch (const AuxAbort&) {
      problem = "more than " + std::to_string(kMaxStatements) + " statements in the given helper files";
    } catch (const InputError& e) {
      problem = e.what();
    }
    m->globals = st.locals;
    call_stack_.resize(stack);
    collecting_patches_ = collecting;
    --tentative_;
    --aux_depth_;
    cur_ = saved;
    m->walked = 2;
    if (!problem.empty()) note(m->file->path + ": module body read in part (" + problem + ")");
  }

  // Imports, functions and classes of a file, before anything is walked.
  void collectDecls(Module& m) {
    Module* saved = cur_;
    cur_ = &m;
    std::vector<TSNode> stack{m.root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      for (TSNode k : named(n)) {
        TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
        TSNode dec = is(k, "decorated_definition") ? k : TSNode{};
        if (is(k, "import_statement") || is(k, "import_from_statement")) {
          recordImport(k);
        } else if (is(def, "function_definition")) {
          FuncInfo fi = funcInfo(def, dec, false);
          m.funcs[text(field(def, "name"))] = fi;
        } else if (is(def, "class_definition")) {
          std::string cname = text(field(def, "name"));
          m.classes[cname] = def;
          for (TSNode s : named(field(def, "body"))) {
            TSNode md = is(s, "decorated_definition") ? field(s, "definition") : s;
            if (!is(md, "function_definition")) continue;
            FuncInfo fi = funcInfo(md, is(s, "decorated_definition") ? s : TSNode{}, true);
            m.funcs[cname + "." + text(field(md, "name"))] = fi;
          }
        } else if (is(k, "if_statement") || is(k, "elif_clause") || is(k, "else_clause") ||
                   is(k, "try_statement") || is(k, "except_clause") || is(k, "finally_clause") ||
                   is(k, "with_statement") || is(k, "block")) {
          stack.push_back(k);
        }
      }
    }
    cur_ = saved;
  }

  // --- monkeypatched probes ------------------------------------------------------------
  bool isPatchSite(TSNode n) const {
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
  bool hasPatchSite(TSNode root) const {
    std::vector<TSNode> stack{root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      if (isPatchSite(n)) return true;
      for (TSNode k : named(n)) stack.push_back(k);
    }
    return false;
  }

  static bool looksLikeClass(const std::string& objText) {
    std::string last = lastComponent(objText);
    return !last.empty() && std::isupper(static_cast<unsigned char>(last[0]));
  }

  void addPatch(const std::string& probe, TSNode value, TSNode target, const std::string& obj, const ExprPtr& cond,
                TSNode at) {
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

  void notePatchTarget(TSNode t, TSNode rhs, State& st, Frame& fr) {
    if (!is(t, "attribute")) return;
    std::string attr = text(field(t, "attribute"));
    if (!spec_.probes.count(attr)) return;
    TSNode stmt = ts_node_parent(t);
    addPatch(attr, rhs, t, text(field(t, "object")), model::And(fr.entry, st.full()), is(stmt, "assignment") ? stmt : t);
  }

  void notePatchSetattr(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
    if (a.pos.size() < 3) return;
    Value name = eval(a.pos[1], st, fr, cx);
    if (name.k != Value::K::Str || name.e->op != Op::StrConst || !spec_.probes.count(name.e->s)) return;
    addPatch(name.e->s, a.pos[2], call, text(a.pos[0]), model::And(fr.entry, model::And(st.full(), cx.guard)), call);
  }

  // Functions that patch a probe (a plugin's register()): walked on their own,
  // assuming they run (the framework calls them).
  void scanPatchFunctions(Module& m) {
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
  Value applyPatches(const std::string& probe, Value orig, TSNode call, const Args& a, State& st, Frame& fr,
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

  Value evalPatch(const Patch& p, TSNode call, const std::vector<Value>& pos, const std::map<std::string, Value>& kw,
                  State& st, Frame& fr, Ctx& cx) {
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

  // --- op wrappers ---------------------------------------------------------------------
  bool externalCallee(TSNode f, const std::vector<Param>& params, Module& m) {
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
    else if (m.aliases.count(base) && resolveDotted(d, &m).fn)
      ext = false;
    cur_ = saved;
    return ext;
  }

  void findForwarders(Module& m) {
    std::vector<std::pair<std::string, FuncInfo>> fs(m.funcs.begin(), m.funcs.end());
    std::sort(fs.begin(), fs.end(),
              [](const auto& x, const auto& y) { return ts_node_start_byte(x.second.node) < ts_node_start_byte(y.second.node); });
    for (const auto& [key, fi] : fs) {
      if (fi.is_method && !fi.is_static) continue;
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
        if (!externalCallee(f, params, m)) continue;
        model::Forwarder fw;
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
      gate_.forwarders.push_back(best);
      forwarder_defs_.insert(fi.node.id);
    }
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

  void assignTarget(TSNode t, const Value& v0, State& st, Frame& fr, TSNode stmt = TSNode{}) {
    if (is(t, "identifier")) {
      Value v = v0;
      traceStore(v, "local", stmt);
      st.locals[text(t)] = v;
      return;
    }
    if (is(t, "attribute")) {
      TSNode obj = field(t, "object");
      if (is(obj, "identifier")) {
        auto it = st.locals.find(text(obj));
        if (it != st.locals.end() && it->second.k == Value::K::Object && it->second.tag == "self") {
          Value v = v0;
          traceStore(v, "attribute", stmt);
          st.attrs[text(field(t, "attribute"))] = v;
        }
      }
      return;
    }
    const Value& v = v0;
    if (is(t, "pattern_list") || is(t, "tuple_pattern") || is(t, "list_pattern") || is(t, "tuple") ||
        is(t, "list") || is(t, "expression_list")) {
      auto ts = named(t);
      bool simple = v.k == Value::K::List && v.items.size() == ts.size();
      for (std::size_t i = 0; i < ts.size(); ++i) {
        if (simple) {
          assignTarget(ts[i], v.items[i], st, fr, stmt);
        } else {
          Value u = unknown(ts[i]);
          u.text = shortText(ts[i]) + " (unpacked from line " + std::to_string(loc(t).line) + ")";
          assignTarget(ts[i], u, st, fr);
        }
      }
      return;
    }
    if (is(t, "parenthesized_expression")) {
      assignTarget(firstNamed(t), v, st, fr, stmt);
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
    for (TSNode t : targets) {
      if (collecting_patches_) notePatchTarget(t, cur, st, fr);
      assignTarget(t, v, st, fr, n);
    }
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
                 State& st, Frame& fr, TSNode site = TSNode{}) {
    std::vector<State> bases, taken;
    std::vector<ExprPtr> conds;
    State cur = st;
    ExprPtr none_before = model::True();
    for (const auto& cl : clauses) {
      ExprPtr c = cl.cond(cur);
      State t = branch(cur, c);
      if (model::isFalse(c)) {
        t.rel = model::False();
      } else {
        if (!ts_node_is_null(cl.if_cond)) fr.ifs.push_back({cl.if_cond, false});
        fr.guards.push_back({model::And(none_before, c),
                             ts_node_is_null(cl.if_cond) ? TSNode{} : ts_node_parent(cl.if_cond)});
        cl.body(t);
        fr.guards.pop_back();
        if (!ts_node_is_null(cl.if_cond)) fr.ifs.pop_back();
      }
      none_before = model::And(none_before, model::Not(c));
      bases.push_back(cur);
      taken.push_back(t);
      conds.push_back(c);
      cur = branch(cur, model::Not(c));
      if (model::isTrue(c)) cur.rel = model::False();
      if (cur.dead()) break;
    }
    if (else_body && !cur.dead()) {
      if (!ts_node_is_null(last_cond)) fr.ifs.push_back({last_cond, true});
      fr.guards.push_back({none_before, ts_node_is_null(last_cond) ? TSNode{} : ts_node_parent(last_cond)});
      (*else_body)(cur);
      fr.guards.pop_back();
      if (!ts_node_is_null(last_cond)) fr.ifs.pop_back();
    }
    State m = cur;
    for (std::size_t i = taken.size(); i-- > 0;) {
      State before = m;
      m = join(bases[i], conds[i], taken[i], m);
      if (!ts_node_is_null(site)) {
        overrideAtJoin(m.locals, taken[i].locals, before.locals, site);
        overrideAtJoin(m.attrs, taken[i].attrs, before.attrs, site);
      }
    }
    st = m;
  }

  // After an if: a traced variable that now depends on an env var through the
  // branch condition was overridden in one branch (`if env: flag = True`). The
  // hop is the `if` that reads the environment; the forced branch's own hops
  // (the literal's assignment) are folded into it.
  void overrideAtJoin(std::map<std::string, Value>& merged, const std::map<std::string, Value>& t,
                      const std::map<std::string, Value>& e, TSNode site) {
    for (auto& [k, v] : merged) {
      if (v.origin.empty()) continue;
      auto ti = t.find(k), ei = e.find(k);
      if (ti == t.end() || ei == e.end()) continue;
      if (ti->second.e && ei->second.e && ti->second.e == ei->second.e && ti->second.k == ei->second.k) continue;
      auto before = v.origin.size();
      envOverride(v, [&] { return ifHop("env override", site); });
      if (v.origin.size() == before) continue;
      const Value* forced = nullptr;
      if (!hasSource(ti->second) && hasSource(ei->second)) forced = &ti->second;
      if (!hasSource(ei->second) && hasSource(ti->second)) forced = &ei->second;
      if (!forced) continue;
      const Value& other = forced == &ti->second ? ei->second : ti->second;
      std::vector<model::Hop> kept;
      for (const auto& h : v.origin) {
        bool own = false, shared = false;
        for (const auto& x : forced->origin) own = own || sameHop(x, h);
        for (const auto& x : other.origin) shared = shared || sameHop(x, h);
        if (!own || shared) kept.push_back(h);
      }
      v.origin = kept;
    }
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
    walkChain(cls, ts_node_is_null(else_body) ? nullptr : &eb, arms.back().first, st, fr, n);
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
      // Whether an import succeeds is a fact of the user's machine (the
      // kernel library is installed or not): a probe, free like p2p_ok. An
      // exception from other code is code we did not interpret.
      // A try at module level runs at import time: what fails there is the
      // installed software (the library, its ops), also a machine fact.
      VarKind kind = fr.kind == Frame::Kind::Module || importsOnly(body) ? VarKind::Probe : VarKind::Opaque;
      ExprPtr ok = opaqueVar("try@L" + std::to_string(line) + " ok: " + what,
                             "the try block at line " + std::to_string(line) + " completes without an exception",
                             Sort::Bool, loc(n), kind);
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
                              "the exception is caught by `except " + ht + "`", Sort::Bool, loc(h), kind);
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

  // A try body of imports (and flag assignments of literals beside them).
  static bool importsOnly(TSNode body) {
    bool any_import = false;
    for (TSNode k : named(body)) {
      if (isExtra(k) || is(k, "pass_statement")) continue;
      if (is(k, "import_statement") || is(k, "import_from_statement")) {
        any_import = true;
        continue;
      }
      if (is(k, "expression_statement")) {
        TSNode a = firstNamed(k);
        TSNode r = is(a, "assignment") ? field(a, "right") : TSNode{};
        if (!ts_node_is_null(r) && (is(r, "true") || is(r, "false") || is(r, "none") || is(r, "integer") ||
                                    is(r, "string")))
          continue;
      }
      return false;
    }
    return any_import;
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
          cur_->aliases[first] = first;
        } else if (is(k, "aliased_import")) {
          cur_->aliases[text(field(k, "alias"))] = text(field(k, "name"));
        }
      }
      return;
    }
    // from M import a, b as c
    std::string mod = text(field(n, "module_name"));
    TSNode modnode = field(n, "module_name");
    if (is(modnode, "relative_import")) {
      // from . import y / from ..x import f: relative to this file's package
      std::size_t dots = 0;
      std::string rest;
      for (TSNode k : children(modnode, false)) {
        if (is(k, "import_prefix")) dots = text(k).size();
        else if (is(k, "dotted_name")) rest = text(k);
      }
      std::vector<std::string> base = cur_->pkg;
      for (std::size_t i = 1; i < dots && !base.empty(); ++i) base.pop_back();
      if (!rest.empty())
        for (const auto& part : splitDots(rest)) base.push_back(part);
      mod = joinDots(base);
    }
    for (TSNode k : named(n)) {
      if (ts_node_eq(k, modnode)) continue;
      if (is(k, "dotted_name")) cur_->aliases[text(k)] = mod + "." + text(k);
      else if (is(k, "aliased_import")) cur_->aliases[text(field(k, "alias"))] = mod + "." + text(field(k, "name"));
    }
  }

  FuncInfo funcInfo(TSNode def, TSNode decorated, bool is_method) {
    FuncInfo fi;
    fi.node = def;
    fi.mod = cur_;
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
    if (aux_depth_ > 0) {
      if (++aux_statements_ > kMaxStatements) throw AuxAbort{};
    } else if (++statements_ > kMaxStatements) {
      fail(n, "more than " + std::to_string(kMaxStatements) + " statements on the analysed paths; not analysed");
    }
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
      Exit x{st.full(), val, st.attrs, n};
      for (const auto& g : fr.guards)
        if (mentionsEnv(g.cond)) {
          x.env_guarded = true;
          if (!ts_node_is_null(g.stmt)) x.env_if = g.stmt;
        }
      fr.returns.push_back(x);
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
        cur_->funcs[name] = funcInfo(def, dec, false);
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
  void pruneTentative();
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
  if (files_.empty()) throw InputError("no Python file given");
  for (const auto& f : files_) checkBytes(f, limits_);
  {
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    for (const auto& f : files_) {
      auto m = std::make_unique<Module>();
      m->file = &f;
      m->tree = ts_parser_parse_string(parser, nullptr, f.text.data(), static_cast<uint32_t>(f.text.size()));
      if (!m->tree) {
        ts_parser_delete(parser);
        throw InputError(f.path + ": could not be parsed");
      }
      m->root = ts_tree_root_node(m->tree);
      moduleNames(*m);
      mods_.push_back(std::move(m));
    }
    ts_parser_delete(parser);
  }

  // The gate file: the first that defines a class the spec names (the first
  // such name in it).
  TSNode cls{};
  std::string first_error;
  for (auto& m : mods_) {
    std::string err;
    try {
      checkSyntax(m->root);
    } catch (const InputError& e) {
      m->syntax_ok = false;
      err = e.what();
    }
    for (const auto& name : spec_.class_names) {
      auto found = findClasses(m->root, name);
      if (found.empty()) continue;
      if (!m->syntax_ok) throw InputError(err);
      cls = found.back();
      class_name_ = name;
      gate_mod_ = m.get();
      if (found.size() > 1)
        note("class " + name + " is defined " + std::to_string(found.size()) +
             " times; Python binds the last one (line " + std::to_string(loc(cls).line) +
             "), which is the one analysed");
      break;
    }
    if (gate_mod_) break;
    if (!m->syntax_ok && first_error.empty()) first_error = err;
  }
  if (!gate_mod_) {
    if (!first_error.empty()) throw InputError(first_error);
    std::string looked, paths;
    for (const auto& n : spec_.class_names) looked += (looked.empty() ? "" : ", ") + n;
    for (const auto& f : files_) paths += (paths.empty() ? "" : ", ") + f.path;
    throw InputError(paths + ": no class " + (spec_.class_names.empty() ? "" : spec_.class_names[0]) +
                     " (looked for: " + looked + ")");
  }
  cur_ = gate_mod_;
  gate_.class_name = class_name_;
  gate_.class_loc = loc(cls, "gate");
  for (const auto& f : files_) gate_.files.push_back(f.path);
  bool after = false;
  for (auto& m : mods_) {
    if (after) {
      try {
        checkSyntax(m->root);
      } catch (const InputError&) {
        m->syntax_ok = false;
      }
    }
    after = after || m.get() == gate_mod_;
  }
  for (auto& m : mods_)
    if (!m->syntax_ok)
      note(m->file->path + ": not valid Python 3 as far as tree-sitter can tell; read as far as it parses");

  // Every file's imports, functions and classes; then the op wrappers.
  for (auto& m : mods_) collectDecls(*m);
  for (auto& m : mods_) findForwarders(*m);

  // Monkeypatched probes: the other files' bodies first, then the gate
  // module's body (walked below as before), then functions that patch.
  collecting_patches_ = true;
  for (auto& m : mods_)
    if (m.get() != gate_mod_ && hasPatchSite(m->root)) ensureWalked(m.get());

  // Module level: imports, constants, platform flags, helper functions.
  {
    gate_mod_->walked = 1;
    State st;
    Frame fr{Frame::Kind::Module};
    walkBlock(gate_mod_->root, st, fr);
    gate_mod_->globals = st.locals;
    gate_mod_->walked = 2;
  }
  for (auto& m : mods_) scanPatchFunctions(*m);
  collecting_patches_ = false;
  cur_ = gate_mod_;
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
  pruneTentative();
  return gate_;
}

void Walker::pruneTentative() {
  // What the other files' bodies and the native calls' arguments recorded
  // stays only when the gate's formulas or the trace use it.
  std::set<std::string> used;
  auto add = [&](const ExprPtr& e) {
    if (e)
      for (const auto& r : model::varsOf(e)) used.insert(r.name);
  };
  add(gate_.admit);
  add(gate_.per_call);
  for (const auto& r : gate_.rejects) add(r.condition);
  for (const auto& r : gate_.admits) add(r.condition);
  // opaque symbols are listed for the gate's formulas only; env reads also
  // for the values passed to native calls (a flag forced by the environment)
  std::set<std::string> gate_used = used;
  for (const auto& c : gate_.native_calls)
    for (const auto& a : c.args) add(a.value);
  std::vector<std::string> envs;
  std::vector<Location> locs;
  for (std::size_t i = 0; i < gate_.env_reads.size(); ++i) {
    const std::string& n = gate_.env_reads[i];
    if (tentative_env_.count(n) && !used.count(model::envVar(n)) && !used.count(model::envSetVar(n))) continue;
    envs.push_back(n);
    locs.push_back(gate_.env_read_locs[i]);
  }
  gate_.env_reads = envs;
  gate_.env_read_locs = locs;
  std::vector<model::OpaqueSymbol> ops;
  for (const auto& o : gate_.opaques)
    if (!tentative_opaques_.count(o.name) || gate_used.count(o.name)) ops.push_back(o);
  gate_.opaques = ops;
}

}  // namespace

model::Gate extractGate(const std::vector<SourceFile>& files, const target::PythonGateSpec& spec,
                        const Limits& limits) {
  Walker w(files, spec, limits);
  return w.run();
}

model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec, const Limits& limits) {
  return extractGate(std::vector<SourceFile>{file}, spec, limits);
}

}  // namespace layergate::python
