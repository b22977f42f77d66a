// layergate stub: tvm-ffi's environment API (stream and allocator lookups).
#pragma once
#include <tvm/ffi/c_api.h>
