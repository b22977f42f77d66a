#include "selftest/Harness.h"

#include "selftest/EntryHarness.h"
#include "selftest/HeaderScan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace layergate::selftest {

namespace fs = std::filesystem;

const char* roleName(Role r) {
  switch (r) {
    case Role::Rank: return "rank";
    case Role::WorldSize: return "world size";
    case Role::Flag: return "NVLink flag";
    case Role::SignalArray: return "every rank's signal area";
    case Role::RankData: return "rank-data area";
    case Role::RankDataBytes: return "rank-data bytes";
    case Role::RankBuffersArray: return "every rank's buffers";
    case Role::MaxBytes: return "max bytes";
    case Role::MaxBlocks: return "blocks per rank";
    case Role::Stream: return "stream";
    case Role::Input: return "input";
    case Role::Output: return "output";
    case Role::Count: return "element count";
    case Role::BlockLimit: return "block limit";
    case Role::PeerArray: return "every rank's address";
    case Role::LocalPointer: return "this rank's address";
    case Role::Default: return "declared default";
  }
  return "?";
}


std::map<std::string, std::string> memberRoles(const std::map<std::string, std::string>& members,
                                               const model::Roles& roles) {
  std::map<std::string, std::string> out;
  for (const auto& [member, var] : members)
    out[member] = roles.isRanks(var) ? kRanksRole : roles.isLink(var) ? kLinkRole : roles.isRank(var) ? kRankRole : var;
  return out;
}

