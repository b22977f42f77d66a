#include "selftest/Selftest.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "selftest/Bench.h"
#include "selftest/Harness.h"
#include "selftest/Process.h"

#ifndef LAYERGATE_KERNELS_BUILD_DIR
#define LAYERGATE_KERNELS_BUILD_DIR ""
#endif

namespace layergate::selftest {

namespace fs = std::filesystem;
using nlohmann::json;

json planJson(const Plan& p) {
  json j{{"format", "layergate-selftest-plan/1"}, {"notes", p.notes}};
  if (!p.target.empty()) j["target"] = p.target;
  if (p.has_static) j["static"] = toJson(p.matrix);
  if (!p.header.empty()) {
    j["harness"] = {{"header", p.header}, {"source", p.harness_source}, {"shims", p.harness_shims},
                    {"calls", p.harness_calls}, {"notes", p.harness_notes}, {"error", p.harness_error},
                    {"std", p.harness_std}, {"defines", p.harness_defines}, {"include_dirs", p.harness_include_dirs},
                    {"tvm_ffi", p.harness_tvm_ffi}, {"optional", p.harness_optional}};
  }
  return j;
}

Plan planFromJson(const json& j) {
  if (!j.is_object() || j.value("format", "") != "layergate-selftest-plan/1")
    throw std::runtime_error("not a layergate selftest plan");
  return gateFromJson(j);
}

Plan gateFromJson(const json& j) {
  Plan p;
  if (!j.is_object()) throw std::runtime_error("a gate of the plan is not an object");
  p.target = j.value("target", "");
  p.notes = j.value("notes", std::vector<std::string>{});
  if (j.contains("static")) {
    p.has_static = true;
    p.matrix = matrixFromJson(j["static"]);
  }
  if (j.contains("harness")) {
    const json& h = j["harness"];
    p.header = h.value("header", "");
    p.harness_source = h.value("source", "");
    p.harness_shims = h.value("shims", std::map<std::string, std::string>{});
    p.harness_calls = h.value("calls", "");
    p.harness_notes = h.value("notes", std::vector<std::string>{});
    p.harness_error = h.value("error", "");
    p.harness_std = h.value("std", "");
    p.harness_defines = h.value("defines", std::vector<std::string>{});
    p.harness_include_dirs = h.value("include_dirs", std::vector<std::string>{});
    p.harness_tvm_ffi = h.value("tvm_ffi", false);
    p.harness_optional = h.value("optional", false);
    // Flags go to nvcc: a plan from elsewhere names a standard and macros, nothing else.
    static const std::regex std_ok("(c|gnu)\\+\\+[0-9a-z]+"), define_ok("[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?");
    if (!p.harness_std.empty() && !std::regex_match(p.harness_std, std_ok))
      throw std::runtime_error("harness.std: expected a C++ standard such as c++20, got " + p.harness_std);
    for (const auto& d : p.harness_defines)
      if (!std::regex_match(d, define_ok)) throw std::runtime_error("harness.defines: not a macro definition: " + d);
  }
  return p;
}

std::string writeHarness(const Plan& p, const std::string& dir) {
  fs::create_directories(fs::path(dir) / "include");
  for (const auto& [rel, body] : p.harness_shims) {
    fs::path f = fs::path(dir) / "include" / rel;
    fs::create_directories(f.parent_path());
    std::ofstream(f) << body;
  }
  fs::path cu = fs::path(dir) / "harness.cu";
  std::ofstream(cu) << p.harness_source;
  return cu.string();
}

std::vector<HarnessCell> harnessCells(const StaticMatrix& m, bool quick) {
  std::vector<HarnessCell> cells;
  // Example configurations (a gate that hands values down): one cell each,
  // every gap kept with --quick and one launch per matrix cell.
  for (const auto& c : m.cells) {
    bool launch_seen = false;
    for (const auto& e : c.examples) {
      if (quick && e.kind == "launch" && launch_seen) continue;
      launch_seen |= e.kind == "launch";
      HarnessCell h{c.world_size, c.full_nvlink, e.bytes, e.values,
                    e.kind == "launch" ? "ok" : e.kind == "throw" ? "throws" : "no kernel ran", e.kernel, e.texts};
      cells.push_back(std::move(h));
    }
  }
  if (!cells.empty()) return cells;
  int max_ws = 2;
  for (const auto& c : m.cells) max_ws = std::max(max_ws, c.world_size);
  max_ws = std::min(max_ws, 8);
  for (int ws = 2; ws <= max_ws; ++ws)
    for (int nv = 1; nv >= 0; --nv) {
      const StaticCell* c = findCell(m, ws, nv == 1);
      std::set<std::int64_t> sizes;
      if (c)
        for (const auto& p : c->parts) {
          if (p.precondition || p.kind == "throw") continue;
          // A size inside the part: 8 KiB when it is there, else its low end, in
          // whole 16-byte packets.
          std::int64_t s = std::max<std::int64_t>(p.lo, 8192);
          if (p.hi >= 0 && s > p.hi) s = std::max<std::int64_t>(p.lo, 16);
          s = (s + 15) / 16 * 16;
          if (p.hi >= 0 && s > p.hi) continue;
          s = std::min<std::int64_t>(s, 8 << 20);
          sizes.insert(s);
          if (quick) break;
        }
      if (sizes.empty()) sizes.insert(8192);
      for (auto s : sizes) {
        HarnessCell h;
        h.world_size = ws;
        h.full_nvlink = nv == 1;
        h.bytes = s;
        cells.push_back(std::move(h));
      }
    }
  return cells;
}

namespace {

std::string exeDir(const Options& o) {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) p = o.self_exe;
  return p.parent_path().string();
}

bool executable(const fs::path& p) { return fs::is_regular_file(p) && access(p.c_str(), X_OK) == 0; }

void progress(const std::string& s) {
  std::cerr << "layergate selftest: " << s << "\n";
  std::cerr.flush();
}

struct Phase {
  std::string name;    // "proof", "standin", "speed", "harness"
  std::string title;
  std::string status = "ok";  // ok, failed, skipped
  std::string summary;
  std::vector<std::string> failures;
  std::ostringstream text;
  json data = json::object();
};

std::string cellLabel(int ws, bool nv) { return "world size " + std::to_string(ws) + (nv ? ", NVLink" : ", PCIe"); }

// The correctness runner, as a child with a deadline.
void runProof(const Options& o, Phase& ph, bool standin) {
  const std::string prog = findKernelProgram(o, "layergate_allreduce_check");
  if (prog.empty()) {
    ph.status = "failed";
    ph.summary = "layergate_allreduce_check not found (build the kernels with nvcc: cmake -DLAYERGATE_CUDA=ON; or pass --kernels-dir)";
    ph.failures.push_back(ph.summary);
    return;
  }
  std::vector<std::string> argv{prog, "--failures-only", "--timeout-ms", "500"};
  if (o.quick || standin) argv.push_back("--quick");
  if (standin) argv.push_back("--host-mapped");
  const double deadline = o.quick ? 240 : standin ? 300 : 600;
  progress(std::string(standin ? "PCIe stand-in: " : "runtime proof: ") + "running " + fs::path(prog).filename().string() +
           (o.quick || standin ? " --quick" : "") + " (deadline " + std::to_string(static_cast<int>(deadline)) + " s)");
  ChildResult r = runChild(argv, deadline, [&](const std::string& line) {
    if (line.rfind("group ", 0) == 0) progress(std::string(standin ? "PCIe stand-in: " : "runtime proof: ") + line);
  });
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("FAIL", 0) == 0) ph.failures.push_back(line);
    if (line.rfind("group ", 0) == 0 || line.rfind("note:", 0) == 0 || line.find(" passed, ") != std::string::npos ||
        line.rfind("SKIP", 0) == 0 || line.rfind("# ", 0) == 0) {
      ph.text << "  " << line << "\n";
    }
  }
  const std::string last = lastLine(r.output);
  ph.data = {{"program", prog}, {"args", argv}, {"exit", r.exit_code}, {"seconds", r.seconds},
             {"timed_out", r.timed_out}, {"failures", ph.failures}, {"last_line", last}};
  if (!r.started) {
    ph.status = "failed";
    ph.summary = r.error;
    ph.failures.push_back(r.error);
  } else if (r.timed_out) {
    ph.status = "failed";
    ph.summary = "hang: the runner passed its host deadline of " + std::to_string(static_cast<int>(deadline)) +
                 " s and was killed (last line: " + last + ")";
    ph.failures.push_back(ph.summary);
  } else if (r.exit_code != 0) {
    ph.status = "failed";
    ph.summary = last + " (exit " + std::to_string(r.exit_code) + (r.signal ? ", signal " + std::to_string(r.signal) : "") + ")";
    if (ph.failures.empty()) ph.failures.push_back(ph.summary);
  } else {
    ph.summary = last;
  }
}

