// The regex of the files that can change a verdict (see FilesRegex.h).
#include "discover/FilesRegex.h"

#include <set>

#include "discover/Discover.h"

namespace layergate::discover {

std::string patternRegex(const std::string& pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (pattern.compare(i, 3, "**/") == 0) {
      out += "(.*/)?";
      i += 2;
    } else if (c == '*') {
      out += "[^/]*";
    } else if (c == '?') {
      out += "[^/]";
    } else if (c == '[') {
      std::size_t close = pattern.find(']', i + 1);
      if (close == std::string::npos) {
        out += "\\[";
        continue;
      }
      std::string set = pattern.substr(i + 1, close - i - 1);
      if (!set.empty() && set[0] == '!') set[0] = '^';
      out += "[" + set + "]";
      i = close;
    } else {
      if (std::string_view(".^$+(){}|\\").find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out;
}

namespace {

std::string lastComponent(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

std::string filesRegex(const std::vector<target::Target>& targets, const std::vector<target::ChainSpec>& chains) {
  std::set<std::string> alts;
  auto python = [&](const std::vector<std::string>& patterns) {
    for (const auto& p : patterns) alts.insert(patternRegex(p));
  };
  auto cpp = [&](std::vector<std::string> patterns) {
    auto variants = extensionVariants(patterns);
    patterns.insert(patterns.end(), variants.begin(), variants.end());
    for (const auto& p : patterns) alts.insert(patternRegex(lastComponent(p)));
  };
  for (const auto& t : targets) {
    const auto& d = t.discovery;
    python(d.python_paths);
    python(d.chain_python);
    cpp(d.cpp_paths);
    cpp(d.chain_cpp);
    for (const auto& r : d.required_paths) (r.size() > 3 && r.compare(r.size() - 3, 3, ".py") == 0 ? python({r}) : cpp({r}));
    python(d.reads);
    for (const auto& m : t.python.env_modules) alts.insert(patternRegex(m + ".py"));
  }
  for (const auto& c : chains) python(c.files);
  // layergate's own configuration, read whatever the layout.
  for (const char* p : {".layergate.toml", "pyproject.toml"}) alts.insert(patternRegex(p));
  // A path pattern whose file name is already an alternative of its own adds nothing.
  std::string out;
  for (const auto& a : alts) {
    auto slash = a.rfind('/');
    if (slash != std::string::npos && a.find("[^/]") == std::string::npos && alts.count(a.substr(slash + 1))) continue;
    out += (out.empty() ? "" : "|") + a;
  }
  return "(^|/)(" + out + ")$";
}

}  // namespace layergate::discover
