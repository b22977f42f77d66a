#include "selftest/Process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace layergate::selftest {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string lastLine(const std::string& output) {
  size_t end = output.size();
  while (end > 0) {
    while (end > 0 && (output[end - 1] == '\n' || output[end - 1] == '\r' || output[end - 1] == ' ')) --end;
    if (end == 0) break;
    size_t start = output.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    return output.substr(start, end - start);
  }
  return {};
}

ChildResult runChild(const std::vector<std::string>& argv, double timeout_s,
                     const std::function<void(const std::string&)>& on_line,
                     const std::vector<std::pair<std::string, std::string>>& env) {
  ChildResult r;
  if (argv.empty()) {
    r.error = "empty command";
    return r;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  // A second pipe, closed on exec, tells the parent whether exec worked.
  int exec_fds[2];
  if (pipe2(exec_fds, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  const double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {fds[0], fds[1], exec_fds[0], exec_fds[1]}) close(fd);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so the deadline kills grandchildren too
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    close(exec_fds[0]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    int e = errno;
    (void)!write(exec_fds[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  close(exec_fds[1]);
  int exec_errno = 0;
  if (read(exec_fds[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close(exec_fds[0]);
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    r.error = argv[0] + ": " + std::strerror(exec_errno);
    return r;
  }
  close(exec_fds[0]);
  r.started = true;

  std::string pending;
  auto feed = [&](const char* buf, ssize_t n) {
    r.output.append(buf, static_cast<size_t>(n));
    if (!on_line) return;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      on_line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  };
  const double deadline = t0 + timeout_s;
  bool open = true;
  char buf[8192];
  while (open) {
    const double left = deadline - now_s();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min(left, 0.5) * 1000) + 1);
    if (pr < 0 && errno != EINTR) break;
    if (pr > 0) {
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0) feed(buf, n);
      else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open = false;
    }
  }
  int status = 0;
  if (r.timed_out) {
    kill(-pid, SIGTERM);
    const double grace = now_s() + 1.0;
    bool gone = false;
    while (now_s() < grace) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        gone = true;
        break;
      }
      usleep(20000);
    }
    if (!gone) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    // Drain what was written before the kill.
    int fl = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) feed(buf, n);
  } else {
    waitpid(pid, &status, 0);
  }
  close(fds[0]);
  if (on_line && !pending.empty()) on_line(pending);
  r.seconds = now_s() - t0;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (r.timed_out) r.exit_code = -1;
  return r;
}

std::string shellWord(const std::string& s) {
  bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-' || c == '+' ||
           c == '=';
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace layergate::selftest