HarnessSpec planHarness(const model::Dispatch& d, const std::string& header_path, const std::string& header_text,
                        const std::map<std::string, std::string>& member_config,
                        const std::vector<std::string>& include_dirs) {
  HarnessSpec h;
  h.header = fs::absolute(header_path).lexically_normal().string();
  std::string cls = d.class_name;
  if (size_t p = cls.rfind("::"); p != std::string::npos) cls = cls.substr(p + 2);
  ClassScan cs = scanClass(header_text, cls);
  if (!cs.found) throw HarnessError("class " + cls + " is not defined in " + header_path);
  for (size_t i = 0; i < cs.namespaces.size(); ++i) h.ns += (i ? "::" : "") + cs.namespaces[i];
  h.class_name = qualify(cls, h.ns);
  h.dispatch = d.function;
  for (const auto& l : d.leaves)
    if (l.kind == model::LeafKind::Launch && std::find(h.kernels.begin(), h.kernels.end(), l.kernel) == h.kernels.end())
      h.kernels.push_back(l.kernel);

  // --- constructor: the frontend's CtorInfo, the one with the most parameters
  // that the harness can fill.
  const model::CtorInfo* ctor = nullptr;
  for (const auto& c : d.ctors)
    if (!ctor || c.params.size() > ctor->params.size()) ctor = &c;
  std::vector<HeaderParam> cparams;
  std::map<int, std::string> param_config;  // ctor param index -> config variable of the member it sets
  if (ctor) {
    for (const auto& p : ctor->params) cparams.push_back({p.type, p.name, p.default_text, p.has_default});
    for (const auto& mi : ctor->inits) {
      auto it = member_config.find(mi.member);
      if (it != member_config.end() && mi.param >= 0) param_config[mi.param] = it->second;
      // A member named like the rank and set from an integer parameter (not
      // rank_data_ set from a pointer through a cast).
      if (mi.param >= 0 && mi.member.find("rank") != std::string::npos && mi.member.find("world") == std::string::npos &&
          mi.member.find("data") == std::string::npos &&
          static_cast<size_t>(mi.param) < ctor->params.size() && isIntegral(ctor->params[static_cast<size_t>(mi.param)].type) &&
          stars(ctor->params[static_cast<size_t>(mi.param)].type) == 0 && !param_config.count(mi.param))
        param_config[mi.param] = kRankRole;
    }
  } else {
    for (const auto& m : cs.methods)
      if (m.is_ctor && m.params.size() > cparams.size()) cparams = m.params;
    if (cparams.empty()) throw HarnessError("no constructor of " + cls + " found");
    h.notes.push_back("constructor read from the header text (the C++ frontend reported none)");
  }
  auto staticReturning = [&](const std::string& type) -> const HeaderMethod* {
    for (const auto& m : cs.methods)
      if (m.is_static && baseType(m.return_type) == type && !m.params.empty() && m.params.size() <= 2) return &m;
    return nullptr;
  };
  // The last parameter with no default is where the constructor call may stop.
  int needed = -1;
  for (size_t i = 0; i < cparams.size(); ++i)
    if (!cparams[i].has_default) needed = static_cast<int>(i);
  for (const auto& p : cparams) {
    const std::string b = baseType(p.type);
    if (b.find("IpcMemHandle") != std::string::npos || (b.find("vector") != std::string::npos && b.find("string") != std::string::npos))
      throw HarnessError("constructor parameter '" + p.type + " " + p.name +
                         "' takes CUDA IPC handles, which cannot be opened in the process that created them: a "
                         "single-process harness cannot build this class");
  }
  bool rank_data_seen = false;
  for (size_t i = 0; i < cparams.size(); ++i) {
    const HeaderParam& p = cparams[i];
    const std::string n = lower(p.name), b = baseType(p.type);
    const std::string cfg = param_config.count(static_cast<int>(i)) ? param_config[static_cast<int>(i)] : "";
    Role role;
    if (cfg == kLinkRole || (cfg.empty() && b == "bool" && (n.find("nvlink") != std::string::npos || n.find("connected") != std::string::npos)))
      role = Role::Flag;
    else if (cfg == kRanksRole || (cfg.empty() && isIntegral(p.type) && stars(p.type) == 0 &&
                                     (n.find("world") != std::string::npos || n == "nranks" || n == "num_ranks")))
      role = Role::WorldSize;
    else if (cfg == kRankRole || (isIntegral(p.type) && stars(p.type) == 0 && n == "rank"))
      role = Role::Rank;
    else if (stars(p.type) == 2 && b != "void")
      role = Role::SignalArray, h.signal_type = qualify(b, h.ns);
    else if (stars(p.type) == 1 && b == "void" && !rank_data_seen)
      role = Role::RankData, rank_data_seen = true;
    else if (isIntegral(p.type) && stars(p.type) == 0 && rank_data_seen && n.find("rank") != std::string::npos)
      role = Role::RankDataBytes;
    else if (stars(p.type) == 1 && b != "void" && staticReturning(b)) {
      role = Role::RankBuffersArray;
      h.rank_buffers_type = qualify(b, h.ns);
      h.rank_buffers_alloc = staticReturning(b)->name;
      for (const auto& m : cs.methods)
        if (m.is_static && m.params.size() == 1 && baseType(m.params[0].type) == b && m.name.find("free") != std::string::npos)
          h.rank_buffers_free = m.name;
    } else if (isIntegral(p.type) && stars(p.type) == 0 && n.find("block") != std::string::npos)
      role = Role::MaxBlocks;
    else if (isIntegral(p.type) && stars(p.type) == 0 && n.find("max") != std::string::npos &&
             (n.find("byte") != std::string::npos || n.find("size") != std::string::npos))
      role = Role::MaxBytes;
    else if (p.has_default)
      role = Role::Default;
    else
      throw HarnessError("constructor parameter '" + p.type + " " + p.name +
                         "' has no role the harness knows how to fill (rank, world size, NVLink flag, signal "
                         "areas, rank data, rank buffers, max bytes, blocks)");
    if (role == Role::Default && static_cast<int>(i) > needed) break;
    h.ctor.push_back({role, p});
  }
  // Drop trailing defaults that are not needed.
  while (!h.ctor.empty() && h.ctor.back().role == Role::Default) h.ctor.pop_back();
  bool has_flag = false, has_ws = false, has_rank = false;
  for (const auto& a : h.ctor) {
    has_flag |= a.role == Role::Flag;
    has_ws |= a.role == Role::WorldSize || a.role == Role::SignalArray || a.role == Role::RankBuffersArray;
    has_rank |= a.role == Role::Rank;
  }
  if (!has_flag) {
    // The flag may sit among the defaults after `needed`: pass it.
    for (size_t i = h.ctor.size(); i < cparams.size(); ++i) {
      const std::string cfg = param_config.count(static_cast<int>(i)) ? param_config[static_cast<int>(i)] : "";
      const std::string n = lower(cparams[i].name);
      bool flag = cfg == kLinkRole || (baseType(cparams[i].type) == "bool" &&
                                           (n.find("nvlink") != std::string::npos || n.find("connected") != std::string::npos));
      if (!flag) continue;
      for (size_t k = h.ctor.size(); k < i; ++k) h.ctor.push_back({Role::Default, cparams[k]});
      h.ctor.push_back({Role::Flag, cparams[i]});
      has_flag = true;
      break;
    }
  }
  if (!has_flag) throw HarnessError("no constructor parameter sets the NVLink flag member");
  if (!has_rank) throw HarnessError("no constructor parameter sets the rank");
  if (!has_ws) throw HarnessError("no constructor parameter gives the world size");

  // --- buffer registration: a method named register*buffer* (not graph buffers).
  const HeaderMethod* reg = nullptr;
  for (const auto& m : cs.methods) {
    std::string n = lower(m.name);
    if (n.find("register") != std::string::npos && n.find("buffer") != std::string::npos && n.find("graph") == std::string::npos &&
        !m.is_static)
      if (!reg || m.params.size() < reg->params.size()) reg = &m;
  }
  if (reg) {
    h.register_method = reg->name;
    for (const auto& p : reg->params) {
      if (p.has_default) break;
      const std::string b = baseType(p.type);
      if (b == "void" && stars(p.type) == 2) h.register_args.push_back({Role::PeerArray, p});
      else if (b == "void" && stars(p.type) == 1) h.register_args.push_back({Role::LocalPointer, p});
      else {
        h.notes.push_back(reg->name + "(" + p.type + " " + p.name + ", ...) takes something other than raw pointers (IPC "
                          "handles?): inputs are not registered");
        h.register_method.clear();
        h.register_args.clear();
        break;
      }
    }
  } else {
    h.notes.push_back("no register_buffer-like method found: inputs are not registered");
  }

  // --- the dispatch entry.
  const HeaderMethod* disp = nullptr;
  for (const auto& m : cs.methods)
    if (m.name == d.function && !m.is_static) disp = &m;
  if (!disp) throw HarnessError("dispatch function " + cls + "::" + d.function + " not found in the class body");
  h.dispatch_is_template = disp->is_template;
  int pointers = 0, last_needed = -1;
  std::vector<HarnessArg> args;
  for (size_t i = 0; i < disp->params.size(); ++i) {
    const HeaderParam& p = disp->params[i];
    const std::string b = baseType(p.type), n = lower(p.name);
    Role role;
    if (b.find("Stream") != std::string::npos || b.find("stream") != std::string::npos) role = Role::Stream;
    else if (stars(p.type) == 1 && pointers == 0) role = Role::Input, ++pointers;
    else if (stars(p.type) == 1 && pointers == 1) role = Role::Output, ++pointers;
    else if (isIntegral(p.type) && !p.has_default && stars(p.type) == 0) role = Role::Count;
    else if (isIntegral(p.type) && n.find("block") != std::string::npos) role = Role::BlockLimit;
    else if (p.has_default) role = Role::Default;
    else
      throw HarnessError("dispatch parameter '" + p.type + " " + p.name + "' has no role the harness knows how to fill");
    if (role != Role::Default) last_needed = static_cast<int>(i);
    args.push_back({role, p});
  }
  if (pointers < 2) throw HarnessError("the dispatch does not take an input and an output pointer");
  args.resize(static_cast<size_t>(last_needed + 1));
  h.dispatch_args = args;

  // --- includes the header names that are not there: empty stand-ins, with
  // fallback definitions of the error-check macros the header uses but does
  // not define (they usually live in the missing project header).
  std::vector<std::string> dirs{fs::path(h.header).parent_path().string()};
  dirs.insert(dirs.end(), include_dirs.begin(), include_dirs.end());
  std::regex inc_re("^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"");
  std::vector<std::string> missing;
  std::istringstream in(header_text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, inc_re)) continue;
    bool found = false;
    for (const auto& dir : dirs) found = found || fs::exists(fs::path(dir) / m[1].str());
    if (!found) missing.push_back(m[1].str());
  }
  if (!missing.empty()) {
    std::set<std::string> defined, used;
    std::regex def_re("#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)");
    for (auto it = std::sregex_iterator(header_text.begin(), header_text.end(), def_re); it != std::sregex_iterator(); ++it)
      defined.insert((*it)[1].str());
    const std::string code = blank(header_text);
    std::regex call_re("\\b([A-Z][A-Z0-9_]*CHECK[A-Z0-9_]*|CHECK[A-Z0-9_]*)[ \t]*\\(");
    for (auto it = std::sregex_iterator(code.begin(), code.end(), call_re); it != std::sregex_iterator(); ++it)
      if (!defined.count((*it)[1].str())) used.insert((*it)[1].str());
    for (size_t k = 0; k < missing.size(); ++k) {
      std::string body = "// Stand-in written by layergate selftest: \"" + missing[k] +
                         "\" is included by the header but was not found.\n#pragma once\n";
      if (k == 0 && !used.empty()) {
        body += "#include <cuda_runtime.h>\n#include <stdexcept>\n#include <string>\n"
                "namespace layergate_harness_shim {\n"
                "inline void check(cudaError_t e, const char* what) {\n"
                "  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + \": \" + cudaGetErrorString(e));\n"
                "}\n"
                "template <typename X> inline void check(X ok, const char* what) {\n"
                "  if (!ok) throw std::runtime_error(std::string(what) + \" failed\");\n"
                "}\n"
                "}  // namespace layergate_harness_shim\n";
        for (const auto& mac : used)
          body += "#ifndef " + mac + "\n#define " + mac + "(...) ::layergate_harness_shim::check((__VA_ARGS__), #__VA_ARGS__)\n#endif\n";
        h.notes.push_back("fallback definitions for " + std::to_string(used.size()) + " error-check macro(s) the header uses but does not define");
      }
      h.shims[missing[k]] = body;
      h.notes.push_back("stand-in for missing include \"" + missing[k] + "\"");
    }
  }
  return h;
}

