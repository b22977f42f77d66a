// The selection layer (issue 13): which implementation class the selection
// function returns per cell, with env switches read at their declared
// defaults; and the policy-gate pieces it shares (records, enums, range).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli/Analysis.h"
#include "cli/Scan.h"
#include "model/Errors.h"
#include "python/Chain.h"
#include "target/Chains.h"
#include "report/Report.h"

namespace layergate {
namespace {

report::Result analyseFixture(const std::string& name) {
  const std::string dir = std::string(LAYERGATE_FIXTURES) + "/" + name + "/";
  auto expect = nlohmann::json::parse(driver::readSource(dir + "expect.json", 1 << 20));
  driver::Request req;
  for (const auto& p : expect["python"]) req.python_files.push_back(dir + p.get<std::string>());
  for (const auto& p : expect["cpp"]) req.cpp_files.push_back(dir + p.get<std::string>());
  if (expect.contains("target")) req.target = expect["target"].get<std::string>();
  return driver::analyse(req);
}

const solve::CellVerdict& cell(const std::vector<solve::CellVerdict>& cells, int ws, bool nv) {
  for (const auto& c : cells)
    if (c.cell.world_size == ws && (c.cell.nvlink_any || c.cell.full_nvlink == nv)) return c;
  throw std::runtime_error("no cell");
}

TEST(Selection, SglangDispatchReturnsV2OnNvlinkByDefaultElseTheLegacyClass) {
  auto r = analyseFixture("sglang-selection");
  ASSERT_TRUE(r.selection.has_value());
  EXPECT_EQ(r.selection->function, "dispatch_custom_allreduce");
  ASSERT_EQ(r.selection->arms.size(), 2u);
  std::size_t v2 = r.selection->arms[0].implementation == "CustomAllReduceV2" ? 0 : 1;
  EXPECT_EQ(r.selection->arms[v2].implementation, "CustomAllReduceV2");
  EXPECT_EQ(r.selection->arms[1 - v2].implementation, "CustomAllreduce");
  const auto& v2cells = r.selection_cells[v2];
  const auto& v1cells = r.selection_cells[1 - v2];
  // V2 needs NVLink and 2..16 ranks; with the switch unset it is on (EnvBool(True)).
  EXPECT_EQ(cell(v2cells, 4, true).gate.state, solve::GateState::Admitted);
  EXPECT_EQ(cell(v2cells, 4, false).gate.state, solve::GateState::Blocked);
  EXPECT_EQ(cell(v2cells, 1, true).gate.state, solve::GateState::Blocked);
  // The legacy class: wherever V2 is not returned, so every cell has it.
  EXPECT_EQ(cell(v1cells, 4, false).gate.state, solve::GateState::Admitted);
  bool declared = false;
  for (const auto& n : r.selection->notes) declared |= n.find("(EnvBool, default True)") != std::string::npos;
  EXPECT_TRUE(declared);
  // Every format says it.
  std::string text = report::renderText(r);
  EXPECT_NE(text.find("Selection layer: the implementation dispatch_custom_allreduce"), std::string::npos) << text;
  auto j = nlohmann::json::parse(report::renderJson(r));
  EXPECT_EQ(j["selection"]["function"], "dispatch_custom_allreduce");
  EXPECT_EQ(j["selection"]["arms"].size(), 2u);
  report::HtmlOptions ho;
  ho.file_base = ho.page_dir = "/";
  std::string html = report::renderHtml({{"sglang-selection", &r}}, {}, ho);
  EXPECT_NE(html.find("Selection layer: the implementation dispatch_custom_allreduce"), std::string::npos);
  EXPECT_NE(html.find("<th>CustomAllReduceV2</th>"), std::string::npos);
  EXPECT_TRUE(r.findings.empty());
}

TEST(Selection, NoSelectionFunctionNoSection) {
  auto r = analyseFixture("sglang-helper-module");
  EXPECT_FALSE(r.selection.has_value());
  EXPECT_EQ(report::renderText(r).find("Selection layer"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(report::renderJson(r))["selection"].is_null());
  report::HtmlOptions ho;
  ho.file_base = ho.page_dir = "/";
  EXPECT_EQ(report::renderHtml({{"sglang-helper-module", &r}}, {}, ho).find("Selection layer"), std::string::npos);
}

}  // namespace
}  // namespace layergate

namespace layergate {
namespace {

// A device communicator in vLLM's shape, written for these tests: locals
// bound to the attributes, a symmetric-memory arm on pynccl first, one arm
// whose class is only annotated, a fall-through to NCCL.
const char* kCommunicator = R"(import torch
from .custom_all_reduce import CustomAllreduce
from .quick_all_reduce import QuickAllReduce


class CudaCommunicator:
    def __init__(self, group, use_custom_allreduce=True):
        self.pynccl_comm: PyNcclCommunicator | None = None
        self.ca_comm: CustomAllreduce | None = None
        self.qr_comm = None
        self.fast_comm: "Optional[FastAllReduce]" = None
        if use_custom_allreduce:
            self.ca_comm = CustomAllreduce(group=group, device=0)
            self.qr_comm = QuickAllReduce(group=group, device=0)

