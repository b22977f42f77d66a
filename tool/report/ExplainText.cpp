// A rule's page as `layergate explain` prints it on a terminal: markdown
// links become their text with the target in parentheses, a link between
// docs pages as the docs path from the repository's top ("policy gates
// (docs/policy-gates.md)"), since a terminal follows neither kind of link
// and the relative one means nothing outside docs/rules/. Code (fenced
// blocks and `inline` spans) is left as written.
#include <filesystem>
#include <string>

#include "report/Report.h"

namespace layergate::report {
namespace {

// The end of a link that starts with '[' at `at`: the ')' that closes
// "[text](target)", npos when there is none on this line.
std::size_t linkEnd(const std::string& line, std::size_t at, std::string* text, std::string* target) {
  int depth = 0;
  std::size_t close = std::string::npos;
  for (std::size_t i = at; i < line.size(); ++i) {
    if (line[i] == '[') ++depth;
    if (line[i] == ']' && --depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string::npos || close + 1 >= line.size() || line[close + 1] != '(') return std::string::npos;
  std::size_t end = line.find(')', close + 2);
  if (end == std::string::npos) return std::string::npos;
  *text = line.substr(at + 1, close - at - 1);
  *target = line.substr(close + 2, end - close - 2);
  if (target->empty() || target->find(' ') != std::string::npos) return std::string::npos;
  return end;
}

std::string readable(const std::string& text, const std::string& target) {
  if (target[0] == '#') return text;  // a section of the same page
  std::string where = target;
  if (target.find("://") == std::string::npos && target.rfind("mailto:", 0) != 0)
    where = (std::filesystem::path("docs/rules") / target).lexically_normal().generic_string();
  return text == where ? text : text + " (" + where + ")";
}

// code: inside an `inline` span, which may go on over the next lines of a
// paragraph.
std::string plainLine(const std::string& line, bool& code) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '`') code = !code;
    std::string text, target;
    std::size_t end;
    if (!code && c == '[' && (i == 0 || line[i - 1] != '!') &&
        (end = linkEnd(line, i, &text, &target)) != std::string::npos) {
      out += readable(text, target);
      i = end;
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string explainText(const std::string& md) {
  std::string out;
  bool fence = false, code = false;
  std::size_t b = 0;
  while (b < md.size()) {
    std::size_t e = md.find('\n', b);
    std::string line = md.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::size_t lead = line.find_first_not_of(' ');
    bool fence_line = lead != std::string::npos && line.compare(lead, 3, "```") == 0;
    if (fence_line) fence = !fence;
    if (lead == std::string::npos) code = false;  // a paragraph ends
    out += fence || fence_line ? line : plainLine(line, code);
    if (e == std::string::npos) break;
    out += '\n';
    b = e + 1;
  }
  return out;
}

}  // namespace layergate::report
