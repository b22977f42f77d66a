// C++ frontend: parse the given .cuh/.cu files with Clang in CUDA host mode
// (bundled stub headers by default), find Class::dispatch, and hand its body
// to the path walker. Missing includes get empty in-memory files; Clang errors
// are counted and reported as notes, never fatal to the analysis.
// This file: the parse of each file (the AST consumer, finding the dispatch)
// and merging their results; compile settings are in CppCompile.cpp, trace
// facts in CppTraceFacts.cpp.
#include "cpp/CppFrontend.h"

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <set>

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
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "clang/Tooling/Tooling.h"
#include "cpp/CppFrontendImpl.h"
#include "cpp/DispatchWalker.h"
#include "jobs/Jobs.h"
#include "jobs/Trace.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/thread.h"
#include "model/Errors.h"
#include "target/Paths.h"

namespace layergate::cpp::detail::parse {

void CollectingDiags::HandleDiagnostic(DiagnosticsEngine::Level level, const Diagnostic& info) {
  DiagnosticConsumer::HandleDiagnostic(level, info);
  if (level < DiagnosticsEngine::Error) return;
  ++errors;
  if (level == DiagnosticsEngine::Fatal) fatal = true;
  if (info.hasSourceManager() && info.getLocation().isValid() && located.size() < kMaxLocated) {
    llvm::SmallString<256> m;
    info.FormatDiagnostic(m);
    llvm::StringRef category = DiagnosticIDs::getCategoryNameFromID(DiagnosticIDs::getCategoryNumberForDiag(info.getID()));
    bool lexical = category == "Lexical or Preprocessor Issue";
    located.push_back({info.getLocation(), std::string(m.str()), lexical || category == "Parse Issue", lexical});
  }
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

namespace {

class IncludeWatcher : public PPCallbacks {
 public:
  explicit IncludeWatcher(ParseJob& job) : job_(job) {}
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
};

// Clang instantiates at the end of the translation unit every function
// template specialization the file uses (a launcher per dtype, head size and
// block size): most of a parse's time on a dispatch written as templates,
// and of no use to the analysis except the specializations the dispatch walk
// enters. Sema asks its external sources for their pending instantiations
// just before it performs them: this source then empties the queue (the
// file's and the precompiled prelude's). The walk reads a specialization it
// follows through its template's pattern, and asks for the instantiations it
// must read instead (WalkOptions::instantiate), whose errors are then
// collected as any other. Specializations clang must instantiate at once
// (constexpr functions, for constant evaluation) are never queued.
class DeferInstantiations : public ExternalSemaSource {
 public:
  Sema* sema = nullptr;
  void ReadPendingInstantiations(SmallVectorImpl<std::pair<ValueDecl*, SourceLocation>>& pending) override {
    pending.clear();
    if (sema) sema->PendingInstantiations.clear();
  }
};

class FindDispatch : public RecursiveASTVisitor<FindDispatch> {
 public:
  explicit FindDispatch(const target::CppDispatchSpec& spec) : spec_(spec) {}
  // A member function of one of the spec's classes, or, when the spec names no
  // class, a namespace-scope function (a free function template such as a
  // dispatch on the ranks per node).
  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (!fd->doesThisDeclarationHaveABody() || fd->isTemplateInstantiation()) return true;
    std::string fn = fd->getNameAsString();
    bool fnOk = false, clsOk = false;
    for (auto& f : spec_.dispatch_functions) fnOk |= (f == fn);
    if (auto* md = dyn_cast<CXXMethodDecl>(fd)) {
      std::string cls = md->getParent()->getNameAsString();
      for (auto& c : spec_.class_names) clsOk |= (c == cls);
    } else {
      clsOk = spec_.class_names.empty() && fd->getDeclContext()->getRedeclContext()->isFileContext();
    }
    if (fnOk && clsOk) found.push_back(fd);
    return true;
  }
  std::vector<const FunctionDecl*> found;

 private:
  const target::CppDispatchSpec& spec_;
};

class Consumer : public SemaConsumer {
 public:
  Consumer(ParseJob& job, CompilerInstance& ci) : job_(job), ci_(ci) {}

  void InitializeSema(Sema& s) override {
    job_.sema = &s;
    defer_->sema = &s;
    s.addExternalSource(defer_.get());
    if (!job_.missing_ops) return;
    job_.missing_ops->sema = &s;
    s.addExternalSource(job_.missing_ops.get());
  }
  void ForgetSema() override {
    job_.sema = nullptr;
    defer_->sema = nullptr;
    if (job_.missing_ops) job_.missing_ops->sema = nullptr;
  }

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
    return inSkippedFile(sm, l);
  }

  void HandleTranslationUnit(ASTContext& ctx) override {
    try {
      SourceManager& sm = ctx.getSourceManager();
      // Map files the caller named to the caller's spelling of the path.
      std::map<llvm::sys::fs::UniqueID, std::string> given;
      if (job_.inputs)
        for (const auto& f : *job_.inputs)
          if (auto fe = ci_.getFileManager().getOptionalFileRef(f)) given.emplace(fe->getUniqueID(), f);
      if (auto fe = ci_.getFileManager().getOptionalFileRef(job_.path)) given[fe->getUniqueID()] = job_.path;
      std::string stubs = normalized(job_.stub_dir);
      detail::WalkOptions wo;
      wo.max_depth = job_.options->max_depth;
      wo.max_paths = job_.options->max_paths;
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
      auto inGiven = [&sm, given](SourceLocation l) -> bool {
        if (l.isInvalid()) return false;
        OptionalFileEntryRef fe = sm.getFileEntryRefForID(sm.getFileID(sm.getExpansionLoc(l)));
        return fe && given.count(fe->getUniqueID());
      };
      TraceCollector trace(ctx, *job_.spec, wo.file_name, inGiven);
      if (job_.want_dispatch) {
        // This TU's own top-level declarations, in order, as the visitor
        // walks the TU's: the precompiled prelude declares no dispatch, and
        // walking its declarations would read every one of them from the PCH.
        FindDispatch finder(*job_.spec);
        for (Decl* d : ctx.getTranslationUnitDecl()->noload_decls()) {
          auto* rd = dyn_cast<CXXRecordDecl>(d);
          if (isa<BlockDecl>(d) || isa<CapturedDecl>(d) || (rd && rd->isLambda())) continue;
          finder.TraverseDecl(d);
        }
        if (!finder.found.empty()) {
          const FunctionDecl* chosen = finder.found.front();
          for (const FunctionDecl* md : finder.found)
            if (detail::bodyLaunches(ctx, md, wo)) {
              chosen = md;
              break;
            }
          // A lexical or preprocessor error inside the dispatch: the cases
          // and branches clang built are not those written, so no verdict
          // rests on them.
          if (const LocatedError* se = job_.diags ? trace.lexicalErrorInside(chosen, job_.diags->located) : nullptr) {
            SourceLocation at = sm.getExpansionLoc(se->at);
            std::string where = wo.file_name(at) + ":" + std::to_string(sm.getExpansionLineNumber(at));
            throw InputError(where + ": the dispatch " + chosen->getQualifiedNameAsString() +
                             " does not parse (" + se->message + "): fix it, or check the file with clang, before checking the gate");
          }
          detail::Reached reached;
          // A launch in the text but not in the AST is one clang dropped only
          // when clang rejected something (otherwise: a lambda, a skipped #if).
          const CollectingDiags* diags = job_.diags;
          wo.tu_has_errors = [diags] { return diags && !diags->located.empty(); };
          wo.errors_in = [diags, &sm](SourceRange r) {
            if (!diags || diags->located.empty()) return false;
            SourceLocation b = sm.getExpansionLoc(r.getBegin()), e = sm.getExpansionLoc(r.getEnd());
            return std::any_of(diags->located.begin(), diags->located.end(), [&](const auto& d) {
              SourceLocation l = sm.getExpansionLoc(d.at);
              return !sm.isBeforeInTranslationUnit(l, b) && !sm.isBeforeInTranslationUnit(e, l);
            });
          };
          Sema* sema = job_.sema;
          wo.instantiate = [sema](const FunctionDecl* fd, SourceLocation at) {
            if (!sema) return;
            sema->InstantiateFunctionDefinition(at, const_cast<FunctionDecl*>(fd), /*Recursive=*/false,
                                                /*DefinitionRequired=*/false, /*AtEndOfTU=*/true);
            sema->PendingInstantiations.clear();  // what it uses: instantiated when the walk follows it
          };
          job_.result.dispatch = detail::walkDispatch(ctx, chosen, *job_.spec, wo, &reached);
          job_.result.dispatch.params = trace.params(chosen);
          job_.result.dispatch.is_template = chosen->getDescribedFunctionTemplate() != nullptr ||
                                             chosen->isTemplateInstantiation() || chosen->isDependentContext();
          if (auto* md = dyn_cast<CXXMethodDecl>(chosen)) job_.result.dispatch.is_static = md->isStatic();
          job_.result.dispatch.template_params = detail::templateParams(chosen->getDescribedFunctionTemplate());
          if (auto* rd = dyn_cast<CXXRecordDecl>(chosen->getDeclContext()))
            job_.result.dispatch.class_template_params = detail::templateParams(rd->getDescribedClassTemplate());
          for (const DeclContext* dc = chosen->getDeclContext(); dc; dc = dc->getParent())
            if (auto* nd = dyn_cast<NamespaceDecl>(dc); nd && !nd->isAnonymousNamespace())
              job_.result.dispatch.ns = nd->getNameAsString() + (job_.result.dispatch.ns.empty() ? "" : "::") +
                                        job_.result.dispatch.ns;
          job_.result.found = true;
          trace.memberUses(chosen);
          if (job_.diags) {
            bool launches = false;
            for (const auto& l : job_.result.dispatch.leaves) launches |= l.kind == model::LeafKind::Launch;
            for (auto& b : trace.errorsInside(chosen, job_.diags->located, launches, &reached))
              job_.result.dispatch.broken.push_back(std::move(b));
            // In a function the walk entered, any error may be a condition
            // clang could not type (a switch whose cases it then dropped):
            // every one counts, on the paths through it.
            std::set<const FunctionDecl*> patterns;  // the instantiations of one template share its errors
            for (const FunctionDecl* f : reached.followed) {
              const FunctionDecl* p = f->getTemplateInstantiationPattern() ? f->getTemplateInstantiationPattern() : f;
              if (p == chosen || !patterns.insert(p).second) continue;
              for (auto& b : trace.errorsInside(p, job_.diags->located, false, &reached)) {
                auto& known = job_.result.dispatch.broken;
                bool seen = std::any_of(known.begin(), known.end(), [&](const model::OpaqueSymbol& k) {
                  return k.text == b.text && k.where.file == b.where.file && k.where.line == b.where.line &&
                         k.where.col == b.where.col;
                });
                if (!seen) known.push_back(std::move(b));
              }
            }
          }
        }
      }
      // Op registrations, entry functions and constructors: only this TU's
      // own top-level declarations in user code (never the precompiled prelude).
      TraceVisitor visitor(trace);
      for (Decl* d : ctx.getTranslationUnitDecl()->noload_decls()) {
        if (d->isImplicit() || !wo.is_user_code(d->getLocation())) continue;
        visitor.TraverseDecl(d);
      }
      job_.result.facts = std::move(trace.facts);
      if (job_.missing_ops) job_.result.facts.declared_missing = job_.missing_ops->names;
    } catch (...) {
      job_.result.error = std::current_exception();
    }
  }

 private:
  // In the file whose bodies another parse reads (ParseJob::skip_bodies_of).
  bool inSkippedFile(SourceManager& sm, SourceLocation l) {
    if (job_.skip_bodies_of.empty()) return false;
    if (!skip_id_) {
      auto fe = ci_.getFileManager().getOptionalFileRef(job_.skip_bodies_of);
      if (!fe) {
        job_.skip_bodies_of.clear();
        return false;
      }
      skip_id_ = fe->getUniqueID();
    }
    FileID id = sm.getFileID(l);
    if (id == last_id_) return last_skipped_;
    OptionalFileEntryRef fe = sm.getFileEntryRefForID(id);
    last_id_ = id;
    last_skipped_ = fe && fe->getUniqueID() == *skip_id_;
    return last_skipped_;
  }

  ParseJob& job_;
  CompilerInstance& ci_;
  std::optional<llvm::sys::fs::UniqueID> skip_id_;
  FileID last_id_;
  bool last_skipped_ = false;
  llvm::IntrusiveRefCntPtr<DeferInstantiations> defer_ = llvm::makeIntrusiveRefCnt<DeferInstantiations>();
};

class Action : public ASTFrontendAction {
 public:
  explicit Action(ParseJob& job) : job_(job) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, StringRef) override {
    ci.getPreprocessor().addPPCallbacks(std::make_unique<IncludeWatcher>(job_));
    return std::make_unique<Consumer>(job_, ci);
  }

