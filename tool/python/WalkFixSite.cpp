// Walker: where a guard that tightens the gate can go (Gate::guard_site), and
// the Python expressions that hold the world size and the NVLink probe's
// value there, found from the walk's data flow (never from names).
#include <optional>
#include <string>

#include "python/Walker.h"

namespace layergate::python::detail {
namespace {

// The first name in `m` whose value is exactly the config variable `var`.
std::string holding(const std::map<std::string, Value>& m, const std::string& var) {
  if (var.empty()) return "";
  for (const auto& [name, v] : m)
    if ((v.k == Value::K::Int || v.k == Value::K::Bool) && v.e && v.e->op == Op::Var && v.e->s == var &&
        v.e->var_kind == VarKind::Config)
      return name;
  return "";
}

bool isDocstring(TSNode s) { return is(s, "expression_statement") && is(firstNamed(s), "string"); }

}  // namespace

void Walker::captureEnabling(TSNode stmt, const State& st) {
  if (enabling_seen_ || ts_node_is_null(enabling_stmt_) || aux_depth_ > 0 || tentative_ > 0 ||
      !ts_node_eq(stmt, enabling_stmt_))
    return;
  enabling_seen_ = true;
  enabling_locals_ = st.locals;
  enabling_attrs_ = st.attrs;
}

// The whitespace before n on its line; nullopt when something else precedes it.
std::optional<std::string> Walker::lineIndent(TSNode n) const {
  const std::string& t = modOf(n).file->text;
  std::size_t at = ts_node_start_byte(n), b = t.rfind('\n', at == 0 ? 0 : at - 1);
  b = b == std::string::npos ? 0 : b + 1;
  std::string ind = t.substr(b, at - b);
  if (ind.find_first_not_of(" \t") != std::string::npos) return std::nullopt;
  return ind;
}

void Walker::findGuardSite(const FuncInfo* pc, const std::map<std::string, Value>& snapshot, TSNode en,
                           bool builder) {
  model::GuardSite& g = gate_.guard_site;
  // One indentation level as the def writes it: its body's column past its own.
  auto unit = [&](TSNode def, const std::optional<std::string>& body_ind) {
    std::string d = lineIndent(def).value_or("");
    return body_ind && body_ind->size() > d.size() ? body_ind->substr(d.size()) : std::string("    ");
  };
  auto selfName = [&](const FuncInfo& fi) -> std::string {
    if (fi.is_static) return "";
    auto ps = parseParams(field(fi.node, "parameters"));
    return ps.empty() ? "" : ps[0].name;
  };
  if (pc) {
    // After the method's leading `if ...: return False` checks (and docstring).
    g.method = text(field(pc->node, "name"));
    g.reject = "return False";
    auto stmts = named(field(pc->node, "body"));
    std::size_t i = 0;
    if (i < stmts.size() && isDocstring(stmts[i])) ++i;
    TSNode last{}, last_ret{};
    for (; i < stmts.size(); ++i) {
      TSNode s = stmts[i];
      if (!is(s, "if_statement") || !ts_node_is_null(field(s, "alternative"))) break;
      auto body = named(field(s, "consequence"));
      if (body.size() != 1 || !is(body[0], "return_statement") || !is(firstNamed(body[0]), "false")) break;
      last = s;
      last_ret = body[0];
    }
    if (stmts.empty() || (ts_node_is_null(last) && i >= stmts.size())) {
      g.why = g.method + " has no statement to put a guard before";
      return;
    }
    TSNode anchor = ts_node_is_null(last) ? stmts[i] : last;
    auto ind = lineIndent(anchor);
    if (!ind) {
      g.why = g.method + ": the guard's place shares its line with other code";
      return;
    }
    g.indent = *ind;
    auto ri = ts_node_is_null(last_ret) ? std::nullopt : lineIndent(last_ret);
    g.body_indent = ri && ri->size() > g.indent.size() ? *ri : g.indent + unit(pc->node, g.indent);
    g.file = modOf(pc->node).file->path;
    g.line = ts_node_is_null(last) ? static_cast<int>(ts_node_start_point(anchor).row) + 1
                                   : static_cast<int>(ts_node_end_point(last).row) + 2;
    std::string self = selfName(*pc);
    if (self.empty()) {
      g.why = g.method + " is a static method: it reads no instance attributes";
      return;
    }
    std::string ws = holding(snapshot, spec_.roles.ranks), nv = holding(snapshot, spec_.roles.link);
    if (!ws.empty()) g.world_size = self + "." + ws;
    if (!nv.empty()) g.full_nvlink = self + "." + nv;
    if (ws.empty()) {
      g.why = "no attribute of the instance " + g.method + " sees holds the world size itself";
      return;
    }
    g.found = true;
    return;
  }
  if (builder || ts_node_is_null(en) || ts_node_is_null(enabling_stmt_)) {
    g.why = "the gate is a module-level function that constructs the class; there is no statement to guard";
    return;
  }
  // No per-call method: just before the enabling statement.
  g.reject = "return";
  TSNode def = en;
  while (!ts_node_is_null(def) && !is(def, "function_definition")) def = ts_node_parent(def);
  if (ts_node_is_null(def)) {
    g.why = "the enabling statement is not inside a method";
    return;
  }
  g.method = text(field(def, "name"));
  auto ind = lineIndent(enabling_stmt_);
  if (!ind) {
    g.why = "the enabling statement shares its line with other code";
    return;
  }
  g.indent = *ind;
  g.body_indent = g.indent + unit(def, lineIndent(firstNamed(field(def, "body"))));
  g.file = modOf(en).file->path;
  g.line = static_cast<int>(ts_node_start_point(enabling_stmt_).row) + 1;
  if (!enabling_seen_) {
    g.why = "the walk never reached the enabling statement";
    return;
  }
  FuncInfo fi;
  fi.node = def;
  std::string self = selfName(fi);
  auto expr = [&](const std::string& var) {
    std::string a = holding(enabling_attrs_, var);
    if (!a.empty() && !self.empty()) return self + "." + a;
    return holding(enabling_locals_, var);
  };
  g.world_size = expr(spec_.roles.ranks);
  g.full_nvlink = expr(spec_.roles.link);
  if (g.world_size.empty()) {
    g.why = "no local or attribute holds the world size itself at the enabling statement";
    return;
  }
  g.found = true;
}

}  // namespace layergate::python::detail
