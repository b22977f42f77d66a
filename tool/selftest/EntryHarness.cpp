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
           const std::set<std::string>& values, const std::set<std::string>& texts,
           const std::vector<SourceText>& sources, std::string ns)
      : h_(h), fns_(fns), members_(members), values_(values), texts_(texts), sources_(sources), ns_(std::move(ns)) {}

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

  // The value a name stands for: a value the gate hands down (V), or "".
  std::string valueOf(const std::string& name) {
    std::string cfg;
    if (auto it = members_.find(name); it != members_.end()) cfg = it->second;
    else if (values_.count(name)) cfg = name;
    if (cfg.empty() || !values_.count(cfg)) return "";
    if (std::find(h_.values.begin(), h_.values.end(), cfg) == h_.values.end()) h_.values.push_back(cfg);
    return "V(\"" + cfg + "\")";
  }

  // The buffer behind a tensor parameter of an object's constructor: its
  // shape as the constructor checks it, evaluated per rank before any rank
  // runs, with the constructor's integer parameters and its symbolic sizes
  // bound (a size named like a value the gate hands down takes that value; a
  // block count the blocks each rank may have).
  void buffer(const std::string& name, const FfiShape& shape) {
    std::string s = "{\n      ";
    const std::string ns = join(obj_->namespaces);
    if (!ns.empty()) s += "using namespace " + ns + ";\n      ";
    for (const auto& [local, e] : obj_ints_)
      s += "[[maybe_unused]] const int64_t " + local + " = static_cast<int64_t>(" + e + ");\n      ";
    for (const auto& [local, sym] : obj_->symbolic) {
      std::string e = valueOf(local);
      if (e.empty()) e = valueOf(sym);
      if (e.empty() && (has(lower(local), "block") || has(lower(sym), "block"))) e = "k.blocks";
      if (e.empty()) {
        for (const auto& d : shape.dims)
          if (hasWord(d, local))
            throw HarnessError("the size " + sym + " of " + name + " (" + obj_->obj +
                               "'s constructor) is neither a value the gate hands down nor a block count");
        continue;
      }
      s += "[[maybe_unused]] const int64_t " + local + " = static_cast<int64_t>(" + e + ");\n      ";
    }
    std::string dims;
    for (const auto& d : shape.dims) dims += (dims.empty() ? "" : ", ") + std::string("static_cast<int64_t>(") + d + ")";
    const std::string elem = shape.elem_type.empty() ? "uint8_t" : shape.elem_type;
    s += "lgh::make_buffer(k, \"" + name + "\", std::vector<int64_t>{" + dims + "}, sizeof(" + elem + "));\n    }";
    h_.buffer_stmts.push_back(s);
  }

  // tvm-ffi parameters: the message as a tensor over the rank's input, a text
  // the gate hands down, a variant's bool (false), an optional (nullopt), and
  // an object built by its own constructor (FfiObjects.h) from every rank's
  // buffers. "" when p is none of these.
  std::string ffi(const HeaderParam& p, const std::string& fn, int depth, const std::string& cfg) {
    const std::string t = withoutRef(p.type), b = baseType(p.type);
    if ((b == "std::string" || b == "string" || b == "std::string_view") && !cfg.empty() && texts_.count(cfg)) {
      if (std::find(h_.values.begin(), h_.values.end(), cfg) == h_.values.end()) h_.values.push_back(cfg);
      return "std::string(T(\"" + cfg + "\"))";
    }
    if (t.rfind("std::variant<", 0) == 0 && hasWord(t, "bool")) {
      h_.notes.push_back(p.name + " of " + fn + ": false, its bool alternative (not a value the gate hands down)");
      return "false";
    }
    if (t.rfind("std::optional<", 0) == 0 && !p.has_default) {
      h_.notes.push_back(p.name + " of " + fn + ": std::nullopt (not a value the gate hands down)");
      return "std::nullopt";
    }
    const bool vec = t.rfind("std::vector<", 0) == 0 && t.back() == '>';
    const std::string inner = vec ? trim(t.substr(12, t.size() - 13)) : t;
    if (isFfiTensor(baseType(inner))) {
      h_.tvm_ffi = true;
      const std::string local = "lg_" + p.name;
      if (depth == 0 && !vec) {  // the message
        h_.entry_locals.push_back("const tvm::ffi::Tensor " + local +
                                  " = lgh::ffi_tensor(k.in, {static_cast<int64_t>(count)}, lgh::dl_type<Elem>(), k.dev);");
        return local;
      }
      if (!obj_) return "";
      auto sh = obj_->shapes.find(p.name);
      if (sh == obj_->shapes.end())
        throw HarnessError("the shape of " + p.name + " (" + obj_->obj + "'s constructor) is not checked by a TensorMatcher " +
                           (obj_->definition.empty() ? std::string("(no definition of the constructor was found beside the header)")
                                                     : "in " + obj_->definition) + ": the harness cannot size it");
      buffer(p.name, sh->second);
      const std::string dt = "lgh::dl_type<" + (sh->second.elem_type.empty() ? std::string("uint8_t") : sh->second.elem_type) + ">()";
      if (!vec) {
        h_.entry_locals.push_back("const tvm::ffi::Tensor " + local + " = lgh::rank_tensor(k, \"" + p.name + "\", " + dt + ");");
        return local;
      }
      // Every rank's buffer, seen from this rank (one symmetric workspace).
      const std::string et = has(inner, "TensorView") ? "tvm::ffi::TensorView" : "tvm::ffi::Tensor";
      h_.entry_locals.push_back("const std::vector<tvm::ffi::Tensor> lg_t_" + p.name + " = lgh::peer_tensors(R, \"" +
                                p.name + "\", " + dt + ", k.dev);");
      h_.entry_locals.push_back("const std::vector<" + et + "> " + local + "(lg_t_" + p.name + ".begin(), lg_t_" +
                                p.name + ".end());");
      return local;
    }
    if (depth != 0 || stars(p.type) != 0 || obj_) return "";
    std::optional<FfiObject> o = findFfiObject(sources_, b);
    if (!o) return "";
    h_.tvm_ffi = true;
    obj_ = &*o;
    obj_ints_.clear();
    // The constructor's integers first: the buffers' shapes read them.
    for (const auto& q : o->ctor)
      if (isIntegral(q.type) && stars(q.type) == 0)
        if (std::string e = expr(q, o->obj, depth + 1); !e.empty()) obj_ints_.push_back({q.name, e});
    std::vector<std::string> a = args(o->ctor, o->obj, depth + 1);
    obj_ = nullptr;
    if (!o->definition.empty() && std::find(h_.extra_includes.begin(), h_.extra_includes.end(), o->definition) ==
                                      h_.extra_includes.end())
      h_.extra_includes.push_back(o->definition);
    std::string call = "tvm::ffi::make_object<" + qualify(o->obj, join(o->namespaces)) + ">(";
    for (size_t i = 0; i < a.size(); ++i) call += (i ? ", " : "") + a[i];
    const std::string local = "lg_" + p.name;
    h_.entry_locals.push_back("const auto " + local + " = tvm::ffi::details::ObjectUnsafe::ObjectRefFromObjectPtr<" +
                              qualify(o->ref, join(o->ref_namespaces)) + ">(" + call + "));");
    h_.notes.push_back(p.name + " of " + fn + ": a " + o->obj + " built by its constructor" +
                       (o->definition.empty() ? "" : " (" + o->definition + ")") + " over buffers shaped as it checks them");
    return local;
  }

  std::string expr(const HeaderParam& p, const std::string& fn, int depth) {
    const std::string n = lower(p.name), b = baseType(p.type), t = squeeze(p.type);
    const int st = stars(p.type);
    const bool integral = isIntegral(p.type) && st == 0;
    const bool is_const = hasWord(t, "const");
    std::string cfg;
    if (auto it = members_.find(p.name); it != members_.end()) cfg = it->second;
    else if (values_.count(p.name) || texts_.count(p.name)) cfg = p.name;
    if (std::string e = ffi(p, fn, depth, cfg); !e.empty()) return e;
    if (b == "cudaStream_t") return "k.stream";
    if (cfg == kRanksRole || (integral && (has(n, "world") || n == "nranks" || n == "num_ranks"))) return "ws";
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
    if (b == "bool" && cfg == kLinkRole) return "(c.nv != 0)";  // the cell's topology
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
  const std::set<std::string>& texts_;
  const std::vector<SourceText>& sources_;
  std::string ns_;
  const FfiObject* obj_ = nullptr;                              // the object whose constructor is being filled
  std::vector<std::pair<std::string, std::string>> obj_ints_;  // its integer parameters -> expressions
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
  std::map<std::string, std::string> s;  // texts: "algo=1shot_push"
};
const Cell* current = nullptr;

