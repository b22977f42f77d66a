// Path enumeration over the dispatch body: statements are executed
// symbolically over sets of path states; each path ends in a leaf (launch,
// throw, or none). Conditions become model::Expr over config variables;
// whatever is not understood becomes an opaque symbol named after its text.
// This file: joining paths, statements, leaves and the driver; expression
// evaluation is in DispatchEval.cpp, launch discovery and preconditions in
// DispatchLaunch.cpp, the Walker class in DispatchWalkerImpl.h.
#include "cpp/DispatchWalker.h"

#include <cctype>

#include "clang/Lex/Lexer.h"

#include <tuple>
#include <unordered_map>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/StmtCXX.h"
#include "cpp/DispatchWalkerImpl.h"
#include "cpp/FixFacts.h"
#include "model/Errors.h"

namespace layergate::cpp::detail {
namespace walker {

// --- joining paths ---------------------------------------------------------------
//
// Paths that meet again after a branch with the same launch, reason, facts
// and locals are one path with the disjunction of their conditions; this
// keeps the path count and the leaf conditions small.

void Walker::conjuncts(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->op == m::Op::And) {
    for (auto& a : e->args) conjuncts(a, out);
    return;
  }
  if (!m::isTrue(e)) out.push_back(e);
}

bool Walker::same(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return m::equal(a, b);
}

bool Walker::contains(const std::vector<ExprPtr>& xs, const ExprPtr& x) {
  for (auto& y : xs)
    if (x->hash == y->hash && same(x, y)) return true;
  return false;
}

// (C and R1) or (C and R2), with c or (not c and X) = c or X.
//
// Paths forked from one state share their condition up to the fork (a
// conjunction built left to right): that prefix is found by pointer and kept
// as one conjunct, so a merge costs what the paths added since the fork, not
// the whole condition of a long chain.
ExprPtr Walker::orMerge(const ExprPtr& a, const ExprPtr& b) {
  if (m::isFalse(a) || a == b) return b;
  if (m::isFalse(b)) return a;
  if (m::isTrue(a) || m::isTrue(b)) return m::True();
  std::vector<ExprPtr> ca, cb, common, ra, rb;
  std::set<const m::Expr*> spineA;
  for (const m::Expr* n = a.get();; n = n->args[0].get()) {
    spineA.insert(n);
    if (n->op != m::Op::And) break;
  }
  ExprPtr prefix;
  for (ExprPtr n = b;; n = n->args[0]) {
    if (spineA.count(n.get()) && !m::isTrue(n)) {
      prefix = n;
      break;
    }
    if (n->op != m::Op::And) break;
  }
  auto since = [&prefix](const ExprPtr& e, std::vector<ExprPtr>& out) {
    std::vector<const ExprPtr*> added;
    for (const ExprPtr* n = &e; *n != prefix; n = &(*n)->args[0]) {
      if ((*n)->op != m::Op::And) {
        added.push_back(n);
        break;
      }
      added.push_back(&(*n)->args[1]);
    }
    for (auto it = added.rbegin(); it != added.rend(); ++it) conjuncts(**it, out);
  };
  if (prefix) {
    common.push_back(prefix);
    since(a, ca);
    since(b, cb);
  } else {
    conjuncts(a, ca);
    conjuncts(b, cb);
  }
  // Conjuncts by hash: path conditions of long chains have hundreds.
  std::unordered_multimap<std::size_t, const ExprPtr*> inB, inCommon;
  for (auto& y : cb) inB.emplace(y->hash, &y);
  auto member = [](const std::unordered_multimap<std::size_t, const ExprPtr*>& in, const ExprPtr& x) {
    auto [lo, hi] = in.equal_range(x->hash);
    for (auto it = lo; it != hi; ++it)
      if (same(x, *it->second)) return true;
    return false;
  };
  for (auto& x : ca) {
    if (member(inB, x)) {
      common.push_back(x);
      inCommon.emplace(x->hash, &x);  // x lives in ca, which no longer changes
    } else {
      ra.push_back(x);
    }
  }
  for (auto& x : cb)
    if (!member(inCommon, x)) rb.push_back(x);
  if (ra.empty() || rb.empty()) return m::AndAll(common);
  auto dropNegation = [](const std::vector<ExprPtr>& one, std::vector<ExprPtr>& other) {
    if (one.size() != 1) return false;
    for (std::size_t i = 0; i < other.size(); ++i)
      if (same(m::Not(one[0]), other[i])) {
        other.erase(other.begin() + static_cast<long>(i));
        return true;
      }
    return false;
  };
  if (dropNegation(ra, rb) && rb.empty()) return m::AndAll(common);
  if (dropNegation(rb, ra) && ra.empty()) return m::AndAll(common);
  return m::And(m::AndAll(common), m::Or(m::AndAll(ra), m::AndAll(rb)));
}

bool Walker::sameVal(const Val& a, const Val& b) {
  return a.kind == b.kind && (a.e == b.e || (a.e && b.e && same(a.e, b.e))) &&
         (a.nonnull == b.nonnull || (a.nonnull && b.nonnull && same(a.nonnull, b.nonnull)));
}

std::string Walker::stateKey(const State& st) {
  std::string k;
  if (st.launch) k = "L" + st.launch->kernel + "@" + std::to_string(st.launch->loc.getRawEncoding());
  else k = "R" + st.reason.text + "@" + std::to_string(st.reason.loc.getRawEncoding()) + "#" + std::to_string(st.reason.prio);
  for (auto& [n, v] : st.facts) k += "|" + n + "=" + v->str();
  return k;
}

void Walker::mergeStates(std::vector<State>& states) {
  if (states.size() < 2) return;
  std::vector<State> out;
  std::map<std::string, std::vector<std::size_t>> byKey;
  for (State& st : states) {
    std::string k = stateKey(st);
    bool merged = false;
    for (std::size_t idx : byKey[k]) {
      State& acc = out[idx];
      bool same_locals = acc.locals.sharedWith(st.locals);
      bool ok = true;
      if (!same_locals)
        for (auto& [var, v] : acc.locals.view()) {
          const Val* other = st.locals.find(var);
          if (other && !sameVal(v, *other)) {
            ok = false;
            break;
          }
        }
      if (!ok) continue;
      acc.pc = orMerge(acc.pc, st.pc);
      if (!same_locals) {
        bool drop = false;
        for (auto& [var, v] : acc.locals.view()) drop = drop || !st.locals.find(var);
        if (drop) {
          auto& mine = acc.locals.mut();
          for (auto it = mine.begin(); it != mine.end();) it = st.locals.find(it->first) ? std::next(it) : mine.erase(it);
        }
      }
      merged = true;
      break;
    }
    if (!merged) {
      byKey[k].push_back(out.size());
      out.push_back(std::move(st));
    }
  }
  states = std::move(out);
}

// --- statements --------------------------------------------------------------------

void Walker::checkPaths(std::size_t n, const Stmt* at) {
  if (n > opts_.max_paths) {
    m::Location l = loc(at->getBeginLoc(), false, "dispatch");
    throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                     std::to_string(opts_.max_paths) + " paths; giving up " + limitHint("max-paths"));
  }
}

