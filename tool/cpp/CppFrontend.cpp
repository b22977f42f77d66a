// C++ frontend: parse the given .cuh/.cu files with Clang in CUDA host mode
// (bundled stub headers by default), find Class::dispatch, and hand its body
// to the path walker. Missing includes get empty in-memory files; Clang errors
// are counted and reported as notes, never fatal to the analysis.
#include "cpp/CppFrontend.h"

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Basic/Stack.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Basic/Version.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Tooling/Tooling.h"
#include "cpp/DispatchWalker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/xxhash.h"
#include <unistd.h>
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/thread.h"
#include "model/Errors.h"

#ifndef LAYERGATE_STUB_DIR
#define LAYERGATE_STUB_DIR "tool/cpp/stubs"
#endif
#ifndef LAYERGATE_CLANG_RESOURCE_DIR
#define LAYERGATE_CLANG_RESOURCE_DIR "/usr/lib/llvm-19/lib/clang/19"
#endif

namespace layergate::cpp {
namespace {

using namespace clang;

// Directory where empty files stand in for angle-bracket includes that
// cannot be found. It exists only in the in-memory overlay.
constexpr const char* kMissingDir = "/__layergate_missing__";

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

// ---------------------------------------------------------------------------
// Diagnostics: count errors, remember the first one; never print.

class CollectingDiags : public DiagnosticConsumer {
 public:
  void HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < DiagnosticsEngine::Error) return;
    ++errors;
    if (level == DiagnosticsEngine::Fatal) fatal = true;
    if (!first.empty() && !(level == DiagnosticsEngine::Fatal && first_fatal.empty())) return;
    llvm::SmallString<256> msg;
    info.FormatDiagnostic(msg);
    std::string where;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      PresumedLoc p = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (p.isValid()) where = std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ": ";
    }
    std::string text = where + std::string(msg.str());
    if (first.empty()) first = text;
    if (level == DiagnosticsEngine::Fatal && first_fatal.empty()) first_fatal = text;
  }
  unsigned errors = 0;
  bool fatal = false;
  std::string first, first_fatal;
};

// ---------------------------------------------------------------------------
// One parse of one file.

struct ParseResult {
  bool found = false;
  model::Dispatch dispatch;
  std::vector<std::string> notes;
  std::exception_ptr error;  // InputError from the walker
};

struct ParseJob {
  std::string path;  // as given by the caller
  const target::CppDispatchSpec* spec = nullptr;
  const ParseOptions* options = nullptr;
  std::string stub_dir;
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> memfs;
  std::map<std::string, std::string> stubbed;  // path of the empty file -> note
  std::set<std::string> stub_noted;
  ParseResult result;
};

class IncludeWatcher : public PPCallbacks {
 public:
  IncludeWatcher(ParseJob& job, SourceManager& sm) : job_(job), sm_(sm) {}
  void InclusionDirective(SourceLocation hash, const Token&, StringRef, bool, CharSourceRange,
                          OptionalFileEntryRef file, StringRef, StringRef, const Module*, bool,
                          SrcMgr::CharacteristicKind) override {
    if (!file) return;
    std::string p = normalized(file->getName());
    auto it = job_.stubbed.find(p);
    if (it == job_.stubbed.end()) return;
    if (job_.stub_noted.insert(p).second) job_.result.notes.push_back(it->second);
  }
  bool FileNotFound(StringRef name) override {
    // Safety net for includes the pre-scan could not see (computed names).
    std::string n = "stubbed missing include \"" + name.str() + "\" (found while parsing)";
    if (job_.stub_noted.insert("?" + name.str()).second) job_.result.notes.push_back(n);
    return true;
  }

 private:
  ParseJob& job_;
  SourceManager& sm_;
};

