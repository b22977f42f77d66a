#include "cli/Allocator.h"

#include <cstddef>

#ifdef LAYERGATE_JEMALLOC
// From <jemalloc/jemalloc.h>, whose declarations of malloc and free differ
// from glibc's in their exception specifications.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen);

// A run builds and drops many large structures on a few threads: a clang AST
// per parse, a Z3 context per solver, the Python frontend's module tables.
// On 4 KiB pages, first touches of fresh memory (tens of thousands of page
// faults) and TLB misses take a quarter of a run. jemalloc's settings, read at
// its first allocation (MALLOC_CONF in the environment still overrides them):
// - thp, metadata_thp: ask for transparent huge pages (madvise) on all of its
//   memory, data and metadata, where the system's THP mode is "madvise";
// - dirty_decay_ms, muzzy_decay_ms -1: never hand freed pages back, which
//   would split the huge pages (the process is short-lived);
// - narenas 1, tcache_max 1 MiB: one arena, so freed memory is reused by the
//   next parse on another thread; thread caches take the contention;
// - oversize_threshold 0: large blocks come from that arena too.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf =
    "thp:always,metadata_thp:always,dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1,tcache_max:1048576,"
    "oversize_threshold:0";
}
#else
#include <malloc.h>
#endif

namespace layergate::cli {

void setUpAllocator() {
#ifndef LAYERGATE_JEMALLOC
  // A freed block returned to the system comes back as thousands of page
  // faults (a Z3 context: about 4,000); kept in the heap, it is reused.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

std::string allocatorName() {
#ifdef LAYERGATE_JEMALLOC
  const char* version = nullptr;
  const char* thp = nullptr;
  std::size_t n = sizeof(const char*);
  if (mallctl("version", &version, &n, nullptr, 0) != 0 || !version) return "jemalloc";
  std::string v(version);  // "5.3.0-0-g54eaed1d...": the release
  std::string out = "jemalloc " + v.substr(0, v.find('-'));
  n = sizeof(const char*);
  if (mallctl("opt.thp", &thp, &n, nullptr, 0) == 0 && thp)
    out += std::string(" (transparent huge pages: ") + thp + ")";
  return out;
#else
  return "glibc malloc";
#endif
}

}  // namespace layergate::cli