std::string HarnessSpec::describe() const {
  if (entry) {
    std::string s;
    for (const auto& l : entry_locals) s += l + " ";
    return s + entry_call;
  }
  auto list = [](const std::vector<HarnessArg>& a) {
    std::string s;
    for (size_t i = 0; i < a.size(); ++i)
      s += (i ? ", " : "") + a[i].param.name + "=" + roleName(a[i].role) + (a[i].role == Role::Default ? " (" + a[i].param.default_text + ")" : "");
    return s;
  };
  std::string s = class_name + "(" + list(ctor) + ")";
  if (!register_method.empty()) s += "; " + register_method + "(" + list(register_args) + ")";
  s += "; " + dispatch + (dispatch_is_template ? "<float>" : "") + "(" + list(dispatch_args) + ")";
  return s;
}

std::string HarnessCell::arg() const {
  std::string a = std::to_string(world_size) + ":" + (full_nvlink ? "1" : "0") + ":" + std::to_string(bytes);
  for (size_t i = 0; i < values.size(); ++i)
    a += (i ? "," : ":") + values[i].first + "=" + std::to_string(values[i].second);
  for (size_t i = 0; i < texts.size(); ++i)
    a += (i || !values.empty() ? "," : ":") + texts[i].first + "=" + texts[i].second;
  return a;
}