std::string machineName(const Topology& t) {
  if (t.gpus.empty()) return "";
  return std::to_string(t.gpus.size()) + " x " + t.gpus[0].name + ", " +
         (t.full_nvlink ? (*t.full_nvlink ? "NVLink" : "PCIe") : std::string("links unknown"));
}

void runSpeed(const Options& o, const Topology& topo, Phase& ph, Phase* standin_ph) {
  const std::string prog = findKernelProgram(o, "layergate_allreduce_bench");
  if (prog.empty()) {
    ph.status = "failed";
    ph.summary = "layergate_allreduce_bench not found (build the kernels with nvcc, or pass --kernels-dir)";
    ph.failures.push_back(ph.summary);
    return;
  }
  std::vector<ThresholdFit> fits;
  auto bench = [&](bool standin, Phase& p) -> bool {
    std::vector<std::string> argv{prog};
    if (o.quick || standin) {
      argv.insert(argv.end(), {"--iters", "20", "--replays", "5", "--max-bytes", standin ? "1048576" : "4194304"});
    }
    if (standin) argv.push_back("--host-mapped");
    const double deadline = o.quick ? 180 : 600;
    progress(std::string(standin ? "PCIe stand-in: " : "speed: ") + "running " + fs::path(prog).filename().string() +
             " (CUDA graph replays, medians; deadline " + std::to_string(static_cast<int>(deadline)) + " s)");
    ChildResult r = runChild(argv, deadline, {}, {{"NCCL_NVLS_ENABLE", "0"}});
    BenchRun run = parseBench(r.output);
    p.data["bench"] = {{"program", prog}, {"args", argv}, {"exit", r.exit_code}, {"timed_out", r.timed_out},
                       {"seconds", r.seconds}, {"title", run.title}, {"notes", run.notes}};
    json rows = json::array();
    for (const auto& row : run.rows) {
      const double a = algbw(row.bytes, row.us);
      rows.push_back({{"size", row.bytes}, {"count", row.count}, {"type", row.type}, {"algo", row.algo},
                      {"time_us", row.us}, {"algbw", a}, {"busbw", busbw(a, run.ranks)}, {"wrong", row.wrong}});
      if (row.wrong) p.failures.push_back(row.algo + " at " + std::to_string(row.bytes) + " B: " + std::to_string(row.wrong) + " wrong elements");
    }
    p.data["rows"] = rows;
    if (!r.started || r.timed_out || r.exit_code != 0) {
      p.status = "failed";
      p.summary = !r.started ? r.error
                  : r.timed_out ? "hang: the bench passed its host deadline and was killed (last line: " + lastLine(r.output) + ")"
                                : "bench failed (exit " + std::to_string(r.exit_code) + "): " + lastLine(r.output);
      p.failures.push_back(p.summary);
      return false;
    }
    if (run.skipped) {
      p.status = "skipped";
      p.summary = run.notes.empty() ? "bench skipped" : run.notes.front();
      return false;
    }
    if (!p.failures.empty()) p.status = "failed";
    p.text << "  " << run.title << "\n";
    std::istringstream tab(renderSpeedTable(run));
    for (std::string line; std::getline(tab, line);) p.text << "  " << line << "\n";
    for (const auto& n : run.notes) p.text << "  " << n << "\n";
    ThresholdFit fit = fitThresholds(run, !standin);
    if (!fit.thresholds.empty()) {
      fits.push_back(fit);
      p.text << "  fastest kernel per size:";
      for (const auto& [b, k] : fit.fastest) p.text << " " << sizeText(b) << "=" << k;
      p.text << "\n  thresholds: " << fit.summary() << "\n";
      p.data["fastest"] = fit.fastest;
      p.data["thresholds"] = fit.thresholds;
    }
    if (p.summary.empty())
      p.summary = std::to_string(run.rows.size()) + " rows" + (fit.thresholds.empty() ? "" : "; " + fit.summary());
    return true;
  };
  if (topo.worldSize() < 2 || !topo.all_peer) {
    ph.status = "skipped";
    ph.summary = "the bench needs two GPUs with peer access (found " + std::to_string(topo.worldSize()) + ")";
  } else {
    bench(false, ph);
  }
  if (standin_ph && standin_ph->status != "failed") {
    if (topo.worldSize() >= 2 && topo.all_peer) bench(true, *standin_ph);
    else standin_ph->text << "  (speed over the stand-in needs two GPUs; correctness above ran)\n";
  }
  if (!fits.empty()) {
    std::ofstream f(o.thresholds_out);
    f << thresholdsJson(fits, machineName(topo));
    const std::string where = fs::absolute(o.thresholds_out).string();
    ph.text << "  thresholds written to " << where
            << " (load with layergate::Thresholds::from_file; see kernels/README.md)\n";
    ph.data["thresholds_file"] = where;
  }
}

