#include "selftest/Static.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace layergate::selftest {

bool StaticCell::noKernelGap() const {
  if (!admits()) return false;
  for (const auto& p : parts)
    if (p.kind == "none" && !p.precondition) {
      std::int64_t lo = std::max(p.lo, has_sizes ? gate_lo : p.lo);
      std::int64_t hi = p.hi;
      if (has_sizes && gate_hi >= 0) hi = hi < 0 ? gate_hi : std::min(hi, gate_hi);
      if (hi < 0 || lo <= hi) return true;
    }
  return false;
}

bool StaticCell::throwGap() const {
  if (!admits()) return false;
  bool launch = false, thr = false;
  for (const auto& p : parts) {
    if (p.precondition) continue;
    launch = launch || p.kind == "launch";
    thr = thr || p.kind == "throw";
  }
  return thr && !launch;
}

const StaticCell* findCell(const StaticMatrix& m, int world_size, bool full_nvlink) {
  for (const auto& c : m.cells)
    if (c.world_size == world_size && c.full_nvlink == full_nvlink) return &c;
  return nullptr;
}

const StaticPart* partFor(const StaticCell& c, std::int64_t bytes) {
  // Parts may overlap (conditions the analysis leaves free: a forced
  // algorithm, a table lookup): a launch that can serve the size comes first,
  // then a path with no kernel, then a throw; precondition parts last.
  for (int pass = 0; pass < 2; ++pass)
    for (const char* kind : {"launch", "none", "throw"})
      for (const auto& p : c.parts)
        if (p.precondition == (pass == 1) && p.kind == kind && p.covers(bytes)) return &p;
  return nullptr;
}

namespace {
bool covered(const StaticCell& c, std::int64_t bytes, const char* kind) {
  for (const auto& p : c.parts)
    if (!p.precondition && p.kind == kind && p.covers(bytes)) return true;
  return false;
}
}  // namespace

std::string sizeText(std::int64_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  for (int u = 4; u >= 1; --u) {
    const std::int64_t unit = std::int64_t(1) << (10 * u);
    if (b >= unit && b % unit == 0) return std::to_string(b / unit) + " " + units[u];
    if (b > unit && (b + 16) % unit == 0) return std::to_string((b + 16) / unit) + " " + units[u] + " - 16 B";
  }
  return std::to_string(b) + " B";
}

std::string rangeText(std::int64_t lo, std::int64_t hi) {
  if (lo <= 1 && hi < 0) return "any size";
  if (hi < 0) return ">= " + sizeText(lo);
  // "< 256 KiB" reads better than "<= 262143 B".
  const std::string upper = (hi + 1) % 1024 == 0 ? "< " + sizeText(hi + 1) : "<= " + sizeText(hi);
  if (lo <= 1) return upper;
  return sizeText(lo) + " .. " + ((hi + 1) % 1024 == 0 ? upper : sizeText(hi));
}

