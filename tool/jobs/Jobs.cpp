#include "jobs/Jobs.h"

#include "jobs/Trace.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <locale>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace layergate::jobs {
namespace {

// Threads handed out beyond the callers' own.
struct Budget {
  std::mutex m;
  unsigned limit = 0;  // 0: not set yet (available())
  unsigned lent = 0;
};

Budget& budget() {
  static Budget b;
  return b;
}

unsigned take(unsigned want) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.m);
  unsigned total = b.limit ? b.limit : available();
  unsigned spare = total > 1 + b.lent ? total - 1 - b.lent : 0;
  unsigned got = std::min(want, spare);
  b.lent += got;
  return got;
}

void give(unsigned n) {
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
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  unsigned extra = n > 1 ? take(static_cast<unsigned>(std::min<std::size_t>(n - 1, 1024))) : 0;
  if (extra > 0) {
    static const bool filled = (fillNarrowCache(), true);
    (void)filled;
  }
  std::vector<std::thread> threads;
  threads.reserve(extra);
  // Each extra thread goes back to the budget as soon as it runs out of
  // work, for the other callers (a long analysis's parses) to take.
  try {
    for (unsigned t = 0; t < extra; ++t)
      threads.emplace_back([&] {
        trace::threadBegin();
        work();
        trace::threadEnd();
        give(1);
      });
  } catch (const std::system_error&) {  // no more threads: the caller does the rest
    give(extra - static_cast<unsigned>(threads.size()));
  }
  work();
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace layergate::jobs
