// libFuzzer: the CI-facing file readers on arbitrary bytes — a configuration
// file (as .layergate.toml and as pyproject.toml, toml++ underneath), a
// baseline (layergate JSON or SARIF) and a saved selftest plan (read on the GPU
// box). InputError is the expected answer to bad input (a one-line message,
// exit 2 in the CLI), and for a plan any std::exception (the CLI turns it into
// one line); anything else, a crash or undefined behaviour, is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/Config.h"
#include "model/Errors.h"
#include "report/Baseline.h"
#include "selftest/Selftest.h"

namespace {

const std::string& dir() {
  static const std::string d = [] {
    char tmpl[] = "/tmp/layergate-settings-fuzz-XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (!p) std::abort();
    return std::string(p);
  }();
  return d;
}

void put(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const char* name : {"/.layergate.toml", "/pyproject.toml"}) {
    const std::string path = dir() + name;
    put(path, data, size);
    try {
      layergate::config::Settings s;
      layergate::config::readConfigFile(path, s);
      (void)layergate::config::describe(s).size();
    } catch (const layergate::InputError&) {
    }
  }
  const std::string base = dir() + "/baseline.json";
  put(base, data, size);
  try {
    (void)layergate::report::readBaseline(base).size();
  } catch (const layergate::InputError&) {
  }
  const nlohmann::json plan = nlohmann::json::parse(data, data + size, nullptr, false);
  if (!plan.is_discarded()) {
    try {
      const layergate::selftest::Plan p = layergate::selftest::planFromJson(plan);
      (void)layergate::selftest::harnessCells(p.matrix, false).size();
    } catch (const std::exception&) {
    }
  }
  return 0;
}
