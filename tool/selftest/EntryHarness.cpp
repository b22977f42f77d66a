#include "selftest/EntryHarness.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "selftest/HeaderScan.h"

namespace layergate::selftest {

namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

std::string withoutRef(std::string t) {
  t = squeeze(t);
  for (const char* q : {"const ", "volatile "})
    for (size_t p; (p = t.find(q)) != std::string::npos;) t.erase(p, std::string(q).size());
  t.erase(std::remove(t.begin(), t.end(), '&'), t.end());
  return trim(t);
}

// Gives every parameter of the entry (and of the factories it needs) an
// expression over the generated run_cell's names: ws, r (the rank), k (the
// rank's buffers and stream), count and cap (elements), V("name") (a value
// of the cell), lg_peers (every rank's slab address).
class Resolver {
 public:
  Resolver(HarnessSpec& h, const std::vector<NamespaceFunction>& fns, const std::map<std::string, std::string>& members,
           const std::set<std::string>& values, std::string ns)
      : h_(h), fns_(fns), members_(members), values_(values), ns_(std::move(ns)) {}

  std::vector<std::string> args(const std::vector<HeaderParam>& params, const std::string& fn, int depth) {
    if (depth > 4) throw HarnessError("the objects " + fn + " takes are built more than four factories deep");
    std::vector<std::string> out;
    int needed = -1;
    for (size_t i = 0; i < params.size(); ++i)
      if (!params[i].has_default) needed = static_cast<int>(i);
    for (size_t i = 0; i < params.size(); ++i) {
      std::string e = expr(params[i], fn, depth);
      if (e.empty()) {
        if (static_cast<int>(i) > needed) break;  // the declared defaults from here on
        throw HarnessError("parameter '" + params[i].type + " " + params[i].name + "' of " + fn +
                           " has no role the harness knows how to fill (input, output, element count, capacity, "
                           "rank, world size, stream, a value the gate hands down, an object a function of the "
                           "header builds, every rank's workspace address)" + hint(params[i]));
      }
      out.push_back(e);
    }
    return out;
  }

  bool peers = false;  // some factory takes every rank's workspace address

 private:
  static std::string hint(const HeaderParam& p) {
    const std::string b = baseType(p.type);
    if (has(b, "Tensor") || has(b, "Communicator") || has(b, "ffi::"))
      return ": it is a tvm-ffi object, which the harness would need tvm-ffi's headers and library to make";
    return "";
  }

  std::string value(const HeaderParam& p, const std::string& cfg) {
    if (std::find(h_.values.begin(), h_.values.end(), cfg) == h_.values.end()) h_.values.push_back(cfg);
    const std::string type = withoutRef(p.type);
    const bool builtin = isIntegral(type) || type == "bool";
    return "static_cast<" + (builtin ? type : qualify(type, ns_)) + ">(V(\"" + cfg + "\"))";
  }

  std::string expr(const HeaderParam& p, const std::string& fn, int depth) {
    const std::string n = lower(p.name), b = baseType(p.type), t = squeeze(p.type);
    const int st = stars(p.type);
    const bool integral = isIntegral(p.type) && st == 0;
    const bool is_const = hasWord(t, "const");
    std::string cfg;
    if (auto it = members_.find(p.name); it != members_.end()) cfg = it->second;
    else if (values_.count(p.name)) cfg = p.name;
    if (b == "cudaStream_t") return "k.stream";
    if (cfg == "world_size" || (integral && (has(n, "world") || n == "nranks" || n == "num_ranks"))) return "ws";
    if (integral && n == "rank") return "r";
    if (st == 1 && depth == 0 && !isIntegral(b)) {
      // The message: by name first, then by constness.
      const bool out = has(n, "out") || has(n, "dst") || (!has(n, "in") && !has(n, "src") && !is_const);
      return std::string(out ? "static_cast<" : "static_cast<const ") + h_.elem_type + "*>(" + (out ? "k.out" : "k.in") + ")";
    }
    if (st == 1 && isIntegral(b)) {
      peers = true;
      return "lg_peers.data()";
    }
    if (!cfg.empty() && values_.count(cfg) && (integral || st == 0)) return value(p, cfg);
    if (integral && has(n, "max") && (has(n, "numel") || has(n, "elem") || has(n, "count"))) return "cap";
    if (integral && has(n, "max") && (has(n, "byte") || has(n, "size"))) return "cap * sizeof(" + h_.elem_type + ")";
    if (integral && (n == "numel" || n == "n" || n == "count" || n == "size" || has(n, "num_elem") || n == "nelems"))
      return "count";
    if (integral && (n == "elem_size" || n == "element_size" || n == "dtype_size")) return "sizeof(" + h_.elem_type + ")";
    if (integral && has(n, "block")) return "k.blocks";
    if (integral && has(n, "thread")) return "512";
    if (b == "bool" && cfg == "full_nvlink") return "(c.nv != 0)";  // the cell's topology
    if (b == "bool") {
      if (p.has_default) return "";
      h_.notes.push_back(p.name + " of " + fn + ": false (not a value the gate hands down)");
      return "false";
    }
    if (st == 0 && !integral && !p.has_default) {
      // An object a function of the header builds (a layout, every peer's views).
      for (const auto& f : fns_) {
        if (f.fn.is_template || baseType(f.fn.return_type) != b || f.fn.name == h_.dispatch) continue;
        const std::string q = qualify(f.fn.name, join(f.namespaces));
        std::vector<std::string> a = args(f.fn.params, f.fn.name, depth + 1);
        const std::string local = "lg_" + p.name;
        std::string call = "const auto " + local + " = " + q + "(";
        for (size_t i = 0; i < a.size(); ++i) call += (i ? ", " : "") + a[i];
        h_.entry_locals.push_back(call + ");");
        return local;
      }
    }
    return "";
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "::" : "") + v[i];
    return s;
  }

