// Speed of the layergate all-reduce kernels against NCCL, in one process and
// one run: every visible GPU is a rank (peer access, raw pointers), each
// measurement a CUDA graph of `--iters` all-reduces per GPU, replayed
// `--replays` times after warm-up; the time of a replay is the slowest
// rank's, the figure printed is the median replay / iters.
// Columns as nccl-tests: size, count, type, time (us), algbw, busbw
// (algbw * 2(n-1)/n), #wrong (elements of rank 0's and the last rank's
// output that differ from the exact integer sum).
// Also prints the floor (the cross-GPU handshake alone, same graph) and which
// sizes the dispatch should leave to NCCL.
//
// NCCL is loaded at run time (dlopen libnccl.so.2, or $LAYERGATE_NCCL_LIB),
// so the benchmark builds without NCCL headers and says so when it is absent.
//
//   allreduce_bench [--iters 100] [--replays 15] [--min-bytes 8192] [--max-bytes 67108864] [--ranks N]
//                   [--host-mapped]
//
// --host-mapped: the PCIe stand-in. Every rank's shared buffers in mapped
// pinned host memory (every peer access crosses PCIe); the dispatch row is
// the PCIe dispatch (flag false); NCCL is left out (it would still use
// NVLink). The title line says STAND-IN.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../kernels/layergate_allreduce.cuh"

using namespace layergate;

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

namespace {

// The few NCCL entry points used, with the ABI of nccl.h (stable since 2.x).
struct Nccl {
  using Comm = void*;
  int (*GetVersion)(int*) = nullptr;
  int (*CommInitAll)(Comm*, int, const int*) = nullptr;
  int (*CommDestroy)(Comm) = nullptr;
  int (*AllReduce)(const void*, void*, size_t, int, int, Comm, cudaStream_t) = nullptr;
  int (*GroupStart)() = nullptr;
  int (*GroupEnd)() = nullptr;
  static constexpr int kFloat16 = 6, kSum = 0;
  bool ok = false;
  int version = 0;

  void load() {
    const char* env = std::getenv("LAYERGATE_NCCL_LIB");
    void* h = dlopen(env ? env : "libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      std::printf("note: NCCL not loaded (%s); set LAYERGATE_NCCL_LIB\n", dlerror());
      return;
    }
    GetVersion = reinterpret_cast<int (*)(int*)>(dlsym(h, "ncclGetVersion"));
    CommInitAll = reinterpret_cast<int (*)(Comm*, int, const int*)>(dlsym(h, "ncclCommInitAll"));
    CommDestroy = reinterpret_cast<int (*)(Comm)>(dlsym(h, "ncclCommDestroy"));
    AllReduce = reinterpret_cast<int (*)(const void*, void*, size_t, int, int, Comm, cudaStream_t)>(
        dlsym(h, "ncclAllReduce"));
    GroupStart = reinterpret_cast<int (*)()>(dlsym(h, "ncclGroupStart"));
    GroupEnd = reinterpret_cast<int (*)()>(dlsym(h, "ncclGroupEnd"));
    ok = GetVersion && CommInitAll && CommDestroy && AllReduce && GroupStart && GroupEnd;
    if (ok) GetVersion(&version);
  }
};

int value(int rank, size_t i) { return static_cast<int>((i * 7 + rank * 3) % 9) - 4; }

struct Row {
  std::string algo;
  size_t bytes;
  double us;
  size_t wrong;
};

}  // namespace

