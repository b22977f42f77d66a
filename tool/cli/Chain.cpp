#include "cli/Chain.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/Analysis.h"
#include "model/Errors.h"
#include "python/Chain.h"

namespace layergate::driver {

namespace {

namespace fs = std::filesystem;

// The classes an arm's attribute may hold, with a selection function's
// classes in place of its marker (and where it returns each: result, arm).
// A value the selection function returns that was not understood is kept as
// class "?" (never analysed), once per selection arm: each has its own cells.
struct Held {
  std::string cls;
  int sel_result = -1, sel_arm = -1;
};
std::vector<Held> classesOf(const model::ChainArm& a, const std::vector<report::Result>& results) {
  std::vector<Held> out;
  auto add = [&](const std::string& c, int r, int arm) {
    for (const auto& h : out)
      if (h.cls == c && c != "?") return;
    out.push_back({c, r, arm});
  };
  for (const auto& c : a.implementations) {
    if (c.rfind("selected-by:", 0) == 0) {
      const std::string f = c.substr(12);
      for (size_t r = 0; r < results.size(); ++r)
        if (results[r].selection && results[r].selection->function == f)
          for (size_t k = 0; k < results[r].selection->arms.size(); ++k) {
            const auto& arm = results[r].selection->arms[k];
            if (arm.implementation != "None")
              add(arm.implementation, static_cast<int>(r), static_cast<int>(k));
          }
      continue;
    }
    add(c, -1, -1);
  }
  return out;
}

const solve::CellVerdict* cellIn(const std::vector<solve::CellVerdict>& m, int ws, bool nv) {
  for (const auto& v : m)
    if (v.cell.world_size == ws && (v.cell.nvlink_any || v.cell.full_nvlink == nv)) return &v;
  return nullptr;
}

const solve::CellVerdict* cellOf(const report::Result& r, int ws, bool nv) { return cellIn(r.matrix, ws, nv); }

}  // namespace

std::vector<ChainVerdict> selectionChains(const std::vector<target::ChainSpec>& specs,
                                          const std::vector<report::Result>& results,
                                          const std::map<std::string, std::string>& platform_of, std::size_t max_bytes) {
  std::vector<ChainVerdict> out;
  for (const auto& spec : specs) {
    for (const auto& file : spec.files) {
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) continue;
      std::vector<python::SourceFile> src{{file, readSource(file, max_bytes)}};
      auto chain = python::extractChain(src, spec.classes, spec.methods, spec.selection_functions);
      if (!chain || chain->arms.empty()) continue;
      ChainVerdict v;
      v.name = spec.name;
      v.file = file;
      v.chain = std::move(*chain);
      std::vector<std::vector<Held>> held;
      for (const auto& a : v.chain.arms) {
        std::vector<std::pair<std::string, int>> units_of;
        std::string platform;
        held.push_back(classesOf(a, results));
        for (const auto& h : held.back()) {
          const std::string& c = h.cls;
          int idx = -1;
          for (size_t i = 0; i < results.size() && idx < 0 && c != "?"; ++i)
            if (!results[i].gate.policy && results[i].gate.class_name == c) idx = static_cast<int>(i);
          units_of.push_back({c, idx});
          if (idx >= 0) {
            auto it = platform_of.find(results[static_cast<size_t>(idx)].target);
            if (it != platform_of.end()) platform = it->second;
          }
        }
        v.arm_units.push_back(std::move(units_of));
        v.arm_platform.push_back(platform);
        if (!platform.empty() && std::find(v.platforms.begin(), v.platforms.end(), platform) == v.platforms.end())
          v.platforms.push_back(platform);
      }
      std::sort(v.platforms.begin(), v.platforms.end());
      if (v.platforms.empty()) v.platforms.push_back("cuda");
      for (int ws = 1; ws <= 8; ++ws)
        for (int nv = 0; nv <= 1; ++nv) {
          ChainVerdict::Row row;
          row.world_size = ws;
          row.full_nvlink = nv == 1;
          std::vector<int> state;  // per arm: 0 never, 1 with an env setting, 2 by default, -1 not known
          for (size_t a = 0; a < v.chain.arms.size(); ++a) {
            std::string word;
            int st = 0;
            bool unknown = v.arm_units[a].empty();
            for (size_t h = 0; h < v.arm_units[a].size(); ++h) {
              const auto& [cls, idx] = v.arm_units[a][h];
              // A class a selection function returns: only where it returns it.
              const Held& sel = held[a][h];
              if (sel.sel_result >= 0) {
                const auto& cells = results[static_cast<size_t>(sel.sel_result)].selection_cells;
                const solve::CellVerdict* sc =
                    static_cast<size_t>(sel.sel_arm) < cells.size() ? cellIn(cells[static_cast<size_t>(sel.sel_arm)], ws, nv == 1) : nullptr;
                if (sc && !sc->undecided && sc->gate.state == solve::GateState::Blocked) continue;
              }
              if (idx < 0) {
                unknown = true;
                continue;
              }
              const solve::CellVerdict* c = cellOf(results[static_cast<size_t>(idx)], ws, nv == 1);
              if (!c) {  // a cell the analysis did not cover (past --max-world-size): not known, never "-"
                unknown = true;
                continue;
              }
              std::string w = c->undecided ? std::string("undecided") : report::selectionCell(*c);
              if (w == "undecided") unknown = true;
              else if (w == "by default") st = 2;
              else if (w != "-") st = std::max(st, 1);
              if (w.size() > 40) w = w.substr(0, 37) + "...";
              if (v.arm_units[a].size() > 1 && w != "-") w = cls + ": " + w;
              if (w != "-" || word.empty()) word = word.empty() || word == "-" ? w : word + "; " + w;
            }
            if (word.empty()) word = "-";
            if (unknown && st == 0) word = "?", st = -1;
            else if (unknown) word += " (+ a class not analysed)";
            // A guard that is more than the class's gate (an `or`, another
            // test, a return under a nested `if`): whether the arm is taken
            // is not known from the gate alone.
            const auto& arm = v.chain.arms[a];
            if (!arm.plain && st != -1 && !(arm.gate_conjunct && st == 0)) {
              word = "? (its gate: " + word + (arm.gate_conjunct ? "; also needs " + arm.extra : "; the guard is more than the gate") + ")";
              st = -1;
            }
            row.arms.push_back(word);
            state.push_back(st);
          }
          for (const auto& platform : v.platforms) {
            std::string runs, unknown, when;
            for (size_t a = 0; a < v.chain.arms.size() && runs.empty(); ++a) {
              const std::string name = v.chain.arms[a].attribute.empty() ? "arm " + std::to_string(a + 1) : v.chain.arms[a].attribute;
              // Analysed for another platform: what it does on this one is not known.
              const int st = !v.arm_platform[a].empty() && v.arm_platform[a] != platform ? -1 : state[a];
              if (st == 2) runs = name;
              else if (st == 1) when += (when.empty() ? "" : ", ") + name + " " + row.arms[a];
              else if (st == -1 && unknown.find(name) == std::string::npos) unknown += (unknown.empty() ? "" : ", ") + name;
            }
            if (runs.empty()) runs = "NCCL";
            if (!when.empty()) runs = when + ", else " + runs;
            if (!unknown.empty()) runs += " (unless " + unknown + " takes it)";
            row.runs.push_back(runs);
          }
          v.rows.push_back(std::move(row));
        }
      out.push_back(std::move(v));
      break;  // one file per description
    }
  }
  return out;
}

