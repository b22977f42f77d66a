// C++ frontend tests: small dispatch headers written to a temp dir, parsed
// with the bundled stubs; leaves checked by evaluating their conditions for
// concrete configurations.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
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
  static m::Leaf none{m::LeafKind::None, m::False(), "", "<no leaf>", {}, {}};
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

}  // namespace
