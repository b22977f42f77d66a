#include "gates/Registrations.h"

#include <clang/Basic/LangOptions.h>
#include <clang/Basic/SourceLocation.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/Token.h>

#include <algorithm>
#include <regex>

namespace layergate::gates {
namespace {

struct Tok {
  enum Kind { Ident, String, Punct, Other } kind;
  std::string text;
  std::size_t offset;
  bool bol = false;  // first on its line
};

// The tokens of a C++ text, comments and preprocessor lines' `#` included as
// punctuation (the raw lexer does not run the preprocessor).
std::vector<Tok> lex(const std::string& text) {
  clang::LangOptions lo;
  lo.CPlusPlus = lo.CPlusPlus11 = lo.CPlusPlus14 = lo.CPlusPlus17 = true;
  const char* b = text.c_str();
  clang::Lexer lexer(clang::SourceLocation(), lo, b, b, b + text.size());
  std::vector<Tok> out;
  clang::Token t;
  for (;;) {
    bool end = lexer.LexFromRawLexer(t);
    if (t.is(clang::tok::eof)) break;
    // Located from an invalid file location, a token's location is its offset.
    std::size_t off = t.getLocation().getRawEncoding();
    const std::size_t before = out.size();
    if (t.is(clang::tok::raw_identifier)) {
      out.push_back({Tok::Ident, t.getRawIdentifier().str(), off});
    } else if (t.isLiteral() && t.getLiteralData()) {
      out.push_back({clang::tok::isStringLiteral(t.getKind()) ? Tok::String : Tok::Other,
                     std::string(t.getLiteralData(), t.getLength()), off});
    } else {
      const char* sp = clang::tok::getPunctuatorSpelling(t.getKind());
      out.push_back({sp ? Tok::Punct : Tok::Other, sp ? sp : "", off});
    }
    if (out.size() > before) out.back().bol = t.isAtStartOfLine();
    if (end) break;
  }
  return out;
}

// A string literal's contents: quotes, prefixes and simple escapes removed.
std::string unquote(const std::string& lit) {
  auto q = lit.find('"');
  if (q == std::string::npos) return "";
  if (q > 0 && lit[q - 1] == 'R') {  // R"delim(...)delim"
    auto open = lit.find('(', q);
    auto close = lit.rfind(')');
    return open == std::string::npos || close == std::string::npos || close < open ? "" : lit.substr(open + 1, close - open - 1);
  }
  std::string out;
  for (std::size_t i = q + 1; i + 1 < lit.size(); ++i) {
    if (lit[i] == '\\' && i + 2 < lit.size()) {
      char c = lit[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += lit[i];
    }
  }
  return out;
}

struct Lines {
  std::vector<std::size_t> starts{0};
  explicit Lines(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
  }
  int at(std::size_t off) const {
    return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), off) - starts.begin());
  }
};

// The index of the token closing the bracket at i (tokens[i] is "(", "[" or
// "{"), or tokens.size() when unbalanced.
std::size_t closing(const std::vector<Tok>& ts, std::size_t i) {
  const std::string open = ts[i].text;
  const std::string close = open == "(" ? ")" : open == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t j = i; j < ts.size(); ++j) {
    if (ts[j].kind != Tok::Punct) continue;
    if (ts[j].text == open) ++depth;
    else if (ts[j].text == close && --depth == 0) return j;
  }
  return ts.size();
}

// The top-level comma-separated arguments of the call whose "(" is at i:
// token index ranges [first, last).
std::vector<std::pair<std::size_t, std::size_t>> arguments(const std::vector<Tok>& ts, std::size_t i, std::size_t end) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  int depth = 0;
  std::size_t start = i + 1;
  for (std::size_t j = i + 1; j < end; ++j) {
    const auto& t = ts[j];
    if (t.kind != Tok::Punct) continue;
    if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
    else if (t.text == ")" || t.text == "]" || t.text == "}") --depth;
    else if (t.text == "<" && depth == 0 && j > i + 1 && ts[j - 1].kind == Tok::Ident) {
      // A template argument list (`overload_cast<int>(&f)`): its commas are not ours.
      int angle = 0;
      std::size_t k = j;
      for (; k < end; ++k) {
        if (ts[k].text == "<") ++angle;
        else if (ts[k].text == ">") { if (--angle == 0) break; }
        else if (ts[k].text == ">>") { angle -= 2; if (angle <= 0) break; }
        else if (ts[k].text == ";" || ts[k].text == "{") { k = end; break; }
      }
      if (k < end) j = k;
    } else if (t.text == "," && depth == 0) {
      out.push_back({start, j});
      start = j + 1;
    }
  }
  if (start < end) out.push_back({start, end});
  return out;
}

