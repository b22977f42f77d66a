// Threads for independent work (--jobs N): one budget for the whole process,
// shared by the analyses of a scan and the parses inside each analysis, so
// that they fill the cores without oversubscribing them.
//
// The budget is N threads at once, the calling thread included. forEach never
// waits for a free thread: what it cannot hand out it runs on the caller, so
// nested calls cannot deadlock. A caller that has run out of calls to make
// and waits for its helpers lends its own place to the calls nested in them.
#pragma once

#include <cstddef>
#include <functional>

namespace layergate::jobs {

// The number of CPUs this process may run on (its affinity mask), at least 1.
unsigned available();

// The budget: n threads at once (1: everything on the calling thread). Before
// any forEach; default: available().
void setLimit(unsigned n);
unsigned limit();

// Calls f(0) .. f(n-1), each once, on the calling thread and on as many other
// threads as the budget has free; returns when every call has returned.
// Which thread runs which index is not fixed: the calls must be independent
// and keep their results per index. An exception from a call is rethrown
// here, after all have finished (that of the lowest index).
void forEach(std::size_t n, const std::function<void(std::size_t)>& f);

}  // namespace layergate::jobs