namespace {

std::string cellName(const StaticCell& c) {
  return "world size " + std::to_string(c.world_size) + ", " + (c.full_nvlink ? "NVLink" : "PCIe");
}

std::string gateWords(const StaticCell& c) {
  std::string sizes = c.has_sizes ? " for " + rangeText(c.gate_lo, c.gate_hi) : "";
  if (c.gate == "admitted") return "your gate admits it" + sizes;
  if (c.gate == "admitted_when") return "your gate admits it when " + c.condition + sizes;
  if (c.gate == "undecided") return "the analysis could not decide whether your gate admits it";
  return "your gate does not admit it (the custom all-reduce stays off; NCCL runs)";
}

std::string dispatchWords(const StaticCell& c) {
  std::vector<const StaticPart*> launch, none, thr;
  std::vector<std::string> seen;
  for (const auto& p : c.parts) {
    if (p.precondition) continue;
    const std::string key = p.kind + "|" + p.kernel + "|" + rangeText(p.lo, p.hi);
    if (p.kind != "throw" && std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    if (p.kind == "launch") launch.push_back(&p);
    else if (p.kind == "none") none.push_back(&p);
    else thr.push_back(&p);
  }
  if (launch.empty() && !none.empty() && thr.empty()) return "the dispatch launches no kernel";
  if (launch.empty() && none.empty() && !thr.empty()) return "the dispatch throws (" + thr.front()->kernel + ")";
  if (launch.empty() && none.empty()) return "the dispatch was not analysed for it";
  std::string s = "the dispatch launches ";
  for (size_t i = 0; i < launch.size(); ++i)
    s += (i ? ", " : "") + launch[i]->kernel + " (" + rangeText(launch[i]->lo, launch[i]->hi) + ")";
  for (const auto* p : none) s += ", no kernel (" + rangeText(p->lo, p->hi) + ")";
  if (!thr.empty()) s += "; it may also throw (" + std::to_string(thr.size()) + " checks)";
  return s;
}

}  // namespace

std::string describeCell(const StaticCell& c) {
  std::string s = cellName(c) + ": " + gateWords(c);
  if (!c.admits()) return s;
  s += ", and " + dispatchWords(c);
  if (c.noKernelGap()) s += " [LG001: the output is never written]";
  else if (c.throwGap()) s += " [LG002]";
  return s;
}

std::string expectedOutcome(const StaticCell& c, std::int64_t bytes) {
  if (covered(c, bytes, "launch")) return "ok";
  if (covered(c, bytes, "none")) return "no kernel ran";
  if (covered(c, bytes, "throw")) return "throws";
  return "?";
}

std::string expectText(const StaticCell& c, std::int64_t bytes) {
  const bool launch = covered(c, bytes, "launch"), none = covered(c, bytes, "none"), thr = covered(c, bytes, "throw");
  std::string kernels;
  for (const auto& p : c.parts)
    if (!p.precondition && p.kind == "launch" && p.covers(bytes) && kernels.find(p.kernel) == std::string::npos)
      kernels += (kernels.empty() ? "" : "|") + p.kernel;
  const std::string adm = c.gate == "admitted_when" ? "admitted when " + c.condition : std::string("admitted");
  if (c.admitsSize(bytes) && none && !launch) return "LG001 (" + adm + ", no kernel)";
  if (c.admitsSize(bytes) && none) return "LG001 on some paths (" + adm + ")";
  if (c.admitsSize(bytes) && thr && !launch) return "LG002 (" + adm + ", throws)";
  const std::string d = launch ? "launch " + kernels : none ? "no kernel" : thr ? "throws" : "dispatch not analysed";
  if (c.admitsSize(bytes)) return adm + "; " + d;
  return "gate blocks; " + d;
}

nlohmann::json toJson(const StaticCell& c) {
  nlohmann::json j{{"world_size", c.world_size}, {"full_nvlink", c.full_nvlink}, {"gate", c.gate}};
  if (!c.condition.empty()) j["condition"] = c.condition;
  if (c.has_sizes) j["gate_sizes"] = {{"lo", c.gate_lo}, {"hi", c.gate_hi < 0 ? nlohmann::json(nullptr) : nlohmann::json(c.gate_hi)}};
  j["dispatch"] = nlohmann::json::array();
  for (const auto& p : c.parts)
    j["dispatch"].push_back({{"kind", p.kind}, {"kernel", p.kernel}, {"lo", p.lo},
                             {"hi", p.hi < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.hi)},
                             {"precondition", p.precondition}});
  if (!c.examples.empty()) {
    j["examples"] = nlohmann::json::array();
    for (const auto& e : c.examples) {
      nlohmann::json v = nlohmann::json::object();
      for (const auto& [k, x] : e.values) v[k] = x;
      nlohmann::json t = nlohmann::json::object();
      for (const auto& [k, x] : e.texts) t[k] = x;
      j["examples"].push_back(
          {{"kind", e.kind}, {"kernel", e.kernel}, {"bytes", e.bytes}, {"values", v}, {"texts", t}, {"env", e.env}});
    }
  }
  j["lg001"] = c.noKernelGap();
  j["words"] = describeCell(c);
  return j;
}

nlohmann::json toJson(const StaticMatrix& m) {
  nlohmann::json j{{"python", m.python}, {"cpp", m.cpp}, {"cells", nlohmann::json::array()}};
  for (const auto& c : m.cells) j["cells"].push_back(toJson(c));
  return j;
}

bool passableText(const std::string& t) {
  return !t.empty() &&
         t.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == std::string::npos;
}

