// layergate reference all-reduce: device side.
//
// Takes: per-rank device pointers (this process may address every rank's
// memory: peer access on one host, or several ranks on one GPU) and a message
// of `units` 16-byte units. Returns: the element-wise sum over ranks in `out`,
// identical on every rank (each rank sums in rank order 0..n-1, in fp32 for
// the 16-bit types).
//
// Four algorithms (see ../shared/DESIGN.md, "Reference kernels"):
//   one_shot_push   each rank writes its input into every peer's receive
//                   buffer, the flag travelling inside the data, then reduces
//                   locally. One cross-GPU trip, no barrier.
//   two_shot_push   reduce-scatter then all-gather, both as pushes with flags in
//                   the data. Two trips, no barrier; half the reduction work.
//   one_stage_pull  barrier, every rank reads all peers' inputs, barrier.
//   two_stage_pull  barrier, reduce-scatter by reading, release/acquire
//                   barrier, all-gather by reading.
// and `handshake`, which only does the cross-GPU barrier (the floor).
//
// Every wait has a deadline read from %globaltimer: on expiry the kernel
// records an error code in its own Signal and runs to its end instead of
// hanging; the host reads the code with CustomAllreduce::error().
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace layergate {

constexpr int kMaxRanks = 8;
constexpr int kMaxBlocks = 256;
constexpr int kThreads = 512;

enum ErrorCode : uint32_t {
  kErrNone = 0,
  kErrBarrierTimeout = 1,  // a peer never reached a barrier
  kErrDataTimeout = 2,     // a peer's pushed data never arrived
  kErrUnregistered = 3,    // a graph-captured pull ran before its buffers were registered
};

enum BarrierStage { kStart = 0, kMid = 1, kEnd = 2 };

// One per rank, in memory every rank can address, zeroed before first use.
// Flags are monotonic call numbers ("epochs"), never reset between calls, so
// a stale flag is always smaller than the one awaited and no call has to
// clean up after itself.
struct alignas(128) Signal {
  // flags[stage][block][src]: written by rank `src`, block `block`.
  uint32_t flags[3][kMaxBlocks][kMaxRanks];
  uint32_t epoch;  // number of calls this rank has completed
  uint32_t done;   // blocks of the call in flight that have finished
  uint32_t error;  // first ErrorCode recorded, 0 if none
};

struct RankPtrs {
  void* p[kMaxRanks];
};
struct SignalPtrs {
  Signal* p[kMaxRanks];
};

// Arguments shared by every kernel of one call.
struct CallArgs {
  SignalPtrs sig;       // sig.p[rank] is this rank's own
  int rank;
  uint32_t units;       // message length in 16-byte units
  uint64_t ll_half;     // bytes in one parity half of a push region
  int64_t timeout_ns;   // per-call deadline for every wait
  // Pull kernels only: when set, the rank inputs are read from this device
  // array at run time instead of from the `src` argument. A call captured in
  // a CUDA graph before its input was registered gets a slot here, filled
  // once the peers' addresses are known (CustomAllreduce::bind_graph_buffers).
  const RankPtrs* late_src;
};

namespace detail {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void st_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t ld_relaxed_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A push line is 16 bytes: two 64-bit words, each {payload 32 bits, flag 32
// bits}. The PTX memory model makes an aligned 64-bit access single-copy
// atomic, and treats a vector access as one access per element, so a reader
// that sees the flag in a word also sees the payload stored with it: the
// write that moves the data is the write that signals it, with no fence and
// no second trip. (A 16-byte vector is NOT one atomic access, which is why
// every 64-bit word carries its own flag.) `volatile` is relaxed at system
// scope: the stores go out to the peer and the loads re-read memory each time.
__device__ __forceinline__ void st_line(uint4* p, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ void ld_line(const uint4* p, uint64_t& a, uint64_t& b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}

__device__ __forceinline__ uint64_t word(uint32_t payload, uint32_t flag) {
  return (static_cast<uint64_t>(flag) << 32) | payload;
}

struct Deadline {
  uint64_t at;  // 0 until the first slow check: the fast path never reads the timer
  int64_t timeout_ns;
  uint32_t* error;

  // Checked every 1024 spins. An error already recorded by another block of
  // this rank ends the wait at once, so one lost peer costs one timeout per
  // rank, not one per wait.
  __device__ bool expired(uint32_t code) {
    if (ld_relaxed_gpu(error) != kErrNone) return true;
    const uint64_t now = global_ns();
    if (at == 0) {
      at = now + static_cast<uint64_t>(timeout_ns);
      return false;
    }
    if (now > at) {
      atomicCAS(error, kErrNone, code);
      return true;
    }
    return false;
  }
};

__device__ __forceinline__ Deadline deadline(const CallArgs& a) {
  return Deadline{0, a.timeout_ns, &a.sig.p[a.rank]->error};
}

// Epochs. Every rank runs the same sequence of calls, so the counters agree
// without talking to each other; the call's flag value is epoch + 1, read by
// every block at its start. The previous call's update is visible then
// because kernels on one stream run one after another.
//
// The update must not be seen by a block of the same call that starts late
// (the grid may be larger than what is resident, and grid sizes change from
// call to call). So each block, once it has read the epoch, increments an
// arrival counter with acq_rel; the block that arrives last has observed
// every other block's increment, hence every block's read, and only then
// stores the new epoch. The increment is issued at the start and its result
// used only at the end, so its round trip overlaps the data movement. A
// one-block grid needs no counter.
struct Epoch {
  uint32_t e;        // this call's flag value
  uint32_t arrived;  // arrival counter before this block (thread 0 only)
};

__device__ __forceinline__ Epoch begin_call(const CallArgs& a) {
  __shared__ uint32_t s_epoch;
  Signal* s = a.sig.p[a.rank];
  Epoch ep{0, 0};
  if (threadIdx.x == 0) {
    s_epoch = ld_relaxed_gpu(&s->epoch) + 1;
    if (gridDim.x > 1)
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(ep.arrived) : "l"(&s->done) : "memory");
  }
  __syncthreads();
  ep.e = s_epoch;
  return ep;
}

__device__ __forceinline__ void finish_call(const CallArgs& a, const Epoch& ep) {
  if (threadIdx.x != 0) return;
  Signal* s = a.sig.p[a.rank];
  if (gridDim.x == 1 || ep.arrived == gridDim.x - 1) {
    if (gridDim.x > 1) asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(&s->done) : "memory");
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(&s->epoch), "r"(ep.e) : "memory");
  }
}

// Block-level barrier with the same-numbered block of every peer.
//
// Why it orders data: the __syncthreads before the release puts every write
// this block made (and, by stream order, every write of earlier work on this
// stream) before thread t's st.release.sys in causality order; a peer's
// ld.acquire.sys that reads the flag, followed by the peer's __syncthreads,
// puts those writes before every later read in the peer's block. Release and
// acquire are at system scope because the peer is another GPU.
// Only same-numbered blocks meet, so callers must give each block the same
// slice of the data on every rank and in every phase.
template <int N>
__device__ __forceinline__ void barrier(const CallArgs& a, int stage, uint32_t e, Deadline& d) {
  __syncthreads();
  const int t = threadIdx.x;
  if (t < N && t != a.rank) {
    st_release_sys(&a.sig.p[t]->flags[stage][blockIdx.x][a.rank], e);
    const uint32_t* mine = &a.sig.p[a.rank]->flags[stage][blockIdx.x][t];
    for (uint32_t spin = 1;; ++spin) {
      // Flags only grow; a peer may already be one call ahead on this slot.
      if (static_cast<int32_t>(ld_acquire_sys(mine) - e) >= 0) break;
      if ((spin & 1023) == 0 && d.expired(kErrBarrierTimeout)) break;
    }
  }
  __syncthreads();
}

__device__ __forceinline__ uint4 wait_line_pair(const uint4* p, uint32_t e, Deadline& d) {
  uint64_t w0, w1, w2, w3;
  for (uint32_t spin = 1;; ++spin) {
    ld_line(p, w0, w1);
    ld_line(p + 1, w2, w3);
    if (static_cast<uint32_t>(w0 >> 32) == e && static_cast<uint32_t>(w1 >> 32) == e &&
        static_cast<uint32_t>(w2 >> 32) == e && static_cast<uint32_t>(w3 >> 32) == e)
      break;
    if ((spin & 1023) == 0 && d.expired(kErrDataTimeout)) break;
  }
  return make_uint4(static_cast<uint32_t>(w0), static_cast<uint32_t>(w1), static_cast<uint32_t>(w2),
                    static_cast<uint32_t>(w3));
}

// One 16-byte unit becomes two push lines (32 bytes) carrying flag e.
__device__ __forceinline__ void push_unit(uint4* dst, const uint4& v, uint32_t e) {
  st_line(dst, word(v.x, e), word(v.y, e));
  st_line(dst + 1, word(v.z, e), word(v.w, e));
}

// Push region of rank `dst_base` for this call's parity: two halves, chosen
// by epoch parity. A rank writes call e+2 into the half it wrote for call e
// only after it finished call e+1, which needed data (or a barrier) from
// every peer for e+1, so every peer had finished reading call e.
__device__ __forceinline__ uint4* push_half(void* base, uint32_t e, uint64_t ll_half) {
  return reinterpret_cast<uint4*>(static_cast<char*>(base) + (e & 1u) * ll_half);
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Sum of 16 bytes of T over ranks, kept in fp32.
template <typename T>
struct Acc {
  static constexpr int kN = 16 / sizeof(T);
  float v[kN];
  __device__ __forceinline__ void set(const uint4& u) {
    T t[kN];
    memcpy(t, &u, 16);
#pragma unroll
    for (int i = 0; i < kN; ++i) v[i] = to_float(t[i]);
  }
  __device__ __forceinline__ void add(const uint4& u) {
    T t[kN];
    memcpy(t, &u, 16);
#pragma unroll
    for (int i = 0; i < kN; ++i) v[i] += to_float(t[i]);
  }
  __device__ __forceinline__ uint4 pack() const {
    T t[kN];
#pragma unroll
    for (int i = 0; i < kN; ++i) t[i] = from_float<T>(v[i]);
    uint4 u;
    memcpy(&u, t, 16);
    return u;
  }
};

// A late-bound source table (CallArgs::late_src) whose slot was never
// filled holds null pointers: the kernel then moves no data but still meets
// its peers at every barrier, so epochs stay in step, and reports
// kErrUnregistered instead of faulting.
template <int N>
__device__ __forceinline__ bool sources_ready(const CallArgs& a, const RankPtrs& s) {
  bool ok = true;
#pragma unroll
  for (int p = 0; p < N; ++p) ok &= s.p[p] != nullptr;
  if (!ok && threadIdx.x == 0) atomicCAS(&a.sig.p[a.rank]->error, kErrNone, static_cast<uint32_t>(kErrUnregistered));
  return ok;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// one_shot_push: rank r's slot in rank p's region holds r's whole message.
// Region use per parity half: N slots * 2 * bytes.
template <typename T, int N>
__global__ void __launch_bounds__(kThreads) one_shot_push(const __grid_constant__ CallArgs a, const __grid_constant__ RankPtrs ll,
                                                        const uint4* in, uint4* out) {
  using namespace detail;
  const Epoch ep = begin_call(a);
  const uint32_t e = ep.e;
  Deadline d = deadline(a);
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t slot_lines = 2ull * a.units;

  // All pushes first, so that every peer's data is in flight before anyone
  // waits. Push regions are separate from in/out, so in == out is safe: each
  // thread reads in[i] before it writes out[i].
  for (uint32_t i = first; i < a.units; i += stride) {
    const uint4 v = in[i];
#pragma unroll
    for (int p = 0; p < N; ++p) {
      if (p == a.rank) continue;
      push_unit(push_half(ll.p[p], e, a.ll_half) + a.rank * slot_lines + 2ull * i, v, e);
    }
  }
  const uint4* mine = push_half(ll.p[a.rank], e, a.ll_half);
  for (uint32_t i = first; i < a.units; i += stride) {
    Acc<T> acc;
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint4 x = p == a.rank ? in[i] : wait_line_pair(mine + p * slot_lines + 2ull * i, e, d);
      if (p == 0)
        acc.set(x);
      else
        acc.add(x);
    }
    out[i] = acc.pack();
  }
  finish_call(a, ep);
}

// ---------------------------------------------------------------------------
// two_shot_push: chunk j (c units) belongs to rank j. Per parity half:
// [reduce-scatter slots: N * c * 2 lines][all-gather slots: N * c * 2 lines].
template <typename T, int N>
__global__ void __launch_bounds__(kThreads) two_shot_push(const __grid_constant__ CallArgs a, const __grid_constant__ RankPtrs ll,
                                                        const uint4* in, uint4* out) {
  using namespace detail;
  const Epoch ep = begin_call(a);
  const uint32_t e = ep.e;
  Deadline d = deadline(a);
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t c = (a.units + N - 1) / N;
  const uint64_t slot_lines = 2ull * c;
  const uint64_t ag_off = N * slot_lines;
  const int r = a.rank;

  // Reduce-scatter, send side.
  for (uint32_t k = first; k < c; k += stride) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const uint64_t idx = static_cast<uint64_t>(j) * c + k;
      if (j == r || idx >= a.units) continue;
      push_unit(push_half(ll.p[j], e, a.ll_half) + r * slot_lines + 2ull * k, in[idx], e);
    }
  }
  // Reduce own chunk, write it, and push it to every peer (all-gather send).
  uint4* mine = push_half(ll.p[r], e, a.ll_half);
  for (uint32_t k = first; k < c; k += stride) {
    const uint64_t idx = static_cast<uint64_t>(r) * c + k;
    if (idx >= a.units) break;
    Acc<T> acc;
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint4 x = p == r ? in[idx] : wait_line_pair(mine + p * slot_lines + 2ull * k, e, d);
      if (p == 0)
        acc.set(x);
      else
        acc.add(x);
    }
    const uint4 s = acc.pack();
#pragma unroll
    for (int p = 0; p < N; ++p) {
      if (p == r) continue;
      push_unit(push_half(ll.p[p], e, a.ll_half) + ag_off + r * slot_lines + 2ull * k, s, e);
    }
    out[idx] = s;
  }
  // All-gather, receive side. in[j*c+k] was read by this same thread in the
  // first loop (same k), so writing out there is safe when in == out.
  for (uint32_t k = first; k < c; k += stride) {
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint64_t idx = static_cast<uint64_t>(p) * c + k;
      if (p == r || idx >= a.units) continue;
      out[idx] = wait_line_pair(mine + ag_off + p * slot_lines + 2ull * k, e, d);
    }
  }
  finish_call(a, ep);
}

