// layergate stub of <hip/hip_runtime.h>: the HIP runtime names a ROCm dispatch
// header uses on the host (types, memory and IPC calls, the launch macro),
// mapped onto the CUDA prelude. The analysis needs declarations and launches,
// never behaviour; device intrinsics stay undeclared (their bodies are not read).
#pragma once

#include <cuda_runtime.h>

// What the real header brings along and dispatch headers rely on.
#include <cassert>
#include <cstdint>
#include <cstdio>

typedef cudaStream_t hipStream_t;
typedef cudaError_t hipError_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaIpcMemHandle_t hipIpcMemHandle_t;
typedef cudaIpcEventHandle_t hipIpcEventHandle_t;
typedef cudaDeviceProp hipDeviceProp_t;
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipDeviceMallocUncached 0x3
#define hipDeviceMallocFinegrained 0x1

extern "C" {
hipError_t hipMalloc(void** p, size_t n);
hipError_t hipExtMallocWithFlags(void** p, size_t n, unsigned flags);
hipError_t hipFree(void* p);
hipError_t hipMemcpy(void* d, const void* s, size_t n, enum cudaMemcpyKind k);
hipError_t hipMemcpyAsync(void* d, const void* s, size_t n, enum cudaMemcpyKind k, hipStream_t st);
hipError_t hipMemset(void* p, int v, size_t n);
hipError_t hipMemsetAsync(void* p, int v, size_t n, hipStream_t st);
hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t* h, void* p);
hipError_t hipIpcOpenMemHandle(void** p, hipIpcMemHandle_t h, unsigned flags);
hipError_t hipIpcCloseMemHandle(void* p);
hipError_t hipDeviceSynchronize(void);
hipError_t hipStreamSynchronize(hipStream_t st);
hipError_t hipGetLastError(void);
hipError_t hipPeekAtLastError(void);
hipError_t hipGetDevice(int* d);
hipError_t hipSetDevice(int d);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d);
const char* hipGetErrorString(hipError_t e);
}

// HIP's host-side min/max (the global ones HIP declares).
template <typename T, typename U>
static inline auto min(T a, U b) -> decltype(a < b ? a : b) { return a < b ? a : b; }
template <typename T, typename U>
static inline auto max(T a, U b) -> decltype(a < b ? b : a) { return a < b ? b : a; }

// HIP's typed overloads of the allocation calls.
template <typename T>
static inline hipError_t hipMalloc(T** p, size_t n) { return hipMalloc((void**)p, n); }
template <typename T>
static inline hipError_t hipExtMallocWithFlags(T** p, size_t n, unsigned f) { return hipExtMallocWithFlags((void**)p, n, f); }
template <typename T>
static inline hipError_t hipIpcOpenMemHandle(T** p, hipIpcMemHandle_t h, unsigned f) {
  return hipIpcOpenMemHandle((void**)p, h, f);
}

// A macro in HIP; a function here, so that a launch is a call the dispatch
// walker knows by name (as cudaLaunchKernel).
template <typename K, typename... A>
static inline void hipLaunchKernelGGL(K kernel, dim3 grid, dim3 block, unsigned shared, hipStream_t stream, A&&... args) {}
