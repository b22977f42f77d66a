// layergate: CUDA 13 no longer ships this header, which the clang CUDA
// runtime wrapper includes; an empty shim lets parsing go on.
#pragma once
