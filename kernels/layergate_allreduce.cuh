// layergate reference all-reduce: host side (the dispatch).
//
// Takes: this rank's number, the world size (2..8, odd too), whether every
// pair of GPUs has NVLink, and every rank's Signal and scratch buffer as
// pointers this process can use (peer access, CUDA IPC, or several ranks on
// one GPU). Returns, for each allreduce<T>() call, the sum over ranks in
// `out`, enqueued on the caller's stream: no host sync, so a call can be
// captured in a CUDA graph once buffers are set up.
//
// Every (world size, NVLink flag, byte count) that the Python gate admits
// (python/custom_all_reduce.py) reaches a kernel launch; everything else
// throws std::runtime_error. Which kernel serves which size is one table,
// Thresholds, that the self-test may override.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "allreduce_kernels.cuh"

namespace layergate {

enum class Algo { kAuto = 0, kOneShotPush, kTwoShotPush, kOneStagePull, kTwoStagePull };

inline const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kAuto: return "auto";
    case Algo::kOneShotPush: return "one_shot_push";
    case Algo::kTwoShotPush: return "two_shot_push";
    case Algo::kOneStagePull: return "one_stage_pull";
    case Algo::kTwoStagePull: return "two_stage_pull";
  }
  return "?";
}

// The one table of size thresholds, indexed by world size (entries 0 and 1
// unused). A message of `bytes` goes, with NVLink, to one_shot_push while
// bytes <= nvlink_one_shot_max, then one_stage_pull while bytes <=
// nvlink_one_stage_max, then two_stage_pull; without NVLink to one_shot_push
// while bytes <= pcie_one_shot_max, then two_shot_push (pushes only: pull
// kernels over a PCIe switch have been seen never to complete).
// The constructor lowers a one-shot threshold to what the push buffer holds.
struct Thresholds {
  size_t nvlink_one_shot_max[kMaxRanks + 1];
  size_t nvlink_one_stage_max[kMaxRanks + 1];
  size_t pcie_one_shot_max[kMaxRanks + 1];

  // Two ranks: measured on 2xH200 over NVLink (kernels/README.md): the push
  // wins up to 512 KB, the one-stage pull above, at every size up to 64 MB.
  // More ranks and PCIe: not measured here; scaled guesses (more ranks move
  // more data per one-shot rank, so the two-step kernels take over sooner)
  // until the self-test writes measured values.
  static Thresholds defaults() {
    Thresholds t{};
    const size_t all = ~size_t(0);
    for (int n = 2; n <= kMaxRanks; ++n) {
      t.nvlink_one_shot_max[n] = n == 2 ? (512u << 10) : n <= 4 ? (256u << 10) : (128u << 10);
      t.nvlink_one_stage_max[n] = n == 2 ? all : n <= 4 ? (1u << 20) : (512u << 10);
      t.pcie_one_shot_max[n] = n == 2 ? all : n <= 4 ? (256u << 10) : (64u << 10);
    }
    return t;
  }

  // Sets one entry; false for an unknown key or a world size outside 2..8.
  bool set(const char* key, int world_size, unsigned long long bytes) {
    if (world_size < 2 || world_size > kMaxRanks) return false;
    size_t* row = nullptr;
    if (!std::strcmp(key, "nvlink_one_shot_max")) row = nvlink_one_shot_max;
    else if (!std::strcmp(key, "nvlink_one_stage_max")) row = nvlink_one_stage_max;
    else if (!std::strcmp(key, "pcie_one_shot_max")) row = pcie_one_shot_max;
    if (!row) return false;
    row[world_size] = static_cast<size_t>(bytes);
    return true;
  }

