// Compile settings of a parse: the clang command line, the include pre-scan
// (empty files for missing includes), the precompiled prelude, and the
// target's include directories and defines.
#include "cpp/CppFrontendImpl.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "clang/Basic/FileManager.h"
#include "clang/Basic/Version.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#ifndef LAYERGATE_CLANG_RESOURCE_DIR
#define LAYERGATE_CLANG_RESOURCE_DIR "/usr/lib/llvm-19/lib/clang/19"
#endif

namespace layergate::cpp::detail::parse {

std::string normalized(llvm::StringRef p) {
  llvm::SmallString<256> s(p);
  llvm::sys::fs::make_absolute(s);
  llvm::sys::path::remove_dots(s, /*remove_dot_dot=*/true);
  return std::string(s.str());
}

std::string dirOf(const std::string& path) {
  llvm::SmallString<256> s(llvm::sys::path::parent_path(normalized(path)));
  return s.empty() ? std::string(".") : std::string(s.str());
}

bool startsWithDir(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

PreScan::PreScan(ParseJob& job, const HeaderSearchOptions& hs) : job_(job) {
  for (const auto& e : hs.UserEntries) {
    std::string p = normalized(e.Path);
    bool user = (e.Group == frontend::Angled || e.Group == frontend::Quoted) && p != kMissingDir;
    dirs_.push_back({p, user, e.Path});
  }
  stubs_ = normalized(job.stub_dir);
}

void PreScan::scan(const std::string& file, const std::string& shown, int depth) {
  std::string key = normalized(file);
  if (depth > 32 || !visited_.insert(key).second) return;
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf) return;
  static const std::regex inc(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::istringstream in((*buf)->getBuffer().str());
  std::string line;
  int lineNo = 0;
  std::string dir = dirOf(file);
  while (std::getline(in, line)) {
    ++lineNo;
    std::smatch mt;
    if (line.find("include") == std::string::npos || !std::regex_search(line, mt, inc)) continue;
    bool quoted = mt[1] == "\"";
    std::string name = mt[2];
    std::string found;
    bool user = false;
    if (quoted) {
      std::string c = normalized(dir + "/" + name);
      if (llvm::sys::fs::is_regular_file(c)) {
        found = c;
        user = !startsWithDir(c, stubs_);
      }
    }
    std::string raw;  // as the search directory spells it
    for (std::size_t i = 0; found.empty() && i < dirs_.size(); ++i) {
      std::string c = normalized(dirs_[i].first + "/" + name);
      if (llvm::sys::fs::is_regular_file(c)) {
        found = c;
        raw = dirs_[i].raw + "/" + name;
        user = dirs_[i].second && !startsWithDir(c, stubs_);
      }
    }
    if (!found.empty()) {
      if (user) {
        // the caller's spelling when it is a given file, else the -I's
        std::string spelled = raw.empty() || llvm::sys::path::is_absolute(raw) ? found : raw;
        if (job_.inputs)
          for (const auto& in : *job_.inputs)
            if (normalized(in) == found) spelled = in;
        scan(found, spelled, depth + 1);
      }
      continue;
    }
    // Missing: an empty file where Clang will look first.
    std::string target;
    if (quoted) target = normalized(dir + "/" + name);
    else if (name.find("..") == std::string::npos) target = std::string(kMissingDir) + "/" + name;
    else continue;
    if (job_.stubbed.count(target)) continue;
    job_.memfs->addFile(target, 0, llvm::MemoryBuffer::getMemBuffer("", target));
    std::string spelled = quoted ? "\"" + name + "\"" : "<" + name + ">";
    job_.stubbed[target] = "stubbed missing include " + spelled + " (" + shown + ":" + std::to_string(lineNo) + ")";
  }
}

std::vector<std::string> commandLine(const std::string& path, const ParseOptions& o, const std::string& stubs,
                                     const std::vector<std::string>& inputs, const std::string& pch) {
  std::vector<std::string> a = {"layergate-clang",
                                "-x", "cuda",
                                "--cuda-host-only",
                                "-nocudalib",
                                "-std=c++17",
                                "-fsyntax-only",
                                "-Wno-unknown-cuda-version",
                                "-D__restrict__=",
                                "-fno-delayed-template-parsing",
                                "-ferror-limit=0",
                                "-fno-spell-checking",
                                "-w",
                                "-resource-dir", LAYERGATE_CLANG_RESOURCE_DIR};
  if (o.real_cuda_sdk) {
    a.push_back("--cuda-path=" + o.cuda_path);
    a.insert(a.end(), {"-isystem", stubs + "/torch", "-isystem", stubs + "/tvm-ffi", "-idirafter", stubs + "/sdk-shim"});
  } else {
    a.insert(a.end(), {"-nocudainc", "-isystem", stubs + "/cuda", "-isystem", stubs + "/torch", "-isystem",
                       stubs + "/tvm-ffi"});
    if (!pch.empty()) a.insert(a.end(), {"-include-pch", pch});
    else if (path != stubs + "/layergate_pch.h") a.insert(a.end(), {"-include", stubs + "/layergate_cuda_prelude.h"});
  }
  if (path == stubs + "/layergate_pch.h") {  // building the PCH: no per-input options
    for (const auto& x : o.extra_args) a.push_back(x);
    a.push_back(path);
    return a;
  }
  std::set<std::string> seen;
  for (const auto& f : inputs) {
    std::string d = dirOf(f);
    if (seen.insert(d).second) a.push_back("-I" + d);
  }
  for (const auto& d : o.include_dirs) a.push_back("-I" + d);
  a.push_back("-idirafter");
  a.push_back(kMissingDir);
  for (const auto& x : o.extra_args) a.push_back(x);
  a.push_back(path);
  return a;
}

// --- precompiled prelude --------------------------------------------------------
//
// The prelude and the standard headers dispatch headers include are parsed
// once into a PCH in the user's cache directory and loaded lazily afterwards:
// most of a parse is spent in those headers. Any problem: parse without it.

namespace {

class PchToolAct : public tooling::ToolAction {
 public:
  explicit PchToolAct(std::string out) : out_(std::move(out)) {}
  bool runInvocation(std::shared_ptr<CompilerInvocation> inv, FileManager* files,
                     std::shared_ptr<PCHContainerOperations> pch, DiagnosticConsumer* diags) override {
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getFrontendOpts().OutputFile = out_;
    // Written in place: out_ is already a file of this build's own, renamed
    // into the cache when whole. (Through a temporary, LLVM would install
    // signal handlers on this thread, and an alternate signal stack that
    // AddressSanitizer then fails to unmap when the thread ends.)
    inv->getFrontendOpts().UseTemporary = false;
    inv->getDiagnosticOpts().ShowCarets = false;
    CompilerInstance ci(std::move(pch));
    ci.setInvocation(std::move(inv));
    ci.setFileManager(files);
    ci.createDiagnostics(diags, /*ShouldOwnClient=*/false);
    if (!ci.hasDiagnostics()) return false;
    ci.createSourceManager(*files);
    GeneratePCHAction action;
    bool ok = ci.ExecuteAction(action);
    files->clearStatCache();
    return ok;
  }

 private:
  std::string out_;
};

// LAYERGATE_CACHE_DIR names the folder itself (a CI cache step keeps it
// between jobs); else the user's cache directory.
std::string cacheDir() {
  if (const char* d = std::getenv("LAYERGATE_CACHE_DIR"); d && *d) return d;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = "/tmp/layergate-" + std::to_string(getuid());
  return base + "/layergate";
}

// Each set of compile options (a target's -std, -D and -I folders, which
// name the checkout) has a PCH of its own, ~10-15 MB: without a bound the
// folder grows by one per checkout and per clang or stub change. When one
// is written, the least recently used beyond kKeepPreludes or kKeepBytes go
// (a hit refreshes a file's time), and a partial file a killed build left;
// a file used in the last minutes stays whatever the bound, since another
// analysis may be about to load it.
constexpr std::size_t kKeepPreludes = 8;
constexpr std::uintmax_t kKeepBytes = 256u << 20;
constexpr auto kInUse = std::chrono::minutes(10);

void evictPreludes(const std::string& dir, const std::string& keep) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::path path;
    fs::file_time_type time;
    std::uintmax_t bytes;
  };
  std::vector<Entry> pchs;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("prelude-", 0) != 0 || !it->is_regular_file(ec)) continue;
    auto time = it->last_write_time(ec);
    if (ec) continue;
    if (name.find(".pch.tmp-") != std::string::npos) {
      if (now - time > std::chrono::hours(1)) fs::remove(it->path(), ec);
      continue;
    }
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".pch") != 0) continue;
    pchs.push_back({it->path(), time, it->file_size(ec)});
  }
  std::sort(pchs.begin(), pchs.end(), [](const Entry& a, const Entry& b) { return a.time > b.time; });
  std::size_t count = 0;
  std::uintmax_t bytes = 0;
  for (const auto& e : pchs) {
    ++count;
    bytes += e.bytes;
    bool within = count <= kKeepPreludes && bytes <= kKeepBytes;
    if (within || e.path == fs::path(keep) || now - e.time < kInUse) continue;
    fs::remove(e.path, ec);
  }
}

}  // namespace

