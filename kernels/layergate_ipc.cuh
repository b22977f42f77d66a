// layergate reference all-reduce: multi-process use through CUDA IPC.
//
// One process per rank (per GPU, or several per GPU). Each rank allocates
// one "region" (its Signal, then its scratch) with allocate_region(),
// exports it with export_buffer(), and sends the BufferRef (a 64-byte
// cudaIpcMemHandle_t plus an offset) to every peer by any means (the torch
// gate uses torch.distributed). Each rank then builds an IpcAllreduce from
// the peers' refs: their regions are opened with cudaIpcOpenMemHandle and
// fed to the same CustomAllreduce that the raw-pointer mode uses. Nothing in
// the kernels changes; kernels/README.md ("Multi-process use") gives the
// memory-ordering argument.
//
// A process cannot open its own handle: the rank's own entries are always
// its local pointers. Buffers inside a larger allocation (a torch caching
// allocator segment) are exported as (handle of the allocation, offset), the
// allocation found with the driver's cuMemGetAddressRange; a peer opens the
// allocation once, however many buffers it holds, and every mapping it
// opened is closed by dispose() (or the destructor).
//
// Torch-free: kernels/torch/ wraps this for Python; CI compiles it through
// test/allreduce_check.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "layergate_allreduce.cuh"

namespace layergate {
namespace ipc {

// Where a buffer lives, in a form another process can open.
struct BufferRef {
  cudaIpcMemHandle_t handle;  // of the whole allocation
  uint64_t offset;            // of the buffer inside it
};
constexpr size_t kHandleBytes = sizeof(cudaIpcMemHandle_t);

// The allocation that holds `p` (device memory from cudaMalloc or a caching
// allocator built on it). Uses the driver's cuMemGetAddressRange through the
// runtime's entry-point lookup, so no -lcuda is needed.
inline void allocation_range(const void* p, uintptr_t* base, size_t* size) {
  // CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p), CUdeviceptr = 64-bit.
  using Fn = int (*)(unsigned long long*, size_t*, unsigned long long);
  static const Fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuMemGetAddressRange", &f, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !f)
      throw std::runtime_error("layergate: cuMemGetAddressRange not found in the CUDA driver");
    return reinterpret_cast<Fn>(f);
  }();
  unsigned long long b = 0;
  size_t n = 0;
  const int r = fn(&b, &n, reinterpret_cast<unsigned long long>(p));
  if (r != 0)
    throw std::runtime_error("layergate: cuMemGetAddressRange failed (error " + std::to_string(r) +
                             "): the buffer is not device memory this process allocated");
  *base = static_cast<uintptr_t>(b);
  if (size) *size = n;
}

// Exports the allocation holding `p` and p's offset in it. Device memory
// only: mapped host memory and virtual-memory-management allocations (e.g.
// torch's expandable segments) have no cudaIpcMemHandle.
inline BufferRef export_buffer(const void* p) {
  uintptr_t base = 0;
  allocation_range(p, &base, nullptr);
  BufferRef r{};
  check_cuda(cudaIpcGetMemHandle(&r.handle, reinterpret_cast<void*>(base)), "cudaIpcGetMemHandle");
  r.offset = reinterpret_cast<uintptr_t>(p) - base;
  return r;
}

// Flat forms for sending through anything that moves bytes or integers.
inline std::string handle_bytes(const cudaIpcMemHandle_t& h) {
  return std::string(reinterpret_cast<const char*>(&h), kHandleBytes);
}
inline cudaIpcMemHandle_t handle_from_bytes(const void* data, size_t n) {
  if (n != kHandleBytes)
    throw std::runtime_error("layergate: an IPC handle has " + std::to_string(kHandleBytes) + " bytes, got " +
                             std::to_string(n));
  cudaIpcMemHandle_t h;
  std::memcpy(&h, data, kHandleBytes);
  return h;
}

// The peers' allocations this process has opened, each once; all closed by
// close_all() or the destructor (on the device current at that time: call
// it on the device they were opened on).
class PeerMappings {
 public:
  PeerMappings() = default;
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;
  ~PeerMappings() { close_all(); }

