// The unsafe fix of LG001: the missing `else` of the dispatch's branch-less
// `if`, reusing the launch of a sibling branch that does not test NVLink, at
// the place and with the text the C++ frontend recorded (model::ElseSite).
// Unsafe because that kernel then runs on a machine without NVLink, which its
// branch was not written for: only `layergate selftest` there shows it right.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fix/Fix.h"

namespace layergate::fix {
namespace {

constexpr const char* kMark = "/* layergate LG001: unsafe, selftest it */";

std::string leadingSpace(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(0, i);
}

std::string trimmed(const std::string& s) {
  std::string t = s.substr(leadingSpace(s).size());
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t;
}

// A line of a macro body: `s` padded so that its continuation lands in column
// `col` (after `before` bytes already on the line), at least one space before it.
std::string continued(const std::string& s, int col, std::size_t before = 0) {
  long pad = static_cast<long>(col) - 1 - static_cast<long>(before + s.size());
  return s + std::string(static_cast<std::size_t>(std::max(1L, pad)), ' ') + "\\";
}

bool sameLoc(const model::Location& a, const model::Location& b) {
  return a.file == b.file && a.line == b.line && a.col == b.col;
}

// The None leaf a finding's dispatch location names.
const model::Leaf* leafOf(const model::Finding& f, const model::Dispatch& d) {
  const model::Location *sp = nullptr, *ex = nullptr;
  for (const auto& l : f.locations) {
    if (l.role == "dispatch" && !sp) sp = &l;
    if (l.role == "expansion" && !ex) ex = &l;
  }
  if (!sp) return nullptr;
  for (const auto& leaf : d.leaves)
    if (leaf.kind == model::LeafKind::None && sameLoc(leaf.spelling, *sp) &&
        sameLoc(leaf.expansion, ex ? *ex : leaf.spelling))
      return &leaf;
  return nullptr;
}

}  // namespace

model::Edit elseEdit(const model::ElseSite& s) {
  model::Edit e;
  e.file = s.file;
  e.start = e.end = {s.line, s.col};
  std::string body_indent = s.launch.empty() ? s.indent + "  " : leadingSpace(s.launch.front());
  if (s.in_macro && s.continuation_col == 0) {
    // The macro's last line: the branch on that one line.
    std::string stmts;
    for (const auto& l : s.launch) stmts += " " + trimmed(l);
    e.replacement = std::string(" else { ") + kMark + stmts + " }";
    return e;
  }
  std::vector<std::string> lines{" else {", body_indent + kMark};
  for (const auto& l : s.launch) lines.push_back(l);
  lines.push_back(s.indent + "}");
  if (!s.in_macro) {
    for (std::size_t i = 0; i < lines.size(); ++i) e.replacement += (i ? "\n" : "") + lines[i];
    return e;
  }
  // In a macro body: the `}` line's continuation moves to the new last line,
  // and every line ends in one at the column the body's lines use.
  e.end = {s.line, s.continuation_col + 1};
  for (std::size_t i = 0; i < lines.size(); ++i)
    e.replacement += (i ? "\n" : "") +
                     continued(lines[i], s.continuation_col, i == 0 ? static_cast<std::size_t>(s.col - 1) : 0);
  return e;
}

void suggestBranchFixes(const model::Dispatch& dispatch, std::vector<model::Finding>& findings,
                        std::vector<std::string>& notes) {
  // Findings grouped by the else they need (one edit inside a macro body
  // serves every case that expands it).
  using Key = std::tuple<std::string, int, int>;
  std::map<Key, std::vector<std::pair<model::Finding*, const model::ElseSite*>>> groups;
  std::set<std::string> whys;
  for (auto& f : findings) {
    if (f.rule != "LG001" || f.suppressed || !f.config.world_size) continue;
    const model::Leaf* leaf = leafOf(f, dispatch);
    if (!leaf) {
      whys.insert("the finding names no no-launch path of the dispatch");
      continue;
    }
    const model::ElseSite& s = leaf->else_site;
    if (!s.found) {
      whys.insert(s.why);
      continue;
    }
    groups[Key{s.file, s.line, s.col}].push_back({&f, &s});
  }
  for (const auto& w : whys) notes.push_back("no unsafe fix offered for LG001: " + w);
  for (auto& [key, members] : groups) {
    const model::ElseSite& s = *members.front().second;
    std::string stmts;
    for (const auto& l : s.launch) stmts += (stmts.empty() ? "" : " ") + trimmed(l);
    model::Fix fx;
    fx.safety = model::FixSafety::Unsafe;
    // One line; why it is unsafe and how to prove it: docs/rules/LG001.md.
    std::vector<std::pair<std::int64_t, std::optional<bool>>> cells;
    for (const auto& m : members) cells.push_back({*m.first->config.world_size, m.first->config.full_nvlink});
    fx.description = fmt::format("`else {{ {} }}` after `if ({})`: runs {} for {}, a launch not written for them: "
                                 "prove it with `layergate selftest`",
                                 stmts, s.condition, s.kernel, model::cellsText(cells));
    fx.edits.push_back(elseEdit(s));
    for (auto& m : members) m.first->fixes.push_back(fx);
  }
}

}  // namespace layergate::fix
