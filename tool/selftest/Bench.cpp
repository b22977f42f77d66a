#include "selftest/Bench.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace layergate::selftest {

BenchRun parseBench(const std::string& output) {
  BenchRun r;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# layergate all-reduce bench:", 0) == 0) {
      r.title = line.substr(2);
      int n = 0;
      if (std::sscanf(line.c_str(), "# layergate all-reduce bench: %d x", &n) == 1) r.ranks = n;
      r.standin = line.find("STAND-IN") != std::string::npos;
      continue;
    }
    if (line.rfind("SKIP:", 0) == 0) {
      r.skipped = true;
      r.notes.push_back(line);
      continue;
    }
    if (line.rfind("note:", 0) == 0 || line.rfind("# leave to NCCL", 0) == 0 || line.rfind("# floor", 0) == 0 ||
        line.rfind("ERROR", 0) == 0) {
      r.notes.push_back(line);
      continue;
    }
    long long bytes = 0, count = 0, wrong = 0;
    char type[32], algo[96];
    double us = 0, a = 0, b = 0;
    if (std::sscanf(line.c_str(), " %lld %lld %31s %95s %lf %lf %lf %lld", &bytes, &count, type, algo, &us, &a, &b,
                    &wrong) == 8) {
      if (std::string(algo).rfind("floor", 0) == 0) continue;
      r.rows.push_back({bytes, count, type, algo, us, wrong});
    }
  }
  return r;
}

double algbw(std::int64_t bytes, double us) { return us > 0 ? static_cast<double>(bytes) / us / 1e3 : 0; }
double busbw(double a, int ranks) { return ranks > 0 ? a * 2.0 * (ranks - 1) / ranks : 0; }

std::string renderSpeedTable(const BenchRun& run) {
  std::ostringstream o;
  std::vector<std::string> algos;
  for (const auto& r : run.rows) {
    std::string key = r.algo.rfind("dispatch", 0) == 0 ? "dispatch" : r.algo;
    if (std::find(algos.begin(), algos.end(), key) == algos.end()) algos.push_back(key);
  }
  char buf[256];
  for (const auto& algo : algos) {
    o << "# " << algo << (run.standin ? "  [PCIe STAND-IN: buffers in mapped pinned host memory]" : "")
      << "  (out-of-place, " << run.ranks << " ranks)\n";
    o << "#       size         count      type   redop     time   algbw   busbw #wrong\n";
    o << "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)\n";
    for (const auto& r : run.rows) {
      std::string key = r.algo.rfind("dispatch", 0) == 0 ? "dispatch" : r.algo;
      if (key != algo) continue;
      const double a = algbw(r.bytes, r.us);
      std::snprintf(buf, sizeof buf, "%12lld  %12lld  %8s  %6s  %7.2f  %6.2f  %6.2f  %5lld%s\n",
                    static_cast<long long>(r.bytes), static_cast<long long>(r.count), r.type.c_str(), "sum", r.us, a,
                    busbw(a, run.ranks), static_cast<long long>(r.wrong),
                    key == "dispatch" ? ("  " + r.algo.substr(8)).c_str() : "");
      o << buf;
    }
  }
  return o.str();
}

bool isTierKernel(const std::string& a) {
  return a == "one_shot_push" || a == "two_shot_push" || a == "one_stage_pull" || a == "two_stage_pull";
}

std::string ThresholdFit::summary() const {
  std::string s = "world size " + std::to_string(world_size) + (nvlink ? ", NVLink: " : ", PCIe stand-in: ");
  for (size_t i = 0; i < thresholds.size(); ++i) {
    const auto& [k, v] = thresholds[i];
    s += (i ? ", " : "") + k + " = " + (v == kAll ? std::string("no limit") : std::to_string(v));
  }
  return s;
}

ThresholdFit fitThresholds(const BenchRun& run, bool nvlink) {
  ThresholdFit f;
  f.world_size = run.ranks;
  f.nvlink = nvlink;
  std::map<std::int64_t, std::map<std::string, double>> t;  // size -> kernel -> us
  for (const auto& r : run.rows)
    if (isTierKernel(r.algo) && r.wrong == 0) t[r.bytes][r.algo] = r.us;
  if (t.empty()) return f;
  std::vector<std::int64_t> sizes;
  for (const auto& [b, m] : t) {
    sizes.push_back(b);
    std::string best;
    double bt = std::numeric_limits<double>::infinity();
    for (const auto& [k, us] : m)
      if (us < bt) bt = us, best = k;
    f.fastest[b] = best;
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto time_of = [&](std::int64_t b, const std::string& k) {
    auto it = t[b].find(k);
    return it == t[b].end() ? inf : it->second / t[b][f.fastest[b]];
  };
  // Boundaries: 0 (tier unused) or a measured size (tier serves up to it).
  std::vector<std::int64_t> cand{0};
  cand.insert(cand.end(), sizes.begin(), sizes.end());
  const std::int64_t largest = sizes.back();
  auto limit = [&](std::int64_t b) { return b >= largest ? kAll : static_cast<std::uint64_t>(b); };
  double best = inf;
  if (nvlink) {
    std::int64_t ba = 0, bb = 0;
    for (std::int64_t a : cand)
      for (std::int64_t b : cand) {
        if (b < a && b != 0) continue;
        double c = 0;
        for (std::int64_t s : sizes)
          c += time_of(s, s <= a ? "one_shot_push" : s <= std::max(a, b) ? "one_stage_pull" : "two_stage_pull");
        if (c < best - 1e-9) best = c, ba = a, bb = std::max(a, b);
      }
    f.thresholds = {{"nvlink_one_shot_max", limit(ba)}, {"nvlink_one_stage_max", limit(bb)}};
  } else {
    std::int64_t bc = 0;
    for (std::int64_t a : cand) {
      double c = 0;
      for (std::int64_t s : sizes) c += time_of(s, s <= a ? "one_shot_push" : "two_shot_push");
      if (c < best - 1e-9) best = c, bc = a;
    }
    f.thresholds = {{"pcie_one_shot_max", limit(bc)}};
  }
  f.cost = best;
  return f;
}

std::string thresholdsJson(const std::vector<ThresholdFit>& fits, const std::string& machine) {
  // Written by hand, one entry a line, so that the header's small reader and
  // a person both find it easy.
  std::ostringstream o;
  o << "{\n  \"format\": \"layergate-thresholds/1\",\n  \"machine\": " << nlohmann::json(machine).dump()
    << ",\n  \"entries\": [";
  bool first = true;
  for (const auto& f : fits)
    for (const auto& [k, v] : f.thresholds) {
      o << (first ? "\n" : ",\n") << "    {\"key\": \"" << k << "\", \"world_size\": " << f.world_size
        << ", \"bytes\": " << v << "}";
      first = false;
    }
  o << "\n  ]\n}\n";
  return o.str();
}

}  // namespace layergate::selftest