const char* T(const char* name) {
  auto it = current->s.find(name);
  if (it == current->s.end()) {
    std::printf("HARNESS_ERROR cell %d:%d:%zu has no text for %s\n", current->ws, current->nv, current->bytes, name);
    std::fflush(stdout);
    std::_Exit(2);
  }
  return it->second.c_str();
}

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
  void* result = nullptr;  // the output when the entry returns it (else out)
  std::map<std::string, void*> bufs;  // buffers an object's constructor takes, by parameter
  std::map<std::string, std::vector<int64_t>> dims;
  char* pool = nullptr;  // tensors the entry allocates itself
  size_t pool_size = 0, pool_used = 0;
};

void cell_line(const Cell& c, const char* status, const std::string& detail) {
  std::printf("CELL %d %d %zu %s %s\n", c.ws, c.nv, c.bytes, status, detail.c_str());
  std::fflush(stdout);
}

// A buffer of an object's constructor, zeroed, allocated before any rank runs
// (a cudaMalloc once a rank's kernel spins on its peers could wait for it).
void make_buffer(Rank& k, const char* name, std::vector<int64_t> dims, size_t elem) {
  size_t bytes = elem;
  for (int64_t d : dims) {
    if (d < 0) throw std::runtime_error(std::string("harness: a negative dimension for ") + name);
    bytes *= static_cast<size_t>(d);
  }
  void* p = nullptr;
  LGH_CK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  LGH_CK(cudaMemset(p, 0, std::max<size_t>(bytes, 256)));
  k.bufs[name] = p;
  k.dims[name] = dims;
}

