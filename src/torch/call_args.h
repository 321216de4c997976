// What the backend's calls (backend.cc, coalesced.cc) read from their arguments: the reduction,
// PREMUL_SUM's factor, the tensors' devices and element types.
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <vector>

#include "hycc/collectives.h"

namespace hycc::torch_backend {

class CudaOrder;

// hycc's reduction for a c10d one (PREMUL_SUM: a sum after the scaling), or none.
std::optional<ReduceOp> hycc_reduction(const c10d::ReduceOp& op);

// PREMUL_SUM's scaling of `t` (in place); nothing for other reductions.
void premultiply(const c10d::ReduceOp& op, at::Tensor& t);

// The caller's mark for a call on `t` that goes to a lane: for a CUDA tensor; none for a CPU one.
std::shared_ptr<CudaOrder> cuda_order(const at::Tensor& t);

// The first tensor of a call's list (its device picks the inner backend), or none.
const at::Tensor& first(const std::vector<at::Tensor>& tensors);

// Whether two tensors of one call are alike where hycc needs them to be: element type and device.
inline bool alike(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.device() == b.device();
}

}  // namespace hycc::torch_backend
