// Python frontend: gates written in small inline snippets, checked by
// evaluating the extracted formulas on concrete configurations.
#include "python/PythonFrontend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/Errors.h"
#include "python/Parse.h"
#include "target/Target.h"

using namespace layergate;
using model::ExprPtr;
using model::Op;
using model::Sort;

namespace {

// --- a tiny evaluator for the test --------------------------------------------
struct Cfg {
  std::int64_t ws = 2;
  bool nvl = false;
  std::int64_t nbytes = 4096;
  std::map<std::string, std::string> env;  // absent: unset
  std::map<std::string, bool> bools;       // probes/opaques by name (default true)
  std::map<std::string, std::int64_t> ints;  // other int variables (default 0)
  std::map<std::string, std::string> strs;   // string variables (default "")
};

struct Val {
  bool b = false;
  std::int64_t i = 0;
  std::string s;
};

std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Val ev(const ExprPtr& e, const Cfg& c) {
  Val v;
  auto A = [&](int k) { return ev(e->args[k], c); };
  switch (e->op) {
    case Op::BoolConst: v.b = e->b; return v;
    case Op::IntConst: v.i = e->i; return v;
    case Op::StrConst: v.s = e->s; return v;
    case Op::Var: {
      const std::string& n = e->s;
      if (n == "world_size") v.i = c.ws;
      else if (n == "full_nvlink") v.b = c.nvl;
      else if (n == "nbytes") v.i = c.nbytes;
      else if (n.rfind("env:", 0) == 0) {
        std::string name = model::envNameOf(n);
        auto it = c.env.find(name);
        if (e->sort == Sort::Bool) v.b = it != c.env.end();
        else v.s = it == c.env.end() ? "" : it->second;
      } else if (e->sort == Sort::Bool) {
        auto it = c.bools.find(n);
        v.b = it == c.bools.end() ? true : it->second;
      } else if (e->sort == Sort::Int) {
        auto it = c.ints.find(n);
        v.i = it == c.ints.end() ? 0 : it->second;
      } else if (e->sort == Sort::Str) {
        auto it = c.strs.find(n);
        v.s = it == c.strs.end() ? "" : it->second;
      }
      return v;
    }
    case Op::Not: v.b = !A(0).b; return v;
    case Op::And: v.b = A(0).b && A(1).b; return v;
    case Op::Or: v.b = A(0).b || A(1).b; return v;
    case Op::Implies: v.b = !A(0).b || A(1).b; return v;
    case Op::Ite: return A(0).b ? A(1) : A(2);
    case Op::Eq:
    case Op::Ne: {
      Val x = A(0), y = A(1);
      bool eq = e->args[0]->sort == Sort::Str ? x.s == y.s
                : e->args[0]->sort == Sort::Bool ? x.b == y.b
                                                   : x.i == y.i;
      v.b = e->op == Op::Eq ? eq : !eq;
      return v;
    }
    case Op::Lt: v.b = A(0).i < A(1).i; return v;
    case Op::Le: v.b = A(0).i <= A(1).i; return v;
    case Op::Gt: v.b = A(0).i > A(1).i; return v;
    case Op::Ge: v.b = A(0).i >= A(1).i; return v;
    case Op::Add: v.i = A(0).i + A(1).i; return v;
    case Op::Sub: v.i = A(0).i - A(1).i; return v;
    case Op::Mul: v.i = A(0).i * A(1).i; return v;
    case Op::Div: v.i = floorDiv(A(0).i, A(1).i); return v;
    case Op::Mod: {
      std::int64_t a = A(0).i, b = A(1).i;
      v.i = a - floorDiv(a, b) * b;
      return v;
    }
    case Op::Neg: v.i = -A(0).i; return v;
    case Op::StrToInt: {
      try {
        v.i = std::stoll(A(0).s);
      } catch (...) {
        v.i = 0;
      }
      return v;
    }
  }
  return v;
}

bool holds(const ExprPtr& e, const Cfg& c) { return ev(e, c).b; }
bool admits(const model::Gate& g, const Cfg& c) { return holds(g.predicate(), c); }

const target::PythonGateSpec& spec() {
  static target::Target t = target::loadTarget(std::string(LAYERGATE_SOURCE_DIR) + "/rules/targets/custom-allreduce.json");
  return t.python;
}

model::Gate extract(const std::string& src, const python::Limits& limits = {}) {
  return python::extractGate({"gate.py", src}, spec(), limits);
}

std::string indent(const std::string& block, int n) {
  std::istringstream in(block);
  std::string line, out;
  while (std::getline(in, line)) out += std::string(n, ' ') + line + "\n";
  return out;
}

// An SGLang-shaped gate; `check` is the constructor's NVLink test, `percall`
// the condition under which should_custom_ar returns the size test.
std::string gateSrc(const std::string& check = "if world_size > 2 and not full_nvlink:\n    return",
                    const std::string& percall = "self.world_size == 2 or self.full_nvlink",
                    const std::string& extra_module = "") {
  return R"(import os
import torch.distributed as dist
from sglang.srt.utils import is_hip, get_bool_env_var
from sglang.srt.distributed.device_communicators.custom_all_reduce_utils import (
    is_full_nvlink,
    is_weak_contiguous,
)

_is_hip = is_hip()
)" + extra_module + R"(

class CustomAllreduce:
    _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]
    _MAX_CAR_SIZE = 8192 * 1024
    if _is_hip:
        _MAX_CAR_SIZE = 2 * 8192 * 1024

    def __init__(self, group, device, max_size=_MAX_CAR_SIZE):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size == 1:
            return
        if world_size not in CustomAllreduce._SUPPORTED_WORLD_SIZES:
            return
        full_nvlink = is_full_nvlink(None, world_size)
)" + indent(check, 8) + R"(
        self.max_size = max_size
        self.world_size = world_size
        self.full_nvlink = full_nvlink
        self.disabled = False

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        inp_size = inp.numel() * inp.element_size()
        if inp_size % 16 != 0:
            return False
        if not is_weak_contiguous(inp):
            return False
        if not _is_hip:
            if )" + percall + R"(:
                return inp_size < self.max_size
            return False
        return False
)";
}

bool upstream(std::int64_t ws, bool nvl, std::int64_t nb) {
  bool ws_ok = ws == 2 || ws == 4 || ws == 6 || ws == 8;
  return ws_ok && (ws <= 2 || nvl) && nb % 16 == 0 && nb < 8 * 1024 * 1024;
}

const std::int64_t kSizes[] = {16, 40, 4096, 42 * 1024, 8 * 1024 * 1024 - 16, 8 * 1024 * 1024, 16 * 1024 * 1024};

void expectUpstreamTable(const model::Gate& g) {
  for (std::int64_t ws = 1; ws <= 8; ++ws)
    for (bool nvl : {false, true})
      for (std::int64_t nb : kSizes) {
        Cfg c;
        c.ws = ws, c.nvl = nvl, c.nbytes = nb;
        EXPECT_EQ(admits(g, c), upstream(ws, nvl, nb)) << "ws=" << ws << " nvl=" << nvl << " nbytes=" << nb;
      }
}

Cfg cfg(std::int64_t ws, bool nvl, std::int64_t nb) {
  Cfg c;
  c.ws = ws, c.nvl = nvl, c.nbytes = nb;
  return c;
}

bool hasNote(const model::Gate& g, const std::string& part) {
  for (const auto& n : g.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

bool hasOpaque(const model::Gate& g, const std::string& part) {
  for (const auto& o : g.opaques)
    if (o.name.find(part) != std::string::npos || o.text.find(part) != std::string::npos) return true;
  return false;
}

std::string errorOf(const std::string& src, const python::Limits& limits = {}) {
  try {
    extract(src, limits);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// --- the upstream shape ---------------------------------------------------------

TEST(PythonFrontend, UpstreamShapeAdmitsAndRejects) {
  auto g = extract(gateSrc());
  EXPECT_EQ(g.class_name, "CustomAllreduce");
  EXPECT_TRUE(g.has_per_call);
  EXPECT_TRUE(admits(g, cfg(2, false, 4096)));
  EXPECT_FALSE(admits(g, cfg(4, false, 4096)));
  EXPECT_FALSE(admits(g, cfg(4, false, 16)));
  EXPECT_FALSE(admits(g, cfg(2, false, 8 * 1024 * 1024)));
  EXPECT_FALSE(admits(g, cfg(2, false, 40)));
  EXPECT_TRUE(admits(g, cfg(8, true, 1024 * 1024)));
  EXPECT_FALSE(admits(g, cfg(3, true, 4096)));
  EXPECT_FALSE(admits(g, cfg(1, true, 4096)));
  expectUpstreamTable(g);
  // the weak-contiguity probe is a probe, not a silent true
  Cfg c = cfg(2, false, 4096);
  c.bools["weak_contiguous"] = false;
  EXPECT_FALSE(admits(g, c));
}

TEST(PythonFrontend, LocationsOfClassEnablingAndPerCall) {
  std::string src = gateSrc();
  auto g = extract(src);
  auto lineOf = [&](const std::string& needle) {
    auto pos = src.find(needle);
    return 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<long>(pos), '\n'));
  };
  EXPECT_EQ(g.class_loc.file, "gate.py");
  EXPECT_EQ(g.class_loc.line, lineOf("class CustomAllreduce"));
  EXPECT_EQ(g.class_loc.col, 1);
  EXPECT_EQ(g.enabling.line, lineOf("self.disabled = False"));
  EXPECT_EQ(g.enabling.col, 9);
  EXPECT_EQ(g.per_call_loc.line, lineOf("def should_custom_ar"));
}

TEST(PythonFrontend, RejectsCarryConditionTextAndLine) {
  std::string src = gateSrc();
  auto g = extract(src);
  ASSERT_EQ(g.rejects.size(), 3u);
  EXPECT_EQ(g.rejects[0].text, "world_size == 1");
  EXPECT_EQ(g.rejects[1].text, "world_size not in CustomAllreduce._SUPPORTED_WORLD_SIZES");
  EXPECT_EQ(g.rejects[2].text, "world_size > 2 and not full_nvlink");
  auto pos = src.find("if world_size > 2 and not full_nvlink");
  int line = 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<long>(pos), '\n'));
  EXPECT_EQ(g.rejects[2].where.line, line);
  EXPECT_TRUE(holds(g.rejects[2].condition, cfg(4, false, 0)));
  EXPECT_FALSE(holds(g.rejects[2].condition, cfg(4, true, 0)));
  EXPECT_FALSE(holds(g.rejects[2].condition, cfg(2, false, 0)));
}

