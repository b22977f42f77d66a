// A policy gate (issue 13): a module-level function whose return value is the
// admission (None: another backend runs) and whose record's fields are what
// it hands down to the C++ entry. FlashInfer's get_pcie_ipc_launch_config
// (world size, numel, ...) -> IpcLaunchConfig(blocks, threads, variant) | None
// is the shape. The target names the function, which of its parameters are
// which config variables (with the values callers pass), and which fields the
// C++ side receives as which variables; everything else is walked as for a
// class gate (helpers inlined across the given files, constants folded).
// The selection layer's function (which implementation class a group gets)
// is walked the same way; its arms are the classes it returns.
#include <algorithm>

#include "model/Errors.h"
#include "python/Walker.h"

namespace layergate::python::detail {

const FuncInfo* Walker::setupFunction(const std::vector<std::string>& names, std::string& fname) {
  const FuncInfo* fi = nullptr;
  for (auto& m : mods_) {
    checkSyntax(*m);
    collectDecls(*m);
  }
  for (auto& m : mods_) {
    for (const auto& f : names) {
      auto it = m->funcs.find(f);
      if (it == m->funcs.end()) continue;
      fi = &it->second;
      fname = f;
      gate_mod_ = m.get();
      break;
    }
    if (fi) break;
  }
  if (!fi) return nullptr;
  cur_ = gate_mod_;
  // Imports inside the function (`from .custom_all_reduce_v2 import ...` in
  // SGLang's dispatch_custom_allreduce) count as the module's, so that the
  // modules they name are read from disk like the module-level ones.
  std::vector<TSNode> stack{field(fi->node, "body")};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (ts_node_is_null(n)) continue;
    if (is(n, "import_statement") || is(n, "import_from_statement")) {
      recordImport(n);
      continue;
    }
    if (is(n, "function_definition") || is(n, "class_definition")) continue;
    for (TSNode k : named(n)) stack.push_back(k);
  }
  followImports();
  class_name_.clear();
  for (const auto& f : files_) gate_.files.push_back(f.path);
  {
    gate_mod_->walked = 1;
    State st;
    Frame fr{Frame::Kind::Module};
    walkBlock(gate_mod_->root, st, fr);
    gate_mod_->globals = st.locals;
    gate_mod_->walked = 2;
  }
  cur_ = gate_mod_;
  return fi;
}

// One handed-down value: Gate::outputs gets it, Gate::bound ties its config
// variable to it (an opaque int when it is no number the walker knows).
void Walker::handDown(const std::string& var, const std::string& field, const Value& v, const Location& where,
                      Sort sort) {
  model::GateOutput o;
  o.var = var;
  o.field = field;
  o.value = sort == Sort::Str ? asStr(v) : asInt(v);
  if (!o.value) o.value = materialize(v, sort);
  o.origin = v.origin;
  o.where = where;
  gate_.bound = model::And(gate_.bound, model::Cmp(Op::Eq, model::Var(var, sort, VarKind::Config), o.value));
  gate_.outputs.push_back(std::move(o));
}