void Walker::setReason(State& st, std::string text, SourceLocation where, int prio, const IfStmt* no_else) {
  if (prio >= st.reason.prio) st.reason = Reason{std::move(text), where, prio, no_else};
}

// Effects of an expression statement: throw, launch, assignments to locals.
// Returns false when the path ends here (throw).
bool Walker::effects(const Expr* e, State& st) {
  if (auto p = preconditionOf(e)) return precondition(*p, st);
  const Expr* s = stripCasts(e);
  if (auto* t = dyn_cast_or_null<CXXThrowExpr>(s)) {
    finishThrow(st, t);
    return false;
  }
  if (auto l = findLaunch(e))
    if (!st.launch || l->rank > st.launch->rank) st.launch = l;
  assignments(e, st);
  return true;
}

void Walker::assign(const Expr* lhs, const Val& v, State& st) {
  lhs = stripCasts(lhs);
  if (auto* d = dyn_cast_or_null<DeclRefExpr>(lhs))
    if (auto* var = dyn_cast<VarDecl>(d->getDecl()))
      if (var->hasLocalStorage()) st.locals.set(var, v);
}

void Walker::assignments(const Expr* e, State& st) {
  e = strip(e);
  if (!e) return;
  if (auto* b = dyn_cast<BinaryOperator>(e)) {
    if (b->getOpcode() == BO_Comma) {
      assignments(b->getLHS(), st);
      assignments(b->getRHS(), st);
      return;
    }
    if (b->getOpcode() == BO_Assign) {
      const Expr* l = stripCasts(b->getLHS());
      Val v = eval(b->getRHS(), st);
      if (auto* d = dyn_cast_or_null<DeclRefExpr>(l))
        if (isByteCountName(d->getDecl()->getName()) || isSizeofProduct(b->getRHS()))
          if (ExprPtr bytes = byteCount(st)) v = Val::integer(bytes);
      assign(b->getLHS(), v, st);
      return;
    }
    if (auto* ca = dyn_cast<CompoundAssignOperator>(b)) {
      BinaryOperatorKind k;
      switch (ca->getOpcode()) {
        case BO_AddAssign: k = BO_Add; break;
        case BO_SubAssign: k = BO_Sub; break;
        case BO_MulAssign: k = BO_Mul; break;
        case BO_DivAssign: k = BO_Div; break;
        case BO_RemAssign: k = BO_Rem; break;
        case BO_ShlAssign: k = BO_Shl; break;
        case BO_ShrAssign: k = BO_Shr; break;
        default: assign(ca->getLHS(), opaqueOfType(ca->getLHS()), st); return;
      }
      assign(ca->getLHS(), arith(k, ca->getLHS(), ca->getRHS(), ca, st), st);
      return;
    }
  }
  if (auto* u = dyn_cast<UnaryOperator>(e)) {
    if (u->isIncrementDecrementOp()) {
      Val v = eval(u->getSubExpr(), st);
      if (ExprPtr x = asInt(v, u->getSubExpr()))
        assign(u->getSubExpr(), Val::integer(m::Arith(u->isIncrementOp() ? m::Op::Add : m::Op::Sub, x, m::IntC(1))), st);
      else
        assign(u->getSubExpr(), Val::unknown(), st);
    }
    return;
  }
  if (auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
    if (op->getOperator() == OO_Equal && op->getNumArgs() == 2) assign(op->getArg(0), eval(op->getArg(1), st), st);
  }
}

Val Walker::initValue(const VarDecl* vd, State& st) {
  const Expr* init = vd->getInit();
  if (isByteCountName(vd->getName()) || (init && isSizeofProduct(init)))
    if (ExprPtr bytes = byteCount(st)) return Val::integer(bytes);
  if (!init) {
    QualType t = vd->getType();
    if (!t.isNull() && !t->isDependentType() && (t->isIntegralOrEnumerationType()))
      return Val::integer(opaque(vd->getNameAsString(), sortOfType(t), vd->getLocation()));
    return Val::unknown();
  }
  Val v = eval(init, st);
  if (v.kind == Val::Unknown) {
    // In a template pattern, a number or a flag only the instantiation knows.
    QualType t = vd->getType();
    if (!tframes_.empty() && init->isInstantiationDependent() && !t.isNull() &&
        (t->isIntegralOrEnumerationType() || (t->isDependentType() && !t->isPointerType() && !t->isReferenceType())))
      tframes_.back().unresolved = true;
    return v;
  }
  return convert(v, vd->getType(), init);
}

void Walker::execDecl(const DeclStmt* ds, std::vector<State>& states, std::vector<State>& alive) {
  for (State& st : states) {
    bool ok = true;
    for (const Decl* d : ds->decls()) {
      auto* vd = dyn_cast<VarDecl>(d);
      if (!vd) continue;
      if (const Expr* init = vd->getInit())
        if (!effects(init, st)) {
          ok = false;
          break;
        }
      st.locals.set(vd, initValue(vd, st));
    }
    if (ok) alive.push_back(std::move(st));
  }
}

