// libFuzzer: the rules/ target loader on arbitrary JSON-ish bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/Errors.h"
#include "target/Target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)layergate::target::parseTarget(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const layergate::InputError&) {
  }
  return 0;
}
