// The text report's grouping (report/Groups.cpp) on findings built by hand:
// cells of one cause are one diagnostic naming them all, at the check a patch
// opened; what differs per cell is said once per variant; another cause is
// another diagnostic; the concise format is one line per diagnostic; a run
// with nothing to report says so in a line.
#include <gtest/gtest.h>

#include "report/Report.h"

using namespace layergate;

namespace {

model::Location at(const std::string& file, int line, int col, const std::string& role, const std::string& note) {
  return {file, line, col, role, note};
}

// An LG001 finding as the checks write it (see checks/Check.cpp gapFinding).
model::Finding gap(std::int64_t ws, const std::string& sizes = "16 B .. 8 MiB - 16 B", const std::string& env = "1") {
  model::Finding f;
  f.rule = "LG001";
  f.cell = "world size " + std::to_string(ws) + " without NVLink";
  f.message = f.cell + ": the Python gate admits the custom all-reduce when FORCE=" + env + " for " + sizes +
              ", but the C++ dispatch launches no kernel, so the output is never written";
  f.config.world_size = ws;
  f.config.full_nvlink = false;
  f.config.nbytes = 16;
  f.config.env.push_back({"FORCE", env});
  // the primary first: the check the patch opened, then the admitting line
  f.locations.push_back(at("g.py", 97, 9, "opened", "check opened by FORCE=" + env + ": world_size > 2 and not full_nvlink"));
  f.locations.push_back(at("g.py", 137, 17, "gate", "admits: return inp_size < self.max_size"));
  f.locations.push_back(at("d.cuh", 176, 12, "dispatch", "no kernel on this path: if (full_nvlink_) has no else"));
  f.locations.push_back(at("d.cuh", 184 + static_cast<int>(ws / 2), 7, "expansion", "expanded from here"));
  return f;
}

report::Result resultOf(std::vector<model::Finding> fs) {
  report::Result r;
  r.python_files = {"g.py"};
  r.findings = std::move(fs);
  r.roles = {"world_size", "full_nvlink", "nbytes", "rank"};  // the all-reduce target's variables
  return r;
}

}  // namespace

TEST(TextReport, CellsOfOneCauseAreOneDiagnosticAtTheOpenedCheck) {
  auto r = resultOf({gap(4), gap(6), gap(8)});
  auto groups = report::groupFindings(r);
  ASSERT_EQ(groups.size(), 1u);
  const auto& g = groups[0];
  EXPECT_EQ(g.members.size(), 3u);
  EXPECT_EQ(g.message,
            "world sizes 4, 6, 8 without NVLink: the Python gate admits the custom all-reduce when FORCE=1 for 16 B .. "
            "8 MiB - 16 B, but the C++ dispatch launches no kernel, so the output is never written");
  EXPECT_EQ(g.primary.file, "g.py");
  EXPECT_EQ(g.primary.line, 97);
  ASSERT_EQ(g.notes.size(), 5u);  // admits, the C++ path, one expansion per world size
  EXPECT_EQ(g.notes[0].note, "admits: return inp_size < self.max_size");
  EXPECT_EQ(g.notes[1].line, 176);
  EXPECT_EQ(g.notes[2].note, "expanded from here (world size 4)");
  EXPECT_EQ(g.notes[4].note, "expanded from here (world size 8)");

  report::TextOptions o;
  std::string text = report::renderText(r, o);
  EXPECT_EQ(text.find("g.py:97:9: error: world sizes 4, 6, 8 without NVLink: "), 0u) << text;
  EXPECT_NE(text.find("\ng.py:97:9: note: check opened by FORCE=1: world_size > 2 and not full_nvlink\n"
                      "g.py:137:17: note: admits: return inp_size < self.max_size\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("counterexample: "), text.rfind("counterexample: ")) << text;  // one
  EXPECT_NE(text.find("    counterexample: world_size=4 full_nvlink=false nbytes=16 FORCE=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n1 error (3 configurations), 0 warnings\n"), std::string::npos) << text;

  EXPECT_EQ(report::renderConcise(r),
            "g.py:97:9: LG001 world sizes 4, 6, 8 without NVLink: the Python gate admits the custom all-reduce when "
            "FORCE=1 for 16 B .. 8 MiB - 16 B, but the C++ dispatch launches no kernel, so the output is never written\n");
  auto c = report::countGroups(r);
  EXPECT_EQ(c.errors, 1);
  EXPECT_EQ(c.error_cells, 3);
  EXPECT_EQ(report::conciseCount(c.errors, c.warnings), "Found 1 error, 0 warnings.\n");
}

TEST(TextReport, WhatDiffersPerCellIsSaidOncePerVariant) {
  // The sizes differ at world size 4; the env value that opens the gate at 8.
  auto r = resultOf({gap(4, "4 KiB .. 8 MiB - 16 B"), gap(6), gap(8, "16 B .. 8 MiB - 16 B", "8")});
  auto groups = report::groupFindings(r);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].message,
            "world sizes 4, 6, 8 without NVLink: the Python gate admits the custom all-reduce when FORCE=1 for 4 KiB "
            ".. 8 MiB - 16 B (world size 4); when FORCE=1 for 16 B .. 8 MiB - 16 B (world size 6); when FORCE=8 for "
            "16 B .. 8 MiB - 16 B (world size 8), but the C++ dispatch launches no kernel, so the output is never written");
  // The opened check's note names the variable, not one cell's value.
  EXPECT_EQ(groups[0].primary.note, "check opened by FORCE: world_size > 2 and not full_nvlink");
}

TEST(TextReport, AnotherCauseIsAnotherDiagnostic) {
  model::Finding throws = gap(8);
  throws.rule = "LG002";
  throws.message = throws.cell + ": the Python gate admits the custom all-reduce when FORCE=1 for 16 B .. 8 MiB - 16 B, "
                                 "but the C++ dispatch throws";
  model::Finding elsewhere = gap(6);
  elsewhere.locations[2].line = 300;  // another C++ path
  auto r = resultOf({gap(4), elsewhere, throws});
  auto groups = report::groupFindings(r);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].message.rfind("world size 4 without NVLink: ", 0), 0u) << groups[0].message;
  // A suppressed finding is in no diagnostic.
  r.findings[0].suppressed = model::Suppression{};
  EXPECT_EQ(report::groupFindings(r).size(), 2u);
}

TEST(TextReport, NothingToReportIsALine) {
  report::Result r = resultOf({});
  solve::CellVerdict admitted, blocked;
  admitted.gate.state = solve::GateState::Admitted;
  blocked.gate.state = solve::GateState::Blocked;
  r.matrix = {admitted, blocked, admitted};
  r.gate.notes = {"constructor parameter max_size taken at its default"};
  EXPECT_EQ(report::cleanText(r), "no gaps: 2 configurations admitted, each reaches a kernel");
  EXPECT_EQ(report::renderText(r),
            "no gaps: 2 configurations admitted, each reaches a kernel\n"
            "layergate: note: 1 note on what the analysis assumed or could not follow (--verbose)\n"
            "0 errors, 0 warnings\n");
  report::TextOptions verbose;
  verbose.notes = true;
  EXPECT_NE(report::renderText(r, verbose).find("layergate: note: constructor parameter max_size taken at its default\n"),
            std::string::npos);
  r.findings.push_back(gap(4));
  EXPECT_EQ(report::cleanText(r), "");
  EXPECT_EQ(report::renderConcise(resultOf({})), "");
  EXPECT_EQ(report::conciseCount(0, 0), "All checks passed.\n");
}
