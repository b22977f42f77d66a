// The CPU-side parts of `layergate selftest`: topology from canned CUDA/NVML
// answers, the verdict for a machine's cell, the nccl-tests table maths,
// threshold fitting from canned timings, harness generation from the fixture
// headers, child processes with deadlines. No GPU needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/Analysis.h"
#include "cpp/CppFrontend.h"
#include "selftest/Bench.h"
#include "selftest/EntryHarness.h"
#include "selftest/HeaderScan.h"
#include "selftest/FromAnalysis.h"
#include "selftest/Harness.h"
#include "selftest/PlanFile.h"
#include "selftest/Process.h"
#include "selftest/Selftest.h"
#include "selftest/Static.h"
#include "selftest/Topology.h"

using namespace layergate;
using namespace layergate::selftest;

namespace {

const std::string kFixtures = LAYERGATE_FIXTURES;
const std::string kSource = LAYERGATE_SOURCE_DIR;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- canned CUDA driver and NVML answers ----------------------------------

struct FakeGpu : GpuApi {
  std::string fail;
  std::vector<std::string> bus;
  std::set<std::pair<int, int>> no_peer;
  std::string init() override { return fail; }
  int count() override { return static_cast<int>(bus.size()); }
  std::string name(int) override { return "NVIDIA H200"; }
  std::string pciBusId(int d) override { return bus[d]; }
  int smCount(int) override { return 132; }
  int computeCapability(int) override { return 90; }
  bool canAccessPeer(int a, int b) override { return !no_peer.count({a, b}); }
};

struct FakeNvml : LinkApi {
  std::string fail;
  // NVML spells bus ids with 8 domain digits; CUDA with 4.
  std::map<std::pair<std::string, std::string>, bool> nvlink;
  std::map<std::pair<std::string, std::string>, int> links;
  int ancestor = 30;
  std::string init() override { return fail; }
  static std::string norm(const std::string& s) {
    unsigned d, b, v, f;
    parseBusId(s, d, b, v, f);
    return std::to_string(b);
  }
  std::optional<bool> nvlinkP2P(const std::string& a, const std::string& b) override {
    auto it = nvlink.find({norm(a), norm(b)});
    if (it == nvlink.end()) return std::nullopt;
    return it->second;
  }
  std::optional<int> nvlinkCount(const std::string& a, const std::string& b) override {
    auto it = links.find({norm(a), norm(b)});
    return it == links.end() ? 0 : it->second;
  }
  std::optional<int> commonAncestor(const std::string&, const std::string&) override { return ancestor; }
};

FakeGpu gpus(int n) {
  FakeGpu g;
  for (int i = 0; i < n; ++i) {
    char b[32];
    std::snprintf(b, sizeof b, "0000:%02x:00.0", 0x19 + i);
    g.bus.push_back(b);
  }
  return g;
}

void allPairs(FakeNvml& nv, int n, bool nvlink, int links = 18) {
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) {
        nv.nvlink[{std::to_string(0x19 + a), std::to_string(0x19 + b)}] = nvlink;
        if (nvlink) nv.links[{std::to_string(0x19 + a), std::to_string(0x19 + b)}] = links;
      }
}

}  // namespace

TEST(SelftestTopology, TwoNvlinkGpusFormFullNvlink) {
  FakeGpu g = gpus(2);
  FakeNvml nv;
  allPairs(nv, 2, true);
  Topology t = probeTopology(&g, &nv);
  ASSERT_TRUE(t.has_gpu);
  EXPECT_EQ(t.worldSize(), 2);
  ASSERT_TRUE(t.full_nvlink.has_value());
  EXPECT_TRUE(*t.full_nvlink);
  EXPECT_TRUE(t.all_peer);
  EXPECT_EQ(t.links[0][1].kind, LinkKind::NVLink);
  EXPECT_EQ(t.links[0][1].nvlinks, 18);
  const std::string r = renderTopology(t);
  EXPECT_NE(r.find("NV18 p2p"), std::string::npos) << r;
  EXPECT_NE(r.find("This machine forms: world size 2, full NVLink"), std::string::npos) << r;
  EXPECT_EQ(topologyJson(t)["full_nvlink"], true);
}

TEST(SelftestTopology, OnePciePairMakesItPcie) {
  FakeGpu g = gpus(4);
  FakeNvml nv;
  allPairs(nv, 4, true, 0);  // through NVSwitch: no direct link count
  nv.nvlink[{"27", "28"}] = false;  // GPU2 -> GPU3 over PCIe
  nv.ancestor = 20;
  Topology t = probeTopology(&g, &nv);
  ASSERT_TRUE(t.full_nvlink.has_value());
  EXPECT_FALSE(*t.full_nvlink);
  EXPECT_EQ(t.links[2][3].kind, LinkKind::PCIe);
  EXPECT_EQ(t.links[2][3].cellText(), "PXB");
  EXPECT_EQ(t.links[0][1].cellText(), "NVL");
  EXPECT_NE(t.configText().find("world size 4, PCIe"), std::string::npos);
}