// Path of a usable PCH for these options, building it if needed; empty when
// precompiling is off or failed.
std::string preludePch(const ParseOptions& o, const std::string& stubs) {
  if (o.real_cuda_sdk) return {};
  if (const char* off = std::getenv("LAYERGATE_NO_PCH"); off && *off && std::string(off) != "0") return {};
  std::string header = stubs + "/layergate_pch.h";
  std::vector<std::string> args = commandLine(header, o, stubs, {});
  std::string key = clang::getClangFullVersion();
  for (const auto& a : args) key += "\n" + a;
  for (const char* f : {"/layergate_pch.h", "/layergate_cuda_prelude.h", "/cuda/layergate_half_types.h"}) {
    auto buf = llvm::MemoryBuffer::getFile(stubs + f);
    if (!buf) return {};
    key += (*buf)->getBuffer().str();
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(llvm::xxh3_64bits(key)));
  std::string dir = cacheDir();
  std::string out = dir + "/prelude-" + hex + ".pch";
  auto used = [&] {  // least recently used goes first (evictPreludes)
    std::error_code ec;
    std::filesystem::last_write_time(out, std::filesystem::file_time_type::clock::now(), ec);
    return out;
  };
  if (llvm::sys::fs::exists(out)) return used();
  // Built once per process (analyses run side by side); other processes may
  // build it at the same time: each writes a file of its own and renames it
  // into place, so a reader sees a whole PCH or none.
  static std::mutex building;
  std::lock_guard<std::mutex> lock(building);
  if (llvm::sys::fs::exists(out)) return used();
  if (llvm::sys::fs::create_directories(dir)) return {};
  llvm::SmallString<256> unique;
  if (llvm::sys::fs::createUniqueFile(out + ".tmp-%%%%%%%%", unique)) return {};
  std::string tmp(unique.str());
  CollectingDiags diags;
  PchToolAct act(tmp);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions());
  tooling::ToolInvocation inv(args, &act, files.get(), std::make_shared<PCHContainerOperations>());
  inv.setDiagnosticConsumer(&diags);
  bool ok = inv.run() && diags.errors == 0 && llvm::sys::fs::exists(tmp);
  if (!ok || llvm::sys::fs::rename(tmp, out)) {
    llvm::sys::fs::remove(tmp);
    return {};
  }
  evictPreludes(dir, out);
  return out;
}

