// layergate stub: the C entry points of tvm-ffi that kernel wrappers call.
#pragma once
#include <dlpack/dlpack.h>
#include <cstdint>

extern "C" {
typedef void* TVMFFIObjectHandle;
typedef void* TVMFFIStreamHandle;
int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out);
TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);
int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id, TVMFFIStreamHandle stream,
                       TVMFFIStreamHandle* opt_out_original_stream);
}
