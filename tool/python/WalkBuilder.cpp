// Walker: a module-level gate. Some gates (vLLM early 2024) have no enabling
// statement: the class is built, unconditionally enabled, by a function of the
// gate module (`def init_custom_ar(): ... return ...; HANDLE = Cls(rank, ws, flag)`).
// The admission is then that function's path to the construction, and the
// constructor's own paths, walked with the arguments the function passes.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "python/Walker.h"

namespace layergate::python::detail {

// The first call `ClassName(...)` in a function's body (nested defs and
// classes excluded: they do not run when the function does).
TSNode Walker::findConstruction(TSNode fn) const {
  std::vector<TSNode> stack{field(fn, "body")};
  TSNode best{};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (ts_node_is_null(n)) continue;
    if (is(n, "function_definition") || is(n, "class_definition") || is(n, "lambda")) continue;
    if (is(n, "call")) {
      TSNode f = field(n, "function");
      if (is(f, "identifier") && text(f) == class_name_ &&
          (ts_node_is_null(best) || ts_node_start_byte(n) < ts_node_start_byte(best)))
        best = n;
    }
    for (TSNode k : named(n)) stack.push_back(k);
  }
  return best;
}

// A module-level function of the gate module that constructs the gate class
// (the first in source order); its construction call in `construction`.
const FuncInfo* Walker::findBuilder(TSNode& construction) {
  const FuncInfo* best = nullptr;
  int count = 0;
  for (const auto& [name, fi] : gate_mod_->funcs) {
    if (name.find('.') != std::string::npos || fi.is_method || fi.mod != gate_mod_) continue;
    TSNode c = findConstruction(fi.node);
    if (ts_node_is_null(c)) continue;
    ++count;
    if (!best || ts_node_start_byte(fi.node) < ts_node_start_byte(best->node)) {
      best = &fi;
      construction = c;
    }
  }
  if (count > 1)
    note(std::to_string(count) + " module-level functions construct " + class_name_ + "; the first (" +
         text(field(best->node, "name")) + ") is analysed");
  return best;
}

// Walk the building function once, from module state; every construction of
// the class on the way adds the constructor's exits to constructions_.
std::vector<Exit> Walker::walkBuilder(const FuncInfo& bf, const std::string& name) {
  note("no enabling statement in " + class_name_ + "; the gate is the module-level function " + name + "() at " +
       where(bf.node) + ", which constructs it: admitted when that function reaches the construction and the "
       "constructor completes (the gate assumes " + name + "() runs once)");
  builder_ = &bf;
  constructions_.clear();
  ModuleScope scope(*this, bf.mod);
  State st;
  // Paths of the function that return before constructing leave the gate
  // disabled: they are the rejects.
  st.attrs[spec_.enabling_attr] = vBool(model::BoolC(!spec_.enabling_value));
  auto params = parseParams(field(bf.node, "parameters"));
  for (const auto& p : params) {
    if (p.star || p.kwstar) st.locals[p.name] = vObject("module", p.name);
    else if (p.has_default) st.locals[p.name] = defaultValue(p);
    else st.locals[p.name] = paramUnknown(p.name, bf.node);
  }
  Frame fr{Frame::Kind::Ctor};
  fr.in_ctor = true;
  call_stack_.push_back(bf.node.id);
  walkBlock(field(bf.node, "body"), st, fr);
  call_stack_.pop_back();
  builder_ = nullptr;
  return constructions_;
}

// `ClassName(args)` inside the building function: walk __init__ with these
// arguments, from the path condition here.
Value Walker::construct(TSNode call, const Args& a, State& st, Frame& fr, Ctx& cx) {
  auto init = methods_.find("__init__");
  if (init == methods_.end() ||
      std::find(call_stack_.begin(), call_stack_.end(), init->second.node.id) != call_stack_.end())
    return unknown(call);
  const FuncInfo& fi = init->second;
  TSNode fn = fi.node;
  std::vector<Value> pos;
  for (TSNode k : a.pos) pos.push_back(eval(k, st, fr, cx));
  std::map<std::string, Value> kw;
  for (auto& [k, v] : a.kw) kw[k] = eval(v, st, fr, cx);
  if (a.splat) note("construction of " + class_name_ + " at " + where(call) + " unpacks arguments; those not "
                    "matched by position or keyword are unknown");

  auto params = parseParams(field(fn, "parameters"));
  State cs;
  cs.prefix = model::And(st.full(), cx.guard);
  bindCtorParams(params, pos, kw, call, cs);
  // Constructing it is enabling it; a constructor that sets the attribute to
  // the disabled value on some path still disables it there.
  cs.attrs[spec_.enabling_attr] = vBool(model::BoolC(spec_.enabling_value));
  Frame cf{Frame::Kind::Ctor};
  cf.in_ctor = true;
  call_stack_.push_back(fn.id);
  {
    ModuleScope scope(*this, fi.mod);
    walkBlock(field(fn, "body"), cs, cf);
  }
  call_stack_.pop_back();
  for (const auto& x : cf.returns) constructions_.push_back(Exit{x.cond, vNone(), x.attrs, x.node});
  if (!cs.dead()) constructions_.push_back(Exit{cs.full(), vNone(), cs.attrs, TSNode{}});
  // A path on which the constructor raises is no construction (its reject is
  // recorded in the constructor); what the building function does after the
  // construction does not change the admission.
  return unknown(call);
}

void Walker::bindCtorParams(const std::vector<Param>& params, const std::vector<Value>& pos,
                            std::map<std::string, Value>& kw, TSNode at, State& st) {
  std::size_t ai = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (i == 0) {
      st.locals[p.name] = vObject("self", "self");
      continue;
    }
    if (p.star || p.kwstar) {
      st.locals[p.name] = vObject("module", p.name);
      if (p.star) ai = pos.size();
    } else if (!p.kw_only && ai < pos.size()) {
      st.locals[p.name] = pos[ai++];
    } else if (kw.count(p.name)) {
      st.locals[p.name] = kw[p.name];
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
      st.locals[p.name] = paramUnknown(p.name, at);
    }
  }
}

}  // namespace layergate::python::detail
