// C++ frontend tests: small dispatch headers written to a temp dir, parsed
// with the bundled stubs; leaves checked by evaluating their conditions for
// concrete configurations.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "cpp/CppFrontend.h"
#include "model/Errors.h"
#include "target/Target.h"

namespace lg = layergate;
namespace m = layergate::model;

namespace {

std::string tempDir() {
  static std::string base = [] {
    char tmpl[] = "/tmp/lg_cpp_test_XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  static int n = 0;
  std::string d = base + "/t" + std::to_string(n++);
  std::string cmd = "mkdir -p '" + d + "'";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "mkdir failed";
  return d;
}

std::string writeFile(const std::string& dir, const std::string& name, const std::string& text) {
  std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

const lg::target::CppDispatchSpec& spec() {
  static lg::target::Target t =
      lg::target::loadTarget(std::string(LAYERGATE_SOURCE_DIR) + "/rules/targets/custom-allreduce.json");
  return t.cpp;
}

int lineOf(const std::string& text, const std::string& needle, int nth = 1) {
  std::istringstream in(text);
  std::string line;
  int n = 0, seen = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find(needle) != std::string::npos && ++seen == nth) return n;
  }
  return -1;
}

// --- a tiny evaluator for model::Expr ------------------------------------------

struct Val {
  m::Sort sort = m::Sort::Bool;
  bool b = false;
  std::int64_t i = 0;
  std::string s;
};

struct Config {
  std::map<std::string, Val> vars;
  bool opaque_bool = false;
  std::int64_t opaque_int = 0;
  Config& ws(std::int64_t v) { vars["world_size"] = {m::Sort::Int, false, v, {}}; return *this; }
  Config& nvl(bool v) { vars["full_nvlink"] = {m::Sort::Bool, v, 0, {}}; return *this; }
  Config& bytes(std::int64_t v) { vars["nbytes"] = {m::Sort::Int, false, v, {}}; return *this; }
  Config& env(const std::string& name, std::optional<std::string> v) {
    vars[m::envSetVar(name)] = {m::Sort::Bool, v.has_value(), 0, {}};
    vars[m::envVar(name)] = {m::Sort::Str, false, 0, v.value_or("")};
    return *this;
  }
};

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Val eval(const m::ExprPtr& e, const Config& c) {
  Val r;
  r.sort = e->sort;
  auto B = [&](int k) { return eval(e->args[k], c).b; };
  auto I = [&](int k) { return eval(e->args[k], c).i; };
  switch (e->op) {
    case m::Op::BoolConst: r.b = e->b; return r;
    case m::Op::IntConst: r.i = e->i; return r;
    case m::Op::StrConst: r.s = e->s; return r;
    case m::Op::Var: {
      auto it = c.vars.find(e->s);
      if (it != c.vars.end()) return it->second;
      if (e->var_kind != m::VarKind::Opaque && m::envNameOf(e->s).empty())
        ADD_FAILURE() << "config variable without a value: " << e->s;
      r.b = c.opaque_bool;
      r.i = c.opaque_int;
      return r;
    }
    case m::Op::Not: r.b = !B(0); return r;
    case m::Op::And: r.b = true; for (std::size_t k = 0; k < e->args.size(); ++k) r.b = r.b && B(int(k)); return r;
    case m::Op::Or: r.b = false; for (std::size_t k = 0; k < e->args.size(); ++k) r.b = r.b || B(int(k)); return r;
    case m::Op::Implies: r.b = !B(0) || B(1); return r;
    case m::Op::Ite: return B(0) ? eval(e->args[1], c) : eval(e->args[2], c);
    case m::Op::Eq:
    case m::Op::Ne: {
      Val a = eval(e->args[0], c), b = eval(e->args[1], c);
      bool eq = a.sort == m::Sort::Str ? a.s == b.s : a.sort == m::Sort::Bool ? a.b == b.b : a.i == b.i;
      r.b = e->op == m::Op::Eq ? eq : !eq;
      return r;
    }
    case m::Op::Lt: r.b = I(0) < I(1); return r;
    case m::Op::Le: r.b = I(0) <= I(1); return r;
    case m::Op::Gt: r.b = I(0) > I(1); return r;
    case m::Op::Ge: r.b = I(0) >= I(1); return r;
    case m::Op::Add: r.i = I(0) + I(1); return r;
    case m::Op::Sub: r.i = I(0) - I(1); return r;
    case m::Op::Mul: r.i = I(0) * I(1); return r;
    case m::Op::Div: { auto d = I(1); r.i = d ? floorDiv(I(0), d) : 0; return r; }
    case m::Op::Mod: { auto d = I(1); r.i = d ? I(0) - floorDiv(I(0), d) * d : 0; return r; }
    case m::Op::Neg: r.i = -I(0); return r;
    case m::Op::StrToInt: {
      std::string s = eval(e->args[0], c).s;
      r.i = std::atoll(s.c_str());
      return r;
    }
  }
  return r;
}

std::vector<const m::Leaf*> hits(const m::Dispatch& d, const Config& c) {
  std::vector<const m::Leaf*> out;
  for (const auto& l : d.leaves)
    if (eval(l.condition, c).b) out.push_back(&l);
  return out;
}

// Exactly one leaf holds for a configuration: the leaves partition the space.
const m::Leaf& theLeaf(const m::Dispatch& d, const Config& c) {
  auto h = hits(d, c);
  EXPECT_EQ(h.size(), 1u) << "leaves that hold: " << h.size();
  static m::Leaf none{m::LeafKind::None, m::False(), "", "<no leaf>", {}, {}, {}};
  return h.empty() ? none : *h.front();
}

std::string dump(const m::Dispatch& d) {
  std::ostringstream o;
  for (const auto& l : d.leaves)
    o << (l.kind == m::LeafKind::Launch ? "launch " : l.kind == m::LeafKind::Throw ? "throw " : "none ") << l.kernel
      << " [" << l.text << "] " << l.spelling.line << "/" << l.expansion.line << " : " << l.condition->str() << "\n";
  for (const auto& n : d.notes) o << "note: " << n << "\n";
  return o.str();
}

// --- sources -------------------------------------------------------------------------

const char* kPrologue = R"(#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>
)";

const char* kKernels = R"(
constexpr int kMaxBlocks = 36;
struct Signal { alignas(128) unsigned self_counter[kMaxBlocks][8]; };
struct __align__(16) RankData { const void* __restrict__ ptrs[8]; };
struct __align__(16) RankSignals { Signal* signals[8]; };
template <typename T, int sz>
struct __align__(alignof(T) * sz) array_t { T data[sz]; using type = T; static constexpr int size = sz; };
template <typename T>
struct packed_t { using P = array_t<T, 16 / sizeof(T)>; };
#define DINLINE __device__ __forceinline__
template <int ngpus>
DINLINE void barrier(const RankSignals& sg, Signal* self_sg, int rank) {
  if (threadIdx.x < ngpus) {
    auto val = self_sg->self_counter[blockIdx.x][threadIdx.x] += 1;
    while (atomicAdd(&self_sg->self_counter[blockIdx.x][threadIdx.x], 0u) != val);
  }
  __syncthreads();
}
template <typename T, int ngpus>
__global__ void __launch_bounds__(512, 1) cross_device_reduce_1stage(RankData* _dp, RankSignals sg, Signal* self_sg, T* __restrict__ result, int rank, int size) {
  barrier<ngpus>(sg, self_sg, rank);
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < size; idx += gridDim.x * blockDim.x) result[idx] = result[idx];
}
template <typename T, int ngpus>
__global__ void __launch_bounds__(512, 1) cross_device_reduce_2stage(RankData* _dp, RankSignals sg, Signal* self_sg, T* __restrict__ result, int rank, int size) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  barrier<ngpus>(sg, self_sg, rank);
  if (tid < size) result[tid] = result[tid];
}
template <typename T, int ngpus>
__global__ void cross_device_reduce_half_butterfly(RankData* _dp, RankSignals sg, Signal* self_sg, T* __restrict__ result, int rank, int size) {
  barrier<ngpus>(sg, self_sg, rank);
}
)";

// The class up to the dispatch's switch; FLAG is the NVLink member's name.
std::string classHead(const std::string& flag) {
  return R"(
class CustomAllreduce {
 public:
  int rank_;
  int world_size_;
  bool )" + flag + R"(;
  RankSignals sg_;
  std::unordered_map<void*, RankData*> buffers_;
  Signal* self_sg_;
  RankData *d_rank_data_base_, *d_rank_data_end_;
  std::vector<void*> graph_unreg_buffers_;
  CustomAllreduce(Signal** signals, void* rank_data, size_t rank_data_sz, int rank, int world_size, bool full_nvlink = true)
      : rank_(rank), world_size_(world_size), )" + flag + R"((full_nvlink), self_sg_(signals[rank]) {
    for (int i = 0; i < world_size_; i++) sg_.signals[i] = signals[i];
  }
  template <typename T>
  void allreduce(cudaStream_t stream, T* input, T* output, int size, int threads = 512, int block_limit = 36) {
    auto d = packed_t<T>::P::size;
    if (size % d != 0)
      throw std::runtime_error("custom allreduce currently requires input length to be multiple of " + std::to_string(d));
    if (block_limit > kMaxBlocks)
      throw std::runtime_error("max supported block limit is " + std::to_string(kMaxBlocks));
    RankData* ptrs;
    cudaStreamCaptureStatus status;
    CHECK_CUDA_SUCCESS(cudaStreamIsCapturing(stream, &status));
    if (status == cudaStreamCaptureStatusActive) {
      ptrs = d_rank_data_base_ + graph_unreg_buffers_.size();
      graph_unreg_buffers_.push_back(input);
    } else {
      auto it = buffers_.find(input);
      if (it == buffers_.end())
        throw std::runtime_error("buffer address is not registered!");
      ptrs = it->second;
    }
    size /= d;
    auto bytes = size * sizeof(typename packed_t<T>::P);
    int blocks = std::min(block_limit, (size + threads - 1) / threads);
)";
}

std::string macroDispatch(const std::string& flag, const std::string& elseArm) {
  return R"(#define KL(ngpus, name) name<T, ngpus><<<blocks, threads, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
#define REDUCE_CASE(ngpus)                                                                        \
  case ngpus: {                                                                                   \
    if (world_size_ == 2) {                                                                       \
      KL(ngpus, cross_device_reduce_1stage);                                                      \
    } else if ()" + flag + R"() {                                                                    \
      if ((world_size_ <= 4 && bytes < 512 * 1024) || (world_size_ <= 8 && bytes < 256 * 1024)) { \
        KL(ngpus, cross_device_reduce_1stage);                                                    \
      } else {                                                                                    \
        KL(ngpus, cross_device_reduce_2stage);                                                    \
      }                                                                                           \
    })" + elseArm + R"(                                                                                             \
    break;                                                                                        \
  }
    switch (world_size_) {
      REDUCE_CASE(2)
      REDUCE_CASE(4)
      REDUCE_CASE(6)
      REDUCE_CASE(8)
      default:
        throw std::runtime_error("custom allreduce only supports num gpus in (2,4,6,8). Actual num gpus = " + std::to_string(world_size_));
    }
#undef REDUCE_CASE
#undef KL
  }
};
)";
}

