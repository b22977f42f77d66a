// The selection layer in vLLM's shape (see Chain.h): a syntactic reading.
#include "python/Chain.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "model/Errors.h"
#include "python/Parse.h"
#include "python/Syntax.h"

namespace layergate::python {

namespace {

using detail::field;
using detail::is;
using detail::named;

// The walks below recurse per syntax node: past this many levels the file is
// refused (InputError), not walked into a stack overflow. CPython itself
// refuses 200 nested parentheses; 2000 levels overflowed the 8 MB main stack
// under ASan (several std::function frames per level).
constexpr int kMaxDepth = 400;
struct DepthGuard {
  int& depth;
  DepthGuard(int& d, const std::string& path, TSNode n) : depth(d) {
    if (++depth > kMaxDepth) {
      --depth;
      throw InputError(path + ":" + std::to_string(ts_node_start_point(n).row + 1) + ": nesting deeper than " +
                       std::to_string(kMaxDepth) + " levels; not read");
    }
  }
  ~DepthGuard() { --depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

class Reader {
 public:
  explicit Reader(const SourceFile& f) : f_(f) {}

  std::string text(TSNode n) const {
    if (ts_node_is_null(n)) return "";
    return f_.text.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n));
  }
  model::Location loc(TSNode n, const char* role) const {
    TSPoint p = ts_node_start_point(n);
    return {f_.path, static_cast<int>(p.row) + 1, static_cast<int>(p.column) + 1, role, ""};
  }
  static std::string oneLine(std::string s, size_t max = 140) {
    std::string o;
    bool sp = false;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        sp = !o.empty();
        continue;
      }
      if (sp && o.back() != '(' && c != ')') o += ' ';
      sp = false;
      o += c;
    }
    if (o.size() > max) o = o.substr(0, max - 3) + "...";
    return o;
  }

  // `self.X` -> "X"; an alias bound to it -> "X"; else "".
  std::string attrOf(TSNode n, const std::map<std::string, std::string>& aliases) const {
    if (is(n, "attribute") && text(field(n, "object")) == "self") return text(field(n, "attribute"));
    if (is(n, "identifier")) {
      auto it = aliases.find(text(n));
      if (it != aliases.end()) return it->second;
    }
    return "";
  }

  void visit(TSNode n, const std::function<void(TSNode)>& f) const {
    if (ts_node_is_null(n)) return;
    DepthGuard g(depth_, f_.path, n);
    f(n);
    for (TSNode k : named(n)) {
      if (is(k, "function_definition") || is(k, "class_definition") || is(k, "lambda")) continue;
      visit(k, f);
    }
  }

