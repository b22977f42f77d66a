// The three all-reduce instantiations, one translation unit each
// (ops_ar_f32.cu, ops_ar_f16.cu, ops_ar_bf16.cu) so that they compile in
// parallel.
#pragma once
#include <cuda_runtime.h>

#include "layergate_allreduce.cuh"

namespace lgops {
void allreduce_f32(layergate::CustomAllreduce& ar, cudaStream_t s, const void* in, void* out, int n);
void allreduce_f16(layergate::CustomAllreduce& ar, cudaStream_t s, const void* in, void* out, int n);
void allreduce_bf16(layergate::CustomAllreduce& ar, cudaStream_t s, const void* in, void* out, int n);
}  // namespace lgops

#define LGOPS_DEFINE_ALLREDUCE(NAME, T)                                                          \
  void lgops::NAME(layergate::CustomAllreduce& ar, cudaStream_t s, const void* in, void* out, int n) { \
    ar.allreduce<T>(s, static_cast<T*>(const_cast<void*>(in)), static_cast<T*>(out), n);          \
  }