TEST(PythonFrontend, PerCallAdmitsPointAtTruthyReturn) {
  auto g = extract(gateSrc());
  ASSERT_EQ(g.admits.size(), 1u);
  EXPECT_EQ(g.admits[0].text, "return inp_size < self.max_size");
  EXPECT_TRUE(holds(g.admits[0].condition, cfg(2, false, 4096)));
  EXPECT_FALSE(holds(g.admits[0].condition, cfg(4, false, 4096)));
}

TEST(PythonFrontend, MaxSizeDefaultIsNotedAndUsed) {
  auto g = extract(gateSrc());
  EXPECT_TRUE(hasNote(g, "max_size taken at its default"));
  EXPECT_TRUE(hasNote(g, "8388608"));
}

// --- equivalent spellings give the same truth table ---------------------------------

TEST(PythonFrontend, DeMorganFormSameTable) {
  expectUpstreamTable(extract(gateSrc("if not (world_size <= 2 or full_nvlink):\n    return",
                                      "not (self.world_size != 2 and not self.full_nvlink)")));
}

TEST(PythonFrontend, NestedIfFormSameTable) {
  expectUpstreamTable(extract(gateSrc("if world_size > 2:\n    if not full_nvlink:\n        return")));
}

TEST(PythonFrontend, FlagVariableFormSameTable) {
  expectUpstreamTable(extract(gateSrc(
      "ok = True\nif world_size > 2 and not full_nvlink:\n    ok = False\nif not ok:\n    return")));
}

TEST(PythonFrontend, ElifChainFormSameTable) {
  expectUpstreamTable(extract(gateSrc("if world_size == 2:\n    pass\nelif full_nvlink:\n    pass\nelse:\n    return")));
}

TEST(PythonFrontend, ChainedComparisonAndConditionalExpression) {
  expectUpstreamTable(extract(gateSrc("big = True if 2 < world_size <= 8 else False\nif big and full_nvlink is False:\n    return",
                                      "self.world_size in (2,) or self.full_nvlink")));
}

// --- environment variables ------------------------------------------------------

TEST(PythonFrontend, EnvOpenedGateAdmitsPcieOnlyWithOne) {
  auto g = extract(gateSrc(
      "if world_size > 2 and not full_nvlink and os.getenv(\"SGLANG_FORCE_CUSTOM_AR_PCIE\") != \"1\":\n    return",
      "self.world_size == 2 or self.full_nvlink or os.environ.get(\"SGLANG_FORCE_CUSTOM_AR_PCIE\", \"0\") == \"1\""));
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["SGLANG_FORCE_CUSTOM_AR_PCIE"] = "1";
  EXPECT_TRUE(admits(g, c));
  c.env["SGLANG_FORCE_CUSTOM_AR_PCIE"] = "0";
  EXPECT_FALSE(admits(g, c));
  c.env["SGLANG_FORCE_CUSTOM_AR_PCIE"] = "";
  EXPECT_FALSE(admits(g, c));
  ASSERT_EQ(g.env_reads.size(), 1u);
  EXPECT_EQ(g.env_reads[0], "SGLANG_FORCE_CUSTOM_AR_PCIE");
  ASSERT_EQ(g.env_read_locs.size(), 1u);
  EXPECT_GT(g.env_read_locs[0].line, 20);
}

TEST(PythonFrontend, OnlyConstructorOpenedStillBlockedPerCall) {
  auto g = extract(gateSrc(
      "if world_size > 2 and not full_nvlink and os.getenv(\"FORCE\") != \"1\":\n    return"));
  Cfg c = cfg(4, false, 4096);
  c.env["FORCE"] = "1";
  EXPECT_TRUE(holds(g.admit, c));
  EXPECT_FALSE(admits(g, c));
}

TEST(PythonFrontend, BoolEnvHelperAcceptsTrueSpellings) {
  auto g = extract(gateSrc(
      "if world_size > 2 and not full_nvlink and not get_bool_env_var(\"FORCE\"):\n    return",
      "self.world_size == 2 or self.full_nvlink or get_bool_env_var(\"FORCE\")"));
  Cfg c = cfg(6, false, 4096);
  EXPECT_FALSE(admits(g, c));
  for (const char* v : {"true", "1", "True", "TRUE"}) {
    c.env["FORCE"] = v;
    EXPECT_TRUE(admits(g, c)) << v;
  }
  for (const char* v : {"yes", "0", "false", ""}) {
    c.env["FORCE"] = v;
    EXPECT_FALSE(admits(g, c)) << v;
  }
}

TEST(PythonFrontend, BoolEnvHelperDefaultTrueAdmitsWhenUnset) {
  auto g = extract(gateSrc("if world_size > 2 and not full_nvlink and not get_bool_env_var(\"FORCE\", \"true\"):\n    return",
                           "True"));
  EXPECT_TRUE(holds(g.admit, cfg(4, false, 4096)));
  Cfg c = cfg(4, false, 4096);
  c.env["FORCE"] = "0";
  EXPECT_FALSE(holds(g.admit, c));
}

TEST(PythonFrontend, EnvironSubscriptUnsetRaises) {
  auto g = extract(gateSrc("if os.environ[\"CAR_MODE\"] == \"off\":\n    return"));
  Cfg c = cfg(2, false, 4096);
  EXPECT_FALSE(holds(g.admit, c));  // KeyError: the constructor raises
  c.env["CAR_MODE"] = "on";
  EXPECT_TRUE(holds(g.admit, c));
  c.env["CAR_MODE"] = "off";
  EXPECT_FALSE(holds(g.admit, c));
  // guarded by a membership test, the lookup no longer raises
  auto h = extract(gateSrc("if \"CAR_MODE\" in os.environ and os.environ[\"CAR_MODE\"] == \"off\":\n    return"));
  EXPECT_TRUE(holds(h.admit, cfg(2, false, 4096)));
}

TEST(PythonFrontend, EnvModuleFlagsAndLoweredComparison) {
  auto g = extract(gateSrc("if world_size > 2 and not full_nvlink and not envs.VLLM_FORCE_PCIE.get():\n    return",
                           "self.world_size == 2 or self.full_nvlink or envs.VLLM_FORCE_PCIE or "
                           "os.getenv(\"OTHER\", \"\").lower() == \"true\"",
                           "import vllm.envs as envs\n"));
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["VLLM_FORCE_PCIE"] = "1";
  EXPECT_TRUE(admits(g, c));
  EXPECT_TRUE(hasNote(g, "envs.VLLM_FORCE_PCIE read as a boolean flag"));
  Cfg d = cfg(2, false, 4096);
  EXPECT_TRUE(admits(g, d));
  ASSERT_EQ(g.env_reads.size(), 2u);
  EXPECT_EQ(g.env_reads[1], "OTHER");
}

TEST(PythonFrontend, EnvIntRaisesSizeLimit) {
  auto g = extract(gateSrc("self.max_size = int(os.getenv(\"CAR_MAX_BYTES\", \"8388608\"))\nmax_size = self.max_size"));
  EXPECT_FALSE(admits(g, cfg(2, false, 16 * 1024 * 1024)));
  Cfg c = cfg(2, false, 16 * 1024 * 1024);
  c.env["CAR_MAX_BYTES"] = "33554432";
  EXPECT_TRUE(admits(g, c));
}