std::string sglangSource() {
  return std::string(kPrologue) + "#include \"utils.h\"\nnamespace sglang {\n" + kKernels + classHead("full_nvlink_") +
         macroDispatch("full_nvlink_", "") + "}  // namespace sglang\n";
}

Config base() {
  Config c;
  c.opaque_bool = false;  // preliminary checks pass, not capturing, buffer registered
  return c;
}

// --- tests -------------------------------------------------------------------------

TEST(CppFrontend, SglangMacroDispatch) {
  std::string dir = tempDir();
  std::string src = sglangSource();
  std::string path = writeFile(dir, "custom_all_reduce.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  EXPECT_EQ(d.class_name, "CustomAllreduce");
  EXPECT_EQ(d.function, "allreduce");
  EXPECT_EQ(d.where.file, path);
  EXPECT_EQ(d.where.line, lineOf(src, "void allreduce("));

  const int defLine = lineOf(src, "#define REDUCE_CASE");
  const int ws2Line = lineOf(src, "KL(ngpus, cross_device_reduce_1stage)", 1);
  const int smallLine = lineOf(src, "KL(ngpus, cross_device_reduce_1stage)", 2);
  const int twoLine = lineOf(src, "KL(ngpus, cross_device_reduce_2stage)");
  const int nvlLine = lineOf(src, "} else if (full_nvlink_)");
  const int case4 = lineOf(src, "REDUCE_CASE(4)"), case2 = lineOf(src, "REDUCE_CASE(2)");
  const int case8 = lineOf(src, "REDUCE_CASE(8)");
  const int throwLine = lineOf(src, "throw std::runtime_error(\"custom allreduce only supports");

  // Launch leaves for both kernels: spelling inside the macro, expansion at REDUCE_CASE(n).
  bool saw1 = false, saw2 = false;
  for (const auto& l : d.leaves) {
    if (l.kind != m::LeafKind::Launch) continue;
    EXPECT_GT(l.spelling.line, defLine);
    EXPECT_LT(l.spelling.line, case2);
    EXPECT_GE(l.expansion.line, case2);
    EXPECT_LE(l.expansion.line, case8);
    EXPECT_EQ(l.spelling.file, path);
    saw1 |= l.kernel == "cross_device_reduce_1stage";
    saw2 |= l.kernel == "cross_device_reduce_2stage";
  }
  EXPECT_TRUE(saw1);
  EXPECT_TRUE(saw2);

  // world size 2: one-stage from the first KL line, expanded at REDUCE_CASE(2).
  {
    const auto& l = theLeaf(d, base().ws(2).nvl(false).bytes(1 << 20));
    EXPECT_EQ(l.kind, m::LeafKind::Launch);
    EXPECT_EQ(l.kernel, "cross_device_reduce_1stage");
    EXPECT_EQ(l.spelling.line, ws2Line);
    EXPECT_EQ(l.expansion.line, case2);
  }
  // NVLink: one-stage below the thresholds, two-stage above.
  {
    const auto& l = theLeaf(d, base().ws(4).nvl(true).bytes(300 * 1024));
    EXPECT_EQ(l.kernel, "cross_device_reduce_1stage");
    EXPECT_EQ(l.spelling.line, smallLine);
    EXPECT_EQ(l.expansion.line, case4);
  }
  EXPECT_EQ(theLeaf(d, base().ws(8).nvl(true).bytes(300 * 1024)).kernel, "cross_device_reduce_2stage");
  EXPECT_EQ(theLeaf(d, base().ws(8).nvl(true).bytes(255 * 1024)).kernel, "cross_device_reduce_1stage");
  EXPECT_EQ(theLeaf(d, base().ws(4).nvl(true).bytes(600 * 1024)).spelling.line, twoLine);
  // The gap: world size 4 over PCIe launches nothing, at the else-if line.
  {
    const auto& l = theLeaf(d, base().ws(4).nvl(false).bytes(42 * 1024));
    EXPECT_EQ(l.kind, m::LeafKind::None);
    EXPECT_EQ(l.spelling.line, nvlLine);
    EXPECT_EQ(l.expansion.line, case4);
    EXPECT_NE(l.text.find("full_nvlink_"), std::string::npos) << l.text;
  }
  // Unsupported world size: the default throws.
  {
    const auto& l = theLeaf(d, base().ws(3).nvl(true).bytes(1024));
    EXPECT_EQ(l.kind, m::LeafKind::Throw);
    EXPECT_EQ(l.spelling.line, throwLine);
    EXPECT_EQ(l.text.rfind("custom allreduce only supports", 0), 0u) << l.text;
  }
  // The preliminary checks are throws under opaque conditions.
  {
    Config c = base().ws(4).nvl(true).bytes(1024);
    c.opaque_bool = true;
    EXPECT_EQ(theLeaf(d, c).kind, m::LeafKind::Throw);
  }
  bool sawOpaque = false;
  for (const auto& o : d.opaques) sawOpaque |= o.text == "size % d != 0";
  EXPECT_TRUE(sawOpaque);
  // Every configuration lands on exactly one leaf.
  for (int ws = 1; ws <= 9; ++ws)
    for (bool nvl : {false, true})
      for (std::int64_t b : {1024, 300 * 1024, 600 * 1024}) theLeaf(d, base().ws(ws).nvl(nvl).bytes(b));
  // The missing local header was stubbed and said so.
  bool noted = false;
  for (const auto& n : d.notes)
    noted |= n.find("stubbed missing include \"utils.h\" (" + path + ":" + std::to_string(lineOf(src, "utils.h")) + ")") !=
             std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_TRUE(d.env_reads.empty());
}

TEST(CppFrontend, PlainCodeNonTemplate) {
  std::string dir = tempDir();
  std::string src = std::string(kPrologue) + kKernels + R"(
namespace vllm {
class CustomAllreduce {
 public:
  int rank_;
  int world_size_;
  bool full_nvlink_;
  RankSignals sg_;
  Signal* self_sg_;
  void allreduce(cudaStream_t stream, half* input, half* output, int size, int threads = 512, int block_limit = 36) {
    RankData* ptrs = nullptr;
    size_t nbytes = size * sizeof(half);
    int blocks = 36;
    if (world_size_ == 2) {
      cross_device_reduce_1stage<half, 2><<<blocks, threads, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
    } else if (world_size_ == 4 || world_size_ == 8) {
      if (!full_nvlink_) {
        return;
      }
      if (nbytes < 512 * 1024)
        cross_device_reduce_1stage<half, 4><<<blocks, threads, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
      else
        cross_device_reduce_2stage<half, 4><<<blocks, threads, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
    } else {
      throw std::runtime_error("unsupported world size");
    }
  }
};
}  // namespace vllm
)";
  std::string path = writeFile(dir, "plain.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  EXPECT_EQ(theLeaf(d, base().ws(2).nvl(false).bytes(1)).kernel, "cross_device_reduce_1stage");
  EXPECT_EQ(theLeaf(d, base().ws(4).nvl(true).bytes(1 << 20)).kernel, "cross_device_reduce_2stage");
  const auto& l = theLeaf(d, base().ws(8).nvl(false).bytes(1));
  EXPECT_EQ(l.kind, m::LeafKind::None);
  EXPECT_EQ(l.spelling.line, lineOf(src, "return;"));
  EXPECT_EQ(l.spelling.line, l.expansion.line);
  EXPECT_EQ(theLeaf(d, base().ws(6).nvl(true).bytes(1)).kind, m::LeafKind::Throw);
  EXPECT_EQ(theLeaf(d, base().ws(6).nvl(true).bytes(1)).text, "unsupported world size");
  for (const auto& x : d.leaves) {
    if (x.kind == m::LeafKind::Launch) {
      EXPECT_EQ(x.spelling.line, x.expansion.line);
    }
  }
}

TEST(CppFrontend, FullyConnectedSpelling) {
  std::string dir = tempDir();
  std::string src = std::string(kPrologue) + "namespace vllm {\n" + kKernels + classHead("fully_connected_") +
                    macroDispatch("fully_connected_", "") + "}\n";
  std::string path = writeFile(dir, "custom_all_reduce.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  EXPECT_EQ(theLeaf(d, base().ws(4).nvl(true).bytes(1024)).kernel, "cross_device_reduce_1stage");
  const auto& l = theLeaf(d, base().ws(6).nvl(false).bytes(1024));
  EXPECT_EQ(l.kind, m::LeafKind::None);
  EXPECT_EQ(l.spelling.line, lineOf(src, "} else if (fully_connected_)"));
  EXPECT_NE(l.text.find("fully_connected_"), std::string::npos);
}

TEST(CppFrontend, Early2024ThirdKernel) {
  std::string dir = tempDir();
  std::string src = std::string(kPrologue) + "namespace vllm {\n" + kKernels + classHead("full_nvlink_") +
                    macroDispatch("full_nvlink_", " else { KL(ngpus, cross_device_reduce_half_butterfly); }") + "}\n";
  std::string path = writeFile(dir, "custom_all_reduce.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  for (int ws : {4, 6, 8}) {
    const auto& l = theLeaf(d, base().ws(ws).nvl(false).bytes(1024));
    EXPECT_EQ(l.kind, m::LeafKind::Launch);
    EXPECT_EQ(l.kernel, "cross_device_reduce_half_butterfly");
  }
  for (const auto& l : d.leaves) EXPECT_NE(l.kind, m::LeafKind::None) << l.text;
}

TEST(CppFrontend, GetenvForcesAlgorithm) {
  std::string dir = tempDir();
  std::string src = std::string(kPrologue) + kKernels + R"(
class CustomAllreduce {
 public:
  int rank_;
  int world_size_;
  bool full_nvlink_;
  RankSignals sg_;
  Signal* self_sg_;
  template <typename T>
  void launch_one_stage(cudaStream_t stream, RankData* ptrs, T* output, int size) {
    cross_device_reduce_1stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
  }
  template <typename T>
  void allreduce(cudaStream_t stream, T* input, T* output, int size) {
    RankData* ptrs = nullptr;
    const char* algo = std::getenv("CA_ALGO");
    if (algo != nullptr) {
      if (strcmp(algo, "1stage") == 0) {
        launch_one_stage<T>(stream, ptrs, output, size);
        return;
      } else if (std::string(algo) == "2stage") {
        cross_device_reduce_2stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
        return;
      } else {
        throw std::runtime_error("bad CA_ALGO");
      }
    }
    if (getenv("CA_DISABLE")) return;
    if (world_size_ == 2 || full_nvlink_) {
      cross_device_reduce_1stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
    }
  }
};
)";
  std::string path = writeFile(dir, "algo.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  ASSERT_EQ(d.env_reads.size(), 2u);
  EXPECT_EQ(d.env_reads[0], "CA_ALGO");
  EXPECT_EQ(d.env_reads[1], "CA_DISABLE");
  Config c = base().ws(4).nvl(false).bytes(1024).env("CA_DISABLE", std::nullopt);
  {
    Config x = c;
    x.env("CA_ALGO", std::string("1stage"));
    const auto& l = theLeaf(d, x);
    EXPECT_EQ(l.kind, m::LeafKind::Launch);
    EXPECT_EQ(l.kernel, "cross_device_reduce_1stage");  // through the helper
    EXPECT_EQ(l.spelling.line, lineOf(src, "launch_one_stage<T>(stream"));
  }
  {
    Config x = c;
    x.env("CA_ALGO", std::string("2stage"));
    EXPECT_EQ(theLeaf(d, x).kernel, "cross_device_reduce_2stage");
  }
  {
    Config x = c;
    x.env("CA_ALGO", std::string("ring"));
    EXPECT_EQ(theLeaf(d, x).kind, m::LeafKind::Throw);
    EXPECT_EQ(theLeaf(d, x).text, "bad CA_ALGO");
  }
  {
    Config x = c;
    x.env("CA_ALGO", std::nullopt);
    const auto& l = theLeaf(d, x);
    EXPECT_EQ(l.kind, m::LeafKind::None);
    EXPECT_EQ(l.spelling.line, lineOf(src, "if (world_size_ == 2 || full_nvlink_)"));
    x.env("CA_DISABLE", std::string("1"));
    EXPECT_EQ(theLeaf(d, x).kind, m::LeafKind::None);
    EXPECT_EQ(theLeaf(d, x).spelling.line, lineOf(src, "return;", 3));
  }
}

TEST(CppFrontend, MissingIncludeStubbedAndClangErrorsNoted) {
  std::string dir = tempDir();
  std::string src = std::string("#include \"utils.h\"\n#include <some/vendor/header.h>\n") + kPrologue + kKernels +
                    R"(
struct CustomAllreduce {
  int world_size_;
  bool full_nvlink_;
  template <typename T> void allreduce(cudaStream_t stream, T* out) {
    CHECK_CUDA_SUCCESS(cudaGetLastError());
    if (world_size_ == 2) cross_device_reduce_1stage<T, 2><<<1, 1, 0, stream>>>(nullptr, {}, nullptr, out, 0, 0);
  }
};
)";
  std::string path = writeFile(dir, "x.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  std::string notes;
  for (const auto& n : d.notes) notes += n + "\n";
  EXPECT_NE(notes.find("stubbed missing include \"utils.h\" (" + path + ":1)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("stubbed missing include <some/vendor/header.h> (" + path + ":2)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 clang error"), std::string::npos) << notes;
  EXPECT_NE(notes.find("CHECK_CUDA_SUCCESS"), std::string::npos) << notes;
  EXPECT_EQ(theLeaf(d, base().ws(2).nvl(false).bytes(1)).kind, m::LeafKind::Launch);
  const auto& l = theLeaf(d, base().ws(4).nvl(false).bytes(1));
  EXPECT_EQ(l.kind, m::LeafKind::None);
  EXPECT_EQ(l.text, "if (world_size_ == 2) has no else");
}

// A real build's torch headers bring the standard library's vocabulary types
// with them; the torch stubs do not, so the prelude does: a dispatch header
// that uses std::optional, std::variant or std::span without including them
// parses without a clang error, as it builds.
TEST(CppFrontend, StandardVocabularyTypesNeedNoInclude) {
  std::string dir = tempDir();
  std::string src = std::string(kPrologue) + kKernels + R"(
struct CustomAllreduce {
  int world_size_;
  bool full_nvlink_;
  std::optional<int> block_limit_;
  std::variant<int, bool> mode_;
  std::string_view name_;
  template <typename T> void allreduce(cudaStream_t stream, T* out) {
    if (world_size_ == 2) cross_device_reduce_1stage<T, 2><<<1, 1, 0, stream>>>(nullptr, {}, nullptr, out, 0, 0);
  }
};
)";
  std::string path = writeFile(dir, "x.cuh", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
  SCOPED_TRACE(dump(d));
  for (const auto& n : d.notes) EXPECT_EQ(n.find("clang error"), std::string::npos) << n;
  EXPECT_EQ(theLeaf(d, base().ws(2).nvl(false).bytes(1)).kind, m::LeafKind::Launch);
}

// A .cu that includes the dispatch header, parsed for its trace facts, skips
// the header's function bodies (the header's own parse reads them): it meets
// only its own code's errors, and says so; the header's errors are said once.
TEST(CppFrontend, AnIncludingFileMeetsOnlyItsOwnErrors) {
  std::string dir = tempDir();
  std::string hdr = std::string(kPrologue) + kKernels + R"(
struct CustomAllreduce {
  int world_size_;
  bool full_nvlink_;
  int helper() { return header_only_undeclared; }
  template <typename T> void allreduce(cudaStream_t stream, T* out) {
    if (world_size_ == 2) cross_device_reduce_1stage<T, 2><<<1, 1, 0, stream>>>(nullptr, {}, nullptr, out, 0, 0);
  }
};
)";
  std::string cuh = writeFile(dir, "custom_all_reduce.cuh", hdr);
  std::string cu = writeFile(dir, "custom_all_reduce.cu",
                             "#include \"custom_all_reduce.cuh\"\n"
                             "int entry(CustomAllreduce* fa) { return fa->world_size_ + cu_only_undeclared; }\n");
  m::Dispatch d = lg::cpp::extractDispatch({cuh, cu}, spec());
  SCOPED_TRACE(dump(d));
  std::string notes;
  for (const auto& n : d.notes) notes += n + "\n";
  EXPECT_NE(notes.find("1 clang error while parsing " + cuh + " (analysis went on)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 clang error while parsing " + cu + " (trace facts went on), first: " + cu + ":2:"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("header_only_undeclared"), notes.rfind("header_only_undeclared")) << notes;
  EXPECT_EQ(theLeaf(d, base().ws(2).nvl(false).bytes(1)).kind, m::LeafKind::Launch);
}

TEST(CppFrontend, BadInputs) {
  std::string dir = tempDir();
  auto expectInputError = [](const std::vector<std::string>& files, const std::string& start,
                             const std::string& contains) {
    try {
      lg::cpp::extractDispatch(files, spec());
      ADD_FAILURE() << "no InputError for " << start;
    } catch (const lg::InputError& e) {
      std::string w = e.what();
      EXPECT_EQ(w.rfind(start, 0), 0u) << w;
      EXPECT_NE(w.find(contains), std::string::npos) << w;
      EXPECT_EQ(w.find('\n'), std::string::npos) << w;
    }
  };
  expectInputError({dir + "/nope.cuh"}, dir + "/nope.cuh", "no such file");
  std::string bin = writeFile(dir, "bin.cuh", std::string("\x7f" "ELF\0\0\x01\x02", 8));
  expectInputError({bin}, bin, "binary file, not C++/CUDA source");
  std::string py = writeFile(dir, "custom_all_reduce.py",
                             "import os\n\nclass CustomAllreduce:\n    def __init__(self, group):\n"
                             "        self.disabled = True\n");
  expectInputError({py}, py, "no dispatch CustomAllreduce");
  expectInputError({py}, py, "clang error");
  std::string other = writeFile(dir, "other.cuh", "struct Foo { template <typename T> void allreduce(T) {} };\n");
  expectInputError({other}, other, "no dispatch CustomAllreduce");
  expectInputError({}, "no C++", "given");
}

std::string deepSource(int depth, bool braces) {
  std::string body;
  for (int i = 0; i < depth; ++i) body += "if (world_size_ > " + std::to_string(i % 7) + ")" + (braces ? " {\n" : "\n");
  body += "cross_device_reduce_1stage<T, 2><<<1, 1, 0, stream>>>(nullptr, {}, nullptr, out, 0, 0);\n";
  if (braces)
    for (int i = 0; i < depth; ++i) body += "}\n";
  return std::string(kPrologue) + kKernels +
         "struct CustomAllreduce {\n  int world_size_;\n  bool full_nvlink_;\n"
         "  template <typename T> void allreduce(cudaStream_t stream, T* out) {\n" +
         body + "  }\n};\n";
}

TEST(CppFrontend, DeepNestingIsCleanError) {
  std::string dir = tempDir();
  for (bool braces : {true, false}) {
    std::string path = writeFile(dir, braces ? "deep_braces.cuh" : "deep.cuh", deepSource(5000, braces));
    try {
      m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
      EXPECT_FALSE(d.leaves.empty());
    } catch (const lg::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
    }
  }
  // Within max_depth the nesting is followed.
  std::string ok = writeFile(dir, "nested.cuh", deepSource(50, true));
  m::Dispatch d = lg::cpp::extractDispatch({ok}, spec());
  EXPECT_EQ(theLeaf(d, base().ws(7).nvl(false).bytes(1)).kind, m::LeafKind::Launch);
  EXPECT_EQ(theLeaf(d, base().ws(6).nvl(false).bytes(1)).kind, m::LeafKind::None);
}

// A dispatch written as templates (ROCm paged attention's shape): the entry
// calls a launcher specialization per head size and block size. The walk
// reads a launcher through its pattern with the template's value parameters
// bound (clang instantiates none of them), and through its instantiation
// where the pattern's reading rests on a type parameter.
const lg::target::CppDispatchSpec& pagedSpec() {
  static lg::target::Target t =
      lg::target::loadTarget(std::string(LAYERGATE_SOURCE_DIR) + "/rules/targets/rocm-paged-attention.json");
  return t.cpp;
}

TEST(CppFrontend, LauncherTemplatesAreWalkedWithTheirArgumentsBound) {
  std::string dir = tempDir();
  std::string src = R"(#include <torch/all.h>
#include <type_traits>

template <typename T, int HEAD, int GQA>
__global__ void attention_kernel(T* out, int n) {}
template <typename T, int HEAD>
__global__ void wide_kernel(T* out, int n) {}

template <typename T, int BLOCK, int HEAD>
void launch(torch::Tensor& out, torch::Tensor& query, int num_kv_heads) {
  const int ratio = query.size(1) / num_kv_heads;
  T* o = reinterpret_cast<T*>(out.data_ptr());
  dim3 grid(1), block(256);
  const int rows = (HEAD * BLOCK) / 64;
  if (rows > 256) {
    TORCH_CHECK(false, "too many rows");
  }
  switch (ratio) {
    case 1: attention_kernel<T, HEAD, 1><<<grid, block>>>(o, 0); break;
    case 2: attention_kernel<T, HEAD, 2><<<grid, block>>>(o, 0); break;
    default: TORCH_CHECK(false, "unsupported ratio");
  }
}

template <typename T, int HEAD>
void launch_typed(torch::Tensor& out) {
  T* o = reinterpret_cast<T*>(out.data_ptr());
  dim3 grid(1), block(256);
  if (std::is_same<T, float>::value) {
    TORCH_CHECK(false, "no float kernel");
  }
  wide_kernel<T, HEAD><<<grid, block>>>(o, 0);
}

template <typename T, int HEAD>
void launch_outer(torch::Tensor& out, torch::Tensor& query, int num_kv_heads) {
  launch<T, 16, HEAD>(out, query, num_kv_heads);
}

void paged_attention(torch::Tensor& out, torch::Tensor& query, int64_t num_kv_heads, int64_t block_size) {
  const int head_size = query.size(2);
  if (query.dtype() == at::ScalarType::Half) {
    switch (head_size) {
      case 128:
        if (block_size == 16) launch<at::Half, 16, 128>(out, query, num_kv_heads);
        else launch<at::Half, 256, 128>(out, query, num_kv_heads);
        break;
      case 256:
        launch_typed<at::Half, 256>(out);
        break;
      default:
        TORCH_CHECK(false, "unsupported head size");
    }
  } else if (query.dtype() == at::ScalarType::BFloat16 && head_size == 128) {
    launch_outer<at::BFloat16, 128>(out, query, num_kv_heads);
  } else if (query.dtype() == at::ScalarType::Float) {
    launch_typed<float, 256>(out);
  } else {
    TORCH_CHECK(false, "unsupported dtype");
  }
}
)";
  std::string path = writeFile(dir, "attention.cu", src);
  m::Dispatch d = lg::cpp::extractDispatch({path}, pagedSpec());
  SCOPED_TRACE(dump(d));
  auto cfg = [](const std::string& qtype, std::int64_t head, std::int64_t block, std::int64_t gqa) {
    Config c;
    c.vars["qtype"] = {m::Sort::Str, false, 0, qtype};
    c.vars["head_size"] = {m::Sort::Int, false, head, {}};
    c.vars["block_size"] = {m::Sort::Int, false, block, {}};
    c.vars["gqa_ratio"] = {m::Sort::Int, false, gqa, {}};
    c.vars["num_kv_heads"] = {m::Sort::Int, false, 2, {}};
    c.vars["gpu_arch"] = {m::Sort::Str, false, 0, "gfx9"};
    return c;
  };
  // Bound value parameters decide: HEAD * BLOCK / 64 rows is 32 at block
  // 16 and 512 at block 256.
  EXPECT_EQ(theLeaf(d, cfg("float16", 128, 16, 2)).kernel, "attention_kernel");
  EXPECT_EQ(theLeaf(d, cfg("float16", 128, 16, 3)).text, "unsupported ratio");
  EXPECT_EQ(theLeaf(d, cfg("float16", 128, 256, 1)).text, "too many rows");
  // The type parameter decides, as the instantiations read it.
  EXPECT_EQ(theLeaf(d, cfg("float16", 256, 16, 1)).kernel, "wide_kernel");
  EXPECT_EQ(theLeaf(d, cfg("float32", 256, 16, 1)).text, "no float kernel");
  // A launcher that calls another through a dependent call: read through its
  // instantiation, whose call is then followed with its arguments bound.
  EXPECT_EQ(theLeaf(d, cfg("bfloat16", 128, 64, 2)).kernel, "attention_kernel");
  EXPECT_EQ(theLeaf(d, cfg("bfloat16", 128, 64, 3)).text, "unsupported ratio");
  EXPECT_EQ(dump(d).find("is_same"), std::string::npos);
  EXPECT_EQ(dump(d).find("HEAD"), std::string::npos);
}

TEST(CppFrontend, ParseTime) {
  std::string dir = tempDir();
  std::string path = writeFile(dir, "custom_all_reduce.cuh", sglangSource());
  auto t0 = std::chrono::steady_clock::now();
  const int n = 3;
  for (int i = 0; i < n; ++i) lg::cpp::extractDispatch({path}, spec());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  std::cout << "[ time ] extractDispatch on a " << lineOf(sglangSource() + "\n<END>", "<END>")
            << "-line SGLang-shaped .cuh: " << ms << " ms per call\n";
  EXPECT_LT(ms, 10000.0);
}

// --- trace facts (issue 3) -------------------------------------------------------------

const m::OpBinding* findBinding(const m::Dispatch& d, const std::string& op, const std::string& kind) {
  for (const auto& b : d.bindings)
    if (b.op == op && b.kind == kind) return &b;
  return nullptr;
}

const m::CppEntry* findEntry(const m::Dispatch& d, const std::string& name) {
  for (const auto& e : d.entries)
    if (e.name == name) return &e;
  return nullptr;
}

const m::MemberInit* findInit(const m::CtorInfo& c, const std::string& member) {
  for (const auto& i : c.inits)
    if (i.member == member) return &i;
  return nullptr;
}

std::string dumpTrace(const m::Dispatch& d) {
  std::ostringstream o;
  for (const auto& b : d.bindings) {
    o << "binding " << b.kind << " " << b.op << " -> " << b.function << " @" << b.where.file << ":" << b.where.line
      << " (";
    for (const auto& p : b.schema_params) o << p.type << " " << p.name << (p.has_default ? "=" + p.default_text : "") << ", ";
    o << ")\n";
  }
  for (const auto& e : d.entries) {
    o << "entry " << e.name << " @" << e.where.line << " (";
    for (const auto& p : e.params) o << p.type << " | " << p.name << ", ";
    o << ")\n";
    for (const auto& c : e.constructs) {
      o << "  constructs " << c.class_name << " @" << c.where.line << ":";
      for (std::size_t i = 0; i < c.arg_texts.size(); ++i) o << " [" << c.arg_texts[i] << " -> " << c.arg_param[i] << "]";
      o << "\n";
    }
  }
  for (const auto& c : d.ctors) {
    o << "ctor " << c.class_name << " @" << c.where.line << " params " << c.params.size() << "\n";
    for (const auto& i : c.inits) o << "  init " << i.member << " <- " << i.param << " [" << i.text << "] @" << i.where.line << "\n";
  }
  for (const auto& u : d.member_uses) o << "use " << u.member << " (" << u.config << ") @" << u.where.line << ":" << u.where.col << "\n";
  for (const auto& n : d.notes) o << "note: " << n << "\n";
  return o.str();
}

const char* kSglangEntry = R"lg(// op entry points
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/all.h>

#include "custom_all_reduce.cuh"

using fptr_t = int64_t;
static_assert(sizeof(void*) == sizeof(fptr_t));

fptr_t
init_custom_ar(const std::vector<fptr_t>& fake_ipc_ptrs, torch::Tensor& rank_data, int64_t rank, bool full_nvlink) {
  int world_size = fake_ipc_ptrs.size();
  if (world_size > 8) throw std::invalid_argument("world size > 8 is not supported");
  if (rank < 0 || rank >= world_size) throw std::invalid_argument("invalid rank passed in");
  sglang::Signal* ipc_ptrs[8];
  for (int i = 0; i < world_size; i++) {
    ipc_ptrs[i] = reinterpret_cast<sglang::Signal*>(fake_ipc_ptrs[i]);
  }
  return (fptr_t) new sglang::CustomAllreduce(
      ipc_ptrs, rank_data.data_ptr(), rank_data.numel(), rank, world_size, full_nvlink);
}

void dispose(fptr_t _fa) {
  delete reinterpret_cast<sglang::CustomAllreduce*>(_fa);
}

int64_t meta_size() {
  return sizeof(sglang::Signal);
}
)lg";

const char* kSglangBindings = R"lg(// op registrations
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/all.h>
#include <torch/library.h>

#include "sgl_kernel_ops.h"

TORCH_LIBRARY_FRAGMENT(sgl_kernel, m) {
  m.def("dispose", &dispose);
  m.def("meta_size", &meta_size);

  m.def(
      "init_custom_ar(int[] ipc_tensors, Tensor rank_data, "
      "int rank, bool full_nvlink) -> int");
  m.impl("init_custom_ar", torch::kCUDA, &init_custom_ar);

  m.def(
      "all_reduce(int fa, Tensor inp, Tensor! out, int reg_buffer, "
      "int reg_buffer_sz_bytes=0) -> ()");
  m.impl("all_reduce", torch::kCUDA, &all_reduce);
}
)lg";

TEST(CppFrontendTrace, SglangThreeFiles) {
  std::string dir = tempDir();
  std::string cuhSrc = sglangSource();
  std::string cuh = writeFile(dir, "custom_all_reduce.cuh", cuhSrc);
  std::string cu = writeFile(dir, "custom_all_reduce.cu", kSglangEntry);
  std::string cc = writeFile(dir, "common_extension.cc", kSglangBindings);
  // Given in an order that puts the bindings first: the dispatch is still found once.
  m::Dispatch d = lg::cpp::extractDispatch({cc, cu, cuh}, spec());
  SCOPED_TRACE(dumpTrace(d) + dump(d));
  EXPECT_EQ(d.class_name, "CustomAllreduce");
  EXPECT_EQ(d.where.file, cuh);
  EXPECT_EQ(theLeaf(d, base().ws(4).nvl(false).bytes(1024)).kind, m::LeafKind::None);
  EXPECT_EQ(theLeaf(d, base().ws(4).nvl(true).bytes(1024)).kernel, "cross_device_reduce_1stage");

  // Bindings.
  const std::string bsrc = kSglangBindings;
  const m::OpBinding* schema = findBinding(d, "init_custom_ar", "torch-schema");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->where.file, cc);
  EXPECT_EQ(schema->where.line, lineOf(bsrc, "\"init_custom_ar(int[]") - 1);
  EXPECT_TRUE(schema->function.empty());
  ASSERT_EQ(schema->schema_params.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"int[]", "ipc_tensors"}, {"Tensor", "rank_data"}, {"int", "rank"}, {"bool", "full_nvlink"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(schema->schema_params[i].type, want[i].first);
    EXPECT_EQ(schema->schema_params[i].name, want[i].second);
    EXPECT_FALSE(schema->schema_params[i].has_default);
  }
  const m::OpBinding* impl = findBinding(d, "init_custom_ar", "torch-impl");
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->function, "init_custom_ar");
  EXPECT_EQ(impl->where.line, lineOf(bsrc, "m.impl(\"init_custom_ar\""));
  const m::OpBinding* ar = findBinding(d, "all_reduce", "torch-schema");
  ASSERT_NE(ar, nullptr);
  ASSERT_EQ(ar->schema_params.size(), 5u);
  EXPECT_EQ(ar->schema_params[2].type, "Tensor!");
  EXPECT_EQ(ar->schema_params[2].name, "out");
  EXPECT_TRUE(ar->schema_params[4].has_default);
  EXPECT_EQ(ar->schema_params[4].default_text, "0");
  EXPECT_EQ(ar->schema_params[4].name, "reg_buffer_sz_bytes");
  const m::OpBinding* disp = findBinding(d, "dispose", "pybind11");  // def with a function reference
  ASSERT_NE(disp, nullptr);
  EXPECT_EQ(disp->function, "dispose");
  EXPECT_EQ(d.bindings.size(), 6u);

  // Entries: the .cu's free functions, each once; no kernels, no registration blocks.
  const std::string esrc = kSglangEntry;
  const m::CppEntry* e = findEntry(d, "init_custom_ar");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->where.file, cu);
  EXPECT_EQ(e->where.line, lineOf(esrc, "init_custom_ar(const"));
  ASSERT_EQ(e->params.size(), 4u);
  EXPECT_EQ(e->params[0].type, "const std::vector<fptr_t>&");
  EXPECT_EQ(e->params[0].name, "fake_ipc_ptrs");
  EXPECT_EQ(e->params[1].type, "torch::Tensor&");
  EXPECT_EQ(e->params[2].type, "int64_t");
  EXPECT_EQ(e->params[2].name, "rank");
  EXPECT_EQ(e->params[3].type, "bool");
  EXPECT_EQ(e->params[3].name, "full_nvlink");
  ASSERT_EQ(e->constructs.size(), 1u);
  const m::Construction& c = e->constructs[0];
  EXPECT_EQ(c.class_name, "CustomAllreduce");
  EXPECT_EQ(c.where.file, cu);
  EXPECT_EQ(c.where.line, lineOf(esrc, "new sglang::CustomAllreduce("));
  EXPECT_EQ(c.arg_texts, (std::vector<std::string>{"ipc_ptrs", "rank_data.data_ptr()", "rank_data.numel()", "rank",
                                                    "world_size", "full_nvlink"}));
  EXPECT_EQ(c.arg_param, (std::vector<int>{-1, -1, -1, 2, -1, 3}));
  EXPECT_NE(findEntry(d, "dispose"), nullptr);
  EXPECT_NE(findEntry(d, "meta_size"), nullptr);
  EXPECT_EQ(d.entries.size(), 3u);

  // The constructor: member <- parameter index.
  ASSERT_EQ(d.ctors.size(), 1u);
  const m::CtorInfo& ctor = d.ctors[0];
  EXPECT_EQ(ctor.class_name, "CustomAllreduce");
  EXPECT_EQ(ctor.where.file, cuh);
  ASSERT_EQ(ctor.params.size(), 6u);
  EXPECT_EQ(ctor.params[5].name, "full_nvlink");
  EXPECT_TRUE(ctor.params[5].has_default);
  EXPECT_EQ(ctor.params[5].default_text, "true");
  ASSERT_NE(findInit(ctor, "full_nvlink_"), nullptr);
  EXPECT_EQ(findInit(ctor, "full_nvlink_")->param, 5);
  EXPECT_EQ(findInit(ctor, "full_nvlink_")->text, "full_nvlink");
  EXPECT_EQ(findInit(ctor, "full_nvlink_")->where.line, lineOf(cuhSrc, ": rank_(rank), world_size_(world_size)"));
  EXPECT_EQ(findInit(ctor, "world_size_")->param, 4);
  EXPECT_EQ(findInit(ctor, "rank_")->param, 3);
  EXPECT_EQ(findInit(ctor, "self_sg_")->param, -1);
  EXPECT_EQ(findInit(ctor, "self_sg_")->text, "signals[rank]");

  // Member uses: spelling lines of the conditions (inside the macro definition).
  std::set<std::pair<std::string, int>> uses;
  for (const auto& u : d.member_uses) {
    EXPECT_EQ(u.where.file, cuh);
    EXPECT_EQ(u.config, u.member == "full_nvlink_" ? "full_nvlink" : "world_size");
    uses.insert({u.member, u.where.line});
  }
  EXPECT_TRUE(uses.count({"full_nvlink_", lineOf(cuhSrc, "} else if (full_nvlink_)")}));
  EXPECT_TRUE(uses.count({"world_size_", lineOf(cuhSrc, "switch (world_size_)")}));
  EXPECT_TRUE(uses.count({"world_size_", lineOf(cuhSrc, "if (world_size_ == 2)")}));
  EXPECT_TRUE(uses.count({"world_size_", lineOf(cuhSrc, "if ((world_size_ <= 4 && bytes")}));
  EXPECT_EQ(uses.size(), 4u);

  std::string notes;
  for (const auto& n : d.notes) notes += n + "\n";
  EXPECT_NE(notes.find("sgl_kernel_ops.h"), std::string::npos) << notes;
  EXPECT_NE(notes.find("declared in no given file"), std::string::npos) << notes;
  // The .cu parse repeats neither the .cuh's stubbed include nor its clang errors.
  EXPECT_EQ(notes.find("utils.h"), notes.rfind("utils.h")) << notes;
  EXPECT_EQ(notes.find("while parsing " + cu + " "), std::string::npos) << notes;

  // The same facts whatever the order of the files.
  m::Dispatch d2 = lg::cpp::extractDispatch({cuh, cu, cc}, spec());
  EXPECT_EQ(dumpTrace(d2), dumpTrace(d));
}

