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

}  // namespace layergate