// --- names, constants, probes, platform flags ---------------------------------------

TEST(PythonFrontend, ClassConstantsThroughSelfClsAndBareNames) {
  std::string src = gateSrc("if world_size > 2 and not full_nvlink:\n    return\nif self._MAX_CAR_SIZE < max_size:\n    return");
  auto g = extract(src);
  expectUpstreamTable(g);
  EXPECT_TRUE(g.opaques.empty()) << g.opaques.front().name;
}

TEST(PythonFrontend, PlatformFlagsFixTheCudaBranch) {
  // _MAX_CAR_SIZE under `if _is_hip:` is not taken; current_platform.is_rocm() is false.
  auto g = extract(gateSrc("if world_size > 2 and not full_nvlink:\n    return\nif current_platform.is_rocm():\n    return"));
  expectUpstreamTable(g);
  EXPECT_TRUE(g.opaques.empty());
}

// A branch the target's platform closes (a HIP branch on a CUDA target) that
// sets the probe's name to True: reported for that platform, in the shapes
// ports write it. A branch an env var decides is not one: the walk enters it
// and the flag's value carries the env var.
TEST(PythonFrontend, PlatformBranchesThatForceTheFlag) {
  auto forced = [](const std::string& check) {
    std::vector<std::string> out;
    for (const auto& p : extract(gateSrc(check)).platform_forced) out.push_back(p.text);
    return out;
  };
  const std::string nv = "if world_size > 2 and not full_nvlink:\n    return";
  using V = std::vector<std::string>;
  EXPECT_EQ(forced("if torch.version.hip is not None:\n    full_nvlink = True\n" + nv),
            V{"`full_nvlink = True` under `torch.version.hip is not None`"});
  EXPECT_EQ(forced("if torch.version.cuda is None:\n    full_nvlink = True\n" + nv),
            V{"`full_nvlink = True` under `torch.version.cuda is None`"});
  EXPECT_EQ(forced("if not _is_cuda:\n    full_nvlink = True\n" + nv), V{"`full_nvlink = True` under `not _is_cuda`"});
  EXPECT_EQ(forced("if torch.version.cuda:\n    pass\nelse:\n    full_nvlink = True\n" + nv),
            V{"`full_nvlink = True` under the `else` of `torch.version.cuda`"});
  // the probe's answer copied to the attribute, the attribute forced
  EXPECT_EQ(forced("self.full_nvlink = full_nvlink\nif is_hip():\n    self.full_nvlink = True\n" + nv),
            V{"`self.full_nvlink = True` under `is_hip()`"});
  // open on the target, or decided by something else: not a platform branch
  EXPECT_EQ(forced("if torch.version.hip is None:\n    full_nvlink = True\n" + nv).size(), 0u);
  EXPECT_EQ(forced("if _is_hip or os.environ.get(\"PORT\") == \"1\":\n    full_nvlink = True\n" + nv).size(), 0u);
  EXPECT_EQ(forced("if _is_cuda:\n    pass\nelif _is_hip:\n    pass\nelse:\n    full_nvlink = True\n" + nv),
            V{"`full_nvlink = True` under the `else` of `_is_cuda or _is_hip`"});
}

TEST(PythonFrontend, AliasedProbeImport) {
  auto g = extract(gateSrc("nv = nvl_check(None, world_size)\nif world_size > 2 and not nv:\n    return",
                           "self.world_size == 2 or self.full_nvlink",
                           "from helpers import is_full_nvlink as nvl_check\n"));
  expectUpstreamTable(g);
}

TEST(PythonFrontend, OpaqueSymbolsAreRecordedNotSilentlyTrue) {
  std::string src = gateSrc("if world_size > 2 and not full_nvlink:\n    return\nif not torch.cuda.is_available():\n    return");
  auto g = extract(src);
  ASSERT_FALSE(g.opaques.empty());
  bool found = false;
  for (const auto& o : g.opaques)
    if (o.text == "torch.cuda.is_available()") {
      found = true;
      EXPECT_GT(o.where.line, 0);
      EXPECT_EQ(o.where.file, "gate.py");
    }
  EXPECT_TRUE(found);
  bool has_var = false;
  for (const auto& v : model::varsOf(g.admit))
    if (v.kind == model::VarKind::Opaque) has_var = true;
  EXPECT_TRUE(has_var);
  // the admission depends on it: neither constant true nor constant false
  Cfg c = cfg(2, false, 4096);
  for (const auto& o : g.opaques) c.bools[o.name] = false;
  bool a = holds(g.admit, c);
  for (const auto& o : g.opaques) c.bools[o.name] = true;
  EXPECT_NE(a, holds(g.admit, c));
}

// --- interprocedural ----------------------------------------------------------------

TEST(PythonFrontend, HelperMethodReturningNoneDisables) {
  std::string src = gateSrc("if self._nvlink_ok(world_size, full_nvlink) is None:\n    return");
  src += R"(
    def _nvlink_ok(self, ws, nvl):
        if ws > 2 and not nvl:
            return None
        return True
)";
  expectUpstreamTable(extract(src));
}

TEST(PythonFrontend, ProbeWrapperReadingEnvContributes) {
  auto g = extract(gateSrc("full_nvlink = _is_full_nvlink(None, world_size)\nif world_size > 2 and not full_nvlink:\n    return",
                           "self.world_size == 2 or self.full_nvlink",
                           "\ndef _is_full_nvlink(ids, ws):\n    if os.getenv(\"SPOOF_NVLINK\") == \"1\" and ws <= 4:\n"
                           "        return True\n    return is_full_nvlink(ids, ws)\n"));
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["SPOOF_NVLINK"] = "1";
  EXPECT_TRUE(admits(g, c));
  c.ws = 8;
  EXPECT_FALSE(admits(g, c));
}

TEST(PythonFrontend, ProbeWrapperWithoutEnvUsesTheProbe) {
  auto g = extract(gateSrc("if not _can_p2p(0, world_size):\n    return\nif world_size > 2 and not full_nvlink:\n    return",
                           "self.world_size == 2 or self.full_nvlink",
                           "\ndef _can_p2p(rank, world_size):\n    for peer in range(world_size):\n"
                           "        if peer != rank and not gpu_p2p_access_check(rank, peer):\n            return False\n"
                           "    return True\n"));
  EXPECT_TRUE(g.opaques.empty());
  Cfg c = cfg(2, false, 4096);
  EXPECT_TRUE(admits(g, c));
  c.bools["p2p_ok"] = false;
  EXPECT_FALSE(admits(g, c));
}

TEST(PythonFrontend, AttributesAfterEnablingAreSnapshot) {
  // vLLM sets the flag attribute after `self.disabled = False`.
  std::string src = R"(
from vllm.platforms import current_platform
import torch.distributed as dist

class CustomAllreduce:
    _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]

    def __init__(self, group, device, max_size=8192 * 1024) -> None:
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size == 1:
            return
        if world_size not in CustomAllreduce._SUPPORTED_WORLD_SIZES:
            return
        fully_connected = current_platform.is_fully_connected([])
        if world_size > 2 and not fully_connected:
            return
        self.disabled = False
        self.max_size = max_size
        self.world_size = world_size
        self.fully_connected = fully_connected

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        inp_size = inp.numel() * inp.element_size()
        if inp_size % 16 != 0:
            return False
        if not is_weak_contiguous(inp):
            return False
        if self.world_size == 2 or self.fully_connected:
            return inp_size < self.max_size
        return False
)";
  expectUpstreamTable(extract(src));
}

TEST(PythonFrontend, ModuleTryAndLoopsBecomeNamedOpaques) {
  std::string src = gateSrc("for i in peers(group):\n    if i > 100:\n        return\nif world_size > 2 and not full_nvlink:\n    return",
                            "self.world_size == 2 or self.full_nvlink",
                            "try:\n    import sgl_kernel\n    custom_ar = True\nexcept ImportError:\n    custom_ar = False\n");
  src.replace(src.find("        self.disabled = True\n"), 0, "");
  std::string withCheck = src;
  withCheck.replace(withCheck.find("        world_size = dist.get_world_size"), 0, "        if not custom_ar:\n            return\n");
  auto g = extract(withCheck);
  EXPECT_TRUE(hasOpaque(g, "try@L"));
  EXPECT_TRUE(hasOpaque(g, "loop@L"));
  Cfg c = cfg(2, false, 4096);
  EXPECT_TRUE(admits(g, c));
  for (const auto& o : g.opaques)
    if (o.name.find("try@") == 0) c.bools[o.name] = false;
  EXPECT_FALSE(admits(g, c));
}

// A loop over range(n) runs exactly when n > 0: it is no unknown (an
// unknown "iterates" let a counterexample say the loop over the world size
// does not run beside world_size=4).
TEST(PythonFrontend, ALoopOverARangeRunsWhenTheRangeIsNotEmpty) {
  std::string src = gateSrc("seen = 0\nfor i in range(world_size):\n    seen = 1\nif seen == 0:\n    return\nif world_size > 2 and not full_nvlink:\n    return");
  auto g = extract(src);
  EXPECT_FALSE(hasOpaque(g, "loop@L"));
  EXPECT_TRUE(admits(g, cfg(2, false, 4096)));
}