Flow Walker::exec(const Stmt* s, std::vector<State> in, int depth) {
  Flow out;
  if (in.empty()) return out;
  if (!s) {
    out.normal = std::move(in);
    return out;
  }
  if (depth > opts_.max_depth) {
    m::Location l = loc(s->getBeginLoc(), false, "dispatch");
    throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch nests statements deeper than " +
                     std::to_string(opts_.max_depth) + " levels; giving up " + limitHint("max-depth"));
  }
  checkPaths(in.size(), s);
  if (reached_) {
    // Kept apart and OR-ed only where Reached::at asks (a clang error's
    // statement): merging here, on every statement, was half the walk.
    std::vector<ExprPtr>& pcs = stmt_pc_[s];
    for (const State& st : in)
      if (pcs.empty() || pcs.back() != st.pc) pcs.push_back(st.pc);
  }
  if (auto* cs = dyn_cast<CompoundStmt>(s)) {
    // A launch clang dropped (its kernel did not type): read from the text,
    // it is still the launch the compiled code makes on every way out.
    std::optional<std::string> text_launch = droppedLaunch(cs);
    if (text_launch) noteOnce("kernel launches read from the source text where clang could not type them");
    auto launched = [&](std::vector<State>& states) {
      if (text_launch)
        for (State& st : states)
          if (!st.launch) st.launch = LaunchInfo{*text_launch, cs->getBeginLoc(), 2};
    };
    std::vector<State> cur = std::move(in);
    for (const Stmt* c : cs->body()) {
      if (cur.empty()) break;
      Flow f = exec(c, std::move(cur), depth + 1);
      cur = std::move(f.normal);
      for (auto& b : f.breaks) out.breaks.push_back(std::move(b));
      for (auto& b : f.continues) out.continues.push_back(std::move(b));
      checkPaths(out.breaks.size() + cur.size(), c);
    }
    launched(cur);
    launched(out.breaks);
    launched(out.continues);
    out.normal = std::move(cur);
    return out;
  }
  if (auto* is = dyn_cast<IfStmt>(s)) return execIf(is, std::move(in), depth);
  if (auto* sw = dyn_cast<SwitchStmt>(s)) return execSwitch(sw, std::move(in), depth);
  if (isa<BreakStmt>(s)) {
    out.breaks = std::move(in);
    return out;
  }
  if (isa<ContinueStmt>(s)) {
    out.continues = std::move(in);
    return out;
  }
  if (auto* rs = dyn_cast<ReturnStmt>(s)) {
    if (!inline_returns_.empty()) {
      // The return of a function the walk entered: back to its caller.
      for (State& st : in)
        if (!rs->getRetValue() || effects(rs->getRetValue(), st)) inline_returns_.back()->push_back(std::move(st));
      return out;
    }
    if (predicate_mode_) {
      for (State& st : in)
        if (const Expr* rv = rs->getRetValue())
          returns_true_ = orMerge(returns_true_, m::And(st.pc, asBool(eval(rv, st), rv)));
      return out;
    }
    for (State& st : in) {
      if (rs->getRetValue() && !effects(rs->getRetValue(), st)) continue;
      // An explicit return is itself the decision: the leaf sits there.
      if (!st.launch) st.reason = Reason{"return without a launch", rs->getBeginLoc(), 3, nullptr};
      finishEnd(st, rs->getBeginLoc());
    }
    return out;
  }
  if (auto* ds = dyn_cast<DeclStmt>(s)) {
    execDecl(ds, in, out.normal);
    return out;
  }
  if (auto* e = dyn_cast<Expr>(s)) {
    if (spec_.follow_calls)
      if (auto f = followCall(e, in, depth)) return std::move(*f);
    for (State& st : in)
      if (effects(e, st)) out.normal.push_back(std::move(st));
    return out;
  }
  if (auto* cs = dyn_cast<CaseStmt>(s)) return exec(cs->getSubStmt(), std::move(in), depth + 1);
  if (auto* ds = dyn_cast<DefaultStmt>(s)) return exec(ds->getSubStmt(), std::move(in), depth + 1);
  if (auto* as = dyn_cast<AttributedStmt>(s)) return exec(as->getSubStmt(), std::move(in), depth + 1);
  if (auto* ls = dyn_cast<LabelStmt>(s)) return exec(ls->getSubStmt(), std::move(in), depth + 1);
  if (auto* ts = dyn_cast<CXXTryStmt>(s)) {
    noteOnce("try/catch in the dispatch: handlers are not followed");
    return exec(ts->getTryBlock(), std::move(in), depth + 1);
  }
  if (isa<ForStmt>(s) || isa<WhileStmt>(s) || isa<DoStmt>(s) || isa<CXXForRangeStmt>(s))
    return execLoop(s, std::move(in), depth);
  if (isa<GotoStmt>(s) || isa<IndirectGotoStmt>(s)) noteOnce("goto in the dispatch is not followed");
  out.normal = std::move(in);
  return out;
}

const FunctionDecl* Walker::patternToWalk(const FunctionDecl* fd) {
  if (!fd || fd->getTemplateSpecializationKind() != TSK_ImplicitInstantiation || !fd->getPrimaryTemplate())
    return nullptr;
  const FunctionDecl* pat = fd->getTemplateInstantiationPattern();
  if (!pat || !pat->getBody() || pattern_failed_.count(pat) || pat->getNumParams() != fd->getNumParams())
    return nullptr;
  for (const ParmVarDecl* p : pat->parameters())
    if (p->isParameterPack()) return nullptr;
  // A pattern clang rejected in part reads as its instantiation does (which
  // may drop the statements around the error).
  if (!pattern_checked_.insert(pat).second) return pat;
  if (opts_.errors_in && opts_.errors_in(pat->getSourceRange())) {
    pattern_failed_.insert(pat);
    return nullptr;
  }
  return pat;
}

// The summary of one walk of def's body from a state of its own, its
// parameters bound to args.
Walker::CallSummary Walker::summarise(const FunctionDecl* def, const std::vector<Val>& args, int depth) {
  if (reached_ && std::find(reached_->followed.begin(), reached_->followed.end(), def) == reached_->followed.end())
    reached_->followed.push_back(def);
  State fresh;
  for (std::size_t i = 0; i < args.size(); ++i) fresh.locals.set(def->getParamDecl(static_cast<unsigned>(i)), args[i]);
  std::vector<State> start;
  start.push_back(std::move(fresh));
  std::vector<State> returned;
  std::size_t first_leaf = raw_.size();
  entered_.push_back(def);
  inline_returns_.push_back(&returned);
  Flow f;
  try {
    f = exec(def->getBody(), std::move(start), depth + 1);
  } catch (...) {
    entered_.pop_back();
    inline_returns_.pop_back();
    throw;
  }
  entered_.pop_back();
  inline_returns_.pop_back();
  CallSummary sum;
  sum.leaves.assign(raw_.begin() + static_cast<long>(first_leaf), raw_.end());
  raw_.resize(first_leaf);
  for (auto& b : returned) f.normal.push_back(std::move(b));
  for (const State& x : f.normal) {
    std::string k = x.launch ? x.launch->kernel : "";
    auto g = std::find_if(sum.exits.begin(), sum.exits.end(), [&](const CallSummary::Exit& y) {
      return (y.launch ? y.launch->kernel : "") == k;
    });
    if (g == sum.exits.end()) sum.exits.push_back({x.pc, x.launch});
    else g->pc = orMerge(g->pc, x.pc);
  }
  return sum;
}

namespace {

// Whether e mentions one of the opaque terms named in names.
bool mentions(const ExprPtr& e, const std::set<std::string>& names) {
  if (!e || names.empty()) return false;
  for (const auto& v : m::varsOf(e))
    if (v.kind == m::VarKind::Opaque && names.count(v.name)) return true;
  return false;
}

}  // namespace