std::string joined(const std::vector<Tok>& ts, std::pair<std::size_t, std::size_t> r) {
  std::string s;
  for (std::size_t j = r.first; j < r.second; ++j) s += ts[j].text;
  return s;
}

// The concatenated string literals of an argument, or nothing when it holds
// anything else (a macro that builds the name, say).
bool literal(const std::vector<Tok>& ts, std::pair<std::size_t, std::size_t> r, std::string* out) {
  out->clear();
  if (r.first >= r.second) return false;
  for (std::size_t j = r.first; j < r.second; ++j) {
    if (ts[j].kind != Tok::String) return false;
    *out += unquote(ts[j].text);
  }
  return true;
}

// The function an argument binds: `&f`, `&ns::f`, `f`, `TORCH_BOX(&f)`,
// `py::overload_cast<...>(&f)`: the last component of the first qualified
// name after an `&`, else of a bare qualified name. "" for a lambda.
std::string boundFunction(const std::vector<Tok>& ts, std::pair<std::size_t, std::size_t> r, bool* lambda) {
  *lambda = r.first < r.second && ts[r.first].text == "[";
  if (*lambda) return "";
  auto nameFrom = [&](std::size_t j) {
    std::string last;
    for (; j < r.second; ++j) {
      if (ts[j].kind == Tok::Ident) last = ts[j].text;
      else if (ts[j].text != "::") break;
    }
    return last;
  };
  for (std::size_t j = r.first; j < r.second; ++j)
    if (ts[j].text == "&" && j + 1 < r.second && ts[j + 1].kind == Tok::Ident) return nameFrom(j + 1);
  bool bare = true;
  for (std::size_t j = r.first; j < r.second; ++j)
    if (ts[j].kind != Tok::Ident && ts[j].text != "::") bare = false;
  return bare ? nameFrom(r.first) : "";
}

void splitOverload(const std::string& name, Registration& r) {
  auto dot = name.find('.');
  r.op = name.substr(0, dot);
  r.overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  auto trim = [](std::string& s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(0, 1);
  };
  trim(r.op);
  trim(r.overload);
}

std::string dispatchKey(const std::string& written) {
  auto at = written.rfind("::");
  return at == std::string::npos ? written : written.substr(at + 2);
}

}  // namespace