LGH_FFI

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
    LGH_BUFFERS
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
      LGH_BEFORE_CALL
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
    LGH_CK(cudaMemcpy(got.data(), R[r].result ? R[r].result : R[r].out, c.bytes, cudaMemcpyDeviceToHost));
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
    for (auto& b : R[r].bufs) cudaFree(b.second);
    if (R[r].pool) cudaFree(R[r].pool);
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
    const std::string val = kv.substr(eq + 1);
    char* end = nullptr;
    const long long n = std::strtoll(val.c_str(), &end, 10);
    if (!val.empty() && end && *end == '\0') c.v[kv.substr(0, eq)] = n;
    else c.s[kv.substr(0, eq)] = val;  // a text (an algorithm's name)
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


// What a harness over tvm-ffi objects adds (HarnessSpec::tvm_ffi): tensors
// over memory the harness owns, every rank's buffers, a per-rank pool for the
// tensors the entry allocates (tvm-ffi's environment allocator, filled with
// the sentinel so that an output nobody wrote is seen), the rank's stream.
const char* kFfiHelpers = R"CU(
template <typename X> DLDataType dl_type();
template <> inline DLDataType dl_type<float>() { return {kDLFloat, 32, 1}; }
template <> inline DLDataType dl_type<__half>() { return {kDLFloat, 16, 1}; }
template <> inline DLDataType dl_type<__nv_bfloat16>() { return {kDLBfloat, 16, 1}; }
template <> inline DLDataType dl_type<uint8_t>() { return {kDLUInt, 8, 1}; }
template <> inline DLDataType dl_type<int8_t>() { return {kDLInt, 8, 1}; }
template <> inline DLDataType dl_type<uint32_t>() { return {kDLUInt, 32, 1}; }
template <> inline DLDataType dl_type<int32_t>() { return {kDLInt, 32, 1}; }
template <> inline DLDataType dl_type<uint64_t>() { return {kDLUInt, 64, 1}; }
template <> inline DLDataType dl_type<int64_t>() { return {kDLInt, 64, 1}; }

struct Borrowed {  // memory the harness owns: nothing is freed with the tensor
  void* p;
  void AllocData(DLTensor* t) { t->data = p; }
  void FreeData(DLTensor*) {}
};
tvm::ffi::Tensor ffi_tensor(void* p, std::vector<int64_t> shape, DLDataType dt, int dev) {
  return tvm::ffi::Tensor::FromNDAlloc(Borrowed{p}, tvm::ffi::ShapeView(shape.data(), shape.size()), dt,
                                       DLDevice{kDLCUDA, dev});
}
tvm::ffi::Tensor rank_tensor(Rank& k, const char* name, DLDataType dt) {
  return ffi_tensor(k.bufs.at(name), k.dims.at(name), dt, k.dev);
}
// Every rank's buffer of that name, as the viewing rank's device sees it.
std::vector<tvm::ffi::Tensor> peer_tensors(std::vector<Rank>& R, const char* name, DLDataType dt, int dev) {
  std::vector<tvm::ffi::Tensor> v;
  for (Rank& p : R) v.push_back(ffi_tensor(p.bufs.at(name), p.dims.at(name), dt, dev));
  return v;
}

std::vector<tvm::ffi::Tensor> ffi_results;  // what the entries returned in this cell
Rank* ffi_current = nullptr;

