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

std::optional<model::Fix> guardFix(const model::Gate& gate, const std::vector<const model::Finding*>& findings,
                                   std::string* why) {
  auto refuse = [&](const std::string& w) {
    if (why) *why = w;
    return std::optional<model::Fix>();
  };
  std::vector<std::pair<std::int64_t, std::optional<bool>>> cells;
  std::set<std::string> rules;
  std::map<std::string, std::vector<std::string>> overridden;  // env var -> the values the cells are admitted with
  for (const auto* f : findings) {
    if (!fixable(*f)) continue;
    cells.push_back({*f->config.world_size, f->config.full_nvlink});
    rules.insert(f->rule);
    for (const auto& [k, v] : f->config.env) {
      auto& vs = overridden[k];
      if (v && std::find(vs.begin(), vs.end(), *v) == vs.end()) vs.push_back(*v);
    }
  }
  if (cells.empty()) return refuse("");
  const model::GuardSite& site = gate.guard_site;
  // A gap that exists only for some value the gate hands down (a quantisation
  // level, a kernel variant): a guard on the cell would switch the fast path
  // off for every value, so none is offered.
  std::string handed;
  for (const auto& o : gate.outputs) handed += (handed.empty() ? "" : ", ") + o.var;
  if (!site.found) return refuse(site.why);
  if (!handed.empty())
    return refuse("the gaps depend on what the gate hands down (" + handed +
                  "), and a guard on the world size and NVLink alone would turn the fast path off for every value");
  std::string cond = guardCondition(cells, site.world_size, site.full_nvlink);
  if (cond.empty())
    return refuse("the gaps depend on NVLink, but no expression in " + site.method + " holds the NVLink probe's value itself");
  std::string ids;
  for (const auto& r : rules) ids += (ids.empty() ? "" : "/") + r;
  std::string because = rules.count("LG001") && rules.count("LG002") ? "no C++ kernel runs for these"
                        : rules.count("LG001")                        ? "no C++ kernel for these"
                                                                      : "the C++ dispatch throws for these";
  // What it turns off, and which setting it overrides: the fast path is off
  // in these cells for every message size, whatever the environment says.
  // That override is a behaviour change, said as one: whoever set the
  // variable gets the slow path there from now on.
  std::string settings;
  for (const auto& [k, vs] : overridden) {
    if (vs.empty()) continue;
    std::string one = k + "=";
    for (std::size_t i = 0; i < vs.size(); ++i) one += (i == 0 ? "" : i + 1 == vs.size() ? " or " : ", ") + vs[i];
    settings += (settings.empty() ? "" : " or ") + one;
  }
  model::Fix fx;
  fx.safety = model::FixSafety::Safe;
  fx.description = fmt::format("`{}` in {} when {}: turns off the custom all-reduce for {}{}", site.reject, site.method,
                               cond, model::cellsText(cells),
                               settings.empty() ? "" : "; behaviour change: " + settings + " no longer turns it on there");
  model::Edit e;
  e.file = site.file;
  e.start = e.end = {site.line, 1};
  e.replacement = fmt::format("{}if {}:\n{}{}  # layergate {}: {}\n", site.indent, cond, site.body_indent, site.reject,
                              ids, because);
  fx.edits.push_back(e);
  return fx;
}

void suggestFixes(const model::Gate& gate, const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                  std::vector<std::string>& notes) {
  std::vector<const model::Finding*> all;
  for (const auto& f : findings) all.push_back(&f);
  std::string why;
  std::optional<model::Fix> safe = guardFix(gate, all, &why);
  if (!safe && !why.empty()) notes.push_back("no safe fix offered for LG001/LG002: " + why);
  for (auto& f : findings)
    if (fixable(f) && safe) f.fixes.push_back(*safe);
  suggestBranchFixes(dispatch, findings, notes);
}

FixPlan planFixes(const model::Gate& gate, const std::vector<model::Finding>& findings, bool unsafe) {
  FixPlan p;
  auto take = [&](const model::Fix& x) {
    for (const auto& a : p.applied)
      if (a.edits == x.edits) return;
    p.applied.push_back(x);
    for (const auto& e : x.edits) {
      auto& v = p.edits[e.file];
      if (std::find(v.begin(), v.end(), e) == v.end()) v.push_back(e);
    }
  };
  std::vector<const model::Finding*> rest;
  for (const auto& f : findings) {
    if (f.suppressed) continue;
    auto branch = std::find_if(f.fixes.begin(), f.fixes.end(),
                               [](const model::Fix& x) { return x.safety == model::FixSafety::Unsafe; });
    if (unsafe && branch != f.fixes.end()) {
      take(*branch);
      p.branched.push_back(&f);
    } else if (std::any_of(f.fixes.begin(), f.fixes.end(),
                           [](const model::Fix& x) { return x.safety == model::FixSafety::Safe; })) {
      rest.push_back(&f);
    }
  }
  if (rest.empty()) return p;
  // The guard over exactly the findings no branch was taken for.
  if (auto g = guardFix(gate, rest)) {
    take(*g);
    p.guarded = rest;
  }
  return p;
}

}  // namespace layergate::fix
