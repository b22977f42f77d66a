// Gates found from the code (tool/gates/): registrations read from C++
// tokens, entries' definitions, native-op call sites and their conditions,
// and `check --list-gates` end to end over a fixture checkout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "CliRunner.h"
#include "gates/Gates.h"
#include "gates/Registrations.h"
#include "gates/Sites.h"

namespace lg = layergate::gates;

namespace {

const lg::Site* siteAt(const lg::SiteScan& s, const std::string& file, int line) {
  for (const auto& x : s.sites)
    if (x.file == file && x.line == line) return &x;
  return nullptr;
}

}  // namespace

TEST(Registrations, TorchLibraryDefImplAndBuildTimeNamespace) {
  const std::string text = R"src(
#include <torch/library.h>
TORCH_LIBRARY_EXPAND(CONCAT(TORCH_EXTENSION_NAME, _moe), m) {
  // a comment with m.def("not_an_op(Tensor x) -> ()") in it
  m.def("topk_softmax(Tensor! w, Tensor! ids, "
        "Tensor gating) -> ()");
  m.impl("topk_softmax", torch::kCUDA, &topk_softmax);
  m.def("moe_sum(Tensor x, Tensor! out) -> ()", &vllm::moe_sum);
  m.impl("scaled_fp4_quant.out", TORCH_BOX(&scaled_fp4_quant_out));
}
STABLE_TORCH_LIBRARY_IMPL(_C, CUDA, ops) {
  ops.impl("rms_norm", TORCH_BOX(&rms_norm));
}
PYBIND11_MODULE(my_ext, m) { m.def("fwd", &mha_fwd, "doc").def("bwd", [](int x) { return x; }); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, my_ns::run_impl);
)src";
  auto regs = lg::scanRegistrations(text, "b.cpp");
  ASSERT_EQ(regs.size(), 8u);
  EXPECT_EQ(regs[0].kind, lg::Registration::Kind::Schema);
  EXPECT_EQ(regs[0].op, "topk_softmax");
  EXPECT_EQ(regs[0].schema, "topk_softmax(Tensor! w, Tensor! ids, Tensor gating) -> ()");
  EXPECT_EQ(regs[0].line, 5);
  EXPECT_EQ(regs[1].kind, lg::Registration::Kind::Impl);
  EXPECT_EQ(regs[1].function, "topk_softmax");
  EXPECT_EQ(regs[1].dispatch_key, "kCUDA");
  EXPECT_EQ(regs[2].kind, lg::Registration::Kind::Def);
  EXPECT_EQ(regs[2].function, "moe_sum");
  EXPECT_EQ(regs[3].op, "scaled_fp4_quant");
  EXPECT_EQ(regs[3].overload, "out");
  EXPECT_EQ(regs[3].function, "scaled_fp4_quant_out");
  EXPECT_EQ(regs[4].ns, "_C");
  EXPECT_EQ(regs[4].dispatch_key, "CUDA");
  EXPECT_EQ(regs[5].kind, lg::Registration::Kind::Pybind);
  EXPECT_EQ(regs[5].function, "mha_fwd");
  EXPECT_TRUE(regs[6].lambda);
  EXPECT_EQ(regs[7].kind, lg::Registration::Kind::TvmFfi);
  EXPECT_EQ(regs[7].function, "run_impl");

  EXPECT_EQ(lg::namespaceMatch("_C", "_C"), 2);
  EXPECT_EQ(lg::namespaceMatch("TORCH_EXTENSION_NAME", "_C"), 1);
  EXPECT_EQ(lg::namespaceMatch("CONCAT(TORCH_EXTENSION_NAME, _moe)", "_moe_C"), 1);
  EXPECT_EQ(lg::namespaceMatch("CONCAT(TORCH_EXTENSION_NAME, _moe)", "_C"), 0);
  EXPECT_EQ(lg::namespaceMatch("sgl_kernel", "_C"), 0);
}

