// Configuration files (tool/config): where they are found, what they may say,
// the errors for what they may not, and the rule policy they imply.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/Config.h"
#include "model/Errors.h"

namespace fs = std::filesystem;
using namespace layergate;

namespace {

// A fresh directory per test, entered so that messages show short paths.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_ = fs::current_path();
    dir_ = fs::temp_directory_path() / ("lg-config-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::current_path(dir_);
  }
  void TearDown() override {
    fs::current_path(old_);
    fs::remove_all(dir_);
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  std::string error(const std::string& start, const config::Overrides& o = {}) {
    try {
      config::resolve(start, o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path old_, dir_;
};

}  // namespace

TEST_F(ConfigTest, NearestDirectoryWinsAndLayergateTomlBeatsPyprojectInOneDirectory) {
  write("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.layergate]\nignore = [\"LG007\"]\n");
  write("a/b/gate.py", "");
  write("a/pyproject.toml", "[project]\nname = \"no table of ours\"\n");
  EXPECT_EQ(config::findConfigFile("a/b/gate.py"), (dir_ / "pyproject.toml").string());
  write("a/.layergate.toml", "ignore = [\"LG008\"]\n");
  write("a/pyproject.toml", "[tool.layergate]\nignore = [\"LG009\"]\n");
  EXPECT_EQ(config::findConfigFile("a/b"), (dir_ / "a/.layergate.toml").string());
  config::Settings s = config::resolve("a/b", {});
  EXPECT_EQ(s.file, "a/.layergate.toml");
  EXPECT_EQ(s.ignore.value, std::vector<std::string>{"LG008"});
  EXPECT_EQ(s.ignore.origin, "a/.layergate.toml:1");
  EXPECT_FALSE(s.enabled("LG008"));
  EXPECT_TRUE(s.enabled("LG007"));
  config::Overrides iso;
  iso.isolated = true;
  EXPECT_TRUE(config::resolve("a/b", iso).file.empty());
  config::Overrides given;
  given.config_file = "pyproject.toml";
  EXPECT_EQ(config::resolve("a/b", given).ignore.value, std::vector<std::string>{"LG007"});
}

TEST_F(ConfigTest, ReadsEveryKeyWithItsLine) {
  write("pyproject.toml",
        "[tool.layergate]\n"
        "select = [\"LG00\"]\n"
        "ignore = [\"LG007\"]\n"
        "fail-on = \"warning\"\n"
        "max-world-size = 4\n"
        "strict = true\n"
        "rules = \"my-rules\"\n"
        "exclude = [\"vendor\", \"tests/**\"]\n"
        "\n"
        "[tool.layergate.severity]\n"
        "LG008 = \"error\"\n"
        "\n"
        "[tool.layergate.per-file-ignores]\n"
        "\"legacy/*.py\" = [\"LG001\", \"LG002\"]\n");
  config::Settings s = config::resolve(".", {});
  EXPECT_EQ(s.fail_on.value, "warning");
  EXPECT_EQ(s.fail_on.origin, "pyproject.toml:4");
  EXPECT_EQ(s.max_world_size.value, 4);
  EXPECT_TRUE(s.strict.value);
  EXPECT_EQ(s.rules_dirs.value, std::vector<std::string>{(dir_ / "my-rules").string()});
  ASSERT_EQ(s.severity.count("LG008"), 1u);
  EXPECT_EQ(s.severity.at("LG008").value, model::Severity::Error);
  EXPECT_EQ(s.severity.at("LG008").origin, "pyproject.toml:11");
  ASSERT_EQ(s.per_file_ignores.size(), 1u);
  EXPECT_EQ(s.per_file_ignores[0].origin, "pyproject.toml:14");
  EXPECT_TRUE(s.ignoredIn("LG001", "legacy/gate.py"));
  EXPECT_TRUE(s.ignoredIn("LG002", (dir_ / "legacy/gate.py").string()));
  EXPECT_FALSE(s.ignoredIn("LG008", "legacy/gate.py"));
  EXPECT_FALSE(s.ignoredIn("LG001", "current/gate.py"));
  EXPECT_TRUE(s.excluded("vendor/x/custom_all_reduce.py"));
  EXPECT_TRUE(s.excluded("src/vendor"));
  EXPECT_TRUE(s.excluded("tests/a/b.py"));
  EXPECT_FALSE(s.excluded("src/tests/b.py"));  // "tests/**" is anchored at the file's directory
  EXPECT_TRUE(s.enabled("LG001"));
  EXPECT_FALSE(s.enabled("LG007"));
  EXPECT_FALSE(s.enabled("LG010"));  // not under "LG00"

  // The command line: --select replaces the file's selection, --ignore adds.
  config::Overrides o;
  o.select = std::vector<std::string>{"LG01"};
  o.fail_on = "never";
  config::Settings c = config::resolve(".", o);
  EXPECT_TRUE(c.enabled("LG010"));
  EXPECT_FALSE(c.enabled("LG001"));
  EXPECT_EQ(c.fail_on.origin, "command line");
  config::Overrides i;
  i.ignore = std::vector<std::string>{"LG001"};
  config::Settings d = config::resolve(".", i);
  EXPECT_FALSE(d.enabled("LG001"));
  EXPECT_TRUE(d.enabled("LG002"));
  EXPECT_FALSE(d.enabled("LG007"));

  std::string shown = config::describe(s);
  EXPECT_NE(shown.find("configuration file: pyproject.toml"), std::string::npos) << shown;
  EXPECT_NE(shown.find("# pyproject.toml:4"), std::string::npos) << shown;
  EXPECT_NE(shown.find("severity.LG008"), std::string::npos) << shown;
  std::string cli = config::describe(c);
  EXPECT_NE(cli.find("# command line"), std::string::npos) << cli;
  EXPECT_NE(cli.find("rules in force: LG010 LG011"), std::string::npos) << cli;
}

TEST_F(ConfigTest, MoreSpecificCodeWins) {
  write(".layergate.toml", "select = [\"LG001\"]\nignore = [\"LG00\"]\n");
  config::Settings s = config::resolve(".", {});
  EXPECT_TRUE(s.enabled("LG001"));
  EXPECT_FALSE(s.enabled("LG002"));
  write(".layergate.toml", "select = [\"ALL\"]\nignore = [\"LG\"]\n");
  EXPECT_FALSE(config::resolve(".", {}).enabled("LG001"));
}

TEST_F(ConfigTest, UnknownKeysAndBadValuesNameTheirPlace) {
  write("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.layergate]\nselect = [\"LG001\"]\nselct = [\"LG002\"]\n");
  EXPECT_EQ(error("."), "pyproject.toml:6:1: unknown key 'selct' in [tool.layergate] (did you mean 'select'?)");
  write("pyproject.toml", "[tool.layergate]\nfrobnicate = 1\n");
  EXPECT_EQ(error("."), "pyproject.toml:2:1: unknown key 'frobnicate' in [tool.layergate]");
  write(".layergate.toml", "ignore = [\"LG001\", \"LG099\"]\n");
  EXPECT_EQ(error(".").rfind(".layergate.toml:1:20: unknown rule code 'LG099' in 'ignore' (known: LG001", 0), 0u)
      << error(".");
  write(".layergate.toml", "[severity]\nLG008 = \"fatal\"\n");
  EXPECT_EQ(error("."), ".layergate.toml:2:9: bad severity 'fatal' for LG008 (expected \"error\", \"warning\" or \"note\")");
  write(".layergate.toml", "[severity]\nLG042 = \"error\"\n");
  EXPECT_EQ(error(".").rfind(".layergate.toml:2:1: unknown rule 'LG042' in [severity]", 0), 0u)
      << error(".");
  write(".layergate.toml", "fail-on = \"sometimes\"\n");
  EXPECT_EQ(error("."), ".layergate.toml:1:11: bad value 'sometimes' for 'fail-on' (expected \"error\", \"warning\" or \"never\")");
  write(".layergate.toml", "max-world-size = 0\n");
  EXPECT_EQ(error("."), ".layergate.toml:1:18: 'max-world-size' must be an integer from 1 to 64");
  write(".layergate.toml", "select = \"LG001\"\n");
  EXPECT_EQ(error("."), ".layergate.toml:1:10: 'select' must be an array of rule codes");
  write(".layergate.toml", "select = [\"LG001\"\n");
  EXPECT_EQ(error(".").rfind(".layergate.toml:", 0), 0u);
  EXPECT_NE(error(".").find("bad TOML"), std::string::npos) << error(".");
  config::Overrides o;
  o.config_file = "missing.toml";
  EXPECT_EQ(error(".", o), "missing.toml: no such configuration file");
  config::Overrides both;
  both.config_file = ".layergate.toml";
  both.isolated = true;
  EXPECT_EQ(error(".", both), "--config and --isolated cannot be used together");
  config::Overrides sel;
  sel.select = std::vector<std::string>{"LG1"};
  fs::remove(dir_ / ".layergate.toml");
  fs::remove(dir_ / "pyproject.toml");
  EXPECT_EQ(error(".", sel), "--select: unknown rule code 'LG1'");
}

TEST(ConfigGlob, PatternsMatchComponentsOrAnchoredPaths) {
  EXPECT_TRUE(config::pathMatches("vendor", "a/vendor/b.py"));
  EXPECT_TRUE(config::pathMatches("*.cuh", "csrc/x.cuh"));
  EXPECT_TRUE(config::pathMatches("csrc/**", "csrc/a/b.cuh"));
  EXPECT_TRUE(config::pathMatches("**/gen_*.py", "a/b/gen_x.py"));
  EXPECT_TRUE(config::pathMatches("./csrc/", "csrc/x.cuh"));
  EXPECT_FALSE(config::pathMatches("csrc/*.cuh", "other/csrc/x.cuh"));
  EXPECT_FALSE(config::pathMatches("vendor", "vendors/x.py"));
}
