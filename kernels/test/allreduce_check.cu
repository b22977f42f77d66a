// Correctness runner for the layergate all-reduce: every kernel and the
// dispatch, bit for bit against a host reduction of integer-valued inputs
// (so every sum is exact in every dtype and any summation order).
//
// Groups of ranks, each rank one stream and one buffer set:
//   - 2 ranks on 2 GPUs with peer access (when the machine has them);
//   - 2..8 ranks sharing GPU 0, each launch at most SMs/ranks blocks so that
//     every rank's blocks are resident together.
// Modes: eager (out-of-place, unregistered input: pull kernels stage it),
// eager-inplace, graph (registered input, captured once, replayed twice),
// graph-inplace (registered, replayed once).
// Outputs are filled with a sentinel first: "kernel never ran" is reported
// as such. Exit status: 0 when every case passed (or no GPU: SKIP), 1 else.
//
//   allreduce_check [--quick] [--failures-only] [--max-ranks N] [--timeout-ms MS] [--host-mapped]
//
// --host-mapped: every rank's shared buffers (signals, scratch) in mapped
// pinned host memory, so that every peer access crosses PCIe: a stand-in for
// a PCIe fabric on NVLink machines (the output says so).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../layergate_allreduce.cuh"
#include "../layergate_ipc.cuh"

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

constexpr uint8_t kSentinelByte = 0x7B;  // 0x7B7B.. is no possible sum in any dtype

enum class DType { kF32, kF16, kBF16 };
const char* dtype_name(DType d) { return d == DType::kF32 ? "fp32" : d == DType::kF16 ? "fp16" : "bf16"; }
size_t dtype_size(DType d) { return d == DType::kF32 ? 4 : 2; }

// Small integers in [-8, 8]: sums over 8 ranks stay within 64, exact in
// fp16 (11 bits) and bf16 (8 bits), and with the 2x of a replayed in-place
// call they would not be; in-place graphs replay once.
int input_value(int rank, size_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(rank + 1) * 40503u;
  h ^= h >> 13;
  return static_cast<int>(h % 17) - 8;
}

// Host bit patterns of an exact integer value in each dtype.
uint32_t bits_of(DType d, int v) {
  float f = static_cast<float>(v);
  if (d == DType::kF32) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  if (d == DType::kF16) {
    __half h = __float2half_rn(f);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  __nv_bfloat16 b = __float2bfloat16_rn(f);
  uint16_t u;
  std::memcpy(&u, &b, 2);
  return u;
}

struct Group {
  std::string name;
  int n = 0;
  std::vector<int> dev;
  std::vector<cudaStream_t> stream;
  std::vector<RankBuffers> bufs;
  std::vector<void*> reg_in, raw_in, out;  // reg_in is registered with the dispatch
  // ar[0]: full_nvlink false, ar[1]: true. Both share the rank's buffers: the
  // epoch lives on the device, so the two objects stay in step.
  std::vector<std::unique_ptr<CustomAllreduce>> ar[2];
  size_t max_bytes = 0;
};

void set_dev(const Group& g, int r) { CK(cudaSetDevice(g.dev[r])); }

Group make_group(const std::string& name, const std::vector<int>& dev, size_t max_bytes, int64_t timeout_ns,
                 Memory where) {
  Group g;
  g.name = name;
  g.n = static_cast<int>(dev.size());
  g.dev = dev;
  g.max_bytes = max_bytes;
  std::map<int, int> per_dev;
  for (int d : dev) per_dev[d]++;
  g.stream.resize(g.n);
  g.bufs.resize(g.n);
  g.reg_in.resize(g.n);
  g.raw_in.resize(g.n);
  g.out.resize(g.n);
  for (int r = 0; r < g.n; ++r) {
    set_dev(g, r);
    CK(cudaStreamCreateWithFlags(&g.stream[r], cudaStreamNonBlocking));
    g.bufs[r] = CustomAllreduce::allocate_rank_buffers(max_bytes, where);
    CK(cudaMalloc(&g.reg_in[r], max_bytes));
    CK(cudaMalloc(&g.raw_in[r], max_bytes));
    CK(cudaMalloc(&g.out[r], max_bytes));
  }
  for (int r = 0; r < g.n; ++r) {
    set_dev(g, r);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, g.dev[r]));
    const int blocks = std::max(1, std::min(kMaxBlocks, prop.multiProcessorCount / per_dev[g.dev[r]]));
    for (int nv = 0; nv < 2; ++nv) {
      g.ar[nv].emplace_back(new CustomAllreduce(r, g.n, nv == 1, g.bufs.data(), max_bytes, blocks,
                                                Thresholds::defaults(), timeout_ns));
      g.ar[nv].back()->register_buffer(g.reg_in[r], g.reg_in.data());
    }
  }
  CK(cudaDeviceSynchronize());
  return g;
}

