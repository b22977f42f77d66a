#include "gates/Sites.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <set>

#include "python/Syntax.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace layergate::gates {
namespace {

using python::detail::field;
using python::detail::is;
using python::detail::named;

std::string textOf(TSNode n, const std::string& src) {
  if (ts_node_is_null(n)) return "";
  uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return e <= src.size() && b <= e ? src.substr(b, e - b) : "";
}

// Whitespace collapsed and comments dropped (a test written over several
// lines may carry them), cut at max characters.
std::string collapsed(const std::string& s, std::size_t max = 160) {
  std::string out;
  bool space = false;
  char quote = 0;
  bool comment = false;
  for (char c : s) {
    if (comment) {
      if (c == '\n') comment = false;
      continue;
    }
    if (quote) quote = c == quote ? 0 : quote;
    else if (c == '"' || c == '\'') quote = c;
    else if (c == '#') { comment = true; continue; }
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') { space = !out.empty(); continue; }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<std::string> splitOn(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) { out.push_back(cur); cur.clear(); }
    else cur += c;
  }
  out.push_back(cur);
  return out;
}

// `torch.ops.ns.op[.overload]` as written (whitespace removed), or nothing.
bool opOf(const std::string& dotted, OpName* op) {
  auto parts = splitOn(dotted, '.');
  if (parts.size() < 4 || parts[0] != "torch" || parts[1] != "ops") return false;
  op->ns = parts[2];
  op->op = parts[3];
  op->overload = parts.size() >= 5 ? parts[4] : "";
  return parts.size() <= 5 && isIdentifier(op->ns) && isIdentifier(op->op);
}

// What an imported local name stands for: module `module` (dotted, absolute
// or with leading dots), or its attribute `name`.
struct Import {
  std::string module;
  std::string name;  // "" when the local name is the module itself
};

struct Call {
  std::string callee;  // whitespace removed
  int line = 0, column = 0;
  std::string function;
  std::vector<Condition> conditions;
  std::vector<std::string> arguments;
};

struct ModuleFacts {
  std::string file;
  std::set<std::string> python_ops;  // ops this module defines in Python
  std::map<std::string, Import> imports;
  std::set<std::string> functions;  // module-level function names
  std::map<std::string, int> statements;  // module-level function -> statements in its body (docstring not counted)
  std::map<std::string, std::vector<std::string>> params;  // module-level function -> its parameters' names
  std::vector<Call> calls;          // the calls that may reach a native op
};

// Conditions on the path from the function's entry to node.
std::vector<Condition> conditionsOf(TSNode node, const std::string& src, std::string* function) {
  std::vector<Condition> out;
  auto add = [&](const char* kind, TSNode test) {
    out.push_back({kind, collapsed(textOf(test, src)), static_cast<int>(ts_node_start_point(test).row) + 1});
  };
  auto earlyExit = [](TSNode stmt) {
    if (!is(stmt, "if_statement") || !ts_node_is_null(field(stmt, "alternative"))) return false;
    auto body = named(field(stmt, "consequence"));
    if (body.empty()) return false;
    TSNode last = body.back();
    return is(last, "return_statement") || is(last, "raise_statement");
  };
  std::vector<std::string> scopes;
  bool in_function = false;
  TSNode cur = node;
  for (TSNode parent = ts_node_parent(cur); !ts_node_is_null(parent); cur = parent, parent = ts_node_parent(cur)) {
    if (is(parent, "function_definition") || is(parent, "class_definition")) {
      scopes.push_back(textOf(field(parent, "name"), src));
      if (is(parent, "function_definition")) in_function = true;
      continue;
    }
    if (is(parent, "lambda")) continue;
    if (in_function) continue;  // conditions outside the function (a class body's, a module's) are not the call's
    if (is(parent, "if_statement")) {
      if (ts_node_eq(cur, field(parent, "consequence"))) add("if", field(parent, "condition"));
    } else if (is(parent, "elif_clause") || is(parent, "else_clause")) {
      bool elif = is(parent, "elif_clause");
      TSNode stmt = ts_node_parent(parent);
      if (elif && !ts_node_eq(cur, field(parent, "consequence"))) continue;
      if (!elif && !ts_node_eq(cur, field(parent, "body"))) continue;
      if (elif) add("if", field(parent, "condition"));
      add("else", field(stmt, "condition"));
      for (TSNode alt : named(stmt)) {
        if (ts_node_eq(alt, parent)) break;
        if (is(alt, "elif_clause")) add("else", field(alt, "condition"));
      }
    } else if (is(parent, "conditional_expression")) {
      auto k = named(parent);
      if (k.size() == 3 && ts_node_eq(cur, k[0])) add("if", k[1]);
      else if (k.size() == 3 && ts_node_eq(cur, k[2])) add("else", k[1]);
    } else if (is(parent, "boolean_operator")) {
      if (ts_node_eq(cur, field(parent, "right"))) {
        std::string op = textOf(field(parent, "operator"), src);
        add(op == "or" ? "else" : "expr", field(parent, "left"));
      }
    } else if (is(parent, "while_statement")) {
      if (ts_node_eq(cur, field(parent, "body"))) add("loop", field(parent, "condition"));
    } else if (is(parent, "case_clause")) {
      auto k = named(parent);
      if (!k.empty()) add("case", k[0]);
    }
    if (is(parent, "block") || is(parent, "module")) {
      // The statements before cur in this block: an `if` that returns or
      // raises, an assert.
      for (TSNode s : named(parent)) {
        if (ts_node_eq(s, cur) || ts_node_start_byte(s) >= ts_node_start_byte(cur)) break;
        if (earlyExit(s)) add("exit", field(s, "condition"));
        else if (is(s, "assert_statement")) {
          auto k = named(s);
          if (!k.empty()) add("assert", k[0]);
        }
      }
    }
  }
  // The walk went inside out: in the order of the source reads better.
  std::stable_sort(out.begin(), out.end(), [](const Condition& a, const Condition& b) { return a.line < b.line; });
  std::reverse(scopes.begin(), scopes.end());
  std::string f;
  for (const auto& s : scopes) f += (f.empty() ? "" : ".") + s;
  *function = f.empty() ? "<module>" : f;
  return out;
}

// An op defined in Python by this call: `direct_register_custom_op(op_name=
// "x", ...)` or its first string; `custom_op("ns::x")`, `define("x(...)")`
// or `define("ns::x(...)")`: the op's name.
void pythonOpDefinition(TSNode call, const std::string& last, const std::string& src, std::set<std::string>& ops) {
  bool helper = last.find("register_custom_op") != std::string::npos;
  if (!helper && last != "custom_op" && last != "define" && last != "triton_op") return;
  std::string name;
  for (TSNode a : named(field(call, "arguments"))) {
    if (is(a, "keyword_argument")) {
      if (textOf(field(a, "name"), src) == "op_name" || textOf(field(a, "name"), src) == "name") a = field(a, "value");
      else continue;
    }
    if (!is(a, "string")) break;
    std::string t = textOf(a, src);
    std::size_t q = t.find_first_of("'\"");
    if (q == std::string::npos) break;
    char quote = t[q];
    auto e = t.find(quote, q + 1);
    name = t.substr(q + 1, e == std::string::npos ? std::string::npos : e - q - 1);
    break;
  }
  if (auto c = name.rfind("::"); c != std::string::npos) name = name.substr(c + 2);
  else if (!helper && last != "define") return;  // custom_op's name is "ns::name"
  name = name.substr(0, name.find('('));
  name = name.substr(0, name.find('.'));
  if (isIdentifier(name)) ops.insert(name);
}

void collectImport(TSNode stmt, const std::string& src, ModuleFacts& m) {
  if (is(stmt, "import_statement")) {
    for (TSNode n : named(stmt)) {
      if (is(n, "dotted_name")) {
        std::string d = textOf(n, src);
        m.imports[splitOn(d, '.')[0]] = {splitOn(d, '.')[0], ""};
        m.imports[d] = {d, ""};  // `import a.b.c` binds `a`, and `a.b.c.f(...)` spells the module out
      } else if (is(n, "aliased_import")) {
        m.imports[textOf(field(n, "alias"), src)] = {textOf(field(n, "name"), src), ""};
      }
    }
    return;
  }
  if (!is(stmt, "import_from_statement")) return;
  std::string from = textOf(field(stmt, "module_name"), src);
  TSNode mod = field(stmt, "module_name");
  for (TSNode n : named(stmt)) {
    if (ts_node_eq(n, mod)) continue;
    if (is(n, "dotted_name")) {
      std::string name = textOf(n, src);
      m.imports[name] = {from, name};
    } else if (is(n, "aliased_import")) {
      m.imports[textOf(field(n, "alias"), src)] = {from, textOf(field(n, "name"), src)};
    }
  }
}

void walkModule(TSNode root, const std::string& src, ModuleFacts& m) {
  // Module-level functions and imports, the imports inside `if`/`try` at module level too.
  std::function<void(TSNode, int)> top = [&](TSNode n, int depth) {
    for (TSNode s : named(n)) {
      if (is(s, "import_statement") || is(s, "import_from_statement")) collectImport(s, src, m);
      else if ((is(s, "function_definition") || is(s, "decorated_definition")) && depth == 0) {
        TSNode d = is(s, "decorated_definition") ? field(s, "definition") : s;
        if (!is(d, "function_definition")) continue;
        std::string name = textOf(field(d, "name"), src);
        m.functions.insert(name);
        int n = 0;
        for (TSNode st : named(field(d, "body"))) {
          bool doc = is(st, "expression_statement") && named(st).size() == 1 && is(named(st)[0], "string");
          if (!doc) ++n;
        }
        m.statements[name] = n;
        auto& ps = m.params[name];
        for (TSNode prm : named(field(d, "parameters"))) {
          TSNode id = is(prm, "identifier") ? prm : field(prm, "name");
          if (is(prm, "typed_parameter")) id = python::detail::firstNamed(prm);
          ps.push_back(is(id, "identifier") ? textOf(id, src) : "");
        }
      } else if (is(s, "if_statement") || is(s, "try_statement") || is(s, "block") || is(s, "else_clause") ||
                 is(s, "elif_clause") || is(s, "except_clause") || is(s, "finally_clause")) {
        top(s, depth);
      }
    }
  };
  top(root, 0);
  // Imports inside functions (a lazy `from vllm import _custom_ops as ops`)
  // bind for the whole module here: a name means one module in practice.
  std::vector<TSNode> stack{root};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (is(n, "import_statement") || is(n, "import_from_statement")) {
      ModuleFacts scratch;
      collectImport(n, src, scratch);
      for (auto& [k, v] : scratch.imports) m.imports.emplace(k, v);
      continue;
    }
    if (is(n, "call")) {
      std::string callee;
      for (char c : textOf(field(n, "function"), src))
        if (!std::isspace(static_cast<unsigned char>(c)) && c != '\\') callee += c;
      auto parts = splitOn(callee, '.');
      pythonOpDefinition(n, parts.back(), src, m.python_ops);
      bool candidate = callee.rfind("torch.ops.", 0) == 0 ||
                       (isIdentifier(parts[0]) && (m.imports.count(parts[0]) || m.functions.count(parts[0])));
      if (candidate && isIdentifier(parts.back())) {
        Call c;
        c.callee = callee;
        TSPoint p = ts_node_start_point(n);
        c.line = static_cast<int>(p.row) + 1;
        c.column = static_cast<int>(p.column) + 1;
        c.conditions = conditionsOf(n, src, &c.function);
        for (TSNode a : named(field(n, "arguments"))) c.arguments.push_back(collapsed(textOf(a, src), 80));
        m.calls.push_back(std::move(c));
      }
    }
    auto kids = named(n);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
}

// Dotted names a module answers to: every suffix of its path whose
// components are identifiers (`sgl-kernel/python/sgl_kernel/elementwise.py`
// is `elementwise`, `sgl_kernel.elementwise`, `python.sgl_kernel.elementwise`).
std::vector<std::string> moduleKeys(const std::string& file) {
  auto parts = splitOn(file, '/');
  std::string& last = parts.back();
  if (last.size() > 3 && last.compare(last.size() - 3, 3, ".py") == 0) last.resize(last.size() - 3);
  if (last == "__init__") parts.pop_back();
  std::vector<std::string> out;
  std::string key;
  for (std::size_t i = parts.size(); i-- > 0;) {
    if (!isIdentifier(parts[i])) break;
    key = key.empty() ? parts[i] : parts[i] + "." + key;
    out.push_back(key);
  }
  return out;
}

std::string dirOf(const std::string& f) {
  auto at = f.rfind('/');
  return at == std::string::npos ? "" : f.substr(0, at);
}

std::size_t sharedPrefix(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

struct Wrapper {
  OpName op;
  std::vector<std::string> via;  // this wrapper, then the ones it calls: "file:function"
  // Per parameter of the wrapper, the op's argument position it is passed
  // as (-1: not passed on as it is).
  std::vector<int> to_op;
};

// Where each parameter goes: the call's positional arguments that are the
// parameter itself, as the callee's argument positions, mapped on by inner
// (the callee's own map; empty: the op's positions directly).
std::vector<int> passOn(const std::vector<std::string>& params, const std::vector<std::string>& args,
                        const std::vector<int>* inner) {
  std::vector<int> out(params.size(), -1);
  for (std::size_t i = 0; i < params.size(); ++i)
    for (std::size_t j = 0; j < args.size(); ++j)
      if (!params[i].empty() && args[j] == params[i]) {
        int to = static_cast<int>(j);
        if (inner) to = j < inner->size() ? (*inner)[j] : -1;
        out[i] = to;
        break;
      }
  return out;
}

// A wrapper's body: at most this many statements (a thin function that
// forwards to the op, not a layer that also calls one).
constexpr int kThinWrapper = 8;

class Resolver {
 public:
  explicit Resolver(const std::vector<ModuleFacts>& facts) : facts_(facts) {
    for (std::size_t i = 0; i < facts.size(); ++i) {
      by_file_[facts[i].file] = i;
      for (const auto& k : moduleKeys(facts[i].file)) by_key_[k].push_back(i);
    }
  }

  // The module a dotted name (absolute, or relative with leading dots) names
  // from the importer's file; -1 when the checkout holds none.
  long module(const std::string& dotted, const std::string& importer) const {
    std::size_t dots = 0;
    while (dots < dotted.size() && dotted[dots] == '.') ++dots;
    if (dots > 0) {
      std::string dir = dirOf(importer);
      for (std::size_t up = 1; up < dots; ++up) dir = dirOf(dir);
      std::string rest = dotted.substr(dots);
      std::string path = dir;
      if (!rest.empty())
        for (const auto& p : splitOn(rest, '.')) path += (path.empty() ? "" : "/") + p;
      for (const std::string& f : {path + ".py", path + "/__init__.py"})
        if (auto it = by_file_.find(f); it != by_file_.end()) return static_cast<long>(it->second);
      return -1;
    }
    auto it = by_key_.find(dotted);
    if (it == by_key_.end()) return -1;
    // Several modules answer to the name: the one nearest the importer, then by path.
    long best = -1;
    std::size_t best_shared = 0;
    for (std::size_t i : it->second) {
      std::size_t s = sharedPrefix(facts_[i].file, importer);
      if (best < 0 || s > best_shared) { best = static_cast<long>(i); best_shared = s; }
    }
    return best;
  }

  // The module-level function `name` of module m as a wrapper, following
  // re-exports (`from .elementwise import rms_norm` in a package's __init__).
  const Wrapper* wrapper(long m, const std::string& name, const std::map<std::string, Wrapper>& wrappers,
                        std::string* where, int depth = 0) const {
    if (m < 0 || depth > 4) return nullptr;
    const ModuleFacts& f = facts_[static_cast<std::size_t>(m)];
    if (f.functions.count(name)) {
      auto it = wrappers.find(f.file + ":" + name);
      if (it == wrappers.end()) return nullptr;
      *where = it->first;
      return &it->second;
    }
    auto imp = f.imports.find(name);
    if (imp == f.imports.end() || imp->second.name.empty()) return nullptr;
    return wrapper(module(imp->second.module, f.file), imp->second.name, wrappers, where, depth + 1);
  }

 private:
  const std::vector<ModuleFacts>& facts_;
  std::map<std::string, std::size_t> by_file_;
  std::map<std::string, std::vector<std::size_t>> by_key_;
};

}  // namespace

bool isTestPath(const std::string& file) {
  for (const auto& p : splitOn(file, '/')) {
    if (p == "tests" || p == "test" || p == "benchmarks" || p == "benchmark" || p == "examples" || p == "docs") return true;
    if (p.rfind("test_", 0) == 0 && p.size() > 8 && p.compare(p.size() - 3, 3, ".py") == 0) return true;
  }
  return false;
}

SiteScan scanSites(const std::vector<Module>& modules) {
  SiteScan out;
  std::vector<ModuleFacts> facts;
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  for (const auto& m : modules) {
    ModuleFacts f;
    f.file = m.file;
    TSTree* tree = ts_parser_parse_string(parser, nullptr, m.text.c_str(), static_cast<uint32_t>(m.text.size()));
    if (!tree) {
      out.notes.push_back(m.file + ": tree-sitter gave no tree, skipped");
      facts.push_back(std::move(f));
      continue;
    }
    walkModule(ts_tree_root_node(tree), m.text, f);
    ts_tree_delete(tree);
    facts.push_back(std::move(f));
  }
  ts_parser_delete(parser);

  for (const auto& f : facts) out.python_ops.insert(f.python_ops.begin(), f.python_ops.end());
  // Wrappers: module-level functions with a direct op call inside, then the
  // thin ones that call a wrapper without a condition (an engine's op module
  // over a kernel package's), up to a few levels.
  std::map<std::string, Wrapper> wrappers;
  for (const auto& f : facts)
    for (const auto& c : f.calls) {
      OpName op;
      if (!opOf(c.callee, &op) || c.function.find('.') != std::string::npos || !f.functions.count(c.function)) continue;
      auto ps = f.params.find(c.function);
      wrappers.emplace(f.file + ":" + c.function,
                       Wrapper{op, {f.file + ":" + c.function},
                               passOn(ps == f.params.end() ? std::vector<std::string>{} : ps->second, c.arguments, nullptr)});
    }
  Resolver resolve(facts);
  // The wrapper a call reaches: `alias.f(...)` through a module import,
  // `f(...)` through a from-import or in the wrapper's own module.
  auto resolveCall = [&](const ModuleFacts& f, const Call& c) -> const Wrapper* {
    auto parts = splitOn(c.callee, '.');
    if (parts.size() == 1) {
      if (f.functions.count(parts[0])) {
        auto it = wrappers.find(f.file + ":" + parts[0]);
        return it == wrappers.end() ? nullptr : &it->second;
      }
      auto imp = f.imports.find(parts[0]);
      if (imp == f.imports.end() || imp->second.name.empty()) return nullptr;
      std::string where;
      return resolve.wrapper(resolve.module(imp->second.module, f.file), imp->second.name, wrappers, &where);
    }
    // The longest prefix that is an imported name.
    for (std::size_t k = parts.size() - 1; k >= 1; --k) {
      std::string prefix;
      for (std::size_t i = 0; i < k; ++i) prefix += (i ? "." : "") + parts[i];
      auto imp = f.imports.find(prefix);
      if (imp == f.imports.end()) continue;
      const Import& im = imp->second;
      std::string mod = im.name.empty() ? im.module : im.module + (im.module.back() == '.' ? "" : ".") + im.name;
      for (std::size_t i = k; i + 1 < parts.size(); ++i) mod += "." + parts[i];
      std::string where;
      return resolve.wrapper(resolve.module(mod, f.file), parts.back(), wrappers, &where);
    }
    return nullptr;
  };
  for (int level = 0; level < 3; ++level) {
    std::map<std::string, Wrapper> more;
    for (const auto& f : facts)
      for (const auto& c : f.calls) {
        if (!c.conditions.empty() || !f.functions.count(c.function)) continue;
        auto st = f.statements.find(c.function);
        std::string key = f.file + ":" + c.function;
        if (st == f.statements.end() || st->second > kThinWrapper || wrappers.count(key) || more.count(key)) continue;
        const Wrapper* w = resolveCall(f, c);
        if (!w) continue;
        auto ps = f.params.find(c.function);
        Wrapper n{w->op, {key}, passOn(ps == f.params.end() ? std::vector<std::string>{} : ps->second, c.arguments, &w->to_op)};
        n.via.insert(n.via.end(), w->via.begin(), w->via.end());
        more.emplace(key, std::move(n));
      }
    if (more.empty()) break;
    wrappers.insert(more.begin(), more.end());
  }
  for (const auto& [k, w] : wrappers) out.wrappers.emplace(k, w.op);

  for (const auto& f : facts) {
    for (const auto& c : f.calls) {
      Site s;
      s.file = f.file;
      s.line = c.line;
      s.column = c.column;
      s.function = c.function;
      s.callee = c.callee;
      s.conditions = c.conditions;
      s.arguments = c.arguments;
      s.in_test = isTestPath(f.file);
      if (opOf(c.callee, &s.op)) {
        out.sites.push_back(std::move(s));
        continue;
      }
      const Wrapper* w = resolveCall(f, c);
      if (!w) continue;
      s.op = w->op;
      s.via = w->via;
      s.to_op = w->to_op;
      out.sites.push_back(std::move(s));
    }
  }
  std::sort(out.sites.begin(), out.sites.end(), [](const Site& a, const Site& b) {
    return std::tie(a.file, a.line, a.column) < std::tie(b.file, b.line, b.column);
  });
  return out;
}

}  // namespace layergate::gates
