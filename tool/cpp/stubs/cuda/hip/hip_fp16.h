// layergate stub of <hip/hip_fp16.h>: HIP's half types as the CUDA stubs' ones.
#pragma once
#include <cuda_fp16.h>
