// layergate stub of <hip/hip_bf16.h>: HIP's bfloat16 types as the CUDA stubs' ones.
#pragma once
#include <cuda_bf16.h>
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;
