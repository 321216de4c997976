#include "hycc/dtype.h"

#include "hycc/error.h"

namespace hycc {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float" || name == "fp32" || name == "float32") return DType::kF32;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "f16" || name == "fp16" || name == "half" || name == "float16") return DType::kF16;
  throw InvalidArgument(
      tagged("dtype", "unknown dtype '", name, "'; expected f32|float|bf16|f16|fp16|half"));
}

}  // namespace hycc
