// What git ignores under a scanned directory (see GitIgnored.h): git's own
// reading of the ignore files, one `git ls-files` call per scan, rather than
// a second implementation of their syntax (negations, anchors, nesting).
#include "cli/GitIgnored.h"

#include "selftest/Process.h"

namespace layergate::driver {

std::set<std::string> gitIgnored(const std::string& root) {
  // --directory: an ignored folder is one entry ("build-cuda/"), not its
  // files, so that a large ignored tree costs nothing to list.
  auto r = selftest::runChild({"git", "-C", root, "-c", "core.quotePath=false", "ls-files", "-z", "--others",
                               "--ignored", "--exclude-standard", "--directory"},
                              60.0);
  std::set<std::string> out;
  if (!r.started || r.timed_out || r.exit_code != 0) return out;  // not a checkout: the built-in skips
  // stdout and stderr come interleaved: entries are NUL-terminated, and a
  // warning line that landed before one is dropped from it.
  std::size_t at = 0;
  while (at < r.output.size()) {
    std::size_t end = r.output.find('\0', at);
    if (end == std::string::npos) break;  // an unterminated tail: a message, not an entry
    std::string p = r.output.substr(at, end - at);
    at = end + 1;
    if (auto nl = p.rfind('\n'); nl != std::string::npos) p.erase(0, nl + 1);
    if (p == "./") return {};  // the root itself is ignored: scan it as asked
    if (!p.empty()) out.insert(p);
  }
  return out;
}

}  // namespace layergate::driver
