// The selection layer in vLLM's shape, read from the syntax (model::
// SelectionChain): in the first given file that defines one of `classes` with
// one of `methods`, each `if` of the method's body (in order, `elif`s
// included) whose branch returns is an arm; the attribute its guard tests
// (`self.X`, or a local bound to `self.X` before), the method the guard calls
// on it, and the classes that attribute holds: its annotation
// (`self.X: Cls | None`), the classes constructed into it (`self.X = Cls(...)`),
// and, for `self.X = f()(...)` with f one of `selection_functions`, a note that
// f chooses (the scan adds f's classes).
//
// Takes: source files, the names. Returns: nullopt when no file has the
// method; never throws on odd code (an arm it cannot read is kept with its
// text and no attribute).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/Model.h"
#include "python/PythonFrontend.h"

namespace layergate::python {

std::optional<model::SelectionChain> extractChain(const std::vector<SourceFile>& files,
                                                  const std::vector<std::string>& classes,
                                                  const std::vector<std::string>& methods,
                                                  const std::vector<std::string>& selection_functions);

}  // namespace layergate::python