model::Gate Walker::runPolicy() {
  const auto& pol = spec_.policy;
  // The policy's file: the first that defines one of the functions named.
  std::string fname;
  const FuncInfo* fi = setupFunction(pol.functions, fname);
  if (!fi) {
    std::string looked, paths;
    for (const auto& n : pol.functions) looked += (looked.empty() ? "" : ", ") + n;
    for (const auto& f : files_) paths += (paths.empty() ? "" : ", ") + f.path;
    throw InputError(paths + ": no policy function " + looked + " defined at module level");
  }
  // The names are one policy's spellings across versions. Files that define
  // two of them leave open which is the gate: analysing the first alone
  // would say nothing of the others, so the run stops and names them.
  std::vector<std::string> ignored;
  for (const auto& n : pol.functions)
    if (n != fname)
      for (const auto& m : mods_)
        if (m->funcs.count(n) && std::find(ignored.begin(), ignored.end(), n) == ignored.end()) ignored.push_back(n);
  if (!ignored.empty()) {
    std::string others;
    for (const auto& n : ignored) others += (others.empty() ? "" : ", ") + n;
    throw InputError(gate_mod_->file->path + ": defines " + fname + " and " + others +
                     ", all named in the target's python.policy.functions; a target's policy is one function, and " +
                     others + " would be ignored: name one per target");
  }
  gate_.class_name = fname;
  gate_.policy = true;
  gate_.class_loc = loc(field(fi->node, "name"), "gate");
  gate_.enabling = loc(field(fi->node, "name"), "enabling");

  // Parameters: the config variables the target names, else their defaults,
  // else unknowns (code we do not know the value of: not free).
  auto params = parseParams(field(fi->node, "parameters"));
  State st;
  ExprPtr domain = model::True();
  std::map<std::string, ExprPtr> by_param;
  for (const auto& p : params) {
    const target::PythonGateSpec::PolicyInput* in = nullptr;
    for (const auto& x : pol.inputs)
      if (x.param == p.name) in = &x;
    if (in) {
      // A declared variable's type gives the sort (an enum is a string);
      // an optional object is None where its bool variable is false.
      const target::Variable* decl = target::findVariable(spec_.variables, in->var);
      Sort sort = decl ? decl->sort() : Sort::Int;
      ExprPtr v = model::Var(in->var, sort, VarKind::Config);
      by_param[p.name] = v;
      Value val = sort == Sort::Int ? vInt(v) : sort == Sort::Bool ? vBool(v) : vStr(v);
      if (in->present) {
        Value given = vObject("tensor", p.name);
        val = merge(v, given, vNone());
      }
      val.origin.push_back(hop("policy input", p.node));
      st.locals[p.name] = val;
      if (!in->values.empty()) {
        std::vector<ExprPtr> alts;
        for (auto x : in->values) alts.push_back(model::Cmp(Op::Eq, v, model::IntC(x)));
        domain = model::And(domain, model::OrAll(alts));
      }
      if (in->min) domain = model::And(domain, model::Cmp(Op::Ge, v, model::IntC(*in->min)));
      if (in->max) domain = model::And(domain, model::Cmp(Op::Le, v, model::IntC(*in->max)));
    } else if (p.has_default) {
      st.locals[p.name] = defaultValue(p);
      note("policy " + fname + ": parameter " + p.name + " takes its default");
    } else {
      st.locals[p.name] = paramUnknown(p.name, p.node);
    }
  }
  if (!pol.nbytes_product.empty()) {
    ExprPtr prod;
    for (const auto& n : pol.nbytes_product) {
      auto it = by_param.find(n);
      if (it == by_param.end())
        throw InputError(gate_mod_->file->path + ": the target's policy.nbytes names " + n + ", which is not an input of " + fname);
      prod = prod ? model::Arith(Op::Mul, prod, it->second) : it->second;
    }
    if (spec_.roles.bytes.empty())
      throw InputError(gate_mod_->file->path + ": the target's policy.nbytes needs a variable in the bytes role");
    domain = model::And(domain, model::Cmp(Op::Eq, probeVar(spec_.roles.bytes), prod));
  }

  Frame fr{Frame::Kind::Helper};
  call_stack_.push_back(fi->node.id);
  walkBlock(field(fi->node, "body"), st, fr);
  call_stack_.pop_back();
  std::vector<Exit> exits = fr.returns;
  if (!st.dead()) exits.push_back(Exit{st.full(), vNone(), st.attrs, TSNode{}});

  // Admitted: the paths that return something other than None; each output
  // is the returned record's field on those paths.
  std::vector<ExprPtr> adm;
  std::map<std::string, std::vector<std::pair<ExprPtr, Value>>> outs;
  for (const auto& x : exits) {
    TSNode site = ts_node_is_null(x.node) ? fi->node : x.node;
    // A bool policy admits where it returns a true value; a record policy
    // where it returns anything but None.
    ExprPtr a = model::And(x.cond, pol.returns_bool ? truthy(x.value) : model::Not(isNone(x.value, site)));
    if (model::isFalse(a)) continue;
    adm.push_back(a);
    model::GateCheck g;
    g.condition = a;
    g.text = shortText(site);
    g.where = loc(site, "admit");
    gate_.admits.push_back(g);
    for (const auto& [fieldname, var] : pol.outputs) {
      auto fv = recordField(x.value, fieldname);
      outs[fieldname].push_back({a, fv ? *fv : unknown(site)});
    }
  }
  gate_.admit = model::And(domain, model::OrAll(adm));
  gate_.per_call = model::True();
  gate_.has_per_call = false;
  for (const auto& [fieldname, var] : pol.outputs) {
    const auto& vs = outs[fieldname];
    if (vs.empty()) continue;
    // The value on the admitted paths, the last one as the default arm.
    Value v = vs.back().second;
    for (std::size_t i = vs.size() - 1; i-- > 0;) v = merge(vs[i].first, vs[i].second, v);
    handDown(var, fieldname, v, gate_.admits.empty() ? gate_.enabling : gate_.admits.back().where);
  }
  gate_.guard_site.found = false;
  gate_.guard_site.why = "the gate is the policy function " + fname + "; no guard is written into a policy";
  pruneTentative();
  return gate_;
}

}  // namespace layergate::python::detail