TEST(SelftestTopology, MissingNvmlIsUnknownWithANote) {
  FakeGpu g = gpus(2);
  FakeNvml nv;
  nv.fail = "libnvidia-ml.so.1 not loadable: no such file";
  Topology t = probeTopology(&g, &nv);
  ASSERT_TRUE(t.has_gpu);
  EXPECT_FALSE(t.full_nvlink.has_value());
  EXPECT_EQ(t.links[0][1].kind, LinkKind::Unknown);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes[0].find("libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(renderTopology(t).find("NVLink unknown"), std::string::npos);
}

TEST(SelftestTopology, NoPeerAccessIsNoted) {
  FakeGpu g = gpus(2);
  g.no_peer = {{0, 1}, {1, 0}};
  FakeNvml nv;
  allPairs(nv, 2, false);
  Topology t = probeTopology(&g, &nv);
  EXPECT_FALSE(t.all_peer);
  EXPECT_NE(renderTopology(t).find("no-p2p"), std::string::npos);
}

TEST(SelftestTopology, NoDriverMeansNoGpu) {
  FakeGpu g;
  g.fail = "libcuda.so.1 not loadable: cannot open shared object file";
  Topology t = probeTopology(&g, nullptr);
  EXPECT_FALSE(t.has_gpu);
  EXPECT_EQ(t.reason, g.fail);
  EXPECT_EQ(renderTopology(t), "no CUDA GPU found (" + g.fail + ")\n");
  FakeGpu zero;
  Topology z = probeTopology(&zero, nullptr);
  EXPECT_FALSE(z.has_gpu);
  EXPECT_NE(z.reason.find("0 devices"), std::string::npos);
}

TEST(SelftestTopology, NoGpuExitsFourWithTheReason) {
  FakeGpu g;
  g.fail = "cuInit failed: CUDA_ERROR_NO_DEVICE";
  std::ostringstream out;
  Options o;
  EXPECT_EQ(runSelftest(o, Plan{}, probeTopology(&g, nullptr), out), kExitNoGpu);
  EXPECT_EQ(out.str(), "no CUDA GPU found (cuInit failed: CUDA_ERROR_NO_DEVICE): nothing to test here (exit status 4)\n");
  o.format = "json";
  std::ostringstream js;
  runSelftest(o, Plan{}, probeTopology(&g, nullptr), js);
  auto j = nlohmann::json::parse(js.str());
  EXPECT_EQ(j["exit"], 4);
  EXPECT_EQ(j["topology"]["gpu_found"], false);
}

TEST(SelftestTopology, BusIds) {
  EXPECT_TRUE(sameBusId("0000:19:00.0", "00000000:19:00.0"));
  EXPECT_FALSE(sameBusId("0000:19:00.0", "0000:1a:00.0"));
}

// ---- verdict lookup ----------------------------------------------------------

TEST(SelftestVerdict, SeedForcePcieCellInWords) {
  driver::Request req;
  req.python_files = {kFixtures + "/seed-force-pcie/custom_all_reduce.py"};
  req.cpp_files = {kFixtures + "/seed-force-pcie/custom_all_reduce.cuh"};
  StaticMatrix m = matrixFromResult(driver::analyse(req));
  const StaticCell* c = findCell(m, 8, false);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->noKernelGap());
  EXPECT_EQ(describeCell(*c).rfind("world size 8, PCIe: your gate admits it when SGLANG_FORCE_CUSTOM_AR_PCIE=1 for 16 B .. "
                                   "8 MiB - 16 B, and the dispatch launches no kernel", 0),
            0u)
      << describeCell(*c);
  EXPECT_EQ(expectedOutcome(*c, 8192), "no kernel ran");
  EXPECT_EQ(expectText(*c, 8192).rfind("LG001", 0), 0u);
  const StaticCell* nv = findCell(m, 8, true);
  ASSERT_NE(nv, nullptr);
  EXPECT_FALSE(nv->noKernelGap());
  EXPECT_NE(describeCell(*nv).find("cross_device_reduce_1stage (< 256 KiB)"), std::string::npos) << describeCell(*nv);
  EXPECT_EQ(expectedOutcome(*nv, 8192), "ok");
  const StaticCell* three = findCell(m, 3, true);
  ASSERT_NE(three, nullptr);
  EXPECT_NE(describeCell(*three).find("does not admit"), std::string::npos);
  // Round trip through the saved plan.
  StaticMatrix back = matrixFromJson(toJson(m));
  ASSERT_EQ(back.cells.size(), m.cells.size());
  EXPECT_EQ(describeCell(*findCell(back, 8, false)), describeCell(*c));
}

// A plan is read on another machine: a number that does not fit, a float where
// an integer goes, or a wrong type is a one-line error naming the field, never
// a conversion with undefined behaviour.
TEST(SelftestPlan, BadNumbersAndTypesAreNamedErrors) {
  auto err = [](const char* text) -> std::string {
    try {
      matrixFromJson(nlohmann::json::parse(text));
    } catch (const std::exception& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(err(R"({"cells":[{"world_size":1E24,"full_nvlink":true}]})"),
            "static.cells[0].world_size: expected an integer, got 1e+24");
  EXPECT_EQ(err(R"({"cells":[{"world_size":99999,"full_nvlink":true}]})"),
            "static.cells[0].world_size: out of range 1..1024");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":1}]})"), "static.cells[0].full_nvlink: expected true or false");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":true,"dispatch":[{"lo":-5}]}]})"),
            "static.cells[0].dispatch[0].lo: out of range 0..9223372036854775807");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":true,"gate_sizes":{"lo":0,"hi":18446744073709551615}}]})"),
            "static.cells[0].gate_sizes.hi: out of range 0..9223372036854775807");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":true,"examples":[{"values":{"variant":2.5}}]}]})"),
            "static.cells[0].examples[0].values.variant: expected an integer, got 2.5");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":true,"examples":[{"kernel":7}]}]})"),
            "static.cells[0].examples[0].kernel: expected a string");
  EXPECT_EQ(err(R"({"cells":{}})"), "static.cells: expected an array");
  EXPECT_EQ(err(R"({"python":"g.py"})"), "static: no cells");
  EXPECT_EQ(err(R"({"cells":[{"world_size":2,"full_nvlink":false,"gate_sizes":{"lo":16,"hi":null},)"
                R"("examples":[{"bytes":16,"values":{"variant":-1}}]}]})"),
            "accepted");
}

TEST(SelftestVerdict, HandMadeCell) {
  StaticMatrix m;
  StaticCell c;
  c.world_size = 4;
  c.full_nvlink = true;
  c.gate = "admitted";
  c.has_sizes = true;
  c.gate_lo = 16;
  c.gate_hi = (8 << 20) - 16;
  c.parts = {{"launch", "k1", 1, 524287, false}, {"launch", "k2", 524288, -1, false}, {"throw", "odd", 1, 15, true}};
  m.cells.push_back(c);
  EXPECT_EQ(findCell(m, 4, false), nullptr);
  const StaticCell* f = findCell(m, 4, true);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(describeCell(*f), "world size 4, NVLink: your gate admits it for 16 B .. 8 MiB - 16 B, and the dispatch launches "
                              "k1 (< 512 KiB), k2 (>= 512 KiB)");
  EXPECT_EQ(partFor(*f, 600000)->kernel, "k2");
  EXPECT_EQ(sizeText(524287), "524287 B");
  EXPECT_EQ(sizeText(8 << 20), "8 MiB");
  std::vector<HarnessCell> cells = harnessCells(m, false);
  // world sizes 2..4, both flags; the 4/NVLink cell runs one size per launch part.
  int four_nv = 0;
  for (const auto& hc : cells) four_nv += hc.world_size == 4 && hc.full_nvlink;
  EXPECT_EQ(four_nv, 2);
  EXPECT_EQ(cells.size(), 7u);
}

