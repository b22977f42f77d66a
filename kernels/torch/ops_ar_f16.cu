#include "ops_dtypes.cuh"
LGOPS_DEFINE_ALLREDUCE(allreduce_f16, __half)
