#include "target/Chains.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/Errors.h"

namespace layergate::target {

namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key, const std::string& origin) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
  for (const auto& x : j[key]) {
    if (!x.is_string()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

}  // namespace

ChainSpec parseChain(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(origin + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(origin + ": a selection description is a JSON object");
  ChainSpec c;
  if (!j.contains("name") || !j["name"].is_string()) throw InputError(origin + ": \"name\" (a string) is required");
  c.name = j["name"].get<std::string>();
  if (j.contains("description") && j["description"].is_string()) c.description = j["description"].get<std::string>();
  c.files = strings(j, "files", origin);
  c.classes = strings(j, "classes", origin);
  c.methods = strings(j, "methods", origin);
  c.selection_functions = strings(j, "selection_functions", origin);
  if (c.files.empty() || c.classes.empty() || c.methods.empty())
    throw InputError(origin + ": \"files\", \"classes\" and \"methods\" must each name at least one");
  return c;
}

std::vector<ChainSpec> loadChains(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<ChainSpec> out;
  std::error_code ec;
  fs::path d = fs::path(dir) / "selection";
  if (!fs::is_directory(d, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back(parseChain(ss.str(), f.string()));
  }
  return out;
}

}  // namespace layergate::target