TEST(Registrations, DefinitionsAcrossPreprocessorBranchesAndNamespaces) {
  // A kernel whose body is opened once per #if branch and closed after
  // #endif: the entry after it is still at namespace scope.
  const std::string text = R"src(
#define OPEN {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__global__ void k(int* p) {
  p[0] = 1;
#else
__global__ void k(int* p) {
#endif
}
namespace vllm {
void helper() { gemm(1, 2); }
torch::Tensor gemm(const torch::Tensor& a, int64_t group_size = 128) {
  return a;
}
}  // namespace vllm
struct S { void gemm(int x) {} };
void gemm(int);
)src";
  auto defs = lg::scanDefinitions(text, "g.cu", {"gemm"});
  ASSERT_EQ(defs.size(), 1u);
  EXPECT_EQ(defs[0].line, 12);
  EXPECT_EQ(defs[0].body_line, 12);
  ASSERT_EQ(defs[0].params.size(), 2u);
  EXPECT_EQ(defs[0].params[0].first, "const torch::Tensor&");
  EXPECT_EQ(defs[0].params[0].second, "a");
  EXPECT_EQ(defs[0].params[1].first, "int64_t");
  EXPECT_EQ(defs[0].params[1].second, "group_size");

  auto sp = lg::schemaParams("fused(Tensor! out, Tensor? bias, int[] sizes, *, float eps=1e-6) -> Tensor[]");
  ASSERT_EQ(sp.size(), 4u);
  EXPECT_EQ(sp[0], (std::pair<std::string, std::string>{"Tensor!", "out"}));
  EXPECT_EQ(sp[2], (std::pair<std::string, std::string>{"int[]", "sizes"}));
  EXPECT_EQ(sp[3], (std::pair<std::string, std::string>{"float", "eps"}));
}

TEST(Sites, ConditionsOfEveryKind) {
  const std::string text = R"src(import torch

def f(x, flag, n):
    if x.shape[-1] % 8 != 0:  # early exit
        return None
    assert n > 0
    if flag:
        torch.ops._C.a(x)
    elif n == 4:
        torch.ops._C.b(x)
    else:
        torch.ops._C.c(x)
    y = torch.ops._C.d(x) if n < 16 else None
    flag or torch.ops._C.e(x)
    while n > 1:
        torch.ops._C.f(x)
    torch.ops._C.g.default(x)
)src";
  auto scan = lg::scanSites({{"m.py", text}});
  ASSERT_EQ(scan.sites.size(), 7u);
  auto kinds = [](const lg::Site& s) {
    std::string k;
    for (const auto& c : s.conditions) k += c.kind + ":" + c.text + ";";
    return k;
  };
  const std::string pre = "exit:x.shape[-1] % 8 != 0;assert:n > 0;";
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 8)), pre + "if:flag;");
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 10)), pre + "else:flag;if:n == 4;");
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 12)), pre + "else:flag;else:n == 4;");
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 13)), pre + "if:n < 16;");
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 14)), pre + "else:flag;");
  EXPECT_EQ(kinds(*siteAt(scan, "m.py", 16)), pre + "loop:n > 1;");
  const lg::Site* g = siteAt(scan, "m.py", 17);
  EXPECT_EQ(kinds(*g), pre);
  EXPECT_EQ(g->op.str(), "torch.ops._C.g");
  EXPECT_EQ(g->op.overload, "default");
  EXPECT_EQ(g->function, "f");
}

TEST(Sites, WrappersThroughImportsReexportsAndThinForwarders) {
  std::vector<lg::Module> mods = {
      {"kern/python/kpkg/__init__.py", "from .norm import rms_norm as rms_norm\n"},
      {"kern/python/kpkg/norm.py", "import torch\ndef rms_norm(x, w, eps):\n    torch.ops.kpkg.rms_norm.default(x, w, eps)\n"},
      // The engine's op module forwards to the kernel package (two levels).
      {"eng/ops_mod.py", "import kpkg\ndef norm(w, x, eps=1e-6):\n    return kpkg.rms_norm(x, w, eps)\n"},
      {"eng/layer.py",
       "from eng import ops_mod as ops\nfrom kpkg import rms_norm\n"
       "class L:\n    def fwd(self, x):\n        if self.fast:\n            ops.norm(self.w, x)\n"
       "        if x.is_cuda:\n            rms_norm(x, self.w, 1e-5)\n"},
      {"eng/tests/test_layer.py", "from kpkg import rms_norm\ndef test():\n    if True:\n        rms_norm(1, 2, 3)\n"},
      {"eng/lib.py", "direct_register_custom_op(op_name=\"fused\", op_func=f)\n"
                     "@torch.library.custom_op(\"eng::router\", mutates_args=())\ndef r(x): return x\n"},
  };
  auto scan = lg::scanSites(mods);
  const lg::Site* a = siteAt(scan, "eng/layer.py", 6);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->op.str(), "torch.ops.kpkg.rms_norm");
  ASSERT_EQ(a->via.size(), 2u);
  EXPECT_EQ(a->via[0], "eng/ops_mod.py:norm");
  EXPECT_EQ(a->via[1], "kern/python/kpkg/norm.py:rms_norm");
  // norm(w, x) passes w on as the op's second argument, x as its first.
  ASSERT_EQ(a->to_op.size(), 3u);
  EXPECT_EQ(a->to_op[0], 1);
  EXPECT_EQ(a->to_op[1], 0);
  EXPECT_EQ(a->to_op[2], 2);
  const lg::Site* b = siteAt(scan, "eng/layer.py", 8);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->conditions.size(), 1u);
  EXPECT_EQ(b->via, std::vector<std::string>{"kern/python/kpkg/norm.py:rms_norm"});
  const lg::Site* t = siteAt(scan, "eng/tests/test_layer.py", 4);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->in_test);
  EXPECT_TRUE(scan.python_ops.count("fused"));
  EXPECT_TRUE(scan.python_ops.count("router"));
}