std::string vllmHeader() {
  std::string head = classHead("fully_connected_");
  const std::string ctor =
      "CustomAllreduce(Signal** signals, void* rank_data, size_t rank_data_sz, int rank, int world_size, bool "
      "full_nvlink = true)\n      : rank_(rank), world_size_(world_size), fully_connected_(full_nvlink), "
      "self_sg_(signals[rank]) {\n";
  const std::string vctor =
      "CustomAllreduce(Signal** signals, void* rank_data, size_t rank_data_sz, int rank, int world_size, bool "
      "fully_connected = true)\n      : rank_(rank), world_size_(world_size), self_sg_(signals[rank]) {\n"
      "    bool fc = fully_connected;\n    this->fully_connected_ = fc;\n";
  auto at = head.find(ctor);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) head.replace(at, ctor.size(), vctor);
  return std::string(kPrologue) + "#include \"cuda_utils.h\"\nnamespace vllm {\n" + kKernels + head +
         macroDispatch("fully_connected_", "") + "}  // namespace vllm\n";
}

const char* kVllmEntry = R"lg(#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/all.h>

#include "custom_all_reduce.cuh"

// Fake pointer type, must match fptr_t type in ops.h.
using fptr_t = int64_t;
static_assert(sizeof(void*) == sizeof(fptr_t));

