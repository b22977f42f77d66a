// The selection layer (issue 13): which implementation class the selection
// function returns per cell, with env switches read at their declared
// defaults; and the policy-gate pieces it shares (records, enums, range).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/Analysis.h"
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
