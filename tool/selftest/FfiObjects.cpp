#include "selftest/FfiObjects.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "selftest/HeaderScan.h"

namespace layergate::selftest {

namespace {

// Splits a braced or parenthesised list's inside at its top-level commas.
std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '{' || c == '[' || c == '<') ++depth;
    if (c == ')' || c == '}' || c == ']' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(squeeze(cur)));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(squeeze(cur)));
  return out;
}

// The literal at a quote of the original text (blank() kept the quotes).
std::string literalAt(const std::string& text, std::size_t quote) {
  const std::size_t end = text.find('"', quote + 1);
  return end == std::string::npos ? "" : text.substr(quote + 1, end - quote - 1);
}

// The body of Obj::Obj(...) { ... } in one text: [open brace, close brace], or npos.
std::pair<std::size_t, std::size_t> ctorBody(const std::string& blanked, const std::string& obj) {
  const std::regex def("\\b" + obj + "\\s*::\\s*" + obj + "\\s*\\(");
  std::smatch m;
  if (!std::regex_search(blanked, m, def)) return {std::string::npos, std::string::npos};
  const std::size_t open = static_cast<std::size_t>(m.position(0) + m.length(0)) - 1;
  const std::size_t close = matchClose(blanked, open);
  if (close == std::string::npos) return {std::string::npos, std::string::npos};
  const std::size_t brace = blanked.find_first_of("{;", close);
  if (brace == std::string::npos || blanked[brace] != '{') return {std::string::npos, std::string::npos};
  return {brace, matchClose(blanked, brace)};
}

// TensorMatcher({dims...}).with_dtype<T>()...verify(param[i]) statements of a
// constructor body, and its symbolic sizes (auto x = SymbolicSize{"name"}).
void readShapes(const std::string& text, const std::string& blanked, std::size_t from, std::size_t to, FfiObject& o) {
  const std::string body = blanked.substr(from, to - from);
  static const std::regex sym("(\\w+)\\s*=\\s*SymbolicSize\\s*\\{\\s*\"|SymbolicSize\\s+(\\w+)\\s*\\{\\s*\"");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), sym); it != std::sregex_iterator(); ++it) {
    const std::string local = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
    const std::size_t quote = from + static_cast<std::size_t>(it->position(0) + it->length(0)) - 1;
    o.symbolic[local] = literalAt(text, quote);
  }
  static const std::regex matcher("TensorMatcher\\s*\\(");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), matcher); it != std::sregex_iterator(); ++it) {
    const std::size_t open = from + static_cast<std::size_t>(it->position(0) + it->length(0)) - 1;
    const std::size_t close = matchClose(blanked, open);
    if (close == std::string::npos || close > to) continue;
    std::string inside = trim(blanked.substr(open + 1, close - open - 1));
    if (inside.size() < 2 || inside.front() != '{' || inside.back() != '}') continue;
    FfiShape shape;
    shape.dims = splitList(inside.substr(1, inside.size() - 2));
    // The rest of the statement: the element type and the tensor it verifies.
    std::size_t end = close;
    int depth = 0;
    for (; end < to; ++end) {
      const char c = blanked[end];
      if (c == '(' || c == '{') ++depth;
      if (c == ')' || c == '}') --depth;
      if (c == ';' && depth <= 0) break;
    }
    const std::string rest = blanked.substr(close, end - close);
    static const std::regex dtype("with_dtype\\s*<\\s*([\\w:]+)\\s*>");
    static const std::regex verify("\\.verify\\s*\\(\\s*(\\w+)");
    std::smatch dm, vm;
    if (std::regex_search(rest, dm, dtype)) shape.elem_type = dm[1].str();
    if (std::regex_search(rest, vm, verify)) o.shapes[vm[1].str()] = shape;
  }
}

}  // namespace

bool isFfiTensor(const std::string& base_type) {
  std::string b = base_type;
  for (const char* p : {"tvm::ffi::", "ffi::", "::"})
    if (b.rfind(p, 0) == 0) b = b.substr(std::string(p).size());
  return b == "Tensor" || b == "TensorView";
}

std::optional<FfiObject> findFfiObject(const std::vector<SourceText>& sources, const std::string& ref_type) {
  std::string ref = ref_type;
  if (const std::size_t c = ref.rfind("::"); c != std::string::npos) ref = ref.substr(c + 2);
  // an identifier only (it goes into a pattern; a template or pointer type is no reference type)
  if (ref.empty() || std::isdigit(static_cast<unsigned char>(ref[0])) ||
      !std::all_of(ref.begin(), ref.end(), [](char c) { return isIdent(c); }))
    return std::nullopt;
  const std::regex macro("TVM_FFI_DEFINE_OBJECT_REF_METHODS\\w*\\s*\\(\\s*" + ref + "\\s*,[^,]*,\\s*(\\w+)\\s*\\)");
  FfiObject o;
  o.ref = ref;
  std::vector<std::string> blanked;
  for (const auto& s : sources) blanked.push_back(blank(s.text));
  for (std::size_t i = 0; i < sources.size() && o.obj.empty(); ++i) {
    // The macro's arguments are not strings: search the text with comments out.
    std::smatch m;
    if (std::regex_search(blanked[i], m, macro)) o.obj = m[1].str();
  }
  if (o.obj.empty()) return std::nullopt;
  for (const auto& s : sources)
    if (ClassScan rs = scanClass(s.text, ref); rs.found) {
      o.ref_namespaces = rs.namespaces;
      break;
    }
  bool declared = false;
  for (std::size_t i = 0; i < sources.size() && !declared; ++i) {
    ClassScan cs = scanClass(sources[i].text, o.obj);
    if (!cs.found) continue;
    for (const auto& m : cs.methods)
      if (m.is_ctor && !declared) {
        declared = true;
        o.ctor = m.params;
        o.namespaces = cs.namespaces;
      }
  }
  if (!declared) return std::nullopt;
  // The constructor's body: out of the class (a file of its own, as SGLang's
  // registration module), else none to read shapes from.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    auto [open, close] = ctorBody(blanked[i], o.obj);
    if (open == std::string::npos || close == std::string::npos) continue;
    o.definition = sources[i].path;
    readShapes(sources[i].text, blanked[i], open, close, o);
    break;
  }
  return o;
}

}  // namespace layergate::selftest
