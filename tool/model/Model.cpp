#include "model/Model.h"

#include <map>
#include <set>

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

std::string cellsText(const std::vector<std::pair<std::int64_t, std::optional<bool>>>& cells) {
  std::map<std::int64_t, std::set<bool>> by_ws;
  for (const auto& [ws, nv] : cells) {
    auto& s = by_ws[ws];
    if (nv) s.insert(*nv);
    else s.insert({false, true});
  }
  std::vector<std::int64_t> any, pcie, nvlink;
  for (const auto& [ws, nvs] : by_ws) (nvs.size() == 2 ? any : nvs.count(true) ? nvlink : pcie).push_back(ws);
  std::string out;
  auto part = [&](const std::vector<std::int64_t>& ws, const char* tail) {
    if (ws.empty()) return;
    std::string list;
    for (auto w : ws) list += (list.empty() ? "" : ", ") + std::to_string(w);
    out += (out.empty() ? "" : " and ") + std::string(ws.size() == 1 ? "world size " : "world sizes ") + list + tail;
  };
  part(any, "");
  part(pcie, " without NVLink");
  part(nvlink, " with NVLink");
  return out;
}

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
