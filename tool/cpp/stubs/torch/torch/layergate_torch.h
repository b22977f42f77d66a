// layergate stub: a small slice of the PyTorch C++ API (types and the names
// that op entry points and bindings use), enough for Clang to parse a .cu
// entry file or a .cuh that includes torch headers. No behaviour.
#pragma once
#ifndef LAYERGATE_TORCH_H
#define LAYERGATE_TORCH_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace c10 {
enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool = 11, BFloat16 = 15, Float8_e5m2 = 23, Float8_e4m3fn = 24, Undefined };
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
enum class DispatchKey : int8_t { CPU, CUDA, Meta, CompositeExplicitAutograd, CompositeImplicitAutograd, Autograd };
using DeviceIndex = int8_t;
struct Device {
  Device(DeviceType t = DeviceType::CPU, DeviceIndex i = -1) : type_(t), index_(i) {}
  DeviceType type() const { return type_; }
  DeviceIndex index() const { return index_; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  DeviceType type_;
  DeviceIndex index_;
};
struct Half { uint16_t x; };
struct BFloat16 { uint16_t x; };
struct Float8_e4m3fn { uint8_t x; };
struct Float8_e5m2 { uint8_t x; };
template <typename T> using optional = std::optional<T>;
template <typename T> struct ArrayRef {
  ArrayRef() = default;
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data_ = nullptr;
  size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
  // TORCH_CHECK's message parts, the first string literal first.
  template <typename... A> explicit Error(const char* what, A&&...) : std::runtime_error(what) {}
};
struct TensorOptions {
  TensorOptions dtype(ScalarType) const { return *this; }
  TensorOptions device(Device) const { return *this; }
  TensorOptions requires_grad(bool) const { return *this; }
};
struct Storage {
  void* data() const;
  size_t nbytes() const;
};
class Tensor {
 public:
  void* data_ptr() const;
  template <typename T> T* data_ptr() const;
  void* mutable_data_ptr() const;
  const void* const_data_ptr() const;
  template <typename T> T* mutable_data_ptr() const;
  template <typename T> const T* const_data_ptr() const;
  int64_t numel() const;
  int64_t element_size() const;
  int64_t nbytes() const;
  int64_t dim() const;
  int64_t size(int64_t) const;
  IntArrayRef sizes() const;
  int64_t stride(int64_t) const;
  IntArrayRef strides() const;
  int64_t storage_offset() const;
  bool is_contiguous() const;
  bool is_cuda() const;
  bool defined() const;
  ScalarType scalar_type() const;
  ScalarType dtype() const;
  Device device() const;
  TensorOptions options() const;
  Storage storage() const;
  Tensor contiguous() const;
  Tensor view(IntArrayRef) const;
  Tensor to(ScalarType) const;
  Tensor& copy_(const Tensor&, bool non_blocking = false);
  Tensor& zero_();
};
// The device a tensor is on (ATen's device_of, found by argument lookup).
Device device_of(const Tensor&);
struct DeviceGuard { explicit DeviceGuard(Device); };
}  // namespace c10

namespace at {
using c10::ScalarType;
using c10::Device;
using c10::DeviceType;
using c10::IntArrayRef;
using c10::TensorOptions;
using c10::Half;
using c10::BFloat16;
using c10::Tensor;
using c10::DeviceGuard;
using c10::optional;
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kUInt8 = ScalarType::Byte;
constexpr ScalarType kInt64 = ScalarType::Long;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kCPU = DeviceType::CPU;
Tensor empty(IntArrayRef, TensorOptions = {});
Tensor zeros(IntArrayRef, TensorOptions = {});
Tensor empty_like(const Tensor&);
Tensor from_blob(void*, IntArrayRef, TensorOptions = {});
namespace cuda {
struct CUDAStream {
  operator cudaStream_t() const;
  cudaStream_t stream() const;
};
CUDAStream getCurrentCUDAStream(c10::DeviceIndex = -1);
CUDAStream getStreamFromPool(bool = false, c10::DeviceIndex = -1);
cudaDeviceProp* getCurrentDeviceProperties();
struct OptionalCUDAGuard { explicit OptionalCUDAGuard(c10::Device); OptionalCUDAGuard(); };
struct CUDAGuard { explicit CUDAGuard(c10::Device); explicit CUDAGuard(c10::DeviceIndex); };
c10::DeviceIndex current_device();
}  // namespace cuda
}  // namespace at

namespace c10 { namespace cuda {
using at::cuda::CUDAStream;
using at::cuda::getCurrentCUDAStream;
using at::cuda::CUDAGuard;
using at::cuda::OptionalCUDAGuard;
using at::cuda::current_device;
}}  // namespace c10::cuda

