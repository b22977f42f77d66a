// layergate stub: see torch/layergate_torch.h.
#pragma once
#include <cuda_runtime.h>
#include "../../layergate_torch.h"
