#include "link/Link.h"

#include <algorithm>

namespace layergate::link {
namespace {

using model::Hop;
using model::Location;

std::string ordinal(int zero_based) { return "#" + std::to_string(zero_based + 1); }

bool mentions(const model::ExprPtr& e, const std::string& var) {
  if (!e) return false;
  for (const auto& v : model::varsOf(e))
    if (v.name == var) return true;
  return false;
}

int requiredParams(const std::vector<model::CppParam>& ps) {
  int n = 0;
  for (const auto& p : ps)
    if (!p.has_default) ++n;
  return n;
}

int positionalCount(const model::NativeCall& c) {
  int n = 0;
  for (const auto& a : c.args)
    if (a.position >= 0) ++n;
  return n;
}

}  // namespace

const model::CallArg* argAt(const model::NativeCall& c, int position, const std::string& keyword) {
  for (const auto& a : c.args)
    if (a.position == position && position >= 0) return &a;
  for (const auto& a : c.args)
    if (!keyword.empty() && a.keyword == keyword) return &a;
  return nullptr;
}


FlagLink traceFlag(const model::Gate& gate, const model::Dispatch& d, const std::string& link) {
  FlagLink L;
  L.config = link;
  if (link.empty()) return L;
  // 1. The member the dispatch branches on.
  std::vector<Hop> branch_hops;
  for (const auto& u : d.member_uses) {
    if (u.config != link) continue;
    if (u.where.role == "precondition") continue;  // a RuntimeCheck-style precondition call, not the branch
    if (L.member.empty()) L.member = u.member;
    if (u.member == L.member) branch_hops.push_back({"branch condition", u.where});
  }
  if (L.member.empty()) return L;  // the dispatch does not branch on the flag

  // Hops are collected from the C++ end backwards and reversed at the end.
  // `cpp_hops` end at the C++ parameter; `py_side` are the hops from the
  // gate's call onwards (call argument, wrapper) that precede them.
  std::vector<Hop> cpp_hops, py_side;
  bool reached_branch = true;  // the C++ part connects to the branch conditions
  bool cpp_connected = true;   // the binding ties the Python call to the C++ entry
  bool dropped = false;        // the entry does not pass the flag on (a default applies)
  auto finish = [&](std::vector<Hop> origin) {
    L.hops = std::move(origin);
    std::reverse(py_side.begin(), py_side.end());
    L.hops.insert(L.hops.end(), py_side.begin(), py_side.end());
    if (cpp_connected) {
      std::reverse(cpp_hops.begin(), cpp_hops.end());
      L.hops.insert(L.hops.end(), cpp_hops.begin(), cpp_hops.end());
    }
    if (cpp_connected && reached_branch) L.hops.insert(L.hops.end(), branch_hops.begin(), branch_hops.end());
    return L;
  };
  auto lastHop = [&]() -> std::string {
    if (!cpp_hops.empty()) return cpp_hops.back().hop + " at " + cpp_hops.back().where.file + ":" + std::to_string(cpp_hops.back().where.line);
    return "branch condition on " + L.member;
  };
  auto brk = [&](const std::string& why, std::vector<Location> locs = {}) {
    L.problems.push_back({"LG006", "flag trace stops after the " + lastHop() + ": " + why, std::move(locs)});
  };
  auto at = [](const Location& specific, const Location& fallback) { return specific.valid() ? specific : fallback; };

  // 2. The constructor parameter that sets the member.
  const model::CtorInfo* ctor = nullptr;
  const model::MemberInit* init = nullptr;
  for (const auto& c : d.ctors)
    for (const auto& i : c.inits)
      if (i.member == L.member && !init) ctor = &c, init = &i;
  if (!init) {
    brk("no constructor of " + d.class_name + " in the given files sets " + L.member);
    return finish({});
  }
  cpp_hops.push_back({"member", init->where});
  if (init->param < 0) {
    L.problems.push_back({"LG005", L.member + " is set from `" + init->text + "`, not from a constructor parameter: the Python flag never reaches the dispatch", {init->where}});
    return finish({});
  }
  const int j = init->param;
  const model::CppParam& ctor_param = ctor->params.at(static_cast<size_t>(j));

  // 3. The entry function that constructs the class, and its parameter.
  // Several functions may construct the class (tests, helpers): prefer the
  // one an op registration names.
  const model::CppEntry* entry = nullptr;
  const model::Construction* cons = nullptr;
  auto boundName = [&](const std::string& fn) {
    for (const auto& b : d.bindings)
      if (b.function == fn || (b.function.empty() && b.op == fn)) return true;
    return false;
  };
  for (int pass = 0; pass < 2 && !cons; ++pass)
    for (const auto& e : d.entries)
      for (const auto& c : e.constructs)
        if (!cons && (pass == 1 || boundName(e.name))) entry = &e, cons = &c;
  if (!cons) {
    brk("no C++ function in the given files constructs " + d.class_name +
        " (give the .cu that defines the op entry, e.g. init_custom_ar)");
    // Without the entry the position is unknown; follow the name instead: a
    // bool the gate passes to a native op under the constructor parameter's
    // name (self.full_nvlink for full_nvlink) is taken as the value C++ gets.
    auto endsWith = [](const std::string& t, const std::string& n) {
      return t.size() >= n.size() && t.compare(t.size() - n.size(), n.size(), n) == 0 &&
             (t.size() == n.size() || t[t.size() - n.size() - 1] == '.');
    };
    for (const auto& c : gate.native_calls)
      for (const auto& a : c.args)
        if (!L.value && a.value && a.value->sort == model::Sort::Bool && !ctor_param.name.empty() &&
            (endsWith(a.text, ctor_param.name) || a.keyword == ctor_param.name)) {
          L.value = a.value;
          L.value_at = a.where;
          L.value_text = a.text;
          py_side.push_back({"call argument " + ordinal(a.position), at(a.where, c.where)});
          return finish(a.origin);
        }
    return finish({});
  }
  auto consArgAt = [&](int i) {
    return i < static_cast<int>(cons->arg_locs.size()) ? at(cons->arg_locs[static_cast<size_t>(i)], cons->where) : cons->where;
  };
  if (static_cast<int>(cons->arg_texts.size()) <= j) {
    std::string def = ctor_param.has_default ? "the constructor default `" + ctor_param.default_text + "` applies" : "it is left unset";
    L.problems.push_back({"LG005", entry->name + " constructs " + d.class_name + " with " + std::to_string(cons->arg_texts.size()) +
                                       " arguments, so parameter " + ordinal(j) + " `" + ctor_param.name + "` is not passed and " + def +
                                       ": the Python flag never reaches " + L.member,
                          {cons->where, ctor->where}});
    // The flag still travels from Python to the entry's parameter, unused:
    // trace that part (below) but not past the entry.
    reached_branch = false;
    dropped = true;
    cpp_hops.clear();  // the member is not reached from here
  } else {
    cpp_hops.push_back({"constructor argument", consArgAt(j)});
  }
  int k = reached_branch ? cons->arg_param.at(static_cast<size_t>(j)) : -1;
  if (reached_branch && k < 0) {
    const std::string& t = cons->arg_texts.at(static_cast<size_t>(j));
    if (t == "true" || t == "false") {
      // Forced in C++ itself: the value is a constant whatever Python probed.
      L.value = model::BoolC(t == "true");
      L.value_at = consArgAt(j);
      L.value_text = t;
      L.complete = true;
      return finish({});
    }
    brk(entry->name + " passes `" + t + "` as " + d.class_name + "'s `" + ctor_param.name + "`, not one of its own parameters", {cons->where});
    return finish({});
  }
  if (!reached_branch) {
    // Not passed on: follow the entry's parameter of the same name, if any.
    for (size_t i = 0; i < entry->params.size(); ++i)
      if (entry->params[i].name == ctor_param.name) k = static_cast<int>(i);
    if (k < 0) return finish({});
  }

  // 4. The op bound to the entry function (schema and impl / pybind11).
  std::string op;
  const model::OpBinding* schema = nullptr;
  const model::OpBinding* impl = nullptr;
  for (const auto& b : d.bindings)
    if (!b.function.empty() && b.function == entry->name && !impl) impl = &b, op = b.op;
  for (const auto& b : d.bindings)
    if (b.kind == "torch-schema" && b.op == (op.empty() ? entry->name : op) && !schema) schema = &b;
  bool bound = impl || schema;
  if (!bound) op = entry->name;
  // Hops from the binding to the C++ parameter for argument position q.
  auto bindingHops = [&](int q, std::vector<Hop>& out) {
    out.push_back({"C++ parameter", at(entry->params.at(static_cast<size_t>(q)).where, entry->where)});
    if (impl) out.push_back({"binding", impl->where});
    if (schema) {
      Location w = schema->where;
      if (q < static_cast<int>(schema->schema_params.size())) w = at(schema->schema_params[static_cast<size_t>(q)].where, w);
      out.push_back({"schema argument", w});
    }
  };
  const model::CppParam& entry_param = entry->params.at(static_cast<size_t>(k));
  if (bound) bindingHops(k, cpp_hops);
  if (schema) {
    if (schema->schema_params.size() != entry->params.size())
      L.problems.push_back({"LG005", "the op schema of " + op + " has " + std::to_string(schema->schema_params.size()) +
                                         " arguments but the C++ function " + entry->name + " has " + std::to_string(entry->params.size()),
                            {schema->where, entry->where}});
    else if (schema->schema_params[static_cast<size_t>(k)].type != "bool")
      L.problems.push_back({"LG005", "argument " + ordinal(k) + " of the op schema of " + op + " is `" +
                                         schema->schema_params[static_cast<size_t>(k)].type + " " + schema->schema_params[static_cast<size_t>(k)].name +
                                         "`, but " + entry->name + " takes the flag `" + entry_param.name + "` there",
                            {schema->where, entry->where}});
  }

  // 5. The Python call of that op: directly, or through a chain of wrappers
  // in the given files (the gate -> custom_all_reduce_ops.py -> sgl_kernel/
  // allreduce.py -> torch.ops..., or one wrapper: vllm/_custom_ops.py).
  const auto& fws = gate.forwarders;
  const int nf = static_cast<int>(fws.size());
  auto argIndex = [](const model::NativeCall& c, int pos) {
    for (size_t i = 0; i < c.args.size(); ++i)
      if (c.args[i].position == pos && pos >= 0) return static_cast<int>(i);
    return -1;
  };
  // The wrappers a call goes through, outermost first, as resolution found them.
  auto chainOf = [&](int w) {
    std::vector<int> ch;
    while (w >= 0 && w < nf && std::find(ch.begin(), ch.end(), w) == ch.end()) {
      ch.push_back(w);
      w = fws[static_cast<size_t>(w)].call.wrapper;
    }
    return ch;
  };
  // A gate call reaches wrapper `wi` last: through its resolved chain, or
  // (not resolved) by the wrapper's name.
  auto reaches = [&](const model::NativeCall& c, int wi, bool resolved) {
    if (resolved) {
      auto ch = chainOf(c.wrapper);
      return !ch.empty() && ch.back() == wi;
    }
    return c.wrapper < 0 && c.name == fws[static_cast<size_t>(wi)].name;
  };
  // The innermost wrapper: calls the op itself. Prefer one whose call has
  // the entry's arity (a platform's other definition of the same wrapper may
  // call another op shape).
  int inner_w = -1;
  for (int pass = 0; pass < 2 && inner_w < 0; ++pass)
    for (int wi = 0; wi < nf && inner_w < 0; ++wi) {
      const auto& f = fws[static_cast<size_t>(wi)];
      if (f.call.name != op || (f.call.wrapper >= 0 && f.call.wrapper < nf)) continue;
      if (pass == 0 && f.call.args.size() != entry->params.size()) continue;
      for (const auto& c : gate.native_calls)
        if (reaches(c, wi, true) || reaches(c, wi, false)) inner_w = wi;
    }
  const model::NativeCall* call = nullptr;
  std::vector<int> chain;  // outermost first; empty: the gate calls the op directly
  if (inner_w >= 0) {
    for (int pass = 0; pass < 2 && !call; ++pass)
      for (const auto& c : gate.native_calls)
        if (!call && reaches(c, inner_w, pass == 0)) {
          call = &c;
          chain = pass == 0 ? chainOf(c.wrapper) : std::vector<int>{inner_w};
        }
  } else {
    for (const auto& c : gate.native_calls)
      if (c.name == op && !call) call = &c;
  }
  const model::Forwarder* wrapper = chain.empty() ? nullptr : &fws[static_cast<size_t>(chain.front())];
  const model::Forwarder* innermost = chain.empty() ? nullptr : &fws[static_cast<size_t>(chain.back())];
  auto W = [&](size_t i) -> const model::Forwarder& { return fws[static_cast<size_t>(chain[i])]; };
  auto paramLoc = [&](const model::Forwarder& f, int p) {
    return p >= 0 && p < static_cast<int>(f.param_locs.size()) ? at(f.param_locs[static_cast<size_t>(p)], f.where) : f.where;
  };
  // From the op's argument k back through each wrapper (innermost first) to
  // the position of the gate's call that feeds it. wps[i]: the parameter of
  // chain[i] that carries the flag into the next layer.
  std::vector<int> wps(chain.size(), -1);
  int position = k;
  const model::CallArg* forced = nullptr;  // a literal a wrapper passes instead of a parameter
  size_t forced_in = 0;
  for (size_t i = chain.size(); i-- > 0;) {
    const model::Forwarder& f = W(i);
    if (i + 1 < chain.size()) {
      const model::Forwarder& next = W(i + 1);
      int nt = static_cast<int>(next.params.size());
      if (static_cast<int>(f.call.args.size()) < nt || positionalCount(f.call) > nt)
        L.problems.push_back({"LG005", "the wrapper " + f.name + " calls " + f.call.callee + " with " + std::to_string(f.call.args.size()) +
                                           " arguments, but the wrapper " + next.name + " takes " + std::to_string(nt),
                              {at(f.call.where, f.where), next.where}});
    }
    int ai = argIndex(f.call, position);
    int wp = ai >= 0 && ai < static_cast<int>(f.arg_param.size()) ? f.arg_param[static_cast<size_t>(ai)] : -1;
    if (wp < 0) {
      const model::CallArg* a = ai >= 0 ? &f.call.args[static_cast<size_t>(ai)] : nullptr;
      if (a && a->value && a->value->sort == model::Sort::Bool && model::isConst(a->value)) {
        forced = a;
        forced_in = i;
        break;
      }
      brk("the wrapper " + f.name + " does not pass one of its parameters as argument " + ordinal(position) + " of " + f.call.name, {f.where});
      return finish({});
    }
    wps[i] = wp;
    position = wp;
  }
  if (!call) {
    brk("the gate class never calls " + op + " (or a wrapper of it) in the given Python files" +
            (gate.forwarders.empty() ? " (give the op wrapper module if it calls one)" : ""));
    return finish({});
  }
  if (!bound) {
    // Python reaches a function of that name, but no registration in the
    // given files says it is this C++ function: the chain breaks here.
    cpp_connected = false;
    L.problems.push_back({"LG006", "flag trace stops at the " + std::string(wrapper ? "wrapper parameter" : "call argument") +
                                       ": no op registration (torch library m.def/m.impl or pybind11 m.def) of " + op +
                                       " in the given files (give the bindings file)",
                          {innermost ? innermost->where : call->where}});
  }

  // Python-side hops for the flag's path: the wrappers' parameters (innermost
  // pushed first: py_side is reversed), then the call argument.
  auto pyHops = [&](const Location& arg_at, int pos, const std::vector<int>& params, size_t from) {
    for (size_t i = chain.size(); i-- > from;)
      if (params[i] >= 0) py_side.push_back({"wrapper parameter", paramLoc(W(i), params[i])});
    py_side.push_back({"call argument " + ordinal(pos), arg_at});
  };

  int takes = wrapper ? static_cast<int>(wrapper->params.size()) : static_cast<int>(entry->params.size());
  int required = wrapper ? takes : requiredParams(entry->params);
  int given = positionalCount(*call);
  if (static_cast<int>(call->args.size()) < required || given > takes)
    L.problems.push_back({"LG005", "the gate calls " + call->callee + " with " + std::to_string(call->args.size()) + " arguments, but " +
                                       (wrapper ? "the wrapper " + wrapper->name : "the C++ function " + entry->name) + " takes " +
                                       std::to_string(takes),
                          {call->where, wrapper ? wrapper->where : entry->where}});
  if (forced) {
    // A wrapper passes a constant where the flag goes: that is what C++ gets,
    // whatever the gate passed. The trace starts at that argument.
    const model::Forwarder& f = W(forced_in);
    pyHops(at(forced->where, f.call.where), forced->position, wps, forced_in + 1);
    L.value_at = forced->where;
    L.value_text = forced->text;
    if (!dropped) L.value = forced->value;
    L.complete = bound && reached_branch;
    return finish({});
  }

  std::string keyword = schema && k < static_cast<int>(schema->schema_params.size()) ? schema->schema_params[static_cast<size_t>(k)].name : entry_param.name;
  if (wrapper) keyword = wps[0] < static_cast<int>(wrapper->params.size()) ? wrapper->params[static_cast<size_t>(wps[0])] : keyword;
  const model::CallArg* arg = argAt(*call, position, keyword);
  if (!arg) {
    L.problems.push_back({"LG005", "the gate's call of " + call->callee + " passes no argument " + ordinal(position) +
                                       " for the flag `" + entry_param.name + "`" +
                                       (entry_param.has_default ? ": the C++ default `" + entry_param.default_text + "` applies" : ""),
                          {call->where}});
    return finish({});
  }
  L.value_at = arg->where;
  L.value_text = arg->text;

  if (!arg->value) {
    // A value the frontend could not type (an opaque call, a parameter of
    // the gate's constructor): no mismatch can be shown; C++ keeps the probe.
    pyHops(at(arg->where, call->where), position, wps, 0);
    L.complete = bound && reached_branch;
    return finish(arg->origin);
  }
  bool is_bool = arg->value->sort == model::Sort::Bool;
  if (!is_bool) {
    // The flag's slot gets something else: follow the flag itself to where
    // it lands, and stop there.
    const model::CallArg* flag = nullptr;
    for (const auto& a : call->args)
      if (&a != arg && mentions(a.value, link) && !flag) flag = &a;
    std::string went;
    std::vector<Hop> fwd;
    // Which call puts the flag elsewhere: the gate's, unless the flag enters
    // a wrapper under the C++ flag parameter's name and that wrapper's call
    // passes it on under another one.
    std::string culprit = "argument " + ordinal(position) + " of " + call->callee + " is `" + arg->text + "`";
    Location culprit_loc = arg->where;
    if (flag && flag->position >= 0) {
      int q = flag->position;
      // Forward through the chain: the flag's parameter in each wrapper.
      std::vector<int> fps(chain.size(), -1);
      int inner = q;
      bool named_right = wrapper && q < static_cast<int>(wrapper->params.size()) &&
                         wrapper->params[static_cast<size_t>(q)] == entry_param.name;
      bool blamed = false;
      for (size_t i = 0; i < chain.size() && inner >= 0; ++i) {
        const model::Forwarder& f = W(i);
        fps[i] = inner;
        int out = -1;
        for (size_t a = 0; a < f.call.args.size() && a < f.arg_param.size(); ++a)
          if (f.arg_param[a] == inner) out = f.call.args[a].position;
        // the position the C++ flag is expected at in this call
        int expect = i + 1 < chain.size() ? wps[i + 1] : k;
        std::string recv = out < 0 ? "" : i + 1 < chain.size() ? (out < static_cast<int>(W(i + 1).params.size()) ? W(i + 1).params[static_cast<size_t>(out)] : "")
                                        : (out < static_cast<int>(entry->params.size()) ? entry->params[static_cast<size_t>(out)].name : "");
        if (named_right && !blamed && out != expect && recv != entry_param.name) {
          int ei = argIndex(f.call, expect);
          const model::CallArg* ea = ei >= 0 ? &f.call.args[static_cast<size_t>(ei)] : nullptr;
          culprit = "argument " + ordinal(expect) + " of " + f.call.callee + " in the wrapper " + f.name + " is `" +
                    (ea ? ea->text : std::string("missing")) + "`";
          culprit_loc = ea ? at(ea->where, f.call.where) : at(f.call.where, f.where);
          blamed = true;
        }
        named_right = named_right && recv == entry_param.name;
        inner = out;
      }
      if (inner >= 0 && inner < static_cast<int>(entry->params.size())) {
        went = "; the NVLink flag `" + flag->text + "` goes into `" + entry->params[static_cast<size_t>(inner)].name + "` (argument " +
               ordinal(inner) + " of " + entry->name + ")";
        bindingHops(inner, fwd);
      }
      cpp_hops = fwd;  // the trace ends at the parameter the flag lands in
      branch_hops.clear();
      pyHops(at(flag->where, call->where), q, fps, 0);
      L.problems.push_back({"LG005", culprit + ", but C++ takes the flag `" + entry_param.name + "` there" + went,
                            {culprit_loc, entry->where}});
      return finish(flag->origin);
    }
    L.problems.push_back({"LG005", culprit + ", but C++ takes the flag `" + entry_param.name + "` there",
                          {culprit_loc, entry->where}});
    pyHops(at(arg->where, call->where), position, wps, 0);
    return finish(arg->origin);
  }
  pyHops(at(arg->where, call->where), position, wps, 0);
  if (!dropped) L.value = arg->value;
  L.complete = bound && reached_branch;
  return finish(arg->origin);
}

std::vector<ValueTrace> traceValues(const model::Gate& gate, const model::Dispatch& d,
                                    const std::map<std::string, std::string>& members) {
  std::vector<ValueTrace> out;
  for (const auto& o : gate.outputs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ValueTrace& t) { return t.var == o.var; });
    if (it != out.end()) continue;  // one trace per variable (the first place it is handed down)
    ValueTrace t;
    t.var = o.var;
    t.field = o.field;
    for (const auto& h : o.origin)
      if (h.where.valid()) t.hops.push_back(h);
    if (o.where.valid()) t.hops.push_back({"handed down as " + o.field, o.where});
    auto maps = [&](const std::string& name) {
      auto m = members.find(name);
      return m != members.end() ? m->second == o.var : name == o.var;
    };
    for (const auto& p : d.params)
      if (maps(p.name) && p.where.valid()) {
        t.hops.push_back({"C++ parameter " + p.name, p.where});
        t.reaches_cpp = true;
        break;
      }
    int conds = 0;
    for (const auto& u : d.member_uses)
      if (u.config == o.var && u.where.valid() && conds < 4) {
        t.hops.push_back({u.where.role == "precondition" ? "precondition" : "branch condition", u.where});
        t.reaches_cpp = true;
        ++conds;
      }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace layergate::link
