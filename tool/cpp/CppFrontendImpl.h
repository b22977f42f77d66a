// The parse of one file (internal to lg_cpp): the job, what it found, its
// diagnostics; and its compile settings (CppCompile.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "clang/Basic/Diagnostic.h"
#include "clang/Lex/HeaderSearchOptions.h"
#include "cpp/CppFrontend.h"
#include "cpp/CppTraceFacts.h"
#include "llvm/Support/VirtualFileSystem.h"

namespace layergate::cpp::detail::parse {

using namespace clang;

// Directory where empty files stand in for angle-bracket includes that
// cannot be found. It exists only in the in-memory overlay.
constexpr const char* kMissingDir = "/__layergate_missing__";

// Paths made absolute without dots; a path's directory; whether a path is
// inside a directory.
std::string normalized(llvm::StringRef p);
std::string dirOf(const std::string& path);
bool startsWithDir(const std::string& path, const std::string& dir);

// ---------------------------------------------------------------------------
// Diagnostics: count errors, remember the first one; never print.

class CollectingDiags : public DiagnosticConsumer {
 public:
  void HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) override;
  unsigned errors = 0;
  bool fatal = false;
  std::string first, first_fatal;
  // Every error with a location (the first kMaxLocated), for the dispatch to
  // find those inside it while the source manager lives.
  static constexpr std::size_t kMaxLocated = 4096;
  std::vector<LocatedError> located;
};

// ---------------------------------------------------------------------------
// One parse of one file.

struct ParseResult {
  bool found = false;
  model::Dispatch dispatch;
  std::vector<std::string> notes;
  std::exception_ptr error;  // InputError from the walker
  TraceFacts facts;
};

struct ParseJob {
  std::string path;  // as given by the caller
  const std::vector<std::string>* inputs = nullptr;  // every file the caller gave
  bool want_dispatch = true;  // false once another file gave the dispatch
  // A file whose function bodies this parse skips: a parse of its own walks
  // them (the dispatch header, in a parse for trace facts of a .cu that
  // includes it). Empty: none.
  std::string skip_bodies_of;
  llvm::IntrusiveRefCntPtr<DeclareMissingOps> missing_ops;
  const target::CppDispatchSpec* spec = nullptr;
  const ParseOptions* options = nullptr;
  std::string stub_dir;
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> memfs;
  std::map<std::string, std::string> stubbed;  // path of the empty file -> note
  std::set<std::string> stub_noted;
  const CollectingDiags* diags = nullptr;
  // The parse's semantic analysis, while it lives: the walk instantiates the
  // templates it follows through it (CppFrontend.cpp, DeferInstantiations).
  Sema* sema = nullptr;
  ParseResult result;
};

// --- compile settings (CppCompile.cpp) ---------------------------------------

// Pre-scan the file and the local headers it includes for #include lines that
// no search directory resolves; give each an empty in-memory file.
class PreScan {
 public:
  PreScan(ParseJob& job, const HeaderSearchOptions& hs);

  void scan(const std::string& file, const std::string& shown, int depth);

 private:
  ParseJob& job_;
  struct Dir {
    std::string first;  // normalized
    bool second;        // user code
    std::string raw;    // as given with -I
  };
  std::vector<Dir> dirs_;
  std::string stubs_;
  std::set<std::string> visited_;
};

// The clang command line for one file (or, for the prelude header, the PCH).
std::vector<std::string> commandLine(const std::string& path, const ParseOptions& o, const std::string& stubs,
                                     const std::vector<std::string>& inputs, const std::string& pch = {});

std::string preludePch(const ParseOptions& o, const std::string& stubs);

ParseOptions withTargetSettings(const ParseOptions& in, const target::CppDispatchSpec& spec,
                                const std::vector<std::string>& files);

}  // namespace layergate::cpp::detail::parse
