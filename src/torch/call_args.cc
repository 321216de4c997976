#include "torch/call_args.h"

#include "hycc/error.h"
#include "torch/cuda_order.h"

namespace hycc::torch_backend {

std::optional<ReduceOp> hycc_reduction(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PREMUL_SUM:
      return ReduceOp::kSum;
    case c10d::ReduceOp::AVG:
      return ReduceOp::kAverage;
    default:
      return std::nullopt;
  }
}

void premultiply(const c10d::ReduceOp& op, at::Tensor& t) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return;
  const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  if (factor == nullptr) {
    throw InvalidArgument(tagged("torch", "PREMUL_SUM without its factor"));
  }
  if (factor->tensor_factor.defined()) {
    t.mul_(factor->tensor_factor);
  } else {
    t.mul_(factor->double_factor);
  }
}

std::shared_ptr<CudaOrder> cuda_order(const at::Tensor& t) {
  return t.is_cuda() ? std::make_shared<CudaOrder>(t) : nullptr;
}

const at::Tensor& first(const std::vector<at::Tensor>& tensors) {
  static const at::Tensor none;
  return tensors.empty() ? none : tensors[0];
}

}  // namespace hycc::torch_backend