// ---- speed table and thresholds -------------------------------------------

TEST(SelftestBench, BandwidthMaths) {
  EXPECT_NEAR(algbw(8192, 2.92), 2.8055, 1e-3);
  EXPECT_DOUBLE_EQ(busbw(10.0, 2), 10.0);   // 2(n-1)/n = 1
  EXPECT_DOUBLE_EQ(busbw(10.0, 8), 17.5);   // 2*7/8
  EXPECT_DOUBLE_EQ(busbw(10.0, 4), 15.0);
  EXPECT_DOUBLE_EQ(algbw(1000, 0), 0.0);
}

TEST(SelftestBench, ParsesTheBenchAndFitsTheMeasuredThresholds) {
  BenchRun run = parseBench(slurp(kSource + "/kernels/results/bench_2xH200.log"));
  EXPECT_EQ(run.ranks, 2);
  EXPECT_FALSE(run.standin);
  ASSERT_GT(run.rows.size(), 50u);
  EXPECT_EQ(run.rows[0].bytes, 8192);
  EXPECT_EQ(run.rows[0].algo, "one_shot_push");
  EXPECT_DOUBLE_EQ(run.rows[0].us, 2.92);
  const std::string table = renderSpeedTable(run);
  EXPECT_NE(table.find("#       size         count      type   redop     time   algbw   busbw #wrong"), std::string::npos);
  EXPECT_NE(table.find("        8192          4096      half     sum     2.92    2.81    2.81      0"), std::string::npos)
      << table.substr(0, 600);
  EXPECT_NE(table.find("# nccl"), std::string::npos);
  // kernels/README.md: the push wins up to 512 KB, the one-stage pull above, at every size up to 64 MB.
  ThresholdFit f = fitThresholds(run, true);
  ASSERT_EQ(f.thresholds.size(), 2u);
  EXPECT_EQ(f.thresholds[0], (std::pair<std::string, std::uint64_t>{"nvlink_one_shot_max", 524288}));
  EXPECT_EQ(f.thresholds[1], (std::pair<std::string, std::uint64_t>{"nvlink_one_stage_max", kAll}));
  EXPECT_EQ(f.fastest.at(1048576), "one_stage_pull");
  EXPECT_EQ(f.fastest.at(8192), "one_shot_push");
}

TEST(SelftestBench, FitsPcieTiersAndWritesTheHeaderFormat) {
  BenchRun run;
  run.ranks = 4;
  run.standin = true;
  // one_shot_push wins up to 64 KiB, two_shot_push above.
  for (std::int64_t b : {8192, 65536, 262144, 1048576}) {
    run.rows.push_back({b, b / 2, "half", "one_shot_push", b <= 65536 ? 5.0 : 40.0, 0});
    run.rows.push_back({b, b / 2, "half", "two_shot_push", b <= 65536 ? 7.0 : 20.0, 0});
    run.rows.push_back({b, b / 2, "half", "dispatch(two_shot_push)", 1.0, 0});  // not a tier: ignored
  }
  run.rows.push_back({262144, 131072, "half", "two_shot_push_broken", 0.1, 0});
  ThresholdFit f = fitThresholds(run, false);
  ASSERT_EQ(f.thresholds.size(), 1u);
  EXPECT_EQ(f.thresholds[0].first, "pcie_one_shot_max");
  EXPECT_EQ(f.thresholds[0].second, 65536u);
  const std::string js = thresholdsJson({f}, "4 x test");
  auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["format"], "layergate-thresholds/1");
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["key"], "pcie_one_shot_max");
  EXPECT_EQ(j["entries"][0]["world_size"], 4);
  EXPECT_EQ(j["entries"][0]["bytes"], 65536);
  // Rows with wrong elements never win.
  run.rows.push_back({8192, 4096, "half", "two_stage_pull", 0.5, 3});
  EXPECT_EQ(fitThresholds(run, false).fastest.at(8192), "one_shot_push");
}

// ---- harness generation -----------------------------------------------------

namespace {
HarnessSpec planFor(const std::string& fixture) {
  target::Target t = driver::selectTarget({}, "");
  const std::string h = kFixtures + "/" + fixture + "/custom_all_reduce.cuh";
  model::Dispatch d = cpp::extractDispatch({h}, t.cpp);
  return planHarness(d, h, slurp(h), memberRoles(t.cpp.members, t.roles));
}
std::vector<Role> roles(const std::vector<HarnessArg>& a) {
  std::vector<Role> r;
  for (const auto& x : a) r.push_back(x.role);
  return r;
}
}  // namespace

TEST(SelftestHarness, SglangFixture) {
  HarnessSpec s = planFor("sglang-upstream");
  EXPECT_EQ(s.class_name, "vllm::CustomAllreduce");
  EXPECT_EQ(s.ns, "vllm");
  EXPECT_EQ(roles(s.ctor), (std::vector<Role>{Role::SignalArray, Role::RankData, Role::RankDataBytes, Role::Rank,
                                              Role::WorldSize, Role::Flag}));
  EXPECT_EQ(s.signal_type, "vllm::Signal");
  EXPECT_EQ(s.register_method, "register_buffer");
  EXPECT_EQ(roles(s.register_args), (std::vector<Role>{Role::PeerArray}));
  EXPECT_EQ(s.dispatch, "allreduce");
  EXPECT_EQ(roles(s.dispatch_args), (std::vector<Role>{Role::Stream, Role::Input, Role::Output, Role::Count, Role::Default,
                                                       Role::BlockLimit}));
  // utils.h is not in the fixture: a stand-in with the error-check macro.
  ASSERT_EQ(s.shims.count("utils.h"), 1u);
  EXPECT_NE(s.shims["utils.h"].find("#define CHECK_CUDA_SUCCESS(...)"), std::string::npos);
  const std::string cu = generateHarness(s);
  EXPECT_NE(cu.find("new vllm::CustomAllreduce(signals.data(), k.rank_data, kRankDataBytes, r, ws, nvlink)"),
            std::string::npos);
  EXPECT_NE(cu.find("k.obj->register_buffer(ins.data());"), std::string::npos);
  EXPECT_NE(cu.find("k.obj->allreduce<float>(k.stream, static_cast<float*>(k.in), static_cast<float*>(k.out), "
                    "static_cast<int>(count), lgh_default_0(), static_cast<int>(std::min<long long>(lgh_default_1(), k.blocks)))"),
            std::string::npos)
      << cu.substr(0, 3000);
  EXPECT_NE(cu.find("using namespace vllm;"), std::string::npos);
  EXPECT_NE(cu.find("sizeof(vllm::Signal)"), std::string::npos);
}

