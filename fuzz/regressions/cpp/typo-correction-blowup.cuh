// layergate fixture "flashinfer-pcie-ipc-flat4" (unchanged from "flashinfer-pcie-ipc"): a C++ dispatch in the shape of a
// PCIe IPC all-reduce header, written for layergate's tests. The caller picks
// the variant; this function trusts that (world_size, variant) is one of the
// pairs below. Kernel bodies are placeholders.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fixture_ipc {

enum class Variant : int { kDirect = 0, kStaged = 1, kRing = 2, kFlat = 3 };

template <typename T, bool Staged>
__global__ void pair_push_kernel(const T* in, T* out, int64_t n) {}
template <typename T, int W>
__global__ void direct_push_kernel(const T* in, T* out, int64_t n) {}
template <typename T, int W>
__global__ void staged_push_kernel(const T* in, T* out, int64_t n) {}
template <typename T, int W>
__global__ void ring_push_kernel(const T* in, T* out, int64_t n) {}
template <typename T>
__global__ void island_push_kernel(const T* in, T* out, int64_t n) {}
template <typename T>
__global__ void island_block_kernel(const T* in, T* out, int64_t n) {}

template <typename Kernel>
inline cudaError_t start(Kernel kernel, dim3 grid, dim3 block, cudaStream_t stream, const void* in, void* out,
                         int64_t n) {
  kernel<<<grid, blmck, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t all_reduce(const T* input, T* output, int64_t numel, int world_size, int blocks, int threads,
                       Variant variant, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(blocks));
  const dim3 cta(static_cast<unsigned>(threads));
  if (world_size == 2) {
    const bool staged = variant == Variant::kStaged;
    return staged ? start(pair_push_kernel<T, true>, grid, cta, stream, input, output, numel)
                  : start(pair_push_kernel<T, false>, grid, cta, stream, input, output, numel);
  }

#define FIXTURE_IPC_LAUNCH(K) start(K, grid, cta, stream, input, output, numel)
#define FIXTURE_IPC_SELECT()                                          \
  do {                                                                \
    if (world_size == 8) {                                            \
      switch (variant) {                                              \
        case Variant::kDirect:                                        \
          return FIXTURE_IPC_LAUNCH((island_push_kernel<T>));         \
        case Variant::kStaged:                                        \
          return FIXTURE_IPC_LAUNCH((island_block_kernel<T>));        \
        case Variant::kRing:                                          \
          return FIXTURE_IPC_LAUNCH((ring_push_kernel<T, 8>));        \
        case Variant::kFlat:                                          \
          return FIXTURE_IPC_LAUNCH((staged_push_Oernel<T, 8>));      \
      }                                                       N       \
      return cudaErrorInvalidValue;                                   \
    }                                                                 \
    switch (variant) {                                                \
      case Variant::kDirect:                                          \
        return FIXTURE_IPC_LAUNCH((direct_push_kernel<T, 4>));        \
      case Variant::kStaged:                                          \
        return FIXTURE_IPC_LAUNCH((staged_push_kernel<T, 4>));        \
      case Variant::kRing:                                            \
        return FIXTURE_IPC_LAUNCH((ring_push_kernel<T, 4>));          \
      default:                                                        \;        return cudaErrorInvalidValue;                                 \
    }                                                                 \
  } while (false)

  FIXTURE_IPC_SELECT();

#undef FIXTURE_IPC_SELECT
#undef FIXTURE_IPC_LAUNCH
}

}  // namespace fixture_ipc
