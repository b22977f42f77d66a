#include "jobs/Jobs.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <locale>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "jobs/Trace.h"

namespace layergate::jobs {
namespace {

// Threads handed out beyond the callers' own. A caller waiting for its
// helpers gives its own place back while it waits (lent may then go below
// zero), so that the work nested in those helpers can use it.
struct Budget {
  std::mutex m;
  unsigned limit = 0;  // 0: not set yet (available())
  long lent = 0;
};

Budget& budget() {
  static Budget b;
  return b;
}

unsigned take(unsigned want) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.m);
  long total = b.limit ? b.limit : available();
  long spare = std::max(0L, total - 1 - b.lent);
  unsigned got = static_cast<unsigned>(std::min<long>(want, spare));
  b.lent += got;
  return got;
}

void give(long n) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.m);
  b.lent -= n;
}

// libstdc++ fills std::ctype<char>'s narrow() cache on the first use of each
// character, unsynchronised, and std::regex goes through it when it compiles
// a pattern, on whatever thread does. Filled once, before the first thread
// is started, it is only read afterwards.
void fillNarrowCache() {
  const auto& ct = std::use_facet<std::ctype<char>>(std::locale());
  for (int c = 0; c < 256; ++c) ct.narrow(static_cast<char>(c), '\0');
}

}  // namespace

unsigned available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void setLimit(unsigned n) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.m);
  b.limit = std::max(1u, n);
}

unsigned limit() {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.m);
  return b.limit ? b.limit : available();
}

void forEach(std::size_t n, const std::function<void(std::size_t)>& f) {
  if (n == 0) return;
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto run = [&](std::size_t i) {
    try {
      f(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  // Helpers, only ever started by the caller: each goes back to the budget
  // as soon as it runs out of calls, for the other callers (a long
  // analysis's parses) to take.
  auto hire = [&](unsigned k) {
    if (k == 0) return;
    static const bool filled = (fillNarrowCache(), true);
    (void)filled;
    for (unsigned t = 0; t < k; ++t) {
      try {
        threads.emplace_back([&] {
          trace::threadBegin();
          for (std::size_t i = next++; i < n; i = next++) run(i);
          trace::threadEnd();
          give(1);
        });
      } catch (const std::system_error&) {  // no more threads: the caller does the rest
        give(k - t);
        return;
      }
    }
  };
  hire(n > 1 ? take(static_cast<unsigned>(std::min<std::size_t>(n - 1, 1024))) : 0);
  for (std::size_t i = next++; i < n; i = next++) {
    // A place freed since (another caller waiting, a helper elsewhere done):
    // a helper for the calls not begun yet.
    if (next.load() < n && threads.size() < n - 1) hire(take(1));
    run(i);
  }
  // Nothing left to hand out: while the helpers finish their last calls, the
  // caller's place is theirs (an analysis waiting for its C++ side lets that
  // side's parses run side by side).
  if (!threads.empty()) {
    give(1);
    for (auto& t : threads) t.join();
    give(-1);
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace layergate::jobs