namespace {

// A plan comes from another machine: every number is checked before it is
// converted (a float such as 1e24 converted to int64 is undefined behaviour).
[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

std::int64_t integer(const nlohmann::json& x, const std::string& where, std::int64_t lo, std::int64_t hi) {
  if (!x.is_number_integer()) bad(where, "expected an integer, got " + x.dump());
  if (x.is_number_unsigned() && x.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    bad(where, "out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  const std::int64_t v = x.get<std::int64_t>();
  if (v < lo || v > hi) bad(where, "out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t field(const nlohmann::json& o, const char* key, const std::string& where, std::int64_t lo,
                   std::int64_t hi, std::int64_t dflt) {
  if (!o.contains(key)) return dflt;
  return integer(o[key], where + "." + key, lo, hi);
}

// An upper bound: an integer, or null for none (-1).
std::int64_t upper(const nlohmann::json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o[key].is_null()) return -1;
  return integer(o[key], where + "." + key, 0, kMax);
}

std::string text(const nlohmann::json& o, const char* key, const std::string& where, const char* dflt) {
  if (!o.contains(key)) return dflt;
  if (!o[key].is_string()) bad(where + "." + key, "expected a string");
  return o[key].get<std::string>();
}

const nlohmann::json& array(const nlohmann::json& o, const char* key, const std::string& where) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!o.contains(key)) return empty;
  if (!o[key].is_array()) bad(where + "." + key, "expected an array");
  return o[key];
}

}  // namespace

StaticMatrix matrixFromJson(const nlohmann::json& j) {
  if (!j.is_object()) bad("static", "expected an object");
  StaticMatrix m;
  m.python = text(j, "python", "static", "");
  m.cpp = text(j, "cpp", "static", "");
  if (!j.contains("cells")) bad("static", "no cells");
  const nlohmann::json& cells = array(j, "cells", "static");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const nlohmann::json& jc = cells[i];
    const std::string at = "static.cells[" + std::to_string(i) + "]";
    if (!jc.is_object()) bad(at, "expected an object");
    StaticCell c;
    if (!jc.contains("world_size")) bad(at, "no world_size");
    c.world_size = static_cast<int>(integer(jc["world_size"], at + ".world_size", 1, 1024));
    if (!jc.contains("full_nvlink") || !jc["full_nvlink"].is_boolean()) bad(at + ".full_nvlink", "expected true or false");
    c.full_nvlink = jc["full_nvlink"].get<bool>();
    c.gate = text(jc, "gate", at, "blocked");
    c.condition = text(jc, "condition", at, "");
    if (jc.contains("gate_sizes")) {
      const nlohmann::json& gs = jc["gate_sizes"];
      if (!gs.is_object()) bad(at + ".gate_sizes", "expected an object");
      c.has_sizes = true;
      c.gate_lo = field(gs, "lo", at + ".gate_sizes", 0, kMax, 0);
      c.gate_hi = upper(gs, "hi", at + ".gate_sizes");
    }
    const nlohmann::json& parts = array(jc, "dispatch", at);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const nlohmann::json& jp = parts[k];
      const std::string pat = at + ".dispatch[" + std::to_string(k) + "]";
      if (!jp.is_object()) bad(pat, "expected an object");
      StaticPart p;
      p.kind = text(jp, "kind", pat, "none");
      p.kernel = text(jp, "kernel", pat, "");
      p.lo = field(jp, "lo", pat, 0, kMax, 0);
      p.hi = upper(jp, "hi", pat);
      if (jp.contains("precondition") && !jp["precondition"].is_boolean()) bad(pat + ".precondition", "expected true or false");
      p.precondition = jp.value("precondition", false);
      c.parts.push_back(p);
    }
    const nlohmann::json& examples = array(jc, "examples", at);
    for (std::size_t k = 0; k < examples.size(); ++k) {
      const nlohmann::json& je = examples[k];
      const std::string eat = at + ".examples[" + std::to_string(k) + "]";
      if (!je.is_object()) bad(eat, "expected an object");
      StaticExample e;
      e.kind = text(je, "kind", eat, "launch");
      e.kernel = text(je, "kernel", eat, "");
      e.bytes = field(je, "bytes", eat, 0, kMax, 0);
      e.env = text(je, "env", eat, "");
      if (je.contains("values")) {
        if (!je["values"].is_object()) bad(eat + ".values", "expected an object");
        for (const auto& [k2, x] : je["values"].items())
          e.values.push_back({k2, integer(x, eat + ".values." + k2, std::numeric_limits<std::int64_t>::min(), kMax)});
      }
      if (je.contains("texts")) {
        if (!je["texts"].is_object()) bad(eat + ".texts", "expected an object");
        for (const auto& [k2, x] : je["texts"].items()) {
          // A text travels in a harness argument (ws:nv:bytes:name=value,...).
          if (!x.is_string() || !passableText(x.get<std::string>()))
            bad(eat + ".texts." + k2, "expected a non-empty string of letters, digits, '_', '.' and '-'");
          e.texts.push_back({k2, x.get<std::string>()});
        }
      }
      c.examples.push_back(std::move(e));
    }
    m.cells.push_back(std::move(c));
  }
  return m;
}

}  // namespace layergate::selftest
