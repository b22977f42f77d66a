#include "jobs/Trace.h"

#include <llvm/Support/TimeProfiler.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>

namespace layergate::trace {
namespace {

std::atomic<bool> g_on{false};
std::atomic<unsigned> g_granularity{500};

}  // namespace

void start(unsigned granularity_us) {
  g_granularity = granularity_us;
  g_on = true;
  threadBegin();
}

void threadBegin() {
  if (g_on && !llvm::getTimeTraceProfilerInstance()) llvm::timeTraceProfilerInitialize(g_granularity, "layergate");
}

void threadEnd() {
  if (g_on && llvm::getTimeTraceProfilerInstance()) llvm::timeTraceProfilerFinishThread();
}

bool finish(const std::string& path, std::string* error) {
  if (!g_on) return true;
  std::error_code ec;
  bool ok = true;
  {
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      ok = false;
    } else {
      llvm::timeTraceProfilerWrite(os);
      os.close();
      if (os.has_error()) {
        ec = os.error();
        os.clear_error();
        ok = false;
      }
    }
  }
  llvm::timeTraceProfilerCleanup();
  g_on = false;
  if (!ok && error) *error = ec.message();
  return ok;
}

Scope::Scope(const char* name, const std::string& detail) : active_(llvm::timeTraceProfilerEnabled()) {
  if (active_) llvm::timeTraceProfilerBegin(name, detail);
}

Scope::~Scope() {
  if (active_) llvm::timeTraceProfilerEnd();
}

}  // namespace layergate::trace
