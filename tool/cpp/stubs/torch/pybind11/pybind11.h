// layergate stub: see torch/layergate_torch.h.
#pragma once
#include <cuda_runtime.h>
#include "../torch/layergate_torch.h"