int main(int argc, char** argv) {
  int iters = 100, replays = 15, want_ranks = 0;
  bool host_mapped = false;
  size_t min_bytes = 8192, max_bytes = 64u << 20;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value\n"), std::exit(2), ""); };
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(next());
    else if (!std::strcmp(argv[i], "--replays")) replays = std::atoi(next());
    else if (!std::strcmp(argv[i], "--min-bytes")) min_bytes = std::strtoull(next(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-bytes")) max_bytes = std::strtoull(next(), nullptr, 10);
    else if (!std::strcmp(argv[i], "--ranks")) want_ranks = std::atoi(next());
    else if (!std::strcmp(argv[i], "--host-mapped")) host_mapped = true;
    else {
      std::fprintf(stderr, "usage: %s [--iters N] [--replays N] [--min-bytes B] [--max-bytes B] [--ranks N] [--host-mapped]\n", argv[0]);
      return 2;
    }
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // multicast stays off on shared hosts
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 0;
  }
  const int n = want_ranks > 0 ? std::min(want_ranks, ngpu) : std::min(ngpu, kMaxRanks);
  if (n < 2) {
    std::printf("SKIP: the benchmark needs two GPUs with peer access, found %d\n", ngpu);
    return 0;
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      int can = 0;
      CK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) {
        std::printf("SKIP: GPU %d cannot access GPU %d\n", a, b);
        return 0;
      }
      CK(cudaSetDevice(a));
      cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
      cudaGetLastError();
    }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));

  std::vector<cudaStream_t> st(n);
  std::vector<RankBuffers> bufs(n);
  std::vector<void*> in(n), out(n);
  std::vector<std::vector<cudaEvent_t>> ev(n, std::vector<cudaEvent_t>(2));
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(r));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    bufs[r] = CustomAllreduce::allocate_rank_buffers(max_bytes, host_mapped ? Memory::kHostMapped : Memory::kDevice);
    CK(cudaMalloc(&in[r], max_bytes));
    CK(cudaMalloc(&out[r], max_bytes));
    CK(cudaEventCreate(&ev[r][0]));
    CK(cudaEventCreate(&ev[r][1]));
    std::vector<__half> h(max_bytes / 2);
    for (size_t i = 0; i < h.size(); ++i) h[i] = __float2half(static_cast<float>(value(r, i)));
    CK(cudaMemcpy(in[r], h.data(), max_bytes, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
  }
  const int blocks = std::min(kMaxBlocks, prop.multiProcessorCount);
  std::vector<std::unique_ptr<CustomAllreduce>> ar;
  for (int r = 0; r < n; ++r) {
    CK(cudaSetDevice(r));
    ar.emplace_back(new CustomAllreduce(r, n, /*full_nvlink=*/!host_mapped, bufs.data(), max_bytes, blocks));
    ar.back()->register_buffer(in[r], in.data());
  }
  Nccl nccl;
  if (!host_mapped) nccl.load();
  std::vector<Nccl::Comm> comms(n);
  if (nccl.ok) {
    std::vector<int> devs(n);
    for (int r = 0; r < n; ++r) devs[r] = r;
    if (nccl.CommInitAll(comms.data(), n, devs.data()) != 0) {
      std::printf("note: ncclCommInitAll failed; NCCL rows left out\n");
      nccl.ok = false;
    }
  }
  if (nccl.ok) {
    // Eager warm-up: NCCL sets up its connections on the first call, which
    // must not happen inside a capture.
    nccl.GroupStart();
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      nccl.AllReduce(in[r], out[r], 4096, Nccl::kFloat16, Nccl::kSum, comms[r], st[r]);
    }
    nccl.GroupEnd();
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamSynchronize(st[r]));
    }
  }
  std::printf("# layergate all-reduce bench: %d x %s, %d SMs, graph of %d all-reduces, median of %d replays, "
              "fp16, out-of-place, registered input; NCCL %d%s\n",
              n, prop.name, prop.multiProcessorCount, iters, replays, nccl.ok ? nccl.version : 0,
              host_mapped ? "; PCIe STAND-IN: buffers in mapped pinned host memory (not a real PCIe fabric), "
                            "PCIe dispatch, NCCL not run"
                          : "");

  // Captures `body(r)` iters times on every rank's stream; returns the
  // median over replays of the slowest rank's time per all-reduce, in us.
  auto time_graph = [&](const std::function<void(int)>& body, bool nccl_group) -> double {
    std::vector<cudaGraphExec_t> exec(n);
    std::vector<cudaGraph_t> g(n);
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeRelaxed));
    }
    for (int k = 0; k < iters; ++k) {
      if (nccl_group) nccl.GroupStart();
      for (int r = 0; r < n; ++r) {
        CK(cudaSetDevice(r));
        body(r);
      }
      if (nccl_group) nccl.GroupEnd();
    }
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamEndCapture(st[r], &g[r]));
      CK(cudaGraphInstantiate(&exec[r], g[r], 0));
    }
    std::vector<double> t;
    for (int rep = 0; rep < replays + 3; ++rep) {
      for (int r = 0; r < n; ++r) {
        CK(cudaSetDevice(r));
        CK(cudaEventRecord(ev[r][0], st[r]));
        CK(cudaGraphLaunch(exec[r], st[r]));
        CK(cudaEventRecord(ev[r][1], st[r]));
      }
      double worst = 0;
      for (int r = 0; r < n; ++r) {
        CK(cudaSetDevice(r));
        CK(cudaEventSynchronize(ev[r][1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[r][0], ev[r][1]));
        worst = std::max(worst, static_cast<double>(ms));
      }
      if (rep >= 3) t.push_back(worst * 1000.0 / iters);
    }
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaGraphExecDestroy(exec[r]));
      CK(cudaGraphDestroy(g[r]));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto count_wrong = [&](size_t bytes) -> size_t {
    size_t wrong = 0;
    std::vector<__half> h(bytes / 2);
    for (int r : {0, n - 1}) {
      CK(cudaSetDevice(r));
      CK(cudaMemcpy(h.data(), out[r], bytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < h.size(); ++i) {
        int s = 0;
        for (int p = 0; p < n; ++p) s += value(p, i);
        wrong += __half2float(h[i]) != static_cast<float>(s);
      }
    }
    return wrong;
  };
  auto clear_out = [&](size_t bytes) {
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaMemset(out[r], 0x7B, bytes));
      CK(cudaDeviceSynchronize());  // the legacy-stream memset must land before the graph runs
    }
  };
  auto check_errors = [&]() {
    for (int r = 0; r < n; ++r) {
      CK(cudaSetDevice(r));
      if (uint32_t e = ar[r]->error()) {
        std::printf("ERROR: rank %d recorded device error %u (timeout); stopping\n", r, e);
        std::exit(1);
      }
    }
  };

  std::vector<size_t> sizes;
  for (size_t b = min_bytes; b <= max_bytes; b *= 2) {
    sizes.push_back(b);
    if (b == 32768) sizes.push_back(43008);  // 42 KB, a size the design notes quote
  }
  const struct {
    const char* name;
    Algo algo;
  } kernels[] = {{"one_shot_push", Algo::kOneShotPush},
                 {"two_shot_push", Algo::kTwoShotPush},
                 {"one_stage_pull", Algo::kOneStagePull},
                 {"two_stage_pull", Algo::kTwoStagePull},
                 {"dispatch", Algo::kAuto}};

  std::printf("%12s %12s %6s %-15s %10s %9s %9s %7s\n", "size(B)", "count", "type", "algo", "time(us)", "algbw",
              "busbw", "#wrong");
  const double floor_us = time_graph([&](int r) { ar[r]->handshake(st[r]); }, false);
  check_errors();
  std::printf("%12s %12s %6s %-15s %10.2f %9s %9s %7s\n", "-", "-", "-", "floor", floor_us, "-", "-", "-");
  // The push floor: the smallest message through one_shot_push, one write
  // per peer that both moves and signals.
  const double push_floor_us = time_graph(
      [&](int r) {
        ar[r]->allreduce<__half>(st[r], static_cast<__half*>(in[r]), static_cast<__half*>(out[r]), 8,
                                 Algo::kOneShotPush);
      },
      false);
  check_errors();
  std::printf("%12s %12s %6s %-15s %10.2f %9s %9s %7s\n", "16", "8", "half", "floor(push16B)", push_floor_us, "-",
              "-", "-");
  std::vector<Row> rows;
  for (size_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 2);
    for (const auto& k : kernels) {
      if (k.algo == Algo::kOneShotPush && bytes > ar[0]->one_shot_capacity()) continue;
      clear_out(bytes);
      const double us = time_graph(
          [&](int r) {
            ar[r]->allreduce<__half>(st[r], static_cast<__half*>(in[r]), static_cast<__half*>(out[r]), count, k.algo);
          },
          false);
      check_errors();
      std::string name = k.name;
      if (k.algo == Algo::kAuto) name += std::string("(") + algo_name(ar[0]->last_algo()) + ")";
      rows.push_back({name, bytes, us, count_wrong(bytes)});
    }
    if (bytes <= ar[0]->one_shot_capacity() && bytes <= (4u << 20)) {
      // The push kernels' block shape: 512 threads a block instead of the
      // default spread over SMs.
      for (int r = 0; r < n; ++r) ar[r]->set_push_threads(kThreads);
      clear_out(bytes);
      const double us = time_graph(
          [&](int r) {
            ar[r]->allreduce<__half>(st[r], static_cast<__half*>(in[r]), static_cast<__half*>(out[r]), count,
                                     Algo::kOneShotPush);
          },
          false);
      check_errors();
      for (int r = 0; r < n; ++r) ar[r]->set_push_threads(0);
      rows.push_back({"one_shot@512thr", bytes, us, count_wrong(bytes)});
    }
    if (nccl.ok) {
      clear_out(bytes);
      const double us = time_graph(
          [&](int r) { nccl.AllReduce(in[r], out[r], count, Nccl::kFloat16, Nccl::kSum, comms[r], st[r]); }, true);
      rows.push_back({"nccl", bytes, us, count_wrong(bytes)});
    }
    for (const Row& row : rows) {
      if (row.bytes != bytes) continue;
      const double algbw = bytes / row.us / 1e3;
      std::printf("%12zu %12d %6s %-15s %10.2f %9.2f %9.2f %7zu\n", bytes, count, "half", row.algo.c_str(), row.us,
                  algbw, algbw * 2.0 * (n - 1) / n, row.wrong);
    }
    std::fflush(stdout);
  }

  // Summary: best of ours, the dispatch, NCCL, and where NCCL wins.
  std::printf("\n# summary (us): size, best kernel, dispatch, nccl, dispatch/nccl\n");
  std::vector<size_t> leave;
  for (size_t bytes : sizes) {
    const Row* best = nullptr;
    const Row* disp = nullptr;
    const Row* nc = nullptr;
    for (const Row& r : rows) {
      if (r.bytes != bytes) continue;
      if (r.algo == "nccl") nc = &r;
      else if (r.algo.rfind("dispatch", 0) == 0) disp = &r;
      else if (r.algo.find('@') == std::string::npos && (!best || r.us < best->us)) best = &r;
    }
    std::printf("%12zu %-15s %8.2f %-30s %8.2f %8.2f %6.2f\n", bytes, best->algo.c_str(), best->us,
                disp->algo.c_str(), disp->us, nc ? nc->us : 0.0, nc ? disp->us / nc->us : 0.0);
    if (nc && nc->us < disp->us) leave.push_back(bytes);
  }
  std::printf("# floor (handshake only): %.2f us; one_shot_push of 16 B: %.2f us\n", floor_us, push_floor_us);
  if (!nccl.ok) {
    std::printf("# NCCL not measured\n");
  } else if (leave.empty()) {
    std::printf("# leave to NCCL: none (the dispatch is at least as fast at every size measured)\n");
  } else {
    std::printf("# leave to NCCL: sizes where NCCL was faster than the dispatch:");
    for (size_t b : leave) std::printf(" %zu", b);
    std::printf("\n");
  }
  if (nccl.ok)
    for (int r = 0; r < n; ++r) nccl.CommDestroy(comms[r]);
  return 0;
}
