// layergate stub: HIP builds are not analysed; CUDA declarations stand in.
#pragma once
#include "../../layergate_cuda_prelude.h"
