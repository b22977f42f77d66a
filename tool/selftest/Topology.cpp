#include "selftest/Topology.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace layergate::selftest {

const char* linkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::Self: return "self";
    case LinkKind::NVLink: return "nvlink";
    case LinkKind::PCIe: return "pcie";
    case LinkKind::Unknown: return "unknown";
  }
  return "unknown";
}

std::string PairLink::cellText() const {
  switch (kind) {
    case LinkKind::Self: return "X";
    case LinkKind::NVLink: return nvlinks > 0 ? "NV" + std::to_string(nvlinks) : "NVL";
    case LinkKind::PCIe: return path.empty() ? "PCIe" : path;
    case LinkKind::Unknown: return "?";
  }
  return "?";
}

std::string Topology::configText() const {
  std::string s = "world size " + std::to_string(worldSize());
  if (worldSize() < 2) return s + " (one GPU: no peer to link)";
  if (!full_nvlink) return s + ", NVLink unknown";
  return s + (*full_nvlink ? ", full NVLink" : ", PCIe (not every pair has NVLink)");
}

bool parseBusId(const std::string& s, unsigned& domain, unsigned& bus, unsigned& dev, unsigned& fn) {
  fn = 0;
  int n = std::sscanf(s.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  return n >= 3;
}

bool sameBusId(const std::string& a, const std::string& b) {
  unsigned d1, b1, v1, f1, d2, b2, v2, f2;
  if (!parseBusId(a, d1, b1, v1, f1) || !parseBusId(b, d2, b2, v2, f2)) return a == b;
  return d1 == d2 && b1 == b2 && v1 == v2 && f1 == f2;
}

namespace {

std::string pathName(int level) {
  if (level <= 0) return "SAME";  // same board (dual-GPU card)
  if (level <= 10) return "PIX";
  if (level <= 20) return "PXB";
  if (level <= 30) return "PHB";
  if (level <= 40) return "NODE";
  return "SYS";
}

// ---- libcuda.so.1 ----------------------------------------------------------
class DlCuda : public GpuApi {
 public:
  ~DlCuda() override {
    if (h_) dlclose(h_);
  }
  std::string init() override {
    h_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h_) return std::string("libcuda.so.1 not loadable: ") + dlerror();
    bool ok = sym(cuInit_, "cuInit") && sym(getCount_, "cuDeviceGetCount") && sym(get_, "cuDeviceGet") &&
              sym(getName_, "cuDeviceGetName") && sym(getBus_, "cuDeviceGetPCIBusId") &&
              sym(attr_, "cuDeviceGetAttribute") && sym(peer_, "cuDeviceCanAccessPeer");
    sym(errName_, "cuGetErrorName");
    if (!ok) return "libcuda.so.1 lacks a driver API entry point";
    int r = cuInit_(0);
    if (r != 0) return "cuInit failed: " + err(r);
    int n = 0;
    r = getCount_(&n);
    if (r != 0) return "cuDeviceGetCount failed: " + err(r);
    count_ = n;
    return "";
  }
  int count() override { return count_; }
  std::string name(int dev) override {
    char buf[256] = {0};
    if (getName_(buf, sizeof buf, handle(dev)) != 0) return "?";
    return buf;
  }
  std::string pciBusId(int dev) override {
    char buf[64] = {0};
    if (getBus_(buf, sizeof buf, handle(dev)) != 0) return "";
    return buf;
  }
  int smCount(int dev) override { return attribute(16, dev); }  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int computeCapability(int dev) override {
    return attribute(75, dev) * 10 + attribute(76, dev);  // COMPUTE_CAPABILITY_MAJOR / _MINOR
  }
  bool canAccessPeer(int a, int b) override {
    int can = 0;
    return peer_(&can, handle(a), handle(b)) == 0 && can;
  }

 private:
  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(h_, name));
    return f != nullptr;
  }
  std::string err(int r) {
    const char* s = nullptr;
    if (errName_ && errName_(r, &s) == 0 && s) return s;
    return "CUresult " + std::to_string(r);
  }
  int handle(int dev) {
    int h = 0;
    get_(&h, dev);
    return h;
  }
  int attribute(int which, int dev) {
    int v = 0;
    attr_(&v, which, handle(dev));
    return v;
  }
  void* h_ = nullptr;
  int count_ = 0;
  int (*cuInit_)(unsigned) = nullptr;
  int (*getCount_)(int*) = nullptr;
  int (*get_)(int*, int) = nullptr;
  int (*getName_)(char*, int, int) = nullptr;
  int (*getBus_)(char*, int, int) = nullptr;
  int (*attr_)(int*, int, int) = nullptr;
  int (*peer_)(int*, int, int) = nullptr;
  int (*errName_)(int, const char**) = nullptr;
};