// The parts every generated harness shares: the error check (inside
// namespace lgh) and main(), which takes --timeout-ms, --gpus and cell
// arguments, enables peer access, prints the HARNESS line and hands each
// argument to lgh::run_arg.
const char* harnessCommon() {
  return R"CU(#define LGH_CK(x)                                                                          \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("HARNESS_ERROR %s: %s\n", #x, cudaGetErrorString(e_));                   \
      std::fflush(stdout);                                                                 \
      std::_Exit(2);                                                                       \
    }                                                                                      \
  } while (0)

// Waits for every rank's stream, bounded: a kernel that spins for ever is
// reported, never waited on. "" when all finished; else the status line's
// status and detail ("ERROR device error: ...", "HANG not finished ...").
template <typename Ranks>
std::string wait_ranks(Ranks& R, long timeout_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    bool done = true;
    for (auto& k : R) {
      LGH_CK(cudaSetDevice(k.dev));
      cudaError_t q = cudaStreamQuery(k.stream);
      if (q == cudaErrorNotReady) done = false;
      else if (q != cudaSuccess) return std::string("ERROR device error: ") + cudaGetErrorString(q);
    }
    if (done) return "";
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms))
      return "HANG not finished after " + std::to_string(timeout_ms) + " ms";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Spreads the ranks over the GPUs (rank r on GPU r % ngpu) and gives each its