// cpp.follow_calls: a statement that calls a host function of the user's
// files with a body (a launcher template's instantiation) runs that body, so
// that the switches and throws inside it are the dispatch's. The body is
// walked once per function and argument values, from a state of its own (its
// parameters bound to the arguments): a summary of its throws and of its ways
// back, one per kernel it launched first. Each call then adds the throws under
// the caller's path condition and continues once per way back, so that a
// launcher called from many branches costs one walk, not one per branch. A
// specialization of a function template is walked through its pattern, its
// template's value parameters bound (TemplateFrame, DispatchWalkerImpl.h).
std::optional<Flow> Walker::followCall(const Expr* e, std::vector<State>& in, int depth) {
  const auto* call = dyn_cast_or_null<CallExpr>(stripCasts(e));
  if (!call || isa<CUDAKernelCallExpr>(call) || isa<CXXOperatorCallExpr>(call)) return std::nullopt;
  const FunctionDecl* fd = call->getDirectCallee();
  if (!fd && !tframes_.empty()) {
    // A call in a template pattern that its instantiation resolves: followed
    // there when it names a free function of the user's files.
    for (const FunctionDecl* c : calleesOf(call))
      if (!isa<CXXMethodDecl>(c)) tframes_.back().unresolved = true;
  }
  if (!fd || isa<CXXMethodDecl>(fd)) return std::nullopt;
  const FunctionDecl* pat = patternToWalk(fd);
  const FunctionDecl* def = pat;
  if (!def && !fd->getBody(def) && opts_.instantiate && fd->isTemplateInstantiation())
    if (const FunctionDecl* p = fd->getTemplateInstantiationPattern(); p && p->hasBody())
      opts_.instantiate(fd, call->getBeginLoc());
  if (!def && (!fd->getBody(def) || !def || !def->getBody())) return std::nullopt;
  if (def->hasAttr<CUDAGlobalAttr>() || (def->hasAttr<CUDADeviceAttr>() && !def->hasAttr<CUDAHostAttr>()))
    return std::nullopt;
  if (opts_.is_user_code && !opts_.is_user_code(def->getLocation())) return std::nullopt;
  if (std::find(entered_.begin(), entered_.end(), def) != entered_.end() || entered_.size() >= 8) return std::nullopt;
  // The template's value parameters, bound to this specialization's arguments.
  std::map<const NamedDecl*, Val> bound;
  if (pat) {
    const TemplateParameterList* tps = fd->getPrimaryTemplate()->getTemplateParameters();
    const TemplateArgumentList* tas = fd->getTemplateSpecializationArgs();
    for (unsigned i = 0; tps && tas && i < tps->size() && i < tas->size(); ++i) {
      const auto* nt = dyn_cast<NonTypeTemplateParmDecl>(tps->getParam(i));
      const TemplateArgument& a = tas->get(i);
      if (!nt || a.getKind() != TemplateArgument::Integral || a.getAsIntegral().getSignificantBits() > 64) continue;
      std::int64_t v = a.getAsIntegral().getExtValue();
      bound[nt] = a.getIntegralType()->isBooleanType() ? Val::boolean(m::BoolC(v != 0)) : Val::integer(m::IntC(v));
    }
  }
  Flow out;
  const std::size_t leaves_before = raw_.size();
  for (State& st : in) {
    std::vector<Val> args;
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(def));
    for (unsigned i = 0; i < call->getNumArgs() && i < def->getNumParams(); ++i) {
      args.push_back(convert(eval(call->getArg(i), st), def->getParamDecl(i)->getType(), call->getArg(i)));
      key += "|" + std::to_string(static_cast<int>(args.back().kind)) + ":" + (args.back().e ? args.back().e->str() : "") +
             ":" + (args.back().nonnull ? args.back().nonnull->str() : "");
    }
    const CallSummary* sum = nullptr;
    if (pat && !pattern_failed_.count(pat)) {
      auto& variants = pattern_summaries_[key];
      for (const PatternSummary& ps : variants) {
        bool same_reads = std::all_of(ps.reads.begin(), ps.reads.end(), [&](const auto& r) {
          auto b = bound.find(r.first);
          return b != bound.end() && b->second.e && m::equal(b->second.e, r.second);
        });
        if (same_reads) {
          sum = &ps.summary;
          break;
        }
      }
      if (!sum) {
        TemplateFrame frame;
        frame.bound = bound;
        tframes_.push_back(std::move(frame));
        CallSummary walked;
        try {
          walked = summarise(pat, args, depth);
        } catch (...) {
          tframes_.pop_back();
          throw;
        }
        TemplateFrame done = std::move(tframes_.back());
        tframes_.pop_back();
        bool resolved = !done.unresolved;
        for (const RawLeaf& l : walked.leaves) resolved = resolved && !mentions(l.cond, done.dependent);
        for (const auto& x : walked.exits) resolved = resolved && !mentions(x.pc, done.dependent);
        if (resolved) {
          PatternSummary ps;
          for (const NamedDecl* r : done.read) ps.reads.push_back({r, bound[r].e});
          ps.summary = std::move(walked);
          variants.push_back(std::move(ps));
          sum = &variants.back().summary;
        } else {
          // What the pattern's walk found rests on the instantiation: walk
          // that instead, for every call of this template.
          pattern_failed_.insert(pat);
          raw_.resize(leaves_before);
          return followCall(e, in, depth);
        }
      }
    } else {
      auto it = summaries_.find(key);
      if (it == summaries_.end()) it = summaries_.emplace(key, summarise(def, args, depth)).first;
      sum = &it->second;
    }
    for (const RawLeaf& l : sum->leaves) {
      ExprPtr pc = m::And(st.pc, l.cond);
      if (m::isFalse(pc)) continue;
      raw_.push_back({l.kind, pc, l.kernel, l.text, l.loc, l.no_else});
    }
    for (const auto& x : sum->exits) {
      State next = st;
      next.pc = m::And(st.pc, x.pc);
      if (m::isFalse(next.pc)) continue;
      if (x.launch && (!next.launch || x.launch->rank > next.launch->rank)) next.launch = x.launch;
      out.normal.push_back(std::move(next));
    }
  }
  if (raw_.size() > opts_.max_paths) {
    m::Location l = loc(call->getBeginLoc(), false, "dispatch");
    throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                     std::to_string(opts_.max_paths) + " paths; giving up " + limitHint("max-paths"));
  }
  mergeStates(out.normal);
  return out;
}

