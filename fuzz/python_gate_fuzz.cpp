// libFuzzer: the Python frontend and gate extraction on arbitrary bytes.
// InputError is the expected answer to bad input; anything else (a crash, a
// sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/Errors.h"
#include "python/PythonFrontend.h"
#include "target/Target.h"

static const layergate::target::Target& target() {
  static const layergate::target::Target t =
      layergate::target::loadTarget(layergate::target::defaultRulesDir() + "/targets/custom-allreduce.json");
  return t;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  layergate::python::SourceFile f{"fuzz.py", std::string(reinterpret_cast<const char*>(data), size)};
  try {
    auto gate = layergate::python::extractGate(f, target().python);
    (void)gate.predicate()->str().size();
  } catch (const layergate::InputError&) {
  }
  return 0;
}