std::string renderChainText(const ChainVerdict& v) {
  std::string out = fmt::format("\nSelection layer ({}.{} at {}:{}): tries, in order\n", v.chain.class_name, v.chain.method,
                                v.chain.where.file, v.chain.where.line);
  for (size_t a = 0; a < v.chain.arms.size(); ++a) {
    const auto& arm = v.chain.arms[a];
    std::string held;
    bool said_unknown = false;  // a selection function's "?" values: once
    for (const auto& [cls, idx] : v.arm_units[a]) {
      if (cls == "?" && std::exchange(said_unknown, true)) continue;
      held += (held.empty() ? "" : ", ") + cls + (idx < 0 ? " (not analysed)" : "");
    }
    out += fmt::format("  {}. {:<14} {}:{}  {}{}{}\n", a + 1, arm.attribute.empty() ? "-" : arm.attribute, arm.where.file,
                       arm.where.line, held.empty() ? "class not known (not analysed)" : held,
                       v.arm_platform[a].empty() ? "" : " [" + v.arm_platform[a] + "]",
                       arm.guard.empty() ? "" : ", guard " + arm.guard + "()");
  }
  if (v.chain.fallback.valid())
    out += fmt::format("  then: the code at {}:{} (NCCL)\n", v.chain.fallback.file, v.chain.fallback.line);
  std::vector<size_t> w;
  for (size_t a = 0; a < v.chain.arms.size(); ++a) {
    size_t m = std::max<size_t>(v.chain.arms[a].attribute.size(), 2);
    for (const auto& r : v.rows) m = std::max(m, r.arms[a].size());
    w.push_back(m);
  }
  std::string head = fmt::format("  {:<5} {:<6}", "ws", "nvlink");
  for (size_t a = 0; a < v.chain.arms.size(); ++a)
    head += fmt::format("  {:<{}}", v.chain.arms[a].attribute.empty() ? "arm " + std::to_string(a + 1) : v.chain.arms[a].attribute, w[a]);
  for (const auto& p : v.platforms) head += "  runs on " + p + (&p == &v.platforms.back() ? "" : std::string(std::max<int>(0, 40 - 8 - static_cast<int>(p.size())), ' '));
  out += head + "\n";
  for (const auto& r : v.rows) {
    std::string line = fmt::format("  {:<5} {:<6}", r.world_size, r.full_nvlink ? "yes" : "no");
    for (size_t a = 0; a < r.arms.size(); ++a) line += fmt::format("  {:<{}}", r.arms[a], w[a]);
    for (size_t p = 0; p < r.runs.size(); ++p)
      line += p + 1 < r.runs.size() ? fmt::format("  {:<40}", r.runs[p]) : "  " + r.runs[p];
    out += line + "\n";
  }
  out += "  (each arm: its own gate's admission in the cell, for some message sizes: by default, when ENV=v, - never;\n"
         "  ?: the class it holds was not analysed here, so it may take the cell first. runs on P: the first arm that\n"
         "  admits by default, after those that admit only with an env setting; an arm analysed for another platform\n"
         "  counts as not known on P.)\n";
  return out;
}

