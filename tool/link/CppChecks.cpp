#include "link/CppChecks.h"

#include <algorithm>
#include <map>
#include <set>

namespace layergate::link {
namespace {

// The C++ function an op call reaches: the function its registration binds
// (m.impl / a pybind def / a schema's impl), else a function of the op's name.
std::string entryName(const model::NativeCall& c, const model::Dispatch& d) {
  for (const auto& b : d.bindings)
    if (b.op == c.name && !b.function.empty()) return b.function;
  return c.name;
}

const model::CppEntry* entryOf(const model::NativeCall& c, const model::Dispatch& d) {
  std::string fn = entryName(c, d);
  for (const auto& e : d.entries) {
    if (e.name == fn && e.returns_true) return &e;
  }
  return nullptr;
}

const model::CallArg* argFor(const model::NativeCall& c, int position, const std::string& name) {
  for (const auto& a : c.args)
    if (a.position == position) return &a;
  for (const auto& a : c.args)
    if (a.keyword == name) return &a;
  return nullptr;
}

}  // namespace

std::vector<std::string> uninterpretedChecks(const model::Gate& gate, const model::Dispatch& dispatch) {
  std::vector<std::string> out;
  std::vector<const model::NativeCall*> calls;
  for (const auto& c : gate.native_calls) calls.push_back(&c);
  for (const auto& c : gate.result_calls) calls.push_back(&c);
  // A check's result decides admission: a Boolean term of the gate's predicate.
  std::set<std::string> tested;
  for (const auto& v : model::varsOf(gate.predicate()))
    if (v.sort == model::Sort::Bool) tested.insert(v.name);
  for (const model::NativeCall* c : calls) {
    // Through an op module (`ops.should_custom_ar`, `torch.ops.ns.op`): a
    // bare name is a Python function of a module not given, not C++.
    if (c->result.empty() || c->callee.find('.') == std::string::npos || entryOf(*c, dispatch)) continue;
    bool used = tested.count(c->result) > 0;
    std::string fn = entryName(*c, dispatch);
    if (used && !fn.empty() && std::find(out.begin(), out.end(), fn) == out.end()) out.push_back(fn);
  }
  return out;
}

// The probe a C++ call asks, by the callee's name (leading underscores and
// a negation aside): "!_is_weak_contiguous(inp)" -> is_weak_contiguous.
model::ExprPtr probeOf(const std::string& text, const std::map<std::string, std::string>& probes,
                       const target::Variables& variables) {
  std::size_t b = text.find_first_not_of("! \t");
  std::size_t open = text.find('(');
  if (b == std::string::npos || open == std::string::npos || open <= b) return nullptr;
  std::string callee = text.substr(b, open - b);
  std::size_t dot = callee.find_last_of(".:>");
  if (dot != std::string::npos) callee = callee.substr(dot + 1);
  std::string bare = callee.substr(std::min(callee.find_first_not_of('_'), callee.size()));
  for (const std::string& n : {callee, bare}) {
    auto it = probes.find(n);
    if (it == probes.end()) continue;
    // Boolean probes only (the machine facts a check asks: contiguity, peer
    // access, the link flag); a declared one as declared.
    model::ExprPtr v = target::declaredVar(variables, it->second);
    if (!v) v = model::Var(it->second, model::Sort::Bool, model::VarKind::Probe);
    if (v->sort != model::Sort::Bool) return nullptr;
    return text.find('!') < b ? model::Not(v) : v;
  }
  return nullptr;
}

std::vector<CppCheck> interpretCppChecks(model::Gate& gate, const model::Dispatch& dispatch,
                                         const std::map<std::string, std::string>& probes,
                                         const target::Variables& variables) {
  std::vector<CppCheck> out;
  std::map<std::string, model::Replacement> by;
  std::set<std::string> conflicting;
  std::vector<const model::NativeCall*> calls;
  for (const auto& c : gate.native_calls) calls.push_back(&c);
  for (const auto& c : gate.result_calls) calls.push_back(&c);
  for (const model::NativeCall* cp : calls) {
    const model::NativeCall& c = *cp;
    if (c.result.empty() || conflicting.count(c.result)) continue;
    const model::CppEntry* e = entryOf(c, dispatch);
    if (!e) continue;
    // Only where the gate uses the result: an uninterpreted Boolean term of that name.
    auto used = std::find_if(gate.opaques.begin(), gate.opaques.end(),
                             [&](const model::OpaqueSymbol& o) { return o.name == c.result; });
    if (used == gate.opaques.end()) continue;
    // Bind each bool / integer parameter to the value Python passes; one it
    // passes nothing known for stays uninterpreted, named by the call.
    std::map<std::string, model::Replacement> params;
    CppCheck chk;
    chk.call = c.where;
    chk.function = e->name;
    chk.where = e->where;
    for (const auto& v : model::varsOf(e->returns_true)) {
      if (v.name.rfind("param:", 0) != 0) continue;
      std::string name = v.name.substr(6);
      int i = -1;
      for (std::size_t k = 0; k < e->params.size(); ++k)
        if (e->params[k].name == name) i = static_cast<int>(k);
      const model::CallArg* a = i >= 0 ? argFor(c, i, name) : nullptr;
      model::ExprPtr x = a && a->value && a->value->sort == v.sort ? a->value : nullptr;
      if (!x) {
        x = model::Var(c.result + " (argument " + name + ")", v.sort, model::VarKind::Opaque);
        chk.unbound.push_back(name);
      }
      params[v.name] = {v.sort, x};
    }
    // The check's calls of the target's probes are those probes.
    for (const auto& v : model::varsOf(e->returns_true))
      if (v.kind == model::VarKind::Opaque && v.sort == model::Sort::Bool)
        if (model::ExprPtr p = probeOf(v.name, probes, variables)) params[v.name] = {model::Sort::Bool, p};
    model::ExprPtr pred = model::substitute(e->returns_true, params);
    auto seen = by.find(c.result);
    if (seen != by.end()) {
      // The same call text reached with other arguments' values: which one a
      // use stands for is not known, so it stays uninterpreted.
      if (seen->second.value->str() != pred->str()) {
        conflicting.insert(c.result);
        by.erase(seen);
        out.erase(std::remove_if(out.begin(), out.end(), [&](const CppCheck& k) { return k.result == c.result; }),
                  out.end());
      }
      continue;
    }
    chk.result = c.result;
    chk.entry = e;
    by[c.result] = {model::Sort::Bool, pred};
    out.push_back(std::move(chk));
  }
  for (const auto& chk : out) {
    // The terms the check leaves uninterpreted replace the call's result.
    for (const auto& v : model::varsOf(by.at(chk.result).value))
      if (v.kind == model::VarKind::Opaque && v.name.rfind(chk.result, 0) == 0) {
        model::OpaqueSymbol o;
        o.name = o.text = v.name;
        o.where = chk.call;
        gate.opaques.push_back(o);
      }
    for (const auto& o : chk.entry->opaques)
      if (!probeOf(o.name, probes, variables)) gate.opaques.push_back(o);
    // Environment variables the check reads are the gate's.
    for (const auto& v : model::varsOf(by.at(chk.result).value)) {
      std::string env = model::envNameOf(v.name);
      if (!env.empty() && std::find(gate.env_reads.begin(), gate.env_reads.end(), env) == gate.env_reads.end()) {
        gate.env_reads.push_back(env);
        gate.env_read_locs.push_back(chk.where);
      }
    }
    gate.opaques.erase(std::remove_if(gate.opaques.begin(), gate.opaques.end(),
                                      [&](const model::OpaqueSymbol& o) { return o.name == chk.result; }),
                       gate.opaques.end());
  }
  if (by.empty()) return out;
  auto sub = [&](model::ExprPtr& x) {
    if (x) x = model::substitute(x, by);
  };
  sub(gate.admit);
  sub(gate.per_call);
  sub(gate.scope);
  sub(gate.bound);
  sub(gate.assumed);
  for (auto& a : gate.admits) sub(a.condition);
  for (auto& r : gate.rejects) sub(r.condition);
  for (auto& u : gate.unchecked) sub(u.condition);
  for (auto& o : gate.outputs) sub(o.value);
  for (const auto& chk : out)
    gate.notes.push_back("the gate's check " + chk.function + " is C++ (" + chk.where.file + ":" +
                         std::to_string(chk.where.line) + "), read with the arguments the call at " + chk.call.file +
                         ":" + std::to_string(chk.call.line) + " passes");
  return out;
}

}  // namespace layergate::link