// ---------------------------------------------------------------------------
// one_stage_pull: src.p[p] is rank p's input (registered or staged).
// The end barrier keeps a rank from returning (and its caller from
// overwriting the input) while a peer still reads it. Needs in != out.
template <typename T, int N>
__device__ __forceinline__ void one_stage_pull_body(const CallArgs& a, const RankPtrs& src, uint4* out, uint32_t e,
                                                    detail::Deadline& d, bool have) {
  using namespace detail;
  barrier<N>(a, kStart, e, d);
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; have && i < a.units; i += stride) {
    Acc<T> acc;
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint4 x = static_cast<const uint4*>(src.p[p])[i];
      if (p == 0)
        acc.set(x);
      else
        acc.add(x);
    }
    out[i] = acc.pack();
  }
  barrier<N>(a, kEnd, e, d);
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) one_stage_pull(const __grid_constant__ CallArgs a,
                                                         const __grid_constant__ RankPtrs src, uint4* out) {
  using namespace detail;
  const Epoch ep = begin_call(a);
  Deadline d = deadline(a);
  // Two copies of the body: the direct one reads the pointers from the
  // parameter space, as before late binding existed.
  if (a.late_src) {
    const RankPtrs late = *a.late_src;
    one_stage_pull_body<T, N>(a, late, out, ep.e, d, sources_ready<N>(a, late));
  } else {
    one_stage_pull_body<T, N>(a, src, out, ep.e, d, true);
  }
  finish_call(a, ep);
}