Flow Walker::execIf(const IfStmt* is, std::vector<State> in, int depth) {
  Flow out;
  if (is->getInit()) {
    Flow f = exec(is->getInit(), std::move(in), depth + 1);
    in = std::move(f.normal);
  }
  if (const DeclStmt* cv = is->getConditionVariableDeclStmt()) {
    std::vector<State> alive;
    execDecl(cv, in, alive);
    in = std::move(alive);
  }
  bool thenLaunches = findLaunch(is->getThen()).has_value();
  bool elseLaunches = is->getElse() && findLaunch(is->getElse()).has_value();
  std::string condText = textOf(is->getCond());
  std::vector<State> thenIn, elseIn;
  if (is->isConsteval()) {
    out.normal = std::move(in);
    return out;
  }
  for (State& st : in) {
    ExprPtr c = condition(is->getCond(), st);
    if (readsNvlink(c)) nvlink_ifs_.insert(is);
    ExprPtr tpc = m::And(st.pc, c), epc = m::And(st.pc, m::Not(c));
    if (!m::isFalse(tpc)) {
      State t = st;
      t.pc = tpc;
      addFacts(t, c, true);
      if (!thenLaunches && elseLaunches)
        setReason(t, "if (" + condText + ") is taken and launches no kernel", is->getIfLoc(), 2);
      thenIn.push_back(std::move(t));
    }
    if (!m::isFalse(epc)) {
      State e = std::move(st);
      e.pc = epc;
      addFacts(e, c, false);
      if (!is->getElse())
        setReason(e, "if (" + condText + ") has no else", is->getIfLoc(), thenLaunches ? 2 : 1, is);
      else if (thenLaunches && !elseLaunches)
        setReason(e, "the else of if (" + condText + ") launches no kernel", is->getIfLoc(), 2);
      elseIn.push_back(std::move(e));
    }
  }
  Flow t = exec(is->getThen(), std::move(thenIn), depth + 1);
  Flow e;
  if (is->getElse()) e = exec(is->getElse(), std::move(elseIn), depth + 1);
  else e.normal = std::move(elseIn);
  for (Flow* f : {&t, &e}) {
    for (auto& x : f->normal) out.normal.push_back(std::move(x));
    for (auto& x : f->breaks) out.breaks.push_back(std::move(x));
    for (auto& x : f->continues) out.continues.push_back(std::move(x));
  }
  mergeStates(out.normal);
  mergeStates(out.breaks);
  return out;
}

Flow Walker::execSwitch(const SwitchStmt* sw, std::vector<State> in, int depth) {
  Flow out;
  if (sw->getInit()) in = exec(sw->getInit(), std::move(in), depth + 1).normal;
  if (const DeclStmt* cv = sw->getConditionVariableDeclStmt()) {
    std::vector<State> alive;
    execDecl(cv, in, alive);
    in = std::move(alive);
  }
  // Flatten: top-level statements of the body; a chain `case A: case B: s`
  // gives labels A and B at the position of s.
  std::vector<const Stmt*> seq;
  std::vector<CaseLabel> labels;
  const DefaultStmt* deflt = nullptr;
  std::size_t defaultIndex = 0;
  std::vector<const Stmt*> top;
  if (auto* body = dyn_cast_or_null<CompoundStmt>(sw->getBody())) top.assign(body->body_begin(), body->body_end());
  else if (sw->getBody()) top.push_back(sw->getBody());
  for (const Stmt* s : top) {
    const Stmt* cur = s;
    while (auto* sc = dyn_cast<SwitchCase>(cur)) {
      if (auto* d = dyn_cast<DefaultStmt>(sc)) {
        deflt = d;
        defaultIndex = seq.size();
      } else {
        labels.push_back({sc, seq.size()});
      }
      cur = sc->getSubStmt();
    }
    seq.push_back(cur);
  }
  bool anyLaunch = findLaunch(sw->getBody()).has_value();
  std::string subject = textOf(sw->getCond());
  auto runFrom = [&](std::size_t start, std::vector<State> states) {
    std::vector<State> cur = std::move(states);
    for (std::size_t i = start; i < seq.size() && !cur.empty(); ++i) {
      Flow f = exec(seq[i], std::move(cur), depth + 1);
      cur = std::move(f.normal);
      for (auto& b : f.breaks) out.normal.push_back(std::move(b));
      for (auto& c : f.continues) out.continues.push_back(std::move(c));
      checkPaths(out.normal.size() + cur.size(), seq[i]);
    }
    for (auto& c : cur) out.normal.push_back(std::move(c));
  };
  for (State& st : in) {
    Val subj = eval(sw->getCond(), st);
    ExprPtr x = asInt(subj, sw->getCond());
    bool opaqueSubject = false;
    if (!x || [&] {
          for (auto& v : m::varsOf(x))
            if (v.kind != m::VarKind::Opaque) return false;
          return !m::isConst(x);
        }()) {
      x = opaqueOf(sw->getCond(), m::Sort::Int);
      opaqueSubject = true;
    }
    (void)opaqueSubject;
    std::vector<ExprPtr> matched;
    std::vector<std::pair<std::size_t, State>> starts;
    for (const CaseLabel& cl : labels) {
      auto* cs = cast<CaseStmt>(cl.label);
      ExprPtr hit;
      Val lo = eval(cs->getLHS(), st);
      ExprPtr lov = asInt(lo, cs->getLHS());
      if (!lov) lov = opaqueOf(cs->getLHS(), m::Sort::Int);
      if (cs->caseStmtIsGNURange() && cs->getRHS()) {
        ExprPtr hiv = asInt(eval(cs->getRHS(), st), cs->getRHS());
        if (!hiv) hiv = opaqueOf(cs->getRHS(), m::Sort::Int);
        hit = m::And(m::Cmp(m::Op::Ge, x, lov), m::Cmp(m::Op::Le, x, hiv));
      } else {
        hit = m::Cmp(m::Op::Eq, x, lov);
      }
      matched.push_back(hit);
      ExprPtr pc = m::And(st.pc, hit);
      if (m::isFalse(pc)) continue;
      State c = st;
      c.pc = pc;
      addFacts(c, hit, true);
      starts.push_back({cl.index, std::move(c)});
    }
    ExprPtr none = m::Not(m::OrAll(matched));
    ExprPtr npc = m::And(st.pc, none);
    std::optional<State> rest;
    if (!m::isFalse(npc)) {
      State d = std::move(st);
      d.pc = npc;
      addFacts(d, none, true);
      if (!deflt)
        setReason(d, "no case for " + subject + " and no default", sw->getSwitchLoc(), anyLaunch ? 2 : 1);
      rest = std::move(d);
    }
    for (auto& [idx, c] : starts) {
      std::vector<State> one;
      one.push_back(std::move(c));
      runFrom(idx, std::move(one));
    }
    if (rest) {
      std::vector<State> one;
      one.push_back(std::move(*rest));
      if (deflt) runFrom(defaultIndex, std::move(one));
      else out.normal.push_back(std::move(one.front()));
    }
  }
  mergeStates(out.normal);
  return out;
}