nlohmann::json chainJson(const ChainVerdict& v) {
  nlohmann::json arms = nlohmann::json::array();
  for (size_t a = 0; a < v.chain.arms.size(); ++a) {
    const auto& arm = v.chain.arms[a];
    nlohmann::json classes = nlohmann::json::array();
    bool said_unknown = false;
    for (const auto& [cls, idx] : v.arm_units[a])
      if (cls != "?" || !std::exchange(said_unknown, true)) classes.push_back({{"class", cls}, {"analysed", idx >= 0}});
    arms.push_back({{"attribute", arm.attribute}, {"classes", classes}, {"platform", v.arm_platform[a]}, {"guard", arm.guard}, {"guard_is_the_gate", arm.plain}, {"condition", arm.text},
                    {"returns", arm.result}, {"file", arm.where.file}, {"line", arm.where.line}});
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.rows) {
    nlohmann::json runs = nlohmann::json::object();
    for (size_t p = 0; p < r.runs.size() && p < v.platforms.size(); ++p) runs[v.platforms[p]] = r.runs[p];
    rows.push_back({{"world_size", r.world_size}, {"full_nvlink", r.full_nvlink}, {"arms", r.arms}, {"runs", runs}});
  }
  return {{"name", v.name}, {"class", v.chain.class_name}, {"method", v.chain.method}, {"file", v.file},
          {"line", v.chain.where.line}, {"arms", arms}, {"cells", rows},
          {"fallback_line", v.chain.fallback.line}};
}

}  // namespace layergate::driver