TEST(PythonFrontend, AListsLengthFollowsRepetitionSlicesAndAppendsOncePerIteration) {
  // [None] * n has n elements, a slice of it its clipped bounds' difference,
  // and a loop that appends once on every path one per iteration: len() of
  // the result is the world size here, so the gate reads as the upstream one.
  std::string src = gateSrc(
      "slots = [None] * world_size\nhalf = slots[0:world_size]\nout = []\nfor i, s in enumerate(half):\n"
      "    if i == 0:\n        out.append(1)\n    else:\n        out.append(2)\nn = len(out)\n"
      "if n > 2 and not full_nvlink:\n    return");
  auto g = extract(src);
  expectUpstreamTable(g);
  // a loop that may skip the append leaves the length unknown
  auto h = extract(gateSrc("out = []\nfor i in range(world_size):\n    if i == 0:\n        out.append(1)\n"
                           "if len(out) > 2 and not full_nvlink:\n    return"));
  EXPECT_TRUE(hasOpaque(h, "len(out)"));
}

TEST(PythonFrontend, TupleAssignmentAndAugmentedAssignment) {
  auto g = extract(gateSrc("a, b = foo()\nlimit = 1\nlimit += 1\nif world_size > limit and not full_nvlink:\n    return\nif a:\n    pass"));
  expectUpstreamTable(g);
}

TEST(PythonFrontend, MissingPerCallMethodIsNoted) {
  std::string src = gateSrc();
  auto pos = src.find("def should_custom_ar");
  src.replace(pos, std::strlen("def should_custom_ar"), "def other_method");
  auto g = extract(src);
  EXPECT_FALSE(g.has_per_call);
  EXPECT_TRUE(model::isTrue(g.per_call));
  EXPECT_TRUE(hasNote(g, "no per-call method"));
  EXPECT_TRUE(holds(g.admit, cfg(2, false, 0)));
}

TEST(PythonFrontend, TwoClassesLastOneWins) {
  std::string src = gateSrc() + R"(

class CustomAllreduce:
    def __init__(self, group, device):
        self.disabled = True
        if dist.get_world_size(group=group) != 8:
            return
        self.disabled = False
)";
  auto g = extract(src);
  EXPECT_TRUE(hasNote(g, "Python binds the last one"));
  EXPECT_TRUE(admits(g, cfg(8, false, 40)));
  EXPECT_FALSE(admits(g, cfg(2, false, 4096)));
  EXPECT_FALSE(g.has_per_call);
}

TEST(PythonFrontend, DeferredEnablingThroughLaterMethod) {
  std::string src = R"(
import torch.distributed as dist
from vllm.platforms import current_platform

class CustomAllreduce:
    def __init__(self, group, device, max_size=8192 * 1024):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size not in [2, 4, 6, 8]:
            return
        fully_connected = current_platform.is_fully_connected([])
        if world_size > 2 and not fully_connected:
            return
        self.world_size = world_size
        self.fully_connected = fully_connected
        self._pending_max_size = max_size
        self._p2p_pending = True

    def _complete_init(self):
        self.disabled = False
        self.max_size = self._pending_max_size

    def finalize_p2p(self):
        if not self._p2p_pending:
            return
        self._p2p_pending = False
        if not _can_p2p(0, self.world_size):
            return
        self._complete_init()

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        inp_size = inp.numel() * inp.element_size()
        if inp_size % 16 != 0:
            return False
        if self.world_size == 2 or self.fully_connected:
            return inp_size < self.max_size
        return False
)";
  auto g = extract(src);
  EXPECT_TRUE(hasNote(g, "finalize_p2p() runs once after the constructor"));
  expectUpstreamTable(g);
  Cfg c = cfg(2, false, 4096);
  c.bools["p2p_ok"] = false;
  EXPECT_FALSE(admits(g, c));
}

// --- bad input -------------------------------------------------------------------------

TEST(PythonFrontend, BadInputsThrowWithPath) {
  EXPECT_EQ(errorOf(std::string("abc\0def", 7)), "gate.py: binary file, not Python source");
  EXPECT_EQ(errorOf("x = '\xff\xfe'\n").rfind("gate.py:1: not UTF-8", 0), 0u);
  python::Limits small;
  small.max_bytes = 10;
  EXPECT_EQ(errorOf(gateSrc(), small).rfind("gate.py: file too large", 0), 0u);
  EXPECT_EQ(errorOf("def f(:\n  pass\n").rfind("gate.py:1:", 0), 0u);
  EXPECT_NE(errorOf("def f(:\n  pass\n").find("syntax error: not valid Python 3"), std::string::npos);
  std::string py2 = errorOf("import os\nprint \"hello\"\n");
  EXPECT_EQ(py2.rfind("gate.py:2:1: syntax error: not valid Python 3", 0), 0u) << py2;
  EXPECT_EQ(errorOf("class Other:\n    pass\n"),
            "gate.py: no class CustomAllreduce (looked for: CustomAllreduce, CustomAllReduce, FastAllreduce)");
  std::string noinit = errorOf("class CustomAllreduce:\n    def should_custom_ar(self, inp):\n        return True\n");
  EXPECT_NE(noinit.find("gate.py:1:1:"), std::string::npos) << noinit;
  EXPECT_NE(noinit.find("has no __init__"), std::string::npos);
  std::string layout = errorOf("class CustomAllreduce:\n    def __init__(self, group):\n        self.disabled = True\n");
  EXPECT_NE(layout.find("unknown layout"), std::string::npos) << layout;
  EXPECT_EQ(layout.rfind("gate.py:2:", 0), 0u) << layout;
}

TEST(PythonFrontend, DeepNestingThrowsCleanly) {
  // 5000 nested ifs (one space of indentation per level)
  std::string src = "class CustomAllreduce:\n def __init__(self):\n  self.disabled = False\n";
  for (int i = 0; i < 5000; ++i) src += std::string(static_cast<std::size_t>(i) + 2, ' ') + "if x:\n";
  src += std::string(5002, ' ') + "pass\n";
  python::Limits big;
  big.max_bytes = 64u << 20;
  std::string e = errorOf(src, big);
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(e.rfind("gate.py:", 0), 0u) << e.substr(0, 200);
  // 5000 nested parentheses
  std::string parens = "class CustomAllreduce:\n def __init__(self):\n  x = " + std::string(5000, '(') + "1" +
                       std::string(5000, ')') + "\n  self.disabled = False\n";
  e = errorOf(parens);
  EXPECT_NE(e.find("nesting deeper than 200"), std::string::npos) << e.substr(0, 200);
}

TEST(PythonFrontend, LongAndChainThrowsCleanlyShortOneWorks) {
  auto chain = [](int n) {
    std::string c = "world_size > 0";
    for (int i = 1; i < n; ++i) c += " and world_size > 0";
    return c;
  };
  std::string big = "class CustomAllreduce:\n def __init__(self, group):\n  world_size = dist.get_world_size(group)\n  if " +
                    chain(100000) + ":\n   self.disabled = False\n";
  std::string e = errorOf(big);
  EXPECT_NE(e.find("expression chain"), std::string::npos) << e.substr(0, 200);
  std::string ok = "import torch.distributed as dist\nclass CustomAllreduce:\n def __init__(self, group):\n  world_size = dist.get_world_size(group)\n  if " +
                   chain(2000) + ":\n   self.disabled = False\n";
  auto g = extract(ok);
  EXPECT_TRUE(holds(g.admit, cfg(3, false, 0)));
  EXPECT_FALSE(holds(g.admit, cfg(0, false, 0)));
}

// --- several files: imports, monkeypatches, trace facts (issue 3) ----------------------

namespace {

int lineIn(const std::string& src, const std::string& needle) {
  auto pos = src.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<long>(pos), '\n'));
}

const model::NativeCall* nativeCall(const model::Gate& g, const std::string& name) {
  for (const auto& c : g.native_calls)
    if (c.name == name) return &c;
  return nullptr;
}

std::string hopsOf(const std::vector<model::Hop>& hs) {
  std::string out;
  for (const auto& h : hs)
    out += (out.empty() ? "" : ", ") + h.hop + "@" + h.where.file + ":" + std::to_string(h.where.line);
  return out;
}

// An SGLang-shaped gate that imports its probe and its ops from other files.
const char* kSglGate = R"(import os
import torch
import torch.distributed as dist
from sgl_kernel import allreduce as ops
from sglang.srt.distributed.device_communicators.custom_all_reduce_utils import (
    is_full_nvlink,
    is_weak_contiguous,
)