// stream, input and output of `bytes`, and a block count: all ranks' blocks
// must be resident at once, or a rank that waits for a peer whose blocks
// cannot start waits for ever.
template <typename Ranks>
void place_ranks(Ranks& R, int ngpu, const std::vector<int>& sms, size_t bytes) {
  std::vector<int> per_dev(ngpu, 0);
  for (size_t r = 0; r < R.size(); ++r) per_dev[r % ngpu]++;
  for (size_t r = 0; r < R.size(); ++r) {
    auto& k = R[r];
    k.dev = static_cast<int>(r % ngpu);
    k.blocks = std::max(1, sms[k.dev] / per_dev[k.dev]);
    LGH_CK(cudaSetDevice(k.dev));
    LGH_CK(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
    LGH_CK(cudaMalloc(&k.in, bytes));
    LGH_CK(cudaMalloc(&k.out, bytes));
  }
}
)CU";
}

const char* harnessMain() {
  return R"CU(int main(int argc, char** argv) {
  long timeout_ms = 5000;
  int want_gpus = 0;
  std::vector<std::string> cells;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--timeout-ms" && i + 1 < argc) timeout_ms = std::atol(argv[++i]);
    else if (a == "--gpus" && i + 1 < argc) want_gpus = std::atoi(argv[++i]);
    else cells.push_back(a);
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 0;
  }
  if (want_gpus > 0) ngpu = std::min(ngpu, want_gpus);
  std::vector<int> sms(ngpu);
  for (int d = 0; d < ngpu; ++d) {
    cudaDeviceProp p;
    LGH_CK(cudaGetDeviceProperties(&p, d));
    sms[d] = p.multiProcessorCount;
    LGH_CK(cudaSetDevice(d));
    for (int e = 0; e < ngpu; ++e) {
      int can = 0;
      if (e == d || cudaDeviceCanAccessPeer(&can, d, e) != cudaSuccess || !can) continue;
      cudaError_t r = cudaDeviceEnablePeerAccess(e, 0);
      if (r != cudaSuccess && r != cudaErrorPeerAccessAlreadyEnabled) LGH_CK(r);
      cudaGetLastError();
    }
  }
  std::printf("HARNESS gpus=%d sms=%d timeout_ms=%ld\n", ngpu, sms[0], timeout_ms);
  std::fflush(stdout);
  for (const auto& c : cells)
    if (!lgh::run_arg(c, ngpu, sms, timeout_ms)) {
      std::printf("HARNESS_ERROR bad cell %s\n", c.c_str());
      return 2;
    }
  return 0;
}
)CU";
}

namespace {

const char* kHarnessBody = R"CU(
namespace lgh {

LGH_COMMON

constexpr unsigned char kSentinel = 0x7B;  // 0x7B7B7B7B is no possible sum
constexpr size_t kRankDataBytes = 8u << 20;

// Small integers: every sum is exact in float, in any order.
inline float value(int rank, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + rank * 3) % 9) - 4); }

