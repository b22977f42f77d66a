// Errors that end a run with exit status 2 and a one-line reason.
#pragma once

#include <stdexcept>
#include <string>

namespace layergate {

// Bad usage or bad input: missing file, binary, not Python, no target class...
// what() is the whole one-line message, starting with the file when there is one.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& msg) : std::runtime_error(msg) {}
};

// The end of a message that hits an analysis limit a user can raise: the
// flag and the configuration key of that limit (config::limitKeys), as
// "(raise with --max-depth or `max-depth` in .layergate.toml)". Every limit a
// run can hit says how to raise it, so that a CI user need not read the code.
inline std::string limitHint(const std::string& key) {
  return "(raise with --" + key + " or `" + key + "` in .layergate.toml)";
}

}  // namespace layergate