void make_pool(Rank& k, size_t bytes, bool first_rank) {
  if (first_rank) ffi_results.clear();
  k.pool_size = 4 * std::max<size_t>(bytes, 256) + 65536;
  k.pool_used = 0;
  LGH_CK(cudaMalloc(reinterpret_cast<void**>(&k.pool), k.pool_size));
  LGH_CK(cudaMemset(k.pool, kSentinel, k.pool_size));
}
void pool_deleter(DLManagedTensorVersioned* m) {
  delete static_cast<std::vector<int64_t>*>(m->manager_ctx);
  delete m;
}
int pool_alloc(DLTensor* proto, DLManagedTensorVersioned** out, void* err,
               void (*set_error)(void*, const char*, const char*)) {
  Rank& k = *ffi_current;
  size_t bytes = (static_cast<size_t>(proto->dtype.bits) * proto->dtype.lanes + 7) / 8;
  for (int i = 0; i < proto->ndim; ++i) bytes *= static_cast<size_t>(proto->shape[i]);
  const size_t at = (k.pool_used + 255) / 256 * 256;
  if (at + bytes > k.pool_size) {
    set_error(err, "RuntimeError", "harness: the rank's tensor pool is used up");
    return -1;
  }
  k.pool_used = at + bytes;
  auto* shape = new std::vector<int64_t>(proto->shape, proto->shape + proto->ndim);
  auto* m = new DLManagedTensorVersioned{};
  m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->manager_ctx = shape;
  m->deleter = pool_deleter;
  m->dl_tensor = *proto;
  m->dl_tensor.data = k.pool + at;
  m->dl_tensor.shape = shape->data();
  m->dl_tensor.strides = nullptr;
  m->dl_tensor.byte_offset = 0;
  *out = m;
  return 0;
}
// Before a rank's call: its stream and its pool are tvm-ffi's environment.
void ffi_enter(Rank& k) {
  ffi_current = &k;
  if (TVMFFIEnvSetStream(kDLCUDA, k.dev, static_cast<TVMFFIStreamHandle>(k.stream), nullptr) != 0)
    throw std::runtime_error("harness: TVMFFIEnvSetStream failed");
  if (TVMFFIEnvSetDLPackManagedTensorAllocator(pool_alloc, 0, nullptr) != 0)
    throw std::runtime_error("harness: TVMFFIEnvSetDLPackManagedTensorAllocator failed");
}
void ffi_result(Rank& k, const tvm::ffi::Tensor& t) {
  ffi_results.push_back(t);
  k.result = t.data_ptr();
}
)CU";

}  // namespace