void free_group(Group& g) {
  for (int r = 0; r < g.n; ++r) {
    set_dev(g, r);
    CK(cudaStreamSynchronize(g.stream[r]));
    CustomAllreduce::free_rank_buffers(g.bufs[r]);
    cudaFree(g.reg_in[r]);
    cudaFree(g.raw_in[r]);
    cudaFree(g.out[r]);
    cudaStreamDestroy(g.stream[r]);
  }
  g.ar[0].clear();
  g.ar[1].clear();
}

// Host inputs and expected sums for one (ranks, dtype, bytes), as bit patterns.
struct HostData {
  std::vector<std::vector<uint8_t>> in;  // per rank
  std::vector<uint8_t> expect;
};

HostData make_host(int n, DType dt, size_t bytes) {
  HostData h;
  const size_t es = dtype_size(dt), count = bytes / es;
  h.in.assign(n, std::vector<uint8_t>(bytes));
  h.expect.resize(bytes);
  std::vector<int> sum(count, 0);
  for (int r = 0; r < n; ++r) {
    uint8_t* p = h.in[r].data();
    for (size_t i = 0; i < count; ++i) {
      const int v = input_value(r, i);
      sum[i] += v;
      const uint32_t b = bits_of(dt, v);
      std::memcpy(p + i * es, &b, es);
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t b = bits_of(dt, sum[i]);
    std::memcpy(h.expect.data() + i * es, &b, es);
  }
  return h;
}

enum class Mode { kEager, kEagerInplace, kGraph, kGraphInplace };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kEager: return "eager";
    case Mode::kEagerInplace: return "eager-inplace";
    case Mode::kGraph: return "graph";
    case Mode::kGraphInplace: return "graph-inplace";
  }
  return "?";
}

struct Variant {
  const char* label;
  Algo force;
  int nvlink;  // which dispatch object: 0 PCIe, 1 NVLink
};

template <typename T>
void call(Group& g, int nv, int r, void* in, void* out, size_t bytes, Algo force) {
  g.ar[nv][r]->allreduce<T>(g.stream[r], static_cast<T*>(in), static_cast<T*>(out),
                            static_cast<int>(bytes / sizeof(T)), force);
}

void call_any(Group& g, int nv, int r, void* in, void* out, size_t bytes, DType dt, Algo force) {
  if (dt == DType::kF32) call<float>(g, nv, r, in, out, bytes, force);
  else if (dt == DType::kF16) call<__half>(g, nv, r, in, out, bytes, force);
  else call<__nv_bfloat16>(g, nv, r, in, out, bytes, force);
}

struct Tally {
  int passed = 0, failed = 0, skipped = 0;
};

