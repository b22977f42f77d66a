// Source facts for the report stage: a file's comments and the line spans of
// its definitions, each from its frontend's own lexer (tree-sitter for Python,
// clang's raw lexer for C++), so that suppressions read only real comments
// (never text inside a string) and fingerprints can name the enclosing function.
#pragma once

#include <string>
#include <vector>

namespace layergate::model {

struct Comment {
  int line = 0;       // 1-based, where the comment starts
  int col = 0;        // 1-based byte column of the comment marker
  std::string text;   // without the markers (#, //, /* */)
};

// A function (or class) definition: qualified name and its 1-based lines.
struct Scope {
  std::string name;   // "CustomAllreduce.should_custom_ar", "CustomAllreduce::allreduce"
  int first_line = 0;
  int last_line = 0;
};

struct SourceFacts {
  std::vector<Comment> comments;
  std::vector<Scope> scopes;  // outer before inner

  // The innermost scope holding `line`, "" when none.
  std::string enclosing(int line) const {
    const Scope* best = nullptr;
    for (const auto& s : scopes)
      if (s.first_line <= line && line <= s.last_line && (!best || s.first_line >= best->first_line)) best = &s;
    return best ? best->name : "";
  }
};

// A file as the report stage reads it: its text and facts.
struct SourceText {
  std::string text;
  SourceFacts facts;

  // Line n (1-based) without its newline, "" past the end.
  std::string line(int n) const {
    std::size_t at = 0;
    for (int i = 1; i < n; ++i) {
      at = text.find('\n', at);
      if (at == std::string::npos) return "";
      ++at;
    }
    if (at > text.size()) return "";
    std::size_t end = text.find('\n', at);
    return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
};

}  // namespace layergate::model
