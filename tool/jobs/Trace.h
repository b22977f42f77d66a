// Where a run's time goes (check --time-trace FILE): a Chrome trace (open it
// in Perfetto or chrome://tracing), one track per thread, built on LLVM's
// time-trace profiler so that clang's own phases (the precompiled prelude,
// each class parsed and template instantiated) sit inside layergate's.
//
// Off unless start() was called: a Scope then costs one thread-local read.
#pragma once

#include <string>

namespace layergate::trace {

// Turns the profiler on for this thread and for every thread the job budget
// starts from now on. Events shorter than granularity_us are left out.
void start(unsigned granularity_us = 500);

// Writes what was recorded to path and turns the profiler off. A file that
// cannot be written: false, with the reason in *error.
bool finish(const std::string& path, std::string* error);

// The per-thread set-up: what a thread runs first and last (the budget's
// threads do it themselves; another thread calls these).
void threadBegin();
void threadEnd();

// One event: from construction to destruction on this thread.
class Scope {
 public:
  explicit Scope(const char* name, const std::string& detail = {});
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool active_;
};

}  // namespace layergate::trace
