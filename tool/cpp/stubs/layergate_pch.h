// layergate: the prefix that is precompiled once (a PCH in the user's cache
// directory) and loaded lazily for every parse: the CUDA prelude and the
// standard headers that dispatch headers include. Their include guards are in
// the PCH, so a source's own #include of them costs almost nothing.
#pragma once
#include "layergate_cuda_prelude.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <ostream>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>
// C++20's (empty in a C++17 parse): the JIT kernels' headers include them.
#include <concepts>
#include <ranges>
#include <source_location>
#include <span>
#include <version>
