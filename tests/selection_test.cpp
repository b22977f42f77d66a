// The selection layer (issue 13): which implementation class the selection
// function returns per cell, with env switches read at their declared
// defaults; and the policy-gate pieces it shares (records, enums, range).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli/Analysis.h"
#include "cli/Chain.h"
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
  // with the matrix (--matrix), not by default
  EXPECT_EQ(report::renderText(r).find("Selection layer"), std::string::npos);
  report::TextOptions with_matrix;
  with_matrix.matrix = true;
  std::string text = report::renderText(r, with_matrix);
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
  report::TextOptions with_matrix;
  with_matrix.matrix = true;
  EXPECT_EQ(report::renderText(r, with_matrix).find("Selection layer"), std::string::npos);
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

// An arm's guard is read as its class's gate only in that shape: a
// conjunction of `X is not None`, `not X.disabled` and the one guard call,
// with a direct return. An `or`, a negated guard, another test or a return
// under a nested `if` is not that gate, and is shown as not known.
TEST(SelectionChain, OnlyAGuardThatIsTheGateIsReadAsTheGate) {
  auto ch = python::extractChain({{"comm.py", kCommunicator}}, {"CudaCommunicator"}, {"all_reduce"}, {});
  ASSERT_TRUE(ch);
  ASSERT_EQ(ch->arms.size(), 4u);
  EXPECT_FALSE(ch->arms[0].plain);  // no guard call; a return under a nested if
  EXPECT_TRUE(ch->arms[1].plain);
  EXPECT_TRUE(ch->arms[2].plain);   // no `disabled` test: still only the gate
  EXPECT_TRUE(ch->arms[3].plain);
  const std::string odd = R"(class CudaCommunicator:
    def __init__(self):
        self.ca_comm = CustomAllreduce()

    def all_reduce(self, x):
        ca = self.ca_comm
        if ca is None or not ca.should_custom_ar(x):
            return self.nccl(x)
        if ca is not None and os.environ.get("USE_CA") == "1" and ca.should_custom_ar(x):
            return ca.custom_all_reduce(x)
        if not ca.should_custom_ar(x):
            return x
        if (ca is not None) and (ca.should_custom_ar(x)):
            return ca.custom_all_reduce(x)
        return x
)";
  auto o = python::extractChain({{"comm.py", odd}}, {"CudaCommunicator"}, {"all_reduce"}, {});
  ASSERT_TRUE(o);
  ASSERT_EQ(o->arms.size(), 4u);
  EXPECT_FALSE(o->arms[0].plain);  // or, negated guard
  EXPECT_FALSE(o->arms[1].plain);  // another test: never where the gate never admits, else not known
  EXPECT_TRUE(o->arms[1].gate_conjunct);
  EXPECT_EQ(o->arms[1].extra, "os.environ.get(\"USE_CA\") == \"1\"");
  EXPECT_FALSE(o->arms[0].gate_conjunct);
  EXPECT_FALSE(o->arms[2].gate_conjunct);
  EXPECT_FALSE(o->arms[2].plain);  // negated guard
  EXPECT_TRUE(o->arms[3].plain);   // parentheses are fine
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
  EXPECT_EQ(driver::renderScanText(s, o).find("Selection layer"), std::string::npos);  // --matrix shows it
  o.matrix = true;
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

// A cell the analysis never covered (past --max-world-size) is not known:
// "?", never "-" (a proven never), and it never counts as "no".
TEST(SelectionChain, ACellPastTheMaxWorldSizeIsNotKnownNotNever) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("lg-chain-ws-" + std::to_string(::getpid()));
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
  req.base.solve.max_world_size = 4;
  auto s = driver::scan(req);
  ASSERT_EQ(s.chains.size(), 1u);
  const auto& v = s.chains[0];
  auto row = [&](int ws, bool nv) {
    for (const auto& r : v.rows)
      if (r.world_size == ws && r.full_nvlink == nv) return r;
    throw std::runtime_error("no row");
  };
  EXPECT_EQ(row(2, false).arms[3], "by default");
  EXPECT_EQ(row(4, false).arms[3], "-");  // analysed: never
  EXPECT_EQ(row(8, true).arms[3], "?");   // not analysed
  EXPECT_EQ(row(8, false).arms[3], "?");
  EXPECT_EQ(row(8, false).runs[0], "NCCL (unless pynccl_comm, qr_comm, fast_comm, ca_comm takes it)");
  fs::remove_all(root);
}