std::vector<Registration> scanRegistrations(const std::string& text, const std::string& file) {
  std::vector<Registration> out;
  if (text.find("TORCH_LIBRARY") == std::string::npos && text.find("PYBIND11_MODULE") == std::string::npos &&
      text.find("TVM_FFI_DLL_EXPORT") == std::string::npos)
    return out;
  const std::vector<Tok> ts = lex(text);
  const Lines lines(text);
  static const std::regex torch_block("(STABLE_)?TORCH_LIBRARY(_FRAGMENT|_IMPL)?(_EXPAND)?");
  for (std::size_t i = 0; i + 1 < ts.size(); ++i) {
    if (ts[i].kind != Tok::Ident || ts[i + 1].text != "(") continue;
    const std::string& head = ts[i].text;
    if (head == "TVM_FFI_DLL_EXPORT_TYPED_FUNC") {
      std::size_t close = closing(ts, i + 1);
      auto args = arguments(ts, i + 1, close);
      if (args.size() != 2) continue;
      Registration r;
      r.kind = Registration::Kind::TvmFfi;
      r.op = joined(ts, args[0]);
      r.function = boundFunction(ts, args[1], &r.lambda);
      r.file = file;
      r.line = lines.at(ts[i].offset);
      out.push_back(std::move(r));
      continue;
    }
    bool pybind = head == "PYBIND11_MODULE" || head == "NB_MODULE";
    bool impl_block = head.find("_IMPL") != std::string::npos;
    if (!pybind && !std::regex_match(head, torch_block)) continue;
    std::size_t close = closing(ts, i + 1);
    if (close >= ts.size() || close + 1 >= ts.size() || ts[close + 1].text != "{") continue;
    auto args = arguments(ts, i + 1, close);
    if (args.size() < 2) continue;
    const std::string ns = joined(ts, args[0]);
    const std::string var = joined(ts, args.back());
    const std::string block_key = impl_block && args.size() >= 3 ? dispatchKey(joined(ts, args[1])) : "";
    std::size_t body_end = closing(ts, close + 1);
    for (std::size_t j = close + 2; j + 3 < body_end; ++j) {
      // `var.def(` / `var.impl(`, or a chained `).def(` in pybind11's style.
      bool receiver = (ts[j].kind == Tok::Ident && ts[j].text == var) || (pybind && ts[j].text == ")");
      if (!receiver || ts[j + 1].text != "." || ts[j + 3].text != "(") continue;
      const std::string method = ts[j + 2].text;
      if (method != "def" && method != "impl") continue;
      std::size_t call_end = closing(ts, j + 3);
      auto cargs = arguments(ts, j + 3, std::min(call_end, body_end));
      std::string first;
      if (cargs.empty() || !literal(ts, cargs[0], &first)) continue;
      Registration r;
      r.ns = ns;
      r.file = file;
      r.line = lines.at(ts[j].offset);
      if (method == "def") {
        auto paren = first.find('(');
        if (paren != std::string::npos) r.schema = first;
        splitOverload(first.substr(0, paren), r);
        if (cargs.size() >= 2) {
          r.kind = pybind ? Registration::Kind::Pybind : Registration::Kind::Def;
          r.function = boundFunction(ts, cargs[1], &r.lambda);
        } else {
          r.kind = Registration::Kind::Schema;
        }
      } else {
        r.kind = Registration::Kind::Impl;
        splitOverload(first, r);
        if (cargs.size() >= 2) r.function = boundFunction(ts, cargs.back(), &r.lambda);
        r.dispatch_key = cargs.size() >= 3 ? dispatchKey(joined(ts, cargs[1])) : block_key;
      }
      if (r.op.empty()) continue;
      out.push_back(std::move(r));
      j = std::min(call_end, body_end - 1) - 1;  // the next turn sees the closing `)`: a chained `.def(`
    }
    i = std::max(i, body_end < ts.size() ? body_end : i);
  }
  return out;
}

int namespaceMatch(const std::string& written, const std::string& python_ns) {
  if (written == python_ns) return 2;
  std::string w;
  for (char c : written)
    if (!std::isspace(static_cast<unsigned char>(c))) w += c;
  static const std::string ext = "TORCH_EXTENSION_NAME";
  if (w == ext) return 1;
  // CONCAT(TORCH_EXTENSION_NAME,_moe) and its spellings: the extension's name
  // then a suffix (vLLM's `_moe_C` library is `CONCAT(TORCH_EXTENSION_NAME, _moe)`
  // built with the extension named `_moe_C`... the suffix need only appear).
  auto comma = w.find(',');
  if (w.find(ext) != std::string::npos && comma != std::string::npos) {
    std::string suffix = w.substr(comma + 1);
    while (!suffix.empty() && suffix.back() == ')') suffix.pop_back();
    if (!suffix.empty() && python_ns.find(suffix) != std::string::npos) return 1;
  }
  return 0;
}