  // The classes each attribute of the class holds.
  std::map<std::string, std::vector<std::string>> attributeClasses(TSNode cls, const std::set<std::string>& selectors,
                                                                   std::vector<std::string>& notes) const {
    std::map<std::string, std::vector<std::string>> out;
    auto add = [&](const std::string& attr, const std::string& c) {
      auto& v = out[attr];
      if (!c.empty() && std::find(v.begin(), v.end(), c) == v.end()) v.push_back(c);
    };
    // Locals bound to a selection function's result (`CAClass = dispatch_custom_allreduce(...)`).
    std::map<std::string, std::string> chooser;
    std::function<void(TSNode)> pre = [&](TSNode n) {
      if (ts_node_is_null(n)) return;
      DepthGuard g(depth_, f_.path, n);
      if (is(n, "assignment") && is(field(n, "left"), "identifier") && is(field(n, "right"), "call")) {
        std::string f = detail::lastComponent(text(field(field(n, "right"), "function")));
        if (selectors.count(f)) chooser[text(field(n, "left"))] = f;
      }
      for (TSNode k : named(n)) pre(k);
    };
    pre(field(cls, "body"));
    std::function<void(TSNode)> walk = [&](TSNode n) {
      if (ts_node_is_null(n)) return;
      DepthGuard g(depth_, f_.path, n);
      if (is(n, "assignment")) {
        TSNode left = field(n, "left");
        std::string attr = is(left, "attribute") && text(field(left, "object")) == "self" ? text(field(left, "attribute")) : "";
        if (!attr.empty()) {
          TSNode type = field(n, "type");
          // An annotation: every capitalised name in it but the typing words.
          auto word = [&](const std::string& w) {
            if (w.empty() || !std::isupper(static_cast<unsigned char>(w[0]))) return;
            if (w == "Optional" || w == "Union" || w == "None" || w == "List" || w == "Dict" || w == "Any") return;
            add(attr, w);
          };
          visit(type, [&](TSNode t) {
            if (is(t, "identifier")) {
              word(text(t));
            } else if (is(t, "string")) {  // a quoted annotation: "Optional[Cls]"
              std::string w;
              for (char c : text(t) + " ") {
                if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
                  w += c;
                } else {
                  word(w);
                  w.clear();
                }
              }
            }
          });
          TSNode right = field(n, "right");
          if (is(right, "call")) {
            TSNode fn = field(right, "function");
            if (is(fn, "call")) {  // f()(...): the class f returns
              std::string f = detail::lastComponent(text(field(fn, "function")));
              if (selectors.count(f)) add(attr, "selected-by:" + f);
            } else if (auto ch = chooser.find(text(fn)); ch != chooser.end()) {  // CAClass(...)
              add(attr, "selected-by:" + ch->second);
            } else {
              std::string c = detail::lastComponent(text(fn));
              if (!c.empty() && std::isupper(static_cast<unsigned char>(c[0]))) add(attr, c);
            }
          }
        }
      }
      for (TSNode k : named(n)) walk(k);
    };
    walk(field(cls, "body"));
    (void)notes;
    return out;
  }

  // Whether a guard is a conjunction of tests of `attr` that hold exactly when
  // its gate method admits (see model::ChainArm::plain).
  // Also: whether the guard call is a conjunct (gate_conjunct), and the
  // conjuncts that are not tests of `attr` (extra).
  bool plainGuard(TSNode cond, const std::string& attr, const std::string& guard,
                  const std::map<std::string, std::string>& aliases, bool& gate_conjunct, std::string& extra) const {
    int calls = 0;
    bool other = false;
    std::function<bool(TSNode)> term = [&](TSNode n) -> bool {
      DepthGuard g(depth_, f_.path, n);
      while (is(n, "parenthesized_expression")) n = detail::firstNamed(n);
      if (is(n, "boolean_operator")) {
        if (text(field(n, "operator")) != "and") return other = true, false;
        const bool l = term(field(n, "left"));
        const bool r = term(field(n, "right"));
        return l && r;
      }
      auto outside = [&]() {
        extra += (extra.empty() ? "" : " and ") + oneLine(text(n), 60);
        return false;
      };
      if (attrOf(n, aliases) == attr) return true;  // `X`
      if (is(n, "comparison_operator")) {           // `X is not None`
        std::vector<TSNode> k = named(n);
        if (k.size() == 2 && attrOf(k[0], aliases) == attr && is(k[1], "none") &&
            oneLine(text(n)).find(" is not ") != std::string::npos)
          return true;
        return outside();
      }
      if (is(n, "not_operator")) {  // `not X.disabled`
        TSNode a = field(n, "argument");
        if (is(a, "attribute") && attrOf(field(a, "object"), aliases) == attr && text(field(a, "attribute")) == "disabled")
          return true;
        return outside();
      }
      if (is(n, "call")) {  // `X.guard(...)`, once
        TSNode fn = field(n, "function");
        if (is(fn, "attribute") && attrOf(field(fn, "object"), aliases) == attr && text(field(fn, "attribute")) == guard)
          return ++calls == 1 || (other = true, false);
        return outside();
      }
      return outside();
    };
    if (attr.empty() || guard.empty()) return false;
    const bool plain = term(cond) && calls == 1;
    gate_conjunct = !plain && !other && calls == 1;
    if (!gate_conjunct) extra.clear();
    return plain;
  }

  // One arm per `if`/`elif` whose branch returns, in order.
  void arms(TSNode body, std::map<std::string, std::string>& aliases,
            const std::map<std::string, std::vector<std::string>>& classes, model::SelectionChain& ch) const {
    TSNode after{};
    bool after_set = false;
    for (TSNode st : named(body)) {
      if (is(st, "expression_statement")) {
        TSNode a = detail::firstNamed(st);
        if (is(a, "assignment") && is(field(a, "left"), "identifier")) {
          std::string attr = attrOf(field(a, "right"), aliases);
          if (!attr.empty()) aliases[text(field(a, "left"))] = attr;
        }
      }
      if (!is(st, "if_statement")) {
        if (!ch.arms.empty() && !after_set) after = st, after_set = true;
        continue;
      }
      const size_t before = ch.arms.size();
      std::vector<std::pair<TSNode, TSNode>> branches{{field(st, "condition"), field(st, "consequence")}};
      for (TSNode k : named(st))
        if (is(k, "elif_clause")) branches.push_back({field(k, "condition"), field(k, "consequence")});
      bool any = false;
      for (auto [cond, then] : branches) {
        TSNode ret{};
        bool has_ret = false;
        visit(then, [&](TSNode n) {
          if (!has_ret && is(n, "return_statement")) ret = n, has_ret = true;
        });
        if (!has_ret) continue;
        any = true;
        model::ChainArm arm;
        arm.text = oneLine(text(cond));
        arm.where = loc(cond, "selection");
        // The guard: a call of a method on an attribute (a should_* one first).
        std::string first_attr;
        visit(cond, [&](TSNode n) {
          if (first_attr.empty()) {
            std::string a = attrOf(n, aliases);
            if (!a.empty()) first_attr = a;
          }
          if (!is(n, "call")) return;
          TSNode fn = field(n, "function");
          if (!is(fn, "attribute")) return;
          std::string a = attrOf(field(fn, "object"), aliases);
          if (a.empty()) return;
          std::string m = text(field(fn, "attribute"));
          if (arm.guard.empty() || (m.rfind("should", 0) == 0 && arm.guard.rfind("should", 0) != 0)) {
            arm.guard = m;
            arm.attribute = a;
          }
        });
        if (arm.attribute.empty()) arm.attribute = first_attr;
        TSNode rv = detail::firstNamed(ret);
        arm.result = oneLine(text(rv), 60);
        // What the branch calls on an attribute, when it returns a local (`out = ca.custom_all_reduce(x)`).
        visit(then, [&](TSNode n) {
          if (!is(n, "call") || arm.result.find('.') != std::string::npos) return;
          TSNode fn = field(n, "function");
          if (is(fn, "attribute") && attrOf(field(fn, "object"), aliases) == arm.attribute && !arm.attribute.empty())
            arm.result = arm.attribute + "." + text(field(fn, "attribute"));
        });
        if (auto it = classes.find(arm.attribute); it != classes.end()) arm.implementations = it->second;
        bool direct = false;
        for (TSNode k : named(then)) direct |= ts_node_eq(k, ret);
        bool conj = false;
        std::string extra;
        arm.plain = direct && plainGuard(cond, arm.attribute, arm.guard, aliases, conj, extra);
        arm.gate_conjunct = direct && conj;
        if (arm.gate_conjunct) arm.extra = extra;
        ch.arms.push_back(std::move(arm));
      }
      if (any && ch.arms.size() > before) after_set = false;  // the fall-through is after the last arm
      else if (!ch.arms.empty() && !after_set) after = st, after_set = true;
    }
    if (after_set) ch.fallback = loc(after, "fallback");
  }

 private:
  const SourceFile& f_;
  mutable int depth_ = 0;  // of the walk in progress
};

}  // namespace

