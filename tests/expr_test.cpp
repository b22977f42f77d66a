// Unit tests of the gate model IR and the target loader.
#include <gtest/gtest.h>

#include "model/Errors.h"
#include "model/Expr.h"
#include "target/Target.h"

using namespace layergate;
using namespace layergate::model;

TEST(Expr, FoldsConstantsAndTrivialConnectives) {
  auto x = Var("full_nvlink", Sort::Bool);
  EXPECT_EQ(And(True(), x), x);
  EXPECT_TRUE(isFalse(And(x, False())));
  EXPECT_TRUE(isTrue(Or(x, True())));
  EXPECT_EQ(Not(Not(x)), x);
  EXPECT_EQ(Arith(Op::Mul, IntC(8192), IntC(1024))->i, 8388608);
  EXPECT_TRUE(isTrue(Cmp(Op::Lt, IntC(2), IntC(4))));
  // Python floor semantics on constants.
  EXPECT_EQ(Arith(Op::Div, IntC(-7), IntC(2))->i, -4);
  EXPECT_EQ(Arith(Op::Mod, IntC(-7), IntC(2))->i, 1);
  // 1 == "1" is False in Python.
  EXPECT_TRUE(isFalse(Cmp(Op::Eq, IntC(1), StrC("1"))));
  EXPECT_EQ(StrToInt(StrC("42"))->i, 42);
  EXPECT_EQ(StrToInt(StrC("4x"))->op, Op::StrToInt);
}

TEST(Expr, IteSimplifiesBooleanArms) {
  auto c = Var("c", Sort::Bool, VarKind::Opaque);
  EXPECT_EQ(Ite(c, True(), False()), c);
  EXPECT_EQ(Ite(c, False(), True())->op, Op::Not);
  EXPECT_EQ(Ite(True(), IntC(1), IntC(2))->i, 1);
}

TEST(Expr, PrintsReadably) {
  auto ws = Var("world_size", Sort::Int);
  auto nvl = Var("full_nvlink", Sort::Bool);
  auto e = And(Cmp(Op::Gt, ws, IntC(2)), Not(nvl));
  EXPECT_EQ(e->str(), "world_size > 2 and not full_nvlink");
}

TEST(Expr, CollectsVariablesOnceWithoutRecursion) {
  auto ws = Var("world_size", Sort::Int);
  ExprPtr chain = False();
  // A 200k-deep chain must not overflow the stack.
  for (int i = 0; i < 200000; ++i) chain = Or(Cmp(Op::Eq, ws, IntC(i)), chain);
  auto vars = varsOf(chain);
  ASSERT_EQ(vars.size(), 1u);
  EXPECT_EQ(vars[0].name, "world_size");
}

TEST(Expr, EnvVariableNames) {
  EXPECT_EQ(envVar("X"), "env:X");
  EXPECT_EQ(envSetVar("X"), "env:X#set");
  EXPECT_EQ(envNameOf("env:X#set"), "X");
  EXPECT_EQ(envNameOf("world_size"), "");
}

TEST(Target, LoadsTheBundledTarget) {
  auto targets = target::loadTargets(target::defaultRulesDir());
  ASSERT_FALSE(targets.empty());
  const auto& t = targets.front();
  EXPECT_EQ(t.name, "custom-allreduce");
  EXPECT_EQ(t.python.probes.at("is_full_nvlink"), "full_nvlink");
  EXPECT_EQ(t.cpp.members.at("fully_connected_"), "full_nvlink");
  EXPECT_FALSE(t.python.platform_flags.at("_is_hip"));
}