class CustomAllreduce:
    _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]

    def __init__(self, group, device, max_size=8192 * 1024):
        self.disabled = True
        rank = dist.get_rank(group=group)
        world_size = dist.get_world_size(group=group)
        if world_size not in CustomAllreduce._SUPPORTED_WORLD_SIZES:
            return
        full_nvlink = is_full_nvlink(None, world_size)
        if world_size > 2 and not full_nvlink:
            return
        self.max_size = max_size
        self.world_size = world_size
        self.full_nvlink = full_nvlink
        self.rank_data = torch.empty(max_size, dtype=torch.uint8, device=device)
        self._ptr = ops.init_custom_ar(self.meta_ptrs, self.rank_data, rank, self.full_nvlink)
        ops.register_buffer(self._ptr, buffers=self.buffer_ptrs)
        self.disabled = False

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        inp_size = inp.numel() * inp.element_size()
        if inp_size % 16 != 0:
            return False
        if not is_weak_contiguous(inp):
            return False
        if self.world_size == 2 or self.full_nvlink:
            return inp_size < self.max_size
        return False
)";

const char* kSglUtils = R"(import os

try:
    import pynvml
except ImportError:
    pynvml = None

_UNRELATED = os.environ.get("SOME_UNRELATED_SETTING", "x")


def is_full_nvlink(physical_device_ids, world_size):
    if os.environ.get("SGLANG_TREAT_PCIE_AS_NVLINK", "0") == "1":
        return True
    if pynvml is None:
        return False
    pynvml.nvmlInit()
    try:
        for i in physical_device_ids:
            if pynvml.nvmlDeviceGetP2PStatus(i, 0, 0) != 0:
                return False
        return True
    finally:
        pynvml.nvmlShutdown()


def is_weak_contiguous(inp):
    return inp.is_contiguous()
)";

const char* kSglKernelWrapper = R"(from typing import List

import torch


def init_custom_ar(ipc_tensors: List[int], rank_data: torch.Tensor, rank: int, full_nvlink: bool) -> int:
    return torch.ops.sgl_kernel.init_custom_ar.default(ipc_tensors, rank_data, rank, full_nvlink)


def register_buffer(fa: int, buffers: List[int]) -> None:
    torch.ops.sgl_kernel.register_buffer.default(fa, buffers)


def meta_size() -> int:
    return torch.ops.sgl_kernel.meta_size.default()


def passthrough(*args):
    return torch.ops.sgl_kernel.passthrough(*args)
)";

const std::string kGatePath = "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py";
const std::string kUtilsPath = "python/sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py";
const std::string kWrapperPath = "sgl-kernel/python/sgl_kernel/allreduce.py";

model::Gate extractFiles(const std::vector<python::SourceFile>& files) { return python::extractGate(files, spec()); }

}  // namespace

TEST(PythonFrontendFiles, ImportedHelperWithEnvSpoofIsInlined) {
  auto g = extractFiles({{kWrapperPath, kSglKernelWrapper}, {kGatePath, kSglGate}, {kUtilsPath, kSglUtils}});
  EXPECT_EQ(g.class_loc.file, kGatePath);
  ASSERT_EQ(g.files.size(), 3u);
  EXPECT_EQ(g.files[1], kGatePath);
  // the spoof opens PCIe groups; without it the probe is the NVLink variable
  expectUpstreamTable(g);
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["SGLANG_TREAT_PCIE_AS_NVLINK"] = "1";
  EXPECT_TRUE(admits(g, c));
  // the NVML code behind the spoof stands for the probe: no opaque from it,
  // and the helper's unrelated env read does not join the gate
  for (const auto& o : g.opaques) EXPECT_EQ(o.text.find("pynvml"), std::string::npos) << o.text;
  EXPECT_EQ(std::count(g.env_reads.begin(), g.env_reads.end(), "SOME_UNRELATED_SETTING"), 0);
  EXPECT_EQ(std::count(g.env_reads.begin(), g.env_reads.end(), "SGLANG_TREAT_PCIE_AS_NVLINK"), 1);

  // the flag's value at the op call, and where it came from
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->callee, "ops.init_custom_ar");
  EXPECT_EQ(init->where.file, kGatePath);
  EXPECT_EQ(init->where.line, lineIn(kSglGate, "self._ptr = ops.init_custom_ar"));
  ASSERT_EQ(init->args.size(), 4u);
  const auto& flag = init->args[3];
  EXPECT_EQ(flag.position, 3);
  EXPECT_EQ(flag.text, "self.full_nvlink");
  ASSERT_TRUE(flag.value);
  Cfg pcie = cfg(4, false, 0);
  EXPECT_FALSE(holds(flag.value, pcie));
  pcie.env["SGLANG_TREAT_PCIE_AS_NVLINK"] = "1";
  EXPECT_TRUE(holds(flag.value, pcie));
  EXPECT_TRUE(holds(flag.value, cfg(4, true, 0)));
  ASSERT_EQ(flag.origin.size(), 4u) << hopsOf(flag.origin);
  EXPECT_EQ(flag.origin[0].hop, "probe");
  EXPECT_EQ(flag.origin[0].where.file, kGatePath);
  EXPECT_EQ(flag.origin[0].where.line, lineIn(kSglGate, "full_nvlink = is_full_nvlink("));
  EXPECT_EQ(flag.origin[1].hop, "env override");
  EXPECT_EQ(flag.origin[1].where.file, kUtilsPath);
  EXPECT_EQ(flag.origin[1].where.line, lineIn(kSglUtils, "if os.environ.get(\"SGLANG_TREAT_PCIE_AS_NVLINK\""));
  EXPECT_EQ(flag.origin[1].where.note, "if os.environ.get(\"SGLANG_TREAT_PCIE_AS_NVLINK\", \"0\") == \"1\"");
  EXPECT_EQ(flag.origin[2].hop, "local");
  EXPECT_EQ(flag.origin[2].where.line, lineIn(kSglGate, "full_nvlink = is_full_nvlink("));
  EXPECT_EQ(flag.origin[3].hop, "attribute");
  EXPECT_EQ(flag.origin[3].where.line, lineIn(kSglGate, "self.full_nvlink = full_nvlink"));
  // reached only past the constructor's checks
  EXPECT_TRUE(holds(init->reached, cfg(2, false, 0)));
  EXPECT_FALSE(holds(init->reached, cfg(3, true, 0)));
  EXPECT_FALSE(holds(init->reached, cfg(4, false, 0)));
}

TEST(PythonFrontendFiles, NativeCallArgumentsPositionsKeywordsAndOrigins) {
  // the same gate with the ops given as external (no wrapper file)
  auto g = extractFiles({{kGatePath, kSglGate}, {kUtilsPath, kSglUtils}});
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  ASSERT_EQ(init->args.size(), 4u);
  const char* texts[] = {"self.meta_ptrs", "self.rank_data", "rank", "self.full_nvlink"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(init->args[i].position, i);
    EXPECT_EQ(init->args[i].text, texts[i]);
    EXPECT_TRUE(init->args[i].keyword.empty());
    EXPECT_EQ(init->args[i].where.line, lineIn(kSglGate, "self._ptr = ops.init_custom_ar"));
  }
  EXPECT_EQ(init->args[3].where.col, 1 + static_cast<int>(std::string("        self._ptr = ops.init_custom_ar(self.meta_ptrs, self.rank_data, rank, ").size()));
  EXPECT_FALSE(init->args[0].value);  // a list of pointers: not a flag
  ASSERT_TRUE(init->args[2].value);   // the rank probe
  EXPECT_EQ(init->args[2].value->str(), "rank");
  ASSERT_FALSE(init->args[2].origin.empty());
  EXPECT_EQ(init->args[2].origin[0].hop, "probe");
  // keyword argument
  const model::NativeCall* reg = nativeCall(g, "register_buffer");
  ASSERT_NE(reg, nullptr);
  ASSERT_EQ(reg->args.size(), 2u);
  EXPECT_EQ(reg->args[0].position, 0);
  EXPECT_EQ(reg->args[1].position, -1);
  EXPECT_EQ(reg->args[1].keyword, "buffers");
  EXPECT_EQ(reg->args[1].text, "self.buffer_ptrs");
  // calls of the per-call predicate are not native calls; torch.empty is one
  EXPECT_EQ(nativeCall(g, "is_contiguous"), nullptr);
  EXPECT_NE(nativeCall(g, "empty"), nullptr);
  EXPECT_EQ(nativeCall(g, "get_rank"), nullptr);  // a probe
}