struct Rank {
  int dev = 0;
  int blocks = 1;
  cudaStream_t stream = nullptr;
  void* in = nullptr;
  void* out = nullptr;
  void* signal = nullptr;
  void* rank_data = nullptr;
  LGH_RANK_BUFFERS_MEMBER
  LGH_CLASS* obj = nullptr;
};

void cell_line(int ws, int nv, size_t bytes, const char* status, const std::string& detail) {
  std::printf("CELL %d %d %zu %s %s\n", ws, nv, bytes, status, detail.c_str());
  std::fflush(stdout);
}

void run_cell(int ws, int nv, size_t bytes, int ngpu, const std::vector<int>& sms, long timeout_ms) {
  const bool nvlink = nv != 0;
  const size_t max_bytes = (bytes + 255) / 256 * 256;
  const size_t count = bytes / sizeof(float);
  std::vector<Rank> R(ws);
  place_ranks(R, ngpu, sms, max_bytes);
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    LGH_ALLOC
  }
  std::vector<void*> ins(ws);
  for (int r = 0; r < ws; ++r) ins[r] = R[r].in;
  LGH_GATHER
  std::string thrown;
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    try {
      k.obj = new LGH_CLASS(LGH_CTOR_ARGS);
      LGH_REGISTER
    } catch (const std::exception& e) {
      if (thrown.empty()) thrown = std::string("constructor/registration: ") + e.what();
    }
  }
  if (!thrown.empty()) {
    cell_line(ws, nv, bytes, "THROW", thrown);
    return;  // buffers leak: a short-lived process
  }
  // Inputs, and outputs filled with the sentinel, on each rank's own stream.
  std::vector<std::vector<float>> host(ws, std::vector<float>(count));
  std::vector<float> expect(count, 0.f);
  for (int r = 0; r < ws; ++r)
    for (size_t i = 0; i < count; ++i) {
      host[r][i] = value(r, i);
      expect[i] += host[r][i];
    }
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    LGH_CK(cudaMemcpyAsync(k.in, host[r].data(), bytes, cudaMemcpyHostToDevice, k.stream));
    LGH_CK(cudaMemsetAsync(k.out, kSentinel, bytes, k.stream));
    LGH_CK(cudaStreamSynchronize(k.stream));
  }
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    try {
      k.obj->LGH_DISPATCH(LGH_DISPATCH_ARGS);
    } catch (const std::exception& e) {
      if (thrown.empty()) thrown = e.what();
    }
  }
  const std::string waited = wait_ranks(R, timeout_ms);
  if (!waited.empty()) {
    // The context is lost (a device error) or a kernel still spins: the
    // caller restarts with the next cell in a fresh process.
    const size_t sp = waited.find(' ');
    cell_line(ws, nv, bytes, waited.substr(0, sp).c_str(),
              waited.substr(sp + 1) + (thrown.empty() ? "" : " (a rank threw: " + thrown + ")"));
    std::_Exit(3);
  }
  if (!thrown.empty()) {
    cell_line(ws, nv, bytes, "THROW", thrown);
    return;
  }
  size_t wrong = 0, sentinel = 0, first_bad = static_cast<size_t>(-1);
  std::vector<unsigned char> got(bytes);
  for (int r = 0; r < ws; ++r) {
    LGH_CK(cudaSetDevice(R[r].dev));
    LGH_CK(cudaMemcpy(got.data(), R[r].out, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      float f;
      std::memcpy(&f, got.data() + i * 4, 4);
      bool s = got[i * 4] == kSentinel && got[i * 4 + 1] == kSentinel && got[i * 4 + 2] == kSentinel && got[i * 4 + 3] == kSentinel;
      if (s) ++sentinel;
      if (f != expect[i]) {
        ++wrong;
        if (first_bad == static_cast<size_t>(-1)) first_bad = i;
      }
    }
  }
  const size_t total = count * ws;
  if (wrong == 0)
    cell_line(ws, nv, bytes, "OK", std::to_string(total) + " elements right");
  else if (sentinel == total)
    cell_line(ws, nv, bytes, "NO_KERNEL", "every output element kept the sentinel (" + std::to_string(total) + ")");
  else
    cell_line(ws, nv, bytes, "WRONG", std::to_string(wrong) + " of " + std::to_string(total) + " wrong, " +
                                          std::to_string(sentinel) + " untouched, first at element " + std::to_string(first_bad));
  for (int r = 0; r < ws; ++r) {
    LGH_CK(cudaSetDevice(R[r].dev));
    LGH_CK(cudaDeviceSynchronize());
    delete R[r].obj;
    cudaFree(R[r].in);
    cudaFree(R[r].out);
    if (R[r].signal) cudaFree(R[r].signal);
    if (R[r].rank_data) cudaFree(R[r].rank_data);
    LGH_FREE
    cudaStreamDestroy(R[r].stream);
  }
}