// ---- libnvidia-ml.so.1 -----------------------------------------------------
class DlNvml : public LinkApi {
 public:
  ~DlNvml() override {
    if (h_ && shutdown_) shutdown_();
    if (h_) dlclose(h_);
  }
  std::string init() override {
    h_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h_) return std::string("libnvidia-ml.so.1 not loadable: ") + dlerror();
    bool ok = sym(init_, "nvmlInit_v2") && sym(byBus_, "nvmlDeviceGetHandleByPciBusId_v2") &&
              sym(p2p_, "nvmlDeviceGetP2PStatus") && sym(ancestor_, "nvmlDeviceGetTopologyCommonAncestor");
    sym(shutdown_, "nvmlShutdown");
    sym(linkState_, "nvmlDeviceGetNvLinkState");
    sym(remote_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (!ok) {
      h_ = nullptr;  // leak the handle rather than call a half-loaded library
      return "libnvidia-ml.so.1 lacks an entry point (old driver?)";
    }
    int r = init_();
    if (r != 0) {
      shutdown_ = nullptr;
      return "nvmlInit failed: NVML error " + std::to_string(r);
    }
    return "";
  }
  std::optional<bool> nvlinkP2P(const std::string& a, const std::string& b) override {
    void *da = dev(a), *db = dev(b);
    if (!da || !db) return std::nullopt;
    int status = -1;
    if (p2p_(da, db, 2 /*NVML_P2P_CAPS_INDEX_NVLINK*/, &status) != 0) return std::nullopt;
    return status == 0;  // NVML_P2P_STATUS_OK
  }
  std::optional<int> nvlinkCount(const std::string& a, const std::string& b) override {
    void* da = dev(a);
    if (!da || !linkState_ || !remote_) return std::nullopt;
    int n = 0;
    for (unsigned link = 0; link < 18; ++link) {  // NVML_NVLINK_MAX_LINKS
      int active = 0;
      if (linkState_(da, link, &active) != 0 || active != 1) continue;
      // nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, ... (stable layout)
      unsigned char info[256] = {0};
      if (remote_(da, link, info) != 0) continue;
      unsigned domain, bus, device;
      std::memcpy(&domain, info + 16, 4);
      std::memcpy(&bus, info + 20, 4);
      std::memcpy(&device, info + 24, 4);
      unsigned d2, b2, v2, f2;
      if (parseBusId(b, d2, b2, v2, f2) && d2 == domain && b2 == bus && v2 == device) ++n;
    }
    return n;
  }
  std::optional<int> commonAncestor(const std::string& a, const std::string& b) override {
    void *da = dev(a), *db = dev(b);
    if (!da || !db) return std::nullopt;
    int level = 0;
    if (ancestor_(da, db, &level) != 0) return std::nullopt;
    return level;
  }

 private:
  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(h_, name));
    return f != nullptr;
  }
  void* dev(const std::string& bus) {
    auto it = cache_.find(bus);
    if (it != cache_.end()) return it->second;
    void* d = nullptr;
    if (byBus_(bus.c_str(), &d) != 0) d = nullptr;
    cache_[bus] = d;
    return d;
  }
  void* h_ = nullptr;
  std::map<std::string, void*> cache_;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*byBus_)(const char*, void**) = nullptr;
  int (*p2p_)(void*, void*, int, int*) = nullptr;
  int (*ancestor_)(void*, void*, int*) = nullptr;
  int (*linkState_)(void*, unsigned, int*) = nullptr;
  int (*remote_)(void*, unsigned, void*) = nullptr;
};

}  // namespace

std::unique_ptr<GpuApi> loadCudaDriver() { return std::make_unique<DlCuda>(); }
std::unique_ptr<LinkApi> loadNvml() { return std::make_unique<DlNvml>(); }

