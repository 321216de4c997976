// Element types that travel through hycc, and views of tensors of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hycc {

enum class DType : uint8_t {
  kF32 = 0,   // IEEE binary32
  kBF16 = 1,  // bfloat16: the upper half of a binary32
  kF16 = 2,   // IEEE binary16
};

// Size of one element in bytes.
constexpr size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

// "f32", "bf16", "f16".
std::string_view dtype_name(DType t);

// Parses "f32"/"float"/"fp32", "bf16", "f16"/"fp16"/"half"; throws InvalidArgument otherwise.
DType parse_dtype(std::string_view name);

// True if the byte value is a valid DType enumerator (used when validating streams).
constexpr bool is_valid_dtype(uint8_t v) { return v <= 2; }

// A read-only tensor: `count` elements of `dtype` at `data` (host memory).
struct ConstTensorView {
  DType dtype = DType::kF32;
  size_t count = 0;
  const void* data = nullptr;

  size_t bytes() const { return count * dtype_size(dtype); }
};

// A writable tensor.
struct TensorView {
  DType dtype = DType::kF32;
  size_t count = 0;
  void* data = nullptr;

  size_t bytes() const { return count * dtype_size(dtype); }
  operator ConstTensorView() const { return {dtype, count, data}; }
};

}  // namespace hycc