HarnessSpec planEntryHarness(const model::Dispatch& d, const std::string& header_path,
                             const std::vector<SourceText>& sources,
                             const std::map<std::string, std::string>& member_config,
                             const std::set<std::string>& value_names, const std::set<std::string>& text_names,
                             int elem_size) {
  static const std::string kNoText;
  const std::string& header_text = sources.empty() ? kNoText : sources.front().text;
  HarnessSpec h;
  h.entry = true;
  h.header = fs::absolute(header_path).lexically_normal().string();
  h.ns = d.ns;
  h.elem_type = elem_size == 2 ? "__half" : "float";
  if (elem_size == 2) h.notes.push_back("elements are __half: the gate hands down elem_size=2");
  for (const auto& l : d.leaves)
    if (l.kind == model::LeafKind::Launch && std::find(h.kernels.begin(), h.kernels.end(), l.kernel) == h.kernels.end())
      h.kernels.push_back(l.kernel);
  if (!d.class_name.empty() && !d.is_static)
    throw HarnessError(d.class_name + "::" + d.function +
                       " is a member function: the harness calls a free or static entry with what the gate hands down");
  // Template arguments: the element type, the world size (kWorldSize, mapped
  // by the target: one instantiation per world size, LG_WS), false for a
  // bool (kUsePDL: not a value the gate hands down).
  auto targs = [&](const std::vector<model::Dispatch::TemplateParam>& ps, const std::string& of) {
    std::string a;
    for (const auto& tp : ps) {
      std::string v;
      auto m = member_config.find(tp.name);
      if (tp.kind == "type") v = h.elem_type;
      else if (tp.kind == "int" && m != member_config.end() && m->second == kRanksRole) v = "LG_WS", h.ws_template = true;
      else if (tp.kind == "bool") {
        v = "false";
        h.notes.push_back(tp.name + " of " + of + ": false (a template flag the gate does not hand down)");
      } else {
        throw HarnessError("template parameter " + tp.name + " of " + of +
                           " is neither the element type, the world size (by the target's member map) nor a bool flag");
      }
      a += (a.empty() ? "" : ", ") + v;
    }
    return "<" + a + ">";
  };
  std::string fn = d.function;
  if (!d.class_name.empty())
    fn = d.class_name + (d.class_template_params.empty() ? "" : targs(d.class_template_params, d.class_name)) + "::" + fn;
  h.dispatch = qualify(fn, d.ns);
  h.dispatch_is_template = d.is_template;
  std::vector<HeaderParam> params;
  for (const auto& p : d.params) params.push_back({p.type, p.name, p.default_text, p.has_default});
  const std::vector<NamespaceFunction> fns = scanFunctions(header_text);
  Resolver res(h, fns, member_config, value_names, text_names, sources, d.ns);
  std::vector<std::string> args = res.args(params, d.function, 0);
  std::string call = h.dispatch;
  if (!d.template_params.empty()) call += targs(d.template_params, d.function);
  else if (d.is_template && d.class_name.empty()) call += "<" + h.elem_type + ">";
  call += "(";
  for (size_t i = 0; i < args.size(); ++i) call += (i ? ", " : "") + args[i];
  call += ")";
  // What the call returns: an error code is the dispatch saying it launched
  // nothing; a tensor is its output.
  std::string returns;
  for (const auto& f : fns)
    if (f.fn.name == d.function) returns = f.fn.return_type;
  if (!d.class_name.empty())
    for (const auto& s : sources)
      if (ClassScan cs = scanClass(s.text, d.class_name); cs.found) {
        for (const auto& m : cs.methods)
          if (m.name == d.function) returns = m.return_type;
        break;
      }
  h.entry_returns_error = baseType(returns) == "cudaError_t";
  h.entry_returns_tensor = h.tvm_ffi && isFfiTensor(baseType(returns));
  if (h.entry_returns_error)
    h.entry_call = "const cudaError_t lg_e = " + call + "; if (lg_e != cudaSuccess) { ++refusals; refused = cudaGetErrorName(lg_e); }";
  else if (h.entry_returns_tensor)
    h.entry_call = "lgh::ffi_result(k, " + call + ");";
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
       << (h.tvm_ffi ? "#include <tvm/ffi/container/tensor.h>\n#include <tvm/ffi/extra/c_env_api.h>\n"
                       "#include <tvm/ffi/memory.h>\n#include <optional>\n#include <variant>\n"
                     : "")
       << "#include \"" << h.header << "\"\n";
  // The out-of-class definitions of the objects' constructors (SGLang keeps
  // them in the registration module beside the entry).
  for (const auto& i : h.extra_includes)
    if (i != h.header) head << "#include \"" << fs::absolute(i).lexically_normal().string() << "\"\n";
  std::string body = kEntryBody;
  replaceAll(body, "LGH_COMMON", harnessCommon());
  replaceAll(body, "LGH_MAIN", harnessMain());
  std::string locals;
  for (const auto& l : h.entry_locals) locals += l + "\n      ";
  replaceAll(body, "LGH_ELEM", h.elem_type);
  replaceAll(body, "LGH_SLAB", h.slab_bytes.empty() ? "0" : h.slab_bytes);
  replaceAll(body, "LGH_LOCALS", locals);
  std::string call = h.entry_call;
  if (h.ws_template) {
    // One instantiation per world size the cells have (kWorldSize is a template argument).
    std::vector<int> ws = h.world_sizes;
    if (ws.empty())
      for (int w = 2; w <= 8; ++w) ws.push_back(w);
    call = "switch (ws) {\n";
    for (int w : ws)
      call += "        case " + std::to_string(w) + ": { [[maybe_unused]] constexpr int LG_WS = " + std::to_string(w) +
              "; " + h.entry_call + " break; }\n";
    call += "        default: throw std::runtime_error(\"harness: no instantiation for world size \" + std::to_string(ws));\n      }";
  }
  replaceAll(body, "LGH_CALL", call);
  std::string buffers;
  for (const auto& b : h.buffer_stmts) buffers += b + "\n    ";
  if (h.tvm_ffi) buffers += "lgh::make_pool(k, c.bytes, r == 0);";
  replaceAll(body, "LGH_BUFFERS", buffers);
  replaceAll(body, "LGH_BEFORE_CALL", h.tvm_ffi ? "lgh::ffi_enter(k);" : "");
  replaceAll(body, "LGH_FFI", h.tvm_ffi ? kFfiHelpers : "");
  return head.str() + body;
}

}  // namespace layergate::selftest
