// layergate stub: tvm-ffi's Tensor (owning) and TensorView (borrowed), with
// the accessors kernel wrappers use. Declarations only.
#pragma once
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/object.h>
#include <cstdint>
#include <optional>

namespace tvm {
namespace ffi {

class TensorView;

class Tensor : public ObjectRef {
 public:
  Tensor() = default;
  void* data_ptr() const;
  DLDevice device() const;
  DLDataType dtype() const;
  int32_t ndim() const;
  int32_t dim() const;
  ShapeView shape() const;
  ShapeView strides() const;
  int64_t size(int64_t i) const;
  int64_t stride(int64_t i) const;
  int64_t numel() const;
  uint64_t byte_offset() const;
  bool IsContiguous() const;
  bool is_contiguous() const;
  const DLTensor* GetDLTensorPtr() const;
  template <typename Alloc, typename... Args>
  static Tensor FromEnvAlloc(Alloc alloc, ShapeView shape, DLDataType dtype, DLDevice device, Args&&... args);
  template <typename Alloc, typename... Args>
  static Tensor FromNDAlloc(Alloc alloc, ShapeView shape, DLDataType dtype, DLDevice device, Args&&... args);
  static Tensor FromDLPack(DLManagedTensor* tensor, size_t require_alignment = 0, bool require_contiguous = false);
  DLManagedTensor* ToDLPack() const;
};

class TensorView {
 public:
  TensorView() = default;
  TensorView(const Tensor& t);
  TensorView(const DLTensor* t);
  void* data_ptr() const;
  DLDevice device() const;
  DLDataType dtype() const;
  int32_t ndim() const;
  int32_t dim() const;
  ShapeView shape() const;
  ShapeView strides() const;
  int64_t size(int64_t i) const;
  int64_t stride(int64_t i) const;
  int64_t numel() const;
  uint64_t byte_offset() const;
  bool IsContiguous() const;
  bool is_contiguous() const;
  const DLTensor* operator->() const;
};

}  // namespace ffi
}  // namespace tvm
