// The safe fix: a guard in the Python gate built from the gap cells.
#include "fix/Fix.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace layergate::fix {
namespace {

bool fixable(const model::Finding& f) {
  return (f.rule == "LG001" || f.rule == "LG002") && !f.suppressed && f.config.world_size.has_value();
}

std::string tuple(const std::vector<std::int64_t>& ws, const std::string& expr) {
  if (ws.size() == 1) return fmt::format("{} == {}", expr, ws[0]);
  std::string s;
  for (auto w : ws) s += (s.empty() ? "" : ", ") + std::to_string(w);
  return fmt::format("{} in ({})", expr, s);
}

std::string list(const std::vector<std::int64_t>& ws) {
  std::string s;
  for (std::size_t i = 0; i < ws.size(); ++i)
    s += (i == 0 ? "" : i + 1 == ws.size() ? " and " : ", ") + std::to_string(ws[i]);
  return s;
}

}  // namespace

std::string guardCondition(const std::vector<std::pair<std::int64_t, std::optional<bool>>>& cells,
                           const std::string& world_size, const std::string& full_nvlink) {
  std::map<std::int64_t, std::set<bool>> by_ws;
  for (const auto& [ws, nv] : cells) {
    if (nv) by_ws[ws].insert(*nv);
    else by_ws[ws] = {false, true};
  }
  std::vector<std::int64_t> pcie, nvlink, any;
  for (const auto& [ws, nvs] : by_ws)
    (nvs.size() == 2 ? any : nvs.count(true) ? nvlink : pcie).push_back(ws);
  if ((!pcie.empty() || !nvlink.empty()) && full_nvlink.empty()) return "";
  std::vector<std::string> terms;
  if (!any.empty()) terms.push_back(tuple(any, world_size));
  if (!pcie.empty()) terms.push_back(tuple(pcie, world_size) + " and not " + full_nvlink);
  if (!nvlink.empty()) terms.push_back(tuple(nvlink, world_size) + " and " + full_nvlink);
  if (terms.size() == 1) return terms[0];
  std::string s;
  for (const auto& t : terms) s += (s.empty() ? "" : " or ") + ("(" + t + ")");
  return s;
}

void suggestFixes(const model::Gate& gate, const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                  std::vector<std::string>& notes) {
  std::vector<std::pair<std::int64_t, std::optional<bool>>> cells;
  std::set<std::string> rules;
  for (const auto& f : findings)
    if (fixable(f)) {
      cells.push_back({*f.config.world_size, f.config.full_nvlink});
      rules.insert(f.rule);
    }
  if (cells.empty()) return;
  const model::GuardSite& site = gate.guard_site;
  std::optional<model::Fix> safe;
  // A gap that exists only for some value the gate hands down (a quantisation
  // level, a kernel variant): a guard on the cell would switch the fast path
  // off for every value, so none is offered.
  std::string handed;
  for (const auto& o : gate.outputs) handed += (handed.empty() ? "" : ", ") + o.var;
  if (!site.found) {
    notes.push_back("no safe fix offered for LG001/LG002: " + site.why);
  } else if (!handed.empty()) {
    notes.push_back("no safe fix offered for LG001/LG002: the gaps depend on what the gate hands down (" + handed +
                    "), and a guard on the world size and NVLink alone would turn the fast path off for every value");
  } else {
    std::string cond = guardCondition(cells, site.world_size, site.full_nvlink);
    if (cond.empty()) {
      notes.push_back("no safe fix offered for LG001/LG002: the gaps depend on NVLink, but no expression in " +
                      site.method + " holds the NVLink probe's value itself");
    } else {
      std::string ids, why;
      for (const auto& r : rules) ids += (ids.empty() ? "" : "/") + r;
      why = rules.count("LG001") && rules.count("LG002") ? "no C++ kernel runs for these"
            : rules.count("LG001")                        ? "no C++ kernel for these"
                                                          : "the C++ dispatch throws for these";
      model::Fix fx;
      fx.safety = model::FixSafety::Safe;
      std::vector<std::int64_t> wss;
      for (const auto& c : cells) wss.push_back(c.first);
      std::sort(wss.begin(), wss.end());
      wss.erase(std::unique(wss.begin(), wss.end()), wss.end());
      fx.description = fmt::format("in {}, `{}` when {} (world size{} {}: {})", site.method, site.reject, cond,
                                   wss.size() == 1 ? "" : "s", list(wss), why);
      model::Edit e;
      e.file = site.file;
      e.start = e.end = {site.line, 1};
      e.replacement = fmt::format("{}if {}:\n{}{}  # layergate {}: {}\n", site.indent, cond, site.body_indent,
                                  site.reject, ids, why);
      fx.edits.push_back(e);
      safe = fx;
    }
  }
  for (auto& f : findings)
    if (fixable(f) && safe) f.fixes.push_back(*safe);
  suggestBranchFixes(dispatch, findings, notes);
}

}  // namespace layergate::fix
