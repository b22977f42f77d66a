// Your own dispatch, run: a small CUDA program generated around the user's
// dispatch header, compiled with nvcc at run time (never linked into
// layergate), that runs one configuration cell per argument with ranks
// sharing the GPUs at hand.
//
// Takes: the C++ frontend's Dispatch (class, dispatch function, constructor
// parameters and which member each one initialises) and the header's text
// (namespace and the class's other methods: buffer registration, rank-buffer
// allocation). Returns: a HarnessSpec (every parameter given a role, or a
// HarnessError naming the one that has none), the harness source, shim files
// for includes the header names but that are not there, and the parsed result
// lines of a run. Nothing here is specific to SGLang or vLLM: roles come from
// parameter types, names and the member map of the target.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/Model.h"
#include "model/Roles.h"

namespace layergate::selftest {

class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HeaderParam {
  std::string type, name, default_text;
  bool has_default = false;
};

struct HeaderMethod {
  std::string name;
  std::string return_type;
  std::vector<HeaderParam> params;
  bool is_static = false;
  bool is_template = false;
  bool is_ctor = false;
};

struct ClassScan {
  bool found = false;
  std::vector<std::string> namespaces;  // enclosing, outermost first
  std::vector<HeaderMethod> methods;
};

// A light scan of the header text (comments, strings and preprocessor lines
// blanked): the class's enclosing namespaces and its member functions.
ClassScan scanClass(const std::string& text, const std::string& class_name);
std::vector<HeaderParam> parseParams(const std::string& text);

enum class Role {
  Rank, WorldSize, Flag,         // ints and the NVLink flag
  SignalArray,                   // T** : every rank's signal area (zeroed, scratch after it)
  RankData, RankDataBytes,       // void* device area for registered pointers, its size
  RankBuffersArray,              // const B* : every rank's B from a static factory of the class
  MaxBytes, MaxBlocks,           // buffer capacity, blocks per launch (SMs / ranks per GPU)
  Stream, Input, Output, Count,  // the dispatch call
  BlockLimit,                    // a dispatch parameter bounding blocks: min(default, SMs / ranks per GPU)
  PeerArray, LocalPointer,       // registration: every rank's address, this rank's address
  Default                        // pass the declared default (a later parameter is needed)
};
const char* roleName(Role r);

struct HarnessArg {
  Role role;
  HeaderParam param;
};

struct HarnessSpec {
  std::string header;           // absolute path of the user's header
  std::string class_name;       // qualified: "vllm::CustomAllreduce"
  std::string ns;               // "vllm" (for the declared defaults)
  std::vector<HarnessArg> ctor;
  std::string signal_type;      // SignalArray element type, qualified
  std::string rank_buffers_type, rank_buffers_alloc, rank_buffers_free;  // RankBuffersArray
  std::string register_method;
  std::vector<HarnessArg> register_args;
  std::string dispatch;
  bool dispatch_is_template = true;
  std::vector<HarnessArg> dispatch_args;
  std::vector<std::string> kernels;  // launched kernels named by the frontend (for the report)
  std::map<std::string, std::string> shims;  // missing include -> stub content
  std::vector<std::string> notes;
  // A dispatch that is a function called with what the gate hands down
  // (EntryHarness.h) rather than a class's method: the call per rank.
  bool entry = false;
  std::string elem_type = "float";         // the element type the entry is instantiated with
  std::string slab_bytes;                  // each rank's shared slab (zeroed), an expression; "" when none
  std::vector<std::string> entry_locals;   // statements before the call (objects the header's factories build)
  std::string entry_call;                  // the call, returning a cudaError_t or void
  bool entry_returns_error = false;        // the call returns cudaError_t
  std::vector<std::string> values;         // the handed-down values the call reads
  // A JIT entry over tvm-ffi objects (FfiObjects.h): the harness includes
  // tvm-ffi and links libtvm_ffi; buffers its objects' constructors check are
  // allocated per rank before any rank runs (buffer_stmts); the entry's own
  // tensors come from a per-rank pool; a returned tensor is the output.
  bool tvm_ffi = false;
  std::vector<std::string> extra_includes;  // e.g. the file defining an object's constructor
  std::vector<std::string> buffer_stmts;    // per rank, before the calls
  bool entry_returns_tensor = false;
  // A template argument that is the world size (kWorldSize): the call is
  // instantiated once per world size here (LG_WS in entry_call).
  bool ws_template = false;
  std::vector<int> world_sizes;
  std::string describe() const;  // one paragraph: what the harness calls, with roles
};

// The harness's view of a member map: a member whose variable plays one of
// the cell roles (model/Roles.h) maps to that role's token instead of the
// variable's name; the others keep their variable.
inline constexpr const char* kRanksRole = "<ranks>";
inline constexpr const char* kLinkRole = "<link>";
inline constexpr const char* kRankRole = "<rank>";
std::map<std::string, std::string> memberRoles(const std::map<std::string, std::string>& members,
                                               const model::Roles& roles);

// member_config: the target's member map, by memberRoles ("full_nvlink_" ->
// kLinkRole). include_dirs: where the header's quoted includes may be (its
// own directory first).
HarnessSpec planHarness(const model::Dispatch& dispatch, const std::string& header_path,
                        const std::string& header_text, const std::map<std::string, std::string>& member_config,
                        const std::vector<std::string>& include_dirs = {});

std::string generateHarness(const HarnessSpec& spec);
// CUDA text both harnesses include: the error-check macro (namespace lgh)
// and main(), which calls lgh::run_arg(arg, ngpu, sms, timeout_ms) per cell.
const char* harnessCommon();
const char* harnessMain();

// One configuration cell to run.
struct HarnessCell {
  int world_size = 0;
  bool full_nvlink = false;
  std::int64_t bytes = 0;
  // From an example configuration (StaticExample): the values the gate hands
  // down there, what the static side expects ("ok", "no kernel ran",
  // "throws") and the leaf it reaches.
  std::vector<std::pair<std::string, std::int64_t>> values;
  std::string expect;
  std::string leaf;
  std::vector<std::pair<std::string, std::string>> texts;  // text values: "algo" -> "1shot_push"
  // "4:0:8192", with values "4:0:524288:blocks=2,variant=3" (texts after them: ",algo=1shot_push")
  std::string arg() const;
};

// What a harness run printed for one cell.
struct HarnessOutcome {
  HarnessCell cell;
  std::string status;  // "ok", "no kernel ran", "wrong sums", "throws", "hang", "error", "not run"
  std::string detail;
};

// Parses "CELL ws nv bytes STATUS detail..." lines.
std::vector<HarnessOutcome> parseHarnessOutput(const std::string& output);

}  // namespace layergate::selftest
