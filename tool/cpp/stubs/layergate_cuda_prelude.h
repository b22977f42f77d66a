// layergate: force-included prelude for parsing CUDA sources in host mode
// without a CUDA SDK (-nocudainc). Declares just enough of the CUDA runtime
// (attribute macros, builtin variables, vector and half types, the runtime
// API used by host code) for Clang to build the AST of a dispatch header.
// Device function bodies are skipped by the frontend, so only signatures and
// types matter here.
#pragma once
#ifndef LAYERGATE_CUDA_PRELUDE_H
#define LAYERGATE_CUDA_PRELUDE_H

#define __LAYERGATE_STUB_CUDA__ 1
#ifndef CUDART_VERSION
#define CUDART_VERSION 12040
#endif
#ifndef CUDA_VERSION
#define CUDA_VERSION 12040
#endif
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 4
#endif

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define CUDART_CB

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---- vector types ---------------------------------------------------------
#define LG_VEC1(T, N) struct __attribute__((aligned(sizeof(T)))) N##1 { T x; };
#define LG_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; };
#define LG_VEC3(T, N) struct N##3 { T x, y, z; };
#define LG_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };
#define LG_VECS(T, N, A2, A4) LG_VEC1(T, N) LG_VEC2(T, N, A2) LG_VEC3(T, N) LG_VEC4(T, N, A4)
LG_VECS(char, char, 2, 4)
LG_VECS(unsigned char, uchar, 2, 4)
LG_VECS(short, short, 4, 8)
LG_VECS(unsigned short, ushort, 4, 8)
LG_VECS(int, int, 8, 16)
LG_VECS(long, long, 16, 16)
LG_VECS(unsigned long, ulong, 16, 16)
LG_VECS(long long, longlong, 16, 16)
LG_VECS(unsigned long long, ulonglong, 16, 16)
LG_VECS(float, float, 8, 16)
LG_VECS(double, double, 16, 16)
LG_VEC1(unsigned int, uint) LG_VEC2(unsigned int, uint, 8) LG_VEC4(unsigned int, uint, 16)
struct uint3 { unsigned int x, y, z; };
#undef LG_VEC1
#undef LG_VEC2
#undef LG_VEC3
#undef LG_VEC4
#undef LG_VECS

struct dim3 {
  unsigned int x, y, z;
  constexpr __host__ __device__ dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr __host__ __device__ dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

static inline __host__ __device__ float2 make_float2(float x, float y) { return float2{x, y}; }
static inline __host__ __device__ float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline __host__ __device__ int2 make_int2(int x, int y) { return int2{x, y}; }
static inline __host__ __device__ int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline __host__ __device__ uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline __host__ __device__ uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// ---- builtin variables (threadIdx, blockIdx, blockDim, gridDim, warpSize) --
#include <__clang_cuda_builtin_vars.h>

// ---- kernel launch support (<<<...>>> in CUDA mode needs this) ------------
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;
typedef cudaStream_t CUstream;
typedef cudaEvent_t CUevent;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0,
                                                cudaStream_t stream = 0);

// ---- runtime and driver API -----------------------------------------------
enum cudaError {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3, cudaErrorNotReady = 600,
  cudaErrorPeerAccessAlreadyEnabled = 704, cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;
enum cudaError_enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3 };
typedef enum cudaError_enum CUresult;
enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1, CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3, CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
};
typedef enum CUpointer_attribute_enum CUpointer_attribute;
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1, cudaStreamCaptureStatusInvalidated = 2
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76
};
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes { enum cudaMemoryType type; int device; void* devicePointer; void* hostPointer; };
#define cudaIpcMemLazyEnablePeerAccess 0x01
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaStreamNonBlocking 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define CUDA_IPC_HANDLE_SIZE 64
typedef struct cudaIpcMemHandle_st { char reserved[CUDA_IPC_HANDLE_SIZE]; } cudaIpcMemHandle_t;
typedef struct cudaIpcEventHandle_st { char reserved[CUDA_IPC_HANDLE_SIZE]; } cudaIpcEventHandle_t;
struct cudaDeviceProp { char name[256]; int major; int minor; int multiProcessorCount; size_t totalGlobalMem; int warpSize; };
enum cudaLaunchAttributeID {
  cudaLaunchAttributeCooperative = 2, cudaLaunchAttributeProgrammaticStreamSerialization = 6,
  cudaLaunchAttributeClusterDimension = 4, cudaLaunchAttributeProgrammaticEvent = 7
};
union cudaLaunchAttributeValue {
  int cooperative; unsigned programmaticStreamSerializationAllowed;
  struct { unsigned x, y, z; } clusterDim;
  char pad[64];
};
struct cudaLaunchAttribute { enum cudaLaunchAttributeID id; union cudaLaunchAttributeValue val; };
typedef struct cudaLaunchAttribute cudaLaunchAttribute_t;
struct cudaLaunchConfig_t { dim3 gridDim; dim3 blockDim; size_t dynamicSmemBytes; cudaStream_t stream; cudaLaunchAttribute* attrs; unsigned numAttrs; };

extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t);
const char* cudaGetErrorName(cudaError_t);
cudaError_t cudaGetDevice(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int);
cudaError_t cudaDeviceGetAttribute(int*, enum cudaDeviceAttr, int);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceCanAccessPeer(int*, int, int);
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int);
cudaError_t cudaMalloc(void**, size_t);
cudaError_t cudaMallocHost(void**, size_t);
cudaError_t cudaHostAlloc(void**, size_t, unsigned int);
cudaError_t cudaHostGetDevicePointer(void**, void*, unsigned int);
cudaError_t cudaFree(void*);
cudaError_t cudaFreeHost(void*);
cudaError_t cudaMemset(void*, int, size_t);
cudaError_t cudaMemsetAsync(void*, int, size_t, cudaStream_t stream);
cudaError_t cudaMemcpy(void*, const void*, size_t, enum cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t stream);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t*, void*);
cudaError_t cudaIpcOpenMemHandle(void**, cudaIpcMemHandle_t, unsigned int);
cudaError_t cudaIpcCloseMemHandle(void*);
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t*, cudaEvent_t);
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t*, cudaIpcEventHandle_t);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes*, const void*);
cudaError_t cudaStreamCreate(cudaStream_t*);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t*, unsigned int);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamIsCapturing(cudaStream_t, enum cudaStreamCaptureStatus*);
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode*);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned int);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaFuncSetAttribute(const void*, enum cudaFuncAttribute, int);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int*, const void*, int, size_t);
cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t cudaLaunchCooperativeKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t);
CUresult cuPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr);
CUresult cuGetErrorString(CUresult, const char**);
CUresult cuCtxGetCurrent(CUcontext*);
CUresult cuDeviceGet(CUdevice*, int);
}
template <typename T>
static inline cudaError_t cudaFuncSetAttribute(T* f, enum cudaFuncAttribute a, int v) {
  return cudaFuncSetAttribute((const void*)f, a, v);
}
template <typename T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, T f, int b, size_t s) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, (const void*)f, b, s);
}
template <typename... K, typename... A>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t*, void (*)(K...), A&&...) {
  return cudaSuccess;
}

// ---- device intrinsics (declarations only; bodies are skipped) -------------
extern "C" __device__ void __syncthreads(void);
extern "C" __device__ int __syncthreads_count(int);
extern "C" __device__ int __syncthreads_and(int);
extern "C" __device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
extern "C" __device__ void __threadfence(void);
extern "C" __device__ void __threadfence_block(void);
extern "C" __device__ void __threadfence_system(void);
extern "C" __device__ void __nanosleep(unsigned);
extern "C" __device__ long long clock64(void);
__device__ int atomicAdd(int*, int);
__device__ unsigned atomicAdd(unsigned*, unsigned);
__device__ unsigned long long atomicAdd(unsigned long long*, unsigned long long);
__device__ float atomicAdd(float*, float);
__device__ int atomicSub(int*, int);
__device__ unsigned atomicSub(unsigned*, unsigned);
__device__ int atomicExch(int*, int);
__device__ unsigned atomicExch(unsigned*, unsigned);
__device__ int atomicCAS(int*, int, int);
__device__ unsigned atomicCAS(unsigned*, unsigned, unsigned);
__device__ unsigned long long atomicCAS(unsigned long long*, unsigned long long, unsigned long long);
__device__ int atomicMax(int*, int);
__device__ int atomicMin(int*, int);
__device__ unsigned atomicInc(unsigned*, unsigned);
__device__ int atomicAnd(int*, int);
__device__ int atomicOr(int*, int);
template <typename T> __device__ T __shfl_sync(unsigned, T, int, int w = 32);
template <typename T> __device__ T __shfl_xor_sync(unsigned, T, int, int w = 32);
template <typename T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int w = 32);
template <typename T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int w = 32);
template <typename T> __device__ T __ldg(const T*);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ unsigned __activemask(void);

#include "cuda/layergate_half_types.h"

#endif  // LAYERGATE_CUDA_PRELUDE_H
