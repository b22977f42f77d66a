// Runs the layergate binary for end-to-end tests: exit status, stdout and
// stderr, under a time limit so that a hang fails the test, not the CI job.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lgtest {

namespace fs = std::filesystem;

struct CliRun {
  int status = -1;  // exit status; -1 when killed by a signal
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// args are passed to the shell as they are (quote paths with quote()).
// timeout(1) exits 124 when the limit is hit. wrapper: words put before the
// binary ("setpriv ..."), run under the time limit with it.
inline CliRun runProgram(const std::string& binary, const std::string& args, const fs::path& cwd, int seconds = 120,
                         const std::string& wrapper = "") {
  fs::path dir = fs::temp_directory_path() / ("lg_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string cmd = "cd " + quote(cwd.string()) + " && timeout " + std::to_string(seconds) + " " + wrapper +
                    quote(binary) + " " + args + " >" + quote((dir / "out").string()) + " 2>" +
                    quote((dir / "err").string()) + " </dev/null";
  int st = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}

#ifdef LAYERGATE_BINARY
inline CliRun runCli(const std::string& args, const fs::path& cwd, int seconds = 120, const std::string& wrapper = "") {
  return runProgram(LAYERGATE_BINARY, args, cwd, seconds, wrapper);
}
#endif

inline int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace lgtest
