// What git ignores under a scanned directory, for the walk
// (discover::Options::ignored).
//
// Takes: the directory. Returns: its root-relative paths that the .gitignore
// files (nested ones too), .git/info/exclude and the user's excludes file
// leave out, a directory's with a trailing '/'; empty when the directory is
// not in a git checkout, git is missing, or the directory itself is ignored
// (a tree named on the command line is scanned whatever git says of it).
#pragma once

#include <set>
#include <string>

namespace layergate::driver {

std::set<std::string> gitIgnored(const std::string& root);

}  // namespace layergate::driver
