// layergate stub: half, bfloat16 and fp8 types (layout and names only).
#pragma once
#ifndef LAYERGATE_HALF_TYPES_H
#define LAYERGATE_HALF_TYPES_H

struct __attribute__((aligned(2))) __half {
  unsigned short __x;
  __half() = default;
  __host__ __device__ __half(float);
  __host__ __device__ __half(double);
  __host__ __device__ __half(int);
  __host__ __device__ operator float() const;
};
struct __attribute__((aligned(4))) __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
struct __attribute__((aligned(2))) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __host__ __device__ __nv_bfloat16(float);
  __host__ __device__ __nv_bfloat16(double);
  __host__ __device__ __nv_bfloat16(int);
  __host__ __device__ operator float() const;
};
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
typedef __nv_bfloat16 __bfloat16;
struct __nv_fp8_e4m3 { unsigned char __x; __nv_fp8_e4m3() = default; __host__ __device__ explicit __nv_fp8_e4m3(float); __host__ __device__ operator float() const; };
struct __nv_fp8_e5m2 { unsigned char __x; __nv_fp8_e5m2() = default; __host__ __device__ explicit __nv_fp8_e5m2(float); __host__ __device__ operator float() const; };
struct __nv_fp8x2_e4m3 { unsigned short __x; };
struct __nv_fp8x2_e5m2 { unsigned short __x; };
struct __nv_fp8x4_e4m3 { unsigned int __x; };
struct __nv_fp8x4_e5m2 { unsigned int __x; };
typedef unsigned char __nv_fp8_storage_t;

__host__ __device__ float __half2float(__half);
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ __half2 __halves2half2(__half, __half);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ float2 __bfloat1622float2(__nv_bfloat162);
__host__ __device__ __nv_bfloat162 __float22bfloat162_rn(float2);
__device__ __half __hadd(__half, __half);
__device__ __half2 __hadd2(__half2, __half2);
__device__ __half __hmul(__half, __half);
__device__ __half2 __hmul2(__half2, __half2);
__device__ __nv_bfloat16 __hadd(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat162 __hadd2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat16 __hmul(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat162 __hmul2(__nv_bfloat162, __nv_bfloat162);

#endif
