// layergate stub: tvm-ffi's STL conversions (std::string, std::vector,
// std::variant, std::optional arguments); nothing to declare for parsing.
#pragma once
#include <tvm/ffi/container/tensor.h>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>