    def all_reduce(self, input_):
        if self.pynccl_comm is not None and symm_ok(self.pynccl_comm.world_size, input_):
            out = torch.ops.x.symm(input_)
            if out is not None:
                return out
        qr = self.qr_comm
        if qr is not None and not qr.disabled and qr.should_quick_allreduce(input_):
            return qr.quick_all_reduce(input_)
        fast = self.fast_comm
        if fast is not None and fast.should_use_fast(input_):
            out = fast.all_reduce(input_)
            return out
        ca = self.ca_comm
        if ca is not None and not ca.disabled and ca.should_custom_ar(input_):
            out = ca.custom_all_reduce(input_)
            assert out is not None
            return out
        out = input_.clone()
        torch.distributed.all_reduce(out)
        return out
)";

TEST(SelectionChain, ArmsInOrderWithTheirAttributesGuardsAndClasses) {
  auto ch = python::extractChain({{"comm.py", kCommunicator}}, {"CudaCommunicator"}, {"all_reduce"}, {});
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->class_name, "CudaCommunicator");
  ASSERT_EQ(ch->arms.size(), 4u);
  EXPECT_EQ(ch->arms[0].attribute, "pynccl_comm");
  EXPECT_EQ(ch->arms[0].guard, "");
  EXPECT_EQ(ch->arms[0].implementations, (std::vector<std::string>{"PyNcclCommunicator"}));
  EXPECT_EQ(ch->arms[1].attribute, "qr_comm");
  EXPECT_EQ(ch->arms[1].guard, "should_quick_allreduce");
  EXPECT_EQ(ch->arms[1].implementations, (std::vector<std::string>{"QuickAllReduce"}));
  EXPECT_EQ(ch->arms[1].result, "qr.quick_all_reduce(input_)");
  EXPECT_EQ(ch->arms[2].attribute, "fast_comm");
  EXPECT_EQ(ch->arms[2].implementations, (std::vector<std::string>{"FastAllReduce"}));  // from the annotation only
  EXPECT_EQ(ch->arms[3].attribute, "ca_comm");
  EXPECT_EQ(ch->arms[3].guard, "should_custom_ar");
  EXPECT_EQ(ch->arms[3].implementations, (std::vector<std::string>{"CustomAllreduce"}));
  EXPECT_EQ(ch->arms[3].result, "ca_comm.custom_all_reduce");
  EXPECT_EQ(ch->arms[3].where.line, 29);
  EXPECT_EQ(ch->fallback.line, 33);  // out = input_.clone()
  EXPECT_FALSE(python::extractChain({{"comm.py", kCommunicator}}, {"Other"}, {"all_reduce"}, {}));
}

TEST(SelectionChain, AClassChosenByASelectionFunctionIsMarked) {
  const char* src = R"(
class GroupCoordinator:
    def __init__(self):
        self.ca_comm = None
        if x:
            CAClass = dispatch_custom_allreduce()
            self.ca_comm = CAClass(group=1)

    def pick(self, input_):
        if self.ca_comm is not None and not self.ca_comm.disabled and self.ca_comm.should_custom_ar(input_):
            return "ca"
        return None
)";
  auto ch = python::extractChain({{"ps.py", src}}, {"GroupCoordinator"}, {"pick"}, {"dispatch_custom_allreduce"});
  ASSERT_TRUE(ch);
  ASSERT_EQ(ch->arms.size(), 1u);
  EXPECT_EQ(ch->arms[0].implementations, (std::vector<std::string>{"selected-by:dispatch_custom_allreduce"}));
  EXPECT_EQ(ch->arms[0].result, "\"ca\"");
}

