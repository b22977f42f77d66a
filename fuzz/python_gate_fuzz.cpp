// libFuzzer: the Python frontend and gate extraction on arbitrary bytes.
// InputError is the expected answer to bad input; anything else (a crash, a
// sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "model/Errors.h"
#include "python/PythonFrontend.h"
#include "target/Target.h"

static const layergate::target::Target& target(const char* name) {
  static std::map<std::string, layergate::target::Target> ts;
  auto it = ts.find(name);
  if (it == ts.end())
    it = ts.emplace(name, layergate::target::loadTarget(layergate::target::defaultRulesDir() + "/targets/" + name + ".json"))
             .first;
  return it->second;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  layergate::python::SourceFile f{"fuzz.py", std::string(reinterpret_cast<const char*>(data), size)};
  // A class gate with its selection function, a policy gate, a class gate
  // that hands a value down.
  for (const char* t : {"custom-allreduce", "flashinfer-pcie-ipc", "quick-allreduce"}) {
    try {
      auto gate = layergate::python::extractGate(f, target(t).python);
      (void)gate.predicate()->str().size();
    } catch (const layergate::InputError&) {
    }
  }
  try {
    auto sel = layergate::python::extractSelection({f}, target("custom-allreduce").python);
    if (sel)
      for (const auto& a : sel->arms) (void)a.condition->str().size();
  } catch (const layergate::InputError&) {
  }
  return 0;
}