// ---------------------------------------------------------------------------
// two_stage_pull: reduce own chunk from every peer's input into own `tmp`,
// release/acquire barrier, then read every peer's reduced chunk.
// No end barrier: peers read our input only before the mid barrier, and our
// tmp only until they enter their next call, whose start barrier we must
// pass before we write tmp again. in == out is safe: out is written only
// after the mid barrier, when every peer has finished reading our input
// (same k slice per block in both phases).
template <typename T, int N>
__device__ __forceinline__ void two_stage_pull_body(const CallArgs& a, const RankPtrs& src, const RankPtrs& tmp,
                                                    uint4* out, uint32_t e, detail::Deadline& d, bool have) {
  using namespace detail;
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t c = (a.units + N - 1) / N;
  const int r = a.rank;
  barrier<N>(a, kStart, e, d);
  uint4* own_tmp = static_cast<uint4*>(tmp.p[r]);
  for (uint32_t k = first; have && k < c; k += stride) {
    const uint64_t idx = static_cast<uint64_t>(r) * c + k;
    if (idx >= a.units) break;
    Acc<T> acc;
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint4 x = static_cast<const uint4*>(src.p[p])[idx];
      if (p == 0)
        acc.set(x);
      else
        acc.add(x);
    }
    own_tmp[idx] = acc.pack();
  }
  barrier<N>(a, kMid, e, d);
  for (uint32_t k = first; have && k < c; k += stride) {
#pragma unroll
    for (int p = 0; p < N; ++p) {
      const uint64_t idx = static_cast<uint64_t>(p) * c + k;
      if (idx >= a.units) continue;
      out[idx] = static_cast<const uint4*>(tmp.p[p])[idx];
    }
  }
}

template <typename T, int N>
__global__ void __launch_bounds__(kThreads) two_stage_pull(const __grid_constant__ CallArgs a,
                                                         const __grid_constant__ RankPtrs src,
                                                         const __grid_constant__ RankPtrs tmp, uint4* out) {
  using namespace detail;
  const Epoch ep = begin_call(a);
  Deadline d = deadline(a);
  if (a.late_src) {
    const RankPtrs late = *a.late_src;
    two_stage_pull_body<T, N>(a, late, tmp, out, ep.e, d, sources_ready<N>(a, late));
  } else {
    two_stage_pull_body<T, N>(a, src, tmp, out, ep.e, d, true);
  }
  finish_call(a, ep);
}

// ---------------------------------------------------------------------------
// handshake: the cross-GPU barrier alone, one block. Its time in a graph is
// the floor under any kernel that must hear from every peer.
template <int N>
__global__ void __launch_bounds__(kThreads) handshake(const __grid_constant__ CallArgs a) {
  const detail::Epoch ep = detail::begin_call(a);
  detail::Deadline d = detail::deadline(a);
  detail::barrier<N>(a, kStart, ep.e, d);
  detail::finish_call(a, ep);
}

}  // namespace layergate