// A probe helper that, under an env var, answers with another check (a
// peer-to-peer test, not interpreted) instead of the NVLink query: the flag
// C++ gets is that check's answer, as the same opaque bool the gate's NVLink
// test reads, not "unknown" (which left C++ on the physical link and made
// the PCIe groups it admits look like a possible gap).
TEST(PythonFrontendFiles, ProbeHelperAnsweringAnotherCheckUnderAnEnvVar) {
  std::string utils = kSglUtils;
  const std::string from = "        return True\n    if pynvml is None:";
  utils.replace(utils.find(from), from.size(), "        return _p2p_all(physical_device_ids)\n    if pynvml is None:");
  auto g = extractFiles({{kGatePath, kSglGate}, {kUtilsPath, utils}});
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  const auto& flag = init->args[3];
  ASSERT_TRUE(flag.value) << "the flag's value is lost";
  const std::string p2p = "_p2p_all(physical_device_ids)";
  ASSERT_TRUE(hasOpaque(g, p2p));
  Cfg c = cfg(4, false, 0);
  c.bools[p2p] = true;
  EXPECT_FALSE(holds(flag.value, c));  // unset: the NVLink probe
  c.env["SGLANG_TREAT_PCIE_AS_NVLINK"] = "1";
  EXPECT_TRUE(holds(flag.value, c));  // set: the p2p check, which PCIe GPUs pass
  c.bools[p2p] = false;
  EXPECT_FALSE(holds(flag.value, c));
  // the gate admits the PCIe group exactly when C++ is told it is linked
  Cfg a = cfg(4, false, 4096);
  a.env["SGLANG_TREAT_PCIE_AS_NVLINK"] = "1";
  a.bools[p2p] = true;
  EXPECT_TRUE(admits(g, a));
  a.bools[p2p] = false;
  EXPECT_FALSE(admits(g, a));
}

TEST(PythonFrontendFiles, LiteralTrueAndEnvOverrideAtTheCallSite) {
  std::string gate = kSglGate;
  auto put = [&](const std::string& from, const std::string& to) { gate.replace(gate.find(from), from.size(), to); };
  put("        self.full_nvlink = full_nvlink\n",
      "        if os.environ.get(\"FORCE_NVLINK\") == \"1\":\n            full_nvlink = True\n"
      "        self.full_nvlink = full_nvlink\n");
  put("ops.init_custom_ar(self.meta_ptrs, self.rank_data, rank, self.full_nvlink)",
      "ops.init_custom_ar(self.meta_ptrs, self.rank_data, rank, True)\n"
      "        ops.other_op(self.full_nvlink)");
  auto g = extractFiles({{kGatePath, gate}, {kUtilsPath, kSglUtils}});
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  ASSERT_TRUE(init->args[3].value);
  EXPECT_TRUE(model::isTrue(init->args[3].value));
  EXPECT_EQ(init->args[3].text, "True");
  const model::NativeCall* other = nativeCall(g, "other_op");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->args[0].value);
  Cfg c = cfg(2, false, 0);
  EXPECT_FALSE(holds(other->args[0].value, c));
  c.env["FORCE_NVLINK"] = "1";
  EXPECT_TRUE(holds(other->args[0].value, c));
  std::string hs = hopsOf(other->args[0].origin);
  // probe, env override (the helper's spoof), local, env override (the `if`
  // that reads the env; the literal's own assignment is folded in), attribute
  int probe_line = lineIn(gate, "full_nvlink = is_full_nvlink(");
  EXPECT_EQ(hs, "probe@" + kGatePath + ":" + std::to_string(probe_line) + ", env override@" + kUtilsPath + ":" +
                    std::to_string(lineIn(kSglUtils, "if os.environ.get(")) + ", local@" + kGatePath + ":" +
                    std::to_string(probe_line) + ", env override@" + kGatePath + ":" +
                    std::to_string(lineIn(gate, "if os.environ.get(\"FORCE_NVLINK\")")) + ", attribute@" + kGatePath +
                    ":" + std::to_string(lineIn(gate, "self.full_nvlink = full_nvlink")));
}

TEST(PythonFrontendFiles, OpWrappersAreForwarders) {
  auto g = extractFiles({{kGatePath, kSglGate}, {kWrapperPath, kSglKernelWrapper}, {kUtilsPath, kSglUtils}});
  const model::Forwarder* fw = nullptr;
  for (const auto& f : g.forwarders)
    if (f.name == "init_custom_ar") fw = &f;
  ASSERT_NE(fw, nullptr);
  EXPECT_EQ(fw->params, (std::vector<std::string>{"ipc_tensors", "rank_data", "rank", "full_nvlink"}));
  EXPECT_EQ(fw->call.callee, "torch.ops.sgl_kernel.init_custom_ar.default");
  EXPECT_EQ(fw->call.name, "init_custom_ar");
  EXPECT_EQ(fw->arg_param, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(fw->where.file, kWrapperPath);
  EXPECT_EQ(fw->where.line, lineIn(kSglKernelWrapper, "def init_custom_ar"));
  EXPECT_EQ(fw->call.where.line, lineIn(kSglKernelWrapper, "return torch.ops.sgl_kernel.init_custom_ar"));
  ASSERT_EQ(fw->call.args.size(), 4u);
  EXPECT_EQ(fw->call.args[3].text, "full_nvlink");
  // meta_size passes nothing through: not a forwarder; *args: a forwarder with -1
  bool meta = false;
  for (const auto& f : g.forwarders) {
    meta = meta || f.name == "meta_size";
    if (f.name == "passthrough") {
      EXPECT_EQ(f.arg_param, std::vector<int>{-1});
    }
  }
  EXPECT_FALSE(meta);
  EXPECT_TRUE(hasNote(g, "passthrough"));
  // the gate's call of the wrapper is a native call named after the wrapper,
  // and the wrapper's inner call is not recorded as a call of the gate
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->callee, "ops.init_custom_ar");
  EXPECT_EQ(init->where.file, kGatePath);
  for (const auto& c : g.native_calls) EXPECT_EQ(c.where.file, kGatePath) << c.callee;
  // the keyword argument of register_buffer reaches the wrapper's parameter
  const model::NativeCall* reg = nativeCall(g, "register_buffer");
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->args[1].keyword, "buffers");
}

TEST(PythonFrontendFiles, VllmCustomOpsWrapperAndDeferredInit) {
  const std::string ops_src = R"(import torch


def init_custom_ar(ipc_tensors, rank_data, rank, fully_connected):
    return torch.ops._C_custom_ar.init_custom_ar(ipc_tensors, rank_data, rank, fully_connected)
)";
  const std::string gate = R"(import torch.distributed as dist
from vllm import _custom_ops as ops
from vllm.platforms import current_platform


class CustomAllreduce:
    def __init__(self, group, device, max_size=8192 * 1024):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size not in [2, 4, 6, 8]:
            return
        fully_connected = current_platform.is_fully_connected([])
        if world_size > 2 and not fully_connected:
            return
        self.world_size = world_size
        self.fully_connected = fully_connected
        self.max_size = max_size
        self.meta_ptrs = []
        self.rank_data = None
        self.rank = 0

    def _complete_init(self):
        self._ptr = ops.init_custom_ar(self.meta_ptrs, self.rank_data, self.rank, self.fully_connected)
        self.disabled = False

    def finalize(self):
        self._complete_init()

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        if self.world_size == 2 or self.fully_connected:
            return inp.nbytes < self.max_size
        return False
)";
  auto g = extractFiles({{"vllm/distributed/device_communicators/custom_all_reduce.py", gate},
                         {"vllm/_custom_ops.py", ops_src}});
  ASSERT_EQ(g.forwarders.size(), 1u);
  EXPECT_EQ(g.forwarders[0].call.callee, "torch.ops._C_custom_ar.init_custom_ar");
  EXPECT_EQ(g.forwarders[0].arg_param, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.forwarders[0].params.back(), "fully_connected");
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);  // reached through the deferred method
  EXPECT_EQ(init->where.line, lineIn(gate, "self._ptr = ops.init_custom_ar"));
  ASSERT_TRUE(init->args[3].value);
  EXPECT_EQ(init->args[3].value->str(), "full_nvlink");
  ASSERT_GE(init->args[3].origin.size(), 2u);
  EXPECT_EQ(init->args[3].origin.front().hop, "probe");
  EXPECT_EQ(init->args[3].origin.back().hop, "attribute");
  EXPECT_TRUE(admits(g, cfg(2, false, 4096)));
  EXPECT_FALSE(admits(g, cfg(4, false, 4096)));
  EXPECT_TRUE(admits(g, cfg(4, true, 4096)));
}

namespace {
const char* kVllmGate = R"(import torch.distributed as dist
from vllm.platforms import current_platform
from vllm import _custom_ops as ops


class CustomAllreduce:
    def __init__(self, group, device, max_size=8192 * 1024):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size not in [2, 4, 6, 8]:
            return
        fully_connected = current_platform.is_fully_connected([])
        if world_size > 2 and not fully_connected:
            return
        self.world_size = world_size
        self.fully_connected = fully_connected
        self.max_size = max_size
        self._ptr = ops.init_custom_ar(self.meta_ptrs, self.rank_data, 0, self.fully_connected)
        self.disabled = False

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        if self.world_size == 2 or self.fully_connected:
            return inp.nbytes < self.max_size
        return False
)";
}  // namespace

