// Python frontend: symbolic execution of the gate class with state merging.
//
// The walker runs once over each statement of the constructor and of the
// per-call method (and of the helpers they call), carrying one merged state:
// at an `if` both branches are walked and their variables joined with Ite on
// the branch condition, so the formulas grow with the code, not with the
// number of paths. Values keep Python's meaning (truthiness, None, strings
// from the environment); whatever the walker does not understand becomes an
// opaque symbol named after its source text, created only when a condition
// actually uses it.
#include "python/PythonFrontend.h"

#include <tree_sitter/api.h>

#include "python/Parse.h"
#include "python/Walker.h"


namespace layergate::python {

model::Gate extractGate(const std::vector<SourceFile>& files, const target::PythonGateSpec& spec,
                        const Limits& limits) {
  detail::Walker w(files, spec, limits);
  return w.run();
}

std::optional<model::Selection> extractSelection(const std::vector<SourceFile>& files,
                                                 const target::PythonGateSpec& spec, const Limits& limits) {
  if (spec.selection_functions.empty() || files.empty()) return std::nullopt;
  detail::Walker w(files, spec, limits);
  return w.runSelection();
}

model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec, const Limits& limits) {
  return extractGate(std::vector<SourceFile>{file}, spec, limits);
}

Outline outline(const std::string& text) {
  Outline out;
  TSTree* tree = parsePython(text);
  if (!tree) return out;
  TSNode root = ts_tree_root_node(tree);
  std::vector<std::pair<TSNode, bool>> stack{{root, true}};  // node, at module level
  while (!stack.empty()) {
    auto [n, top] = stack.back();
    stack.pop_back();
    for (TSNode k : detail::named(n)) {
      TSNode def = detail::is(k, "decorated_definition") ? ts_node_child_by_field_name(k, "definition", 10) : k;
      if (detail::is(def, "class_definition")) {
        TSNode name = ts_node_child_by_field_name(def, "name", 4);
        out.classes.push_back(text.substr(ts_node_start_byte(name), ts_node_end_byte(name) - ts_node_start_byte(name)));
        stack.push_back({def, false});
      } else if (detail::is(def, "function_definition")) {
        if (top) {
          ++out.module_functions;
          TSNode name = ts_node_child_by_field_name(def, "name", 4);
          out.functions.push_back(text.substr(ts_node_start_byte(name), ts_node_end_byte(name) - ts_node_start_byte(name)));
        }
        stack.push_back({def, false});
      } else {
        stack.push_back({k, top && !detail::is(k, "function_definition")});
      }
    }
  }
  ts_tree_delete(tree);
  return out;
}

}  // namespace layergate::python
