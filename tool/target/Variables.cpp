#include "target/Variables.h"

namespace layergate::target {

namespace m = model;

const Variable* findVariable(const Variables& vs, const std::string& name) {
  for (const auto& v : vs)
    if (v.name == name) return &v;
  return nullptr;
}

m::ExprPtr termExpr(const Term& t, const Variables& vs) {
  switch (t.kind) {
    case Term::Kind::Int: return m::IntC(t.num);
    case Term::Kind::Str: return m::StrC(t.text);
    case Term::Kind::Bool: return m::BoolC(t.b);
    case Term::Kind::Var: {
      const Variable* v = findVariable(vs, t.var);
      return v ? m::Var(v->name, v->sort(), m::VarKind::Config) : nullptr;
    }
    case Term::Kind::Equals: {
      const Variable* v = findVariable(vs, t.var);
      if (!v) return nullptr;
      m::ExprPtr x = m::Var(v->name, v->sort(), m::VarKind::Config);
      if (v->type == Variable::Type::Enum) return m::Cmp(m::Op::Eq, x, m::StrC(t.text));
      if (v->type == Variable::Type::Bool) return t.text == "true" ? x : m::Not(x);
      try {
        return m::Cmp(m::Op::Eq, x, m::IntC(std::stoll(t.text)));
      } catch (const std::exception&) {
        return nullptr;
      }
    }
    case Term::Kind::If: {
      if (t.args.size() != 3) return nullptr;
      m::ExprPtr c = termExpr(t.args[0], vs), a = termExpr(t.args[1], vs), b = termExpr(t.args[2], vs);
      if (!c || !a || !b || c->sort != m::Sort::Bool || a->sort != b->sort) return nullptr;
      return m::Ite(c, a, b);
    }
    case Term::Kind::Add:
    case Term::Kind::Sub:
    case Term::Kind::Mul:
    case Term::Kind::Div: {
      if (t.args.size() != 2) return nullptr;
      m::ExprPtr a = termExpr(t.args[0], vs), b = termExpr(t.args[1], vs);
      if (!a || !b || a->sort != m::Sort::Int || b->sort != m::Sort::Int) return nullptr;
      m::Op op = t.kind == Term::Kind::Add ? m::Op::Add
                 : t.kind == Term::Kind::Sub ? m::Op::Sub
                 : t.kind == Term::Kind::Mul ? m::Op::Mul
                                             : m::Op::Div;
      return m::Arith(op, a, b);
    }
  }
  return nullptr;
}

m::ExprPtr domainExpr(const Variables& vs) {
  m::ExprPtr d = m::True();
  for (const auto& v : vs) {
    m::ExprPtr x = declaredVar(vs, v.name);
    std::vector<m::ExprPtr> alts;
    if (v.type == Variable::Type::Enum)
      for (const auto& n : v.names) alts.push_back(m::Cmp(m::Op::Eq, x, m::StrC(n)));
    if (v.type == Variable::Type::Int)
      for (auto i : v.ints) alts.push_back(m::Cmp(m::Op::Eq, x, m::IntC(i)));
    if (!alts.empty()) d = m::And(d, m::OrAll(alts));
    if (v.min) d = m::And(d, m::Cmp(m::Op::Ge, x, m::IntC(*v.min)));
    if (v.max) d = m::And(d, m::Cmp(m::Op::Le, x, m::IntC(*v.max)));
  }
  return d;
}

m::Roles rolesOf(const Variables& vs) {
  m::Roles r;
  for (const auto& v : vs) {
    if (v.role == "ranks") r.ranks = v.name;
    else if (v.role == "link") r.link = v.name;
    else if (v.role == "bytes") r.bytes = v.name;
    else if (v.role == "rank") r.rank = v.name;
    else if (v.role == "element") r.element = v.name;
  }
  return r;
}

m::ExprPtr declaredVar(const Variables& vs, const std::string& name) {
  const Variable* v = findVariable(vs, name);
  if (!v) return nullptr;
  return m::Var(v->name, v->sort(), v->probe ? m::VarKind::Probe : m::VarKind::Config);
}

std::string valueText(const Variable& v, const m::ExprPtr& c) {
  if (!c) return "?";
  if (c->op == m::Op::StrConst) return c->s;
  if (c->op == m::Op::BoolConst) return c->b ? "true" : "false";
  if (c->op == m::Op::IntConst) return std::to_string(c->i);
  (void)v;
  return c->str();
}

}  // namespace layergate::target