Flow Walker::execLoop(const Stmt* s, std::vector<State> in, int depth) {
  Flow out;
  const Stmt* body = nullptr;
  const Expr* cond = nullptr;
  bool doLoop = false;
  if (auto* f = dyn_cast<ForStmt>(s)) {
    if (f->getInit()) in = exec(f->getInit(), std::move(in), depth + 1).normal;
    cond = f->getCond();
    body = f->getBody();
  } else if (auto* w = dyn_cast<WhileStmt>(s)) {
    if (const DeclStmt* cv = w->getConditionVariableDeclStmt()) {
      std::vector<State> alive;
      execDecl(cv, in, alive);
      in = std::move(alive);
    }
    cond = w->getCond();
    body = w->getBody();
  } else if (auto* d = dyn_cast<DoStmt>(s)) {
    body = d->getBody();
    doLoop = true;
  } else if (auto* r = dyn_cast<CXXForRangeStmt>(s)) {
    body = r->getBody();
  }
  bool bodyLaunches = findLaunch(body).has_value();
  std::vector<State> enter;
  for (State& st : in) {
    if (doLoop) {
      enter.push_back(std::move(st));
      continue;
    }
    ExprPtr c = m::True();
    if (cond) c = condition(cond, st);
    else if (auto* r = dyn_cast<CXXForRangeStmt>(s))
      c = opaque("range of " + textOf(r->getRangeInit()) + " is not empty", m::Sort::Bool, s->getBeginLoc());
    ExprPtr tpc = m::And(st.pc, c), epc = m::And(st.pc, m::Not(c));
    if (!m::isFalse(epc)) {
      State e = st;
      e.pc = epc;
      addFacts(e, c, false);
      setReason(e, "loop body not entered", s->getBeginLoc(), bodyLaunches ? 2 : 1);
      out.normal.push_back(std::move(e));
    }
    if (!m::isFalse(tpc)) {
      State t = std::move(st);
      t.pc = tpc;
      addFacts(t, c, true);
      enter.push_back(std::move(t));
    }
  }
  Flow f = exec(body, std::move(enter), depth + 1);
  // One pass of the body stands for all iterations.
  for (auto& x : f.normal) out.normal.push_back(std::move(x));
  for (auto& x : f.breaks) out.normal.push_back(std::move(x));
  for (auto& x : f.continues) out.normal.push_back(std::move(x));
  mergeStates(out.normal);
  return out;
}

// --- leaves -------------------------------------------------------------------------

void Walker::finishThrow(State& st, const CXXThrowExpr* t) {
  std::string msg;
  std::vector<const Stmt*> stack{t->getSubExpr()};
  while (!stack.empty() && msg.empty()) {
    const Stmt* x = stack.back();
    stack.pop_back();
    if (!x) continue;
    if (auto* sl = dyn_cast<StringLiteral>(x)) {
      msg = sl->getString().str();
      break;
    }
    std::vector<const Stmt*> kids(x->child_begin(), x->child_end());
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  throwLeaf(st.pc, msg, t->getBeginLoc());
}

// One throw leaf: a throw expression, or a failed precondition.
void Walker::throwLeaf(const ExprPtr& pc, const std::string& msg, SourceLocation where) {
  // A throw written in a library's macro (TORCH_CHECK): the leaf sits where
  // the user's code invokes it (inside the user's own macro, if there).
  while (where.isMacroID() && opts_.is_user_code && !opts_.is_user_code(sm_.getSpellingLoc(where)))
    where = sm_.getImmediateMacroCallerLoc(where);
  raw_.push_back({m::LeafKind::Throw, pc, "", msg, where, nullptr});
  if (raw_.size() > opts_.max_paths) {
    m::Location l = loc(where, false, "dispatch");
    throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                     std::to_string(opts_.max_paths) + " paths; giving up " + limitHint("max-paths"));
  }
}

void Walker::finishEnd(State& st, SourceLocation end) {
  if (st.launch) {
    raw_.push_back({m::LeafKind::Launch, st.pc, st.launch->kernel, "", st.launch->loc, nullptr});
  } else if (st.reason.prio > 0) {
    raw_.push_back({m::LeafKind::None, st.pc, "", st.reason.text, st.reason.loc, st.reason.no_else});
  } else {
    raw_.push_back({m::LeafKind::None, st.pc, "", "end of " + fn_name_ + " reached without a launch", end, nullptr});
  }
  if (raw_.size() > opts_.max_paths) {
    m::Location l = loc(end, false, "dispatch");
    throw InputError(l.file + ":" + std::to_string(l.line) + ": the dispatch has more than " +
                     std::to_string(opts_.max_paths) + " paths; giving up " + limitHint("max-paths"));
  }
}

// --- facts for the unsafe fix (cpp/FixFacts.h) ---------------------------------

bool Walker::readsNvlink(const ExprPtr& c) const {
  for (const auto& v : m::varsOf(c))
    if (spec_.roles.isLink(v.name)) return true;
  return false;
}

// An if the paths never evaluated (a sibling of an arm its case excludes)
// is asked on a fresh path, without its reads counting as the dispatch's.
bool Walker::testsNvlink(const IfStmt* is) {
  if (nvlink_ifs_.count(is)) return true;
  auto env = env_reads_;
  auto notes = notes_;
  State fresh;
  bool r = readsNvlink(condition(is->getCond(), fresh));
  env_reads_ = env;
  notes_ = notes;
  return r;
}

m::ElseSite Walker::elseSiteOf(const RawLeaf& r, const Stmt* body) {
  m::ElseSite none;
  if (!r.no_else || !body) {
    none.why = "the path does not end at an if without else (" + r.text + ")";
    return none;
  }
  if (!parents_) parents_ = std::make_unique<ParentMap>(const_cast<Stmt*>(body));
  ElseSiteQueries q;
  q.tests_nvlink = [this](const IfStmt* is) { return testsNvlink(is); };
  q.kernel_of = [this](const Stmt* s) {
    auto l = findLaunch(s);
    return l ? l->kernel : std::string();
  };
  q.spelling = [this](SourceLocation l) { return loc(l, true, "fix"); };
  return elseSite(sm_, *parents_, r.no_else, textOf(r.no_else->getCond()), q);
}

void Walker::noteOnce(const std::string& n) {
  for (auto& x : notes_)
    if (x == n) return;
  notes_.push_back(n);
}

// --- driver -------------------------------------------------------------------------

