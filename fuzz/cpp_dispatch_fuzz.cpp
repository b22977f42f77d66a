// libFuzzer: the C++ frontend (Clang parse + dispatch walk) on mutated
// headers. Each input is written to a file because the frontend parses files.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "cpp/CppFrontend.h"
#include "model/Errors.h"
#include "target/Target.h"

static const layergate::target::Target& target() {
  static const layergate::target::Target t =
      layergate::target::loadTarget(layergate::target::defaultRulesDir() + "/targets/custom-allreduce.json");
  return t;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/layergate_fuzz_" + std::to_string(getpid()) + ".cuh";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    auto d = layergate::cpp::extractDispatch({path}, target().cpp);
    (void)d.leaves.size();
  } catch (const layergate::InputError&) {
  }
  return 0;
}