  // Reads the thresholds file `layergate selftest` writes (JSON, format
  // "layergate-thresholds/1"):
  //   {"format": "layergate-thresholds/1", "machine": "...",
  //    "entries": [{"key": "nvlink_one_shot_max", "world_size": 2, "bytes": 524288}, ...]}
  // or the older text form, lines "<key> <world_size> <bytes>" ('#' starts a
  // comment). Keys: nvlink_one_shot_max, nvlink_one_stage_max,
  // pcie_one_shot_max; 18446744073709551615 means no limit. Entries not named
  // keep their value. The JSON reader below handles exactly that shape (any
  // whitespace, any key order inside an entry), so the header needs no JSON
  // library in users' nvcc builds.
  static Thresholds from_file(const char* path, Thresholds t = defaults()) {
    FILE* f = std::fopen(path, "r");
    if (!f) throw std::runtime_error(std::string("layergate: cannot open thresholds file ") + path);
    std::string text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') return from_json(text, path, t);
    size_t pos = 0;
    int lineno = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(pos, end - pos);
      pos = end + 1;
      ++lineno;
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos || line[b] == '#') continue;
      char key[64];
      int n = 0;
      unsigned long long v = 0;
      if (std::sscanf(line.c_str(), "%63s %d %llu", key, &n, &v) != 3 || !t.set(key, n, v))
        throw std::runtime_error(std::string("layergate: bad thresholds line ") + std::to_string(lineno) + " in " + path);
    }
    return t;
  }

  static Thresholds from_json(const std::string& s, const char* path, Thresholds t = defaults()) {
    auto fail = [&](const std::string& why) {
      return std::runtime_error(std::string("layergate: thresholds file ") + path + ": " + why);
    };
    // The value after "name": inside one entry object.
    auto field = [&](const std::string& obj, const char* name, bool quoted) -> std::string {
      const std::string k = std::string("\"") + name + "\"";
      size_t p = obj.find(k);
      if (p == std::string::npos) throw fail(std::string("an entry has no \"") + name + "\"");
      p = obj.find(':', p + k.size());
      if (p == std::string::npos) throw fail("expected ':'");
      p = obj.find_first_not_of(" \t\r\n", p + 1);
      if (p == std::string::npos) throw fail("missing value");
      if (quoted) {
        if (obj[p] != '"') throw fail(std::string("\"") + name + "\" must be a string");
        const size_t q = obj.find('"', p + 1);
        if (q == std::string::npos) throw fail("unterminated string");
        return obj.substr(p + 1, q - p - 1);
      }
      const size_t q = obj.find_first_not_of("0123456789", p);
      if (q == p) throw fail(std::string("\"") + name + "\" must be a non-negative integer");
      return obj.substr(p, q - p);
    };
    size_t p = s.find("\"entries\"");
    if (p == std::string::npos || (p = s.find('[', p)) == std::string::npos) throw fail("no \"entries\" array");
    for (;;) {
      p = s.find_first_of("{]", p + 1);
      if (p == std::string::npos) throw fail("unterminated \"entries\" array");
      if (s[p] == ']') break;
      const size_t q = s.find('}', p);
      if (q == std::string::npos) throw fail("unterminated entry");
      const std::string obj = s.substr(p + 1, q - p - 1);
      const std::string key = field(obj, "key", true);
      const int n = std::atoi(field(obj, "world_size", false).c_str());
      const unsigned long long v = std::strtoull(field(obj, "bytes", false).c_str(), nullptr, 10);
      if (!t.set(key.c_str(), n, v)) throw fail("unknown key \"" + key + "\" or world size " + std::to_string(n));
      p = q;
    }
    return t;
  }
};

// Where allocate_rank_buffers() puts a rank's buffers.
enum class Memory { kDevice, kHostMapped };

// What one rank shows its peers. Both zeroed by allocate_rank_buffers().
struct RankBuffers {
  Signal* signal;
  void* scratch;  // scratch_bytes(max_bytes)
};

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("layergate: ") + what + ": " + cudaGetErrorString(e));
}

