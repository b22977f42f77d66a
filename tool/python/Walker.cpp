// Walker: text and locations, symbols, and the structure (run, pruneTentative).
#include "python/Walker.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobs/Trace.h"
#include "model/Errors.h"
#include "python/Parse.h"

namespace layergate::python::detail {

// --- text and locations ---------------------------------------------------

const Module& Walker::modOf(TSNode n) const {
  if (last_mod_ && last_mod_->tree == n.tree) return *last_mod_;
  for (const auto& m : mods_)
    if (m->tree == n.tree) return *(last_mod_ = m.get());
  return gate_mod_ ? *gate_mod_ : *mods_.front();
}

std::string Walker::text(TSNode n) const {
  if (ts_node_is_null(n)) return "";
  uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
  return modOf(n).file->text.substr(a, b - a);
}

std::string Walker::shortText(TSNode n) const {
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

Location Walker::loc(TSNode n, const std::string& role) const {
  Location l;
  l.file = modOf(n).file->path;
  TSPoint p = ts_node_start_point(n);
  l.line = static_cast<int>(p.row) + 1;
  l.col = static_cast<int>(p.column) + 1;
  l.role = role;
  return l;
}

std::string Walker::where(TSNode n) const {
 Location l = loc(n);
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

[[noreturn]] void Walker::fail(TSNode n, const std::string& msg) const { throw InputError(where(n) + ": " + msg); }

void Walker::note(const std::string& n) {
  if (tentative_ > 0) return;
  if (noted_.insert(n).second) gate_.notes.push_back(n);
}

// --- symbols ----------------------------------------------------------------

ExprPtr Walker::opaqueVar(std::string name, const std::string& txt, Sort sort, const Location& where, VarKind kind) {
  auto it = opaque_sorts_.find(name);
  if (it != opaque_sorts_.end() && it->second != sort) {
    name += sort == Sort::Int ? "#int" : sort == Sort::Str ? "#str" : "#bool";
    it = opaque_sorts_.find(name);
  }
  // What a probe's own code computes (its NVML loop, its peer-access test)
  // is the probe's answer: free like the probe. A symbol keeps the kind it
  // was first made with.
  if (probe_depth_ > 0 && kind == VarKind::Opaque) kind = VarKind::Probe;
  kind = opaque_kinds_.emplace(name, kind).first->second;
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

Value Walker::unknown(TSNode n) {
  Value v;
  v.k = Value::K::Unknown;
  v.text = shortText(n);
  v.loc = loc(n);
  return v;
}

ExprPtr Walker::probeVar(const std::string& probe) {
  // A declared variable (the group's size, the link flag, the rank) as its
  // declaration says; any other name a bool fact of the machine.
  if (ExprPtr v = target::declaredVar(spec_.variables, probe)) return v;
  return model::Var(probe, Sort::Bool, VarKind::Probe);
}

std::optional<Value> Walker::byteCount() {
  if (spec_.roles.bytes.empty()) return std::nullopt;
  return vInt(probeVar(spec_.roles.bytes));
}

void Walker::envRead(const std::string& name, TSNode at) {
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
std::vector<std::string> Walker::spellings(const std::string& c) {
  std::vector<std::string> out{c};
  std::string cap = c, up = c;
  if (!cap.empty()) cap[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(cap[0])));
  for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (cap != c) out.push_back(cap);
  if (up != c && up != cap) out.push_back(up);
  return out;
}

ExprPtr Walker::envTruthyValue(const std::string& name) {
  std::vector<ExprPtr> xs;
  for (const char* s : {"1", "true", "True", "TRUE"})
    xs.push_back(model::Cmp(Op::Eq, model::EnvValue(name), model::StrC(s)));
  return model::OrAll(xs);
}

// --- structure ----------------------------------------------------------------

// The public method that leads, through self.<m>() calls, to the method
// holding the enabling statement `en`.
std::string Walker::deferredEntry(TSNode en) {
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

namespace {

// Input checks that need no tree.
void checkBytes(const SourceFile& f, const Limits& limits) {
  if (f.text.size() > limits.max_bytes)
    throw InputError(f.path + ": file too large (" + std::to_string(f.text.size()) + " bytes; limit " +
                     std::to_string(limits.max_bytes) + ") " + limitHint("max-file-bytes"));
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

}  // namespace

void Walker::checkSyntax(const Module& m) {
  // A text is walked once per run: its verdict (where the refused construct
  // starts) is kept with its parse.
  constexpr long kClean = -1;
  std::optional<long> known = syntaxVerdict(m.file->text);
  if (!known) {
    TSNode bad = firstRefused(m.root);
    TSPoint p = ts_node_start_point(bad);
    known = ts_node_is_null(bad) ? kClean : (static_cast<long>(p.row) << 32) | static_cast<long>(p.column);
    rememberSyntaxVerdict(m.file->text, *known);
  }
  if (*known == kClean) return;
  throw InputError(m.file->path + ":" + std::to_string((*known >> 32) + 1) + ":" +
                   std::to_string((*known & 0xffffffffL) + 1) + ": syntax error: not valid Python 3");
}

TSNode Walker::firstRefused(TSNode root) {
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
  if (ts_node_is_null(bad) && has_error) bad = root;
  return bad;
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
  for (const auto& f : files_) addModule(f, false);
  if (spec_.class_names.empty() && spec_.policy.active()) return runPolicy();

  // The gate file: the first that defines a class the spec names (the first
  // such name in it).
  TSNode cls{};
  std::string first_error;
  for (auto& m : mods_) {
    std::string err;
    try {
      checkSyntax(*m);
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
        checkSyntax(*m);
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
  std::optional<trace::Scope> phase(std::in_place, "Follow imports");
  for (auto& m : mods_) collectDecls(*m);
  followImports();
  // Op wrappers, then wrappers of wrappers (a pass per level of the chain).
  for (int pass = 0; pass < 3; ++pass) {
    std::size_t before = gate_.forwarders.size();
    for (auto& m : mods_) findForwarders(*m);
    if (gate_.forwarders.size() == before) break;
  }

  // Monkeypatched probes: the other files' bodies first, then the gate
  // module's body (walked below as before), then functions that patch.
  phase.emplace("Walk gate");
  collecting_patches_ = true;
  for (auto& m : mods_)
    if (m.get() != gate_mod_ && !m->from_disk && hasPatchSite(m->root)) ensureWalked(m.get());

  // Module level: imports, constants, platform flags, helper functions.
  {
    gate_mod_->walked = 1;
    State st;
    Frame fr{Frame::Kind::Module};
    walkBlock(gate_mod_->root, st, fr);
    gate_mod_->globals = st.locals;
    gate_mod_->walked = 2;
  }
  for (auto& m : mods_)
    if (!m->from_disk) scanPatchFunctions(*m);
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
  // No enabling statement: a module-level function that builds the class
  // (vLLM early 2024, `init_custom_ar()`) is the admission.
  const FuncInfo* builder = nullptr;
  if (ts_node_is_null(en)) {
    TSNode construction{};
    builder = findBuilder(construction);
    if (!builder)
      fail(init->second.node, "__init__ of " + class_name_ + " never sets self." + spec_.enabling_attr + " = " +
                                  (spec_.enabling_value ? "True" : "False") +
                                  " and no module-level function of " + gate_mod_->file->path + " constructs " +
                                  class_name_ + " (unknown layout)");
    gate_.enabling = loc(construction, "enabling");
  } else {
    gate_.enabling = loc(en, "enabling");
    enabling_stmt_ = ts_node_parent(en);
  }

  // Constructor.
  std::map<std::string, Value> snapshot;
  // The admission: the exits that leave the instance enabled; the attributes
  // the per-call method sees: theirs, merged.
  auto admitFrom = [&](const std::vector<Exit>& exits) {
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
  };
  if (builder) {
    admitFrom(walkBuilder(*builder, text(field(builder->node, "name"))));
  } else {
    TSNode fn = init->second.node;
    auto params = parseParams(field(fn, "parameters"));
    State st;
    std::map<std::string, Value> no_kw;
    bindCtorParams(params, {}, no_kw, fn, st);
    Value self = vObject("self", "self");
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
    // A constructor that reaches the enabling method itself (SGLang's quick
    // all-reduce ends __init__ with self.init_quick_all_reduce()) was inlined
    // into the walk above: its exits already say when it is enabled.
    bool ctor_enables = false;
    for (const auto& x : exits) ctor_enables = ctor_enables || !model::isFalse(model::And(x.cond, enabled(x.attrs)));
    if (!in_init && !ctor_enables && !exits.empty()) {
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
    admitFrom(exits);
  }

  // Values handed down: the attributes the target names, as the admitted
  // paths leave them.
  for (const auto& [attr, var] : spec_.outputs) {
    auto it = snapshot.find(attr);
    if (it == snapshot.end() || it->second.k == Value::K::Undef) {
      note("self." + attr + " (handed down as " + var + ") is never set on an admitted path");
      continue;
    }
    handDown(var, class_name_ + "." + attr, it->second, gate_.enabling);
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
    Frame fr{Frame::Kind::PerCall};
    walkPerMessage(*pc, snapshot, fr);
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
  callOutputs(snapshot);
  findGuardSite(pc, snapshot, en, builder != nullptr);
  platformLiteralFlags(cls);
  pruneTentative();
  return gate_;
}

// A per-message method (should_custom_ar, custom_all_reduce) walked with the
// attributes the constructor leaves: its first parameter after self is the
// message tensor, the others their defaults or unknowns.
void Walker::walkPerMessage(const FuncInfo& m, const std::map<std::string, Value>& snapshot, Frame& fr) {
  TSNode fn = m.node;
  auto params = parseParams(field(fn, "parameters"));
  State st;
  st.attrs = snapshot;
  std::size_t i = 0;
  if (!m.is_static && !params.empty()) st.locals[params[i++].name] = vObject("self", "self");
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
  walkBlock(field(fn, "body"), st, fr);
}

// Values handed down per call: the method is walked per message and the
// argument of the named call captured where it is reached. The cell's
// configurations are those that reach the call (bound: reached and the
// variable equal to what is passed there); a Python path that raises before
// it runs no kernel.
void Walker::callOutputs(const std::map<std::string, Value>& snapshot) {
  for (const auto& [var, co] : spec_.call_outputs) {
    auto it = methods_.find(co.method);
    if (it == methods_.end()) {
      note("no method " + co.method + " (its call " + co.call + " hands down " + var + "): " + var +
           " is not bound by the gate");
      continue;
    }
    captures_.clear();
    call_out_ = &co;
    Frame fr{Frame::Kind::PerCall};
    walkPerMessage(it->second, snapshot, fr);
    call_out_ = nullptr;
    if (captures_.empty()) {
      note(co.method + " never reaches a call " + co.call + " (it hands down " + var + "): " + var +
           " is not bound by the gate");
      continue;
    }
    // The value where each capture is reached (the last capture the fallback).
    Value v = captures_.back().value;
    ExprPtr reached = captures_.back().reached;
    for (std::size_t k = captures_.size() - 1; k-- > 0;) {
      v = merge(captures_[k].reached, captures_[k].value, v);
      reached = model::Or(reached, captures_[k].reached);
    }
    // A None the call would receive: Python raised before it (None.attr).
    ExprPtr none;
    Value stripped = withoutNone(v, none);
    if (stripped.k != Value::K::Undef) {
      v = stripped;
      reached = model::And(reached, model::Not(none));
    }
    bool str = false;
    std::function<void(const Value&)> scan = [&](const Value& x) {
      if (x.k == Value::K::Str) str = true;
      if (x.k == Value::K::Merge) {
        scan(*x.a);
        scan(*x.b);
      }
    };
    scan(v);
    handDown(var,
             co.method + ": " + co.call + " argument " + std::to_string(co.argument) +
                 (co.attribute.empty() ? "" : ", its " + co.attribute),
             v, captures_.back().where, str ? Sort::Str : Sort::Int);
    gate_.bound = model::And(gate_.bound, reached);
    // Only the calls that reach this target's dispatch (python.only_when).
    if (auto ow = spec_.only_when.find(var); ow != spec_.only_when.end()) {
      gate_.bound = model::And(gate_.bound, model::Cmp(Op::Eq, model::Var(var, Sort::Int, VarKind::Config),
                                                         model::IntC(ow->second)));
      note("only the calls where " + var + " = " + std::to_string(ow->second) + " reach this dispatch");
    }
  }
}

void Walker::captureCallOutput(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  if (a.splat || static_cast<std::size_t>(call_out_->argument) >= a.pos.size()) return;
  Capture c;
  c.reached = model::And(fr.entry, model::And(st.full(), cx.guard));
  Ctx scratch = cx;
  c.value = eval(a.pos[static_cast<std::size_t>(call_out_->argument)], st, fr, scratch);
  if (!call_out_->attribute.empty()) {
    // What the wrapper reads of the argument (algo.shot, algo.is_push()),
    // leaf by leaf through the paths' merge: a None or nothing (a raise)
    // stays what it is, to be dropped below; what the walker cannot read is
    // code it did not interpret.
    std::string name = call_out_->attribute;
    const bool method = name.size() > 2 && name.compare(name.size() - 2, 2, "()") == 0;
    if (method) name.resize(name.size() - 2);
    std::function<Value(const Value&)> read = [&](const Value& x) -> Value {
      if (x.k == Value::K::Merge) return mergeRaw(x.cond, read(*x.a), read(*x.b));
      if (x.k == Value::K::None || x.k == Value::K::Undef) return x;
      if (auto v = memberCall(x, name, !method, call, Args{}, st, fr, scratch)) return *v;
      if (auto f = recordField(x, name); f && !method) return *f;
      Value u = unknown(call);
      u.text = shortText(a.pos[static_cast<std::size_t>(call_out_->argument)]) + "." + call_out_->attribute;
      u.name = u.text;
      return u;
    };
    c.value = read(c.value);
  }
  c.where = loc(a.pos[static_cast<std::size_t>(call_out_->argument)], "handed down");
  c.where.note = shortText(call);
  captures_.push_back(std::move(c));
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
  add(gate_.bound);
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

}  // namespace layergate::python::detail