// Runs one case on every rank and compares. Returns a one-line verdict.
void run_case(Group& g, const Variant& v, DType dt, size_t bytes, Mode mode, const HostData& h, Tally& t,
              bool quiet) {
  const bool inplace = mode == Mode::kEagerInplace || mode == Mode::kGraphInplace;
  const bool graph = mode == Mode::kGraph || mode == Mode::kGraphInplace;
  std::vector<void*> in(g.n), out(g.n);
  for (int r = 0; r < g.n; ++r) {
    in[r] = graph ? g.reg_in[r] : g.raw_in[r];
    out[r] = inplace ? in[r] : g.out[r];
    set_dev(g, r);
    // On the rank's own (non-blocking) stream: a plain cudaMemcpy/cudaMemset
    // may still be landing when the kernel starts on such a stream.
    CK(cudaMemcpyAsync(in[r], h.in[r].data(), bytes, cudaMemcpyHostToDevice, g.stream[r]));
    if (!inplace) CK(cudaMemsetAsync(out[r], kSentinelByte, bytes, g.stream[r]));
    CK(cudaStreamSynchronize(g.stream[r]));
  }
  const char* chosen = "";
  std::string err;
  try {
    if (!graph) {
      for (int r = 0; r < g.n; ++r) {
        set_dev(g, r);
        call_any(g, v.nvlink, r, in[r], out[r], bytes, dt, v.force);
      }
    } else {
      std::vector<cudaGraphExec_t> exec(g.n);
      for (int r = 0; r < g.n; ++r) {
        set_dev(g, r);
        cudaGraph_t gr;
        CK(cudaStreamBeginCapture(g.stream[r], cudaStreamCaptureModeRelaxed));
        try {
          call_any(g, v.nvlink, r, in[r], out[r], bytes, dt, v.force);
        } catch (...) {
          cudaStreamEndCapture(g.stream[r], &gr);
          if (gr) cudaGraphDestroy(gr);
          throw;
        }
        CK(cudaStreamEndCapture(g.stream[r], &gr));
        CK(cudaGraphInstantiate(&exec[r], gr, 0));
        CK(cudaGraphDestroy(gr));
      }
      const int replays = inplace ? 1 : 2;
      for (int k = 0; k < replays; ++k)
        for (int r = 0; r < g.n; ++r) {
          set_dev(g, r);
          CK(cudaGraphLaunch(exec[r], g.stream[r]));
        }
      for (int r = 0; r < g.n; ++r) {
        set_dev(g, r);
        CK(cudaStreamSynchronize(g.stream[r]));
        CK(cudaGraphExecDestroy(exec[r]));
      }
    }
    chosen = algo_name(g.ar[v.nvlink][0]->last_algo());
  } catch (const std::exception& ex) {
    err = ex.what();
  }
  size_t wrong = 0, never_ran = 0, first_bad = SIZE_MAX;
  uint32_t dev_err = 0;
  const size_t es = dtype_size(dt), count = bytes / es;
  std::vector<uint8_t> got(bytes);
  for (int r = 0; r < g.n && err.empty(); ++r) {
    set_dev(g, r);
    CK(cudaStreamSynchronize(g.stream[r]));
    dev_err |= g.ar[v.nvlink][r]->error();
    CK(cudaMemcpy(got.data(), out[r], bytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), h.expect.data(), bytes) == 0) continue;
    for (size_t i = 0; i < count; ++i) {
      if (std::memcmp(got.data() + i * es, h.expect.data() + i * es, es) == 0) continue;
      ++wrong;
      if (first_bad == SIZE_MAX) first_bad = i;
      bool sentinel = true;
      for (size_t b = 0; b < es; ++b) sentinel &= got[i * es + b] == kSentinelByte;
      never_ran += sentinel;
    }
  }
  const bool ok = err.empty() && wrong == 0 && dev_err == 0;
  if (!ok && (dev_err != 0 || !err.empty())) {
    // A timed-out or failed call leaves epochs out of step: restart the group.
    for (int r = 0; r < g.n; ++r) {
      set_dev(g, r);
      CK(cudaStreamSynchronize(g.stream[r]));
      CustomAllreduce::reset_rank_buffers(g.bufs[r], g.max_bytes);
    }
    for (int r = 0; r < g.n; ++r) {
      set_dev(g, r);
      CK(cudaDeviceSynchronize());
    }
  }
  ok ? ++t.passed : ++t.failed;
  if (ok && quiet) return;
  std::printf("%s %-10s ranks=%d %-22s dtype=%s bytes=%zu mode=%s", ok ? "PASS" : "FAIL", g.name.c_str(), g.n,
              v.label, dtype_name(dt), bytes, mode_name(mode));
  if (*chosen && v.force == Algo::kAuto) std::printf(" kernel=%s", chosen);
  if (!err.empty()) std::printf(" error=\"%s\"", err.c_str());
  if (dev_err) std::printf(" device_error=%u(%s)", dev_err, dev_err == kErrBarrierTimeout ? "barrier timeout" : dev_err == kErrDataTimeout ? "data timeout" : "unregistered graph buffer");
  if (wrong) std::printf(" wrong=%zu never_ran=%zu first_bad=%zu", wrong, never_ran, first_bad);
  std::printf("\n");
  std::fflush(stdout);
}


