// The Python module hycc._hycc_torch: the backend's constructor and its settings, for
// python/hycc/torch (which registers the backend with torch.distributed).
#include <torch/extension.h>

#include "hycc/error.h"
#include "hycc/policy_engine.h"
#include "torch/backend.h"
#include "torch/call_lane.h"
#include "torch/cuda_order.h"
#include "torch/step_keys.h"
#include "torch/work.h"

namespace {

using hycc::torch_backend::HyccBackend;
using BackendPtr = c10::intrusive_ptr<c10d::Backend>;

HyccBackend& hycc_backend(const BackendPtr& backend) {
  auto* b = dynamic_cast<HyccBackend*>(backend.get());
  if (b == nullptr) {
    throw hycc::InvalidArgument(hycc::tagged("torch", "the group's backend is '",
                                             backend->getBackendName(), "', not hycc"));
  }
  return *b;
}

}  // namespace

PYBIND11_MODULE(_hycc_torch, m) {
  m.doc() = "hycc's torch.distributed backend (use it through hycc.torch)";
  pybind11::register_exception<hycc::InvalidArgument>(m, "InvalidArgument", PyExc_ValueError);
  pybind11::register_exception<hycc::CorruptStream>(m, "CorruptStream", PyExc_ValueError);
  m.def(
      "create_backend",
      [](const BackendPtr& inner, const BackendPtr& reductions, const BackendPtr& gathers,
         const BackendPtr& p2p, const pybind11::object& cuda_inner) -> BackendPtr {
        return c10::make_intrusive<HyccBackend>(
            inner, reductions, gathers, p2p,
            cuda_inner.is_none() ? BackendPtr() : cuda_inner.cast<BackendPtr>());
      },
      pybind11::arg("inner"), pybind11::arg("reductions"), pybind11::arg("gathers"),
      pybind11::arg("p2p"), pybind11::arg("cuda_inner") = pybind11::none(),
      "A hycc backend over an inner backend (the CPU calls hycc leaves), three wire backends "
      "(hycc's own traffic: reductions, gathers, point to point) and optionally an NCCL backend "
      "(the CUDA calls hycc leaves) on the same ranks");
  m.def(
      "quiesce",
      [](double seconds) {
        const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        const bool lanes = hycc::torch_backend::CallLane::quiesce(timeout);
        return hycc::torch_backend::release_inner_works(deadline) && lanes;
      },
      pybind11::arg("seconds"), pybind11::call_guard<pybind11::gil_scoped_release>(),
      "Waits (at most `seconds`) until no hycc thread runs a call or holds its tensors and gloo's "
      "threads have let go of the calls hycc left to gloo; whether all have (hycc.torch calls it "
      "at the interpreter's exit)");
  m.def("cuda_built", &hycc::torch_backend::cuda_built,
        "Whether this build of the backend runs CUDA tensors");
  m.def(
      "set_dimension",
      [](const BackendPtr& backend, const std::string& dimension) {
        hycc_backend(backend).set_dimension(dimension);
      },
      "Names the parallel dimension of a hycc group before its first call");
  m.def(
      "set_bucket_shapes",
      [](const BackendPtr& backend, const at::Tensor& bucket,
         std::vector<std::vector<size_t>> shapes) {
        hycc_backend(backend).set_bucket_shapes(bucket, std::move(shapes));
      },
      "The shapes of the tensors of a gradient bucket, for its next allreduce on the group");
  m.def(
      "dimension", [](const BackendPtr& backend) { return hycc_backend(backend).dimension(); },
      "The dimension a hycc group's calls take");
  m.def("dimension_from_description", &hycc::torch_backend::dimension_from_description,
        "The dimension a group description names, or ''");
  m.def("set_policy", &hycc::torch_backend::set_policy,
        "The policy (a preset name or a TOML file) of every hycc group, before the first call");
  m.def(
      "policy_name", [] { return hycc::torch_backend::engine().policy().name(); },
      "The name of the policy hycc groups run with");
  m.def(
      "statistics_json", [] { return hycc::torch_backend::engine().stats().json(); },
      "This rank's statistics of the calls hycc groups ran, per dimension and operation (JSON)");
  m.def(
      "gradient_states",
      [] {
        const hycc::GradientStates g = hycc::torch_backend::engine().gradient_states();
        return pybind11::dict(pybind11::arg("tensors") = g.tensors,
                              pybind11::arg("host_bytes") = g.host_bytes,
                              pybind11::arg("dropped") = g.dropped);
      },
      "What this rank's gradient compressors hold: states, their host bytes, states dropped");
  m.def("count_optimizer_step", &hycc::torch_backend::count_optimizer_step,
        "Counts an optimizer step (the boundary of the step keys of gradient states)");
  m.def(
      "save_state",
      [] {
        const std::vector<std::byte> blob = hycc::torch_backend::engine().save_state();
        return pybind11::bytes(reinterpret_cast<const char*>(blob.data()), blob.size());
      },
      "This rank's gradient compressor states (error feedback), for a checkpoint");
  m.def(
      "load_state",
      [](const pybind11::bytes& blob) {
        const std::string_view v(blob);
        hycc::torch_backend::engine().load_state(
            std::span(reinterpret_cast<const std::byte*>(v.data()), v.size()));
      },
      "Replaces this rank's gradient compressor states by a checkpoint's (save_state)");
}
