// Helpers shared by the unit tests: typed buffers, special values, error measures.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/float_io.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/error.h"

namespace hycc::test {

// A tensor of any dtype backed by 8-byte aligned storage.
class Buffer {
 public:
  Buffer(DType dtype, size_t count)
      : dtype_(dtype), count_(count), words_((count * dtype_size(dtype) + 7) / 8 + 1) {}

  // Converts floats into the dtype (round to nearest even).
  static Buffer from_floats(DType dtype, const std::vector<float>& values) {
    Buffer b(dtype, values.size());
    codec::store_from_float(values.data(), values.size(), b.view(), 0);
    return b;
  }

  TensorView view() { return {dtype_, count_, words_.data()}; }
  ConstTensorView view() const { return {dtype_, count_, words_.data()}; }
  std::vector<float> to_floats() const {
    std::vector<float> out(count_);
    codec::load_as_float(view(), 0, count_, out.data());
    return out;
  }
  bool bits_equal(const Buffer& o) const {
    return o.count_ == count_ && o.dtype_ == dtype_ &&
           std::memcmp(o.words_.data(), words_.data(), count_ * dtype_size(dtype_)) == 0;
  }
  size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  void* data() { return words_.data(); }

 private:
  DType dtype_;
  size_t count_;
  std::vector<uint64_t> words_;
};

// Gaussian data with NaN, +-Inf, -0, +0, denormals and extremes sprinkled at fixed positions.
inline std::vector<float> data_with_specials(size_t count, uint64_t seed = 7) {
  std::vector<float> v = make_data(DataKind::kGaussian, count, seed);
  const float specials[] = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY, -0.0f, 0.0f,
                            1e-40f,        -3e-42f,        3.4e38f,  -3.4e38f,  1e-8f, 65504.0f};
  for (size_t i = 0; i < count; i += 37) v[i] = specials[(i / 37) % 12];
  return v;
}

inline double max_abs_error(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isfinite(a[i])) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  }
  return m;
}

inline double rel_l2_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(a[i]) * double(a[i]);
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// The message of the InvalidArgument that parsing `spec` throws, or "" if the spec is accepted.
inline std::string spec_error(const std::string& spec) {
  try {
    CodecConfig::parse(spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace hycc::test
