#include "ops_dtypes.cuh"
LGOPS_DEFINE_ALLREDUCE(allreduce_bf16, __nv_bfloat16)
