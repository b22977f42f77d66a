// Child processes with a deadline: how the self-test runs the CUDA programs
// (the kernels' runner and bench, nvcc, a generated harness) without ever
// hanging itself. The layergate binary stays free of CUDA: all GPU work
// happens in these children.
//
// Takes: an argv and a deadline. Returns: exit status, merged stdout+stderr,
// whether the deadline killed it (the whole process group: SIGTERM, then
// SIGKILL after a second).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace layergate::selftest {

struct ChildResult {
  bool started = false;   // false: exec failed (error says why)
  int exit_code = -1;     // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string output;     // stdout and stderr, interleaved as written
  std::string error;
};

// on_line: called with each complete output line as it arrives (progress).
ChildResult runChild(const std::vector<std::string>& argv, double timeout_s,
                     const std::function<void(const std::string&)>& on_line = {},
                     const std::vector<std::pair<std::string, std::string>>& env = {});

// The last non-empty line of a child's output (for "hang after: ...").
std::string lastLine(const std::string& output);

// A word for a shell command line: quoted when it holds more than the
// characters paths usually hold.
std::string shellWord(const std::string& s);

}  // namespace layergate::selftest
