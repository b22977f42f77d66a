// Symbolic evaluation of expressions over path states: source text and
// locations, opaque symbols and config variables, values of expressions and
// branch conditions.
#include "cpp/DispatchWalkerImpl.h"

#include "clang/Lex/Lexer.h"
#include "llvm/Support/raw_ostream.h"

namespace layergate::cpp::detail::walker {

// --- text and locations ------------------------------------------------------

std::string Walker::squash(llvm::StringRef in) {
  std::string out;
  bool space = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '\\' && i + 1 < in.size() && (in[i + 1] == '\n' || in[i + 1] == '\r')) {
      space = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string Walker::textOf(const Stmt* e) {
  if (!e) return "?";
  const LangOptions& lo = ctx_.getLangOpts();
  SourceLocation b = sm_.getSpellingLoc(e->getBeginLoc());
  SourceLocation en = sm_.getSpellingLoc(e->getEndLoc());
  if (b.isValid() && en.isValid() && sm_.getFileID(b) == sm_.getFileID(en)) {
    unsigned ob = sm_.getFileOffset(b), oe = sm_.getFileOffset(en);
    if (ob <= oe && oe - ob < 400) {
      llvm::StringRef t = Lexer::getSourceText(CharSourceRange::getTokenRange(b, en), sm_, lo);
      if (!t.empty() && !t.contains("#define")) return squash(t);
    }
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  e->printPretty(os, nullptr, PrintingPolicy(lo));
  return squash(os.str());
}

m::Location Walker::loc(SourceLocation l, bool spelling, const char* role, const std::string& note) {
  m::Location out;
  out.role = role;
  out.note = note;
  if (l.isInvalid()) return out;
  SourceLocation f = spelling ? sm_.getSpellingLoc(l) : sm_.getExpansionLoc(l);
  if (f.isInvalid()) return out;
  out.file = opts_.file_name ? opts_.file_name(f) : sm_.getFilename(f).str();
  out.line = static_cast<int>(sm_.getSpellingLineNumber(f));
  out.col = static_cast<int>(sm_.getSpellingColumnNumber(f));
  return out;
}

// --- opaques and config variables -------------------------------------------

ExprPtr Walker::opaque(const std::string& text, m::Sort sort, SourceLocation where) {
  if (!opaque_where_.count(text)) opaque_where_[text] = where;
  return m::Var(text, sort, m::VarKind::Opaque);
}

ExprPtr Walker::opaqueOf(const Expr* e, m::Sort sort) {
  std::string t = textOf(e);
  if (!tframes_.empty() && e->isInstantiationDependent()) tframes_.back().dependent.insert(t);
  return opaque(t, sort, e->getBeginLoc());
}

ExprPtr Walker::configVar(const std::string& name, m::Sort sort, const State& st) {
  auto f = st.facts.find(name);
  if (f != st.facts.end() && f->second->sort == sort) return f->second;
  return m::Var(name, sort);
}

Val Walker::memberVal(const std::string& member, QualType type, const State& st) {
  auto it = spec_.members.find(member);
  if (it == spec_.members.end()) return Val::unknown();
  const std::string& cfg = it->second;
  if (isStringType(type)) return Val{Val::Str, configVar(cfg, m::Sort::Str, st), nullptr};
  // A declared variable's type gives the sort, else the member's own.
  const target::Variable* decl = target::findVariable(spec_.variables, cfg);
  m::Sort sort = decl && decl->type != target::Variable::Type::Enum ? decl->sort()
                 : (!type.isNull() && type->isBooleanType()) ? m::Sort::Bool
                                                              : m::Sort::Int;
  ExprPtr v = configVar(cfg, sort, st);
  return sort == m::Sort::Bool ? Val::boolean(v) : Val::integer(v);
}

void Walker::noteEnv(const std::string& name) {
  for (auto& n : env_reads_)
    if (n == name) return;
  env_reads_.push_back(name);
}

ExprPtr Walker::byteCount(const State& st) {
  if (spec_.roles.bytes.empty()) return nullptr;
  return configVar(spec_.roles.bytes, m::Sort::Int, st);
}

bool Walker::isByteCountName(llvm::StringRef n) const {
  for (auto& b : spec_.byte_count_names)
    if (n == b) return true;
  return false;
}

bool Walker::containsSizeof(const Stmt* s) {
  std::vector<const Stmt*> stack{s};
  while (!stack.empty()) {
    const Stmt* x = stack.back();
    stack.pop_back();
    if (!x) continue;
    if (auto* u = dyn_cast<UnaryExprOrTypeTraitExpr>(x))
      if (u->getKind() == UETT_SizeOf) return true;
    // A tensor's element size is a sizeof in disguise (t.numel() * t.element_size()).
    if (auto* mc = dyn_cast<CXXMemberCallExpr>(x))
      if (const CXXMethodDecl* md = mc->getMethodDecl())
        if (md->getIdentifier() && (md->getName() == "element_size" || md->getName() == "itemsize")) return true;
    for (auto* c : x->children()) stack.push_back(c);
  }
  return false;
}

// A product in which one factor involves sizeof(...): a byte count.
bool Walker::isSizeofProduct(const Expr* e) {
  std::vector<const Stmt*> stack{e};
  while (!stack.empty()) {
    const Stmt* x = stack.back();
    stack.pop_back();
    if (!x) continue;
    if (auto* b = dyn_cast<BinaryOperator>(x))
      if (b->getOpcode() == BO_Mul && (containsSizeof(b->getLHS()) || containsSizeof(b->getRHS())))
        return true;
    if (auto* op = dyn_cast<CXXOperatorCallExpr>(x))
      if (op->getOperator() == OO_Star && op->getNumArgs() == 2 &&
          (containsSizeof(op->getArg(0)) || containsSizeof(op->getArg(1))))
        return true;
    if (isa<CallExpr>(x) && !isa<CXXOperatorCallExpr>(x)) continue;  // f(sizeof(T) * n) is not the count
    for (auto* c : x->children()) stack.push_back(c);
  }
  return false;
}

// --- expression evaluation -----------------------------------------------------

m::Sort Walker::sortOfType(QualType t) { return t->isBooleanType() ? m::Sort::Bool : m::Sort::Int; }

bool Walker::isStringType(QualType t) {
  if (t.isNull()) return false;
  t = t.getNonReferenceType();
  if (auto* rd = t->getAsCXXRecordDecl()) {
    auto n = rd->getName();
    return n == "basic_string" || n == "basic_string_view" || n == "string" || n == "string_view";
  }
  std::string s = t.getAsString();
  return s.find("std::string") != std::string::npos || s.find("string_view") != std::string::npos ||
         s.find("basic_string") != std::string::npos;
}

// Opaque leaf for a name or member not understood, by its type.
Val Walker::opaqueOfType(const Expr* e) {
  QualType t = e->getType();
  if (t.isNull() || t->isDependentType()) return Val::unknown();
  if (t->isBooleanType()) return Val::boolean(opaqueOf(e, m::Sort::Bool));
  if (t->isIntegralOrEnumerationType()) return Val::integer(opaqueOf(e, m::Sort::Int));
  return Val::unknown();
}

bool Walker::readsEnv(const Stmt* s) {
  std::vector<const Stmt*> stack{s};
  while (!stack.empty()) {
    const Stmt* x = stack.back();
    stack.pop_back();
    if (!x) continue;
    if (auto* c = dyn_cast<CallExpr>(x)) {
      std::string n = calleeName(c->getCallee());
      if (n == "getenv" || n == "secure_getenv") return true;
    }
    for (auto* k : x->children()) stack.push_back(k);
  }
  return false;
}

std::optional<std::int64_t> Walker::constInt(const Expr* e) {
  if (!e || e->isValueDependent() || e->isTypeDependent() || e->containsErrors()) return std::nullopt;
  QualType t = e->getType();
  if (t.isNull() || !(t->isIntegralOrEnumerationType())) return std::nullopt;
  Expr::EvalResult r;
  if (e->EvaluateAsInt(r, ctx_, Expr::SE_NoSideEffects) && r.Val.isInt()) {
    const llvm::APSInt& v = r.Val.getInt();
    // A constant past int64 (an unsigned 64-bit mask, __int128) is no number here.
    if (v.isSigned() ? v.getSignificantBits() > 64 : v.getActiveBits() > 63) return std::nullopt;
    return v.getExtValue();
  }
  return std::nullopt;
}

ExprPtr Walker::asBool(const Val& v, const Expr* e) {
  switch (v.kind) {
    case Val::Bool: return v.e;
    case Val::Int: return cmp(m::Op::Ne, v.e, m::IntC(0));
    case Val::Ptr: return v.nonnull;
    case Val::Str: return m::True();
    case Val::Unknown: break;
  }
  return opaqueOf(e, m::Sort::Bool);
}

ExprPtr Walker::asInt(const Val& v, const Expr* e) {
  switch (v.kind) {
    case Val::Int: return v.e;
    case Val::Bool: return m::Ite(v.e, m::IntC(1), m::IntC(0));
    default: break;
  }
  return nullptr;
}

// Cmp with folding through Ite of constants: (0 if c else 1) == 0  ->  c.
ExprPtr Walker::cmp(m::Op op, ExprPtr a, ExprPtr b) {
  if (a->op == m::Op::Ite && m::isConst(b) && m::isConst(a->args[1]) && m::isConst(a->args[2]))
    return m::Ite(a->args[0], m::Cmp(op, a->args[1], b), m::Cmp(op, a->args[2], b));
  if (b->op == m::Op::Ite && m::isConst(a) && m::isConst(b->args[1]) && m::isConst(b->args[2]))
    return m::Ite(b->args[0], m::Cmp(op, a, b->args[1]), m::Cmp(op, a, b->args[2]));
  return m::Cmp(op, std::move(a), std::move(b));
}

// String-ish value: Ptr or Str -> (nonnull, str).
bool Walker::strParts(const Val& v, ExprPtr& nonnull, ExprPtr& s) {
  if (v.kind == Val::Ptr) {
    nonnull = v.nonnull;
    s = v.e;
    return s != nullptr;
  }
  if (v.kind == Val::Str) {
    nonnull = m::True();
    s = v.e;
    return true;
  }
  return false;
}

Val Walker::compare(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st) {
  m::Op op;
  switch (opc) {
    case BO_EQ: op = m::Op::Eq; break;
    case BO_NE: op = m::Op::Ne; break;
    case BO_LT: op = m::Op::Lt; break;
    case BO_LE: op = m::Op::Le; break;
    case BO_GT: op = m::Op::Gt; break;
    case BO_GE: op = m::Op::Ge; break;
    default: return Val::unknown();
  }
  Val a = eval(lhs, st), b = eval(rhs, st);
  // Pointer null tests: getenv(X) != nullptr.
  auto isNull = [](const Val& v) { return v.kind == Val::Ptr && m::isFalse(v.nonnull); };
  auto isZeroInt = [](const Val& v) { return v.kind == Val::Int && v.e->op == m::Op::IntConst && v.e->i == 0; };
  if ((op == m::Op::Eq || op == m::Op::Ne) && a.kind == Val::Ptr && (isNull(b) || isZeroInt(b)))
    return Val::boolean(op == m::Op::Eq ? m::Not(a.nonnull) : a.nonnull);
  if ((op == m::Op::Eq || op == m::Op::Ne) && b.kind == Val::Ptr && (isNull(a) || isZeroInt(a)))
    return Val::boolean(op == m::Op::Eq ? m::Not(b.nonnull) : b.nonnull);
  // String equality: std::string(getenv(X)) == "v", strcmp handled in eval.
  ExprPtr an, as, bn, bs;
  if ((op == m::Op::Eq || op == m::Op::Ne) && strParts(a, an, as) && strParts(b, bn, bs) &&
      (a.kind == Val::Str || b.kind == Val::Str || isStringType(lhs->getType()) || isStringType(rhs->getType()))) {
    ExprPtr eq = m::And(m::And(an, bn), m::Cmp(m::Op::Eq, as, bs));
    return Val::boolean(op == m::Op::Eq ? eq : m::Not(eq));
  }
  if (a.kind == Val::Bool && b.kind == Val::Bool && (op == m::Op::Eq || op == m::Op::Ne)) {
    ExprPtr eq = m::Or(m::And(a.e, b.e), m::And(m::Not(a.e), m::Not(b.e)));
    if (m::isConst(b.e)) eq = b.e->b ? a.e : m::Not(a.e);
    else if (m::isConst(a.e)) eq = a.e->b ? b.e : m::Not(b.e);
    return Val::boolean(op == m::Op::Eq ? eq : m::Not(eq));
  }
  ExprPtr x = asInt(a, lhs), y = asInt(b, rhs);
  if (!x || !y) return Val::boolean(opaqueOf(whole, m::Sort::Bool));
  return Val::boolean(cmp(op, x, y));
}

Val Walker::arith(BinaryOperatorKind opc, const Expr* lhs, const Expr* rhs, const Expr* whole, State& st) {
  if (opc == BO_Mul && (containsSizeof(lhs) || containsSizeof(rhs)))
    if (ExprPtr bytes = byteCount(st)) return Val::integer(bytes);
  Val a = eval(lhs, st), b = eval(rhs, st);
  ExprPtr x = asInt(a, lhs), y = asInt(b, rhs);
  if (!x || !y) return opaqueOfType(whole);
  switch (opc) {
    case BO_Add: return Val::integer(m::Arith(m::Op::Add, x, y));
    case BO_Sub: return Val::integer(m::Arith(m::Op::Sub, x, y));
    case BO_Mul: return Val::integer(m::Arith(m::Op::Mul, x, y));
    case BO_Div: return Val::integer(m::Arith(m::Op::Div, x, y));
    case BO_Rem: return Val::integer(m::Arith(m::Op::Mod, x, y));
    case BO_Shl:
      if (y->op == m::Op::IntConst && y->i >= 0 && y->i < 62)
        return Val::integer(m::Arith(m::Op::Mul, x, m::IntC(std::int64_t(1) << y->i)));
      break;
    case BO_Shr:
      if (y->op == m::Op::IntConst && y->i >= 0 && y->i < 62)
        return Val::integer(m::Arith(m::Op::Div, x, m::IntC(std::int64_t(1) << y->i)));
      break;
    default: break;
  }
  return opaqueOfType(whole);
}

// The env var name a getenv argument names, if literal.
std::optional<std::string> Walker::literalString(const Expr* e) {
  e = stripCasts(e);
  if (auto* s = dyn_cast_or_null<StringLiteral>(e)) return s->getString().str();
  if (auto* d = dyn_cast_or_null<DeclRefExpr>(e))
    if (auto* vd = dyn_cast<VarDecl>(d->getDecl()))
      if (vd->getType().isConstQualified() || vd->isConstexpr())
        if (const Expr* init = vd->getInit()) return literalString(init);
  return std::nullopt;
}

Val Walker::evalCall(const CallExpr* c, State& st) {
  std::string n = calleeName(c->getCallee());
  unsigned na = c->getNumArgs();
  if ((n == "getenv" || n == "secure_getenv") && na == 1) {
    if (auto name = literalString(c->getArg(0))) {
      noteEnv(*name);
      return Val::ptr(configVar(m::envSetVar(*name), m::Sort::Bool, st), m::EnvValue(*name));
    }
    ExprPtr nn = opaque(textOf(c) + " != nullptr", m::Sort::Bool, c->getBeginLoc());
    return Val::ptr(nn, opaque(textOf(c), m::Sort::Str, c->getBeginLoc()));
  }
  if ((n == "strcmp" || n == "strcasecmp") && na == 2) {
    ExprPtr an, as, bn, bs;
    Val a = eval(c->getArg(0), st), b = eval(c->getArg(1), st);
    if (strParts(a, an, as) && strParts(b, bn, bs)) {
      ExprPtr eq = m::And(m::And(an, bn), m::Cmp(m::Op::Eq, as, bs));
      return Val::integer(m::Ite(eq, m::IntC(0), m::IntC(1)));
    }
    return opaqueOfType(c);
  }
  if ((n == "atoi" || n == "atol" || n == "atoll" || n == "stoi" || n == "stol" || n == "stoll" ||
       n == "strtol" || n == "strtoll" || n == "strtoul" || n == "strtoull") && na >= 1) {
    ExprPtr nn, s;
    Val a = eval(c->getArg(0), st);
    if (strParts(a, nn, s)) return Val::integer(m::StrToInt(s));
    return opaqueOfType(c);
  }
  if ((n == "min" || n == "max") && na == 2) {
    Val a = eval(c->getArg(0), st), b = eval(c->getArg(1), st);
    ExprPtr x = asInt(a, c->getArg(0)), y = asInt(b, c->getArg(1));
    if (x && y) {
      ExprPtr lt = cmp(m::Op::Lt, x, y);
      return Val::integer(n == "min" ? m::Ite(lt, x, y) : m::Ite(lt, y, x));
    }
    return opaqueOfType(c);
  }
  if (auto* mc = dyn_cast<CXXMemberCallExpr>(c)) {
    if ((n == "c_str" || n == "data") && mc->getImplicitObjectArgument()) {
      Val o = eval(mc->getImplicitObjectArgument(), st);
      if (o.kind == Val::Ptr || o.kind == Val::Str) return o;
    }
    // std::string algo = env ? env : ""; if (!algo.empty()) ...
    if (n == "empty" && na == 0 && mc->getImplicitObjectArgument() &&
        isStringType(mc->getImplicitObjectArgument()->getType())) {
      ExprPtr nn, s;
      Val o = eval(mc->getImplicitObjectArgument(), st);
      if (strParts(o, nn, s)) return Val::boolean(m::Or(m::Not(nn), m::Cmp(m::Op::Eq, s, m::StrC(""))));
    }
  }
  if (auto* op = dyn_cast<CXXOperatorCallExpr>(c)) {
    BinaryOperatorKind bk;
    bool isBin = true;
    switch (op->getOperator()) {
      case OO_EqualEqual: bk = BO_EQ; break;
      case OO_ExclaimEqual: bk = BO_NE; break;
      case OO_Less: bk = BO_LT; break;
      case OO_LessEqual: bk = BO_LE; break;
      case OO_Greater: bk = BO_GT; break;
      case OO_GreaterEqual: bk = BO_GE; break;
      case OO_AmpAmp: bk = BO_LAnd; break;
      case OO_PipePipe: bk = BO_LOr; break;
      default: isBin = false; break;
    }
    if (isBin && op->getNumArgs() == 2) {
      if (bk == BO_LAnd || bk == BO_LOr) {
        ExprPtr x = asBool(eval(op->getArg(0), st), op->getArg(0));
        ExprPtr y = asBool(eval(op->getArg(1), st), op->getArg(1));
        return Val::boolean(bk == BO_LAnd ? m::And(x, y) : m::Or(x, y));
      }
      return compare(bk, op->getArg(0), op->getArg(1), op, st);
    }
    if (op->getOperator() == OO_Exclaim && op->getNumArgs() == 1)
      return Val::boolean(m::Not(asBool(eval(op->getArg(0), st), op->getArg(0))));
  }
  return opaqueOfType(c);
}

Val Walker::convert(const Val& v, QualType to, const Expr* e) {
  if (to.isNull() || to->isDependentType()) return v;
  if (to->isBooleanType()) {
    if (v.kind == Val::Bool) return v;
    if (v.kind == Val::Int || v.kind == Val::Ptr) return Val::boolean(asBool(v, e));
    return v;
  }
  if (to->isIntegralOrEnumerationType()) {
    if (v.kind == Val::Bool) return Val::integer(m::Ite(v.e, m::IntC(1), m::IntC(0)));
    return v;
  }
  return v;
}

Val Walker::eval(const Expr* e, State& st) {
  if (!e) return Val::unknown();
  if (++eval_depth_ > 4000) {
    --eval_depth_;
    return Val::unknown();
  }
  Val v = evalInner(e, st);
  --eval_depth_;
  return v;
}

std::optional<Val> Walker::declaredVal(const Expr* e) {
  if (spec_.values.empty() || !(isa<CallExpr>(e) || isa<DeclRefExpr>(e) || isa<MemberExpr>(e))) return std::nullopt;
  std::string key;
  for (char c : textOf(e))
    if (!std::isspace(static_cast<unsigned char>(c))) key += c;
  auto it = spec_.values.find(key);
  if (it == spec_.values.end()) return std::nullopt;
  ExprPtr x = target::termExpr(it->second, spec_.variables);
  if (!x) return std::nullopt;
  if (x->sort == m::Sort::Bool) return Val::boolean(x);
  if (x->sort == m::Sort::Int) return Val::integer(x);
  return Val{Val::Str, x, nullptr};
}

void Walker::findElementParam(const FunctionDecl* fd) {
  element_param_.reset();
  if (spec_.roles.element.empty()) return;
  for (const ParmVarDecl* p : fd->parameters()) {
    QualType t = p->getType().getNonReferenceType();
    if (!t->isPointerType()) continue;
    if (auto* tt = t->getPointeeType()->getAs<TemplateTypeParmType>()) {
      element_param_ = {tt->getDepth(), tt->getIndex()};
      return;
    }
  }
}

std::optional<Val> Walker::elementTypeTest(const Expr* e) {
  if (!element_param_) return std::nullopt;
  // The two types compared, from either spelling of the trait.
  llvm::ArrayRef<TemplateArgumentLoc> locs;
  llvm::ArrayRef<TemplateArgument> args;
  if (auto* ul = dyn_cast<UnresolvedLookupExpr>(e)) {
    if (ul->getName().getAsString() != "is_same_v") return std::nullopt;
    locs = ul->template_arguments();
  } else if (auto* dr = dyn_cast<DeclRefExpr>(e)) {
    if (dr->getDecl()->getName() != "is_same_v" || !dr->hasExplicitTemplateArgs()) return std::nullopt;
    locs = dr->template_arguments();
  } else if (auto* ds = dyn_cast<DependentScopeDeclRefExpr>(e)) {
    const NestedNameSpecifier* q = ds->getQualifier();
    const Type* qt = q ? q->getAsType() : nullptr;
    auto* ts = qt ? qt->getAs<TemplateSpecializationType>() : nullptr;
    if (ds->getDeclName().getAsString() != "value" || !ts) return std::nullopt;
    TemplateDecl* td = ts->getTemplateName().getAsTemplateDecl();
    if (!td || td->getName() != "is_same") return std::nullopt;
    args = ts->template_arguments();
  } else {
    return std::nullopt;
  }
  std::vector<QualType> types;
  for (const auto& l : locs) types.push_back(l.getArgument().getKind() == TemplateArgument::Type ? l.getArgument().getAsType() : QualType());
  for (const auto& a : args) types.push_back(a.getKind() == TemplateArgument::Type ? a.getAsType() : QualType());
  if (types.size() != 2 || types[0].isNull() || types[1].isNull()) return std::nullopt;
  auto isElement = [&](QualType t) {
    auto* tt = t.getCanonicalType()->getAs<TemplateTypeParmType>();
    return tt && tt->getDepth() == element_param_->first && tt->getIndex() == element_param_->second;
  };
  bool a = isElement(types[0]), b = isElement(types[1]);
  if (a && b) return Val::boolean(m::True());
  if (a == b) return std::nullopt;  // neither: not a test of the element type
  QualType other = (a ? types[1] : types[0]).getCanonicalType().getUnqualifiedType();
  if (other->isDependentType()) return std::nullopt;
  PrintingPolicy pp(ctx_.getLangOpts());
  pp.SuppressTagKeyword = true;
  pp.FullyQualifiedName = true;
  std::string name = other.getAsString(pp);
  const target::Variable* var = target::findVariable(spec_.variables, spec_.roles.element);
  if (!var) return std::nullopt;
  auto it = var->cpp_types.find(name);
  // A type the target does not list is none of the element types the
  // dispatch is built for: the test is false for each of them.
  if (it == var->cpp_types.end()) return Val::boolean(m::False());
  return Val::boolean(m::Cmp(m::Op::Eq, target::declaredVar(spec_.variables, var->name), m::StrC(it->second)));
}

Val Walker::evalInner(const Expr* e, State& st) {
  e = strip(e);
  if (auto tt = elementTypeTest(e)) return *tt;
  // In a template pattern, code clang rejected reads as its instantiation
  // does (which may drop the statements around it): walked there instead.
  if (!tframes_.empty() && e && e->containsErrors()) tframes_.back().unresolved = true;
  if (auto dv = declaredVal(e)) return *dv;
  if (auto k = constInt(e)) {
    if (e->getType()->isBooleanType()) return Val::boolean(m::BoolC(*k != 0));
    // Enum constants and constexprs fold; an expression mentioning a
    // config member never reaches here (it is not a constant).
    return Val::integer(m::IntC(*k));
  }
  if (auto* b = dyn_cast<CXXBoolLiteralExpr>(e)) return Val::boolean(m::BoolC(b->getValue()));
  if (auto* i = dyn_cast<IntegerLiteral>(e)) {
    if (i->getValue().getActiveBits() > 63) return opaqueOfType(e);
    return Val::integer(m::IntC(static_cast<std::int64_t>(i->getValue().getZExtValue())));
  }
  if (auto* ch = dyn_cast<CharacterLiteral>(e)) return Val::integer(m::IntC(ch->getValue()));
  if (auto* s = dyn_cast<StringLiteral>(e)) return Val::ptr(m::True(), m::StrC(s->getString().str()));
  if (isa<CXXNullPtrLiteralExpr>(e) || isa<GNUNullExpr>(e)) return Val::ptr(m::False(), m::StrC(""));
  if (auto* ic = dyn_cast<ImplicitCastExpr>(e)) {
    Val v = eval(ic->getSubExpr(), st);
    if (ic->getCastKind() == CK_NullToPointer) return Val::ptr(m::False(), m::StrC(""));
    return convert(v, ic->getType(), ic->getSubExpr());
  }
  if (auto* ce = dyn_cast<ExplicitCastExpr>(e)) {
    Val v = eval(ce->getSubExpr(), st);
    if (isStringType(ce->getType()) && (v.kind == Val::Ptr || v.kind == Val::Str)) return v;
    return convert(v, ce->getType(), ce->getSubExpr());
  }
  if (auto* cc = dyn_cast<CXXConstructExpr>(e)) {
    if (cc->getNumArgs() == 0 && isStringType(cc->getType())) return Val{Val::Str, m::StrC(""), nullptr};
    if (cc->getNumArgs() >= 1 && (isStringType(cc->getType()) || cc->getNumArgs() == 1)) {
      Val v = eval(cc->getArg(0), st);
      if (v.kind == Val::Ptr || v.kind == Val::Str) return v;
    }
    return Val::unknown();
  }
  if (auto* uc = dyn_cast<CXXUnresolvedConstructExpr>(e)) {
    if (uc->getNumArgs() == 1) {
      Val v = eval(uc->getArg(0), st);
      if (v.kind == Val::Ptr || v.kind == Val::Str) return v;
      return convert(v, uc->getTypeAsWritten(), uc->getArg(0));
    }
    return Val::unknown();
  }
  if (auto* d = dyn_cast<DeclRefExpr>(e)) {
    const ValueDecl* vd = d->getDecl();
    if (isa<NonTypeTemplateParmDecl>(vd) && !tframes_.empty()) {
      auto b = tframes_.back().bound.find(vd);
      if (b != tframes_.back().bound.end()) {
        tframes_.back().read.insert(vd);
        return b->second;
      }
    }
    std::string name = vd->getNameAsString();
    if (auto* var = dyn_cast<VarDecl>(vd)) {
      if (!tframes_.empty() && var->isInvalidDecl()) tframes_.back().unresolved = true;
      if (const Val* local = st.locals.find(var)) return *local;
      if (spec_.members.count(name)) return memberVal(name, d->getType(), st);
      if (var->hasLocalStorage() && isByteCountName(name))
        if (ExprPtr bytes = byteCount(st)) return Val::integer(bytes);
      if (var->getType().isConstQualified() || var->isConstexpr())
        if (const Expr* init = var->getInit()) {
          if (auto k = constInt(init)) return Val::integer(m::IntC(*k));
          if (auto s = literalString(init)) return Val::ptr(m::True(), m::StrC(*s));
        }
      // A namespace-scope or class static initialised from the environment
      // (static const char* kAlgo = std::getenv("X");): its initialiser.
      if (!var->hasLocalStorage() && var->getInit() && readsEnv(var->getInit()) &&
          globals_in_eval_.insert(var).second) {
        Val v = eval(var->getInit(), st);
        globals_in_eval_.erase(var);
        if (v.kind != Val::Unknown) return convert(v, var->getType(), var->getInit());
      }
      return opaqueOfType(d);
    }
    if (auto* ec = dyn_cast<EnumConstantDecl>(vd); ec && ec->getInitVal().getSignificantBits() <= 64)
      return Val::integer(m::IntC(ec->getInitVal().getExtValue()));
    if (spec_.members.count(name)) return memberVal(name, d->getType(), st);
    return opaqueOfType(d);
  }
  if (auto* me = dyn_cast<MemberExpr>(e)) {
    std::string name = me->getMemberDecl()->getNameAsString();
    if (spec_.members.count(name)) return memberVal(name, me->getType(), st);
    return opaqueOfType(me);
  }
  if (auto* dm = dyn_cast<CXXDependentScopeMemberExpr>(e)) {
    std::string name = dm->getMember().getAsString();
    if (spec_.members.count(name)) return memberVal(name, QualType(), st);
    return Val::unknown();
  }
  if (auto* u = dyn_cast<UnaryOperator>(e)) {
    switch (u->getOpcode()) {
      case UO_LNot: return Val::boolean(m::Not(asBool(eval(u->getSubExpr(), st), u->getSubExpr())));
      case UO_Minus: {
        Val v = eval(u->getSubExpr(), st);
        if (ExprPtr x = asInt(v, u->getSubExpr())) return Val::integer(m::Neg(x));
        return opaqueOfType(u);
      }
      case UO_Plus: return eval(u->getSubExpr(), st);
      default: return opaqueOfType(u);
    }
  }
  if (auto* b = dyn_cast<BinaryOperator>(e)) {
    switch (b->getOpcode()) {
      case BO_LAnd:
      case BO_LOr: {
        ExprPtr x = asBool(eval(b->getLHS(), st), b->getLHS());
        ExprPtr y = asBool(eval(b->getRHS(), st), b->getRHS());
        return Val::boolean(b->getOpcode() == BO_LAnd ? m::And(x, y) : m::Or(x, y));
      }
      case BO_EQ: case BO_NE: case BO_LT: case BO_LE: case BO_GT: case BO_GE:
        return compare(b->getOpcode(), b->getLHS(), b->getRHS(), b, st);
      case BO_Add: case BO_Sub: case BO_Mul: case BO_Div: case BO_Rem: case BO_Shl: case BO_Shr:
        return arith(b->getOpcode(), b->getLHS(), b->getRHS(), b, st);
      case BO_Comma: return eval(b->getRHS(), st);
      default: return opaqueOfType(b);
    }
  }
  if (auto* co = dyn_cast<ConditionalOperator>(e)) {
    ExprPtr c = asBool(eval(co->getCond(), st), co->getCond());
    Val t = eval(co->getTrueExpr(), st), f = eval(co->getFalseExpr(), st);
    if (t.kind == Val::Ptr && f.kind == Val::Ptr && t.e && f.e)
      return Val::ptr(m::Ite(c, t.nonnull, f.nonnull), m::Ite(c, t.e, f.e));
    if (t.kind == f.kind && (t.kind == Val::Bool || t.kind == Val::Int || t.kind == Val::Str))
      return Val{t.kind, m::Ite(c, t.e, f.e), nullptr};
    if ((t.kind == Val::Ptr || t.kind == Val::Str) && (f.kind == Val::Ptr || f.kind == Val::Str)) {
      ExprPtr tn, ts, fn, fs;
      strParts(t, tn, ts);
      strParts(f, fn, fs);
      return Val::ptr(m::Ite(c, tn, fn), m::Ite(c, ts, fs));
    }
    return opaqueOfType(co);
  }
  if (auto* c = dyn_cast<CallExpr>(e)) {
    if (isa<CUDAKernelCallExpr>(c)) return Val::unknown();
    return evalCall(c, st);
  }
  return opaqueOfType(e);
}

// A branch condition: never silently true or false. When the translation
// mentions no config variable, the whole condition is one opaque symbol.
ExprPtr Walker::condition(const Expr* e, State& st) {
  ExprPtr c = asBool(eval(e, st), e);
  if (m::isConst(c)) return c;
  bool hasConfig = false;
  for (auto& v : m::varsOf(c))
    if (v.kind != m::VarKind::Opaque) hasConfig = true;
  if (!hasConfig) {
    std::string t = textOf(e);
    if (!(c->op == m::Op::Var && c->s == t)) c = opaqueOf(e, m::Sort::Bool);
  }
  return c;
}

void Walker::addFacts(State& st, const ExprPtr& c, bool truth) {
  switch (c->op) {
    case m::Op::Not: addFacts(st, c->args[0], !truth); return;
    case m::Op::And:
      if (truth) for (auto& a : c->args) addFacts(st, a, true);
      return;
    case m::Op::Or:
      if (!truth) for (auto& a : c->args) addFacts(st, a, false);
      return;
    case m::Op::Var:
      if (c->sort == m::Sort::Bool && c->var_kind == m::VarKind::Config) st.facts[c->s] = m::BoolC(truth);
      return;
    case m::Op::Eq:
    case m::Op::Ne: {
      if ((c->op == m::Op::Eq) != truth) return;
      const ExprPtr& a = c->args[0];
      const ExprPtr& b = c->args[1];
      if (a->op == m::Op::Var && a->var_kind == m::VarKind::Config && m::isConst(b)) st.facts[a->s] = b;
      else if (b->op == m::Op::Var && b->var_kind == m::VarKind::Config && m::isConst(a)) st.facts[b->s] = a;
      return;
    }
    default: return;
  }
}

}  // namespace layergate::cpp::detail::walker
