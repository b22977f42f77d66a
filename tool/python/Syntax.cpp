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

bool isExtra(TSNode n) { return is(n, "comment") || is(n, "line_continuation"); }

// Children through a cursor: ts_node_child(i) is linear in i.
std::vector<TSNode> children(TSNode n, bool named_only) {
  std::vector<TSNode> out;
  if (ts_node_is_null(n)) return out;
  TSTreeCursor c = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      TSNode k = ts_tree_cursor_current_node(&c);
      if (named_only && (!ts_node_is_named(k) || isExtra(k))) continue;
      if (!named_only && isExtra(k)) continue;
      out.push_back(k);
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
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