Topology probeTopology(GpuApi* gpu, LinkApi* link) {
  Topology t;
  std::string why = gpu ? gpu->init() : "no CUDA driver interface";
  if (!why.empty()) {
    t.reason = why;
    return t;
  }
  const int n = gpu->count();
  if (n <= 0) {
    t.reason = "the CUDA driver reports 0 devices";
    return t;
  }
  t.has_gpu = true;
  for (int i = 0; i < n; ++i)
    t.gpus.push_back({i, gpu->name(i), gpu->pciBusId(i), gpu->smCount(i), gpu->computeCapability(i)});
  std::string nvml_why = link ? link->init() : "NVML not available";
  const bool nvml = nvml_why.empty();
  if (!nvml && n > 1)
    t.notes.push_back("link types unknown: " + nvml_why +
                      " (NVML comes with the NVIDIA driver; peer access below is from CUDA alone)");
  t.links.assign(n, std::vector<PairLink>(n));
  t.all_peer = true;
  bool all_nv = true, any_unknown = false;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      PairLink& p = t.links[a][b];
      if (a == b) {
        p.kind = LinkKind::Self;
        p.peer = true;
        continue;
      }
      p.peer = gpu->canAccessPeer(a, b);
      t.all_peer = t.all_peer && p.peer;
      if (!nvml) {
        any_unknown = true;
        continue;
      }
      const std::string &ba = t.gpus[a].bus_id, &bb = t.gpus[b].bus_id;
      std::optional<bool> nv = link->nvlinkP2P(ba, bb);
      if (auto c = link->nvlinkCount(ba, bb)) p.nvlinks = *c;
      if (auto lvl = link->commonAncestor(ba, bb)) p.path = pathName(*lvl);
      if (!nv) {
        any_unknown = true;
        p.kind = LinkKind::Unknown;
      } else {
        p.kind = *nv ? LinkKind::NVLink : LinkKind::PCIe;
        all_nv = all_nv && *nv;
      }
    }
  if (n == 1) t.full_nvlink = false;
  else if (!all_nv) t.full_nvlink = false;  // one known PCIe pair settles it
  else if (!any_unknown) t.full_nvlink = true;
  if (n > 1 && !t.all_peer)
    t.notes.push_back("not every pair has peer access: the custom all-reduce's P2P check fails here, whatever the flag");
  return t;
}

Topology probeMachine() {
  auto gpu = loadCudaDriver();
  auto link = loadNvml();
  return probeTopology(gpu.get(), link.get());
}

std::string renderTopology(const Topology& t) {
  std::ostringstream o;
  if (!t.has_gpu) {
    o << "no CUDA GPU found (" << t.reason << ")\n";
    return o.str();
  }
  o << "GPUs (" << t.gpus.size() << "):\n";
  for (const Gpu& g : t.gpus) {
    char line[256];
    std::snprintf(line, sizeof line, "  GPU%-2d %-28s %-14s %3d SMs  sm_%d\n", g.index, g.name.c_str(),
                  g.bus_id.c_str(), g.sms, g.cc);
    o << line;
  }
  if (t.gpus.size() > 1) {
    o << "Links (peer access 'p2p' from CUDA; NVn = n NVLinks, NVL = NVLink through a switch, "
         "PIX/PXB/PHB/NODE/SYS = PCIe path, ? = unknown):\n        ";
    for (const Gpu& g : t.gpus) {
      char c[16];
      std::snprintf(c, sizeof c, "%-11s", ("GPU" + std::to_string(g.index)).c_str());
      o << c;
    }
    o << "\n";
    for (size_t a = 0; a < t.gpus.size(); ++a) {
      char c[32];
      std::snprintf(c, sizeof c, "  GPU%-3zu ", a);
      o << c;
      for (size_t b = 0; b < t.gpus.size(); ++b) {
        const PairLink& p = t.links[a][b];
        std::string cell = p.kind == LinkKind::Self ? "X" : p.cellText() + (p.peer ? " p2p" : " no-p2p");
        std::snprintf(c, sizeof c, "%-11s", cell.c_str());
        o << c;
      }
      o << "\n";
    }
  }
  o << "This machine forms: " << t.configText() << "\n";
  for (const auto& n : t.notes) o << "note: " << n << "\n";
  return o.str();
}

nlohmann::json topologyJson(const Topology& t) {
  nlohmann::json j;
  j["gpu_found"] = t.has_gpu;
  if (!t.has_gpu) {
    j["reason"] = t.reason;
    return j;
  }
  j["gpus"] = nlohmann::json::array();
  for (const Gpu& g : t.gpus)
    j["gpus"].push_back({{"index", g.index}, {"name", g.name}, {"bus_id", g.bus_id}, {"sms", g.sms}, {"cc", g.cc}});
  j["links"] = nlohmann::json::array();
  for (size_t a = 0; a < t.gpus.size(); ++a)
    for (size_t b = 0; b < t.gpus.size(); ++b) {
      if (a == b) continue;
      const PairLink& p = t.links[a][b];
      j["links"].push_back({{"a", a}, {"b", b}, {"peer", p.peer}, {"kind", linkKindName(p.kind)},
                            {"nvlinks", p.nvlinks}, {"pcie_path", p.path}});
    }
  j["world_size"] = t.worldSize();
  j["all_peer"] = t.all_peer;
  j["full_nvlink"] = t.full_nvlink ? nlohmann::json(*t.full_nvlink) : nlohmann::json(nullptr);
  j["config"] = t.configText();
  j["notes"] = t.notes;
  return j;
}

}  // namespace layergate::selftest
