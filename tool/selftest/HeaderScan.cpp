#include "selftest/HeaderScan.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "selftest/Harness.h"

namespace layergate::selftest {


std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string squeeze(const std::string& s) {
  std::string o;
  bool sp = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      sp = true;
      continue;
    }
    if (sp && !o.empty()) o += ' ';
    sp = false;
    o += c;
  }
  return o;
}

bool isIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool hasWord(const std::string& s, const std::string& w) {
  for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) {
    bool l = p == 0 || !isIdent(s[p - 1]);
    bool r = p + w.size() >= s.size() || !isIdent(s[p + w.size()]);
    if (l && r) return true;
  }
  return false;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Comments, string and char literals and preprocessor lines become spaces
// (newlines kept), so that braces and parentheses can be counted.
std::string blank(const std::string& t) {
  std::string o = t;
  size_t i = 0, n = t.size();
  bool line_start = true;
  while (i < n) {
    char c = t[i];
    if (line_start && (c == ' ' || c == '\t')) {
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      while (i < n && t[i] != '\n') {
        if (t[i] == '\\' && i + 1 < n && t[i + 1] == '\n') {
          o[i] = ' ';
          i += 2;
          continue;
        }
        o[i++] = ' ';
      }
      continue;
    }
    line_start = false;
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') o[i++] = ' ';
    } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      while (i < n && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/')) {
        if (t[i] != '\n') o[i] = ' ';
        ++i;
      }
      if (i < n) o[i] = o[i + 1] = ' ', i += 2;
    } else if (c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(t[i - 1]))) {
      ++i;  // a digit separator: 10'000'000'000
    } else if (c == '"' || c == '\'') {
      char q = c;
      ++i;
      while (i < n && t[i] != q && t[i] != '\n') {
        if (t[i] == '\\') o[i++] = ' ';
        if (i < n) o[i++] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  return o;
}

size_t matchClose(const std::string& s, size_t open) {
  const char o = s[open], c = o == '{' ? '}' : o == '(' ? ')' : o == '[' ? ']' : '>';
  int d = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++d;
    else if (s[i] == c && --d == 0) return i;
  }
  return std::string::npos;
}

std::string readIdent(const std::string& s, size_t& i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  size_t b = i;
  while (i < s.size() && (isIdent(s[i]) || (s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':'))) i += s[i] == ':' ? 2 : 1;
  return s.substr(b, i - b);
}

// Splits at top-level commas (outside (), <>, [], {}).
std::vector<std::string> splitTop(const std::string& s) {
  std::vector<std::string> out;
  int d = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '<' || c == '[' || c == '{') ++d;
    if (c == ')' || c == '>' || c == ']' || c == '}') --d;
    if (c == ',' && d == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(cur);
  return out;
}

void parseMember(const std::string& seg, const std::string& class_name, std::vector<HeaderMethod>& out) {
  // The first '(' outside template brackets and not after '=' names the function.
  int angle = 0;
  size_t paren = std::string::npos;
  for (size_t i = 0; i < seg.size(); ++i) {
    char c = seg[i];
    if (c == '<') ++angle;
    else if (c == '>') angle = std::max(0, angle - 1);
    else if (c == '=' && angle == 0) return;  // a data member with an initialiser
    else if (c == '(' && angle == 0) {
      paren = i;
      break;
    }
  }
  if (paren == std::string::npos) return;
  size_t e = paren;
  while (e > 0 && std::isspace(static_cast<unsigned char>(seg[e - 1]))) --e;
  size_t b = e;
  while (b > 0 && isIdent(seg[b - 1])) --b;
  if (b == e) return;
  HeaderMethod m;
  m.name = seg.substr(b, e - b);
  std::string prefix = squeeze(seg.substr(0, b));
  if (m.name == "operator" || prefix.find("operator") != std::string::npos) return;
  if (!prefix.empty() && prefix.back() == '~') return;  // destructor
  const size_t close = matchClose(seg, paren);
  if (close == std::string::npos) return;
  m.params = parseParams(seg.substr(paren + 1, close - paren - 1));
  m.is_template = prefix.rfind("template", 0) == 0;
  if (m.is_template) {
    size_t lt = prefix.find('<');
    size_t gt = lt == std::string::npos ? std::string::npos : matchClose(prefix, lt);
    prefix = gt == std::string::npos ? prefix : trim(prefix.substr(gt + 1));
  }
  m.is_static = hasWord(prefix, "static");
  for (const char* kw : {"static", "inline", "virtual", "constexpr", "explicit", "__host__", "__device__", "__forceinline__"}) {
    std::string w = kw;
    for (size_t p; (p = prefix.find(w)) != std::string::npos && hasWord(prefix, w);) prefix.erase(p, w.size());
  }
  m.return_type = squeeze(prefix);
  m.is_ctor = m.name == class_name && m.return_type.empty();
  out.push_back(std::move(m));
}