void runHarness(const Options& o, const Plan& plan, const Topology& topo, Phase& ph, const std::string& work_dir) {
  if (!plan.harness_error.empty()) {
    ph.status = plan.harness_optional ? "skipped" : "failed";
    ph.summary = "no harness: " + plan.harness_error;
    if (!plan.harness_optional) ph.failures.push_back(ph.summary);
    return;
  }
  const std::string nvcc = findNvcc(o);
  std::string dir = work_dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/layergate-selftest-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("cannot make a temporary directory");
    dir = tmpl;
  }
  const std::string cu = writeHarness(plan, dir);
  const std::string exe = (fs::path(dir) / "harness").string();
  int cc = topo.gpus.empty() ? 90 : topo.gpus[0].cc;
  std::string why;
  const std::vector<std::string> argv = harnessCompileCommand(o, plan, dir, cc, &why);
  if (argv.empty()) {
    ph.status = "failed";
    ph.summary = why;
    ph.failures.push_back(ph.summary);
    return;
  }
  if (plan.harness_tvm_ffi) ph.data["tvm_ffi"] = findTvmFfi(o);
  progress("your dispatch: compiling the harness with " + nvcc + " (sm_" + std::to_string(cc) + ")");
  ChildResult c = runChild(argv, 600);
  ph.data["harness"] = cu;
  ph.data["calls"] = plan.harness_calls;
  if (!c.started || c.timed_out || c.exit_code != 0) {
    ph.status = "failed";
    ph.summary = "the harness did not compile: " + (c.started ? lastLine(c.output) : c.error);
    ph.failures.push_back(ph.summary);
    ph.text << c.output.substr(0, 4000);
    return;
  }
  std::vector<HarnessCell> cells = harnessCells(plan.matrix, o.quick);
  std::vector<HarnessOutcome> outcomes;
  size_t next = 0;
  const long per_cell_ms = static_cast<long>(o.cell_timeout_s * 1000);
  // A hang or a device error ends the harness process (its context is lost):
  // the cell is recorded and a fresh process takes the remaining cells.
  while (next < cells.size()) {
    std::vector<std::string> run{exe, "--timeout-ms", std::to_string(per_cell_ms)};
    for (size_t i = next; i < cells.size(); ++i) run.push_back(cells[i].arg());
    const double deadline = 30.0 + (cells.size() - next) * (o.cell_timeout_s + 5.0);
    progress("your dispatch: running " + std::to_string(cells.size() - next) + " cell(s) from " + cells[next].arg());
    ChildResult r = runChild(run, deadline);
    if (r.output.find("SKIP: no CUDA device") != std::string::npos) {
      ph.status = "skipped";
      ph.summary = "the harness found no CUDA device";
      return;
    }
    std::vector<HarnessOutcome> got = parseHarnessOutput(r.output);
    for (size_t i = 0; i < got.size() && next + i < cells.size(); ++i) {
      got[i].cell = cells[next + i];  // the line names ws, nv, bytes; the cell also has its values
      outcomes.push_back(got[i]);
    }
    next += got.size();
    if (next < cells.size() && (r.timed_out || r.exit_code != 0 || got.empty())) {
      // No line for this cell: the process died or hung inside it.
      HarnessOutcome h;
      h.cell = cells[next];
      h.status = r.timed_out ? "hang" : "error";
      h.detail = r.timed_out ? "the harness passed its host deadline and was killed"
                             : "the harness stopped (exit " + std::to_string(r.exit_code) + "): " + lastLine(r.output);
      outcomes.push_back(h);
      ++next;
    }
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-3s %-7s %10s  %-48s %-15s %s\n", "ws", "nvlink", "bytes", "static verdict", "run", "");
  ph.text << "  harness: " << cu << "\n  calls: " << plan.harness_calls << "\n";
  for (const auto& n : plan.harness_notes) ph.text << "  note: " << n << "\n";
  ph.text << buf;
  int confirmed = 0, confirmed_throws = 0, refuted = 0, admitted_bad = 0, not_run = 0;
  json rows = json::array();
  for (const auto& oc : outcomes) {
    const StaticCell* sc = findCell(plan.matrix, oc.cell.world_size, oc.cell.full_nvlink);
    std::string verdict = sc ? expectText(*sc, oc.cell.bytes) : "not in the static matrix";
    std::string judge;
    const bool lg001 = sc && sc->admitsSize(oc.cell.bytes) && verdict.rfind("LG001 (", 0) == 0;
    if (!oc.cell.expect.empty()) {
      // An example configuration: the static side said which leaf it reaches.
      std::string vals;
      for (const auto& [k, v] : oc.cell.values) vals += (vals.empty() ? "" : " ") + k + "=" + std::to_string(v);
      for (const auto& [k, t] : oc.cell.texts) vals += (vals.empty() ? "" : " ") + k + "=" + t;
      const bool gap = oc.cell.expect != "ok";
      verdict = (oc.cell.expect == "ok" ? "launch " + oc.cell.leaf
                 : oc.cell.expect == "throws" ? "LG002 (throws)" : "LG001 (no kernel)") + "; " + vals;
      if (gap && oc.status == oc.cell.expect && oc.cell.expect == "throws") judge = "LG002 confirmed", ++confirmed_throws;
      else if (gap && oc.status == oc.cell.expect) judge = "LG001 confirmed", ++confirmed;
      else if (gap && oc.status == "ok") judge = "refuted", ++refuted;
      else if (!gap && oc.status == "ok") judge = "as predicted";
      else if (!gap && oc.status == "no kernel ran") judge = "static said launch", ++refuted;
    } else if (lg001) {
      if (oc.status == "no kernel ran") judge = "LG001 confirmed", ++confirmed;
      else if (oc.status == "ok") judge = "LG001 refuted", ++refuted;
    } else if (sc) {
      const std::string want = expectedOutcome(*sc, oc.cell.bytes);
      if (want == "no kernel ran" && oc.status == "no kernel ran") judge = "as predicted";
      else if (want == "ok" && oc.status == "ok") judge = "as predicted";
      else if (want == "throws" && oc.status == "throws") judge = "as predicted";
      else if (want == "ok" && oc.status == "no kernel ran") judge = "static said launch", ++refuted;
    }
    const bool admitted = sc && sc->admitsSize(oc.cell.bytes);
    if (oc.status == "not run") {
      ++not_run;
    } else if (admitted && oc.status != "ok") {
      ++admitted_bad;
      ph.failures.push_back(cellLabel(oc.cell.world_size, oc.cell.full_nvlink) + ", " + std::to_string(oc.cell.bytes) +
                            " B (admitted by the gate): " + oc.status + (oc.detail.empty() ? "" : " — " + oc.detail));
    }
    std::snprintf(buf, sizeof buf, "  %-3d %-7s %10lld  %-48s %-15s %s%s\n", oc.cell.world_size,
                  oc.cell.full_nvlink ? "yes" : "no", static_cast<long long>(oc.cell.bytes), verdict.c_str(),
                  oc.status.c_str(), judge.c_str(), oc.status == "ok" || oc.detail.empty() ? "" : ("  (" + oc.detail + ")").c_str());
    ph.text << buf;
    rows.push_back({{"world_size", oc.cell.world_size}, {"full_nvlink", oc.cell.full_nvlink}, {"bytes", oc.cell.bytes},
                    {"static", verdict}, {"run", oc.status}, {"detail", oc.detail}, {"judgement", judge},
                    {"admitted", admitted}});
  }
  ph.data["cells"] = rows;
  // Each rule's confirmations by its code (a throw confirmed is LG002, not LG001).
  ph.summary = std::to_string(outcomes.size()) + " cell runs; " + std::to_string(confirmed) + " LG001 confirmed, " +
               (confirmed_throws ? std::to_string(confirmed_throws) + " LG002 confirmed, " : "") +
               std::to_string(refuted) + " refuted; " + std::to_string(admitted_bad) + " admitted cell(s) without right sums" +
               (not_run ? "; " + std::to_string(not_run) + " not run" : "");
  if (admitted_bad) ph.status = "failed";
}

}  // namespace

