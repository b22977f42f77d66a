// Edits to text, and text changes to unified diffs (line LCS between the
// first and last changed lines, hunks with 3 lines of context).
#include "fix/Apply.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "model/Errors.h"

namespace layergate::fix {
namespace {

std::size_t offsetOf(const std::string& text, const model::TextPos& p, const std::string& file) {
  std::size_t off = 0;
  for (int line = 1; line < p.line; ++line) {
    off = text.find('\n', off);
    if (off == std::string::npos) {
      // the line after a last line without a newline
      if (line + 1 == p.line && p.col == 1) return text.size();
      throw InputError(fmt::format("{}: fix edit at line {} is past the end of the file", file, p.line));
    }
    ++off;
  }
  std::size_t eol = text.find('\n', off);
  std::size_t len = (eol == std::string::npos ? text.size() : eol + 1) - off;
  if (p.col < 1 || static_cast<std::size_t>(p.col - 1) > len)
    throw InputError(fmt::format("{}: fix edit at {}:{} is outside the line", file, p.line, p.col));
  return off + static_cast<std::size_t>(p.col - 1);
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b < s.size()) {
    std::size_t e = s.find('\n', b);
    if (e == std::string::npos) e = s.size() - 1;
    out.push_back(s.substr(b, e - b + 1));
    b = e + 1;
  }
  return out;
}

}  // namespace

std::string applyEdits(const std::string& text, std::vector<model::Edit> edits) {
  std::vector<model::Edit> uniq;
  for (auto& e : edits)
    if (std::find(uniq.begin(), uniq.end(), e) == uniq.end()) uniq.push_back(e);
  std::vector<std::tuple<std::size_t, std::size_t, std::string>> ops;
  for (const auto& e : uniq) {
    std::size_t a = offsetOf(text, e.start, e.file), b = offsetOf(text, e.end, e.file);
    if (b < a) throw InputError(fmt::format("{}: fix edit ends before it starts", e.file));
    ops.emplace_back(a, b, e.replacement);
  }
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return std::get<0>(x) < std::get<0>(y); });
  for (std::size_t i = 1; i < ops.size(); ++i)
    if (std::get<0>(ops[i]) < std::get<1>(ops[i - 1]))
      throw InputError(fmt::format("{}: fix edits overlap", uniq.front().file));
  // A file with CRLF line endings (its first line's) gets CRLF lines: an
  // editor or git with autocrlf would otherwise show every inserted line as
  // changed, and a mixed file as broken.
  std::size_t first_nl = text.find('\n');
  const bool crlf = first_nl != std::string::npos && first_nl > 0 && text[first_nl - 1] == '\r';
  auto endings = [&](const std::string& r) {
    if (!crlf) return r;
    std::string o;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r[i] == '\n' && (i == 0 || r[i - 1] != '\r')) o += '\r';
      o += r[i];
    }
    return o;
  };
  std::string out;
  std::size_t at = 0;
  for (const auto& [a, b, r] : ops) {
    out.append(text, at, a - at);
    // an insertion after a last line that has no newline starts a new line
    if (a == text.size() && a > 0 && text.back() != '\n' && a == b) out += crlf ? "\r\n" : "\n";
    out += endings(r);
    at = b;
  }
  out.append(text, at, std::string::npos);
  return out;
}

std::string unifiedDiff(const std::string& path, const std::string& before, const std::string& after) {
  if (before == after) return "";
  auto a = splitLines(before), b = splitLines(after);
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  // ops over the middle: ' ' keep, '-' delete, '+' insert (LCS; a single
  // replacement when the middle is too large for it)
  std::size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<std::pair<char, std::string>> ops;
  for (std::size_t i = 0; i < pre; ++i) ops.push_back({' ', a[i]});
  if (n * m <= 25'000'000) {
    std::vector<std::vector<int>> L(n + 1, std::vector<int>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        L[i][j] = a[pre + i] == b[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) ops.push_back({' ', a[pre + i++]}), ++j;
      else if (j < m && (i == n || L[i][j + 1] >= L[i + 1][j])) ops.push_back({'+', b[pre + j++]});
      else ops.push_back({'-', a[pre + i++]});
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) ops.push_back({'-', a[pre + i]});
    for (std::size_t j = 0; j < m; ++j) ops.push_back({'+', b[pre + j]});
  }
  for (std::size_t i = a.size() - suf; i < a.size(); ++i) ops.push_back({' ', a[i]});

  // a/ and b/ prefixes, as git diff writes them: `git apply` and `patch -p1`
  // read them from the directory the paths are relative to.
  std::string shown = path;
  if (std::filesystem::path(path).is_absolute()) {
    std::error_code ec;
    auto rel = std::filesystem::path(path).lexically_proximate(std::filesystem::current_path(ec));
    if (!ec && !rel.empty()) shown = rel.generic_string();
  }
  std::string out = fmt::format("--- a/{}\n+++ b/{}\n", shown, shown);
  constexpr std::size_t ctx = 3;
  std::size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].first == ' ') {
      ++k;
      continue;
    }
    // a hunk: from ctx lines before this change to ctx lines after the last
    // change that is at most 2*ctx unchanged lines from the previous one
    std::size_t start = k >= ctx ? k - ctx : 0, end = k;
    for (std::size_t q = k; q < ops.size(); ++q)
      if (ops[q].first != ' ') {
        if (q > end + 2 * ctx) break;
        end = q;
      }
    std::size_t stop = std::min(ops.size(), end + ctx + 1);
    // line numbers of the hunk's first line in each file
    std::size_t la = 1, lb = 1;
    for (std::size_t q = 0; q < start; ++q) {
      if (ops[q].first != '+') ++la;
      if (ops[q].first != '-') ++lb;
    }
    std::size_t ca = 0, cb = 0;
    std::string body;
    for (std::size_t q = start; q < stop; ++q) {
      if (ops[q].first != '+') ++ca;
      if (ops[q].first != '-') ++cb;
      body += ops[q].first + ops[q].second;
      if (body.back() != '\n') body += "\n\\ No newline at end of file\n";
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", ca ? la : la - 1, ca, cb ? lb : lb - 1, cb) + body;
    k = stop;
  }
  return out;
}

bool takesFix(const model::Finding& f, bool unsafe) {
  return std::any_of(f.fixes.begin(), f.fixes.end(),
                     [&](const model::Fix& x) { return unsafe || x.safety == model::FixSafety::Safe; });
}

std::map<std::string, std::vector<model::Edit>> collectEdits(const std::vector<const model::Finding*>& findings,
                                                             bool unsafe, int* fixed) {
  std::map<std::string, std::vector<model::Edit>> out;
  int n = 0;
  for (const auto* f : findings) {
    if (f->suppressed || !takesFix(*f, unsafe)) continue;
    ++n;
    for (const auto& x : f->fixes) {
      if (!unsafe && x.safety != model::FixSafety::Safe) continue;
      for (const auto& e : x.edits) {
        auto& v = out[e.file];
        if (std::find(v.begin(), v.end(), e) == v.end()) v.push_back(e);
      }
    }
  }
  if (fixed) *fixed = n;
  return out;
}

}  // namespace layergate::fix