std::optional<model::SelectionChain> extractChain(const std::vector<SourceFile>& files,
                                                  const std::vector<std::string>& classes,
                                                  const std::vector<std::string>& methods,
                                                  const std::vector<std::string>& selection_functions) {
  const std::set<std::string> selectors(selection_functions.begin(), selection_functions.end());
  for (const auto& f : files) {
    TSTree* tree = parsePython(f.text);
    if (!tree) continue;
    std::optional<model::SelectionChain> out;
    Reader r(f);
    int depth = 0;
    std::function<void(TSNode)> find = [&](TSNode n) {
      DepthGuard g(depth, f.path, n);
      for (TSNode k : named(n)) {
        if (out) return;
        TSNode def = is(k, "decorated_definition") ? field(k, "definition") : k;
        if (is(def, "class_definition")) {
          const std::string name = r.text(field(def, "name"));
          if (std::find(classes.begin(), classes.end(), name) != classes.end()) {
            for (const auto& m : methods) {
              for (TSNode s : named(field(def, "body"))) {
                TSNode fd = is(s, "decorated_definition") ? field(s, "definition") : s;
                if (!is(fd, "function_definition") || r.text(field(fd, "name")) != m) continue;
                model::SelectionChain ch;
                ch.class_name = name;
                ch.method = m;
                ch.where = r.loc(field(fd, "name"), "selection");
                auto held = r.attributeClasses(def, selectors, ch.notes);
                std::map<std::string, std::string> aliases;
                r.arms(field(fd, "body"), aliases, held, ch);
                out = std::move(ch);
                break;
              }
              if (out) break;
            }
          }
          if (!out) find(field(def, "body"));
        } else if (!is(def, "function_definition")) {
          find(def);
        }
      }
    };
    try {
      find(ts_tree_root_node(tree));
    } catch (...) {
      ts_tree_delete(tree);
      throw;
    }
    ts_tree_delete(tree);
    if (out) return out;
  }
  return std::nullopt;
}

}  // namespace layergate::python