  HarnessSpec& h_;
  const std::vector<NamespaceFunction>& fns_;
  const std::map<std::string, std::string>& members_;
  const std::set<std::string>& values_;
  std::string ns_;
};

const char* kEntryBody = R"CU(
namespace lgh {

LGH_COMMON

using Elem = LGH_ELEM;
constexpr unsigned char kSentinel = 0x7B;  // 0x7B7B... is no possible sum of the inputs

inline float to_float(float x) { return x; }
inline float to_float(__half x) { return __half2float(x); }
inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> T from_float(float x);
template <> inline float from_float<float>(float x) { return x; }
template <> inline __half from_float<__half>(float x) { return __float2half(x); }
template <> inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// Small integers: every sum is exact in any of the three types, in any order.
inline float value(int rank, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + rank * 3) % 9) - 4); }

struct Cell {
  int ws = 0, nv = 0;
  size_t bytes = 0;
  std::string values;  // "blocks=2,variant=3"
  std::map<std::string, long long> v;
};
const Cell* current = nullptr;

long long V(const char* name) {
  auto it = current->v.find(name);
  if (it == current->v.end()) {
    std::printf("HARNESS_ERROR cell %d:%d:%zu has no value for %s\n", current->ws, current->nv, current->bytes, name);
    std::fflush(stdout);
    std::_Exit(2);
  }
  return it->second;
}

struct Rank {
  int dev = 0;
  int blocks = 1;
  cudaStream_t stream = nullptr;
  void* in = nullptr;
  void* out = nullptr;
  void* slab = nullptr;
};

void cell_line(const Cell& c, const char* status, const std::string& detail) {
  std::printf("CELL %d %d %zu %s %s\n", c.ws, c.nv, c.bytes, status, detail.c_str());
  std::fflush(stdout);
}