TEST(SelftestHarness, VllmFixtureFlagFoundThroughTheMemberMap) {
  HarnessSpec s = planFor("vllm-upstream");
  EXPECT_EQ(s.class_name, "vllm::CustomAllreduce");
  ASSERT_EQ(s.ctor.size(), 6u);
  EXPECT_EQ(s.ctor[5].role, Role::Flag);
  EXPECT_EQ(s.ctor[5].param.name, "fully_connected");
  EXPECT_TRUE(s.shims.empty());  // the vLLM header defines CUDACHECK itself
  EXPECT_NE(generateHarness(s).find("k.obj->allreduce<float>("), std::string::npos);
}

TEST(SelftestHarness, ReferenceHeaderUsesItsRankBufferFactory) {
  target::Target t = driver::selectTarget({}, "");
  const std::string h = kSource + "/kernels/layergate_allreduce.cuh";
  model::Dispatch d = cpp::extractDispatch({h}, t.cpp);
  HarnessSpec s = planHarness(d, h, slurp(h), memberRoles(t.cpp.members, t.roles));
  EXPECT_EQ(s.class_name, "layergate::CustomAllreduce");
  EXPECT_EQ(roles(s.ctor), (std::vector<Role>{Role::Rank, Role::WorldSize, Role::Flag, Role::RankBuffersArray,
                                              Role::MaxBytes, Role::MaxBlocks}));
  EXPECT_EQ(s.rank_buffers_alloc, "allocate_rank_buffers");
  EXPECT_EQ(s.rank_buffers_free, "free_rank_buffers");
  EXPECT_EQ(roles(s.register_args), (std::vector<Role>{Role::LocalPointer, Role::PeerArray}));
  EXPECT_EQ(roles(s.dispatch_args), (std::vector<Role>{Role::Stream, Role::Input, Role::Output, Role::Count}));
}

TEST(SelftestHarness, IpcConstructorsAreRefusedWithTheReason) {
  const std::string text = R"(
namespace ns {
struct Signal {};
class CustomAllreduce {
 public:
  CustomAllreduce(Signal* meta, void* rank_data, size_t rank_data_sz, const cudaIpcMemHandle_t* handles,
                  const std::vector<int64_t>& offsets, int rank, bool full_nvlink = true) {}
  template <typename T> void allreduce(cudaStream_t stream, T* input, T* output, int size) {}
};
}
)";
  model::Dispatch d;
  d.class_name = "CustomAllreduce";
  d.function = "allreduce";
  try {
    planHarness(d, "/tmp/x.cuh", text, {{"full_nvlink_", kLinkRole}});
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& e) {
    EXPECT_NE(std::string(e.what()).find("IPC"), std::string::npos) << e.what();
  }
}

TEST(SelftestHarness, ScansNamespacesAndMethods) {
  const std::string text = R"(
// class CustomAllreduce { in a comment }
namespace a::b {
namespace {
const char* s = "class CustomAllreduce {";
}
class CustomAllreduce final : public Base {
 public:
  static constexpr int kMax = 8;
  std::map<std::array<uint8_t, sizeof(int)>, char*> handles_;
  int x_ = f(3);
  CustomAllreduce(int rank, long long t = 10'000'000'000) : r_(rank) { if (x) { y(); } }
  ~CustomAllreduce() {}
  static Buffers make(size_t n);
  template <typename T>
  void allreduce(cudaStream_t s, T* in, T* out, int n, int threads = 512, int block_limit = kMax);
 private:
  void register_buffer(void* ptrs[]);
};
}
)";
  ClassScan cs = scanClass(text, "CustomAllreduce");
  ASSERT_TRUE(cs.found);
  EXPECT_EQ(cs.namespaces, (std::vector<std::string>{"a", "b"}));
  std::vector<std::string> names;
  for (const auto& m : cs.methods) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"CustomAllreduce", "make", "allreduce", "register_buffer"}));
  EXPECT_TRUE(cs.methods[0].is_ctor);
  EXPECT_TRUE(cs.methods[1].is_static);
  EXPECT_TRUE(cs.methods[2].is_template);
  ASSERT_EQ(cs.methods[2].params.size(), 6u);
  EXPECT_EQ(cs.methods[2].params[5].default_text, "kMax");
  EXPECT_EQ(cs.methods[3].params[0].type, "void**");
}

// `__attr(` that never closes after class/struct: matchClose gives npos, and
// npos + 1 used to restart the scan at 0, forever (the test's TIMEOUT).
TEST(SelftestHarness, AnUnclosedAttributeParenEndsTheScan) {
  EXPECT_FALSE(scanClass("__a( struct __b(", "X").found);
  EXPECT_FALSE(scanClass("struct __align__(16", "X").found);
}

TEST(SelftestHarness, ParsesCellLines) {
  auto o = parseHarnessOutput("HARNESS gpus=1\nCELL 4 0 8192 NO_KERNEL every output element kept the sentinel (8192)\n"
                              "CELL 2 1 16 OK 8 elements right\nCELL 8 1 8192 HANG not finished after 5000 ms\n");
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].status, "no kernel ran");
  EXPECT_EQ(o[0].cell.world_size, 4);
  EXPECT_FALSE(o[0].cell.full_nvlink);
  EXPECT_EQ(o[1].status, "ok");
  EXPECT_EQ(o[2].status, "hang");
  EXPECT_EQ(o[2].detail, "not finished after 5000 ms");
  EXPECT_EQ(o[0].cell.arg(), "4:0:8192");
  HarnessCell c = o[0].cell;
  c.values = {{"blocks", 2}, {"variant", 3}};
  EXPECT_EQ(c.arg(), "4:0:8192:blocks=2,variant=3");
}

// ---- a dispatch called with what the gate hands down (EntryHarness.h) ------------