  void* open(const cudaIpcMemHandle_t& h) {
    const std::string key = handle_bytes(h);
    auto it = bases_.find(key);
    if (it != bases_.end()) return it->second;
    void* base = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess),
               "cudaIpcOpenMemHandle (a process cannot open its own handle)");
    bases_.emplace(key, base);
    return base;
  }
  void* open(const BufferRef& r) { return static_cast<char*>(open(r.handle)) + r.offset; }

  // Returns the first error met (all are attempted).
  cudaError_t close_all() noexcept {
    cudaError_t first = cudaSuccess;
    for (auto& kv : bases_) {
      const cudaError_t e = cudaIpcCloseMemHandle(kv.second);
      if (e != cudaSuccess && first == cudaSuccess) first = e;
    }
    bases_.clear();
    return first;
  }
  size_t size() const { return bases_.size(); }

 private:
  std::map<std::string, void*> bases_;
};

// One rank's region: [Signal, rounded to 256 B][scratch_bytes(max_bytes)].
inline size_t meta_bytes() { return CustomAllreduce::round_up(sizeof(Signal)); }
inline size_t region_bytes(size_t max_bytes) { return meta_bytes() + CustomAllreduce::scratch_bytes(max_bytes); }
inline RankBuffers buffers_in_region(void* region) {
  return RankBuffers{static_cast<Signal*>(region), static_cast<char*>(region) + meta_bytes()};
}
// cudaMalloc'd (so exportable) and zeroed where it must be. Free with cudaFree.
inline void* allocate_region(size_t max_bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, region_bytes(max_bytes)), "cudaMalloc(rank region)");
  CustomAllreduce::reset_rank_buffers(buffers_in_region(p), max_bytes);
  return p;
}

// CustomAllreduce over regions and buffers of other processes.
class IpcAllreduce {
 public:
  // Pointer form: regions[p] is rank p's region as this process addresses it
  // (regions[rank] the local one; peers' opened by the caller, who keeps
  // them open while this object lives).
  IpcAllreduce(int rank, int world_size, bool full_nvlink, const std::vector<void*>& regions, size_t max_bytes,
               int max_blocks, Thresholds table = Thresholds::defaults(), int64_t timeout_ms = 10000)
      : rank_(rank), world_size_(world_size) {
    if (static_cast<int>(regions.size()) != world_size)
      throw std::runtime_error("layergate: need one region per rank");
    if (rank < 0 || rank >= world_size) throw std::runtime_error("layergate: rank out of range");
    check_region(regions[rank], max_bytes);
    std::vector<RankBuffers> b(world_size);
    for (int p = 0; p < world_size; ++p) b[p] = buffers_in_region(regions[p]);
    ar_.reset(reinterpret_cast<CustomAllreduce*>(
        init_custom_ar(b, nullptr, rank, full_nvlink, max_bytes, max_blocks, timeout_ms, table)));
    ar_->enable_graph_registration();
  }

  // Handle form: opens every peer's region from refs[p] (refs[rank] unused).
  static std::unique_ptr<IpcAllreduce> open(int rank, int world_size, bool full_nvlink, void* local_region,
                                            const std::vector<BufferRef>& refs, size_t max_bytes, int max_blocks,
                                            Thresholds table = Thresholds::defaults(),
                                            int64_t timeout_ms = 10000) {
    if (static_cast<int>(refs.size()) != world_size) throw std::runtime_error("layergate: need one ref per rank");
    auto maps = std::make_unique<PeerMappings>();
    std::vector<void*> regions(world_size);
    for (int p = 0; p < world_size; ++p) regions[p] = p == rank ? local_region : maps->open(refs[p]);
    std::unique_ptr<IpcAllreduce> r(
        new IpcAllreduce(rank, world_size, full_nvlink, regions, max_bytes, max_blocks, table, timeout_ms));
    r->maps_ = std::move(maps);
    return r;
  }

