// The tvm-ffi objects a JIT entry takes, read from the header set, so that the
// entry harness (EntryHarness.h) can build them the way the Python side does.
// SGLang's CustomAllReduceV2 (2026-07 on) calls
// AllReduceKernel<T, kWorldSize, kUsePDL>::run(CommunicatorRef, Tensor,
// std::string algo, std::variant<TensorView, bool>): the CommunicatorRef holds
// a CommunicatorObj whose constructor takes every rank's workspaces as
// TensorViews and checks their shapes with TensorMatcher({2 * world_size,
// push_bytes}) over symbolic sizes named like the values the gate hands down.
//
// Takes: the texts of the dispatch header and of the files around it (its
// includes, its directory). Returns: for an ObjectRef type, its object class,
// that class's constructor parameters and, per tensor parameter, the shape and
// element type its constructor checks. Like HeaderScan.h, a reading of the
// text: nvcc has the last word when the harness is compiled.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "selftest/Harness.h"

namespace layergate::selftest {

struct SourceText {
  std::string path, text;
};

// A tensor parameter's shape as its constructor checks it.
struct FfiShape {
  std::vector<std::string> dims;  // as written: "2 * world_size", "push_bytes"
  std::string elem_type;          // with_dtype<uint8_t>: "uint8_t" ("" when not said)
};

struct FfiObject {
  std::string ref, obj;                  // "CommunicatorRef", "CommunicatorObj"
  std::vector<std::string> namespaces;   // around the object class, outermost first
  std::vector<std::string> ref_namespaces;  // around the reference type
  std::vector<HeaderParam> ctor;         // the object's constructor's parameters
  std::string definition;                // the file defining the constructor out of the class ("" if inline)
  std::map<std::string, FfiShape> shapes;          // ctor parameter -> shape
  std::map<std::string, std::string> symbolic;     // local of a symbolic size -> its name
};

// tvm-ffi's Tensor / TensorView (qualified or not).
bool isFfiTensor(const std::string& base_type);

// The object an ObjectRef type holds (TVM_FFI_DEFINE_OBJECT_REF_METHODS*(Ref,
// Parent, Obj)), with its constructor; nullopt when ref_type is none.
std::optional<FfiObject> findFfiObject(const std::vector<SourceText>& sources, const std::string& ref_type);

}  // namespace layergate::selftest
