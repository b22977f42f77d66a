#include "link/WorldSize.h"

#include "link/Link.h"

#include <algorithm>
#include <vector>

namespace layergate::link {
namespace {

// The gate's argument that becomes parameter k of the op `op`: at the call of
// the op itself, or at the outermost call of a chain of wrappers, each
// passing one of its parameters on (Forwarder::arg_param).
const model::CallArg* argumentFor(const model::Gate& gate, const std::string& op, int k) {
  const auto& fws = gate.forwarders;
  const int nf = static_cast<int>(fws.size());
  for (const auto& c : gate.native_calls) {
    if (c.wrapper < 0 || c.wrapper >= nf) {
      if (c.name == op) return argAt(c, k, "");
      continue;
    }
    std::vector<int> chain;  // outermost first
    for (int w = c.wrapper; w >= 0 && w < nf && std::find(chain.begin(), chain.end(), w) == chain.end();
         w = fws[static_cast<size_t>(w)].call.wrapper)
      chain.push_back(w);
    if (fws[static_cast<size_t>(chain.back())].call.name != op) continue;
    int position = k;
    std::string keyword;
    for (size_t i = chain.size(); i-- > 0 && position >= 0;) {
      const model::Forwarder& f = fws[static_cast<size_t>(chain[i])];
      int ai = -1;
      for (size_t a = 0; a < f.call.args.size(); ++a)
        if (f.call.args[a].position == position) ai = static_cast<int>(a);
      position = ai >= 0 && ai < static_cast<int>(f.arg_param.size()) ? f.arg_param[static_cast<size_t>(ai)] : -1;
      if (position >= 0 && position < static_cast<int>(f.params.size())) keyword = f.params[static_cast<size_t>(position)];
    }
    if (position >= 0) return argAt(c, position, keyword);
  }
  return nullptr;
}

bool isGroupSize(const model::ExprPtr& e, const std::string& ranks) {
  return e && e->op == model::Op::Var && e->s == ranks && e->var_kind == model::VarKind::Config;
}

}  // namespace

WorldSizeLink traceWorldSize(const model::Gate& gate, const model::Dispatch& d,
                             const std::map<std::string, std::string>& members, const std::string& ranks) {
  WorldSizeLink out;
  if (ranks.empty()) return out;
  // The constructor parameter that sets the member standing for the world size.
  int j = -1;
  for (const auto& c : d.ctors)
    for (const auto& i : c.inits) {
      auto m = members.find(i.member);
      if (j < 0 && i.param >= 0 && m != members.end() && m->second == ranks) j = i.param;
    }
  if (j < 0) return out;
  // The entry that constructs the class (one an op registration names first)
  // and which of its parameters it passes there, or whose length.
  auto bound = [&](const std::string& fn) {
    return std::any_of(d.bindings.begin(), d.bindings.end(),
                       [&](const model::OpBinding& b) { return b.function == fn || (b.function.empty() && b.op == fn); });
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& e : d.entries)
      for (const auto& c : e.constructs) {
        if (out.value || (pass == 0 && !bound(e.name)) || static_cast<int>(c.arg_texts.size()) <= j) continue;
        int param = c.arg_param.at(static_cast<size_t>(j));
        int size_of = static_cast<size_t>(j) < c.arg_size_of.size() ? c.arg_size_of[static_cast<size_t>(j)] : -1;
        int k = size_of >= 0 ? size_of : param;
        if (k < 0) continue;
        std::string op = e.name;
        for (const auto& b : d.bindings)
          if (b.function == e.name) op = b.op;
        const model::CallArg* a = argumentFor(gate, op, k);
        if (!a) continue;
        model::ExprPtr v = size_of >= 0 ? a->length : (a->value && a->value->sort == model::Sort::Int ? a->value : nullptr);
        if (!v) continue;
        out.value = v;
        out.at = a->where;
        out.text = a->text;
        out.length = size_of >= 0;
      }
  if (isGroupSize(out.value, ranks)) out.value = nullptr;
  return out;
}

}  // namespace layergate::link