TEST(SelectionChain, DescriptionsAreReadAndABadOneIsOneLine) {
  auto specs = target::loadChains(LAYERGATE_SOURCE_DIR "/rules");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "sglang-group-coordinator");
  EXPECT_EQ(specs[0].selection_functions, (std::vector<std::string>{"dispatch_custom_allreduce"}));
  EXPECT_EQ(specs[1].name, "vllm-device-communicator");
  EXPECT_EQ(specs[1].methods, (std::vector<std::string>{"all_reduce"}));
  for (const char* bad : {"[1]", "{\"name\": \"x\"}", "{\"name\": \"x\", \"files\": [1], \"classes\": [\"C\"], \"methods\": [\"m\"]}", "{"}) {
    try {
      target::parseChain(bad, "sel.json");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("sel.json: ", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

TEST(SelectionChain, ScanSaysPerCellWhichArmRunsAndWhatIsNotAnalysed) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("lg-chain-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path fx = LAYERGATE_FIXTURES;
  auto put = [&](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  put(root / "vllm/distributed/device_communicators/custom_all_reduce.py",
      driver::readSource((fx / "vllm-upstream/custom_all_reduce.py").string(), 1 << 20));
  put(root / "csrc/custom_all_reduce.cuh", driver::readSource((fx / "vllm-upstream/custom_all_reduce.cuh").string(), 1 << 20));
  put(root / "csrc/custom_all_reduce.cu", "#include \"custom_all_reduce.cuh\"\n");
  put(root / "vllm/distributed/device_communicators/cuda_communicator.py", kCommunicator);
  driver::ScanRequest req;
  req.root = root.string();
  auto s = driver::scan(req);
  ASSERT_EQ(s.chains.size(), 1u);
  const auto& v = s.chains[0];
  EXPECT_EQ(v.name, "vllm-device-communicator");
  ASSERT_EQ(v.arm_units.size(), 4u);
  EXPECT_EQ(v.arm_units[3][0].first, "CustomAllreduce");
  EXPECT_GE(v.arm_units[3][0].second, 0);  // analysed
  EXPECT_LT(v.arm_units[1][0].second, 0);  // QuickAllReduce: no unit here
  EXPECT_EQ(v.platforms, (std::vector<std::string>{"cuda"}));
  auto row = [&](int ws, bool nv) {
    for (const auto& r : v.rows)
      if (r.world_size == ws && r.full_nvlink == nv) return r;
    throw std::runtime_error("no row");
  };
  // vLLM's gate: 2 ranks with or without NVLink, more only fully connected.
  EXPECT_EQ(row(2, false).arms[3], "by default");
  EXPECT_EQ(row(2, false).runs[0], "ca_comm (unless pynccl_comm, qr_comm, fast_comm takes it)");
  EXPECT_EQ(row(4, false).arms[3], "-");
  EXPECT_EQ(row(4, false).runs[0], "NCCL (unless pynccl_comm, qr_comm, fast_comm takes it)");
  EXPECT_EQ(row(4, true).runs[0], "ca_comm (unless pynccl_comm, qr_comm, fast_comm takes it)");
  EXPECT_EQ(row(4, true).arms[1], "?");
  report::TextOptions o;
  const std::string text = driver::renderScanText(s, o);
  EXPECT_NE(text.find("Selection layer (CudaCommunicator.all_reduce at vllm/distributed/device_communicators/cuda_communicator.py:16)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("4. ca_comm"), std::string::npos) << text;
  EXPECT_NE(text.find("QuickAllReduce (not analysed)"), std::string::npos) << text;
  auto j = nlohmann::json::parse(driver::renderScanJson(s));
  ASSERT_EQ(j["selection_layers"].size(), 1u);
  EXPECT_EQ(j["selection_layers"][0]["arms"][3]["classes"][0]["analysed"], true);
  EXPECT_EQ(j["selection_layers"][0]["cells"][3]["runs"]["cuda"], "ca_comm (unless pynccl_comm, qr_comm, fast_comm takes it)");
  fs::remove_all(root);
}

}  // namespace
}  // namespace layergate
