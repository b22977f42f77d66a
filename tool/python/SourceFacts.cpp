// Python source facts (model/Source.h) from the tree-sitter tree: comment
// nodes (so a `#` inside a string is never a comment) and the line spans of
// `def` and `class`, named with their enclosing classes and functions.
#include <tree_sitter/api.h>

#include "python/Parse.h"
#include "python/PythonFrontend.h"
#include "python/Syntax.h"

namespace layergate::python {

model::SourceFacts sourceFacts(const std::string& text) {
  model::SourceFacts out;
  TSTree* tree = parsePython(text);
  if (!tree) return out;
  auto source = [&](TSNode n) {
    return text.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n));
  };
  // An explicit stack: nesting depth is the input's, not ours to recurse on.
  std::vector<std::pair<TSNode, std::string>> stack{{ts_tree_root_node(tree), ""}};  // node, enclosing name
  while (!stack.empty()) {
    auto [n, outer] = stack.back();
    stack.pop_back();
    std::string inner = outer;
    if (detail::is(n, "comment")) {
      std::string c = source(n);
      TSPoint p = ts_node_start_point(n);
      out.comments.push_back({static_cast<int>(p.row) + 1, static_cast<int>(p.column) + 1, c.substr(c.rfind('#', 0) == 0)});
      continue;
    }
    if (detail::is(n, "function_definition") || detail::is(n, "class_definition")) {
      TSNode name = ts_node_child_by_field_name(n, "name", 4);
      if (!ts_node_is_null(name)) {
        inner = (outer.empty() ? "" : outer + ".") + source(name);
        out.scopes.push_back({inner, static_cast<int>(ts_node_start_point(n).row) + 1,
                              static_cast<int>(ts_node_end_point(n).row) + 1});
      }
    }
    uint32_t count = ts_node_child_count(n);
    for (uint32_t i = count; i-- > 0;) stack.push_back({ts_node_child(n, i), inner});
  }
  ts_tree_delete(tree);
  return out;
}

}  // namespace layergate::python