 private:
  ParseJob& job_;
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

struct FileParse {
  ParseResult result;
  unsigned errors = 0;
  bool fatal = false;
  std::string first_error, first_fatal;
};

FileParse parseOne(const std::string& path, const std::vector<std::string>& inputs,
                   const target::CppDispatchSpec& spec, const ParseOptions& options, const std::string& pch,
                   bool want_dispatch, const std::string& skip_bodies_of) {
  ParseJob job;
  job.path = path;
  job.inputs = &inputs;
  job.want_dispatch = want_dispatch;
  job.skip_bodies_of = skip_bodies_of;
  job.missing_ops = llvm::makeIntrusiveRefCnt<DeclareMissingOps>();
  job.spec = &spec;
  job.options = &options;
  job.stub_dir = paths::stubDir();
  job.memfs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  job.memfs->addFile(std::string(kMissingDir) + "/.layergate", 0, llvm::MemoryBuffer::getMemBuffer(""));
  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::getRealFileSystem());
  overlay->pushOverlay(job.memfs);
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(), overlay);
  CollectingDiags diags;
  job.diags = &diags;
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

// parseOne with the precompiled prelude, and without it when the prelude
// failed to load (perhaps stale: headers upgraded; it is removed), on a thread
// with a large stack of its own: clang and the walker recurse over the
// source's nesting, so hostile inputs end in an InputError.
FileParse parseFile(const std::string& path, const std::vector<std::string>& inputs,
                    const target::CppDispatchSpec& spec, const ParseOptions& options, bool want_dispatch,
                    const std::string& skip_bodies_of = {}) {
  FileParse p;
  std::exception_ptr err;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] {
    clang::noteBottomOfStack();
    trace::threadBegin();
    try {
      trace::Scope scope(want_dispatch ? "Parse and walk" : "Parse for trace facts", path);
      std::string pch = preludePch(options, paths::stubDir());
      p = parseOne(path, inputs, spec, options, pch, want_dispatch, skip_bodies_of);
      if (!pch.empty() && p.fatal) {
        llvm::StringRef msg(p.first_fatal);
        if (msg.contains_insensitive("precompiled") || msg.contains("PCH") || msg.contains("AST file"))
          llvm::sys::fs::remove(pch);
        p = parseOne(path, inputs, spec, options, {}, want_dispatch, skip_bodies_of);
      }
    } catch (...) {
      err = std::current_exception();
    }
    trace::threadEnd();
  });
  worker.join();
  if (err) std::rethrow_exception(err);
  return p;
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