std::string findKernelProgram(const Options& o, const std::string& name) {
  std::vector<fs::path> dirs;
  if (!o.kernels_dir.empty()) dirs.push_back(o.kernels_dir);
  if (const char* e = std::getenv("LAYERGATE_KERNELS_DIR")) dirs.push_back(e);
  const fs::path here = exeDir(o);
  dirs.push_back(here);
  dirs.push_back(here.parent_path() / "kernels");
  dirs.push_back(here.parent_path() / "libexec" / "layergate");
  if (*LAYERGATE_KERNELS_BUILD_DIR) dirs.push_back(LAYERGATE_KERNELS_BUILD_DIR);
  for (const auto& d : dirs)
    if (executable(d / name)) return (d / name).string();
  return "";
}

std::string findTvmFfi(const Options& o) {
  auto ok = [](const std::string& p) {
    return !p.empty() && fs::exists(fs::path(p) / "include" / "tvm" / "ffi" / "c_api.h") &&
           fs::exists(fs::path(p) / "lib" / "libtvm_ffi.so");
  };
  if (!o.tvm_ffi.empty()) return ok(o.tvm_ffi) ? o.tvm_ffi : "";
  if (const char* e = std::getenv("LAYERGATE_TVM_FFI"); e && ok(e)) return e;
  // pip's apache-tvm-ffi: the package directory holds include/ and lib/.
  ChildResult c = runChild({"python3", "-c", "import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))"}, 30);
  if (c.started && !c.timed_out && c.exit_code == 0) {
    std::string p = c.output;
    while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
    if (const std::size_t nl = p.rfind('\n'); nl != std::string::npos) p = p.substr(nl + 1);
    if (ok(p)) return p;
  }
  return "";
}

