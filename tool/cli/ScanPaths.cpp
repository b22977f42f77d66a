// A scan's paths as the user sees them (Scan.h, showFromWorkingDirectory):
// the analyses run inside the scanned root and record paths relative to it;
// here the root is put in front of each, as a compiler prints the paths it
// was given (`layergate check sglang` shows sglang/python/...).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "cli/Scan.h"

namespace layergate::driver {
namespace {

namespace fs = std::filesystem;

class Rebase {
 public:
  explicit Rebase(std::string root) : root_(std::move(root)) {}

  // A relative path gets the root in front; absolute paths (the bundled
  // stubs, -I directories) and placeholders ("<command line>") stay.
  void path(std::string& p) {
    if (p.empty() || p[0] == '<' || fs::path(p).is_absolute()) return;
    std::string q = (fs::path(root_) / p).lexically_normal().generic_string();
    seen_.emplace(p, q);
    p = std::move(q);
  }
  void paths(std::vector<std::string>& v) {
    for (auto& p : v) path(p);
  }
  void loc(model::Location& l) { path(l.file); }
  void locs(std::vector<model::Location>& v) {
    for (auto& l : v) loc(l);
  }
  void hops(std::vector<model::Hop>& v) {
    for (auto& h : v) loc(h.where);
  }
  void call(model::NativeCall& c) {
    loc(c.where);
    for (auto& a : c.args) {
      loc(a.where);
      hops(a.origin);
    }
  }
  template <class T>
  void wheres(std::vector<T>& v) {
    for (auto& x : v) loc(x.where);
  }

  void result(report::Result& r) {
    paths(r.python_files);
    paths(r.cpp_files);
    auto& g = r.gate;
    loc(g.class_loc);
    loc(g.enabling);
    loc(g.per_call_loc);
    wheres(g.rejects);
    wheres(g.admits);
    wheres(g.unchecked);
    wheres(g.platform_forced);
    wheres(g.opaques);
    locs(g.env_read_locs);
    for (auto& rt : g.routes) {
      loc(rt.where);
      paths(rt.sources);
      paths(rt.sources_missing);
    }
    for (auto& o : g.outputs) {
      loc(o.where);
      hops(o.origin);
    }
    for (auto& c : g.native_calls) call(c);
    for (auto& c : g.result_calls) call(c);
    for (auto& fw : g.forwarders) {
      loc(fw.where);
      locs(fw.param_locs);
      call(fw.call);
    }
    paths(g.files);
    path(g.guard_site.file);
    auto& d = r.dispatch;
    loc(d.where);
    wheres(d.params);
    wheres(d.opaques);
    wheres(d.broken);
    wheres(d.ctors);
    wheres(d.member_uses);
    for (auto& b : d.bindings) {
      loc(b.where);
      wheres(b.schema_params);
    }
    for (auto& e : d.entries) {
      loc(e.where);
      wheres(e.params);
      for (auto& c : e.constructs) {
        loc(c.where);
        locs(c.arg_locs);
      }
    }
    for (auto& l : d.leaves) {
      loc(l.spelling);
      loc(l.expansion);
      path(l.else_site.file);
      loc(l.else_site.launch_where);
    }
    for (auto& f : r.findings) {
      locs(f.locations);
      hops(f.trace);
      if (f.suppressed) loc(f.suppressed->where);
      for (auto& x : f.fixes)
        for (auto& e : x.edits) path(e.file);
    }
    for (auto& v : r.matrix)
      for (auto& p : v.dispatch) loc(p.where);
    for (auto& cells : r.selection_cells)
      for (auto& v : cells)
        for (auto& p : v.dispatch) loc(p.where);
    hops(r.trace);
    for (auto& v : r.value_traces) hops(v.hops);
    if (r.selection) {
      loc(r.selection->where);
      wheres(r.selection->arms);
      wheres(r.selection->opaques);
    }
  }

  void unit(discover::Unit& u) {
    paths(u.python_files);
    paths(u.cpp_files);
  }

  void chain(ChainVerdict& c) {
    path(c.file);
    loc(c.chain.where);
    loc(c.chain.fallback);
    wheres(c.chain.arms);
  }

  // Texts that quote a path (a note "... (csrc/x.cu:12)", a message
  // "depends on `f()` at python/x.py:40"): each whole occurrence of a path
  // seen above, not one inside a longer path, longest paths first; and any
  // other FILE:LINE whose FILE is a file under the root.
  void text(std::string& s) const {
    auto pathChar = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
    };
    std::vector<std::pair<std::string, std::string>> byLength(seen_.begin(), seen_.end());
    std::stable_sort(byLength.begin(), byLength.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
      bool replaced = false;
      if (i == 0 || !pathChar(s[i - 1]))
        for (const auto& [from, to] : byLength) {
          std::size_t end = i + from.size();
          if (s.compare(i, from.size(), from) == 0 && (end == s.size() || !pathChar(s[end]) ||
                                                       (s[end] == '.' && (end + 1 == s.size() || !pathChar(s[end + 1]))))) {
            out += to;
            i = end;
            replaced = true;
            break;
          }
        }
      if (!replaced && (i == 0 || !pathChar(s[i - 1])) && pathChar(s[i]) && s[i] != '/' && s[i] != '.') {
        std::size_t end = i;
        while (end < s.size() && pathChar(s[end])) ++end;
        std::string word = s.substr(i, end - i);
        std::error_code ec;
        if (end + 1 < s.size() && s[end] == ':' && std::isdigit(static_cast<unsigned char>(s[end + 1])) &&
            fs::is_regular_file(fs::path(root_) / word, ec)) {
          out += (fs::path(root_) / word).lexically_normal().generic_string();
          i = end;
          replaced = true;
        }
      }
      if (!replaced) out += s[i++];
    }
    s = std::move(out);
  }
  void texts(std::vector<std::string>& v) const {
    for (auto& s : v) text(s);
  }
  void resultTexts(report::Result& r) const {
    texts(r.gate.notes);
    texts(r.dispatch.notes);
    for (auto& f : r.findings) {
      text(f.message);
      for (auto& l : f.locations) text(l.note);
      texts(f.config.assumed_words);
      for (auto& x : f.fixes) text(x.description);
    }
    if (r.selection) texts(r.selection->notes);
  }

 private:
  std::string root_;
  std::map<std::string, std::string> seen_;  // root-relative -> as shown
};

}  // namespace

void showFromWorkingDirectory(ScanResult& s, const std::string& root) {
  if (fs::path(root).lexically_normal() == "." || fs::path(root).lexically_normal() == "./") return;
  Rebase rb(root);
  for (auto& r : s.results) rb.result(r);
  for (auto& u : s.units) rb.unit(u);
  for (auto& x : s.unanalysed) rb.unit(x.unit);
  for (auto& c : s.chains) rb.chain(c);
  for (auto& r : s.results) rb.resultTexts(r);
  for (auto& c : s.chains) rb.texts(c.chain.notes);
  rb.texts(s.notes);
  for (auto& x : s.unanalysed) rb.text(x.reason);
}

}  // namespace layergate::driver
