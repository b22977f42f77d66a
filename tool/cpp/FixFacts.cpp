// Where a branch-less `if` of the dispatch could get its `else`, and the
// launch of a sibling branch that does not test NVLink (for the unsafe fix
// of LG001). Positions are spelling positions, so that an `if` written in a
// macro body (SGLang's REDUCE_CASE) is edited inside the #define, once.
#include "cpp/FixFacts.h"

#include "clang/AST/ParentMap.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"

namespace layergate::cpp::detail {
namespace {

using namespace clang;

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string rtrim(std::string s) {
  while (!s.empty() && blank(s.back())) s.pop_back();
  return s;
}

std::string trim(std::string s) {
  s = rtrim(std::move(s));
  std::size_t i = 0;
  while (i < s.size() && blank(s[i])) ++i;
  return s.substr(i);
}

// The physical line around `off` in `buf`: [begin, end) without the newline.
std::pair<std::size_t, std::size_t> lineAround(llvm::StringRef buf, std::size_t off) {
  std::size_t b = off, e = off;
  while (b > 0 && buf[b - 1] != '\n') --b;
  while (e < buf.size() && buf[e] != '\n') ++e;
  return {b, e};
}

// Whether a statement tree holds an `if` that tests NVLink.
bool holdsNvlinkTest(const Stmt* s, const ElseSiteQueries& q) {
  if (!s) return false;
  if (auto* is = dyn_cast<IfStmt>(s))
    if (q.tests_nvlink(is)) return true;
  for (const Stmt* c : s->children())
    if (holdsNvlinkTest(c, q)) return true;
  return false;
}

// The statements between a block's braces, one line each as written
// (continuations removed); a block written on one line is re-indented.
std::vector<std::string> blockLines(llvm::StringRef inner, const std::string& indent, int* first_line) {
  std::vector<std::string> raw;
  std::size_t start = 0;
  while (true) {
    std::size_t nl = inner.find('\n', start);
    std::string l = inner.substr(start, nl == llvm::StringRef::npos ? llvm::StringRef::npos : nl - start).str();
    l = rtrim(l);
    if (!l.empty() && l.back() == '\\') l = rtrim(l.substr(0, l.size() - 1));
    raw.push_back(l);
    if (nl == llvm::StringRef::npos) break;
    start = nl + 1;
  }
  bool compact = raw.size() < 2 || !trim(raw.front()).empty() || !trim(raw.back()).empty();
  std::vector<std::string> out;
  *first_line = -1;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (trim(raw[i]).empty()) continue;
    if (*first_line < 0) *first_line = static_cast<int>(i);
    out.push_back(compact ? indent + "  " + trim(raw[i]) : raw[i]);
  }
  return out;
}

}  // namespace

model::ElseSite elseSite(const SourceManager& sm, const ParentMap& parents, const IfStmt* is,
                         const std::string& cond_text, const ElseSiteQueries& q) {
  model::ElseSite site;
  site.condition = cond_text;
  std::string where = "if (" + cond_text + ")";
  if (is->getElse()) {
    site.why = where + " has an else";
    return site;
  }
  if (!q.tests_nvlink(is)) {
    site.why = where + " does not test NVLink, so an else there is not the missing non-NVLink branch";
    return site;
  }
  auto* then = dyn_cast<CompoundStmt>(is->getThen());
  if (!then) {
    site.why = "the then-branch of " + where + " is not a braced block";
    return site;
  }
  SourceLocation r = then->getRBracLoc();
  SourceLocation rs = sm.getSpellingLoc(r);
  if (rs.isInvalid() || !sm.getFileEntryRefForID(sm.getFileID(rs))) {
    site.why = "the closing brace of " + where + " is not written in a file";
    return site;
  }
  FileID fid = sm.getFileID(rs);
  llvm::StringRef buf = sm.getBufferData(fid);
  std::size_t off = sm.getFileOffset(rs);
  auto [lb, le] = lineAround(buf, off);
  std::size_t ind = lb;
  while (ind < le && (buf[ind] == ' ' || buf[ind] == '\t')) ++ind;
  site.indent = buf.substr(lb, ind - lb).str();
  model::Location at = q.spelling(rs);
  site.file = at.file;
  site.line = at.line;
  site.col = at.col + 1;

  // In a macro body the `}` line ends in a continuation (or is the last line).
  std::string tail = buf.substr(off + 1, le - off - 1).str();
  std::string t = rtrim(tail);
  if (!t.empty() && t.back() == '\\') {
    site.in_macro = true;
    if (!trim(t.substr(0, t.size() - 1)).empty()) {
      site.why = "code follows the closing brace of " + where + " in the macro body";
      return site;
    }
    site.continuation_col = at.col + 1 + static_cast<int>(t.size() - 1);
  } else {
    site.in_macro = r.isMacroID() && sm.isMacroBodyExpansion(r);
  }

  // A sibling in the else-if chain whose condition does not test NVLink and
  // that launches: the branch the dispatch already runs without NVLink.
  const Stmt* cur = is;
  const CompoundStmt* cand = nullptr;
  for (const Stmt* p = parents.getParent(cur); p; cur = p, p = parents.getParent(cur)) {
    auto* pi = dyn_cast<IfStmt>(p);
    if (!pi || pi->getElse() != cur) break;
    auto* block = dyn_cast_or_null<CompoundStmt>(pi->getThen());
    if (!block || q.tests_nvlink(pi) || q.kernel_of(block).empty() || holdsNvlinkTest(block, q)) continue;
    cand = block;
    break;
  }
  if (!cand) {
    site.why = "no branch beside " + where + " launches a kernel without testing NVLink";
    return site;
  }
  SourceLocation l = sm.getSpellingLoc(cand->getLBracLoc()), rr = sm.getSpellingLoc(cand->getRBracLoc());
  if (sm.getFileID(l) != fid || sm.getFileID(rr) != fid || sm.getFileOffset(rr) <= sm.getFileOffset(l)) {
    site.why = "the branch that launches without NVLink is not written beside " + where;
    return site;
  }
  std::size_t lo = sm.getFileOffset(l), ro = sm.getFileOffset(rr);
  int first = -1;
  site.launch = blockLines(buf.substr(lo + 1, ro - lo - 1), site.indent, &first);
  if (site.launch.empty()) {
    site.why = "the branch that launches without NVLink has no statements of its own";
    return site;
  }
  site.kernel = q.kernel_of(cand);
  site.launch_where = q.spelling(l);
  site.launch_where.line += first;
  site.launch_where.col = 1;
  site.launch_where.role = "launch";
  site.launch_where.note = site.kernel;
  site.found = true;
  return site;
}

}  // namespace layergate::cpp::detail