// The target's compile settings (cpp.include_dirs, cpp.defines, cpp.std) over
// the caller's options. An include directory is relative to the checkout
// root, which is some directory above the dispatch file: each is looked up
// from the file's own directory upwards, nearest first, and added where it
// exists (several files under different roots: each root's copy).
ParseOptions withTargetSettings(const ParseOptions& in, const target::CppDispatchSpec& spec,
                                const std::vector<std::string>& files) {
  ParseOptions o = in;
  std::set<std::string> seen(o.include_dirs.begin(), o.include_dirs.end());
  for (const auto& c : targetIncludeDirs(files, spec.include_dirs))
    if (seen.insert(c).second) o.include_dirs.push_back(c);
  if (!spec.std.empty()) o.extra_args.insert(o.extra_args.begin(), "-std=" + spec.std);
  for (std::size_t i = 0; i < spec.defines.size(); ++i)
    o.extra_args.insert(o.extra_args.begin() + static_cast<long>(i) + (spec.std.empty() ? 0 : 1), "-D" + spec.defines[i]);
  return o;
}

}  // namespace layergate::cpp::detail::parse

namespace layergate::cpp {

std::vector<std::string> targetIncludeDirs(const std::vector<std::string>& files, const std::vector<std::string>& rel) {
  using detail::parse::dirOf;
  using detail::parse::normalized;
  std::vector<std::string> out;
  for (const auto& r : rel)
    for (const auto& f : files) {
      std::string dir = dirOf(f);
      for (int up = 0; up < 64 && !dir.empty(); ++up) {
        std::string c = normalized(dir + "/" + r);
        if (llvm::sys::fs::is_directory(c)) {
          if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
          break;
        }
        std::string parent(llvm::sys::path::parent_path(dir));
        if (parent == dir) break;
        dir = parent;
      }
    }
  return out;
}

}  // namespace layergate::cpp
