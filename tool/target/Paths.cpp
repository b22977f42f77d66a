// Data-directory lookup for installed and in-tree binaries (see Paths.h).
#include "target/Paths.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef LAYERGATE_SOURCE_DIR
#define LAYERGATE_SOURCE_DIR "."
#endif
#ifndef LAYERGATE_STUB_DIR
#define LAYERGATE_STUB_DIR LAYERGATE_SOURCE_DIR "/tool/cpp/stubs"
#endif

namespace layergate::paths {
namespace {

namespace fs = std::filesystem;

// env, then <exe>/../share/layergate/<installed>, then the build-tree path.
// `probe` is a file or folder inside the directory that must exist for a
// candidate to count (an empty share/layergate left by a failed install is
// skipped).
std::string find(const char* env, const char* installed, const std::string& built, const char* probe) {
  if (const char* e = std::getenv(env); e && *e) return e;
  std::string here = exeDir();
  if (!here.empty()) {
    fs::path p = (fs::path(here) / ".." / "share" / "layergate" / installed).lexically_normal();
    std::error_code ec;
    if (fs::exists(p / probe, ec)) return p.string();
  }
  return built;
}

}  // namespace

std::string exeDir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec || self.empty()) return "";
  return self.parent_path().string();
}

std::string rulesDir() { return find("LAYERGATE_RULES", "rules", std::string(LAYERGATE_SOURCE_DIR) + "/rules", "targets"); }

std::string stubDir() { return find("LAYERGATE_STUBS", "stubs", LAYERGATE_STUB_DIR, "layergate_cuda_prelude.h"); }

}  // namespace layergate::paths
