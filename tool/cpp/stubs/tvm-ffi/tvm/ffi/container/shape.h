// layergate stub: tvm-ffi's Shape and ShapeView (a span of int64_t).
#pragma once
#include <tvm/ffi/object.h>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace tvm {
namespace ffi {

class ShapeView {
 public:
  ShapeView() = default;
  ShapeView(const int64_t* data, size_t size) : data_(data), size_(size) {}
  ShapeView(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t Product() const;

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class Shape : public ObjectRef {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> l);
  explicit Shape(std::vector<int64_t> v);
  const int64_t* data() const;
  size_t size() const;
  int64_t operator[](size_t i) const;
  const int64_t* begin() const;
  const int64_t* end() const;
  operator ShapeView() const;
};

}  // namespace ffi
}  // namespace tvm
