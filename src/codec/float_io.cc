#include "codec/float_io.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/f16_array.h"
#include "codec/float_convert.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

// Elements converted per step by the float32 accumulation helpers (a 4 KiB stack buffer).
constexpr size_t kStripElems = 1024;

}  // namespace

void load_as_float(ConstTensorView in, size_t begin, size_t n, float* out) {
  if (n == 0) return;
  switch (in.dtype) {
    case DType::kF32:
      std::memcpy(out, static_cast<const float*>(in.data) + begin, n * 4);
      return;
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(in.data) + begin;
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(h[i]);
      return;
    }
    case DType::kF16:
      f16_to_f32_array(static_cast<const uint16_t*>(in.data) + begin, out, n);
      return;
  }
}

void store_from_float(const float* in, size_t n, TensorView out, size_t begin) {
  if (n == 0) return;
  switch (out.dtype) {
    case DType::kF32:
      std::memcpy(static_cast<float*>(out.data) + begin, in, n * 4);
      return;
    case DType::kBF16: {
      auto* h = static_cast<uint16_t*>(out.data) + begin;
      for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16(in[i]);
      return;
    }
    case DType::kF16:
      f32_to_f16_array(in, static_cast<uint16_t*>(out.data) + begin, n);
      return;
  }
}

void convert(ConstTensorView in, TensorView out) {
  if (in.count != out.count) {
    throw InvalidArgument(tagged("codec", "convert: ", in.count, " elements into ", out.count));
  }
  if (in.dtype == out.dtype) {
    if (in.count != 0) std::memmove(out.data, in.data, in.bytes());
    return;
  }
  constexpr size_t kChunk = 4096;
  float tmp[kChunk];
  for (size_t i = 0; i < in.count; i += kChunk) {
    const size_t n = in.count - i < kChunk ? in.count - i : kChunk;
    load_as_float(in, i, n, tmp);
    store_from_float(tmp, n, out, i);
  }
}

double max_abs_difference(ConstTensorView a, ConstTensorView b) {
  constexpr size_t kBlock = 4096;
  std::vector<float> x(kBlock), y(kBlock);
  double worst = 0;
  for (size_t i = 0; i < a.count; i += kBlock) {
    const size_t n = std::min(kBlock, a.count - i);
    codec::load_as_float(a, i, n, x.data());
    codec::load_as_float(b, i, n, y.data());
    for (size_t k = 0; k < n; ++k) {
      if (x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k]))) continue;
      const double d = std::fabs(double(x[k]) - double(y[k]));
      if (std::isnan(d) || std::isinf(d)) return INFINITY;
      worst = std::max(worst, d);
    }
  }
  return worst;
}

void add_f32(float* acc, ConstTensorView in, size_t begin, size_t n) {
  if (in.dtype == DType::kF32) {
    const float* x = static_cast<const float*>(in.data) + begin;
    for (size_t i = 0; i < n; ++i) acc[i] += x[i];
    return;
  }
  float strip[kStripElems];
  for (size_t i = 0; i < n; i += kStripElems) {
    const size_t m = std::min(kStripElems, n - i);
    load_as_float(in, begin + i, m, strip);
    for (size_t j = 0; j < m; ++j) acc[i + j] += strip[j];
  }
}

void store_result(const float* acc, size_t n, ReduceOp op, int size, TensorView out, size_t begin) {
  if (op == ReduceOp::kSum) {
    store_from_float(acc, n, out, begin);
    return;
  }
  const float p = static_cast<float>(size);
  float strip[kStripElems];
  for (size_t i = 0; i < n; i += kStripElems) {
    const size_t m = std::min(kStripElems, n - i);
    for (size_t j = 0; j < m; ++j) strip[j] = acc[i + j] / p;
    store_from_float(strip, m, out, begin + i);
  }
}

}  // namespace hycc::codec
