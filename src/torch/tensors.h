// How the torch backend sees a torch tensor: the hycc dtype of its element type, whether hycc
// runs calls on it, and its memory as a TensorView (backend.cc, p2p.cc): host memory for a CPU
// tensor, device memory for a CUDA one.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "hycc/codec.h"
#include "hycc/dtype.h"

namespace hycc::torch_backend {

inline std::optional<DType> hycc_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DType::kF32;
    case at::kBFloat16:
      return DType::kBF16;
    case at::kHalf:
      return DType::kF16;
    default:
      return std::nullopt;
  }
}

// Whether hycc runs calls on `t`: a dense contiguous CPU or CUDA tensor of a float type hycc
// codes.
inline bool hycc_takes(const at::Tensor& t) {
  return t.defined() && (t.device().is_cpu() || t.device().is_cuda()) &&
         t.layout() == at::kStrided && t.is_contiguous() && hycc_dtype(t).has_value();
}

// `t`'s memory; `t` is one hycc takes.
inline TensorView view_of(const at::Tensor& t) {
  return {*hycc_dtype(t), static_cast<size_t>(t.numel()), t.data_ptr()};
}

}  // namespace hycc::torch_backend