namespace torch {
using at::Tensor;
using c10::ScalarType;
using c10::Device;
using c10::IntArrayRef;
using c10::optional;
using namespace at;
using fptr_t = int64_t;
// Op registration: m.def("name(schema) -> ret"), m.def("name", &fn),
// m.impl("name", torch::kCUDA, &fn), m.impl("name", &fn).
struct Library {
  enum Kind { DEF, IMPL, FRAGMENT };
  template <typename... A> Library& def(A&&...) { return *this; }
  template <typename... A> Library& impl(A&&...) { return *this; }
};
struct CppFunction {};
template <typename F> CppFunction dispatch(c10::DeviceType, F&&) { return {}; }
template <typename F> CppFunction dispatch(c10::DispatchKey, F&&) { return {}; }
namespace stable {
using Tensor = ::c10::Tensor;
namespace detail { using StableLibrary = ::torch::Library; }
}  // namespace stable
}  // namespace torch

// The global fptr_t of the entry files is theirs (int64_t today, uint64_t in
// early vLLM): not declared here, so that either spelling parses cleanly.

// A small slice of pybind11: PYBIND11_MODULE(name, m) { m.def("op", &fn, "doc"); }
namespace pybind11 {
struct handle {};
struct object : handle {};
struct arg {
  explicit arg(const char*) {}
  template <typename T> arg& operator=(T&&) { return *this; }
};
struct module_ : object {
  template <typename... A> module_& def(A&&...) { return *this; }
  module_ def_submodule(const char*, const char* = nullptr) { return *this; }
};
using module = module_;
template <typename... A> struct init {};
template <typename T, typename... O> struct class_ : object {
  template <typename... A> explicit class_(A&&...) {}
  template <typename... A> class_& def(A&&...) { return *this; }
};
}  // namespace pybind11

// The message (when given) is the thrown error's first string, as a report
// quotes it; else the condition's text.
#define TORCH_CHECK(cond, ...) \
  do { if (!(cond)) throw ::c10::Error(__VA_ARGS__ __VA_OPT__(,) #cond); } while (0)
#define TORCH_CHECK_EQ(a, b) TORCH_CHECK((a) == (b))
#define TORCH_CHECK_LE(a, b) TORCH_CHECK((a) <= (b))
#define TORCH_CHECK_GE(a, b) TORCH_CHECK((a) >= (b))
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) TORCH_CHECK(cond)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond)
#define TORCH_WARN(...) do { } while (0)
#define AT_ERROR(...) throw ::c10::Error("AT_ERROR")
#define C10_CUDA_CHECK(expr) do { cudaError_t __err = (expr); (void)__err; } while (0)
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() do { } while (0)
// Registration blocks: each becomes a uniquely named static function taking
// the library object, so that its body (the def/impl calls) is parsed. The
// library name is never pasted: vLLM passes CONCAT(TORCH_EXTENSION_NAME, _x).
#define LAYERGATE_CAT2_(a, b) a##b
#define LAYERGATE_CAT_(a, b) LAYERGATE_CAT2_(a, b)
#define LAYERGATE_UID_(prefix) LAYERGATE_CAT_(prefix, __COUNTER__)
#define TORCH_LIBRARY(ns, m) static void LAYERGATE_UID_(layergate_torch_library_)(::torch::Library& m)
#define TORCH_LIBRARY_FRAGMENT(ns, m) static void LAYERGATE_UID_(layergate_torch_fragment_)(::torch::Library& m)
#define TORCH_LIBRARY_IMPL(ns, k, m) static void LAYERGATE_UID_(layergate_torch_impl_)(::torch::Library& m)
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)
#define STABLE_TORCH_LIBRARY(ns, m) static void LAYERGATE_UID_(layergate_stable_library_)(::torch::stable::detail::StableLibrary& m)
#define STABLE_TORCH_LIBRARY_FRAGMENT(ns, m) static void LAYERGATE_UID_(layergate_stable_fragment_)(::torch::stable::detail::StableLibrary& m)
#define STABLE_TORCH_LIBRARY_IMPL(ns, k, m) static void LAYERGATE_UID_(layergate_stable_impl_)(::torch::stable::detail::StableLibrary& m)
#define TORCH_BOX(f) (f)
#define TORCH_FN(f) (f)
#define REGISTER_EXTENSION(NAME)
#define PYBIND11_MODULE(name, m, ...) static void LAYERGATE_UID_(layergate_pybind_)(::pybind11::module_& m)
#define STD_TORCH_CHECK(cond, ...) TORCH_CHECK(cond)
#define AT_DISPATCH_FLOATING_TYPES_AND2(a, b, type, name, ...) [&] { using scalar_t = float; return __VA_ARGS__(); }()
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(type, name, ...) [&] { using scalar_t = float; return __VA_ARGS__(); }()
#define AT_DISPATCH_FLOATING_TYPES(type, name, ...) [&] { using scalar_t = float; return __VA_ARGS__(); }()

#endif  // LAYERGATE_TORCH_H
