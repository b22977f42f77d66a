#include "python/Parse.h"

#include <condition_variable>
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
  TSTree* tree = nullptr;      // null while a thread parses the text
  std::optional<long> syntax;  // the syntax check's verdict, once made
};

struct Cache {
  std::mutex mu;
  std::condition_variable parsed;  // an entry got its tree, or was dropped
  std::unordered_map<std::string, Entry> trees;
  std::size_t bytes = 0;
  std::size_t parsed_count = 0;
  // Drops the parsed texts; those being parsed stay, for their parsers.
  void clear() {
    for (auto it = trees.begin(); it != trees.end();)
      if (it->second.tree) {
        ts_tree_delete(it->second.tree);
        it = trees.erase(it);
      } else {
        ++it;
      }
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
    // Two analyses often reach the same module at once (the env and
    // platform modules): the second waits for the first's tree.
    std::unique_lock<std::mutex> lock(c.mu);
    for (;;) {
      auto it = c.trees.find(text);
      if (it == c.trees.end()) {
        c.trees.emplace(text, Entry{});
        break;
      }
      if (it->second.tree) return ts_tree_copy(it->second.tree);
      c.parsed.wait(lock);
    }
  }
  // The placeholder goes if the parse does not get to the end (an
  // exception): waiters then parse the text themselves.
  struct Claim {
    Cache& c;
    const std::string& text;
    bool settled = false;
    ~Claim() {
      if (settled) return;
      std::lock_guard<std::mutex> lock(c.mu);
      c.trees.erase(text);
      c.parsed.notify_all();
    }
  } claim{c, text};
  TSTree* tree = nullptr;
  {
    trace::Scope scope("Parse Python", std::to_string(text.size()) + " bytes");
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    tree = ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
    ts_parser_delete(parser);
  }
  std::lock_guard<std::mutex> lock(c.mu);
  claim.settled = true;
  c.parsed.notify_all();
  ++c.parsed_count;
  if (!tree) {
    c.trees.erase(text);  // a waiter parses it again, and gets null too
    return nullptr;
  }
  if (c.bytes + text.size() > kMaxCachedBytes || c.trees.size() > kMaxCachedTexts) c.clear();
  c.trees[text].tree = tree;
  c.bytes += text.size();
  return ts_tree_copy(tree);
}

std::size_t textsParsed() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.parsed_count;
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
