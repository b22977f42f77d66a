// layergate stub: tvm-ffi's reference-counted Object and ObjectRef, and the
// macros that declare object types and their references.
#pragma once
#include <tvm/ffi/c_api.h>
#include <cstdint>
#include <utility>

namespace tvm {
namespace ffi {

class Object {
 public:
  Object() = default;
  static constexpr const char* _type_key = "ffi.Object";
  static constexpr bool _type_final = false;
  static constexpr bool _type_mutable = false;
  int32_t type_index() const { return type_index_; }

 protected:
  int32_t type_index_ = 0;
};

template <typename T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  T* ptr_ = nullptr;
};

template <typename T, typename... Args>
ObjectPtr<T> make_object(Args&&... args);

class ObjectRef {
 public:
  ObjectRef() = default;
  explicit ObjectRef(ObjectPtr<Object> data) : data_(data) {}
  const Object* get() const { return data_.get(); }
  const Object* operator->() const { return data_.get(); }
  bool defined() const { return data_.get() != nullptr; }
  template <typename T>
  const T* as() const;

 protected:
  ObjectPtr<Object> data_;
};

}  // namespace ffi
}  // namespace tvm

#define TVM_FFI_DECLARE_OBJECT_INFO(TypeKey, TypeName, ParentType) \
  static constexpr const char* _type_key = TypeKey;                \
  using _type_parent = ParentType
#define TVM_FFI_DECLARE_OBJECT_INFO_FINAL(TypeKey, TypeName, ParentType) \
  static constexpr const char* _type_key = TypeKey;                      \
  static constexpr bool _type_final = true;                              \
  using _type_parent = ParentType
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(TypeName, ParentType, ObjectName)              \
  TypeName() = default;                                                                          \
  explicit TypeName(::tvm::ffi::ObjectPtr<::tvm::ffi::Object> n) : ParentType(n) {}             \
  const ObjectName* get() const { return static_cast<const ObjectName*>(data_.get()); }         \
  const ObjectName* operator->() const { return get(); }                                         \
  using ContainerType = ObjectName
#define TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(TypeName, ParentType, ObjectName)           \
  explicit TypeName(::tvm::ffi::ObjectPtr<::tvm::ffi::Object> n) : ParentType(n) {}             \
  const ObjectName* get() const { return static_cast<const ObjectName*>(data_.get()); }         \
  const ObjectName* operator->() const { return get(); }                                         \
  using ContainerType = ObjectName
#define TVM_FFI_DEFINE_MUTABLE_OBJECT_REF_METHODS(TypeName, ParentType, ObjectName)              \
  TypeName() = default;                                                                          \
  explicit TypeName(::tvm::ffi::ObjectPtr<::tvm::ffi::Object> n) : ParentType(n) {}             \
  ObjectName* get() const { return static_cast<ObjectName*>(const_cast<::tvm::ffi::Object*>(data_.get())); } \
  ObjectName* operator->() const { return get(); }                                               \
  using ContainerType = ObjectName
