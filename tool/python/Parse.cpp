#include "python/Parse.h"

#include <mutex>
#include <optional>
#include <unordered_map>

#include "jobs/Trace.h"

extern "C" const TSLanguage* tree_sitter_python();

namespace layergate::python {

namespace {

// A checkout's run parses a few dozen texts of a few MiB in all; a tree
// takes some ten times its text.
constexpr std::size_t kMaxCachedBytes = std::size_t(32) << 20;
constexpr std::size_t kMaxCachedTexts = 1024;

struct Entry {
  TSTree* tree = nullptr;
  std::optional<long> syntax;  // the syntax check's verdict, once made
};

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, Entry> trees;
  std::size_t bytes = 0;
  void clear() {
    for (auto& [text, e] : trees) ts_tree_delete(e.tree);
    trees.clear();
    bytes = 0;
  }
  ~Cache() { clear(); }
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

TSTree* parsePython(const std::string& text) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.trees.find(text);
    if (it != c.trees.end()) return ts_tree_copy(it->second.tree);
  }
  trace::Scope scope("Parse Python", std::to_string(text.size()) + " bytes");
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  TSTree* tree = ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  ts_parser_delete(parser);
  if (!tree) return nullptr;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.bytes + text.size() > kMaxCachedBytes || c.trees.size() >= kMaxCachedTexts) c.clear();
  auto [it, fresh] = c.trees.emplace(text, Entry{tree, std::nullopt});
  if (!fresh) {
    ts_tree_delete(tree);  // another thread parsed it meanwhile
    return ts_tree_copy(it->second.tree);
  }
  c.bytes += text.size();
  return ts_tree_copy(tree);
}

std::optional<long> syntaxVerdict(const std::string& text) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.trees.find(text);
  return it == c.trees.end() ? std::nullopt : it->second.syntax;
}

void rememberSyntaxVerdict(const std::string& text, long verdict) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.trees.find(text);
  if (it != c.trees.end()) it->second.syntax = verdict;
}

}  // namespace layergate::python
