#pragma once
// The memory allocator the layergate executable runs on, and its settings.

#include <string>

namespace layergate::cli {

// Sets up the allocator before the first large allocation (glibc's malloc:
// keep freed blocks rather than return them to the system).
void setUpAllocator();

// "jemalloc 5.3.0 (transparent huge pages: always)" or "glibc malloc": a line
// of --version.
std::string allocatorName();

}  // namespace layergate::cli
