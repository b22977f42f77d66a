#include "target/Keys.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "model/Errors.h"

namespace layergate::target {
namespace {

using nlohmann::json;

// The shape of a target file's keys: an object lists its keys; null is a
// value whose keys are the user's own (probes, members, terms, ...); an
// object {"*": shape} is a map of the user's names to values of that shape,
// {"[]": shape} a list of them.
const json& schema() {
  static const json s = json::parse(R"({
    "name": null, "description": null, "platform": null, "extends": null, "unmodelled": null,
    "discovery": {"python": null, "cpp": null, "requires": null, "chain": {"python": null, "cpp": null},
                  "same_root": null, "fallback": null, "reads": null},
    "python": {"classes": null, "per_call_methods": null, "enabling": {"attribute": null, "value": null},
               "probes": null, "platform_flags": null, "values": null, "bool_env_helpers": null,
               "env_modules": null, "outputs": null, "selection": null,
               "call_outputs": {"*": {"method": null, "call": null, "argument": null, "attribute": null}},
               "only_when": null,
               "policy": {"functions": null, "outputs": null, "nbytes": null, "returns": null,
                          "inputs": {"*": {"var": null, "present": null, "values": null, "min": null, "max": null}}}},
    "cpp": {"classes": null, "dispatch_functions": null, "members": null, "byte_count_names": null,
            "include_dirs": null, "defines": null, "preconditions": null, "values": null, "follow_calls": null,
            "std": null},
    "variables": {"[]": {"name": null, "type": null, "values": null, "min": null, "max": null, "doc": null,
                         "role": null, "probe": null, "cpp_types": null}}
  })");
  return s;
}

// The known key nearest to `key` by edit distance, "" when none is near
// enough to be a slip of the keyboard.
std::string nearest(const std::string& key, const json& known) {
  std::string best;
  unsigned best_d = 0;
  for (auto it = known.begin(); it != known.end(); ++it) {
    unsigned d = llvm::StringRef(key).edit_distance(it.key(), /*AllowReplacements=*/true);
    if (best.empty() || d < best_d) best = it.key(), best_d = d;
  }
  return best_d <= std::max<std::size_t>(2, key.size() / 3) ? best : "";
}

void check(const json& value, const json& shape, const std::string& path, const std::string& origin) {
  if (shape.is_null()) return;
  if (shape.contains("[]")) {
    if (!value.is_array()) return;  // the reader says what the value must be
    for (std::size_t i = 0; i < value.size(); ++i)
      check(value[i], shape.at("[]"), path + "[" + std::to_string(i) + "]", origin);
    return;
  }
  if (!value.is_object()) return;
  if (shape.contains("*")) {
    for (auto it = value.begin(); it != value.end(); ++it) check(it.value(), shape.at("*"), path + "." + it.key(), origin);
    return;
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    std::string here = path.empty() ? it.key() : path + "." + it.key();
    if (!shape.contains(it.key())) {
      std::string near = nearest(it.key(), shape);
      std::string known;
      for (auto k = shape.begin(); k != shape.end(); ++k) known += (known.empty() ? "" : ", ") + k.key();
      throw InputError(origin + ": unknown key \"" + here + "\" (" +
                       (near.empty() ? "known" + std::string(path.empty() ? "" : " in \"" + path + "\"") + ": " + known
                                     : "did you mean \"" + (path.empty() ? near : path + "." + near) + "\"?") +
                       ")");
    }
    check(it.value(), shape.at(it.key()), here, origin);
  }
}

}  // namespace

void checkKeys(const json& target, const std::string& origin) { check(target, schema(), "", origin); }

}  // namespace layergate::target