fptr_t init_custom_ar(const std::vector<fptr_t>& fake_ipc_ptrs,
                      torch::Tensor& rank_data, int64_t rank,
                      bool fully_connected) {
  int world_size = fake_ipc_ptrs.size();
  if (world_size > 8)
    throw std::invalid_argument("world size > 8 is not supported");
  vllm::Signal* ipc_ptrs[8];
  for (int i = 0; i < world_size; i++) {
    ipc_ptrs[i] = reinterpret_cast<vllm::Signal*>(fake_ipc_ptrs[i]);
  }
  return (fptr_t) new vllm::CustomAllreduce(ipc_ptrs, rank_data.data_ptr(),
                                            rank_data.numel(), rank, world_size,
                                            fully_connected);
}
)lg";

const char* kVllmBindings = R"lg(#include "cache.h"
#include "cuda_utils.h"
#include "ops.h"
#include "core/registration.h"
#include <torch/library.h>
#include <torch/version.h>

TORCH_LIBRARY_EXPAND(CONCAT(TORCH_EXTENSION_NAME, _custom_ar), custom_ar) {
  // Custom all-reduce kernels
  custom_ar.def(
      "init_custom_ar(int[] ipc_tensors, Tensor rank_data, "
      "int rank, bool fully_connected) -> int");
  custom_ar.impl("init_custom_ar", torch::kCUDA, &init_custom_ar);
  custom_ar.def("dispose", &dispose);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
)lg";

