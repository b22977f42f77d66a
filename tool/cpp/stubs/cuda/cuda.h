// layergate stub: the declarations live in the force-included prelude.
#pragma once
#include "../layergate_cuda_prelude.h"
