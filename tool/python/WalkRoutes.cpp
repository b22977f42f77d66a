// Walker: per-configuration routes. A gate may call its native ops through an
// attribute that holds one of several op libraries, chosen per configuration
// (`self._ops = ops if world_size == 2 or fully_connected else pcie_ops`, the
// second one a JIT extension built at import from a .cu in the tree, in the
// gate's module or in a module or package the gate imports, whose body builds
// it and re-exports its functions). Only the route through the op module of
// the analysed chain reaches the dispatch checked here; the configurations
// routed elsewhere are left out of the check (Gate::scope) and said to be not
// analysed here, with where their route goes (Gate::routes), never compared
// with a dispatch they do not reach.
#include "python/Walker.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace layergate::python::detail {

namespace {

// The leaves of a value chosen per path: (condition, value) for each.
void leaves(const Value& v, const ExprPtr& c, std::vector<std::pair<ExprPtr, Value>>& out) {
  if (v.k == Value::K::Merge && v.a && v.b) {
    leaves(*v.a, model::And(c, v.cond), out);
    leaves(*v.b, model::And(c, model::Not(v.cond)), out);
    return;
  }
  out.push_back({c, v});
}

bool isJitBuild(const std::string& callee) {
  std::string last = callee.substr(callee.rfind('.') == std::string::npos ? 0 : callee.rfind('.') + 1);
  return last == "load" || last == "load_inline";
}

}  // namespace

// A path spelled with literals, os.path.join, os.path.dirname(__file__),
// Path(__file__).parent and `/`, as a path relative to the working directory
// (the module's own directory for __file__); "" when not spelled so.
std::string Walker::staticPath(TSNode n, int depth) {
  namespace fs = std::filesystem;
  if (ts_node_is_null(n) || depth > 8) return "";
  if (is(n, "string")) {
    Value s = parseString(n);
    return s.k == Value::K::Str && s.e->op == model::Op::StrConst ? s.e->s : "";
  }
  if (is(n, "parenthesized_expression")) return staticPath(firstNamed(n), depth + 1);
  if (is(n, "identifier")) {
    if (text(n) == "__file__") return cur_->file->path;
    // a module-level assignment of the name
    for (TSNode k : named(cur_->root)) {
      if (!is(k, "expression_statement")) continue;
      TSNode as = firstNamed(k);
      if (is(as, "assignment") && text(field(as, "left")) == text(n)) return staticPath(field(as, "right"), depth + 1);
    }
    return "";
  }
  auto join = [](const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return std::string();
    return (fs::path(a) / b).lexically_normal().generic_string();
  };
  if (is(n, "binary_operator") && text(ts_node_child(n, 1)) == "/")
    return join(staticPath(field(n, "left"), depth + 1), staticPath(field(n, "right"), depth + 1));
  if (is(n, "attribute") && text(field(n, "attribute")) == "parent") {
    std::string p = staticPath(field(n, "object"), depth + 1);
    return p.empty() ? "" : fs::path(p).parent_path().generic_string();
  }
  if (is(n, "call")) {
    std::string f = text(field(n, "function"));
    auto args = named(field(n, "arguments"));
    if ((f == "os.path.dirname" || f == "dirname") && args.size() == 1) {
      std::string p = staticPath(args[0], depth + 1);
      return p.empty() ? "" : fs::path(p).parent_path().generic_string();
    }
    if ((f == "os.path.abspath" || f == "os.path.realpath" || f == "Path" || f == "pathlib.Path" || f == "str") &&
        args.size() == 1)
      return staticPath(args[0], depth + 1);
    if ((f == "os.path.join" || f == "join") && !args.empty()) {
      std::string p = staticPath(args[0], depth + 1);
      for (std::size_t i = 1; i < args.size() && !p.empty(); ++i) p = join(p, staticPath(args[i], depth + 1));
      return p;
    }
  }
  return "";
}

// The JIT build a module's body makes at import: the call of a module-level
// `NAME = ...load(...)` (torch.utils.cpp_extension.load / load_inline), the
// one assigned to `name` when given, else the first; null when none.
TSNode Walker::jitBuildIn(const Module& m, const std::string& name) {
  for (TSNode k : named(m.root)) {
    if (!is(k, "expression_statement")) continue;
    TSNode as = firstNamed(k);
    if (!is(as, "assignment")) continue;
    TSNode left = field(as, "left"), right = field(as, "right");
    if (!is(left, "identifier") || !is(right, "call") || !isJitBuild(text(field(right, "function")))) continue;
    if (name.empty() || text(left) == name) return right;
  }
  return TSNode{};
}

// The module and JIT build an op library value stands for, when it is one a
// module the gate imports builds at import: the module itself (a package
// whose __init__.py builds the extension and re-exports its functions), or
// the module's attribute that holds the extension (`pcie_ops._C`). Null
// when not.
std::pair<Module*, TSNode> Walker::jitLibrary(const Value& v) {
  std::string dotted;
  if (v.k == Value::K::Object && v.tag == "module") {
    dotted = v.text;
  } else if (v.k == Value::K::Unknown && v.loc.valid()) {
    // `mod._C`: an attribute of an imported module, named in the value's module
    auto home = std::find_if(mods_.begin(), mods_.end(), [&](const auto& m) { return m->file->path == v.loc.file; });
    auto dot = v.text.find('.');
    if (home == mods_.end() || dot == std::string::npos) return {nullptr, TSNode{}};
    auto al = (*home)->aliases.find(v.text.substr(0, dot));
    if (al == (*home)->aliases.end()) return {nullptr, TSNode{}};
    dotted = al->second + v.text.substr(dot);
  } else {
    return {nullptr, TSNode{}};
  }
  auto comps = splitDots(dotted);
  if (Module* m = findModule(comps, cur_)) {
    TSNode c = jitBuildIn(*m, "");
    return {ts_node_is_null(c) ? nullptr : m, c};
  }
  if (comps.size() < 2) return {nullptr, TSNode{}};
  std::string attr = comps.back();
  comps.pop_back();
  if (Module* m = findModule(comps, cur_)) {
    TSNode c = jitBuildIn(*m, attr);
    return {ts_node_is_null(c) ? nullptr : m, c};
  }
  return {nullptr, TSNode{}};
}