TEST(PythonFrontendFiles, MonkeypatchedProbeInAPlugin) {
  const std::string plugin = R"(import logging

from vllm.platforms import current_platform

logger = logging.getLogger(__name__)


def register() -> None:
    current_platform.is_fully_connected = lambda *args, **kwargs: True
    logger.info("patched")
)";
  auto g = extractFiles({{"vllm/distributed/custom_all_reduce.py", kVllmGate}, {"vllm_pcie_fork/platform_patch.py", plugin}});
  for (std::int64_t ws : {2, 4, 6, 8}) EXPECT_TRUE(admits(g, cfg(ws, false, 4096))) << ws;
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  ASSERT_TRUE(init->args[3].value);
  EXPECT_TRUE(model::isTrue(init->args[3].value));
  std::string hs = hopsOf(init->args[3].origin);
  EXPECT_EQ(hs, "probe@vllm/distributed/custom_all_reduce.py:" + std::to_string(lineIn(kVllmGate, "fully_connected = current_platform")) +
                    ", monkeypatch@vllm_pcie_fork/platform_patch.py:" + std::to_string(lineIn(plugin, "current_platform.is_fully_connected =")) +
                    ", local@vllm/distributed/custom_all_reduce.py:" + std::to_string(lineIn(kVllmGate, "fully_connected = current_platform")) +
                    ", attribute@vllm/distributed/custom_all_reduce.py:" + std::to_string(lineIn(kVllmGate, "self.fully_connected = fully_connected")));
  // without the plugin: PCIe groups of more than two stay out
  auto up = extractFiles({{"vllm/distributed/custom_all_reduce.py", kVllmGate}});
  EXPECT_FALSE(admits(up, cfg(4, false, 4096)));
  EXPECT_TRUE(admits(up, cfg(4, true, 4096)));
}

TEST(PythonFrontendFiles, ConditionalMonkeypatchUnderEnvAndWorldSize) {
  const std::string plugin = R"(import os

import torch.distributed as dist
from vllm.platforms import current_platform


def _small_groups_are_linked(self, physical_device_ids):
    return dist.get_world_size() <= 4


def register():
    if os.environ.get("FORK_PCIE_AS_NVLINK") == "1":
        setattr(type(current_platform), "is_fully_connected", _small_groups_are_linked)
)";
  auto g = extractFiles({{"gate.py", kVllmGate}, {"fork/plugin.py", plugin}});
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["FORK_PCIE_AS_NVLINK"] = "1";
  EXPECT_TRUE(admits(g, c));
  c.ws = 8;
  EXPECT_FALSE(admits(g, c));
  c.nvl = true;  // the patched probe answers for the hardware: no for 8
  EXPECT_FALSE(admits(g, c));
  c.env.clear();
  EXPECT_TRUE(admits(g, c));
  const model::NativeCall* init = nativeCall(g, "init_custom_ar");
  ASSERT_NE(init, nullptr);
  std::string hs = hopsOf(init->args[3].origin);
  EXPECT_NE(hs.find("monkeypatch@fork/plugin.py:" + std::to_string(lineIn(plugin, "setattr("))), std::string::npos) << hs;
  EXPECT_EQ(hs.rfind("probe@gate.py:", 0), 0u) << hs;
}

TEST(PythonFrontendFiles, ModuleBodyPatchOfAHelperModuleFunction) {
  // `module.is_full_nvlink = _always_true` in the body of a fork's module
  const std::string patch = R"(from sglang.srt.distributed.device_communicators import custom_all_reduce_utils


def _always_true(*args, **kwargs):
    return True


custom_all_reduce_utils.is_full_nvlink = _always_true
)";
  auto g = extractFiles({{kGatePath, kSglGate}, {kUtilsPath, kSglUtils}, {"fork/patch.py", patch}});
  EXPECT_TRUE(admits(g, cfg(8, false, 4096)));
}

TEST(PythonFrontendFiles, RelativeImportsAndReexports) {
  const std::string init = "from .helpers import is_full_nvlink\n";
  const std::string helpers = R"(import os


def is_full_nvlink(ids, world_size):
    if os.getenv("SPOOF") == "1" and world_size <= 4:
        return True
    return False
)";
  std::string gate = gateSrc();
  gate.replace(gate.find("from sglang.srt.distributed.device_communicators.custom_all_reduce_utils import ("),
               std::string("from sglang.srt.distributed.device_communicators.custom_all_reduce_utils import (").size(),
               "from . import utils as _u\nfrom .utils import (");
  auto g = extractFiles({{"pkg/comm/custom_all_reduce.py", gate}, {"pkg/comm/utils/__init__.py", init},
                         {"pkg/comm/utils/helpers.py", helpers}});
  Cfg c = cfg(4, false, 4096);
  EXPECT_FALSE(admits(g, c));
  c.env["SPOOF"] = "1";
  EXPECT_TRUE(admits(g, c));
}

TEST(PythonFrontendFiles, GateFileIsTheOneWithTheClassAndErrorsNameAllFiles) {
  auto g = extractFiles({{"helper.py", "def f():\n    return 1\n"}, {"gate.py", gateSrc()}});
  EXPECT_EQ(g.class_loc.file, "gate.py");
  expectUpstreamTable(g);
  std::string err;
  try {
    extractFiles({{"a.py", "x = 1\n"}, {"b.py", "y = 2\n"}});
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_EQ(err, "a.py, b.py: no class CustomAllreduce (looked for: CustomAllreduce, CustomAllReduce, FastAllreduce)");
  // a helper that is not valid Python is noted, not fatal; binary input is
  auto h = extractFiles({{"gate.py", gateSrc()}, {"broken.py", "def f(:\n"}});
  EXPECT_TRUE(hasNote(h, "broken.py: not valid Python 3"));
  err.clear();
  try {
    extractFiles({{"gate.py", gateSrc()}, {"blob.py", std::string("a\0b", 3)}});
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_EQ(err, "blob.py: binary file, not Python source");
}

// Gate::guard_site (the safe fix's place): found from the data flow, so
// attributes named anything hold the world size and the NVLink value.
namespace {
const char* kRenamedGate = R"(import torch.distributed as dist

class CustomAllreduce:
    def __init__(self, group, max_size=8192):
        self.disabled = True
        ws = dist.get_world_size(group=group)
        nv = is_full_nvlink([0], ws)
        if ws > 2 and not nv:
            return
        self.ngpus = ws
        self.links = nv
        self.max_size = max_size
        self.disabled = False
)";
}  // namespace

TEST(PythonFrontendGuardSite, PerCallAfterTheLeadingRejectsWithRenamedAttributes) {
  std::string src = std::string(kRenamedGate) + R"(
    def should_custom_ar(self, inp):
        """Docstring."""
        if self.disabled:
            return False
        if inp.numel() == 0:
            return False
        return inp.numel() * inp.element_size() < self.max_size
)";
  model::Gate g = extract(src);
  const auto& s = g.guard_site;
  ASSERT_TRUE(s.found) << s.why;
  EXPECT_EQ(s.method, "should_custom_ar");
  EXPECT_EQ(s.line, 21);  // after the two rejects
  EXPECT_EQ(s.indent, "        ");
  EXPECT_EQ(s.body_indent, "            ");
  EXPECT_EQ(s.reject, "return False");
  EXPECT_EQ(s.world_size, "self.ngpus");
  EXPECT_EQ(s.full_nvlink, "self.links");
}

TEST(PythonFrontendGuardSite, ConstructorOnlyGuardsBeforeTheEnablingStatement) {
  model::Gate g = extract(kRenamedGate);
  const auto& s = g.guard_site;
  ASSERT_TRUE(s.found) << s.why;
  EXPECT_EQ(s.method, "__init__");
  EXPECT_EQ(s.line, 13);
  EXPECT_EQ(s.reject, "return");
  EXPECT_EQ(s.world_size, "self.ngpus");
  EXPECT_EQ(s.full_nvlink, "self.links");
}

TEST(PythonFrontendGuardSite, ComputedNvlinkValueIsNoExpression) {
  std::string src = kRenamedGate;
  src.replace(src.find("self.links = nv"), 15, "self.links = nv or ws == 2");
  src += R"(
    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        return self.links
)";
  model::Gate g = extract(src);
  EXPECT_TRUE(g.guard_site.found);  // the world size alone is enough for some cells
  EXPECT_EQ(g.guard_site.world_size, "self.ngpus");
  EXPECT_EQ(g.guard_site.full_nvlink, "");
}

// --- values a class gate hands down (issue 13): records with methods and
// properties, enum members with a property, dicts, EnvInt, per-call outputs ----

namespace {

const char* kHandDownSrc = R"(import enum
from typing import NamedTuple
import torch.distributed as dist
from sglang.srt.distributed.device_communicators.custom_all_reduce_utils import is_full_nvlink

KB = 1024


class EnvInt:
    def __init__(self, default):
        self.default = default


class _Envs:
    CAP_KB = EnvInt(None)


envs = _Envs()


class Range(NamedTuple):
    lo: int
    hi: int

    def contains(self, n: int) -> bool:
        return self.lo <= n <= self.hi

