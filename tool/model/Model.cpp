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

std::string assumptionInWords(const std::string& name, const OpaqueSymbol* o, const std::string& value) {
  std::string at = o && o->where.valid() ? o->where.file + ":" + std::to_string(o->where.line) : "";
  const bool yes = value == "true", boolean = yes || value == "false";
  if (name.rfind("loop@L", 0) == 0 && boolean) {
    std::string header = name.substr(name.find(": ") == std::string::npos ? name.size() : name.find(": ") + 2);
    return "the loop `" + header + "`" + (at.empty() ? "" : " at " + at) + (yes ? " runs" : " does not run");
  }
  if (name.rfind("try@L", 0) == 0 && boolean)
    return "the try block" + (at.empty() ? "" : " at " + at) + (yes ? " completes" : " raises");
  std::string text = o && !o->text.empty() ? o->text : name;
  if (!o) return text + (boolean ? " is " + value : " = " + value);
  return "`" + text + "`" + (boolean ? " is " + value : " = " + value) + (at.empty() ? "" : " (" + at + ")");
}

}  // namespace layergate::model