// One cell argument, "ws:nv:bytes"; false when it is not one.
bool run_arg(const std::string& a, int ngpu, const std::vector<int>& sms, long timeout_ms) {
  int ws = 0, nv = 0;
  unsigned long long bytes = 0;
  if (std::sscanf(a.c_str(), "%d:%d:%llu", &ws, &nv, &bytes) != 3) return false;
  run_cell(ws, nv, static_cast<size_t>(bytes), ngpu, sms, timeout_ms);
  return true;
}

}  // namespace lgh

LGH_MAIN)CU";


}  // namespace

std::string generateHarness(const HarnessSpec& h) {
  if (h.entry) return generateEntryHarness(h);
  std::ostringstream head;
  head << "// Generated by `layergate selftest --header`: a harness around " << h.class_name << " from\n// "
       << h.header << "\n// Calls: " << h.describe() << "\n"
       << "// Ranks share the GPUs at hand (one stream and buffer set per rank, at most\n"
       << "// SMs / ranks-per-GPU blocks each); one line per cell: CELL ws nv bytes STATUS detail.\n"
       << "#include <cuda_runtime.h>\n\n#include <algorithm>\n#include <chrono>\n#include <cstdio>\n#include <cstdlib>\n"
       << "#include <cstring>\n#include <stdexcept>\n#include <string>\n#include <thread>\n#include <vector>\n\n"
       << "#include \"" << h.header << "\"\n\n";
  // Declared defaults are evaluated in the header's namespace.
  int nd = 0;
  std::map<const HarnessArg*, std::string> defaults;
  auto defaultFn = [&](const HarnessArg& a) {
    std::string fn = "lgh_default_" + std::to_string(nd++);
    head << "static auto " << fn << "() {\n" << (h.ns.empty() ? "" : "  using namespace " + h.ns + ";\n")
         << "  return (" << a.param.default_text << ");\n}\n";
    defaults[&a] = fn + "()";
  };
  for (const auto& a : h.ctor)
    if (a.role == Role::Default) defaultFn(a);
  for (const auto& a : h.dispatch_args)
    if (a.role == Role::Default || (a.role == Role::BlockLimit && a.param.has_default)) defaultFn(a);

  std::string alloc, gather, ctor_args, reg, disp_args, free_code, rb_member;
  for (const auto& a : h.ctor)
    if (a.role == Role::SignalArray) {
      alloc += "    LGH_CK(cudaMalloc(&k.signal, sizeof(" + h.signal_type + ") + 2 * max_bytes));\n"
               "    LGH_CK(cudaMemset(k.signal, 0, sizeof(" + h.signal_type + ") + 2 * max_bytes));\n";
      gather += "  std::vector<" + h.signal_type + "*> signals(ws);\n"
                "  for (int r = 0; r < ws; ++r) signals[r] = static_cast<" + h.signal_type + "*>(R[r].signal);\n";
    } else if (a.role == Role::RankData) {
      alloc += "    LGH_CK(cudaMalloc(&k.rank_data, kRankDataBytes));\n    LGH_CK(cudaMemset(k.rank_data, 0, kRankDataBytes));\n";
    } else if (a.role == Role::RankBuffersArray) {
      rb_member = h.rank_buffers_type + " rb{};";
      alloc += "    k.rb = " + h.class_name + "::" + h.rank_buffers_alloc + "(max_bytes);\n";
      gather += "  std::vector<" + h.rank_buffers_type + "> rbs(ws);\n  for (int r = 0; r < ws; ++r) rbs[r] = R[r].rb;\n";
      if (!h.rank_buffers_free.empty()) free_code = h.class_name + "::" + h.rank_buffers_free + "(R[r].rb);";
    }
  alloc += "    LGH_CK(cudaDeviceSynchronize());\n";
  for (size_t i = 0; i < h.ctor.size(); ++i) {
    const HarnessArg& a = h.ctor[i];
    std::string e;
    switch (a.role) {
      case Role::Rank: e = "r"; break;
      case Role::WorldSize: e = "ws"; break;
      case Role::Flag: e = "nvlink"; break;
      case Role::SignalArray: e = "signals.data()"; break;
      case Role::RankData: e = "k.rank_data"; break;
      case Role::RankDataBytes: e = "kRankDataBytes"; break;
      case Role::RankBuffersArray: e = "rbs.data()"; break;
      case Role::MaxBytes: e = "max_bytes"; break;
      case Role::MaxBlocks: e = "k.blocks"; break;
      default: e = defaults.count(&a) ? defaults[&a] : "{}"; break;
    }
    ctor_args += (i ? ", " : "") + e;
  }
  if (!h.register_method.empty()) {
    std::string ra;
    for (size_t i = 0; i < h.register_args.size(); ++i)
      ra += std::string(i ? ", " : "") + (h.register_args[i].role == Role::PeerArray ? "ins.data()" : "k.in");
    reg = "k.obj->" + h.register_method + "(" + ra + ");";
  }
  for (size_t i = 0; i < h.dispatch_args.size(); ++i) {
    const HarnessArg& a = h.dispatch_args[i];
    std::string e;
    switch (a.role) {
      case Role::Stream: e = "k.stream"; break;
      case Role::Input: e = "static_cast<float*>(k.in)"; break;
      case Role::Output: e = "static_cast<float*>(k.out)"; break;
      case Role::Count: e = "static_cast<int>(count)"; break;
      case Role::BlockLimit:
        e = a.param.has_default ? "static_cast<int>(std::min<long long>(" + defaults[&a] + ", k.blocks))" : "k.blocks";
        break;
      default: e = defaults.count(&a) ? defaults[&a] : "{}"; break;
    }
    disp_args += (i ? ", " : "") + e;
  }
  std::string body = kHarnessBody;
  replaceAll(body, "LGH_COMMON", harnessCommon());
  replaceAll(body, "LGH_MAIN", harnessMain());
  replaceAll(body, "LGH_RANK_BUFFERS_MEMBER", rb_member);
  replaceAll(body, "LGH_CLASS", h.class_name);
  replaceAll(body, "LGH_ALLOC", alloc);
  replaceAll(body, "LGH_GATHER", gather);
  replaceAll(body, "LGH_CTOR_ARGS", ctor_args);
  replaceAll(body, "LGH_REGISTER", reg);
  replaceAll(body, "LGH_DISPATCH_ARGS", disp_args);
  replaceAll(body, "LGH_DISPATCH", h.dispatch + std::string(h.dispatch_is_template ? "<float>" : ""));
  replaceAll(body, "LGH_FREE", free_code);
  return head.str() + body;
}

std::vector<HarnessOutcome> parseHarnessOutput(const std::string& output) {
  std::vector<HarnessOutcome> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CELL ", 0) != 0) continue;
    std::istringstream ls(line.substr(5));
    HarnessOutcome o;
    int nv = 0;
    long long bytes = 0;
    std::string st;
    if (!(ls >> o.cell.world_size >> nv >> bytes >> st)) continue;
    o.cell.full_nvlink = nv != 0;
    o.cell.bytes = bytes;
    std::getline(ls, o.detail);
    o.detail = trim(o.detail);
    o.status = st == "OK" ? "ok" : st == "NO_KERNEL" ? "no kernel ran" : st == "WRONG" ? "wrong sums"
             : st == "THROW" ? "throws" : st == "HANG" ? "hang" : st == "SKIP" ? "not run" : "error";
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace layergate::selftest