m::Dispatch Walker::run(const FunctionDecl* fd) {
  m::Dispatch d;
  fn_name_ = fd->getNameAsString();
  if (auto* md = dyn_cast<CXXMethodDecl>(fd)) {
    current_class_ = md->getParent();
    d.class_name = current_class_->getNameAsString();
  }
  d.function = fn_name_;
  d.where = loc(fd->getLocation(), false, "dispatch", d.class_name + "::" + fn_name_);
  findElementParam(fd);
  const Stmt* body = fd->getBody();
  std::vector<State> start(1);
  Flow f = exec(body, std::move(start), 0);
  SourceLocation end = body ? body->getEndLoc() : fd->getEndLoc();
  for (State& st : f.normal) finishEnd(st, end);
  for (State& st : f.breaks) finishEnd(st, end);
  for (State& st : f.continues) finishEnd(st, end);

  // Merge leaves with the same kind, kernel, text and locations.
  struct Key {
    int kind;
    std::string kernel, text;
    std::string sf;
    int sl, sc;
    std::string ef;
    int el, ec;
    bool operator<(const Key& o) const {
      return std::tie(kind, kernel, text, sf, sl, sc, ef, el, ec) <
             std::tie(o.kind, o.kernel, o.text, o.sf, o.sl, o.sc, o.ef, o.el, o.ec);
    }
  };
  std::map<Key, std::size_t> index;
  for (const RawLeaf& r : raw_) {
    if (m::isFalse(r.cond)) continue;
    const char* role = r.kind == m::LeafKind::Launch ? "launch" : r.kind == m::LeafKind::Throw ? "throw" : "no-launch";
    std::string note = r.kind == m::LeafKind::Launch ? r.kernel : r.text;
    m::Location sp = loc(r.loc, true, role, note), ex = loc(r.loc, false, role, note);
    Key k{static_cast<int>(r.kind), r.kernel, r.text, sp.file, sp.line, sp.col, ex.file, ex.line, ex.col};
    auto it = index.find(k);
    if (it != index.end()) {
      auto& leaf = d.leaves[it->second];
      leaf.condition = orMerge(leaf.condition, r.cond);
      continue;
    }
    index[k] = d.leaves.size();
    d.leaves.push_back(m::Leaf{r.kind, r.cond, r.kernel, r.text, sp, ex, {}});
    if (r.kind == m::LeafKind::None) d.leaves.back().else_site = elseSiteOf(r, body);
  }
  // Opaques that appear in some leaf condition.
  std::set<std::string> seen;
  std::vector<ExprPtr> conds;
  for (const auto& leaf : d.leaves) conds.push_back(leaf.condition);
  for (const auto& vars : m::varsOfEach(conds))
    for (const auto& v : vars)
      if (v.kind == m::VarKind::Opaque && seen.insert(v.name).second) {
        auto it = opaque_where_.find(v.name);
        m::OpaqueSymbol o;
        o.name = v.name;
        o.text = v.name;
        if (it != opaque_where_.end()) o.where = loc(it->second, false, "opaque", v.name);
        d.opaques.push_back(o);
      }
  d.env_reads = env_reads_;
  d.notes = notes_;
  if (reached_) {
    reached_->sm = &sm_;
    for (auto& [s, pcs] : stmt_pc_) {
      SourceRange r = s->getSourceRange();
      if (r.isInvalid()) continue;
      reached_->spans.push_back({sm_.getExpansionRange(r.getBegin()).getBegin(), sm_.getExpansionRange(r.getEnd()).getEnd(),
                                 sm_.getSpellingLoc(r.getBegin()), sm_.getSpellingLoc(r.getEnd()), std::move(pcs)});
    }
  }
  return d;
}

// Whether `name` stands in `text` as a whole identifier.
static bool hasWord(const std::string& text, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t p = text.find(name); !name.empty() && p != std::string::npos; p = text.find(name, p + 1)) {
    std::size_t e = p + name.size();
    if ((p == 0 || !ident(text[p - 1])) && (e >= text.size() || !ident(text[e]))) return true;
  }
  return false;
}

// Macros of the dispatch's file whose definition launches: `<<<`, or a use of
// another such macro (to a fixpoint), read from the source text.
std::set<std::string> Walker::launchingMacros() {
  std::map<std::string, std::string> bodies;
  bool invalid = false;
  llvm::StringRef buf = sm_.getBufferData(sm_.getMainFileID(), &invalid);
  if (invalid) return {};
  std::string text = buf.str();
  for (std::size_t at = text.find("#define"); at != std::string::npos; at = text.find("#define", at + 7)) {
    std::size_t k = at + 7;
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    std::size_t b = k;
    while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_')) ++k;
    std::string name = text.substr(b, k - b);
    std::size_t end = k;
    while (end < text.size() && text[end] != '\n') {
      end = text.find('\n', end);
      if (end == std::string::npos) end = text.size();
      else if (end > 0 && text[end - 1] == '\\') ++end;
      else break;
    }
    if (!name.empty()) bodies[name] += text.substr(k, end - k);
  }
  std::set<std::string> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [name, body] : bodies) {
      if (out.count(name)) continue;
      bool launches = body.find("<<<") != std::string::npos;
      for (const auto& m : out) launches = launches || hasWord(body, m);
      if (launches) grew = out.insert(name).second || grew;
    }
  }
  return out;
}

bool Walker::textLaunches(const Stmt* s, const std::set<std::string>& macros) {
  SourceLocation b = sm_.getSpellingLoc(s->getBeginLoc()), e = sm_.getSpellingLoc(s->getEndLoc());
  if (b.isInvalid() || e.isInvalid() || sm_.getFileID(b) != sm_.getFileID(e) ||
      sm_.getFileOffset(e) < sm_.getFileOffset(b))
    return false;
  std::string t = Lexer::getSourceText(CharSourceRange::getTokenRange(b, e), sm_, ctx_.getLangOpts()).str();
  if (t.find("<<<") != std::string::npos) return true;
  for (const auto& m : macros)
    if (hasWord(t, m)) return true;
  return false;
}