TEST(SelftestEntryHarness, ScansNamespaceScopeFunctions) {
  const std::string text = R"(
namespace outer { namespace inner {
struct Layout { size_t a; int f() { return 1; } };
enum class Kind : int { kA = 0 };
inline Layout make_layout(int world_size, int64_t max_numel) { Layout l{}; return l; }
template <typename T>
cudaError_t run(const T* in, T* out, Kind kind) { if (x) { return cudaSuccess; } return cudaErrorInvalidValue; }
// int not_this(int) { }
}  // namespace inner
int at_top(int n) { return n; }
}
)";
  std::vector<std::string> names, ns;
  for (const auto& f : scanFunctions(text)) {
    names.push_back(f.fn.name);
    std::string q;
    for (const auto& n : f.namespaces) q += n + "::";
    ns.push_back(q);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"make_layout", "run", "at_top"}));
  EXPECT_EQ(ns, (std::vector<std::string>{"outer::inner::", "outer::inner::", "outer::"}));
  auto fs = scanFunctions(text);
  EXPECT_EQ(fs[0].fn.return_type, "Layout");
  EXPECT_TRUE(fs[1].fn.is_template);
  EXPECT_EQ(fs[1].fn.return_type, "cudaError_t");
}

namespace {
// A header in the shape of a PCIe IPC launcher (written for this test): the
// entry takes a view of every peer's workspace that two factories build, and
// the header says how big a rank's workspace is.
const char* kEntryHeader = R"(
namespace demo::ipc {
enum class Variant : int { kPush = 0, kRing = 1 };
struct Layout { size_t signal, total; };
inline Layout compute_layout(int world_size, int64_t max_numel, int elem_size, int max_blocks) { return {}; }
inline int64_t workspace_size(int world_size, int64_t max_numel, int elem_size, int max_blocks) { return 0; }
struct Views { uint64_t peer[8]; };
inline Views make_views(const int64_t* ipc_ptrs, int world_size, int rank, const Layout& layout) { return {}; }
template <typename T>
cudaError_t all_reduce(const T* input, T* output, int64_t numel, const Views& views, int rank, int world_size,
                       int max_blocks, int64_t max_numel, int blocks, int threads, Variant variant, bool use_pdl,
                       cudaStream_t stream) { return cudaErrorInvalidValue; }
}
)";
model::Dispatch entryDispatch() {
  model::Dispatch d;
  d.function = "all_reduce";
  d.ns = "demo::ipc";
  d.is_template = true;
  for (auto [t, n] : std::vector<std::pair<std::string, std::string>>{
           {"const T *", "input"}, {"T *", "output"}, {"int64_t", "numel"}, {"const Views &", "views"}, {"int", "rank"},
           {"int", "world_size"}, {"int", "max_blocks"}, {"int64_t", "max_numel"}, {"int", "blocks"}, {"int", "threads"},
           {"Variant", "variant"}, {"bool", "use_pdl"}, {"cudaStream_t", "stream"}}) {
    model::CppParam p;
    p.type = t;
    p.name = n;
    d.params.push_back(p);
  }
  return d;
}
}  // namespace

TEST(SelftestEntryHarness, EveryParameterFromTheCellTheRankOrAFactory) {
  const std::map<std::string, std::string> members{{"variant", "variant"}, {"blocks", "blocks"}, {"threads", "threads"}};
  const std::set<std::string> values{"numel", "elem_size", "max_blocks", "blocks", "threads", "variant"};
  HarnessSpec h = planEntryHarness(entryDispatch(), "/x/demo.cuh", {{"/x/demo.cuh", kEntryHeader}}, members, values, {}, 2);
  EXPECT_TRUE(h.entry);
  EXPECT_EQ(h.elem_type, "__half");
  EXPECT_EQ(h.dispatch, "demo::ipc::all_reduce");
  EXPECT_TRUE(h.entry_returns_error);
  ASSERT_EQ(h.entry_locals.size(), 2u);
  EXPECT_EQ(h.entry_locals[0],
            "const auto lg_layout = demo::ipc::compute_layout(ws, cap, static_cast<int>(V(\"elem_size\")), "
            "static_cast<int>(V(\"max_blocks\")));");
  EXPECT_EQ(h.entry_locals[1], "const auto lg_views = demo::ipc::make_views(lg_peers.data(), ws, r, lg_layout);");
  EXPECT_NE(h.entry_call.find("demo::ipc::all_reduce<__half>(static_cast<const __half*>(k.in), static_cast<__half*>(k.out), "
                              "static_cast<int64_t>(V(\"numel\")), lg_views, r, ws, static_cast<int>(V(\"max_blocks\")), cap, "
                              "static_cast<int>(V(\"blocks\")), static_cast<int>(V(\"threads\")), "
                              "static_cast<demo::ipc::Variant>(V(\"variant\")), false, k.stream)"),
            std::string::npos)
      << h.entry_call;
  EXPECT_EQ(h.slab_bytes, "demo::ipc::workspace_size(ws, cap, static_cast<int>(V(\"elem_size\")), static_cast<int>(V(\"max_blocks\")))");
  const std::string cu = generateEntryHarness(h);
  EXPECT_NE(cu.find("#include \"/x/demo.cuh\""), std::string::npos);
  EXPECT_NE(cu.find("using Elem = __half;"), std::string::npos);
  for (const char* p : {"LGH_ELEM", "LGH_SLAB", "LGH_LOCALS", "LGH_CALL"}) EXPECT_EQ(cu.find(p), std::string::npos) << p;
}

// A flag parameter the target maps to the NVLink flag gets the cell's
// topology, not a constant.
TEST(SelftestEntryHarness, AFlagMappedToTheTopologyTakesTheCellsValue) {
  const std::map<std::string, std::string> members{{"use_pdl", kLinkRole}, {"variant", "variant"}};
  const std::set<std::string> values{"numel", "elem_size", "max_blocks", "blocks", "threads", "variant"};
  HarnessSpec h = planEntryHarness(entryDispatch(), "/x/demo.cuh", {{"/x/demo.cuh", kEntryHeader}}, members, values, {}, 2);
  EXPECT_NE(h.entry_call.find("static_cast<demo::ipc::Variant>(V(\"variant\")), (c.nv != 0), k.stream)"), std::string::npos)
      << h.entry_call;
}

TEST(SelftestHarness, ACellTheHarnessCouldNotRunIsNotRunNotAnError) {
  auto o = parseHarnessOutput("CELL 2 0 17 SKIP message size not a whole number of elements\n");
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].status, "not run");
}