std::vector<Definition> scanDefinitions(const std::string& text, const std::string& file,
                                        const std::set<std::string>& wanted) {
  std::vector<Definition> out;
  bool any = false;
  for (const auto& w : wanted)
    if (text.find(w) != std::string::npos) { any = true; break; }
  if (!any) return out;
  const std::vector<Tok> ts = lex(text);
  const Lines lines(text);
  // The kinds of the open braces: true for a namespace's or extern "C"'s body.
  std::vector<bool> scopes;
  auto atNamespaceScope = [&] { return std::all_of(scopes.begin(), scopes.end(), [](bool b) { return b; }); };
  // Preprocessor conditionals: braces count in each conditional's first
  // branch only (as ctags reads them), since a kernel often opens its body
  // once per branch and closes it once after `#endif`. Directive lines are
  // skipped (a macro's body may hold braces).
  std::vector<bool> later_branch;
  auto counting = [&] { return std::none_of(later_branch.begin(), later_branch.end(), [](bool b) { return b; }); };
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const Tok& t = ts[i];
    if (t.bol && t.text == "#" && i + 1 < ts.size()) {
      const std::string& d = ts[i + 1].text;
      if (d == "if" || d == "ifdef" || d == "ifndef") later_branch.push_back(false);
      else if ((d == "else" || d == "elif" || d == "elifdef" || d == "elifndef") && !later_branch.empty()) later_branch.back() = true;
      else if (d == "endif" && !later_branch.empty()) later_branch.pop_back();
      while (i + 1 < ts.size() && !ts[i + 1].bol) ++i;
      continue;
    }
    if (!counting() && t.kind == Tok::Punct && (t.text == "{" || t.text == "}")) continue;
    if (t.kind == Tok::Punct && t.text == "{") {
      bool ns = false;
      for (std::size_t k = i; k-- > 0 && i - k <= 8;) {
        if (ts[k].kind == Tok::Ident && (ts[k].text == "namespace")) { ns = true; break; }
        if (ts[k].kind == Tok::String && k > 0 && ts[k - 1].text == "extern") { ns = true; break; }
        if (ts[k].kind != Tok::Ident && ts[k].text != "::" && ts[k].text != "inline") break;
      }
      scopes.push_back(ns);
      continue;
    }
    if (t.kind == Tok::Punct && t.text == "}") {
      if (!scopes.empty()) scopes.pop_back();
      continue;
    }
    if (t.kind != Tok::Ident || !wanted.count(t.text) || i + 1 >= ts.size() || ts[i + 1].text != "(") continue;
    if (!atNamespaceScope() || i == 0) continue;
    // The qualified name as written, and what stands before it: a type, never
    // a member access, an operator or a keyword that makes this a call.
    std::size_t first = i;
    while (first >= 2 && ts[first - 1].text == "::" && ts[first - 2].kind == Tok::Ident) first -= 2;
    if (first == 0) continue;
    const Tok& before = ts[first - 1];
    bool type_before = (before.kind == Tok::Ident && before.text != "return" && before.text != "else" &&
                        before.text != "new" && before.text != "throw" && before.text != "case") ||
                       before.text == ">" || before.text == "*" || before.text == "&" || before.text == "&&" ||
                       before.text == ">>";
    if (!type_before) continue;
    std::size_t close = closing(ts, i + 1);
    if (close >= ts.size()) continue;
    std::size_t k = close + 1;
    for (; k < ts.size(); ++k) {
      const Tok& a = ts[k];
      if (a.text == "{" || a.text == ";" || a.text == "=" || a.text == "," || a.text == ")" || a.text == ":") break;
      if (a.text == "(") { k = closing(ts, k); continue; }  // noexcept(...), __attribute__((...))
    }
    if (k >= ts.size() || ts[k].text != "{") continue;
    Definition d;
    for (auto a : arguments(ts, i + 1, close)) {
      // `const T& name = default`: the name is the last identifier before any `=`.
      std::size_t end = a.second;
      for (std::size_t q = a.first; q < a.second; ++q)
        if (ts[q].text == "=") { end = q; break; }
      if (end == a.first) continue;
      std::string type, name = ts[end - 1].kind == Tok::Ident ? ts[end - 1].text : "";
      for (std::size_t q = a.first; q + (name.empty() ? 0 : 1) < end; ++q) {
        bool word = ts[q].kind == Tok::Ident;
        if (!type.empty() && word && (std::isalnum(static_cast<unsigned char>(type.back())) || type.back() == '_')) type += ' ';
        type += ts[q].text;
      }
      if (type == "void" && name.empty()) continue;
      d.params.push_back({type, name});
    }
    d.name = t.text;
    for (std::size_t q = first; q <= i; ++q) d.qualified += ts[q].text;
    d.file = file;
    d.offset = t.offset;
    d.line = lines.at(t.offset);
    d.body_line = lines.at(ts[k].offset);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> schemaParams(const std::string& schema) {
  std::vector<std::pair<std::string, std::string>> out;
  auto open = schema.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::string a = cur.substr(0, cur.find('='));
    cur.clear();
    while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.pop_back();
    while (!a.empty() && std::isspace(static_cast<unsigned char>(a.front()))) a.erase(0, 1);
    if (a.empty() || a == "*") return;
    auto sp = a.find_last_of(" \t\n");
    if (sp == std::string::npos) out.push_back({a, ""});
    else {
      std::string type = a.substr(0, sp);
      while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) type.pop_back();
      out.push_back({type, a.substr(sp + 1)});
    }
  };
  for (std::size_t i = open + 1; i < schema.size(); ++i) {
    char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    else if ((c == ')' || c == ']') && depth > 0) --depth;
    else if (c == ')') { flush(); break; }
    if (c == ',' && depth == 0) { flush(); continue; }
    cur += c;
  }
  return out;
}

}  // namespace layergate::gates
