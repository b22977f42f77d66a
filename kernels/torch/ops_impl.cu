// layergate_ops, torch-free half: ipc::IpcAllreduce behind plain calls.
// Builds without torch (CI compiles it, kernels/CMakeLists.txt); the kernels
// themselves are instantiated in ops_ar_*.cu.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "layergate_ipc.cuh"
#include "ops_api.h"
#include "ops_dtypes.cuh"

namespace lgops {
namespace {

using layergate::check_cuda;
namespace ipc = layergate::ipc;

ipc::IpcAllreduce& state(int64_t fa) {
  if (fa == 0) throw std::runtime_error("layergate_ops: null all-reduce handle");
  return *reinterpret_cast<ipc::IpcAllreduce*>(fa);
}

void* as_ptr(int64_t v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); }
int64_t as_int(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

// Handles opened through open_mem_handle, shared by every all-reduce object
// of the process (the gate opens its two shared buffers per peer).
struct Opened {
  std::mutex mu;
  std::map<std::string, void*> by_handle;
  std::map<void*, std::pair<std::string, int>> refs;  // base -> (handle, count)
};
Opened& opened() {
  static Opened o;
  return o;
}

}  // namespace

int64_t meta_size() { return static_cast<int64_t>(ipc::meta_bytes()); }
int64_t scratch_size(int64_t max_size) {
  return static_cast<int64_t>(layergate::CustomAllreduce::scratch_bytes(static_cast<size_t>(max_size)));
}
int64_t handle_size() { return static_cast<int64_t>(ipc::kHandleBytes); }

int64_t init_custom_ar(const std::vector<int64_t>& ptrs, int64_t rank, bool full_nvlink, int64_t max_size,
                       int64_t max_blocks, int64_t timeout_ms) {
  if (max_size <= 0) throw std::runtime_error("layergate_ops: max_size must be positive");
  std::vector<void*> regions;
  for (int64_t p : ptrs) regions.push_back(as_ptr(p));
  auto* s = new ipc::IpcAllreduce(static_cast<int>(rank), static_cast<int>(ptrs.size()), full_nvlink, regions,
                                  static_cast<size_t>(max_size), static_cast<int>(max_blocks),
                                  layergate::Thresholds::defaults(), timeout_ms);
  return as_int(s);
}

void register_buffer(int64_t fa, const std::vector<int64_t>& ptrs) {
  std::vector<void*> v;
  for (int64_t p : ptrs) v.push_back(as_ptr(p));
  state(fa).register_buffer(v);
}

void all_reduce(int64_t fa, DType dt, const void* in, void* out, int64_t numel, int64_t reg_buffer, int64_t reg_bytes,
                void* stream) {
  ipc::IpcAllreduce& s = state(fa);
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  const size_t es = dt == kF32 ? 4 : 2;
  const size_t bytes = static_cast<size_t>(numel) * es;
  if (numel <= 0 || numel > 0x7fffffff) throw std::runtime_error("layergate_ops: element count out of range");
  if (reg_buffer != 0) {
    if (bytes > static_cast<size_t>(reg_bytes))
      throw std::runtime_error("layergate_ops: input of " + std::to_string(bytes) + " bytes above the registered buffer's " +
                               std::to_string(reg_bytes));
    check_cuda(cudaMemcpyAsync(as_ptr(reg_buffer), in, bytes, cudaMemcpyDeviceToDevice, st), "copy into registered buffer");
    in = as_ptr(reg_buffer);
  }
  const int n = static_cast<int>(numel);
  switch (dt) {
    case kF32: allreduce_f32(s.dispatch(), st, in, out, n); break;
    case kF16: allreduce_f16(s.dispatch(), st, in, out, n); break;
    case kBF16: allreduce_bf16(s.dispatch(), st, in, out, n); break;
    default: throw std::runtime_error("layergate_ops: dtype not served (fp32, fp16, bf16)");
  }
}

void dispose(int64_t fa) {
  if (fa == 0) return;
  delete &state(fa);  // closes the handles it opened (register_graph_buffers)
}

void graph_buffer_meta(int64_t fa, std::string* handles, std::vector<int64_t>* offsets) {
  handles->clear();
  offsets->clear();
  for (const ipc::BufferRef& r : state(fa).graph_buffer_refs()) {
    handles->append(ipc::handle_bytes(r.handle));
    offsets->push_back(static_cast<int64_t>(r.offset));
  }
}

void register_graph_buffers(int64_t fa, const std::vector<std::string>& handles,
                            const std::vector<std::vector<int64_t>>& offsets) {
  ipc::IpcAllreduce& s = state(fa);
  if (static_cast<int>(handles.size()) != s.world_size() || offsets.size() != handles.size())
    throw std::runtime_error("layergate_ops: register_graph_buffers needs handles and offsets from every rank");
  std::vector<std::vector<ipc::BufferRef>> refs(handles.size());
  for (size_t p = 0; p < handles.size(); ++p) {
    if (handles[p].size() != offsets[p].size() * ipc::kHandleBytes)
      throw std::runtime_error("layergate_ops: rank " + std::to_string(p) + " sent " + std::to_string(handles[p].size()) +
                               " handle bytes for " + std::to_string(offsets[p].size()) + " offsets");
    for (size_t i = 0; i < offsets[p].size(); ++i) {
      ipc::BufferRef r;
      r.handle = ipc::handle_from_bytes(handles[p].data() + i * ipc::kHandleBytes, ipc::kHandleBytes);
      r.offset = static_cast<uint64_t>(offsets[p][i]);
      refs[p].push_back(r);
    }
  }
  s.register_graph_buffers(refs);
}

std::string last_algo(int64_t fa) { return layergate::algo_name(state(fa).dispatch().last_algo()); }
int64_t error(int64_t fa) { return static_cast<int64_t>(state(fa).dispatch().error()); }

int64_t allocate_shared_buffer(int64_t bytes, std::string* handle) {
  if (bytes <= 0) throw std::runtime_error("layergate_ops: shared buffer size must be positive");
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, static_cast<size_t>(bytes)), "cudaMalloc(shared buffer)");
  check_cuda(cudaMemset(p, 0, static_cast<size_t>(bytes)), "cudaMemset(shared buffer)");
  check_cuda(cudaDeviceSynchronize(), "zero shared buffer");
  cudaIpcMemHandle_t h;
  check_cuda(cudaIpcGetMemHandle(&h, p), "cudaIpcGetMemHandle");
  *handle = ipc::handle_bytes(h);
  return as_int(p);
}