class FindDispatch : public RecursiveASTVisitor<FindDispatch> {
 public:
  explicit FindDispatch(const target::CppDispatchSpec& spec) : spec_(spec) {}
  bool VisitFunctionDecl(FunctionDecl* fd) {
    auto* md = dyn_cast<CXXMethodDecl>(fd);
    if (!md || !md->doesThisDeclarationHaveABody()) return true;
    if (md->isTemplateInstantiation()) return true;
    std::string fn = md->getNameAsString();
    std::string cls = md->getParent()->getNameAsString();
    bool fnOk = false, clsOk = false;
    for (auto& f : spec_.dispatch_functions) fnOk |= (f == fn);
    for (auto& c : spec_.class_names) clsOk |= (c == cls);
    if (fnOk && clsOk) found.push_back(md);
    return true;
  }
  std::vector<const CXXMethodDecl*> found;

 private:
  const target::CppDispatchSpec& spec_;
};

class Consumer : public ASTConsumer {
 public:
  Consumer(ParseJob& job, CompilerInstance& ci) : job_(job), ci_(ci) {}

  // Keep host bodies only: kernels and device functions are not needed.
  bool shouldSkipFunctionBody(Decl* d) override {
    const FunctionDecl* fd = d->getAsFunction();
    if (!fd) return false;
    // Library and stub bodies are never needed: only user host code is walked.
    SourceManager& sm = ci_.getSourceManager();
    SourceLocation l = sm.getExpansionLoc(d->getLocation());
    if (sm.isInSystemHeader(l)) return true;
    if (fd->hasAttr<CUDAGlobalAttr>()) return true;
    if (fd->hasAttr<CUDADeviceAttr>() && !fd->hasAttr<CUDAHostAttr>()) return true;
    return false;
  }

  void HandleTranslationUnit(ASTContext& ctx) override {
    try {
      FindDispatch finder(*job_.spec);
      finder.TraverseDecl(ctx.getTranslationUnitDecl());
      if (finder.found.empty()) return;
      SourceManager& sm = ctx.getSourceManager();
      // Map files the caller named to the caller's spelling of the path.
      std::map<llvm::sys::fs::UniqueID, std::string> given;
      if (auto fe = ci_.getFileManager().getOptionalFileRef(job_.path))
        given[fe->getUniqueID()] = job_.path;
      std::string stubs = normalized(job_.stub_dir);
      detail::WalkOptions wo;
      wo.max_depth = job_.options->max_depth;
      wo.file_name = [&sm, given](const SourceLocation& l) -> std::string {
        FileID id = sm.getFileID(l);
        OptionalFileEntryRef fe = sm.getFileEntryRefForID(id);
        if (!fe) return sm.getFilename(l).str();
        auto it = given.find(fe->getUniqueID());
        if (it != given.end()) return it->second;
        llvm::SmallString<256> s(fe->getName());
        llvm::sys::path::remove_dots(s, true);
        return std::string(s.str());
      };
      wo.is_user_code = [&sm, stubs](const SourceLocation& l) -> bool {
        if (l.isInvalid()) return false;
        SourceLocation e = sm.getExpansionLoc(l);
        if (sm.isInSystemHeader(e)) return false;
        std::string f = normalized(sm.getFilename(e));
        return !startsWithDir(f, stubs);
      };
      const CXXMethodDecl* chosen = finder.found.front();
      for (const CXXMethodDecl* md : finder.found)
        if (detail::bodyLaunches(ctx, md, wo)) {
          chosen = md;
          break;
        }
      job_.result.dispatch = detail::walkDispatch(ctx, chosen, *job_.spec, wo);
      job_.result.found = true;
    } catch (...) {
      job_.result.error = std::current_exception();
    }
  }

 private:
  ParseJob& job_;
  CompilerInstance& ci_;
};

class Action : public ASTFrontendAction {
 public:
  explicit Action(ParseJob& job) : job_(job) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, StringRef) override {
    ci.getPreprocessor().addPPCallbacks(std::make_unique<IncludeWatcher>(job_, ci.getSourceManager()));
    return std::make_unique<Consumer>(job_, ci);
  }

 private:
  ParseJob& job_;
};

// Pre-scan the file and the local headers it includes for #include lines that
// no search directory resolves; give each an empty in-memory file.
class PreScan {
 public:
  PreScan(ParseJob& job, const HeaderSearchOptions& hs) : job_(job) {
    for (const auto& e : hs.UserEntries) {
      std::string p = normalized(e.Path);
      bool user = (e.Group == frontend::Angled || e.Group == frontend::Quoted) && p != kMissingDir;
      dirs_.push_back({p, user});
    }
    stubs_ = normalized(job.stub_dir);
  }

