// tree-sitter helpers (see Syntax.h).
#include "python/Syntax.h"

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

namespace layergate::python::detail {

bool is(TSNode n, const char* type) { return !ts_node_is_null(n) && std::strcmp(ts_node_type(n), type) == 0; }

TSNode field(TSNode n, const char* name) {
  return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
}

namespace {

// The grammar's symbols named "comment" or "line_continuation" (an alias
// may share a name): a node's symbol is looked up, not its name compared.
struct Extras {
  std::vector<bool> is_extra;
  explicit Extras(const TSLanguage* lang) : is_extra(ts_language_symbol_count(lang), false) {
    for (TSSymbol s = 0; s < is_extra.size(); ++s) {
      const char* name = ts_language_symbol_name(lang, s);
      is_extra[s] = name && (!std::strcmp(name, "comment") || !std::strcmp(name, "line_continuation"));
    }
  }
};

}  // namespace

bool isExtra(TSNode n) {
  if (ts_node_is_null(n)) return false;
  static const Extras extras(ts_tree_language(n.tree));
  TSSymbol s = ts_node_symbol(n);
  return s < extras.is_extra.size() && extras.is_extra[s];
}

// Children through a cursor: ts_node_child(i) is linear in i. One cursor
// per thread, reset for each node (a new one costs an allocation, and the
// walks ask for children constantly); the loop calls nothing that uses it.
std::vector<TSNode> children(TSNode n, bool named_only) {
  std::vector<TSNode> out;
  if (ts_node_is_null(n)) return out;
  struct Cursor {
    TSTreeCursor c;
    bool made = false;
    ~Cursor() {
      if (made) ts_tree_cursor_delete(&c);
    }
  };
  thread_local Cursor cur;
  if (!cur.made) {
    cur.c = ts_tree_cursor_new(n);
    cur.made = true;
  } else {
    ts_tree_cursor_reset(&cur.c, n);
  }
  TSTreeCursor& c = cur.c;
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      TSNode k = ts_tree_cursor_current_node(&c);
      if (named_only && (!ts_node_is_named(k) || isExtra(k))) continue;
      if (!named_only && isExtra(k)) continue;
      out.push_back(k);
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  return out;
}

std::vector<TSNode> named(TSNode n) { return children(n, true); }

TSNode firstNamed(TSNode n) {
  for (TSNode k : named(n)) return k;
  return TSNode{};
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string lastComponent(const std::string& dotted) {
  auto p = dotted.rfind('.');
  return p == std::string::npos ? dotted : dotted.substr(p + 1);
}

}  // namespace layergate::python::detail