void free_shared_buffer(int64_t ptr) {
  if (ptr) check_cuda(cudaFree(as_ptr(ptr)), "cudaFree(shared buffer)");
}

int64_t open_mem_handle(const std::string& handle) {
  const cudaIpcMemHandle_t h = ipc::handle_from_bytes(handle.data(), handle.size());
  Opened& o = opened();
  std::lock_guard<std::mutex> lock(o.mu);
  auto it = o.by_handle.find(handle);
  if (it != o.by_handle.end()) {
    o.refs[it->second].second++;
    return as_int(it->second);
  }
  void* base = nullptr;
  check_cuda(cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess),
             "cudaIpcOpenMemHandle (a process cannot open its own handle)");
  o.by_handle.emplace(handle, base);
  o.refs.emplace(base, std::make_pair(handle, 1));
  return as_int(base);
}

void close_mem_handle(int64_t ptr) {
  Opened& o = opened();
  std::lock_guard<std::mutex> lock(o.mu);
  auto it = o.refs.find(as_ptr(ptr));
  if (it == o.refs.end()) throw std::runtime_error("layergate_ops: close_mem_handle of a pointer not opened here");
  if (--it->second.second > 0) return;
  o.by_handle.erase(it->second.first);
  o.refs.erase(it);
  check_cuda(cudaIpcCloseMemHandle(as_ptr(ptr)), "cudaIpcCloseMemHandle");
}

}  // namespace lgops
