// The keys a target description may hold (docs/targets.md), checked as a
// compiler checks a user's input: a target file is data a user writes, and a
// misspelled key ("plaform") that was silently ignored would leave the
// target on its default (cuda) with no word said.
//
// Takes: one target file's JSON as written (before "extends" merges it).
// Throws InputError naming the first unknown key by its path and the known
// key nearest to it ("did you mean ...?").
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace layergate::target {

void checkKeys(const nlohmann::json& target, const std::string& origin);

}  // namespace layergate::target
