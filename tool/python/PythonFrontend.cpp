// Python frontend: symbolic execution of the gate class with state merging.
//
// The walker runs once over each statement of the constructor and of the
// per-call method (and of the helpers they call), carrying one merged state:
// at an `if` both branches are walked and their variables joined with Ite on
// the branch condition, so the formulas grow with the code, not with the
// number of paths. Values keep Python's meaning (truthiness, None, strings
// from the environment); whatever the walker does not understand becomes an
// opaque symbol named after its source text, created only when a condition
// actually uses it.
#include "python/PythonFrontend.h"

#include "python/Walker.h"

namespace layergate::python {

model::Gate extractGate(const std::vector<SourceFile>& files, const target::PythonGateSpec& spec,
                        const Limits& limits) {
  detail::Walker w(files, spec, limits);
  return w.run();
}

model::Gate extractGate(const SourceFile& file, const target::PythonGateSpec& spec, const Limits& limits) {
  return extractGate(std::vector<SourceFile>{file}, spec, limits);
}

}  // namespace layergate::python
