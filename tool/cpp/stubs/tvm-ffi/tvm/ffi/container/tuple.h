// layergate stub: tvm-ffi's Tuple container.
#pragma once
#include <tvm/ffi/object.h>
#include <tuple>

namespace tvm {
namespace ffi {
template <typename... T>
class Tuple : public ObjectRef {
 public:
  Tuple() = default;
  Tuple(T... values);
  template <size_t I>
  auto get() const -> std::tuple_element_t<I, std::tuple<T...>>;
};
}  // namespace ffi
}  // namespace tvm