TEST(CppFrontendTrace, VllmFullyConnected) {
  std::string dir = tempDir();
  std::string hsrc = vllmHeader();
  std::string cuh = writeFile(dir, "custom_all_reduce.cuh", hsrc);
  std::string cu = writeFile(dir, "custom_all_reduce.cu", kVllmEntry);
  std::string cpp = writeFile(dir, "torch_bindings.cpp", kVllmBindings);
  m::Dispatch d = lg::cpp::extractDispatch({cuh, cu, cpp}, spec());
  SCOPED_TRACE(dumpTrace(d) + dump(d));
  EXPECT_EQ(theLeaf(d, base().ws(6).nvl(false).bytes(1024)).kind, m::LeafKind::None);

  const m::OpBinding* schema = findBinding(d, "init_custom_ar", "torch-schema");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->where.file, cpp);
  EXPECT_EQ(schema->where.line, lineOf(kVllmBindings, "\"init_custom_ar(int[]") - 1);
  ASSERT_EQ(schema->schema_params.size(), 4u);
  EXPECT_EQ(schema->schema_params[3].name, "fully_connected");
  EXPECT_EQ(schema->schema_params[3].type, "bool");
  const m::OpBinding* impl = findBinding(d, "init_custom_ar", "torch-impl");
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->function, "init_custom_ar");
  EXPECT_EQ(impl->where.line, lineOf(kVllmBindings, "custom_ar.impl(\"init_custom_ar\""));

  const m::CppEntry* e = findEntry(d, "init_custom_ar");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->params.size(), 4u);
  EXPECT_EQ(e->params[3].name, "fully_connected");
  ASSERT_EQ(e->constructs.size(), 1u);
  EXPECT_EQ(e->constructs[0].arg_texts.size(), 6u);
  EXPECT_EQ(e->constructs[0].arg_param, (std::vector<int>{-1, -1, -1, 2, -1, 3}));
  EXPECT_EQ(e->constructs[0].arg_texts[5], "fully_connected");
  EXPECT_EQ(e->constructs[0].where.line, lineOf(kVllmEntry, "new vllm::CustomAllreduce("));

  // Stored in the body through a local: fully_connected_ <- parameter 5.
  ASSERT_EQ(d.ctors.size(), 1u);
  EXPECT_EQ(d.ctors[0].params[5].name, "fully_connected");
  const m::MemberInit* fc = findInit(d.ctors[0], "fully_connected_");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->param, 5);
  EXPECT_EQ(fc->text, "fc");
  EXPECT_EQ(fc->where.line, lineOf(hsrc, "this->fully_connected_ = fc;"));
  bool sawUse = false;
  for (const auto& u : d.member_uses)
    if (u.member == "fully_connected_") {
      sawUse = true;
      EXPECT_EQ(u.config, "full_nvlink");
      EXPECT_EQ(u.where.line, lineOf(hsrc, "} else if (fully_connected_)"));
    }
  EXPECT_TRUE(sawUse);
}

