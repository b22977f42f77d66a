#include "target/Target.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/Errors.h"

namespace layergate::target {
namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key, const std::string& origin) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (!v.is_array()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
  for (const auto& x : v) {
    if (!x.is_string()) throw InputError(origin + ": \"" + key + "\" must be a list of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

template <typename V>
std::map<std::string, V> mapOf(const json& j, const char* key, const std::string& origin) {
  std::map<std::string, V> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (!v.is_object()) throw InputError(origin + ": \"" + key + "\" must be an object");
  for (auto it = v.begin(); it != v.end(); ++it) {
    if constexpr (std::is_same_v<V, bool>) {
      if (!it.value().is_boolean()) throw InputError(origin + ": \"" + key + "." + it.key() + "\" must be true or false");
    } else {
      if (!it.value().is_string()) throw InputError(origin + ": \"" + key + "." + it.key() + "\" must be a string");
    }
    out[it.key()] = it.value().get<V>();
  }
  return out;
}

const json& object(const json& j, const char* key, const std::string& origin) {
  static const json empty = json::object();
  if (!j.contains(key)) return empty;
  if (!j.at(key).is_object()) throw InputError(origin + ": \"" + key + "\" must be an object");
  return j.at(key);
}

}  // namespace

Target parseTarget(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw InputError(origin + ": a target must be a JSON object");
  Target t;
  try {
    if (!j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>().empty())
      throw InputError(origin + ": a target needs a non-empty \"name\"");
    t.name = j.at("name").get<std::string>();
    t.description = j.value("description", "");
    t.platform = j.value("platform", "cuda");
    const json& d = object(j, "discovery", origin);
    t.discovery.python_paths = strings(d, "python", origin);
    t.discovery.cpp_paths = strings(d, "cpp", origin);

    const json& p = object(j, "python", origin);
    t.python.class_names = strings(p, "classes", origin);
    t.python.per_call_methods = strings(p, "per_call_methods", origin);
    const json& en = object(p, "enabling", origin);
    t.python.enabling_attr = en.value("attribute", "disabled");
    t.python.enabling_value = en.value("value", false);
    t.python.probes = mapOf<std::string>(p, "probes", origin);
    t.python.platform_flags = mapOf<bool>(p, "platform_flags", origin);
    t.python.bool_env_helpers = strings(p, "bool_env_helpers", origin);
    t.python.env_modules = strings(p, "env_modules", origin);

    const json& c = object(j, "cpp", origin);
    t.cpp.class_names = strings(c, "classes", origin);
    t.cpp.dispatch_functions = strings(c, "dispatch_functions", origin);
    t.cpp.members = mapOf<std::string>(c, "members", origin);
    t.cpp.byte_count_names = strings(c, "byte_count_names", origin);
  } catch (const json::exception& e) {
    throw InputError(origin + ": bad target description: " + e.what());
  }
  if (t.python.class_names.empty() || t.cpp.class_names.empty() || t.cpp.dispatch_functions.empty())
    throw InputError(origin + ": a target needs python.classes, cpp.classes and cpp.dispatch_functions");
  return t;
}

Target loadTarget(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read target description");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parseTarget(ss.str(), path);
}

std::vector<Target> loadTargets(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path targets = fs::path(dir) / "targets";
  if (!fs::is_directory(targets, ec)) throw InputError(dir + ": no targets/ folder in the rules directory");
  std::vector<Target> out;
  for (const auto& e : fs::directory_iterator(targets, ec))
    if (e.path().extension() == ".json") out.push_back(loadTarget(e.path().string()));
  if (out.empty()) throw InputError(targets.string() + ": no target descriptions (*.json)");
  std::sort(out.begin(), out.end(), [](const Target& a, const Target& b) { return a.name < b.name; });
  return out;
}

std::string defaultRulesDir() {
  if (const char* env = std::getenv("LAYERGATE_RULES"); env && *env) return env;
  return std::string(LAYERGATE_SOURCE_DIR) + "/rules";
}

}  // namespace layergate::target