class CustomAllreduce {
 public:
  // Scratch layout: [staging: max][tmp: max][push: 2 halves].
  static size_t round_up(size_t x) { return (x + 255) & ~size_t(255); }
  static size_t push_half_bytes(size_t max_bytes) { return round_up(4 * max_bytes + 64 * kMaxRanks * 32); }
  static size_t scratch_bytes(size_t max_bytes) {
    return 2 * round_up(max_bytes) + 2 * push_half_bytes(max_bytes);
  }

  // Allocates and zeroes one rank's buffers on the current device, or, with
  // Memory::kHostMapped, in mapped pinned host memory: then every access a
  // peer (or the rank itself) makes to them crosses PCIe, which makes a
  // stand-in for a PCIe fabric on a machine whose GPUs have NVLink.
  static RankBuffers allocate_rank_buffers(size_t max_bytes, Memory where = Memory::kDevice) {
    RankBuffers b{};
    if (where == Memory::kHostMapped) {
      void* h = nullptr;
      check_cuda(cudaHostAlloc(&h, sizeof(Signal), cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc(signal)");
      check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&b.signal), h, 0), "cudaHostGetDevicePointer(signal)");
      check_cuda(cudaHostAlloc(&h, scratch_bytes(max_bytes), cudaHostAllocMapped | cudaHostAllocPortable),
                 "cudaHostAlloc(scratch)");
      check_cuda(cudaHostGetDevicePointer(&b.scratch, h, 0), "cudaHostGetDevicePointer(scratch)");
    } else {
      check_cuda(cudaMalloc(&b.signal, sizeof(Signal)), "cudaMalloc(signal)");
      check_cuda(cudaMalloc(&b.scratch, scratch_bytes(max_bytes)), "cudaMalloc(scratch)");
    }
    reset_rank_buffers(b, max_bytes);
    return b;
  }
  // Returns a rank to its first-call state (after a timeout, say). Every rank
  // of the group must be reset together, with no call in flight.
  static void reset_rank_buffers(const RankBuffers& b, size_t max_bytes) {
    check_cuda(cudaMemset(b.signal, 0, sizeof(Signal)), "cudaMemset(signal)");
    check_cuda(cudaMemset(static_cast<char*>(b.scratch) + 2 * round_up(max_bytes), 0,
                          2 * push_half_bytes(max_bytes)),
               "cudaMemset(push region)");
    // The memsets run on the legacy stream, which streams created non-blocking
    // do not wait for: finish them before any call can be enqueued.
    check_cuda(cudaDeviceSynchronize(), "reset rank buffers");
  }
  static void free_rank_buffers(RankBuffers& b) {
    for (void* p : {static_cast<void*>(b.signal), b.scratch}) {
      cudaPointerAttributes a{};
      if (p && cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost)
        cudaFreeHost(a.hostPointer);
      else if (p)
        cudaFree(p);
    }
    cudaGetLastError();
    b = RankBuffers{};
  }

  // `ranks` has world_size entries, ranks[i] being rank i's buffers.
  // max_blocks: blocks per launch; when ranks share a GPU, at most
  // SMs / ranks-per-GPU so that all ranks' blocks are resident together.
  CustomAllreduce(int rank, int world_size, bool full_nvlink, const RankBuffers* ranks, size_t max_bytes,
                  int max_blocks, Thresholds table = Thresholds::defaults(), int64_t timeout_ns = 10'000'000'000)
      : rank_(rank),
        world_size_(world_size),
        full_nvlink_(full_nvlink),
        max_bytes_(max_bytes),
        max_blocks_(max_blocks),
        table_(table),
        timeout_ns_(timeout_ns) {
    if (world_size < 2 || world_size > kMaxRanks)
      throw std::runtime_error("layergate: world size " + std::to_string(world_size) + " not in 2..8");
    if (rank < 0 || rank >= world_size) throw std::runtime_error("layergate: rank out of range");
    if (max_blocks < 1 || max_blocks > kMaxBlocks)
      throw std::runtime_error("layergate: max_blocks must be in 1..256");
    if (max_bytes == 0 || max_bytes % 16 != 0 || max_bytes / 16 > 0xffffffffull)
      throw std::runtime_error("layergate: max_bytes must be a positive multiple of 16 below 64 GiB");
    const size_t half = push_half_bytes(max_bytes);
    for (int p = 0; p < world_size; ++p) {
      char* s = static_cast<char*>(ranks[p].scratch);
      sig_.p[p] = ranks[p].signal;
      stage_.p[p] = s;
      tmp_.p[p] = s + round_up(max_bytes);
      push_.p[p] = s + 2 * round_up(max_bytes);
    }
    half_ = half;

    // one_shot_push puts world_size copies of the message (2 bytes of line
    // per byte of data) into one half.
    one_shot_cap_ = half / (2 * static_cast<size_t>(world_size)) / 16 * 16;
    for (int n = 2; n <= kMaxRanks; ++n) {
      table_.nvlink_one_shot_max[n] = std::min(table_.nvlink_one_shot_max[n], one_shot_cap_);
      table_.pcie_one_shot_max[n] = std::min(table_.pcie_one_shot_max[n], one_shot_cap_);
    }
  }

  CustomAllreduce(const CustomAllreduce&) = delete;
  CustomAllreduce& operator=(const CustomAllreduce&) = delete;
  ~CustomAllreduce() {
    if (graph_slots_) cudaFree(graph_slots_);
  }

  // `peers[i]` is where rank i's copy of the buffer at `local` lives. Pull
  // kernels then read an input at `local` in place instead of staging it.
  void register_buffer(const void* local, void* const* peers) {
    RankPtrs r{};
    for (int p = 0; p < world_size_; ++p) r.p[p] = peers[p];
    registered_[local] = r;
  }

  // Graph-buffer registration (off by default: then a pull kernel captured
  // with an unregistered input stages it, as in eager mode). When on, a pull
  // call captured in a CUDA graph with an unregistered input reads its
  // sources at run time from a device slot instead, and the input joins
  // graph_pending() (in order of first use; every rank captures the same
  // calls, so index i names the same buffer on every rank). Once the peers'
  // addresses are known, bind_graph_buffers() fills the slots; a replay
  // before that moves no data and reports kErrUnregistered. Call outside
  // capture, on the rank's device.
  void enable_graph_registration(size_t slots = 4096) {
    if (graph_slots_) return;
    check_cuda(cudaMalloc(&graph_slots_, slots * sizeof(RankPtrs)), "cudaMalloc(graph slots)");
    check_cuda(cudaMemset(graph_slots_, 0, slots * sizeof(RankPtrs)), "cudaMemset(graph slots)");
    check_cuda(cudaDeviceSynchronize(), "graph slots");
    graph_capacity_ = slots;
  }
  const std::vector<const void*>& graph_pending() const { return graph_pending_; }
  // ptrs[i]: every rank's copy of graph_pending()[i]; all pending ones at once.
  void bind_graph_buffers(const std::vector<RankPtrs>& ptrs) {
    if (ptrs.size() != graph_pending_.size())
      throw std::runtime_error("layergate: bind_graph_buffers needs one entry per pending graph buffer");
    for (size_t i = 0; i < ptrs.size(); ++i) {
      const size_t slot = graph_slot_of_.at(graph_pending_[i]);
      check_cuda(cudaMemcpy(graph_slots_ + slot, &ptrs[i], sizeof(RankPtrs), cudaMemcpyHostToDevice),
                 "fill graph slot");
      registered_[graph_pending_[i]] = ptrs[i];
    }
    graph_pending_.clear();
  }

  // Sum over ranks of `size` elements of `in` into `out` (may be `in`).
  template <typename T>
  void allreduce(cudaStream_t stream, T* in, T* out, int size, Algo force = Algo::kAuto) {
    static_assert(std::is_same<T, float>::value || std::is_same<T, __half>::value ||
                      std::is_same<T, __nv_bfloat16>::value,
                  "layergate all-reduce serves fp32, fp16 and bf16");
    const size_t bytes = static_cast<size_t>(size) * sizeof(T);
    if (size <= 0 || bytes % 16 != 0)
      throw std::runtime_error("layergate: all-reduce needs a positive multiple of 16 bytes, got " +
                               std::to_string(bytes));
    if (bytes > max_bytes_)
      throw std::runtime_error("layergate: " + std::to_string(bytes) + " bytes above max_bytes " +
                               std::to_string(max_bytes_));
    if (force == Algo::kOneShotPush && bytes > one_shot_cap_)
      throw std::runtime_error("layergate: one_shot_push holds at most " + std::to_string(one_shot_cap_) +
                               " bytes at this world size");
    const CallArgs a = call_args(bytes);
    const uint4* vin = reinterpret_cast<const uint4*>(in);
    uint4* vout = reinterpret_cast<uint4*>(out);
    const uint32_t chunk = (a.units + world_size_ - 1) / world_size_;
    const int grid_full = grid_for(a.units);
    const int grid_chunk = grid_for(chunk);
    const int push_full = push_threads(a.units), push_chunk = push_threads(chunk);
    const int grid_push_full = grid_for(a.units, push_full), grid_push_chunk = grid_for(chunk, push_chunk);

// One case per world size: the kernels are templates on it so that the loop
// over ranks unrolls. Every branch ends in a launch or a throw.
#define LAYERGATE_WORLD_CASE(N)                                                             \
  case N:                                                                                   \
    if (force == Algo::kAuto) {                                                             \
      if (full_nvlink_) {                                                                   \
        if (bytes <= table_.nvlink_one_shot_max[N]) {                                       \
          last_algo_ = Algo::kOneShotPush;                                                  \
          one_shot_push<T, N><<<grid_push_full, push_full, 0, stream>>>(a, push_, vin, vout);     \
        } else if (bytes <= table_.nvlink_one_stage_max[N]) {                               \
          last_algo_ = Algo::kOneStagePull;                                                 \
          const RankPtrs src = pull_sources(in, out, bytes, stream, false);                 \
          one_stage_pull<T, N><<<grid_full, kThreads, 0, stream>>>(late(a), src, vout);           \
        } else {                                                                            \
          last_algo_ = Algo::kTwoStagePull;                                                 \
          const RankPtrs src = pull_sources(in, out, bytes, stream, true);                  \
          two_stage_pull<T, N><<<grid_chunk, kThreads, 0, stream>>>(late(a), src, tmp_, vout);    \
        }                                                                                   \
      } else if (bytes <= table_.pcie_one_shot_max[N]) {                                    \
        last_algo_ = Algo::kOneShotPush;                                                    \
        one_shot_push<T, N><<<grid_push_full, push_full, 0, stream>>>(a, push_, vin, vout);       \
      } else {                                                                              \
        last_algo_ = Algo::kTwoShotPush;                                                    \
        two_shot_push<T, N><<<grid_push_chunk, push_chunk, 0, stream>>>(a, push_, vin, vout);      \
      }                                                                                     \
    } else if (force == Algo::kOneShotPush) {                                               \
      last_algo_ = Algo::kOneShotPush;                                                      \
      one_shot_push<T, N><<<grid_push_full, push_full, 0, stream>>>(a, push_, vin, vout);         \
    } else if (force == Algo::kTwoShotPush) {                                               \
      last_algo_ = Algo::kTwoShotPush;                                                      \
      two_shot_push<T, N><<<grid_push_chunk, push_chunk, 0, stream>>>(a, push_, vin, vout);        \
    } else if (force == Algo::kOneStagePull) {                                              \
      last_algo_ = Algo::kOneStagePull;                                                     \
      const RankPtrs src = pull_sources(in, out, bytes, stream, false);                     \
      one_stage_pull<T, N><<<grid_full, kThreads, 0, stream>>>(late(a), src, vout);               \
    } else if (force == Algo::kTwoStagePull) {                                              \
      last_algo_ = Algo::kTwoStagePull;                                                     \
      const RankPtrs src = pull_sources(in, out, bytes, stream, true);                      \
      two_stage_pull<T, N><<<grid_chunk, kThreads, 0, stream>>>(late(a), src, tmp_, vout);        \
    } else {                                                                                \
      throw std::runtime_error("layergate: unknown forced algorithm");                      \
    }                                                                                       \
    break;

    switch (world_size_) {
      LAYERGATE_WORLD_CASE(2)
      LAYERGATE_WORLD_CASE(3)
      LAYERGATE_WORLD_CASE(4)
      LAYERGATE_WORLD_CASE(5)
      LAYERGATE_WORLD_CASE(6)
      LAYERGATE_WORLD_CASE(7)
      LAYERGATE_WORLD_CASE(8)
      default:
        throw std::runtime_error("layergate: no all-reduce kernel for world size " +
                                 std::to_string(world_size_));
    }
#undef LAYERGATE_WORLD_CASE
    check_cuda(cudaGetLastError(), "all-reduce launch");
  }

  // The cross-GPU barrier alone (the floor a benchmark compares against).
  void handshake(cudaStream_t stream) {
    const CallArgs a = call_args(16);
    switch (world_size_) {
      case 2: layergate::handshake<2><<<1, kThreads, 0, stream>>>(a); break;
      case 3: layergate::handshake<3><<<1, kThreads, 0, stream>>>(a); break;
      case 4: layergate::handshake<4><<<1, kThreads, 0, stream>>>(a); break;
      case 5: layergate::handshake<5><<<1, kThreads, 0, stream>>>(a); break;
      case 6: layergate::handshake<6><<<1, kThreads, 0, stream>>>(a); break;
      case 7: layergate::handshake<7><<<1, kThreads, 0, stream>>>(a); break;
      case 8: layergate::handshake<8><<<1, kThreads, 0, stream>>>(a); break;
      default: throw std::runtime_error("layergate: no handshake for world size " + std::to_string(world_size_));
    }
    check_cuda(cudaGetLastError(), "handshake launch");
  }

  // First ErrorCode a kernel of this rank recorded (synchronous read: call
  // outside graph capture, after the work has finished).
  uint32_t error() const {
    uint32_t e = 0;
    check_cuda(cudaMemcpy(&e, &sig_.p[rank_]->error, sizeof e, cudaMemcpyDeviceToHost), "read error flag");
    return e;
  }

  // Threads per block of the push kernels; 0 (default): one block for up to
  // kThreads units, else spread the message over up to max_blocks blocks of
  // 64..512 threads, so that more SMs issue peer stores and poll at once
  // (measured: 256 KB in 4.75 us instead of 5.54 with 512-thread blocks). Pull kernels always use kThreads.
  void set_push_threads(int threads) {
    if (threads != 0 && (threads < 32 || threads > kThreads || threads % 32 != 0))
      throw std::runtime_error("layergate: push threads must be 0 or a multiple of 32 in 32..512");
    push_threads_ = threads;
  }
  Algo last_algo() const { return last_algo_; }
  const Thresholds& table() const { return table_; }
  size_t one_shot_capacity() const { return one_shot_cap_; }
  int world_size() const { return world_size_; }
  bool full_nvlink() const { return full_nvlink_; }

 private:
  CallArgs call_args(size_t bytes) const {
    CallArgs a{};
    a.sig = sig_;
    a.rank = rank_;
    a.units = static_cast<uint32_t>(bytes / 16);
    a.ll_half = half_;
    a.timeout_ns = timeout_ns_;
    a.late_src = nullptr;
    return a;
  }
  // The arguments of a pull launch: late-bound when pull_sources said so.
  CallArgs late(CallArgs a) const {
    a.late_src = late_;
    return a;
  }

  int grid_for(uint64_t units, int threads = kThreads) const {
    const uint64_t g = (units + threads - 1) / threads;
    return static_cast<int>(std::max<uint64_t>(1, std::min<uint64_t>(g, max_blocks_)));
  }

  int push_threads(uint64_t units) const {
    if (push_threads_ != 0) return push_threads_;
    // Up to 8 KB one block of kThreads was measured faster (2.80 vs 2.92 us):
    // it skips the cross-block epoch counter.
    if (units <= kThreads) return kThreads;
    const uint64_t per_block = (units + max_blocks_ - 1) / max_blocks_;
    int t = 64;
    while (t < kThreads && static_cast<uint64_t>(t) < per_block) t *= 2;
    return t;
  }

  // Where the pull kernels read each rank's input. A registered input is read
  // in place; otherwise (or when in == out and the kernel writes out while
  // peers still read) it is first copied into this rank's staging buffer.
  // Every rank makes the same choice, since all call with the same kind of
  // buffer, so the peers' staging pointers are the right ones to read.
  template <typename T>
  RankPtrs pull_sources(const T* in, const T* out, size_t bytes, cudaStream_t stream, bool in_place_ok) {
    late_ = nullptr;
    if (in != out || in_place_ok) {
      auto it = registered_.find(in);
      if (it != registered_.end()) return it->second;
      cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
      if (graph_slots_ && cudaStreamIsCapturing(stream, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusActive) {
        auto s = graph_slot_of_.find(in);
        if (s == graph_slot_of_.end()) {
          if (graph_used_ == graph_capacity_) throw std::runtime_error("layergate: graph buffer slots exhausted");
          s = graph_slot_of_.emplace(in, graph_used_++).first;
          graph_pending_.push_back(in);
        }
        late_ = graph_slots_ + s->second;
        return RankPtrs{};
      }
    }
    check_cuda(cudaMemcpyAsync(stage_.p[rank_], in, bytes, cudaMemcpyDeviceToDevice, stream), "stage input");
    return stage_;
  }

  int rank_;
  int world_size_;
  bool full_nvlink_;
  size_t max_bytes_;
  int max_blocks_;
  Thresholds table_;
  int64_t timeout_ns_;
  size_t half_ = 0;
  size_t one_shot_cap_ = 0;
  SignalPtrs sig_{};
  RankPtrs stage_{};
  RankPtrs tmp_{};
  RankPtrs push_{};
  std::unordered_map<const void*, RankPtrs> registered_;
  Algo last_algo_ = Algo::kAuto;
  int push_threads_ = 0;
  RankPtrs* graph_slots_ = nullptr;  // device, graph_capacity_ entries
  size_t graph_capacity_ = 0, graph_used_ = 0;
  std::unordered_map<const void*, size_t> graph_slot_of_;
  std::vector<const void*> graph_pending_;
  const RankPtrs* late_ = nullptr;  // set by pull_sources for the next launch
};

// Entry function in the shape of the op the Python gate calls
// (layergate_ops.init_custom_ar in kernels/torch/, whose first four
// arguments are the upstream ones): ranks[p] is rank p's buffers as this
// process addresses them (world size = ranks.size()); rank_data is unused,
// kept from the upstream signature; the NVLink flag arrives as the fourth
// argument and is stored in full_nvlink_. Returns an opaque handle, as the
// torch binding does. kernels/layergate_ipc.cuh builds its IpcAllreduce
// through this entry.
inline int64_t init_custom_ar(const std::vector<RankBuffers>& ranks, const void* rank_data, int rank,
                              bool full_nvlink, size_t max_bytes, int max_blocks = 36, int64_t timeout_ms = 10000,
                              Thresholds table = Thresholds::defaults()) {
  (void)rank_data;
  return reinterpret_cast<int64_t>(new CustomAllreduce(rank, static_cast<int>(ranks.size()), full_nvlink,
                                                       ranks.data(), max_bytes, max_blocks, table,
                                                       timeout_ms * 1000000));
}

}  // namespace layergate