const char* kPybindEntry = R"lg(#include <torch/extension.h>
#include "custom_all_reduce.cuh"

fptr_t init_custom_ar(const std::vector<fptr_t>& fake_ipc_ptrs, torch::Tensor& rank_data, int64_t rank, bool full_nvlink) {
  int world_size = fake_ipc_ptrs.size();
  sglang::Signal* ipc_ptrs[8];
  auto p = std::make_unique<sglang::CustomAllreduce>(ipc_ptrs, rank_data.data_ptr(), rank_data.numel(), rank, world_size, true);
  return (fptr_t) p.release();
}

fptr_t init_swapped(const std::vector<fptr_t>& fake_ipc_ptrs, torch::Tensor& rank_data, int64_t rank, bool full_nvlink) {
  int world_size = fake_ipc_ptrs.size();
  sglang::Signal* ipc_ptrs[8];
  bool nvl = full_nvlink;
  sglang::CustomAllreduce ar(ipc_ptrs, rank_data.data_ptr(), rank_data.numel(), nvl, world_size, rank);
  auto shared = std::make_shared<sglang::CustomAllreduce>(ipc_ptrs, nullptr, 0, static_cast<int>(rank), world_size);
  return 0;
}

namespace py = pybind11;
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("init_custom_ar", &init_custom_ar, "create the all-reduce", py::arg("ipc"), py::arg("rank_data"),
        py::arg("rank"), py::arg("full_nvlink") = true);
  m.def("init_swapped", &init_swapped);
}
)lg";

TEST(CppFrontendTrace, PybindLiteralAndSwapped) {
  std::string dir = tempDir();
  std::string cuh = writeFile(dir, "custom_all_reduce.cuh", sglangSource());
  std::string cu = writeFile(dir, "ops.cu", kPybindEntry);
  m::Dispatch d = lg::cpp::extractDispatch({cuh, cu}, spec());
  SCOPED_TRACE(dumpTrace(d) + dump(d));
  const m::OpBinding* b = findBinding(d, "init_custom_ar", "pybind11");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->function, "init_custom_ar");
  EXPECT_EQ(b->where.file, cu);
  EXPECT_EQ(b->where.line, lineOf(kPybindEntry, "m.def(\"init_custom_ar\""));
  EXPECT_TRUE(b->schema_params.empty());
  ASSERT_NE(findBinding(d, "init_swapped", "pybind11"), nullptr);
  EXPECT_EQ(d.bindings.size(), 2u);

  // A literal true where the flag should go: arg_param -1, text "true".
  const m::CppEntry* e = findEntry(d, "init_custom_ar");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->constructs.size(), 1u);
  EXPECT_EQ(e->constructs[0].where.line, lineOf(kPybindEntry, "std::make_unique<sglang::CustomAllreduce>"));
  ASSERT_EQ(e->constructs[0].arg_texts.size(), 6u);
  EXPECT_EQ(e->constructs[0].arg_texts[5], "true");
  EXPECT_EQ(e->constructs[0].arg_param, (std::vector<int>{-1, -1, -1, 2, -1, -1}));

  // Swapped: the flag (through a local) goes into the rank, the rank into the flag.
  const m::CppEntry* s = findEntry(d, "init_swapped");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->constructs.size(), 2u);
  EXPECT_EQ(s->constructs[0].where.line, lineOf(kPybindEntry, "sglang::CustomAllreduce ar("));
  EXPECT_EQ(s->constructs[0].arg_param, (std::vector<int>{-1, -1, -1, 3, -1, 2}));
  EXPECT_EQ(s->constructs[0].arg_texts[3], "nvl");
  // make_shared with five arguments: the flag is not passed (its default applies).
  EXPECT_EQ(s->constructs[1].arg_texts.size(), 5u);
  EXPECT_EQ(s->constructs[1].arg_param, (std::vector<int>{-1, -1, -1, 2, -1}));
  EXPECT_EQ(s->constructs[1].arg_texts[3], "static_cast<int>(rank)");
}

// Item 6: an env var read before the topology branches that forces the
// algorithm (throw on bad values), in the static and std::string forms.
std::string algoDispatch(const std::string& read) {
  return std::string(kPrologue) + kKernels + R"lg(
static const char* kForce = std::getenv("CA_FORCE_1STAGE");
class CustomAllreduce {
 public:
  int rank_;
  int world_size_;
  bool fully_connected_;
  RankSignals sg_;
  Signal* self_sg_;
  template <typename T>
  void allreduce(cudaStream_t stream, T* input, T* output, int size) {
    RankData* ptrs = nullptr;
    auto bytes = size * sizeof(T);
)lg" + read + R"lg(
    if (kForce != nullptr && strcmp(kForce, "1") == 0) {
      cross_device_reduce_1stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
      return;
    }
    if (force_1stage) {
      cross_device_reduce_1stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
      return;
    }
    if (force_2stage) {
      cross_device_reduce_2stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
      return;
    }
    if (world_size_ == 2) {
      cross_device_reduce_1stage<T, 2><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
    } else if (fully_connected_) {
      if (bytes < 256 * 1024)
        cross_device_reduce_1stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
      else
        cross_device_reduce_2stage<T, 8><<<36, 512, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size);
    }
  }
};
)lg";
}