    def clip(self, cap: int) -> "Range":
        return Range(min(self.lo, cap), min(self.hi, cap))


class Plan(NamedTuple):
    small: int
    big: int
    window: Range = Range(0, 0)

    @property
    def need(self) -> int:
        return max(self.small, self.big, self.window.hi)

    def clip(self, *, cap: int) -> "Plan":
        return Plan(min(self.small, cap), min(self.big, cap), self.window.clip(cap))


def _packed(*xs) -> Plan:
    return Plan(*[x for x in xs])


def plan_for(ws: int) -> Plan:
    sizes = {2: 64 * KB, 4: 32 * KB}
    return Plan(sizes.get(ws, 16 * KB), 256 * KB, Range(128 * KB, 512 * KB))


class Algo(enum.Enum):
    SMALL = enum.auto()
    BIG = enum.auto()

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {Algo.SMALL: "small", Algo.BIG: "big"}


class CustomAllreduce:
    def __init__(self, group, cap=1024 * KB):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if world_size not in (2, 4, 8):
            return
        if not is_full_nvlink(None, world_size):
            return
        forced = envs.CAP_KB.get()
        if forced is not None:
            cap = forced * KB
        base = plan_for(world_size)
        self.workspace = min(base.need, cap)
        self.plan = base.clip(cap=self.workspace)
        self.other = _packed(1, 2).clip(cap=self.workspace)
        self.disabled = False

    def _pick(self, n):
        if n <= self.plan.small:
            return Algo.SMALL
        if self.plan.window.contains(n) or n <= self.plan.big:
            return Algo.BIG
        return None

    def should_custom_ar(self, inp):
        if self.disabled:
            return False
        return self._pick(inp.numel() * inp.element_size()) is not None

    def all_reduce(self, inp):
        algo = self._pick(inp.numel() * inp.element_size())
        assert algo is not None
        return wrap(native_op(self.handle, inp, algo.label))
)";

model::Gate handDownGate() {
  target::PythonGateSpec s = spec();
  s.outputs = {{"workspace", "ws_bytes"}};
  target::PythonGateSpec::CallOutput co;
  co.method = "all_reduce";
  co.call = "native_op";
  co.argument = 2;
  s.call_outputs = {{"algo", co}};
  return python::extractGate(python::SourceFile{"gate.py", kHandDownSrc}, s, python::Limits{});
}

const model::GateOutput* outputOf(const model::Gate& g, const std::string& var) {
  for (const auto& o : g.outputs)
    if (o.var == var) return &o;
  return nullptr;
}

}  // namespace

// The configuration with the handed-down variables at the values the gate
// passes in it.
Cfg withOutputs(const model::Gate& g, Cfg c) {
  for (const auto& o : g.outputs) {
    Val v = ev(o.value, c);
    if (o.value->sort == Sort::Str) c.strs[o.var] = v.s;
    else c.ints[o.var] = v.i;
  }
  return c;
}

TEST(PythonFrontend, RecordMethodsPropertiesAndDictsGiveTheHandedDownSize) {
  auto g = handDownGate();
  const auto* ws = outputOf(g, "ws_bytes");
  ASSERT_NE(ws, nullptr);
  // need = max(small, big, window.hi) = 512 KiB, under the 1 MiB default cap
  EXPECT_EQ(ev(ws->value, cfg(2, true, 16)).i, 512 * 1024);
  EXPECT_EQ(ev(ws->value, cfg(8, true, 16)).i, 512 * 1024);
  // EnvInt(None): unset keeps the default; CAP_KB=64 caps the workspace
  Cfg capped = cfg(2, true, 16);
  capped.env["CAP_KB"] = "64";
  EXPECT_EQ(ev(ws->value, capped).i, 64 * 1024);
  // admitted up to the clipped window (Range.contains through the record)
  EXPECT_TRUE(admits(g, withOutputs(g, cfg(2, true, 512 * 1024))));
  EXPECT_FALSE(admits(g, withOutputs(g, cfg(2, true, 512 * 1024 + 16))));
  EXPECT_FALSE(admits(g, withOutputs(g, cfg(3, true, 16))));
  EXPECT_FALSE(admits(g, withOutputs(g, cfg(2, false, 16))));
  capped.nbytes = 64 * 1024;
  EXPECT_TRUE(admits(g, withOutputs(g, capped)));
  capped.nbytes = 64 * 1024 + 16;
  EXPECT_FALSE(admits(g, withOutputs(g, capped)));
  // a variable at another value than the gate passes is no configuration
  Cfg off = withOutputs(g, cfg(2, true, 4096));
  off.ints["ws_bytes"] += 1;
  EXPECT_FALSE(admits(g, off));
  EXPECT_TRUE(hasNote(g, "_packed(1, 2)")) << "the annotated result taken as a Plan";
}

TEST(PythonFrontend, PerCallOutputIsTheEnumPropertyAtTheNativeCall) {
  auto g = handDownGate();
  const auto* algo = outputOf(g, "algo");
  ASSERT_NE(algo, nullptr);
  ASSERT_EQ(algo->value->sort, Sort::Str);
  // enum.auto() members, their property through the module's dict;
  // dict.get's default for world size 8: small = 16 KiB
  EXPECT_EQ(ev(algo->value, cfg(2, true, 64 * 1024)).s, "small");
  EXPECT_EQ(ev(algo->value, cfg(2, true, 64 * 1024 + 16)).s, "big");
  EXPECT_EQ(ev(algo->value, cfg(8, true, 16 * 1024)).s, "small");
  EXPECT_EQ(ev(algo->value, cfg(8, true, 16 * 1024 + 16)).s, "big");
  Cfg c = withOutputs(g, cfg(2, true, 4096));
  EXPECT_TRUE(admits(g, c));
  c.strs["algo"] = "big";
  EXPECT_FALSE(admits(g, c)) << "4 KiB is handed down as small";
}

// Members of one Enum merged by the paths that pick them stay members: a
// property that compares `self` reads the merged value (a pick that always
// returns a member, no None arm to keep the paths apart).
TEST(PythonFrontend, AnEnumPickedOnSeveralPathsKeepsItsProperties) {
  const char* src = R"(import enum


class Algo(enum.Enum):
    PUSH = enum.auto()
    PULL = enum.auto()
    TWO_SHOT = enum.auto()

    @property
    def shot(self) -> int:
        return 2 if self == Algo.TWO_SHOT else 1


class CustomAllreduce:
    def __init__(self, group):
        self.disabled = True
        world_size = dist.get_world_size(group=group)
        if not is_full_nvlink(None, world_size):
            return
        self.disabled = False

    def _pick(self, n):
        if n <= 4096:
            return Algo.PUSH
        if n <= 65536:
            return Algo.PULL
        return Algo.TWO_SHOT

    def should_custom_ar(self, inp):
        return not self.disabled

    def all_reduce(self, inp):
        algo = self._pick(inp.numel() * inp.element_size())
        return native_op(self.handle, inp, algo.shot)
)";
  target::PythonGateSpec s = spec();
  target::PythonGateSpec::CallOutput co;
  co.method = "all_reduce";
  co.call = "native_op";
  co.argument = 2;
  s.call_outputs = {{"shot", co}};
  model::Gate g = python::extractGate(python::SourceFile{"gate.py", src}, s, python::Limits{});
  const auto* shot = outputOf(g, "shot");
  ASSERT_NE(shot, nullptr);
  ASSERT_EQ(shot->value->sort, Sort::Int);
  for (const auto& o : g.opaques) EXPECT_EQ(o.name.find("shot"), std::string::npos) << o.name;
  EXPECT_EQ(ev(shot->value, cfg(2, true, 4096)).i, 1);
  EXPECT_EQ(ev(shot->value, cfg(2, true, 65536)).i, 1);
  EXPECT_EQ(ev(shot->value, cfg(2, true, 65536 + 16)).i, 2);
}

// Threads that ask for one text's tree at once get it from one parse: the
// others wait for it rather than parse the text again.
TEST(PythonParse, OneTextAskedForAtOnceIsParsedOnce) {
  std::string text = "# a module read by several analyses at once\n";
  for (int i = 0; i < 20000; ++i) text += "def f" + std::to_string(i) + "(x):\n    return x + " + std::to_string(i) + "\n";
  constexpr int kThreads = 6;
  std::atomic<int> ready{0};
  std::vector<std::string> roots(kThreads);
  std::size_t before = python::textsParsed();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      TSTree* tree = python::parsePython(text);
      if (!tree) return;
      roots[t] = ts_node_type(ts_tree_root_node(tree));
      ts_tree_delete(tree);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(python::textsParsed() - before, 1u);
  for (const auto& r : roots) EXPECT_EQ(r, "module");
  // Asked for again: served from the cache.
  TSTree* again = python::parsePython(text);
  ASSERT_NE(again, nullptr);
  ts_tree_delete(again);
  EXPECT_EQ(python::textsParsed() - before, 1u);
}