std::string findNvcc(const Options& o) {
  if (!o.nvcc.empty()) return o.nvcc;
  if (const char* e = std::getenv("NVCC")) return e;
  if (executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string d; std::getline(in, d, ':');)
      if (executable(fs::path(d) / "nvcc")) return (fs::path(d) / "nvcc").string();
  }
  return "";
}

std::vector<std::string> harnessCompileCommand(const Options& o, const Plan& plan, const std::string& dir, int cc,
                                               std::string* why) {
  const std::string nvcc = findNvcc(o);
  if (nvcc.empty()) {
    *why = "nvcc not found (set --nvcc or $NVCC): the harness is compiled at run time";
    return {};
  }
  // The flags SGLang's and vLLM's builds pass: some vLLM-family headers call
  // constexpr host functions from device code and use __device__ lambdas.
  std::vector<std::string> argv{nvcc, "-std=" + (plan.harness_std.empty() ? std::string("c++17") : plan.harness_std),
                                "-O2", "-arch=sm_" + std::to_string(cc), "--expt-relaxed-constexpr",
                                "--expt-extended-lambda", "-I" + dir + "/include",
                                "-I" + fs::path(plan.header).parent_path().string()};
  for (const auto& d : plan.harness_defines) argv.push_back("-D" + d);
  for (const auto& i : plan.harness_include_dirs) argv.push_back("-I" + i);
  for (const auto& i : o.include_dirs) argv.push_back("-I" + i);
  std::vector<std::string> link;
  if (plan.harness_tvm_ffi) {
    const std::string prefix = findTvmFfi(o);
    if (prefix.empty()) {
      *why = "the harness calls a JIT entry over tvm-ffi objects and needs tvm-ffi (include/ and lib/libtvm_ffi.so): "
             "pass --tvm-ffi PREFIX or set $LAYERGATE_TVM_FFI (pip's apache-tvm-ffi: the tvm_ffi package directory)";
      return {};
    }
    argv.push_back("-I" + prefix + "/include");
    if (fs::is_directory(prefix + "/3rdparty/dlpack/include")) argv.push_back("-I" + prefix + "/3rdparty/dlpack/include");
    link = {"-L" + prefix + "/lib", "-ltvm_ffi", "-Xlinker", "-rpath=" + prefix + "/lib"};
  }
  argv.insert(argv.end(), {"-o", (fs::path(dir) / "harness").string(), (fs::path(dir) / "harness.cu").string()});
  argv.insert(argv.end(), link.begin(), link.end());
  return argv;
}