  IpcAllreduce(const IpcAllreduce&) = delete;
  IpcAllreduce& operator=(const IpcAllreduce&) = delete;
  ~IpcAllreduce() { dispose(); }

  CustomAllreduce& dispatch() {
    if (!ar_) throw std::runtime_error("layergate: all-reduce used after dispose");
    return *ar_;
  }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // ptrs[p]: rank p's copy of a buffer as this process addresses it.
  void register_buffer(const std::vector<void*>& ptrs) {
    if (static_cast<int>(ptrs.size()) != world_size_) throw std::runtime_error("layergate: need one pointer per rank");
    dispatch().register_buffer(ptrs[rank_], ptrs.data());
  }
  // refs[p]: rank p's copy, opened here (refs[rank] unused).
  void register_buffer(void* local, const std::vector<BufferRef>& refs) {
    if (static_cast<int>(refs.size()) != world_size_) throw std::runtime_error("layergate: need one ref per rank");
    std::vector<void*> ptrs(world_size_);
    for (int p = 0; p < world_size_; ++p) ptrs[p] = p == rank_ ? local : maps().open(refs[p]);
    dispatch().register_buffer(local, ptrs.data());
  }

  // After graph capture: the inputs captured unregistered, exported in order.
  std::vector<BufferRef> graph_buffer_refs() {
    std::vector<BufferRef> out;
    for (const void* p : dispatch().graph_pending()) out.push_back(export_buffer(p));
    return out;
  }
  // refs[p][i]: rank p's graph_buffer_refs()[i] (refs[rank] unused). Opens
  // the peers' allocations and binds the captured calls' sources.
  void register_graph_buffers(const std::vector<std::vector<BufferRef>>& refs) {
    const auto& pending = dispatch().graph_pending();
    if (static_cast<int>(refs.size()) != world_size_) throw std::runtime_error("layergate: need refs from every rank");
    for (int p = 0; p < world_size_; ++p)
      if (p != rank_ && refs[p].size() != pending.size())
        throw std::runtime_error("layergate: rank " + std::to_string(p) + " captured " +
                                 std::to_string(refs[p].size()) + " unregistered buffers, this rank " +
                                 std::to_string(pending.size()));
    std::vector<RankPtrs> bound(pending.size());
    for (size_t i = 0; i < pending.size(); ++i)
      for (int p = 0; p < world_size_; ++p)
        bound[i].p[p] = p == rank_ ? const_cast<void*>(pending[i]) : maps().open(refs[p][i]);
    dispatch().bind_graph_buffers(bound);
  }

  // Destroys the dispatch and closes every mapping this object opened. No
  // call may be in flight (synchronize first); idempotent.
  void dispose() {
    ar_.reset();
    if (maps_) maps_->close_all();
  }

 private:
  PeerMappings& maps() {
    if (!maps_) maps_ = std::make_unique<PeerMappings>();
    return *maps_;
  }
  // A region smaller than region_bytes() would be overrun by the kernels:
  // refuse it (only checkable for device memory; mapped host memory passes).
  static void check_region(void* local, size_t max_bytes) {
    uintptr_t base = 0;
    size_t size = 0;
    try {
      allocation_range(local, &base, &size);
    } catch (const std::runtime_error&) {
      return;
    }
    const uintptr_t end = reinterpret_cast<uintptr_t>(local) + region_bytes(max_bytes);
    if (end > base + size)
      throw std::runtime_error("layergate: the rank region has " + std::to_string(base + size - reinterpret_cast<uintptr_t>(local)) +
                               " bytes, max_bytes " + std::to_string(max_bytes) + " needs " +
                               std::to_string(region_bytes(max_bytes)) + " (meta_bytes + scratch_bytes)");
  }

  int rank_;
  int world_size_;
  std::unique_ptr<CustomAllreduce> ar_;
  std::unique_ptr<PeerMappings> maps_;
};

}  // namespace ipc
}  // namespace layergate