// The fixture checkout's inventory, text and JSON, against goldens
// (LAYERGATE_UPDATE_GOLDEN=1 rewrites them).
TEST(ListGates, FixtureCheckoutGolden) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(LAYERGATE_FIXTURES) / "gates-inventory";
  for (const std::string fmt : {"text", "json"}) {
    auto r = lgtest::runCli("check . --list-gates --format " + fmt, dir);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const fs::path golden = dir / (fmt == "text" ? "list-gates.txt" : "list-gates.json");
    if (std::getenv("LAYERGATE_UPDATE_GOLDEN")) std::ofstream(golden, std::ios::binary) << r.out;
    EXPECT_EQ(r.out, lgtest::slurp(golden)) << "format " << fmt;
  }
  auto v = lgtest::runCli("check . --list-gates --verbose", dir);
  EXPECT_NE(v.out.find("engine/layers/linear.py:29:5: torch.ops._C.rms_norm"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("unconditional"), std::string::npos);
}

// The gates' analyses run side by side: one job or many, the same bytes.
TEST(ListGates, SameOutputAtOneJobAndMany) {
  const std::string dir = std::string(LAYERGATE_FIXTURES) + "/gates-inventory";
  auto one = lgtest::runCli("check . --list-gates --format json -j1", dir);
  auto many = lgtest::runCli("check . --list-gates --format json -j8", dir);
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out, many.out);
}

// The analysis with no target: a group size Python admits and the entry's
// TORCH_CHECK rejects, a dtype the same, a size of k behind unknown switches,
// and a gate whose entry serves all it admits.
TEST(ListGates, GatesAnalysedWithNoTarget) {
  const std::string dir = std::string(LAYERGATE_FIXTURES) + "/gates-inventory";
  auto r = lgtest::runCli("check . --list-gates", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("engine/layers/linear.py:15:5: LG002 group_size 32: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("engine/layers/norm.py:13:5: LG002 x_dtype float32, x_shape_m1 0..8192: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("analysed: no gaps"), std::string::npos) << r.out;
  // Unknown calls that take none of the op's values are feature switches:
  // the gap holds whenever they let the call run, so it is an error, not LG008.
  EXPECT_NE(r.out.find("engine/layers/sampler.py:16:5: LG002 k 1024: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 analysed (3 errors in 3 gates, 0 warnings)"), std::string::npos) << r.out;
}

TEST(ListGates, BadUse) {
  const std::string dir = std::string(LAYERGATE_FIXTURES) + "/gates-inventory";
  auto files = lgtest::runCli("check --list-gates engine/_ops.py csrc/bindings.cpp", dir);
  EXPECT_EQ(files.status, 2);
  EXPECT_NE(files.err.find("--list-gates takes one directory"), std::string::npos) << files.err;
  auto sarif = lgtest::runCli("check . --list-gates --format sarif", dir);
  EXPECT_EQ(sarif.status, 2);
  EXPECT_NE(sarif.err.find("text or json"), std::string::npos) << sarif.err;
  auto missing = lgtest::runCli("check nope --list-gates", dir);
  EXPECT_EQ(missing.status, 2);
}