int runSelftest(const Options& o, const Plan& plan, Topology topo, std::ostream& out) {
  std::vector<Plan> gates;
  if (plan.has_static || !plan.header.empty()) gates.push_back(plan);
  return runSelftest(o, gates, std::move(topo), out);
}

int runSelftest(const Options& o, const std::vector<Plan>& gates, Topology topo, std::ostream& out) {
  const bool as_json = o.format == "json";
  json j{{"tool", "layergate"}, {"command", "selftest"}, {"quick", o.quick}};
  j["topology"] = topologyJson(topo);
  if (!topo.has_gpu) {
    progress("topology: no CUDA GPU found");
    j["status"] = "no-gpu";
    j["exit"] = kExitNoGpu;
    if (as_json) out << j.dump(2) << "\n";
    else out << "no CUDA GPU found (" << topo.reason << "): nothing to test here (exit status 4)\n";
    return kExitNoGpu;
  }
  progress("topology: " + std::to_string(topo.worldSize()) + " GPU(s), " + topo.configText());
  std::ostringstream text;
  text << "layergate selftest" << (o.quick ? " --quick" : "") << "\n\n== Topology\n" << renderTopology(topo);

  // This machine's cell, for every gate.
  json more = json::array();
  for (const Plan& plan : gates) {
    if (!plan.has_static) continue;
    text << "\n== Static analysis for this machine (" << (plan.target.empty() ? "" : plan.target + ": ") << plan.matrix.python
         << " + " << plan.matrix.cpp << ")\n";
    json cells = json::array();
    std::vector<bool> flags;
    if (topo.full_nvlink) flags.push_back(*topo.full_nvlink);
    else flags = {true, false};
    for (bool nv : flags) {
      const StaticCell* c = findCell(plan.matrix, topo.worldSize(), nv);
      if (!c) {
        text << "  world size " << topo.worldSize() << ": not in the static matrix\n";
        continue;
      }
      text << "  " << describeCell(*c) << "\n";
      cells.push_back(toJson(*c));
    }
    if (!topo.full_nvlink) text << "  (NVLink unknown here: both cells shown)\n";
    json st{{"python", plan.matrix.python}, {"cpp", plan.matrix.cpp}, {"machine_cells", cells}};
    if (!plan.target.empty()) st["target"] = plan.target;
    // The first gate where a plan of one gate had it; the others beside it.
    if (!j.contains("static")) j["static"] = st;
    else more.push_back(st);
    for (const auto& n : plan.notes) text << "  note: " << n << "\n";
  }
  if (!more.empty()) j["more_gates"] = more;

  std::vector<std::unique_ptr<Phase>> phases;
  auto skipped = [&](const std::string& n) { return std::find(o.skip.begin(), o.skip.end(), n) != o.skip.end(); };
  auto add = [&](const std::string& name, const std::string& title) {
    phases.push_back(std::make_unique<Phase>());
    phases.back()->name = name;
    phases.back()->title = title;
    return phases.back().get();
  };
  Phase* proof = add("proof", "Runtime proof: reference kernels (kernels/), every result bit for bit, outputs sentinel-filled, "
                              "device spin timeout 500 ms, host deadline per run");
  if (skipped("proof")) proof->status = "skipped", proof->summary = "--skip proof";
  else runProof(o, *proof, false);

  Phase* standin = add("standin", "PCIe STAND-IN (not a real PCIe fabric): shared buffers in mapped pinned host memory, "
                                  "so every peer access crosses the host's PCIe link");
  if (skipped("standin")) standin->status = "skipped", standin->summary = "--skip standin";
  else runProof(o, *standin, true);

  Phase* speed = add("speed", "Speed against NCCL (nccl-tests columns; busbw = algbw x 2(n-1)/n) and thresholds");
  if (skipped("speed")) speed->status = "skipped", speed->summary = "--skip speed";
  else runSpeed(o, topo, *speed, skipped("standin") ? nullptr : standin);

  int harnesses = 0;
  for (const Plan& plan : gates) harnesses += !plan.header.empty();
  for (std::size_t g = 0, n = 0; g < gates.size(); ++g) {
    const Plan& plan = gates[g];
    if (plan.header.empty()) continue;
    ++n;
    Phase* h = add("harness", "Your dispatch, run: " + (plan.target.empty() ? "" : plan.target + ": ") + plan.header);
    // One build directory per harness under --work-dir when there are several.
    const std::string work = o.work_dir.empty() || harnesses == 1
                                 ? o.work_dir
                                 : (fs::path(o.work_dir) / ("gate-" + std::to_string(n))).string();
    if (skipped("harness")) h->status = "skipped", h->summary = "--skip harness";
    else if (!plan.has_static) h->status = "failed", h->summary = "no static matrix to run", h->failures.push_back(h->summary);
    else runHarness(o, plan, topo, *h, work);
  }

  int failed = 0;
  json jp = json::array();
  for (auto& p : phases) {
    progress(p->name + ": " + p->status + (p->summary.empty() ? "" : " — " + p->summary));
    text << "\n== " << p->title << "\n" << p->text.str();
    text << "  => " << p->status << (p->summary.empty() ? "" : ": " + p->summary) << "\n";
    for (size_t i = 0; i < p->failures.size() && i < 20; ++i) text << "  failing: " << p->failures[i] << "\n";
    if (p->failures.size() > 20) text << "  ... " << p->failures.size() - 20 << " more\n";
    failed += p->status == "failed";
    json pj{{"name", p->name}, {"title", p->title}, {"status", p->status}, {"summary", p->summary}, {"failures", p->failures}};
    pj.update(p->data);
    jp.push_back(pj);
  }
  const int code = failed ? kExitFailed : kExitPassed;
  text << "\nselftest: " << (failed ? std::to_string(failed) + " phase(s) failed" : std::string("all phases passed"))
       << " (exit " << code << ")\n";
  j["phases"] = jp;
  j["status"] = failed ? "failed" : "passed";
  j["exit"] = code;
  if (as_json) out << j.dump(2) << "\n";
  else out << text.str();
  return code;
}

}  // namespace layergate::selftest