std::vector<HeaderParam> parseParams(const std::string& text) {
  std::vector<HeaderParam> out;
  for (std::string p : splitTop(text)) {
    p = squeeze(p);
    if (p.empty() || p == "void") continue;
    HeaderParam hp;
    int d = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      char c = p[i];
      if (c == '(' || c == '<' || c == '[' || c == '{') ++d;
      if (c == ')' || c == '>' || c == ']' || c == '}') --d;
      if (c == '=' && d == 0 && (i + 1 >= p.size() || p[i + 1] != '=')) {
        hp.has_default = true;
        hp.default_text = trim(p.substr(i + 1));
        p = trim(p.substr(0, i));
        break;
      }
    }
    std::string arr;
    if (!p.empty() && p.back() == ']') {
      size_t lb = p.rfind('[');
      arr = "*";
      p = trim(p.substr(0, lb));
    }
    size_t e = p.size(), b = e;
    while (b > 0 && isIdent(p[b - 1])) --b;
    std::string before = trim(p.substr(0, b));
    if (b < e && !before.empty() && before != "const" && before != "unsigned" && before != "signed") {
      hp.name = p.substr(b);
      hp.type = squeeze(before + arr);
    } else {
      hp.type = squeeze(p + arr);
    }
    out.push_back(hp);
  }
  return out;
}

ClassScan scanClass(const std::string& text, const std::string& class_name) {
  ClassScan cs;
  const std::string s = blank(text);
  struct Scope {
    bool ns;
    std::vector<std::string> names;
  };
  std::vector<Scope> stack;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (isIdent(c) && (i == 0 || !isIdent(s[i - 1]))) {
      size_t j = i;
      std::string word = readIdent(s, j);
      if (word == "namespace") {
        size_t k = j;
        std::string name = readIdent(s, k);
        while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
        if (k < s.size() && s[k] == '{') {
          Scope sc{true, {}};
          std::stringstream ss(name);
          std::string part;
          for (size_t p = 0; p <= name.size();) {
            size_t q = name.find("::", p);
            part = name.substr(p, q == std::string::npos ? std::string::npos : q - p);
            if (!part.empty() && part != "inline") sc.names.push_back(part);
            if (q == std::string::npos) break;
            p = q + 2;
          }
          stack.push_back(sc);
          i = k + 1;
          continue;
        }
      } else if ((word == "class" || word == "struct") && !cs.found) {
        // class [attributes] NAME [final] [: bases] {
        size_t k = j;
        std::string name = readIdent(s, k);
        while (name.rfind("__", 0) == 0 || name == "alignas") {  // __align__(16), alignas(16)
          while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
          if (k < s.size() && s[k] == '(') {
            const size_t close = matchClose(s, k);
            if (close == std::string::npos) return cs;  // never closed (npos + 1 would restart at 0)
            k = close + 1;
          }
          name = readIdent(s, k);
        }
        if (name == class_name) {
          size_t brace = s.find_first_of("{;", k);
          if (brace != std::string::npos && s[brace] == '{') {
            cs.found = true;
            for (const auto& sc : stack)
              if (sc.ns) cs.namespaces.insert(cs.namespaces.end(), sc.names.begin(), sc.names.end());
            const size_t end = matchClose(s, brace);
            std::string body = s.substr(brace + 1, end == std::string::npos ? std::string::npos : end - brace - 1);
            std::string seg;
            for (size_t p = 0; p < body.size(); ++p) {
              char bc = body[p];
              if (bc == '{') {
                parseMember(seg, class_name, cs.methods);
                size_t q = matchClose(body, p);
                if (q == std::string::npos) break;
                p = q;
                // A data member with a braced initialiser ends at the ';' that follows.
                size_t r = p + 1;
                while (r < body.size() && std::isspace(static_cast<unsigned char>(body[r]))) ++r;
                if (r < body.size() && body[r] == ';') p = r;
                seg.clear();
              } else if (bc == ';') {
                parseMember(seg, class_name, cs.methods);
                seg.clear();
              } else if (bc == ':' && (p + 1 >= body.size() || body[p + 1] != ':') && (p == 0 || body[p - 1] != ':')) {
                std::string t = trim(seg);
                if (t == "public" || t == "private" || t == "protected") seg.clear();
                else seg += bc;
              } else {
                seg += bc;
              }
            }
            return cs;
          }
        }
        i = j;
        continue;
      }
      i = j;
      continue;
    }
    if (c == '{') stack.push_back({false, {}});
    else if (c == '}' && !stack.empty()) stack.pop_back();
    ++i;
  }
  return cs;
}