// The platform a target declares is data (`check --platform`, the report's
// grouping): "cuda" when absent, taken through "extends", a lower-case word.
TEST(Target, DeclaresItsPlatform) {
  auto targets = target::loadTargets(target::defaultRulesDir());
  auto of = [&](const std::string& name) {
    for (const auto& t : targets)
      if (t.name == name) return t.platform;
    return std::string("?");
  };
  EXPECT_EQ(of("custom-allreduce"), "cuda");
  EXPECT_EQ(of("vllm-csrc"), "cuda");  // extends custom-allreduce
  EXPECT_EQ(of("quick-allreduce"), "rocm");
  const std::string base = R"({"name":"t","python":{"classes":["G"]},"cpp":{"dispatch_functions":["f"]})";
  EXPECT_EQ(target::parseTarget(base + "}", "x.json").platform, "cuda");
  EXPECT_EQ(target::parseTarget(base + R"(,"platform":"musa"})", "x.json").platform, "musa");
  for (const char* bad : {R"("ROCm")", R"("")", R"("all")", R"("cuda rocm")", "3"}) {
    try {
      target::parseTarget(base + R"(,"platform":)" + bad + "}", "x.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(Target, RejectsBadDescriptionsWithAOneLineReason) {
  EXPECT_THROW(target::parseTarget("{", "x.json"), InputError);
  EXPECT_THROW(target::parseTarget("[]", "x.json"), InputError);
  EXPECT_THROW(target::parseTarget(R"({"name": "t"})", "x.json"), InputError);
  try {
    target::parseTarget(R"({"name":"t","python":{"classes":"A"}})", "x.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  {
    auto t = target::parseTarget(
        R"x({"name":"t","python":{"classes":["G"],"call_outputs":{"a":{"method":"m","call":"c","argument":1,)x"
        R"x("attribute":"is_push()"}},"only_when":{"a":false}},"cpp":{"dispatch_functions":["f"]}})x",
        "x.json");
    EXPECT_EQ(t.python.call_outputs.at("a").attribute, "is_push()");
    EXPECT_EQ(t.python.only_when.at("a"), 0);
  }
  // What a call output hands down of its argument: a name or name(); and
  // only_when over a call output, with a boolean or an integer. Otherwise
  // valid descriptions: the one-line reason names the key at fault.
  for (const auto& [bad, key] : std::vector<std::pair<std::string, std::string>>{
           {R"("call_outputs":{"a":{"method":"m","call":"c","argument":1,"attribute":"x.y"}})", "python.call_outputs.a"},
           {R"("call_outputs":{"a":{"method":"m","call":"c","argument":1,"attribute":3}})", "python.call_outputs.a"},
           {R"("only_when":{"a":true})", "python.only_when.a"},
           {R"("call_outputs":{"a":{"method":"m","call":"c","argument":1}},"only_when":{"a":"yes"})",
            "python.only_when.a"}}) {
    const std::string text =
        R"({"name":"t","python":{"classes":["G"],)" + bad + R"(},"cpp":{"dispatch_functions":["f"]}})";
    try {
      target::parseTarget(text, "x.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  // A bound that is no integer (the fuzzer's 1e+24, which cannot be an
  // int64) and a call-output argument out of range: one-line errors.
  for (const char* bad :
       {R"({"name":"t","python":{"policy":{"inputs":{"n":{"min":1e24}}}}})",
        R"({"name":"t","python":{"policy":{"inputs":{"n":{"max":2.5}}}}})",
        R"({"name":"t","python":{"call_outputs":{"a":{"method":"m","call":"c","argument":99999999999}}}})",
        // Unsigned numbers above INT64_MAX would wrap to negative int64s.
        R"({"name":"t","python":{"policy":{"inputs":{"n":{"max":18446744073709551615}}}}})",
        R"({"name":"t","python":{"policy":{"inputs":{"n":{"min":9223372036854775808}}}}})",
        R"({"name":"t","python":{"policy":{"inputs":{"n":{"values":[1,18446744073709551615]}}}}})",
}) {
    try {
      target::parseTarget(bad, "x.json");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("x.json", 0), 0u) << e.what();
    }
  }
}

// Every key of a target file is one the reader knows: a misspelled one is a
// one-line error naming its path and the nearest known key, at every level
// (the top, a section, a map's entry, a list's item); the user's own names
// (probes, members, call outputs) are free.
TEST(Target, UnknownKeysAreErrorsWithTheNearestKnownOne) {
  const std::string base = R"({"name":"t","python":{"classes":["G"],"probes":{"anything_goes":"x"}},)"
                           R"("cpp":{"dispatch_functions":["f"],"members":{"m_":"x"}})";
  EXPECT_EQ(target::parseTarget(base + "}", "x.json").python.probes.size(), 1u);
  for (const auto& [extra, message] : std::vector<std::pair<std::string, std::string>>{
           {R"("plaform":"rocm")", R"(x.json: unknown key "plaform" (did you mean "platform"?))"},
           {R"("discovery":{"pyhton":["a.py"]})", R"(x.json: unknown key "discovery.pyhton" (did you mean "discovery.python"?))"},
           {R"("variables":[{"name":"w","type":"int","min":1,"max":2,"rol":"ranks"}])",
            R"(x.json: unknown key "variables[0].rol" (did you mean "variables[0].role"?))"},
           {R"("python":{"classes":["G"],"call_outputs":{"a":{"method":"m","call":"c","argumnet":1}}})",
            R"(x.json: unknown key "python.call_outputs.a.argumnet" (did you mean "python.call_outputs.a.argument"?))"},
           {R"("zzzzzzzzzz":1)", R"(x.json: unknown key "zzzzzzzzzz" (known: )"}}) {
    try {
      target::parseTarget(base + "," + extra + "}", "x.json");
      ADD_FAILURE() << "accepted: " << extra;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Roles: which declared variable is the cells' group size, link flag, message
// size and rank. Each role once, with its type (the rank a probe, the others
// configurations), and the three axes together; a probe may be any integer.
TEST(Target, RolesNameTheDeclaredVariables) {
  auto withVars = [](const std::string& vars) {
    return R"({"name":"t","variables":[)" + vars + R"(],"python":{"classes":["G"]},"cpp":{"dispatch_functions":["f"]}})";
  };
  const std::string axes = R"({"name":"g","type":"int","min":1,"max":16,"role":"ranks"},)"
                           R"({"name":"l","type":"bool","role":"link"},)"
                           R"({"name":"b","type":"int","min":1,"max":4096,"role":"bytes"})";
  auto t = target::parseTarget(withVars(axes + R"(,{"name":"r","type":"int","probe":true,"role":"rank"})"), "x.json");
  EXPECT_EQ(t.roles.ranks, "g");
  EXPECT_EQ(t.roles.link, "l");
  EXPECT_EQ(t.roles.bytes, "b");
  EXPECT_EQ(t.roles.rank, "r");
  EXPECT_TRUE(t.roles.cells());
  EXPECT_EQ(t.python.roles.link, "l");
  EXPECT_EQ(t.cpp.roles.bytes, "b");
  auto r = target::declaredVar(t.variables, "r");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->var_kind, model::VarKind::Probe);
  EXPECT_EQ(r->sort, model::Sort::Int);
  EXPECT_EQ(target::declaredVar(t.variables, "l")->var_kind, model::VarKind::Config);
  EXPECT_FALSE(target::declaredVar(t.variables, "nope"));
  // No roles: a family over regions.
  EXPECT_FALSE(target::parseTarget(withVars(R"({"name":"h","type":"int","values":[64,128]})"), "x.json").roles.cells());

  for (const auto& [vars, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"name":"g","type":"int","min":1,"max":8,"role":"world"})", "\"role\" must be ranks, link, bytes, rank or element"},
           {R"({"name":"e","type":"enum","values":["f16"],"role":"element"})", "the element role needs \"cpp_types\""},
           {R"({"name":"e","type":"enum","values":["f16"],"role":"element","cpp_types":{"__half":"f32"}})",
            "\"cpp_types\".__half must be one of the variable's values"},
           {R"({"name":"e","type":"enum","values":["f16"],"cpp_types":{"__half":"f16"}})",
            "\"cpp_types\" is an object of the element role"},
           {R"({"name":"g","type":"bool","role":"ranks"})", "the ranks role is an int variable"},
           {R"({"name":"r","type":"int","min":0,"max":8,"role":"rank"})", "the rank role is an int probe"},
           {axes + R"(,{"name":"b2","type":"int","min":1,"max":8,"role":"bytes"})", "the bytes role is b's already"},
           {R"({"name":"g","type":"int","min":1,"max":8,"role":"ranks"})", "the ranks, link and bytes roles go together"},
           {R"({"name":"g","type":"int","min":1,"max":8,"probe":"yes"})", "\"probe\" must be true or false"},
           {R"({"name":"g","type":"int","role":"ranks"})", "needs \"values\" or both \"min\" and \"max\""},
           {R"({"name":"g","type":"int","values":[2,4,8],"role":"ranks"})", "the ranks role takes \"min\" and \"max\""},
           {R"({"name":"d","type":"int","probe":true})", "a probe needs the ranks, link and bytes roles"}}) {
    try {
      target::parseTarget(withVars(vars), "x.json");
      ADD_FAILURE() << "accepted: " << vars;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}