// A selection function that may return a value not understood ("?") where
// that arm is not blocked: the chain's arm is not known there, never "-".
TEST(SelectionChain, ASelectionArmNotUnderstoodMakesTheChainArmUnknown) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("lg-chain-sel-" + std::to_string(::getpid()) + ".py");
  std::ofstream(file) << R"(
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
  auto cells = [](auto admitted) {
    std::vector<solve::CellVerdict> out;
    for (int ws = 1; ws <= 8; ++ws)
      for (int nv = 0; nv <= 1; ++nv) {
        solve::CellVerdict c;
        c.cell.world_size = ws;
        c.cell.full_nvlink = nv == 1;
        c.gate.state = admitted(ws, nv == 1) ? solve::GateState::Admitted : solve::GateState::Blocked;
        out.push_back(c);
      }
    return out;
  };
  std::vector<report::Result> results(2);
  results[0].target = "sel";
  results[0].selection.emplace();
  results[0].selection->function = "dispatch_custom_allreduce";
  results[0].selection->arms.resize(2);
  results[0].selection->arms[0].implementation = "CustomAllreduce";
  results[0].selection->arms[1].implementation = "?";
  results[0].selection_cells.push_back(cells([](int, bool) { return true; }));
  results[0].selection_cells.push_back(cells([](int ws, bool nv) { return ws == 4 && nv; }));  // "?" only there
  results[1].target = "ca";
  results[1].gate.class_name = "CustomAllreduce";
  results[1].matrix = cells([](int, bool) { return false; });  // its own gate: never
  target::ChainSpec spec;
  spec.name = "t";
  spec.files = {file.string()};
  spec.classes = {"GroupCoordinator"};
  spec.methods = {"pick"};
  spec.selection_functions = {"dispatch_custom_allreduce"};
  auto chains = driver::selectionChains({spec}, results, {}, 1 << 20);
  fs::remove(file);
  ASSERT_EQ(chains.size(), 1u);
  const auto& v = chains[0];
  auto row = [&](int ws, bool nv) {
    for (const auto& r : v.rows)
      if (r.world_size == ws && r.full_nvlink == nv) return r;
    throw std::runtime_error("no row");
  };
  EXPECT_EQ(row(4, false).arms[0], "-");  // "?" blocked, CustomAllreduce never
  EXPECT_EQ(row(4, true).arms[0], "?");
  EXPECT_EQ(row(4, true).runs[0], "NCCL (unless ca_comm takes it)");
  EXPECT_NE(driver::renderChainText(v).find("CustomAllreduce, ? (not analysed)"), std::string::npos) << driver::renderChainText(v);
}

// 200k nested brackets at the module's top level, in the class body, in an
// annotation and in an arm's condition (the chain reader's walks recurse per
// node): refused with a one-line InputError, never a stack overflow; a scan
// says it in a note.
TEST(SelectionChain, DeeplyNestedChainFilesAreRefusedWithoutCrashing) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string cls = "class CudaCommunicator:\n    def __init__(self):\n        self.ca_comm = CustomAllreduce()\n";
  const std::string method = "    def all_reduce(self, x):\n        if self.ca_comm is not None and self.ca_comm.should_custom_ar(x):\n"
                             "            return self.ca_comm.custom_all_reduce(x)\n        return None\n";
  const std::string in_cond = "    def all_reduce(self, x):\n        if self.ca_comm.should_custom_ar(" + deep +
                              "):\n            return self.ca_comm.custom_all_reduce(x)\n        return None\n";
  for (const std::string& text : {"x = " + deep + "\n" + cls + method, cls + "        self.y = " + deep + "\n" + method,
                                  cls + "        self.ca_comm: " + deep + " = None\n" + method, cls + in_cond}) {
    try {
      python::extractChain({{"deep.py", text}}, {"CudaCommunicator"}, {"all_reduce"}, {});
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("deep.py:", 0), 0u) << m;
      EXPECT_NE(m.find("nesting deeper than"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  // Ordinary nesting is still read.
  EXPECT_TRUE(python::extractChain({{"ok.py", "x = " + std::string(50, '[') + std::string(50, ']') + "\n" + cls + method}},
                                   {"CudaCommunicator"}, {"all_reduce"}, {}));

  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("lg-chain-deep-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path fx = LAYERGATE_FIXTURES;
  auto put = [&](const fs::path& p, const std::string& t) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << t;
  };
  put(root / "vllm/distributed/device_communicators/custom_all_reduce.py",
      driver::readSource((fx / "vllm-upstream/custom_all_reduce.py").string(), 1 << 20));
  put(root / "csrc/custom_all_reduce.cuh", driver::readSource((fx / "vllm-upstream/custom_all_reduce.cuh").string(), 1 << 20));
  put(root / "csrc/custom_all_reduce.cu", "#include \"custom_all_reduce.cuh\"\n");
  put(root / "vllm/distributed/device_communicators/cuda_communicator.py", "x = " + deep + "\n" + kCommunicator);
  driver::ScanRequest req;
  req.root = root.string();
  auto s = driver::scan(req);
  EXPECT_TRUE(s.chains.empty());
  bool noted = false;
  for (const auto& n : s.notes) noted |= n.rfind("selection layer not read: ", 0) == 0 && n.find("nesting deeper than") != std::string::npos;
  EXPECT_TRUE(noted);
  fs::remove_all(root);
}

}  // namespace
}  // namespace layergate