std::string baseType(std::string t) {
  for (const char* q : {"const", "volatile", "__restrict__", "struct"}) {
    std::string w = q;
    for (size_t p; (p = t.find(w)) != std::string::npos && hasWord(t, w);) t.erase(p, w.size());
  }
  t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '*' || c == '&' || std::isspace(static_cast<unsigned char>(c)); }),
          t.end());
  return t;
}

int stars(const std::string& t) { return static_cast<int>(std::count(t.begin(), t.end(), '*')); }

bool isIntegral(const std::string& t) {
  std::string b = baseType(t);
  for (const char* k : {"int", "long", "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t", "unsigned", "std::size_t",
                        "std::int64_t", "longlong", "unsignedint", "unsignedlong"})
    if (b == k) return true;
  return false;
}

std::string qualify(const std::string& type, const std::string& ns) {
  if (type.find("::") != std::string::npos || ns.empty()) return type;
  return ns + "::" + type;
}


std::vector<NamespaceFunction> scanFunctions(const std::string& text) {
  std::vector<NamespaceFunction> out;
  const std::string s = blank(text);
  // Scopes: namespaces (names) and anything else (a class, an enum, a body):
  // only what is declared directly inside namespaces counts.
  struct Scope {
    bool ns;
    std::vector<std::string> names;
  };
  std::vector<Scope> stack;
  auto atNamespaceScope = [&] {
    for (const auto& sc : stack)
      if (!sc.ns) return false;
    return true;
  };
  std::string seg;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ';') {
      seg.clear();
      continue;
    }
    if (c == '}') {
      if (!stack.empty()) stack.pop_back();
      seg.clear();
      continue;
    }
    if (c != '{') {
      seg += c;
      continue;
    }
    const std::string t = squeeze(seg);
    seg.clear();
    if (t.rfind("namespace", 0) == 0 && (t.size() == 9 || !isIdent(t[9]))) {
      Scope sc{true, {}};
      std::string name = trim(t.substr(9));
      for (size_t p = 0; p <= name.size() && !name.empty();) {
        size_t q = name.find("::", p);
        std::string part = trim(name.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (!part.empty() && part != "inline") sc.names.push_back(part);
        if (q == std::string::npos) break;
        p = q + 2;
      }
      stack.push_back(sc);
      continue;
    }
    if (t.rfind("extern", 0) == 0 && t.find('(') == std::string::npos) {  // extern "C" {
      stack.push_back({true, {}});
      continue;
    }
    const bool decl = atNamespaceScope() && t.find('(') != std::string::npos && !hasWord(t, "struct") &&
                      !hasWord(t, "class") && !hasWord(t, "enum") && !hasWord(t, "union") && t.back() != '=';
    if (decl) {
      std::vector<HeaderMethod> m;
      parseMember(t, "", m);
      if (!m.empty() && !m.front().return_type.empty()) {
        NamespaceFunction nf;
        for (const auto& sc : stack) nf.namespaces.insert(nf.namespaces.end(), sc.names.begin(), sc.names.end());
        nf.fn = m.front();
        out.push_back(std::move(nf));
      }
    }
    // Skip the body (a function's, a class's, an initialiser's) as one scope.
    const size_t close = matchClose(s, i);
    if (close == std::string::npos) break;
    i = close;
  }
  return out;
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

}  // namespace layergate::selftest