TEST(CppFrontend, EnvForcedAlgorithmForms) {
  const std::vector<std::pair<std::string, std::string>> forms = {
      {"static char*", R"lg(
    static const char* algo = std::getenv("VLLM_CUSTOM_ALLREDUCE_ALGO");
    bool force_1stage = false, force_2stage = false;
    if (algo) {
      if (strcmp(algo, "1stage") == 0) force_1stage = true;
      else if (strcmp(algo, "2stage") == 0) force_2stage = true;
      else throw std::runtime_error("bad VLLM_CUSTOM_ALLREDUCE_ALGO");
    })lg"},
      {"local std::string", R"lg(
    const char* env = std::getenv("VLLM_CUSTOM_ALLREDUCE_ALGO");
    std::string algo = env ? env : "";
    bool force_1stage = false, force_2stage = false;
    if (!algo.empty()) {
      if (algo == "1stage") force_1stage = true;
      else if (algo == "2stage") force_2stage = true;
      else throw std::runtime_error("bad VLLM_CUSTOM_ALLREDUCE_ALGO");
    })lg"},
      {"static std::string", R"lg(
    static const std::string algo = std::getenv("VLLM_CUSTOM_ALLREDUCE_ALGO") ? std::getenv("VLLM_CUSTOM_ALLREDUCE_ALGO") : "";
    const bool force_1stage = algo == "1stage";
    const bool force_2stage = algo == "2stage";
    if (!algo.empty() && !force_1stage && !force_2stage) throw std::runtime_error("bad VLLM_CUSTOM_ALLREDUCE_ALGO");)lg"},
      {"assigned std::string", R"lg(
    std::string algo;
    if (const char* e = std::getenv("VLLM_CUSTOM_ALLREDUCE_ALGO")) algo = e;
    bool force_1stage = false, force_2stage = false;
    if (algo == "1stage") force_1stage = true;
    else if (algo == "2stage") force_2stage = true;
    else if (!algo.empty()) throw std::runtime_error("bad VLLM_CUSTOM_ALLREDUCE_ALGO");)lg"},
  };
  for (const auto& [name, read] : forms) {
    SCOPED_TRACE(name);
    std::string dir = tempDir();
    std::string src = algoDispatch(read);
    std::string path = writeFile(dir, "custom_all_reduce.cuh", src);
    m::Dispatch d = lg::cpp::extractDispatch({path}, spec());
    SCOPED_TRACE(dump(d));
    ASSERT_EQ(d.env_reads.size(), 2u);
    EXPECT_EQ(d.env_reads[0], "VLLM_CUSTOM_ALLREDUCE_ALGO");
    EXPECT_EQ(d.env_reads[1], "CA_FORCE_1STAGE");
    for (const auto& o : d.opaques) {
      EXPECT_EQ(o.text.find("algo"), std::string::npos) << o.text;
      EXPECT_EQ(o.text.find("kForce"), std::string::npos) << o.text;
      EXPECT_EQ(o.text.find("force_"), std::string::npos) << o.text;
    }
    Config c = base().ws(4).nvl(false).bytes(1024).env("CA_FORCE_1STAGE", std::nullopt);
    {
      Config x = c;
      x.env("VLLM_CUSTOM_ALLREDUCE_ALGO", std::nullopt);
      EXPECT_EQ(theLeaf(d, x).kind, m::LeafKind::None);  // the PCIe gap
      x.env("CA_FORCE_1STAGE", std::string("1"));
      EXPECT_EQ(theLeaf(d, x).kernel, "cross_device_reduce_1stage");  // a global static read
    }
    {
      Config x = c;
      x.env("VLLM_CUSTOM_ALLREDUCE_ALGO", std::string("1stage"));
      EXPECT_EQ(theLeaf(d, x).kernel, "cross_device_reduce_1stage");
      x.env("VLLM_CUSTOM_ALLREDUCE_ALGO", std::string("2stage"));
      EXPECT_EQ(theLeaf(d, x).kernel, "cross_device_reduce_2stage");
      x.env("VLLM_CUSTOM_ALLREDUCE_ALGO", std::string("ring"));
      EXPECT_EQ(theLeaf(d, x).kind, m::LeafKind::Throw);
      // Set but empty: a char* test (if (algo)) takes it as a bad value, an
      // empty() test as unset.
      x.env("VLLM_CUSTOM_ALLREDUCE_ALGO", std::string(""));
      EXPECT_EQ(theLeaf(d, x).kind, name == "static char*" ? m::LeafKind::Throw : m::LeafKind::None);
    }
  }
}

}  // namespace

// --- a JIT all-reduce (issue 13): a class template's static run over a
// communicator object, checks by a precondition class template, a launcher
// functor, a string algorithm and workspace sizes. Our own miniature: the
// library headers sit in the checkout's include/ (cpp.include_dirs), the
// tvm-ffi and DLPack headers are the bundled stubs.

namespace {

const char* kJitLib = R"(#pragma once
#include <dlpack/dlpack.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/object.h>
#include <cuda_runtime.h>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
namespace mylib {
struct Failure : std::runtime_error { using std::runtime_error::runtime_error; };
template <typename... Args>
struct Check {
  template <typename Cond>
  explicit Check(Cond&& ok, Args&&...) { if (!ok) throw Failure("check failed"); }
};
template <typename Cond, typename... Args>
explicit Check(Cond&&, Args&&...) -> Check<Args...>;
inline void require(bool ok, const char* what) { if (!ok) throw Failure(what); }
#define CHECK_ARG(c) ::mylib::require((c), #c)
template <std::integral T> constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }
struct Launch {
  Launch(dim3 grid, dim3 block, cudaStream_t s) {
    cfg_.gridDim = grid; cfg_.blockDim = block; cfg_.stream = s; cfg_.numAttrs = 0; cfg_.attrs = nullptr;
  }
  Launch& pdl(bool on) { (void)on; return *this; }
  template <typename K, typename... A>
  void operator()(K&& kernel, A&&... args) const { cudaLaunchKernelEx(&cfg_, kernel, static_cast<A&&>(args)...); }
  cudaLaunchConfig_t cfg_;
};
struct CommObj : public tvm::ffi::Object {
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("test.Comm", CommObj, tvm::ffi::Object);
  uint32_t ranks;
  int64_t push_cap;
  int64_t pull_cap;
  uint32_t blocks;
  void* scratch;
};
struct CommRef : public tvm::ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(CommRef, tvm::ffi::ObjectRef, CommObj);
};
}  // namespace mylib
)";

const char* kJitDispatch = R"(#include <mylib/host.h>
#include <tvm/ffi/extra/stl.h>
#include <string>
template <typename T, int kRanks> __global__ void push_kernel(const T* in, T* out, int n) {}
template <typename T, int kRanks, int kShot> __global__ void pull_kernel(const T* in, T* out, int n) {}
__global__ void copy_kernel(void* dst, const void* src) {}
namespace {
template <typename T, uint32_t kRanks, bool kPdl>
struct ArKernel {
  template <int kShot>
  static constexpr auto pull = pull_kernel<T, kRanks, kShot>;
  static tvm::ffi::Tensor run(mylib::CommRef ref, tvm::ffi::Tensor x, std::string mode, bool graph) {
    const auto& c = *ref.get();
    mylib::Check(mode == "push" || mode == "pull1" || mode == "pull2", "bad mode: ", mode);  // MODE
    mylib::Check(c.ranks == kRanks, "rank count mismatch");  // RANKS
    CHECK_ARG(x.IsContiguous());  // CONTIG
    const int64_t nbytes = x.numel() * sizeof(T);
    mylib::require(nbytes % 16 == 0, "not a multiple of 16");  // ALIGN
    for (uint32_t i = 0; i < kRanks; ++i) (void)i;
    const auto stream = static_cast<cudaStream_t>(::TVMFFIEnvGetStream(x.device().device_type, 0));
    const auto copy = [&](void* dst, const void* src) { mylib::Launch(1, 128, stream)(copy_kernel, dst, src); };
    if (mode == "push") {
      mylib::Check(nbytes <= c.push_cap, "input of ", nbytes, " bytes over the push workspace");  // PUSHCAP
      mylib::Launch(c.blocks, 256, stream).pdl(kPdl)(push_kernel<T, kRanks>, (const T*)x.data_ptr(), (T*)x.data_ptr(), 0);  // PUSHLAUNCH
      return x;
    }
    mylib::Check(nbytes <= c.pull_cap, "over the pull workspace");  // PULLCAP
    if (!graph) copy(c.scratch, x.data_ptr());
    if (mode == "pull1") {
      mylib::Launch(c.blocks, 256, stream).pdl(kPdl)(pull<1>, (const T*)x.data_ptr(), (T*)x.data_ptr(), 0);  // PULL1
    } else {
      const auto k = graph ? pull<2> : pull<2>;
      mylib::Launch(mylib::ceil_div(c.blocks, 2u), 512, stream).pdl(kPdl)(k, (const T*)x.data_ptr(), (T*)x.data_ptr(), 0);  // PULL2
      if (!graph) copy(x.data_ptr(), c.scratch);
    }
    return x;
  }
};
}  // namespace
)";

lg::target::CppDispatchSpec jitSpec() {
  lg::target::Target t = lg::target::parseTarget(R"({
    "name": "jit-ar", "python": {"classes": ["X"]},
    "variables": [{"name": "world_size", "type": "int", "min": 1, "max": 64, "role": "ranks"},
                  {"name": "full_nvlink", "type": "bool", "role": "link"},
                  {"name": "nbytes", "type": "int", "min": 1, "max": 4096, "role": "bytes"}],
    "cpp": {"classes": ["ArKernel"], "dispatch_functions": ["run"],
            "members": {"kRanks": "world_size", "push_cap": "push_bytes", "pull_cap": "pull_bytes", "mode": "algo"},
            "include_dirs": ["include", "not/there"], "defines": ["MYLIB_ARCH=900"], "std": "c++20",
            "preconditions": ["Check", "CHECK_ARG", "require"]}})",
                                                 "jit.json");
  return t.cpp;
}

