// C++ source facts (model/Source.h) from clang's raw lexer: comments are
// comment tokens (never text inside a string, raw string or character
// literal), and a function's span is the brace pair after `name(...)`,
// found on the token stream (no preprocessing, no parse: it must work on a
// header whose includes are missing and be cheap).
#include <memory>

#include "clang/Basic/LangOptions.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "cpp/CppFrontend.h"

namespace layergate::cpp {
namespace {

struct Tok {
  clang::tok::TokenKind kind;
  std::string text;
  int line;
};

bool isKeyword(const std::string& s) {
  static const char* kws[] = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype",
                              "static_assert", "noexcept", "throw", "new", "delete", "__attribute__", "defined"};
  for (const char* k : kws)
    if (s == k) return true;
  return false;
}

bool isIdent(const Tok& t) { return t.kind == clang::tok::raw_identifier; }

// The index of the '(' that the ')' at `close` closes, or -1.
int openParen(const std::vector<Tok>& t, int close) {
  int depth = 0;
  for (int i = close; i >= 0; --i) {
    if (t[i].kind == clang::tok::r_paren) ++depth;
    else if (t[i].kind == clang::tok::l_paren && --depth == 0) return i;
  }
  return -1;
}

// `name(...)` ending just before `end` (qualifiers skipped); "" when the
// brace at `end` does not open a function body.
std::string functionBefore(const std::vector<Tok>& t, int end) {
  int i = end - 1;
  for (int round = 0; round < 2; ++round) {
    while (i >= 0 && isIdent(t[i]) &&
           (t[i].text == "const" || t[i].text == "override" || t[i].text == "final" || t[i].text == "mutable" ||
            t[i].text == "noexcept" || t[i].text == "volatile"))
      --i;
    if (i < 0 || t[i].kind != clang::tok::r_paren) return "";
    int open = openParen(t, i);
    if (open < 1 || !isIdent(t[open - 1]) || isKeyword(t[open - 1].text)) return "";
    int k = open - 1;
    std::string name = t[k].text;
    while (k >= 2 && t[k - 1].kind == clang::tok::coloncolon && isIdent(t[k - 2])) {
      name = t[k - 2].text + "::" + name;
      k -= 2;
    }
    if (round == 1 || k < 1 || (t[k - 1].kind != clang::tok::comma && t[k - 1].kind != clang::tok::colon)) return name;
    // A member initialiser `: a_(x), b_(y) {`: the function is before the ':'.
    int c = k - 1;
    while (c >= 0 && t[c].kind == clang::tok::comma) {
      if (c < 1 || t[c - 1].kind != clang::tok::r_paren) return "";
      int o = openParen(t, c - 1);
      if (o < 2) return "";
      c = o - 2;
    }
    if (c < 0 || t[c].kind != clang::tok::colon) return "";
    // `public: Name(...) {`: an access label, not an initialiser list.
    if (c < 1 || (t[c - 1].kind != clang::tok::r_paren && !isIdent(t[c - 1]))) return "";
    if (isIdent(t[c - 1]) && (t[c - 1].text == "public" || t[c - 1].text == "private" || t[c - 1].text == "protected"))
      return name;
    i = c - 1;
  }
  return "";
}

// `class Name ... {` or `struct Name ... {`: Name, else "".
std::string classBefore(const std::vector<Tok>& t, int end) {
  for (int i = end - 1; i >= 0 && end - i < 40; --i) {
    auto k = t[i].kind;
    if (k == clang::tok::semi || k == clang::tok::l_brace || k == clang::tok::r_brace || k == clang::tok::r_paren ||
        k == clang::tok::equal)
      return "";
    if (isIdent(t[i]) && (t[i].text == "class" || t[i].text == "struct") && i + 1 < end && isIdent(t[i + 1]))
      return t[i + 1].text;
  }
  return "";
}

}  // namespace

model::SourceFacts sourceFacts(const std::string& text, const std::string& name) {
  model::SourceFacts out;
  clang::SourceManagerForFile smf(name, text);
  clang::SourceManager& sm = smf.get();
  clang::LangOptions lo;
  lo.CPlusPlus = lo.CPlusPlus11 = lo.CPlusPlus14 = lo.CPlusPlus17 = 1;
  lo.CUDA = 1;
  lo.LineComment = 1;
  clang::FileID fid = sm.getMainFileID();
  llvm::MemoryBufferRef buf = sm.getBufferOrFake(fid);
  clang::Lexer lexer(fid, buf, sm, lo);
  lexer.SetCommentRetentionState(true);
  std::vector<Tok> toks;
  clang::Token tok;
  while (true) {
    lexer.LexFromRawLexer(tok);
    if (tok.is(clang::tok::eof)) break;
    clang::SourceLocation loc = tok.getLocation();
    std::string spelled(sm.getCharacterData(loc), tok.getLength());
    int line = static_cast<int>(sm.getSpellingLineNumber(loc));
    if (tok.is(clang::tok::comment)) {
      std::string body = spelled.rfind("//", 0) == 0 ? spelled.substr(2)
                         : spelled.size() >= 4      ? spelled.substr(2, spelled.size() - 4)
                                                    : "";
      out.comments.push_back({line, static_cast<int>(sm.getSpellingColumnNumber(loc)), body});
      continue;
    }
    toks.push_back({tok.getKind(), std::move(spelled), line});
  }
  // Braces: each open one remembers the scope it starts (index into scopes, or -1).
  std::vector<int> open;
  std::vector<std::string> names;  // enclosing named scopes, for qualification
  for (int i = 0; i < static_cast<int>(toks.size()); ++i) {
    if (toks[i].kind == clang::tok::l_brace) {
      std::string fn = functionBefore(toks, i);
      std::string cls = fn.empty() ? classBefore(toks, i) : "";
      std::string own = fn.empty() ? cls : fn;
      if (own.empty()) {
        open.push_back(-1);
        continue;
      }
      std::string qualified = names.empty() || own.find("::") != std::string::npos ? own : names.back() + "::" + own;
      out.scopes.push_back({qualified, toks[i].line, toks[i].line});
      open.push_back(static_cast<int>(out.scopes.size()) - 1);
      names.push_back(qualified);
    } else if (toks[i].kind == clang::tok::r_brace && !open.empty()) {
      if (open.back() >= 0) {
        out.scopes[open.back()].last_line = toks[i].line;
        names.pop_back();
      }
      open.pop_back();
    }
  }
  // An unclosed scope (a truncated file) runs to the end.
  int last = toks.empty() ? 0 : toks.back().line;
  for (int s : open)
    if (s >= 0) out.scopes[s].last_line = last;
  return out;
}

}  // namespace layergate::cpp
