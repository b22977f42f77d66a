// layergate_ops: torch extension over kernels/layergate_ipc.cuh.
//
// The op surface has the shape the SGLang and vLLM Python gates call
// (init_custom_ar, register_buffer, all_reduce, dispose, meta_size,
// get_graph_buffer_ipc_meta, register_graph_buffers, and the shared-buffer
// helpers allocate_shared_buffer_and_handle / open_mem_handle /
// free_shared_buffer), so a fork can swap its import for
// `import layergate_ops as ops`. Differences, all additive:
//   * init_custom_ar takes max_size, max_blocks and timeout_ms after the
//     upstream four arguments; rank_data is accepted and unused (the pull
//     kernels' source tables live in the all-reduce object).
//   * each rank's meta buffer must hold meta_size() + scratch_size(max_size)
//     bytes (upstream: meta_size() + max_size); init_custom_ar refuses a
//     smaller one instead of overrunning it.
//   * close_mem_handle, scratch_size, last_algo, error.
// Built with torch.utils.cpp_extension (kernels/torch/build.py).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ops_api.h"

namespace {

int64_t init_custom_ar(const std::vector<int64_t>& ipc_ptrs, const torch::Tensor& rank_data, int64_t rank,
                       bool full_nvlink, int64_t max_size, int64_t max_blocks, int64_t timeout_ms) {
  (void)rank_data;
  return lgops::init_custom_ar(ipc_ptrs, rank, full_nvlink, max_size, max_blocks, timeout_ms);
}

void all_reduce(int64_t fa, const torch::Tensor& inp, const torch::Tensor& out, int64_t reg_buffer,
                int64_t reg_buffer_sz_bytes) {
  TORCH_CHECK(inp.is_cuda() && out.is_cuda(), "layergate_ops.all_reduce: CUDA tensors only");
  TORCH_CHECK(inp.device() == out.device(), "layergate_ops.all_reduce: inp and out on different devices");
  TORCH_CHECK(inp.scalar_type() == out.scalar_type(), "layergate_ops.all_reduce: inp and out dtypes differ");
  TORCH_CHECK(inp.numel() == out.numel(), "layergate_ops.all_reduce: inp and out sizes differ");
  TORCH_CHECK(out.is_contiguous(), "layergate_ops.all_reduce: out must be contiguous");
  // The gate admits weakly contiguous inputs (the storage from the offset on
  // is exactly the tensor): their bytes are then one run from data_ptr.
  TORCH_CHECK(inp.is_contiguous() ||
                  inp.storage().nbytes() - inp.storage_offset() * inp.element_size() ==
                      static_cast<size_t>(inp.numel()) * inp.element_size(),
              "layergate_ops.all_reduce: inp must be weakly contiguous");
  lgops::DType dt;
  switch (inp.scalar_type()) {
    case at::ScalarType::Float: dt = lgops::kF32; break;
    case at::ScalarType::Half: dt = lgops::kF16; break;
    case at::ScalarType::BFloat16: dt = lgops::kBF16; break;
    default: TORCH_CHECK(false, "layergate_ops.all_reduce: dtype not served (fp32, fp16, bf16)");
  }
  const c10::cuda::CUDAGuard guard(inp.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  lgops::all_reduce(fa, dt, inp.data_ptr(), out.data_ptr(), inp.numel(), reg_buffer, reg_buffer_sz_bytes, stream);
}

std::vector<int64_t> bytes_to_ints(const std::string& s) {
  std::vector<int64_t> v(s.size());
  for (size_t i = 0; i < s.size(); ++i) v[i] = static_cast<unsigned char>(s[i]);
  return v;
}
std::string ints_to_bytes(const std::vector<int64_t>& v) {
  std::string s(v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    TORCH_CHECK(v[i] >= 0 && v[i] < 256, "layergate_ops: handle bytes must be in 0..255");
    s[i] = static_cast<char>(v[i]);
  }
  return s;
}

std::tuple<std::vector<int64_t>, std::vector<int64_t>> get_graph_buffer_ipc_meta(int64_t fa) {
  std::string handles;
  std::vector<int64_t> offsets;
  lgops::graph_buffer_meta(fa, &handles, &offsets);
  return {bytes_to_ints(handles), offsets};
}

void register_graph_buffers(int64_t fa, const std::vector<std::vector<int64_t>>& handles,
                            const std::vector<std::vector<int64_t>>& offsets) {
  std::vector<std::string> h;
  for (const auto& v : handles) h.push_back(ints_to_bytes(v));
  lgops::register_graph_buffers(fa, h, offsets);
}

std::tuple<int64_t, torch::Tensor> allocate_shared_buffer_and_handle(int64_t size) {
  std::string handle;
  const int64_t ptr = lgops::allocate_shared_buffer(size, &handle);
  torch::Tensor t = torch::empty({static_cast<int64_t>(handle.size())}, torch::dtype(torch::kUInt8));
  std::memcpy(t.data_ptr(), handle.data(), handle.size());
  return {ptr, t};
}

int64_t open_mem_handle(const torch::Tensor& handle) {
  TORCH_CHECK(handle.device().is_cpu() && handle.scalar_type() == torch::kUInt8 &&
                  handle.numel() == lgops::handle_size() && handle.is_contiguous(),
              "layergate_ops.open_mem_handle: expects a CPU uint8 tensor of ", lgops::handle_size(), " bytes");
  return lgops::open_mem_handle(std::string(static_cast<const char*>(handle.data_ptr()), handle.numel()));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace py = pybind11;
  m.doc() = "layergate custom all-reduce (kernels/layergate_ipc.cuh) with the SGLang/vLLM custom_ar op surface";
  m.def("init_custom_ar", &init_custom_ar, py::arg("ipc_ptrs"), py::arg("rank_data"), py::arg("rank"),
        py::arg("full_nvlink"), py::arg("max_size") = int64_t(8192 * 1024), py::arg("max_blocks") = int64_t(36),
        py::arg("timeout_ms") = int64_t(10000),
        "ipc_ptrs[p]: rank p's meta buffer as this process addresses it; returns the all-reduce handle");
  m.def("register_buffer", &lgops::register_buffer, py::arg("fa"), py::arg("ipc_ptrs"));
  m.def("all_reduce", &all_reduce, py::arg("fa"), py::arg("inp"), py::arg("out"), py::arg("reg_buffer") = int64_t(0),
        py::arg("reg_buffer_sz_bytes") = int64_t(0));
  m.def("dispose", &lgops::dispose, py::arg("fa"));
  m.def("meta_size", &lgops::meta_size);
  m.def("scratch_size", &lgops::scratch_size, py::arg("max_size"));
  m.def("get_graph_buffer_ipc_meta", &get_graph_buffer_ipc_meta, py::arg("fa"));
  m.def("register_graph_buffers", &register_graph_buffers, py::arg("fa"), py::arg("handles"), py::arg("offsets"));
  m.def("allocate_shared_buffer_and_handle", &allocate_shared_buffer_and_handle, py::arg("size"));
  m.def("open_mem_handle", &open_mem_handle, py::arg("mem_handle"));
  m.def("close_mem_handle", &lgops::close_mem_handle, py::arg("ptr"));
  m.def("free_shared_buffer", &lgops::free_shared_buffer, py::arg("ptr"));
  m.def("last_algo", &lgops::last_algo, py::arg("fa"));
  m.def("error", &lgops::error, py::arg("fa"));
}
