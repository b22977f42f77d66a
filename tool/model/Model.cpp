#include "model/Model.h"

namespace layergate::model {

ExprPtr Dispatch::launchCondition() const {
  std::vector<ExprPtr> xs;
  for (const auto& l : leaves)
    if (l.kind == LeafKind::Launch) xs.push_back(l.condition);
  return OrAll(xs);
}

ExprPtr Dispatch::throwCondition() const {
  std::vector<ExprPtr> xs;
  for (const auto& l : leaves)
    if (l.kind == LeafKind::Throw) xs.push_back(l.condition);
  return OrAll(xs);
}

const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

const char* fixSafetyName(FixSafety s) { return s == FixSafety::Safe ? "safe" : "unsafe"; }

}  // namespace layergate::model
