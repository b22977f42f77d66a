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

// The Python call that reaches C++ op `op`: directly (ops.init_custom_ar) or
// through a wrapper in the given files. Returns the call, the wrapper (or
// null) and the position in the gate's call that feeds C++ position `k`.
struct PyCallSite {
  const model::NativeCall* call = nullptr;
  const model::Forwarder* wrapper = nullptr;
  int position = -1;        // in call->args' positional numbering
  std::string keyword;      // when the wrapper's parameter is passed by keyword
  int expected_args = -1;   // how many arguments the callee takes
};

const model::CallArg* argAt(const model::NativeCall& c, int position, const std::string& keyword) {
  for (const auto& a : c.args)
    if (a.position == position && position >= 0) return &a;
  for (const auto& a : c.args)
    if (!keyword.empty() && a.keyword == keyword) return &a;
  return nullptr;
}

int positionalCount(const model::NativeCall& c) {
  int n = 0;
  for (const auto& a : c.args)
    if (a.position >= 0) ++n;
  return n;
}

}  // namespace

FlagLink traceFlag(const model::Gate& gate, const model::Dispatch& d) {
  FlagLink L;
  // 1. The member the dispatch branches on.
  std::vector<Hop> branch_hops;
  for (const auto& u : d.member_uses) {
    if (u.config != model::kFullNvlink) continue;
    if (L.member.empty()) L.member = u.member;
    if (u.member == L.member) branch_hops.push_back({"branch condition", u.where});
  }
  if (L.member.empty()) return L;  // the dispatch does not branch on the flag

  std::vector<Hop> cpp_hops;  // built from the C++ end backwards, reversed at the end
  auto finish = [&](std::vector<Hop> py_hops) {
    L.hops = std::move(py_hops);
    std::reverse(cpp_hops.begin(), cpp_hops.end());
    L.hops.insert(L.hops.end(), cpp_hops.begin(), cpp_hops.end());
    L.hops.insert(L.hops.end(), branch_hops.begin(), branch_hops.end());
    return L;
  };
  auto lastHop = [&]() -> std::string {
    if (!cpp_hops.empty()) return cpp_hops.back().hop + " at " + cpp_hops.back().where.file + ":" + std::to_string(cpp_hops.back().where.line);
    return "branch condition on " + L.member;
  };
  auto brk = [&](const std::string& why, std::vector<Location> locs = {}) {
    L.problems.push_back({"LG006", "flag trace stops after the " + lastHop() + ": " + why, std::move(locs)});
  };

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
    return finish({});
  }
  if (static_cast<int>(cons->arg_texts.size()) <= j) {
    std::string def = ctor_param.has_default ? "the constructor default `" + ctor_param.default_text + "` applies" : "it is left unset";
    L.problems.push_back({"LG005", entry->name + " constructs " + d.class_name + " with " + std::to_string(cons->arg_texts.size()) +
                                       " arguments, so parameter " + ordinal(j) + " `" + ctor_param.name + "` is not passed and " + def +
                                       ": the Python flag never reaches " + L.member,
                          {cons->where, ctor->where}});
    cpp_hops.push_back({"constructor argument", cons->where});
    return finish({});
  }
  cpp_hops.push_back({"constructor argument", cons->where});
  const int k = cons->arg_param.at(static_cast<size_t>(j));
  if (k < 0) {
    const std::string& t = cons->arg_texts.at(static_cast<size_t>(j));
    if (t == "true" || t == "false") {
      // Forced in C++ itself: the value is a constant whatever Python probed.
      L.value = model::BoolC(t == "true");
      L.value_at = cons->where;
      L.value_text = t;
      L.complete = true;
      return finish({});
    }
    brk(entry->name + " passes `" + t + "` as " + d.class_name + "'s `" + ctor_param.name + "`, not one of its own parameters", {cons->where});
    return finish({});
  }
  const model::CppParam& entry_param = entry->params.at(static_cast<size_t>(k));
  cpp_hops.push_back({"C++ parameter", entry->where});

  // 4. The op bound to the entry function (schema and impl / pybind11).
  std::string op;
  const model::OpBinding* schema = nullptr;
  const model::OpBinding* impl = nullptr;
  for (const auto& b : d.bindings)
    if (!b.function.empty() && b.function == entry->name && !impl) impl = &b, op = b.op;
  for (const auto& b : d.bindings)
    if (b.kind == "torch-schema" && b.op == (op.empty() ? entry->name : op) && !schema) schema = &b;
  if (impl) cpp_hops.push_back({"binding", impl->where});
  if (schema) {
    cpp_hops.push_back({"schema argument", schema->where});
    if (op.empty()) op = schema->op;
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
  bool bound = impl || schema;
  if (!bound) {
    brk("no op registration (torch library m.def/m.impl or pybind11 m.def) of " + entry->name +
        " in the given files (give the bindings file); matching the Python call by the name " + entry->name);
    op = entry->name;
  }

  // 5. The Python call of that op, directly or through a wrapper.
  PyCallSite site;
  for (const auto& c : gate.native_calls)
    if (c.name == op && !site.call) site = {&c, nullptr, k, schema ? schema->schema_params[static_cast<size_t>(k)].name : "", static_cast<int>(entry->params.size())};
  if (!site.call) {
    for (const auto& f : gate.forwarders) {
      if (f.call.name != op || site.call) continue;
      // Which wrapper parameter feeds inner argument k?
      int p = -1;
      for (size_t i = 0; i < f.call.args.size(); ++i)
        if (f.call.args[i].position == k && i < f.arg_param.size()) p = f.arg_param[i];
      for (const auto& c : gate.native_calls)
        if (c.name == f.name && !site.call) {
          site = {&c, &f, p, p >= 0 && p < static_cast<int>(f.params.size()) ? f.params[static_cast<size_t>(p)] : "",
                  static_cast<int>(f.params.size())};
        }
      if (site.call && p < 0) {
        brk("the wrapper " + f.name + " does not pass one of its parameters as argument " + ordinal(k) + " of " + op, {f.where});
        return finish({});
      }
    }
  }
  if (!site.call) {
    brk("the gate class never calls " + op + " (or a wrapper of it) in the given Python files" +
            (gate.forwarders.empty() ? " (give the op wrapper module if it calls one)" : ""));
    return finish({});
  }
  if (site.wrapper) cpp_hops.push_back({"wrapper parameter", site.wrapper->where});

  const model::NativeCall& call = *site.call;
  const model::CallArg* arg = argAt(call, site.position, site.keyword);
  int given = positionalCount(call);
  int takes = site.expected_args;
  int required = site.wrapper ? takes : requiredParams(entry->params);
  if (static_cast<int>(call.args.size()) < required || given > takes) {
    L.problems.push_back({"LG005", "the gate calls " + call.callee + " with " + std::to_string(call.args.size()) + " arguments, but " +
                                       (site.wrapper ? "the wrapper " + site.wrapper->name : "the C++ function " + entry->name) +
                                       " takes " + std::to_string(takes),
                          {call.where, site.wrapper ? site.wrapper->where : entry->where}});
  }
  if (!arg) {
    L.problems.push_back({"LG005", "the gate's call of " + call.callee + " passes no argument " + ordinal(site.position) +
                                       " for the flag `" + entry_param.name + "`" +
                                       (entry_param.has_default ? ": the C++ default `" + entry_param.default_text + "` applies" : ""),
                          {call.where}});
    return finish({});
  }
  cpp_hops.push_back({"call argument " + ordinal(site.position), arg->where.valid() ? arg->where : call.where});
  L.value_at = arg->where;
  L.value_text = arg->text;

  bool is_bool = arg->value && arg->value->sort == model::Sort::Bool;
  if (!is_bool) {
    // The flag's slot gets something else; where did the flag go?
    std::string went;
    for (const auto& a : call.args)
      if (&a != arg && mentions(a.value, model::kFullNvlink))
        went = "; the NVLink flag `" + a.text + "` goes into argument " + ordinal(a.position) +
               (a.position >= 0 && a.position < static_cast<int>(entry->params.size()) && !site.wrapper
                    ? " (`" + entry->params[static_cast<size_t>(a.position)].name + "`)"
                    : "");
    L.problems.push_back({"LG005", "argument " + ordinal(site.position) + " of " + call.callee + " is `" + arg->text +
                                       "`, but C++ takes the flag `" + entry_param.name + "` there" + went,
                          {arg->where, entry->where}});
    return finish(arg->origin);
  }
  L.value = arg->value;
  L.complete = bound;
  return finish(arg->origin);
}

}  // namespace layergate::link
