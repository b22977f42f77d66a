// Walker: statements: blocks, assignments, if/loop/try with state joins, returns and raises.
#include "python/Walker.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace layergate::python::detail {

// --- statements ---------------------------------------------------------------

void Walker::settle(State& st, Frame& fr, Ctx& cx, TSNode stmt) {
  if (model::isFalse(cx.raises)) return;
  ExprPtr d = model::And(st.full(), cx.raises);
  fr.deaths.push_back(d);
  if (fr.in_ctor) recordReject(model::And(fr.entry, d), fr, stmt);
  st.rel = model::And(st.rel, model::Not(cx.raises));
}

void Walker::recordReject(const ExprPtr& cond, const Frame& fr, TSNode stmt) {
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

Value Walker::evalStmtExpr(TSNode n, State& st, Frame& fr, TSNode stmt) {
  Ctx cx;
  Value v = eval(n, st, fr, cx);
  settle(st, fr, cx, stmt);
  return v;
}

void Walker::walkBlock(TSNode block, State& st, Frame& fr) {
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

void Walker::assignTarget(TSNode t, const Value& v0, State& st, Frame& fr, TSNode stmt) {
  if (is(t, "identifier")) {
    Value v = v0;
    traceStore(v, "local", stmt);
    if (declaredGlobal(t)) st.attrs[globalKey(text(t))] = v;
    else st.locals[text(t)] = v;
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

void Walker::walkAssign(TSNode n, State& st, Frame& fr, TSNode stmt) {
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

void Walker::walkAugAssign(TSNode n, State& st, Frame& fr, TSNode stmt) {
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
State Walker::branch(const State& base, const ExprPtr& c) {
  State s = base;
  s.prefix = model::And(base.full(), c);
  s.rel = model::True();
  s.broke = false;
  return s;
}

std::string Walker::globalKey(const std::string& name) const {
  return std::string("\x01global:") + (cur_ && cur_->file ? cur_->file->path : "") + ":" + name;
}

bool Walker::declaredGlobal(TSNode id) {
  TSNode fn = ts_node_parent(id);
  while (!ts_node_is_null(fn) && !is(fn, "function_definition")) fn = ts_node_parent(fn);
  if (ts_node_is_null(fn)) return false;
  return globalsDeclaredIn(fn).count(text(id)) > 0;
}

const std::set<std::string>& Walker::globalsDeclaredIn(TSNode fn) {
  auto it = global_decls_.find(fn.id);
  if (it == global_decls_.end()) {
    std::set<std::string> names;
    std::vector<TSNode> stack{field(fn, "body")};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      if (ts_node_is_null(n) || is(n, "function_definition") || is(n, "class_definition")) continue;
      if (is(n, "global_statement")) {
        for (TSNode k : named(n)) names.insert(text(k));
        continue;
      }
      for (TSNode k : named(n)) stack.push_back(k);
    }
    it = global_decls_.emplace(fn.id, std::move(names)).first;
  }
  return it->second;
}

bool Walker::reboundElsewhere(Module* m, const std::string& name, TSNode at) {
  if (!m || ts_node_is_null(m->root)) return false;
  auto it = rebound_globals_.find(m);
  if (it == rebound_globals_.end()) {
    std::set<std::string> names;
    std::vector<TSNode> stack{m->root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      if (ts_node_is_null(n)) continue;
      if (is(n, "function_definition")) {
        const auto& g = globalsDeclaredIn(n);
        names.insert(g.begin(), g.end());
      }
      for (TSNode k : named(n)) stack.push_back(k);
    }
    it = rebound_globals_.emplace(m, std::move(names)).first;
  }
  if (!it->second.count(name)) return false;
  if (m != cur_ || ts_node_is_null(at)) return true;
  TSNode fn = ts_node_parent(at);
  while (!ts_node_is_null(fn) && !is(fn, "function_definition")) fn = ts_node_parent(fn);
  return !ts_node_is_null(fn) && !globalsDeclaredIn(fn).count(name);
}

// Join two branches that both started from base, split on c.
State Walker::join(const State& base, const ExprPtr& c, const State& t, const State& e) {
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
    // A name one branch imports (`try: from M import x` / `except: x = None`)
    // holds what the import binds on the other branch, not nothing.
    std::vector<std::pair<bool, std::string>> fill;  // (fill the then-side?, name)
    auto lacking = [&](const std::map<std::string, Value>& have, const std::map<std::string, Value>& other, bool then_side) {
      for (const auto& [name, v] : have) {
        auto it = other.find(name);
        if ((it == other.end() || it->second.k == Value::K::Undef) && cur_->import_at.count(name) && cur_->aliases.count(name))
          fill.emplace_back(then_side, name);
      }
    };
    lacking(e.locals, t.locals, true);
    lacking(t.locals, e.locals, false);
    if (fill.empty()) {
      m.locals = mergeMaps(c, t.locals, e.locals);
    } else {
      auto tl = t.locals, el = e.locals;
      for (const auto& [then_side, name] : fill)
        (then_side ? tl : el)[name] = importedValue(name, cur_->import_at.at(name));
      m.locals = mergeMaps(c, tl, el);
    }
    m.attrs = mergeMaps(c, t.attrs, e.attrs);
    m.broke = t.broke && e.broke;
  }
  return m;
}

void Walker::walkChain(const std::vector<Clause>& clauses, const std::function<void(State&)>* else_body,
                       TSNode last_cond, State& st, Frame& fr, TSNode site) {
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
void Walker::overrideAtJoin(std::map<std::string, Value>& merged, const std::map<std::string, Value>& t,
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

void Walker::walkIf(TSNode n, State& st, Frame& fr) {
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

void Walker::walkLoop(TSNode n, State& st, Frame& fr) {
  bool is_for = is(n, "for_statement");
  std::string header = is_for ? "for " + shortText(field(n, "left")) + " in " + shortText(field(n, "right"))
                              : "while " + shortText(field(n, "condition"));
  int line = loc(n).line;
  ExprPtr iterates;
  // `for x in range([start,] stop)`: the body runs exactly when the range is
  // not empty (a loop over the world size runs for any group).
  TSNode right = is_for ? field(n, "right") : TSNode{};
  if (is_for && is(right, "call") && text(field(right, "function")) == "range" && !cur_->aliases.count("range")) {
    std::vector<TSNode> args = named(field(right, "arguments"));
    if ((args.size() == 1 || args.size() == 2) &&
        std::none_of(args.begin(), args.end(), [&](TSNode a) { return !is(a, "identifier") && !is(a, "integer") && !is(a, "attribute"); })) {
      ExprPtr stop = asInt(evalStmtExpr(args.back(), st, fr, n));
      ExprPtr start = args.size() == 2 ? asInt(evalStmtExpr(args[0], st, fr, n)) : model::IntC(0);
      if (stop && start) iterates = model::Cmp(Op::Gt, stop, start);
    }
  }
  if (!iterates)
    iterates = opaqueVar("loop@L" + std::to_string(line) + ": " + header, header + " iterates", Sort::Bool, loc(n));
  TSNode body = field(n, "body");
  // Lists the body appends to once per iteration: their length after the loop.
  std::vector<std::pair<std::string, ExprPtr>> grown;
  if (is_for) {
    Ctx cx;
    if (ExprPtr count = iterationCount(right, st, fr, cx))
      for (const auto& name : appendedOncePerIteration(body)) {
        auto it = st.locals.find(name);
        if (it == st.locals.end()) continue;
        if (ExprPtr before = lengthOf(it->second)) grown.emplace_back(name, model::Arith(Op::Add, before, count));
      }
  }
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
  for (const auto& [name, len] : grown) st.locals[name] = vSized(len);
  // a list the body changes some other way: its length after the loop is not known
  const std::string b = text(body);
  for (auto& kv : st.locals) {
    const std::string& name = kv.first;
    Value& v = kv.second;
    if (lengthOf(v) && std::none_of(grown.begin(), grown.end(), [&](const auto& g) { return g.first == name; }) &&
        b.find(name + ".") != std::string::npos) {
      for (const char* m : {".append(", ".extend(", ".insert(", ".pop(", ".remove(", ".clear("})
        if (b.find(name + m) != std::string::npos) {
          v = unknown(n);
          v.text = "the length of " + name + " after the loop at line " + std::to_string(line);
          v.name = v.text;
          break;
        }
    }
  }
  for (TSNode k : named(n))
    if (is(k, "else_clause") && !st.dead()) walkBlock(field(k, "body"), st, fr);
}

std::vector<std::string> Walker::appendedOncePerIteration(TSNode body) {
  // appends per path through a block: a name's count when every path appends
  // to it the same number of times, -1 when paths differ or leave early
  std::function<bool(TSNode, std::map<std::string, int>&)> block = [&](TSNode b, std::map<std::string, int>& out) -> bool {
    auto appendTarget = [&](TSNode st) -> std::string {
      TSNode e = is(st, "expression_statement") ? firstNamed(st) : TSNode{};
      if (ts_node_is_null(e) || !is(e, "call")) return {};
      TSNode f = field(e, "function");
      if (!is(f, "attribute") || text(field(f, "attribute")) != "append") return {};
      TSNode o = field(f, "object");
      return is(o, "identifier") ? text(o) : std::string();
    };
    for (TSNode st : is(b, "block") ? named(b) : std::vector<TSNode>{b}) {
      if (isExtra(st)) continue;
      if (std::string t = appendTarget(st); !t.empty()) {
        ++out[t];
        continue;
      }
      if (is(st, "if_statement")) {
        std::vector<TSNode> arms{field(st, "consequence")};
        bool has_else = false;
        for (TSNode k : named(st)) {
          if (is(k, "elif_clause")) arms.push_back(field(k, "consequence"));
          if (is(k, "else_clause")) arms.push_back(field(k, "body")), has_else = true;
        }
        std::vector<std::map<std::string, int>> counts(arms.size());
        for (std::size_t i = 0; i < arms.size(); ++i)
          if (!block(arms[i], counts[i])) return false;
        if (!has_else) counts.emplace_back();
        std::set<std::string> names;
        for (const auto& c : counts)
          for (const auto& [k, v] : c) names.insert(k);
        for (const auto& k : names) {
          int v = counts[0].count(k) ? counts[0].at(k) : 0;
          for (const auto& c : counts)
            if ((c.count(k) ? c.at(k) : 0) != v) v = -1;
          out[k] = v < 0 || out[k] < 0 ? -1 : out[k] + v;
        }
        continue;
      }
      if (is(st, "break_statement") || is(st, "continue_statement") || is(st, "return_statement") ||
          is(st, "raise_statement"))
        return false;
      // any other statement: an append inside it (a nested loop, a try, a
      // lambda) is not once per iteration, nor a body that a nested try or
      // with may leave early
      std::string s = text(st);
      if (s.find(".append(") != std::string::npos) return false;
      if ((is(st, "try_statement") || is(st, "with_statement") || is(st, "match_statement")) &&
          (s.find("return") != std::string::npos || s.find("raise") != std::string::npos ||
           s.find("break") != std::string::npos || s.find("continue") != std::string::npos))
        return false;
    }
    return true;
  };
  std::map<std::string, int> counts;
  if (!block(body, counts)) return {};
  std::vector<std::string> out;
  for (const auto& [k, v] : counts)
    if (v == 1) out.push_back(k);
  return out;
}

void Walker::walkTry(TSNode n, State& st, Frame& fr) {
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
    // Whether an import succeeds is a fact of the user's machine (the kernel
    // library is installed or not): a probe, free like p2p_ok. A try at module
    // level runs at import time: what fails there is the installed software
    // too. An exception from other code is code we did not interpret.
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

bool Walker::importsOnly(TSNode body) {
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
      if (!ts_node_is_null(r) &&
          (is(r, "true") || is(r, "false") || is(r, "none") || is(r, "integer") || is(r, "string")))
        continue;
    }
    return false;
  }
  return any_import;
}

void Walker::walkHandler(TSNode h, State& s, Frame& fr) {
  TSNode alias = field(h, "alias");
  if (!ts_node_is_null(alias)) assignTarget(alias, unknown(alias), s, fr);
  for (TSNode k : named(h))
    if (is(k, "block")) walkBlock(k, s, fr);
}

void Walker::walkStmt(TSNode n, State& st, Frame& fr) {
  DepthGuard g(*this, n);
  if (aux_depth_ > 0) {
    if (++aux_statements_ > kMaxStatements) throw AuxAbort{};
  } else if (++statements_ > kMaxStatements) {
    fail(n, "more than " + std::to_string(kMaxStatements) + " statements on the analysed paths; not analysed");
  }
  captureEnabling(n, st);
  const char* t = ts_node_type(n);
  if (!std::strcmp(t, "expression_statement")) {
    for (TSNode k : named(n)) {
      if (is(k, "assignment")) walkAssign(k, st, fr, n);
      else if (is(k, "augmented_assignment")) walkAugAssign(k, st, fr, n);
      else {
        evalStmtExpr(k, st, fr, n);
        // `xs.append(v)` on a local list: one element more; any other
        // change of it in place: its elements are no longer known
        TSNode f = is(k, "call") ? field(k, "function") : TSNode{};
        TSNode o = is(f, "attribute") ? field(f, "object") : TSNode{};
        auto it = is(o, "identifier") ? st.locals.find(text(o)) : st.locals.end();
        if (it != st.locals.end() && lengthOf(it->second)) {
          std::string m = text(field(f, "attribute"));
          std::vector<TSNode> args = named(field(k, "arguments"));
          if (m == "append" && args.size() == 1 && it->second.k == Value::K::List) {
            Value grown = it->second;
            grown.items.push_back(evalStmtExpr(args[0], st, fr, n));
            it->second = vList(std::move(grown.items));
          } else if (m == "append" && args.size() == 1) {
            it->second = vSized(model::Arith(Op::Add, lengthOf(it->second), model::IntC(1)));
          } else if (m == "append" || m == "extend" || m == "insert" || m == "pop" || m == "remove" || m == "clear") {
            it->second = unknown(o);
          }
        }
      }
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
    if (tentative_ == 0 && aux_depth_ == 0)
      gate_.assumed = model::And(gate_.assumed, model::Implies(model::And(fr.entry, st.full()), cond));
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
    } else {
      // a def inside a function: called by name later in it, with the
      // enclosing locals visible (a closure)
      FuncInfo fi = funcInfo(def, dec, false);
      fi.nested = true;
      local_fns_.push_back(fi);
      Value f = vObject("localfn", name);
      f.name = std::to_string(local_fns_.size() - 1);
      st.locals[name] = f;
    }
  } else if (!std::strcmp(t, "class_definition")) {
    // classes are found separately
  } else if (!std::strcmp(t, "match_statement")) {
    note("match statement at " + where(n) + " not modelled");
  }
  // pass, global, nonlocal, delete, type aliases: nothing to do
}

ExprPtr Walker::enabled(const std::map<std::string, Value>& attrs) {
  auto it = attrs.find(spec_.enabling_attr);
  if (it == attrs.end() || it->second.k == Value::K::Undef) return model::False();
  return eqv(it->second, vBool(model::BoolC(spec_.enabling_value)), TSNode{});
}

}  // namespace layergate::python::detail