// Trace facts of all files, each fact once (a .cu includes the .cuh: the
// same constructor or entry is seen by both parses).
class FactMerger {
 public:
  void add(TraceFacts&& f) {
    for (auto& b : f.bindings)
      if (seen_.insert("b|" + b.kind + "|" + b.op + "|" + key(b.where)).second) bindings.push_back(std::move(b));
    for (auto& e : f.entries)
      if (seen_.insert("e|" + e.name + "|" + key(e.where)).second) entries.push_back(std::move(e));
    for (auto& c : f.ctors) {
      std::string sig = c.info.class_name + "(";
      for (const auto& p : c.info.params) sig += p.type + ",";
      auto it = ctor_index_.find(sig);
      if (it == ctor_index_.end()) {
        ctor_index_[sig] = ctors.size();
        ctors.push_back(std::move(c));
      } else if (!ctors[it->second].has_body && c.has_body) {
        ctors[it->second] = std::move(c);  // the definition wins over a declaration
      }
    }
    for (auto& n : f.declared_missing)
      if (seen_.insert("m|" + n).second) declared_missing.push_back(n);
  }
  std::vector<model::OpBinding> bindings;
  std::vector<model::CppEntry> entries;
  std::vector<CtorFact> ctors;
  std::vector<std::string> declared_missing;