void run_cell(const Cell& c, int ngpu, const std::vector<int>& sms, long timeout_ms) {
  current = &c;
  const int ws = c.ws;
  if (c.bytes % sizeof(Elem) != 0) {
    cell_line(c, "SKIP", "message size not a whole number of elements");
    return;
  }
  const size_t count = c.bytes / sizeof(Elem), cap = count;
  const size_t alloc = std::max<size_t>(256, (c.bytes + 255) / 256 * 256);
  std::vector<Rank> R(ws);
  place_ranks(R, ngpu, sms, alloc);
  const size_t slab_bytes = static_cast<size_t>(LGH_SLAB);
  std::vector<int64_t> lg_peers(ws, 0);
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    if (slab_bytes) {
      LGH_CK(cudaMalloc(&k.slab, slab_bytes));
      LGH_CK(cudaMemset(k.slab, 0, slab_bytes));
      lg_peers[r] = reinterpret_cast<int64_t>(k.slab);
    }
  }
  std::vector<std::vector<Elem>> host(ws, std::vector<Elem>(count));
  std::vector<float> expect(count, 0.f);
  for (int r = 0; r < ws; ++r)
    for (size_t i = 0; i < count; ++i) {
      host[r][i] = from_float<Elem>(value(r, i));
      expect[i] += value(r, i);
    }
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    LGH_CK(cudaMemcpyAsync(k.in, host[r].data(), c.bytes, cudaMemcpyHostToDevice, k.stream));
    LGH_CK(cudaMemsetAsync(k.out, kSentinel, c.bytes, k.stream));
    LGH_CK(cudaStreamSynchronize(k.stream));
  }
  LGH_CK(cudaDeviceSynchronize());
  std::string thrown, refused;
  int refusals = 0;
  for (int r = 0; r < ws; ++r) {
    Rank& k = R[r];
    LGH_CK(cudaSetDevice(k.dev));
    try {
      LGH_LOCALS
      LGH_CALL
    } catch (const std::exception& e) {
      if (thrown.empty()) thrown = e.what();
    }
  }
  const std::string waited = wait_ranks(R, timeout_ms);
  if (!waited.empty()) {
    // The context is lost (a device error) or a kernel still spins: the
    // caller restarts with the next cell in a fresh process.
    const size_t sp = waited.find(' ');
    cell_line(c, waited.substr(0, sp).c_str(),
              waited.substr(sp + 1) +
                  (refused.empty() ? "" : " (" + std::to_string(refusals) + " rank(s) refused: " + refused + ")"));
    std::_Exit(3);
  }
  if (!thrown.empty()) {
    cell_line(c, "THROW", thrown);
    return;
  }
  size_t wrong = 0, sentinel = 0, first_bad = static_cast<size_t>(-1);
  std::vector<unsigned char> got(c.bytes);
  for (int r = 0; r < ws; ++r) {
    LGH_CK(cudaSetDevice(R[r].dev));
    LGH_CK(cudaMemcpy(got.data(), R[r].out, c.bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      Elem e;
      std::memcpy(&e, got.data() + i * sizeof(Elem), sizeof(Elem));
      bool s = true;
      for (size_t b = 0; b < sizeof(Elem); ++b) s = s && got[i * sizeof(Elem) + b] == kSentinel;
      if (s) ++sentinel;
      if (to_float(e) != expect[i]) {
        ++wrong;
        if (first_bad == static_cast<size_t>(-1)) first_bad = i;
      }
    }
  }
  const size_t total = count * ws;
  if (refusals == ws && sentinel == total)
    cell_line(c, "NO_KERNEL", "every rank's call returned " + refused + " and launched nothing (" +
                                  std::to_string(total) + " output elements kept the sentinel)");
  else if (refusals)
    cell_line(c, "ERROR", std::to_string(refusals) + " of " + std::to_string(ws) + " rank(s) returned " + refused);
  else if (wrong == 0)
    cell_line(c, "OK", std::to_string(total) + " elements right");
  else if (sentinel == total)
    cell_line(c, "NO_KERNEL", "every output element kept the sentinel (" + std::to_string(total) + ")");
  else
    cell_line(c, "WRONG", std::to_string(wrong) + " of " + std::to_string(total) + " wrong, " + std::to_string(sentinel) +
                              " untouched, first at element " + std::to_string(first_bad));
  for (int r = 0; r < ws; ++r) {
    LGH_CK(cudaSetDevice(R[r].dev));
    LGH_CK(cudaDeviceSynchronize());
    cudaFree(R[r].in);
    cudaFree(R[r].out);
    if (R[r].slab) cudaFree(R[r].slab);
    cudaStreamDestroy(R[r].stream);
  }
}

bool parse_cell(const std::string& a, Cell& c) {
  unsigned long long bytes = 0;
  int used = 0;
  if (std::sscanf(a.c_str(), "%d:%d:%llu%n", &c.ws, &c.nv, &bytes, &used) != 3) return false;
  c.bytes = static_cast<size_t>(bytes);
  std::string rest = a.substr(static_cast<size_t>(used));
  if (rest.empty()) return true;
  if (rest[0] != ':') return false;
  c.values = rest.substr(1);
  std::stringstream ss(c.values);
  for (std::string kv; std::getline(ss, kv, ',');) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return false;
    c.v[kv.substr(0, eq)] = std::atoll(kv.c_str() + eq + 1);
  }
  return true;
}

bool run_arg(const std::string& a, int ngpu, const std::vector<int>& sms, long timeout_ms) {
  Cell c;
  if (!parse_cell(a, c)) return false;
  run_cell(c, ngpu, sms, timeout_ms);
  return true;
}

}  // namespace lgh

LGH_MAIN)CU";


}  // namespace