// A block that launches by its text but holds no launch in the AST, and no
// inner block that does so (that one explains it): a launch clang dropped.
// Its kernel: the longest identifier among the launching call's arguments
// (KL(ngpus, cross_device_reduce_1stage)), else the text.
std::optional<std::string> Walker::droppedLaunch(const CompoundStmt* cs) {
  if (!opts_.tu_has_errors || !opts_.tu_has_errors()) return std::nullopt;
  auto memo = dropped_memo_.find(cs);
  if (memo != dropped_memo_.end()) return memo->second;
  std::optional<std::string> out;
  if (!launching_macros_) launching_macros_ = launchingMacros();
  if (!findLaunch(cs) && textLaunches(cs, *launching_macros_)) {
    bool inner = false;
    std::vector<const Stmt*> stack(cs->child_begin(), cs->child_end());
    while (!stack.empty() && !inner) {
      const Stmt* x = stack.back();
      stack.pop_back();
      if (!x) continue;
      if (auto* c = dyn_cast<CompoundStmt>(x); c && textLaunches(c, *launching_macros_)) inner = true;
      for (const Stmt* k : x->children()) stack.push_back(k);
    }
    if (!inner) {
      std::string t = squash(Lexer::getSourceText(
          CharSourceRange::getTokenRange(sm_.getSpellingLoc(cs->getBeginLoc()), sm_.getSpellingLoc(cs->getEndLoc())),
          sm_, ctx_.getLangOpts()));
      std::string best;
      std::size_t open = t.find('(');
      for (std::size_t i = open == std::string::npos ? t.size() : open + 1; i < t.size();) {
        if (std::isalpha(static_cast<unsigned char>(t[i])) || t[i] == '_') {
          std::size_t j = i;
          while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
          if (j - i > best.size()) best = t.substr(i, j - i);
          i = j;
        } else {
          ++i;
        }
      }
      out = best.empty() ? t : best;
    }
  }
  dropped_memo_[cs] = out;
  return out;
}

ExprPtr Walker::runPredicate(const FunctionDecl* fd, std::vector<m::OpaqueSymbol>& opaques) {
  predicate_mode_ = true;
  returns_true_ = m::False();
  fn_name_ = fd->getNameAsString();
  const Stmt* body = fd->getBody();
  if (!body) return nullptr;
  std::vector<State> start(1);
  for (const ParmVarDecl* p : fd->parameters()) {
    QualType t = p->getType();
    if (t.isNull() || t->isDependentType() || p->getName().empty()) continue;
    if (t->isBooleanType())
      start[0].locals.set(p, Val::boolean(m::Var("param:" + p->getNameAsString(), m::Sort::Bool)));
    else if (t->isIntegralOrEnumerationType())
      start[0].locals.set(p, Val::integer(m::Var("param:" + p->getNameAsString(), m::Sort::Int)));
  }
  exec(body, std::move(start), 0);
  std::set<std::string> seen;
  for (const auto& v : m::varsOf(returns_true_))
    if (v.kind == m::VarKind::Opaque && seen.insert(v.name).second) {
      m::OpaqueSymbol o;
      o.name = o.text = v.name;
      auto it = opaque_where_.find(v.name);
      if (it != opaque_where_.end()) o.where = loc(it->second, false, "opaque", v.name);
      opaques.push_back(o);
    }
  return returns_true_;
}

}  // namespace walker

// The entry points (cpp/DispatchWalker.h).
using namespace walker;

std::vector<model::Dispatch::TemplateParam> templateParams(const TemplateDecl* td) {
  std::vector<model::Dispatch::TemplateParam> out;
  if (!td || !td->getTemplateParameters()) return out;
  for (const NamedDecl* p : *td->getTemplateParameters()) {
    std::string kind = "other";
    if (isa<TemplateTypeParmDecl>(p)) kind = "type";
    else if (auto* nt = dyn_cast<NonTypeTemplateParmDecl>(p))
      kind = nt->getType()->isBooleanType() ? "bool" : nt->getType()->isIntegralOrEnumerationType() ? "int" : "other";
    out.push_back({p->getNameAsString(), kind});
  }
  return out;
}

bool bodyLaunches(ASTContext& ctx, const FunctionDecl* fd, const WalkOptions& opts) {
  target::CppDispatchSpec none;
  Walker w(ctx, none, opts);
  if (auto* md = dyn_cast<CXXMethodDecl>(fd)) w.setClass(md->getParent());
  return !w.kernelOfFunction(fd).empty();
}

model::ExprPtr walkPredicate(ASTContext& ctx, const FunctionDecl* fd, const target::CppDispatchSpec& spec,
                             const WalkOptions& opts, std::vector<model::OpaqueSymbol>& opaques) {
  if (!fd->getReturnType()->isBooleanType() || !fd->doesThisDeclarationHaveABody()) return nullptr;
  Walker w(ctx, spec, opts);
  return w.runPredicate(fd, opaques);
}

model::Dispatch walkDispatch(ASTContext& ctx, const FunctionDecl* fd, const target::CppDispatchSpec& spec,
                             const WalkOptions& opts) {
  return walkDispatch(ctx, fd, spec, opts, nullptr);
}

model::Dispatch walkDispatch(ASTContext& ctx, const FunctionDecl* fd, const target::CppDispatchSpec& spec,
                             const WalkOptions& opts, Reached* reached) {
  Walker w(ctx, spec, opts);
  w.recordReach(reached);
  return w.run(fd);
}

model::ExprPtr Reached::at(SourceLocation l) const {
  if (!sm || l.isInvalid()) return model::True();
  SourceLocation exp = sm->getExpansionLoc(l), sp = sm->getSpellingLoc(l);
  auto within = [&](SourceLocation x, SourceLocation b, SourceLocation e) {
    if (b.isInvalid() || e.isInvalid() || sm->getFileID(x) != sm->getFileID(b) || sm->getFileID(x) != sm->getFileID(e))
      return false;
    unsigned o = sm->getFileOffset(x);
    return sm->getFileOffset(b) <= o && o <= sm->getFileOffset(e);
  };
  auto width = [&](SourceLocation b, SourceLocation e) -> unsigned {
    if (sm->getFileID(b) != sm->getFileID(e)) return ~0u;
    return sm->getFileOffset(e) - std::min(sm->getFileOffset(e), sm->getFileOffset(b));
  };
  // The innermost span by expansion; among equal ones (one macro use), the
  // innermost by spelling; the conditions of equally inner spans OR-ed.
  const Span* best = nullptr;
  model::ExprPtr pc;
  std::pair<unsigned, unsigned> best_w{~0u, ~0u};
  for (const auto& s : spans) {
    if (!within(exp, s.exp_begin, s.exp_end)) continue;
    bool in_macro = l.isMacroID();
    unsigned sw = ~0u;
    if (in_macro && within(sp, s.sp_begin, s.sp_end)) sw = width(s.sp_begin, s.sp_end);
    std::pair<unsigned, unsigned> w{width(s.exp_begin, s.exp_end), sw};
    if (!best || w < best_w) {
      best = &s;
      best_w = w;
      pc = model::False();
      for (const auto& p : s.pcs) pc = walker::Walker::orMerge(pc, p);
    } else if (w == best_w) {
      for (const auto& p : s.pcs) pc = walker::Walker::orMerge(pc, p);
    }
  }
  return best ? pc : model::True();
}

}  // namespace layergate::cpp::detail
