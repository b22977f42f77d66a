// layergate stub: tvm-ffi's data type helpers over DLDataType.
#pragma once
#include <dlpack/dlpack.h>
#include <ostream>
#include <string>

namespace tvm {
namespace ffi {
std::string DLDataTypeToString(DLDataType dtype);
DLDataType StringToDLDataType(const std::string& str);
}  // namespace ffi
}  // namespace tvm

inline bool operator==(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(const DLDataType& a, const DLDataType& b) { return !(a == b); }
std::ostream& operator<<(std::ostream& os, DLDataType dtype);