Config jitBase() {
  Config c;
  c.ws(4).bytes(4096);
  c.vars["algo"] = {m::Sort::Str, false, 0, "push"};
  c.vars["push_bytes"] = {m::Sort::Int, false, 1 << 20, {}};
  c.vars["pull_bytes"] = {m::Sort::Int, false, 1 << 22, {}};
  c.vars["c.ranks"] = {m::Sort::Int, false, 4, {}};
  c.vars["x.IsContiguous()"] = {m::Sort::Bool, true, 0, {}};
  c.vars["graph"] = {m::Sort::Bool, false, 0, {}};
  return c;
}

Config& algo(Config& c, const std::string& a) {
  c.vars["algo"] = {m::Sort::Str, false, 0, a};
  return c;
}

}  // namespace

TEST(CppFrontendJit, TargetFieldsParsed) {
  auto s = jitSpec();
  EXPECT_EQ(s.include_dirs, (std::vector<std::string>{"include", "not/there"}));
  EXPECT_EQ(s.defines, (std::vector<std::string>{"MYLIB_ARCH=900"}));
  EXPECT_EQ(s.std, "c++20");
  EXPECT_EQ(s.preconditions.size(), 3u);
  EXPECT_THROW(lg::target::parseTarget(R"({"name": "t", "python": {"classes": ["X"]},
      "cpp": {"dispatch_functions": ["f"], "std": "c++99"}})", "x.json"), lg::InputError);
  EXPECT_THROW(lg::target::parseTarget(R"({"name": "t", "python": {"classes": ["X"]},
      "cpp": {"dispatch_functions": ["f"], "include_dirs": ["/abs"]}})", "x.json"), lg::InputError);
}

TEST(CppFrontendJit, PreconditionsStringAlgoAndTemplateWorldSize) {
  std::string root = tempDir();
  std::system(("mkdir -p '" + root + "/include/mylib' '" + root + "/csrc/dist'").c_str());
  writeFile(root + "/include/mylib", "host.h", kJitLib);
  std::string file = writeFile(root + "/csrc/dist", "ar.cuh", kJitDispatch);
  m::Dispatch d = lg::cpp::extractDispatch({file}, jitSpec());
  SCOPED_TRACE(dump(d));
  // The library headers were found through include_dirs and the tvm-ffi stubs
  // parse: no clang errors, no stubbed includes.
  for (const auto& n : d.notes) {
    EXPECT_EQ(n.find("clang error"), std::string::npos) << n;
    EXPECT_EQ(n.find("stubbed missing include"), std::string::npos) << n;
  }
  auto line = [&](const char* tag) { return lineOf(kJitDispatch, tag); };
  auto throwsAt = [&](Config c, const char* tag, const std::string& text) {
    const auto& l = theLeaf(d, c);
    EXPECT_EQ(l.kind, m::LeafKind::Throw) << tag;
    EXPECT_EQ(l.expansion.line, line(tag)) << tag;  // CHECK_ARG: spelled in the library's macro
    if (!text.empty()) EXPECT_EQ(l.text, text) << tag;
  };
  auto launches = [&](Config c, const char* tag, const std::string& kernel) {
    const auto& l = theLeaf(d, c);
    EXPECT_EQ(l.kind, m::LeafKind::Launch) << tag;
    EXPECT_EQ(l.kernel, kernel) << tag;
    EXPECT_EQ(l.spelling.line, line(tag)) << tag;
  };
  Config c = jitBase();
  launches(c, "PUSHLAUNCH", "push_kernel");
  { Config x = jitBase(); throwsAt(algo(x, "3shot"), "MODE", "bad mode: {mode}"); }
  { Config x = jitBase(); x.vars["c.ranks"].i = 8; throwsAt(x, "RANKS", "rank count mismatch"); }
  { Config x = jitBase(); x.ws(8); x.vars["c.ranks"].i = 8; launches(x, "PUSHLAUNCH", "push_kernel"); }
  { Config x = jitBase(); x.vars["x.IsContiguous()"].b = false; throwsAt(x, "CONTIG", "x.IsContiguous()"); }
  { Config x = jitBase(); x.bytes(4100); throwsAt(x, "ALIGN", "not a multiple of 16"); }
  { Config x = jitBase(); x.bytes(2 << 20); throwsAt(x, "PUSHCAP", "input of {nbytes} bytes over the push workspace"); }
  { Config x = jitBase(); x.bytes(2 << 20); algo(x, "pull1"); launches(x, "PULL1", "pull"); }
  { Config x = jitBase(); x.bytes(8 << 20); algo(x, "pull1"); throwsAt(x, "PULLCAP", "over the pull workspace"); }
  { Config x = jitBase(); x.bytes(8 << 20); algo(x, "pull2"); throwsAt(x, "PULLCAP", ""); }
  // The copies the lambda launches come first on the pull paths; the leaf is
  // the all-reduce launch, named where the dispatch passes it (without its
  // template arguments, as kernels are named elsewhere: the line tells
  // pull<1> from pull<2>).
  { Config x = jitBase(); algo(x, "pull2"); launches(x, "PULL2", "pull"); }
  { Config x = jitBase(); algo(x, "pull2"); x.vars["graph"].b = true; launches(x, "PULL2", "pull"); }
  // Every leaf is over the config variables, never an opaque algo or world size.
  bool sawAlgo = false, sawWs = false;
  for (const auto& l : d.leaves)
    for (const auto& v : m::varsOf(l.condition)) {
      sawAlgo |= v.name == "algo" && v.kind == m::VarKind::Config;
      sawWs |= v.name == "world_size" && v.kind == m::VarKind::Config;
      EXPECT_NE(v.name, "mode");
      EXPECT_NE(v.name, "kRanks");
    }
  EXPECT_TRUE(sawAlgo);
  EXPECT_TRUE(sawWs);
  // Without the include directory the library is missing: no dispatch leaves
  // of the launcher, and the missing header is said.
  auto bare = jitSpec();
  bare.include_dirs.clear();
  m::Dispatch b = lg::cpp::extractDispatch({file}, bare);
  bool stubbed = false;
  for (const auto& n : b.notes) stubbed |= n.find("mylib/host.h") != std::string::npos;
  EXPECT_TRUE(stubbed) << dump(b);
}

// A fuzzer's input (fuzz/regressions/cpp/): mutated identifiers that clang's
// typo correction chased for 35 s and, under ASan, past the parse thread's
// stack. Without spell checking it is an ordinary "no dispatch" input error.
TEST(CppFrontend, MisspelledNamesEndQuickly) {
  const std::string p = std::string(LAYERGATE_SOURCE_DIR) + "/fuzz/regressions/cpp/typo-correction-blowup.cuh";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    lg::cpp::extractDispatch({p}, spec());
    ADD_FAILURE() << "a dispatch was found";
  } catch (const lg::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no dispatch CustomAllreduce::allreduce"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
}

// The element type is the target's element-role variable: a launch under
// `if constexpr (std::is_same_v<T, half>)` serves float16 tensors only, and
// `std::is_same<T, X>::value` reads the same; a type the target does not
// list (double) is none of the element types.
TEST(CppFrontend, ElementTypeTestsAreTestsOfTheElementVariable) {
  std::ifstream in(std::string(LAYERGATE_FIXTURES) + "/seed-force-pcie/custom_all_reduce.cuh", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string at = "#define KL(ngpus, name)";
  std::size_t pos = text.find(at);
  ASSERT_NE(pos, std::string::npos);
  text.insert(pos,
              "    if constexpr (std::is_same_v<T, half>) {\n"
              "      if (!full_nvlink_) { cross_device_reduce_1stage<T, 4><<<1, 1, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size); return; }  // HALF\n"
              "    }\n"
              "    if constexpr (std::is_same<T, nv_bfloat16>::value) {\n"
              "      if (!full_nvlink_) { cross_device_reduce_2stage<T, 4><<<1, 1, 0, stream>>>(ptrs, sg_, self_sg_, output, rank_, size); return; }  // BF16\n"
              "    }\n"
              "    if constexpr (std::is_same_v<double, T>) { throw std::runtime_error(\"no doubles\"); }  // DOUBLE\n");
  text.insert(text.find("#include <string>"), "#include <type_traits>\n");
  std::string file = writeFile(tempDir(), "custom_all_reduce.cuh", text);
  m::Dispatch d = lg::cpp::extractDispatch({file}, spec());
  SCOPED_TRACE(dump(d));
  auto dtype = [](Config c, const char* v) {
    c.vars["dtype"] = {m::Sort::Str, false, 0, v};
    return c;
  };
  Config pcie = Config().ws(4).nvl(false).bytes(4096);
  EXPECT_EQ(theLeaf(d, dtype(pcie, "float16")).spelling.line, lineOf(text, "// HALF"));
  EXPECT_EQ(theLeaf(d, dtype(pcie, "float16")).kernel, "cross_device_reduce_1stage");
  EXPECT_EQ(theLeaf(d, dtype(pcie, "bfloat16")).spelling.line, lineOf(text, "// BF16"));
  EXPECT_EQ(theLeaf(d, dtype(pcie, "float32")).kind, m::LeafKind::None);
  for (const auto& l : d.leaves) EXPECT_NE(l.text, "no doubles") << "double is not an element type of the target";
  // With NVLink every element type takes the switch's kernels.
  for (const char* v : {"float32", "float16", "bfloat16"})
    EXPECT_EQ(theLeaf(d, dtype(Config().ws(4).nvl(true).bytes(4096), v)).kind, m::LeafKind::Launch) << v;
}
