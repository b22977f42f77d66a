// layergate_ops: the torch-free half of the extension (ops_impl.cu, built by
// nvcc) as plain C++ calls, so that the binding file (layergate_ops.cpp,
// built by the host compiler against torch) includes no CUDA kernel code.
// `fa` is an ipc::IpcAllreduce* as an integer, as the upstream ops hand it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lgops {

enum DType { kF32 = 0, kF16 = 1, kBF16 = 2 };

int64_t meta_size();
int64_t scratch_size(int64_t max_size);
int64_t handle_size();

// ptrs[p]: rank p's region (meta_size() + scratch_size(max_size) bytes) as
// this process addresses it.
int64_t init_custom_ar(const std::vector<int64_t>& ptrs, int64_t rank, bool full_nvlink, int64_t max_size,
                       int64_t max_blocks, int64_t timeout_ms);
void register_buffer(int64_t fa, const std::vector<int64_t>& ptrs);
// reg_buffer != 0: copy `in` there first (a registered buffer of at least
// reg_bytes), so that pull kernels read it in place.
void all_reduce(int64_t fa, DType dt, const void* in, void* out, int64_t numel, int64_t reg_buffer, int64_t reg_bytes,
                void* stream);
void dispose(int64_t fa);
// Handles (kHandleBytes each, concatenated) and offsets of the inputs
// captured unregistered since the last register_graph_buffers.
void graph_buffer_meta(int64_t fa, std::string* handles, std::vector<int64_t>* offsets);
// handles[p]: rank p's concatenated handles, offsets[p] its offsets.
void register_graph_buffers(int64_t fa, const std::vector<std::string>& handles,
                            const std::vector<std::vector<int64_t>>& offsets);
std::string last_algo(int64_t fa);
int64_t error(int64_t fa);

// Shared buffers: cudaMalloc'd and zeroed; the handle to send to peers.
int64_t allocate_shared_buffer(int64_t bytes, std::string* handle);
void free_shared_buffer(int64_t ptr);
// Opens a peer's handle (once per handle in this process; later opens of the
// same handle count references) and close_mem_handle drops one reference.
int64_t open_mem_handle(const std::string& handle);
void close_mem_handle(int64_t ptr);

}  // namespace lgops
