# Writes a C++ file holding every docs/rules/*.md as a string, so that
# `layergate explain` works wherever the binary is copied.
file(GLOB docs "${DOCS_DIR}/*.md")
list(SORT docs)
set(body "")
foreach(d IN LISTS docs)
  get_filename_component(id "${d}" NAME_WE)
  file(READ "${d}" text)
  string(APPEND body "  {\"${id}\", R\"lgdoc(${text})lgdoc\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from docs/rules by embed_docs.cmake.\n#include <map>\n#include <string>\nnamespace layergate::report {\nconst std::map<std::string, std::string>& ruleDocs() {\n  static const std::map<std::string, std::string> docs = {\n${body}  };\n  return docs;\n}\n}  // namespace layergate::report\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
