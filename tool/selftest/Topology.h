// Topology: what this machine is. GPU count and names, the peer-access
// matrix, the link between each pair, hence the configuration it forms
// (world size, full NVLink or not): the cell of the static matrix it is in.
//
// Takes: a GpuApi (the CUDA driver) and a LinkApi (NVML), both interfaces so
// that tests feed canned answers; the real ones load libcuda.so.1 and
// libnvidia-ml.so.1 with dlopen at run time (no build-time CUDA dependency).
// Returns: a Topology. A missing NVML gives link kind "unknown" and a note.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace layergate::selftest {

// The CUDA driver API, the few calls used. init() returns "" or why not.
class GpuApi {
 public:
  virtual ~GpuApi() = default;
  virtual std::string init() = 0;
  virtual int count() = 0;
  virtual std::string name(int dev) = 0;
  virtual std::string pciBusId(int dev) = 0;  // "0000:19:00.0"
  virtual int smCount(int dev) = 0;
  virtual int computeCapability(int dev) = 0;  // 90 for sm_90
  virtual bool canAccessPeer(int a, int b) = 0;
};

// NVML, keyed by PCI bus id (NVML's device order differs from CUDA's).
class LinkApi {
 public:
  virtual ~LinkApi() = default;
  virtual std::string init() = 0;
  // NVML's P2P status for the NVLink capability (what SGLang's and vLLM's
  // is_full_nvlink / is_fully_connected ask): true, false, or unknown.
  virtual std::optional<bool> nvlinkP2P(const std::string& bus_a, const std::string& bus_b) = 0;
  // Active NVLinks from a that end at b (0 through a switch or none).
  virtual std::optional<int> nvlinkCount(const std::string& bus_a, const std::string& bus_b) = 0;
  // nvmlGpuTopologyLevel_t: 0 same board, 10 one PCIe switch, 20 several
  // switches, 30 host bridge, 40 same NUMA node, 50 across sockets.
  virtual std::optional<int> commonAncestor(const std::string& bus_a, const std::string& bus_b) = 0;
};

std::unique_ptr<GpuApi> loadCudaDriver();  // dlopen("libcuda.so.1")
std::unique_ptr<LinkApi> loadNvml();       // dlopen("libnvidia-ml.so.1")

enum class LinkKind { Self, NVLink, PCIe, Unknown };
const char* linkKindName(LinkKind k);

struct PairLink {
  bool peer = false;  // cuDeviceCanAccessPeer(a, b)
  LinkKind kind = LinkKind::Unknown;
  int nvlinks = 0;    // direct links counted by NVML (0 through NVSwitch)
  std::string path;   // PCIe path: "PIX", "PXB", "PHB", "NODE", "SYS" (nvidia-smi topo's names)
  std::string cellText() const;  // "NV18", "NVL", "PXB", "SYS", "?"
};

struct Gpu {
  int index = 0;
  std::string name;
  std::string bus_id;
  int sms = 0;
  int cc = 0;
};

struct Topology {
  bool has_gpu = false;
  std::string reason;          // why not (has_gpu false)
  std::vector<Gpu> gpus;
  std::vector<std::vector<PairLink>> links;  // [a][b]
  bool all_peer = false;       // every pair has peer access both ways
  std::optional<bool> full_nvlink;  // unknown without NVML
  std::vector<std::string> notes;
  int worldSize() const { return static_cast<int>(gpus.size()); }
  // "world size 2, full NVLink" / "world size 4, PCIe" / "world size 2, NVLink unknown".
  std::string configText() const;
};

Topology probeTopology(GpuApi* gpu, LinkApi* link);
// The real machine: loadCudaDriver + loadNvml.
Topology probeMachine();

std::string renderTopology(const Topology& t);
nlohmann::json topologyJson(const Topology& t);

// "0000:19:00.0" or "00000000:19:00.0" -> (domain, bus, device, function); false if not a bus id.
bool parseBusId(const std::string& s, unsigned& domain, unsigned& bus, unsigned& dev, unsigned& fn);
bool sameBusId(const std::string& a, const std::string& b);

}  // namespace layergate::selftest