 private:
  static std::string key(const model::Location& l) {
    return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  std::set<std::string> seen_;
  std::map<std::string, std::size_t> ctor_index_;
};

model::Dispatch extractImpl(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                            const ParseOptions& caller_options) {
  if (files.empty()) throw InputError("no C++/CUDA file given");
  const ParseOptions options = withTargetSettings(caller_options, spec, files);
  // Rank files: those that define a class of the spec first, then those that
  // mention it, then the rest (bindings, other entry files). Every file is
  // parsed for trace facts; the dispatch is walked once, in the first file
  // that has it.
  std::vector<std::pair<int, std::string>> ranked;
  std::set<std::string> unique;
  for (const auto& f : files) {
    std::string text = readChecked(f);
    if (!unique.insert(normalized(f)).second) continue;
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
  bool found = false;
  model::Dispatch d;
  std::vector<std::string> notes, later_notes;
  std::vector<model::MemberUse> member_uses;
  FactMerger facts;
  auto addNote = [](std::vector<std::string>& v, std::string n) {
    for (const auto& x : v)
      if (x == n) return;
    v.push_back(std::move(n));
  };
  // Every file is parsed, side by side where the job budget allows (each
  // parse is a clang instance of its own): the first ranked with the dispatch
  // walked, the others for their trace facts. The first nearly always has the
  // dispatch; when it has not, the next are parsed again with the dispatch
  // walked, in order, until one has it: the results of parsing one after
  // another, the dispatch walked in the first file that has it.
  preludePch(options, paths::stubDir());  // built before the parses share it
  std::vector<FileParse> parses(ranked.size());
  // The parses for trace facts skip the bodies of the first file's functions
  // (a .cu that includes the dispatch header): the first parse reads them,
  // and its facts come first.
  jobs::forEach(ranked.size(), [&](std::size_t i) {
    parses[i] = parseFile(ranked[i].second, files, spec, options, /*want_dispatch=*/i == 0,
                          i == 0 ? std::string() : ranked[0].second);
  });
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const std::string& f = ranked[i].second;
    FileParse p = found || i == 0 ? std::move(parses[i]) : parseFile(f, files, spec, options, true);
    if (p.result.error) std::rethrow_exception(p.result.error);
    if (p.fatal) {
      if (!found) throw InputError(f + ": clang fatal error, cannot analyse: " + p.first_fatal);
      addNote(later_notes, f + ": clang fatal error, trace facts from it may be missing: " + p.first_fatal);
      continue;
    }
    if (p.result.found && !found) member_uses = std::move(p.result.facts.member_uses);
    facts.add(std::move(p.result.facts));
    if (p.result.found && !found) {
      found = true;
      d = std::move(p.result.dispatch);
      for (auto& n : p.result.notes) addNote(notes, std::move(n));
      if (p.errors > 0)
        addNote(notes, std::to_string(p.errors) + " clang error" + (p.errors == 1 ? "" : "s") + " while parsing " +
                           f + " (analysis went on), first: " + p.first_error);
      for (auto& n : d.notes) addNote(notes, std::move(n));
      continue;
    }
    for (auto& n : p.result.notes)
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) addNote(later_notes, std::move(n));
    // Errors already reported for a header this file includes are not news.
    bool known = false;
    for (const auto& n : notes) known |= !p.first_error.empty() && llvm::StringRef(n).ends_with(p.first_error);
    if (p.errors > 0 && !known)
      addNote(later_notes, std::to_string(p.errors) + " clang error" + (p.errors == 1 ? "" : "s") +
                               " while parsing " + f + " (trace facts went on), first: " + p.first_error);
    if (!found) last = std::move(p);
  }
  if (!found) {
    std::string names;
    for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
    std::string msg = names + ": no dispatch " + what + " with a body found";
    if (last.errors > 0)
      msg += " (" + std::to_string(last.errors) + " clang error" + (last.errors == 1 ? "" : "s") +
             ", first: " + last.first_error + ")";
    throw InputError(msg);
  }
  for (auto& n : later_notes) addNote(notes, std::move(n));
  if (!facts.declared_missing.empty()) {
    std::size_t k = facts.declared_missing.size();
    std::string n = std::to_string(k) + " function" + (k == 1 ? "" : "s") +
                    " named in op registrations declared in no given file (e.g. " + facts.declared_missing.front() +
                    "): their header was not given";
    addNote(notes, n);
  }
  d.notes = std::move(notes);
  d.bindings = std::move(facts.bindings);
  d.entries = std::move(facts.entries);
  for (auto& c : facts.ctors)
    if (c.info.class_name == d.class_name) d.ctors.push_back(std::move(c.info));
  d.member_uses = std::move(member_uses);
  return d;
}

}  // namespace

}  // namespace layergate::cpp::detail::parse

namespace layergate::cpp {

model::Dispatch extractDispatch(const std::vector<std::string>& files, const target::CppDispatchSpec& spec,
                                const ParseOptions& options) {
  // Clang and the walker recurse over the source's nesting; run them on a
  // thread with a large stack so hostile inputs end in an InputError (and
  // each parse on one of its own: parseFile).
  model::Dispatch out;
  std::exception_ptr err;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] {
    clang::noteBottomOfStack();
    trace::threadBegin();
    try {
      out = detail::parse::extractImpl(files, spec, options);
    } catch (...) {
      err = std::current_exception();
    }
    trace::threadEnd();
  });
  worker.join();
  if (err) std::rethrow_exception(err);
  return out;
}

}  // namespace layergate::cpp