namespace layergate::python::detail {

namespace {

// The (condition, class) leaves of a returned value: a class of a given file
// by its name, None, or "?" for anything else.
void selectionLeaves(const Value& v, const ExprPtr& c, std::vector<std::pair<ExprPtr, std::string>>& out) {
  if (model::isFalse(c)) return;
  if (v.k == Value::K::Merge) {
    selectionLeaves(*v.a, model::And(c, v.cond), out);
    selectionLeaves(*v.b, model::And(c, model::Not(v.cond)), out);
    return;
  }
  std::string name = v.k == Value::K::None                                  ? "None"
                     : (v.k == Value::K::Object && v.tag == "pyclass")       ? v.text
                     : (v.k == Value::K::Object && v.tag == "class")         ? v.text
                                                                             : "?";
  out.push_back({c, name});
}

}  // namespace

std::optional<model::Selection> Walker::runSelection() {
  std::string fname;
  // (The files were checked by the gate's walk, which runs first.)
  for (const auto& f : files_) addModule(f, false);
  const FuncInfo* fi = setupFunction(spec_.selection_functions, fname);
  if (!fi) return std::nullopt;
  model::Selection sel;
  sel.function = fname;
  sel.where = loc(field(fi->node, "name"), "selection");
  auto params = parseParams(field(fi->node, "parameters"));
  State st;
  for (const auto& p : params)
    st.locals[p.name] = p.has_default ? defaultValue(p) : paramUnknown(p.name, p.node);
  Frame fr{Frame::Kind::Helper};
  call_stack_.push_back(fi->node.id);
  walkBlock(field(fi->node, "body"), st, fr);
  call_stack_.pop_back();
  std::vector<Exit> exits = fr.returns;
  if (!st.dead()) exits.push_back(Exit{st.full(), vNone(), st.attrs, TSNode{}});
  std::map<std::string, std::size_t> index;
  for (const auto& x : exits) {
    std::vector<std::pair<ExprPtr, std::string>> leaves;
    selectionLeaves(x.value, x.cond, leaves);
    for (const auto& [c, name] : leaves) {
      auto it = index.find(name);
      if (it == index.end()) {
        index[name] = sel.arms.size();
        sel.arms.push_back({name, c, loc(ts_node_is_null(x.node) ? fi->node : x.node, "selection")});
      } else {
        sel.arms[it->second].condition = model::Or(sel.arms[it->second].condition, c);
      }
    }
  }
  // What the arms' conditions use is what is kept (pruneTentative reads the gate's formulas).
  std::vector<ExprPtr> conds;
  for (const auto& a : sel.arms) conds.push_back(a.condition);
  gate_.admit = model::OrAll(conds);
  pruneTentative();
  sel.env_reads = gate_.env_reads;
  sel.opaques = gate_.opaques;
  sel.assumed = gate_.assumed;
  sel.notes = gate_.notes;
  return sel;
}

}  // namespace layergate::python::detail