  void scan(const std::string& file, const std::string& shown, int depth) {
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
      for (std::size_t i = 0; found.empty() && i < dirs_.size(); ++i) {
        std::string c = normalized(dirs_[i].first + "/" + name);
        if (llvm::sys::fs::is_regular_file(c)) {
          found = c;
          user = dirs_[i].second && !startsWithDir(c, stubs_);
        }
      }
      if (!found.empty()) {
        if (user) scan(found, found, depth + 1);
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

 private:
  ParseJob& job_;
  std::vector<std::pair<std::string, bool>> dirs_;
  std::string stubs_;
  std::set<std::string> visited_;
};

class ToolAct : public tooling::ToolAction {
 public:
  explicit ToolAct(ParseJob& job) : job_(job) {}
  bool runInvocation(std::shared_ptr<CompilerInvocation> inv, FileManager* files,
                     std::shared_ptr<PCHContainerOperations> pch, DiagnosticConsumer* diags) override {
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getDiagnosticOpts().ShowCarets = false;  // no "N errors generated" on stderr
    PreScan(job_, inv->getHeaderSearchOpts()).scan(job_.path, job_.path, 0);
    CompilerInstance ci(std::move(pch));
    ci.setInvocation(std::move(inv));
    ci.setFileManager(files);
    ci.createDiagnostics(diags, /*ShouldOwnClient=*/false);
    if (!ci.hasDiagnostics()) return false;
    ci.createSourceManager(*files);
    Action action(job_);
    bool ok = ci.ExecuteAction(action);
    files->clearStatCache();
    return ok;
  }

 private:
  ParseJob& job_;
};

std::vector<std::string> commandLine(const std::string& path, const ParseOptions& o, const std::string& stubs,
                                     const std::vector<std::string>& inputs, const std::string& pch = {}) {
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
                                "-w",
                                "-resource-dir", LAYERGATE_CLANG_RESOURCE_DIR};
  if (o.real_cuda_sdk) {
    a.push_back("--cuda-path=" + o.cuda_path);
    a.insert(a.end(), {"-isystem", stubs + "/torch", "-idirafter", stubs + "/sdk-shim"});
  } else {
    a.insert(a.end(), {"-nocudainc", "-isystem", stubs + "/cuda", "-isystem", stubs + "/torch"});
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

class PchToolAct : public tooling::ToolAction {
 public:
  explicit PchToolAct(std::string out) : out_(std::move(out)) {}
  bool runInvocation(std::shared_ptr<CompilerInvocation> inv, FileManager* files,
                     std::shared_ptr<PCHContainerOperations> pch, DiagnosticConsumer* diags) override {
    inv->getFrontendOpts().SkipFunctionBodies = true;
    inv->getFrontendOpts().OutputFile = out_;
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

std::string cacheDir() {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = "/tmp/layergate-" + std::to_string(getuid());
  return base + "/layergate";
}

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
  if (llvm::sys::fs::exists(out)) return out;
  if (llvm::sys::fs::create_directories(dir)) return {};
  std::string tmp = out + ".tmp" + std::to_string(getpid());
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
  return out;
}

struct FileParse {
  ParseResult result;
  unsigned errors = 0;
  bool fatal = false;
  std::string first_error, first_fatal;
};

FileParse parseOne(const std::string& path, const std::vector<std::string>& inputs,
                   const target::CppDispatchSpec& spec, const ParseOptions& options, const std::string& pch) {
  ParseJob job;
  job.path = path;
  job.spec = &spec;
  job.options = &options;
  job.stub_dir = LAYERGATE_STUB_DIR;
  job.memfs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  job.memfs->addFile(std::string(kMissingDir) + "/.layergate", 0, llvm::MemoryBuffer::getMemBuffer(""));
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(job.memfs);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(), overlay);
  CollectingDiags diags;
  ToolAct act(job);
  tooling::ToolInvocation inv(commandLine(path, options, job.stub_dir, inputs, pch), &act, files.get(),
                              std::make_shared<PCHContainerOperations>());
  inv.setDiagnosticConsumer(&diags);
  inv.run();
  FileParse out;
  out.result = std::move(job.result);
  out.errors = diags.errors;
  out.fatal = diags.fatal;
  out.first_error = diags.first;
  out.first_fatal = diags.first_fatal;
  return out;
}

std::string readChecked(const std::string& path) {
  if (!llvm::sys::fs::exists(path)) throw InputError(path + ": no such file");
  if (llvm::sys::fs::is_directory(path)) throw InputError(path + ": is a directory, not a C++/CUDA file");
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) throw InputError(path + ": cannot read: " + buf.getError().message());
  llvm::StringRef text = (*buf)->getBuffer();
  if (text.contains('\0')) throw InputError(path + ": binary file, not C++/CUDA source");
  return text.str();
}

model::Dispatch extractImpl(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                            const ParseOptions& options) {
  if (files.empty()) throw InputError("no C++/CUDA file given");
  // Rank files: those that define a class of the spec first, then those that
  // mention it; a file mentioning none is parsed only to explain the failure.
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& f : files) {
    std::string text = readChecked(f);
    int rank = 2;
    for (const auto& c : spec.class_names) {
      std::regex def("\\b(class|struct)\\s+" + c + "\\b");
      if (std::regex_search(text, def)) rank = std::min(rank, 0);
      else if (text.find(c) != std::string::npos) rank = std::min(rank, 1);
    }
    ranked.push_back({rank, f});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string what = (spec.class_names.empty() ? std::string("?") : spec.class_names.front()) + "::" +
                     (spec.dispatch_functions.empty() ? std::string("?") : spec.dispatch_functions.front());
  FileParse last;
  bool parsed = false;
  for (const auto& [rank, f] : ranked) {
    if (rank == 2 && parsed) break;
    std::string pch = preludePch(options, LAYERGATE_STUB_DIR);
    FileParse p = parseOne(f, files, spec, options, pch);
    if (!pch.empty() && p.fatal) {  // perhaps a stale PCH (headers upgraded): parse without it
      llvm::StringRef msg(p.first_fatal);
      if (msg.contains_insensitive("precompiled") || msg.contains("PCH") || msg.contains("AST file"))
        llvm::sys::fs::remove(pch);
      p = parseOne(f, files, spec, options, {});
    }
    parsed = true;
    if (p.result.error) std::rethrow_exception(p.result.error);
    if (p.fatal)
      throw InputError(f + ": clang fatal error, cannot analyse: " + p.first_fatal);
    if (p.result.found) {
      model::Dispatch d = std::move(p.result.dispatch);
      std::vector<std::string> notes = std::move(p.result.notes);
      if (p.errors > 0)
        notes.push_back(std::to_string(p.errors) + " clang error" + (p.errors == 1 ? "" : "s") +
                        " while parsing " + f + " (analysis went on), first: " + p.first_error);
      for (auto& n : d.notes) notes.push_back(std::move(n));
      d.notes = std::move(notes);
      return d;
    }
    last = std::move(p);
    if (rank == 2) break;
  }
  std::string names;
  for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
  std::string msg = names + ": no dispatch " + what + " with a body found";
  if (last.errors > 0)
    msg += " (" + std::to_string(last.errors) + " clang error" + (last.errors == 1 ? "" : "s") +
           ", first: " + last.first_error + ")";
  throw InputError(msg);
}

}  // namespace

model::Dispatch extractDispatch(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                                const ParseOptions& options) {
  // Clang and the walker recurse over the source's nesting; run them on a
  // thread with a large stack so hostile inputs end in an InputError.
  model::Dispatch out;
  std::exception_ptr err;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] {
    clang::noteBottomOfStack();
    try {
      out = extractImpl(files, spec, options);
    } catch (...) {
      err = std::current_exception();
    }
  });
  worker.join();
  if (err) std::rethrow_exception(err);
  return out;
}

}  // namespace layergate::cpp