TEST(SelftestEntryHarness, APeerViewWithoutAWorkspaceSizeIsRefused) {
  std::string text = kEntryHeader;
  text.replace(text.find("workspace_size"), 14, "scratch_thing");
  try {
    planEntryHarness(entryDispatch(), "/x/demo.cuh", {{"/x/demo.cuh", text}}, {},
                     {"numel", "elem_size", "max_blocks", "blocks", "threads", "variant"}, {}, 2);
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& e) {
    EXPECT_NE(std::string(e.what()).find("no function that gives a rank's workspace size"), std::string::npos) << e.what();
  }
}

TEST(SelftestEntryHarness, ATvmFfiObjectIsNamedAsWhatIsMissing) {
  model::Dispatch d;
  d.function = "run";
  d.class_name = "AllReduceKernel";
  d.is_static = true;
  for (auto [t, n] : std::vector<std::pair<std::string, std::string>>{{"CommunicatorRef", "ref"}, {"Tensor", "in_"}}) {
    model::CppParam p;
    p.type = t;
    p.name = n;
    d.params.push_back(p);
  }
  try {
    planEntryHarness(d, "/x/v2.cuh", {{"/x/v2.cuh", "namespace {}"}}, {}, {}, {}, 0);
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& e) {
    EXPECT_NE(std::string(e.what()).find("'CommunicatorRef ref' of run has no role"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tvm-ffi"), std::string::npos) << e.what();
  }
}

TEST(SelftestEntryHarness, ThePlannedGapOfTheFixtureIsACellWithItsValues) {
  // The static side of flashinfer-pcie-ipc-flat4: one example per leaf the
  // gate reaches, the gap among them with the variant the policy hands down.
  const std::string dir = kFixtures + "/flashinfer-pcie-ipc-flat4";
  driver::Request req;
  req.target = "flashinfer-pcie-ipc";
  req.want_examples = [](const model::Gate&, const model::Dispatch&) { return true; };
  req.python_files = {dir + "/flashinfer/comm/pcie_ipc_policy.py"};
  req.cpp_files = {dir + "/include/flashinfer/comm/pcie_ipc_all_reduce.cuh"};
  report::Result r = driver::analyse(req);
  StaticMatrix m = matrixFromResult(r);
  // Round trip through the plan's JSON, as a GPU box reads it.
  m = matrixFromJson(toJson(m));
  std::vector<HarnessCell> cells = harnessCells(m, false);
  const HarnessCell* gap = nullptr;
  int launches = 0;
  for (const auto& c : cells) {
    if (c.expect == "no kernel ran") gap = &c;
    if (c.expect == "ok") ++launches;
    EXPECT_TRUE(c.world_size == 2 || c.world_size == 4 || c.world_size == 8) << c.arg();
  }
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->world_size, 4);
  EXPECT_EQ(gap->bytes, 524288);
  std::map<std::string, std::int64_t> v(gap->values.begin(), gap->values.end());
  EXPECT_EQ(v["variant"], 3);
  EXPECT_EQ(v["threads"], 256);
  EXPECT_EQ(v["numel"] * v["elem_size"], 524288);
  EXPECT_LE(v["blocks"], 16);
  EXPECT_GE(launches, 4);  // ws 2, 4 (two variants), 8 (two)
  EXPECT_EQ(gap->arg().rfind("4:0:524288:blocks=", 0), 0u) << gap->arg();
  // The fixture's header: its all_reduce takes values, not peer views.
  target::Target t = driver::selectTarget({}, "flashinfer-pcie-ipc");
  std::set<std::string> names;
  for (const auto& [k, x] : gap->values) names.insert(k);
  HarnessSpec h = planEntryHarness(r.dispatch, req.cpp_files[0], {{req.cpp_files[0], slurp(req.cpp_files[0])}},
                                   memberRoles(t.cpp.members, t.roles), names, {}, 2);
  EXPECT_NE(h.entry_call.find("fixture_ipc::all_reduce<__half>("), std::string::npos) << h.entry_call;
  EXPECT_NE(h.entry_call.find("static_cast<fixture_ipc::Variant>(V(\"variant\"))"), std::string::npos) << h.entry_call;
  EXPECT_TRUE(h.slab_bytes.empty());
}

// ---- child processes ------------------------------------------------------------

TEST(SelftestProcess, DeadlineKillsAHangingChild) {
  std::vector<std::string> lines;
  ChildResult r = runChild({"sh", "-c", "echo started; sleep 30"}, 0.5, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_EQ(lastLine(r.output), "started");
  EXPECT_EQ(lines, (std::vector<std::string>{"started"}));
}

TEST(SelftestProcess, ExitStatusOutputAndMissingPrograms) {
  ChildResult r = runChild({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10, {}, {{"LG_X", "1"}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  ChildResult e = runChild({"sh", "-c", "test \"$LG_X\" = 1"}, 10, {}, {{"LG_X", "1"}});
  EXPECT_EQ(e.exit_code, 0);
  ChildResult m = runChild({"/nonexistent/layergate_allreduce_check"}, 10);
  EXPECT_FALSE(m.started);
  EXPECT_NE(m.error.find("No such file"), std::string::npos);
}

// A JIT entry over tvm-ffi objects (the CustomAllReduceV2 shape, our fixture):
// the examples carry the algorithm's name; the harness builds the workspace
// object with its own constructor over buffers shaped as that constructor
// checks them, instantiates the entry per world size and reads the tensor it
// returns.
TEST(SelftestEntryHarness, ATvmFfiEntryBuildsItsObjectFromTheConstructorsShapes) {
  const std::string dir = kFixtures + "/sglang-custom-ar-v2/python/sglang";
  const std::string jit = dir + "/kernels/jit";
  driver::Request req;
  req.target = "sglang-custom-ar-v2";
  req.want_examples = [](const model::Gate&, const model::Dispatch&) { return true; };
  req.python_files = {dir + "/srt/distributed/device_communicators/custom_all_reduce_v2.py"};
  req.cpp_files = {jit + "/csrc/distributed/custom_all_reduce.cuh"};
  report::Result r = driver::analyse(req);
  StaticMatrix m = matrixFromJson(toJson(matrixFromResult(r)));  // through the plan's JSON
  std::set<std::string> algos;
  std::set<std::int64_t> sizes;
  for (const auto& c : harnessCells(m, false)) {
    ASSERT_EQ(c.texts.size(), 1u) << c.arg();
    algos.insert(c.texts[0].second);
    sizes.insert(c.bytes);
    EXPECT_NE(c.arg().find(",algo=" + c.texts[0].second), std::string::npos) << c.arg();
  }
  EXPECT_EQ(algos, (std::set<std::string>{"pull", "push"}));
  // each launch at its smallest size and at the largest up to 1 MiB
  EXPECT_TRUE(sizes.count(16)) << sizes.size();
  EXPECT_TRUE(sizes.count(1 << 20)) << sizes.size();
  ASSERT_EQ(r.dispatch.class_template_params.size(), 2u);
  EXPECT_EQ(r.dispatch.class_template_params[1].kind, "int");
  const std::vector<SourceText> sources{
      {req.cpp_files[0], slurp(req.cpp_files[0])},
      {jit + "/include/sgl_kernel/distributed/workspace.cuh", slurp(jit + "/include/sgl_kernel/distributed/workspace.cuh")},
      {jit + "/csrc/distributed/workspace.cuh", slurp(jit + "/csrc/distributed/workspace.cuh")}};
  target::Target t = driver::selectTarget({}, "sglang-custom-ar-v2");
  HarnessSpec h = planEntryHarness(r.dispatch, req.cpp_files[0], sources, memberRoles(t.cpp.members, t.roles), {"push_bytes", "pull_bytes"},
                                   {"algo"}, 0);
  EXPECT_TRUE(h.tvm_ffi);
  EXPECT_TRUE(h.ws_template);
  EXPECT_TRUE(h.entry_returns_tensor);
  EXPECT_EQ(h.entry_call, "lgh::ffi_result(k, AllReduceKernel<float, LG_WS>::run(lg_comm, lg_in, std::string(T(\"algo\"))));");
  ASSERT_EQ(h.extra_includes.size(), 1u);
  EXPECT_EQ(h.extra_includes[0], jit + "/csrc/distributed/workspace.cuh");
  ASSERT_EQ(h.buffer_stmts.size(), 3u);
  EXPECT_NE(h.buffer_stmts[0].find("const int64_t push_bytes = static_cast<int64_t>(V(\"push_bytes\"));"), std::string::npos)
      << h.buffer_stmts[0];
  EXPECT_NE(h.buffer_stmts[0].find("lgh::make_buffer(k, \"push_buffers\", std::vector<int64_t>{static_cast<int64_t>(push_bytes)}, sizeof(uint8_t));"),
            std::string::npos)
      << h.buffer_stmts[0];
  EXPECT_NE(h.buffer_stmts[2].find("const int64_t world_size = static_cast<int64_t>(ws);"), std::string::npos);
  EXPECT_NE(h.buffer_stmts[2].find("{static_cast<int64_t>(world_size + 1)}, sizeof(uint32_t)"), std::string::npos)
      << h.buffer_stmts[2];
  EXPECT_NE(h.buffer_stmts[2].find("using namespace host::distributed;"), std::string::npos);
  bool built = false;
  for (const auto& l : h.entry_locals)
    built |= l.find("ObjectRefFromObjectPtr<host::distributed::WorkspaceRef>(tvm::ffi::make_object<host::distributed::"
                    "WorkspaceObj>(r, ws, lg_push_buffers, lg_pull_buffers, lg_flags))") != std::string::npos;
  EXPECT_TRUE(built);
  h.world_sizes = {2, 4};
  const std::string cu = generateEntryHarness(h);
  EXPECT_NE(cu.find("case 4: { [[maybe_unused]] constexpr int LG_WS = 4;"), std::string::npos);
  EXPECT_EQ(cu.find("case 3:"), std::string::npos);
  EXPECT_NE(cu.find("#include \"" + jit + "/csrc/distributed/workspace.cuh\""), std::string::npos);
  EXPECT_NE(cu.find("lgh::ffi_enter(k);"), std::string::npos);
  EXPECT_NE(cu.find("lgh::make_pool(k, c.bytes, r == 0);"), std::string::npos);
  for (const char* p : {"LGH_FFI", "LGH_BUFFERS", "LGH_BEFORE_CALL", "LGH_CALL"}) EXPECT_EQ(cu.find(p), std::string::npos) << p;
}

// A constructor whose tensor has no shape check cannot be sized: said.
TEST(SelftestEntryHarness, AnObjectTensorWithoutAShapeCheckIsRefused) {
  const char* decl = R"(
namespace lib {
struct BoxObj : public tvm::ffi::Object {
  BoxObj(uint32_t rank, std::vector<TensorView> peers);
};
struct BoxRef : public tvm::ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(BoxRef, tvm::ffi::ObjectRef, BoxObj);
};
}
)";
  const char* def = "namespace lib { inline BoxObj::BoxObj(uint32_t rank, std::vector<TensorView> peers) { } }";
  model::Dispatch d;
  d.function = "run";
  for (auto [t, n] : std::vector<std::pair<std::string, std::string>>{{"BoxRef", "box"}, {"tvm::ffi::Tensor", "in"}}) {
    model::CppParam p;
    p.type = t;
    p.name = n;
    d.params.push_back(p);
  }
  try {
    planEntryHarness(d, "/x/e.cuh", {{"/x/e.cuh", "void run(BoxRef box, tvm::ffi::Tensor in);"}, {"/x/box.h", decl}, {"/x/box.cuh", def}},
                     {}, {}, {}, 0);
    FAIL() << "expected a HarnessError";
  } catch (const HarnessError& e) {
    EXPECT_NE(std::string(e.what()).find("the shape of peers (BoxObj's constructor) is not checked by a TensorMatcher in /x/box.cuh"),
              std::string::npos)
        << e.what();
  }
}

TEST(SelftestPlan, TextValuesTravelAndABadOneIsRefused) {
  StaticMatrix m;
  StaticCell c;
  c.world_size = 2;
  c.full_nvlink = true;
  c.gate = "admitted";
  StaticExample e;
  e.kind = "throw";
  e.bytes = 32;
  e.values = {{"push_bytes", 16}};
  e.texts = {{"algo", "1shot_push"}};
  c.examples.push_back(e);
  m.cells.push_back(c);
  StaticMatrix back = matrixFromJson(toJson(m));
  ASSERT_EQ(back.cells.size(), 1u);
  ASSERT_EQ(back.cells[0].examples.size(), 1u);
  EXPECT_EQ(back.cells[0].examples[0].texts, e.texts);
  EXPECT_EQ(harnessCells(back, false).at(0).arg(), "2:1:32:push_bytes=16,algo=1shot_push");
  nlohmann::json j = toJson(m);
  j["cells"][0]["examples"][0]["texts"]["algo"] = "two words";
  EXPECT_THROW(matrixFromJson(j), std::runtime_error);
  EXPECT_FALSE(passableText("a,b"));
  EXPECT_TRUE(passableText("2shot_pull"));
}

// A saved plan carries how the harness is compiled; what reaches nvcc from a
// plan made elsewhere is a language standard and macro definitions, checked.
TEST(SelftestPlan, HarnessCompileSettingsTravelAndAreChecked) {
  Plan p;
  p.header = "/x/v2.cuh";
  p.harness_std = "c++20";
  p.harness_defines = {"SGL_CUDA_ARCH=900", "NDEBUG"};
  p.harness_include_dirs = {"/x/include"};
  p.harness_tvm_ffi = true;
  Plan back = planFromJson(planJson(p));
  EXPECT_EQ(back.harness_std, "c++20");
  EXPECT_EQ(back.harness_defines, p.harness_defines);
  EXPECT_EQ(back.harness_include_dirs, p.harness_include_dirs);
  EXPECT_TRUE(back.harness_tvm_ffi);
  p.harness_std = "gnu++20";
  EXPECT_EQ(planFromJson(planJson(p)).harness_std, "gnu++20");
  p.harness_std = "c++20 -Xcompiler -fplugin=x.so";
  EXPECT_THROW(planFromJson(planJson(p)), std::runtime_error);
  p.harness_std = "c++20";
  p.harness_defines = {"A B"};
  EXPECT_THROW(planFromJson(planJson(p)), std::runtime_error);
}

// A parameter type that is no identifier (a template, a qualified pointer) is
// no tvm-ffi reference type: no pattern is built from it, no object found.
TEST(SelftestEntryHarness, OnlyAnIdentifierCanNameAnObjectReference) {
  const std::vector<SourceText> src{{"/x/a.h", "struct R : ObjectRef { TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(R, ObjectRef, RObj); };"}};
  EXPECT_FALSE(findFfiObject(src, "Foo<int(*)[3]>").has_value());
  EXPECT_FALSE(findFfiObject(src, "a+b").has_value());
  EXPECT_FALSE(findFfiObject(src, "").has_value());
  EXPECT_FALSE(findFfiObject(src, "R").has_value());  // RObj is declared nowhere
}

namespace fs = std::filesystem;

// A saved plan names its headers relative to its folder: the header's own
// includes ("../common/x.h"), one found under an include directory, and the
// comment and #include lines of the harness source all follow the folder
// when it moves; system headers are not carried.
TEST(SelftestPlan, HeadersAreCarriedRelativeToTheFolderAndFollowItWhenMoved) {
  const fs::path base = fs::temp_directory_path() / ("lg plan unit " + std::to_string(::getpid()));
  fs::remove_all(base);
  auto put = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  const fs::path ck = base / "checkout";
  put(ck / "src/dispatch.cuh", "#include <cuda_runtime.h>\n#include \"../common/x.h\"\n#include <lib/y.h>\n");
  put(ck / "common/x.h", "#pragma once\n#include \"z.h\"\n");
  put(ck / "common/z.h", "#pragma once\n");
  put(ck / "inc/lib/y.h", "#pragma once\n");
  put(ck / "docs/unrelated.h", "#pragma once\n");
  Plan p;
  p.target = "demo";
  p.has_static = true;
  p.header = (ck / "src/dispatch.cuh").string();
  p.harness_files = {p.header};
  p.harness_root = ck.string();
  p.harness_include_dirs = {(ck / "inc").string(), "/usr/local/cuda/include"};
  p.harness_source = "// Generated around\n// " + p.header + "\n#include \"" + p.header + "\"\nint main() {}\n";
  fs::create_directories(base / "lint");
  const std::string line = savePlan({p}, (base / "lint/plan.json").string());
  EXPECT_NE(line.find("(1 gate, 1 harness; 4 headers carried in "), std::string::npos) << line;
  EXPECT_EQ(slurp((base / "lint/plan.json").string()).find(ck.string()), std::string::npos);
  EXPECT_FALSE(fs::exists(base / "lint/plan.d/docs"));
  fs::remove_all(ck);
  fs::rename(base / "lint", base / "box");
  std::vector<Plan> back = loadPlan((base / "box/plan.json").string());
  ASSERT_EQ(back.size(), 1u);
  const std::string folder = (base / "box/plan.d").string();
  EXPECT_EQ(back[0].target, "demo");
  EXPECT_EQ(back[0].header, folder + "/src/dispatch.cuh");
  // The CUDA directory is a system one: named as it is, its headers not carried.
  EXPECT_EQ(back[0].harness_include_dirs, (std::vector<std::string>{folder + "/inc", "/usr/local/cuda/include"}));
  EXPECT_EQ(back[0].harness_source, "// Generated around\n// " + folder + "/src/dispatch.cuh\n#include \"" + folder +
                                        "/src/dispatch.cuh\"\nint main() {}\n");
  std::set<std::string> files(back[0].harness_files.begin(), back[0].harness_files.end());
  EXPECT_EQ(files, (std::set<std::string>{folder + "/src/dispatch.cuh", folder + "/common/x.h", folder + "/common/z.h",
                                          folder + "/inc/lib/y.h"}));
  for (const auto& f : files) EXPECT_TRUE(fs::is_regular_file(f)) << f;
  EXPECT_EQ(planFolderName("plan-ref.json"), "plan-ref.d");
  EXPECT_EQ(planFolderName("plan"), "plan.d");
  EXPECT_EQ(planFolderName("x.d"), "x.d.d");
  fs::remove_all(base);
}

// A plan made elsewhere names paths inside its folder only.
TEST(SelftestPlan, APathOutOfThePlansFolderIsRefused) {
  const fs::path base = fs::temp_directory_path() / ("lg plan escape " + std::to_string(::getpid()));
  fs::create_directories(base / "plan.d");
  std::ofstream(base / "plan.json") << R"({"format":"layergate-selftest-plan/2","files":"plan.d","gates":[)"
                                    << R"({"harness":{"header":"../../etc/passwd","source":"x","files":[]}}]})";
  try {
    loadPlan((base / "plan.json").string());
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "gates[0].harness.header: not a path inside the plan's folder: ../../etc/passwd");
  }
  fs::remove_all(base);
}