// The IPC layer and graph-buffer registration inside one process (CUDA IPC
// proper needs two processes: kernels/torch/test_torch_allreduce.py). Two
// ranks on GPU 0 through IpcAllreduce's pointer form: export of a buffer
// inside a larger allocation (offset found), then a pull kernel captured
// with unregistered inputs: a replay before registration must move nothing
// and report kErrUnregistered (not hang, not fault), and after
// bind_graph_buffers it must give the exact sum.
void ipc_layer_check(Tally& t, int64_t timeout_ns) {
  const int n = 2;
  const size_t max_bytes = 1 << 20, bytes = 65536 + 16;
  const size_t count = bytes / sizeof(float);
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  auto report = [&](bool ok, const std::string& what) {
    ok ? ++t.passed : ++t.failed;
    std::printf("%s ipc        ranks=%d %s\n", ok ? "PASS" : "FAIL", n, what.c_str());
    std::fflush(stdout);
  };
  std::vector<void*> regions(n);
  for (int r = 0; r < n; ++r) regions[r] = ipc::allocate_region(max_bytes);
  char* pool = nullptr;  // both ranks' inputs and outputs in one allocation, at offsets
  CK(cudaMalloc(&pool, 4 * max_bytes));
  {
    const ipc::BufferRef ref = ipc::export_buffer(pool + 3 * max_bytes + 256);
    uintptr_t base = 0;
    size_t size = 0;
    ipc::allocation_range(pool + 17, &base, &size);
    report(ref.offset == 3 * max_bytes + 256 && base == reinterpret_cast<uintptr_t>(pool) && size >= 4 * max_bytes,
           "export_buffer offset=" + std::to_string(ref.offset) + " allocation=" + std::to_string(size));
  }
  for (Algo algo : {Algo::kOneStagePull, Algo::kTwoStagePull}) {
    std::vector<std::unique_ptr<ipc::IpcAllreduce>> ar;
    std::vector<cudaStream_t> st(n);
    std::vector<float*> in(n), out(n);
    std::vector<float> expect(count, 0.f);
    for (int r = 0; r < n; ++r) {
      CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
      ar.emplace_back(new ipc::IpcAllreduce(r, n, true, regions, max_bytes, std::max(1, prop.multiProcessorCount / n),
                                            Thresholds::defaults(), timeout_ns / 1000000));
      in[r] = reinterpret_cast<float*>(pool + r * max_bytes);
      out[r] = reinterpret_cast<float*>(pool + (2 + r) * max_bytes);
      std::vector<float> h(count);
      for (size_t i = 0; i < count; ++i) {
        h[i] = static_cast<float>(input_value(r, i));
        expect[i] += h[i];
      }
      CK(cudaMemcpy(in[r], h.data(), bytes, cudaMemcpyHostToDevice));
      CK(cudaMemset(out[r], kSentinelByte, bytes));
    }
    std::vector<cudaGraphExec_t> exec(n);
    bool pending_ok = true;
    for (int r = 0; r < n; ++r) {
      cudaGraph_t gr;
      CK(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeGlobal));
      ar[r]->dispatch().allreduce<float>(st[r], in[r], out[r], static_cast<int>(count), algo);
      CK(cudaStreamEndCapture(st[r], &gr));
      CK(cudaGraphInstantiate(&exec[r], gr, 0));
      CK(cudaGraphDestroy(gr));
      pending_ok &= ar[r]->dispatch().graph_pending().size() == 1;
      pending_ok &= ar[r]->graph_buffer_refs().at(0).offset == static_cast<uint64_t>(r) * max_bytes;
    }
    auto replay = [&](int times) {
      for (int k = 0; k < times; ++k)
        for (int r = 0; r < n; ++r) CK(cudaGraphLaunch(exec[r], st[r]));
      for (int r = 0; r < n; ++r) CK(cudaStreamSynchronize(st[r]));
    };
    auto untouched = [&](int r) {
      std::vector<unsigned char> got(bytes);
      CK(cudaMemcpy(got.data(), out[r], bytes, cudaMemcpyDeviceToHost));
      for (unsigned char c : got)
        if (c != kSentinelByte) return false;
      return true;
    };
    replay(1);
    bool before_ok = pending_ok;
    for (int r = 0; r < n; ++r) before_ok &= ar[r]->dispatch().error() == kErrUnregistered && untouched(r);
    report(before_ok, std::string(algo_name(algo)) + " graph replay before register_graph_buffers: kErrUnregistered, output untouched");
    for (int r = 0; r < n; ++r) CustomAllreduce::reset_rank_buffers(ipc::buffers_in_region(regions[r]), max_bytes);
    RankPtrs both{};
    for (int r = 0; r < n; ++r) {
      for (int p = 0; p < n; ++p) both.p[p] = in[p];
      ar[r]->dispatch().bind_graph_buffers({both});
    }
    replay(2);
    bool after_ok = true;
    for (int r = 0; r < n; ++r) {
      std::vector<float> got(count);
      CK(cudaMemcpy(got.data(), out[r], bytes, cudaMemcpyDeviceToHost));
      after_ok &= ar[r]->dispatch().error() == 0 && std::memcmp(got.data(), expect.data(), bytes) == 0 &&
                  ar[r]->dispatch().graph_pending().empty();
    }
    report(after_ok, std::string(algo_name(algo)) + " graph replay after register_graph_buffers: exact sum");
    for (int r = 0; r < n; ++r) {
      CK(cudaGraphExecDestroy(exec[r]));
      CK(cudaStreamDestroy(st[r]));
      CustomAllreduce::reset_rank_buffers(ipc::buffers_in_region(regions[r]), max_bytes);
    }
  }
  for (void* r : regions) CK(cudaFree(r));
  CK(cudaFree(pool));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, quiet = false, host_mapped = false;
  int max_ranks = 8;
  int64_t timeout_ms = 2000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--failures-only")) quiet = true;
    else if (!std::strcmp(argv[i], "--max-ranks") && i + 1 < argc) max_ranks = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--timeout-ms") && i + 1 < argc) timeout_ms = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--host-mapped")) host_mapped = true;
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--failures-only] [--max-ranks N] [--timeout-ms MS] [--host-mapped]\n", argv[0]);
      return 2;
    }
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (host_mapped)
    std::printf("# PCIe STAND-IN: shared buffers in mapped pinned host memory, every peer access crosses PCIe "
                "(not a real PCIe fabric)\n");

  // Sizes: 16 B to 64 MB, with odd multiples of 16 (48, 208, 4112, 43008 =
  // 2688*16 is even, so 43024, 1 MB + 16).
  std::vector<size_t> sizes = quick ? std::vector<size_t>{16, 208, 8192, 43024, 1048592}
                                    : std::vector<size_t>{16,     48,      208,         4112,    8192,
                                                          43024,  262144,  1048592,     4194304, 67108864};
  const std::vector<DType> dtypes = {DType::kF32, DType::kF16, DType::kBF16};
  const std::vector<Mode> modes = quick ? std::vector<Mode>{Mode::kEager, Mode::kGraph}
                                        : std::vector<Mode>{Mode::kEager, Mode::kEagerInplace, Mode::kGraph,
                                                            Mode::kGraphInplace};
  const std::vector<Variant> variants = {
      {"one_shot_push", Algo::kOneShotPush, 0},  {"two_shot_push", Algo::kTwoShotPush, 0},
      {"one_stage_pull", Algo::kOneStagePull, 1}, {"two_stage_pull", Algo::kTwoStagePull, 1},
      {"dispatch(nvlink)", Algo::kAuto, 1},       {"dispatch(pcie)", Algo::kAuto, 0},
  };
  size_t max_bytes = 0;
  for (size_t s : sizes) max_bytes = std::max(max_bytes, s);

  struct Topo {
    std::string name;
    std::vector<int> dev;
  };
  std::vector<Topo> topos;
  if (ngpu >= 2) {
    int a = 0, b = 0;
    CK(cudaDeviceCanAccessPeer(&a, 0, 1));
    CK(cudaDeviceCanAccessPeer(&b, 1, 0));
    if (a && b) {
      CK(cudaSetDevice(0));
      cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
      CK(cudaSetDevice(1));
      e = cudaDeviceEnablePeerAccess(0, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
      cudaGetLastError();
      topos.push_back({"2gpu", {0, 1}});
    } else {
      std::printf("note: GPUs 0 and 1 have no peer access; two-GPU group not run\n");
    }
  } else {
    std::printf("note: one GPU; the two-GPU group is not run\n");
  }
  const std::vector<int> counts = quick ? std::vector<int>{2, 3, 8} : std::vector<int>{2, 3, 4, 5, 6, 7, 8};
  for (int n : counts)
    if (n <= max_ranks) topos.push_back({"1gpu", std::vector<int>(n, 0)});

  Tally t;
  {
    const int before_pass = t.passed, before_fail = t.failed;
    ipc_layer_check(t, timeout_ms * 1000000);
    std::printf("group ipc ranks=2: %d passed, %d failed\n", t.passed - before_pass, t.failed - before_fail);
  }
  for (const Topo& tp : topos) {
    Group g = make_group(tp.name, tp.dev, max_bytes, timeout_ms * 1000000,
                         host_mapped ? Memory::kHostMapped : Memory::kDevice);
    const int before_pass = t.passed, before_fail = t.failed;
    for (DType dt : dtypes) {
      for (size_t bytes : sizes) {
        if (bytes >= (4u << 20) && dt != DType::kF16) continue;  // big sizes: fp16 only (time)
        const HostData h = make_host(g.n, dt, bytes);
        for (Mode m : modes) {
          if (bytes >= (64u << 20) && (m == Mode::kEagerInplace || m == Mode::kGraphInplace)) continue;
          for (const Variant& v : variants) {
            if (v.force == Algo::kOneShotPush && bytes > g.ar[0][0]->one_shot_capacity()) continue;
            run_case(g, v, dt, bytes, m, h, t, quiet);
          }
        }
      }
    }
    std::printf("group %s ranks=%d: %d passed, %d failed\n", tp.name.c_str(), g.n, t.passed - before_pass,
                t.failed - before_fail);
    std::fflush(stdout);
    free_group(g);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%d passed, %d failed (%.1f s)\n", t.passed, t.failed, secs);
  return t.failed == 0 ? 0 : 1;
}