HarnessSpec planEntryHarness(const model::Dispatch& d, const std::string& header_path, const std::string& header_text,
                             const std::map<std::string, std::string>& member_config,
                             const std::set<std::string>& value_names, int elem_size) {
  HarnessSpec h;
  h.entry = true;
  h.header = fs::absolute(header_path).lexically_normal().string();
  h.ns = d.ns;
  h.elem_type = elem_size == 2 ? "__half" : "float";
  if (elem_size == 2) h.notes.push_back("elements are __half: the gate hands down elem_size=2");
  for (const auto& l : d.leaves)
    if (l.kind == model::LeafKind::Launch && std::find(h.kernels.begin(), h.kernels.end(), l.kernel) == h.kernels.end())
      h.kernels.push_back(l.kernel);
  std::string fn = d.function;
  if (!d.class_name.empty()) {
    if (!d.is_static)
      throw HarnessError(d.class_name + "::" + d.function +
                         " is a member function: the harness calls a free or static entry with what the gate hands down");
    fn = d.class_name + "::" + fn;
  }
  h.dispatch = qualify(fn, d.ns);
  h.dispatch_is_template = d.is_template;
  std::vector<HeaderParam> params;
  for (const auto& p : d.params) params.push_back({p.type, p.name, p.default_text, p.has_default});
  const std::vector<NamespaceFunction> fns = scanFunctions(header_text);
  Resolver res(h, fns, member_config, value_names, d.ns);
  std::vector<std::string> args = res.args(params, d.function, 0);
  std::string call = h.dispatch + (d.is_template ? "<" + h.elem_type + ">" : "") + "(";
  for (size_t i = 0; i < args.size(); ++i) call += (i ? ", " : "") + args[i];
  call += ")";
  // What the call returns: an error code is the dispatch saying it launched nothing.
  bool returns_error = false;
  for (const auto& f : fns)
    if (f.fn.name == d.function && baseType(f.fn.return_type) == "cudaError_t") returns_error = true;
  h.entry_returns_error = returns_error;
  if (returns_error)
    h.entry_call = "const cudaError_t lg_e = " + call + "; if (lg_e != cudaSuccess) { ++refusals; refused = cudaGetErrorName(lg_e); }";
  else
    h.entry_call = call + ";";
  if (res.peers) {
    // Each rank's slab: the header's own function that sizes it.
    for (const auto& f : fns) {
      const std::string n = lower(f.fn.name);
      if (f.fn.is_template || !isIntegral(f.fn.return_type) || stars(f.fn.return_type) != 0) continue;
      if (!(has(n, "workspace") || has(n, "slab")) || !(has(n, "size") || has(n, "bytes"))) continue;
      std::string ns;
      for (size_t i = 0; i < f.namespaces.size(); ++i) ns += (i ? "::" : "") + f.namespaces[i];
      std::vector<std::string> before = h.entry_locals;
      std::vector<std::string> a = res.args(f.fn.params, f.fn.name, 1);
      h.entry_locals = before;  // a size needs no objects
      h.slab_bytes = qualify(f.fn.name, ns) + "(";
      for (size_t i = 0; i < a.size(); ++i) h.slab_bytes += (i ? ", " : "") + a[i];
      h.slab_bytes += ")";
      break;
    }
    if (h.slab_bytes.empty())
      throw HarnessError(h.dispatch + " takes every rank's workspace address, but " + header_path +
                         " has no function that gives a rank's workspace size (one named like workspace_size)");
  }
  h.notes.push_back("each rank's arguments: " + h.describe());
  return h;
}

std::string generateEntryHarness(const HarnessSpec& h) {
  std::ostringstream head;
  head << "// Generated by `layergate selftest --header`: a harness around " << h.dispatch << " from\n// "
       << h.header << "\n// Per rank: " << h.describe() << "\n"
       << "// Ranks share the GPUs at hand (one stream, buffers and workspace slab per rank, the\n"
       << "// slabs seen by every rank at their addresses); one line per cell:\n"
       << "// CELL ws nv bytes STATUS detail. A cell is ws:nv:bytes:name=value,...\n"
       << "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
       << "#include <algorithm>\n#include <chrono>\n#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n"
       << "#include <cstring>\n#include <map>\n#include <sstream>\n#include <stdexcept>\n#include <string>\n"
       << "#include <thread>\n#include <vector>\n\n"
       << "#include \"" << h.header << "\"\n";
  std::string body = kEntryBody;
  replaceAll(body, "LGH_COMMON", harnessCommon());
  replaceAll(body, "LGH_MAIN", harnessMain());
  std::string locals;
  for (const auto& l : h.entry_locals) locals += l + "\n      ";
  replaceAll(body, "LGH_ELEM", h.elem_type);
  replaceAll(body, "LGH_SLAB", h.slab_bytes.empty() ? "0" : h.slab_bytes);
  replaceAll(body, "LGH_LOCALS", locals);
  replaceAll(body, "LGH_CALL", h.entry_call);
  return head.str() + body;
}

}  // namespace layergate::selftest
