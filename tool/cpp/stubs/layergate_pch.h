// layergate: the prefix that is precompiled once (a PCH in the user's cache
// directory) and loaded lazily for every parse: the CUDA prelude and the
// standard headers that dispatch headers include. Their include guards are in
// the PCH, so a source's own #include of them costs almost nothing.
#pragma once
#include "layergate_cuda_prelude.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
