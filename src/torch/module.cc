// The Python module hycc._hycc_torch: the backend's constructor and its settings, for
// python/hycc/torch (which registers the backend with torch.distributed).
#include <torch/extension.h>

#include "hycc/error.h"
#include "hycc/policy_engine.h"
#include "torch/backend.h"

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
  m.def(
      "create_backend",
      [](const BackendPtr& inner, const BackendPtr& reductions, const BackendPtr& gathers)
          -> BackendPtr { return c10::make_intrusive<HyccBackend>(inner, reductions, gathers); },
      "A hycc backend over an inner backend (the calls hycc leaves) and two wire backends "
      "(hycc's own traffic: reductions, gathers) on the same ranks");
  m.def(
      "set_dimension",
      [](const BackendPtr& backend, const std::string& dimension) {
        hycc_backend(backend).set_dimension(dimension);
      },
      "Names the parallel dimension of a hycc group before its first call");
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
}