// A JIT build's sources, each spelled as a path relative to the module that
// makes the call (its own __file__ and module-level names).
void Walker::describeJit(model::Route& r, Module* m, TSNode call) {
  namespace fs = std::filesystem;
  ModuleScope scope(*this, m);
  r.kind = "JIT extension";
  r.where = loc(call, "route");
  for (TSNode k : named(field(call, "arguments"))) {
    if (!is(k, "keyword_argument") || text(field(k, "name")) != "sources") continue;
    TSNode list = field(k, "value");
    for (TSNode s : is(list, "list") || is(list, "tuple") ? named(list) : std::vector<TSNode>{list}) {
      std::string p = staticPath(s, 0);
      if (p.empty()) {
        r.sources_unresolved.push_back(shortText(s));
        continue;
      }
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) r.sources.push_back(p);
      else r.sources_missing.push_back(p);
    }
  }
}

// Where a route that is not an op module of the given files goes: a JIT
// extension's sources (in the tree or not), else the value's text.
model::Route Walker::describeRoute(const Value& v, const ExprPtr& cond) {
  model::Route r;
  r.condition = cond;
  r.module = v.k == Value::K::Object ? v.text : v.k == Value::K::None ? "None" : v.text;
  // An imported module (or its attribute) that builds the extension at import.
  if (auto [m, call] = jitLibrary(v); m) {
    describeJit(r, m, call);
    return r;
  }
  if (v.k != Value::K::Unknown || !v.loc.valid()) return r;
  // The call that built it, found again at its location in its module.
  for (const auto& m : mods_) {
    if (m->file->path != v.loc.file) continue;
    TSPoint at{static_cast<uint32_t>(v.loc.line - 1), static_cast<uint32_t>(v.loc.col - 1)};
    TSNode n = ts_node_named_descendant_for_point_range(m->root, at, at);
    while (!ts_node_is_null(n) && !is(n, "call")) n = ts_node_parent(n);
    if (ts_node_is_null(n) || !isJitBuild(text(field(n, "function")))) return r;
    describeJit(r, m.get(), n);
    return r;
  }
  return r;
}

// The op library a native call goes through, when the attribute it is
// called on holds one of several, per configuration.
void Walker::routeNative(TSNode fnnode, const std::string& op, const ExprPtr& path, State& st, Frame& fr, Ctx& cx) {
  if (!is(fnnode, "attribute")) return;
  TSNode obj = field(fnnode, "object");
  if (!is(obj, "attribute")) return;  // self._ops.op(...): a per-instance choice
  State sc = st;
  Ctx cc = cx;
  ++tentative_;
  Value v = eval(obj, sc, fr, cc);
  --tentative_;
  if (v.k != Value::K::Merge) return;
  std::vector<std::pair<ExprPtr, Value>> ls;
  leaves(v, model::True(), ls);
  // The analysed route: an op module of the given (or followed) files.
  auto text = [](const Value& x) { return x.k == Value::K::None ? std::string("None") : x.text; };
  auto given = [&](const Value& x) {
    if (!limits_.route.empty()) return text(x) == limits_.route;  // analysing that route
    // a module of the tree, unless its body builds a JIT extension (then its
    // functions reach that extension's dispatch, not the analysed one)
    return x.k == Value::K::Object && x.tag == "module" && findModule(splitDots(x.text), cur_) != nullptr &&
           jitLibrary(x).first == nullptr;
  };
  ExprPtr here = model::False();
  std::string hereModule;
  bool other = false;
  for (const auto& [c, x] : ls) {
    if (given(x)) {
      here = model::Or(here, c);
      if (hereModule.empty()) hereModule = text(x);
    } else {
      other = true;
    }
  }
  if (hereModule.empty() || !other) return;
  gate_.scope = model::And(gate_.scope, model::Or(model::Not(path), here));
  std::string receiver = shortText(obj);
  for (const auto& [c, x] : ls) {
    if (given(x)) continue;
    ExprPtr away = model::And(path, c);
    auto same = std::find_if(gate_.routes.begin(), gate_.routes.end(), [&](const model::Route& r) {
      return r.receiver == receiver && r.module == text(x);
    });
    if (same != gate_.routes.end()) {
      same->condition = model::Or(same->condition, away);
      if (std::find(same->ops.begin(), same->ops.end(), op) == same->ops.end()) same->ops.push_back(op);
      continue;
    }
    model::Route r = describeRoute(x, away);
    r.receiver = receiver;
    r.analysed_module = hereModule;
    r.ops.push_back(op);
    if (!r.where.valid()) r.where = loc(obj, "route");
    gate_.routes.push_back(std::move(r));
  }
}

}  // namespace layergate::python::detail
