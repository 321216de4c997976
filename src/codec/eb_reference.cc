// Reference encoder and decoder of the "eb" codec: one element, one bit at a time, no tricks.
// They define the payload bytes the fast path in codec_eb.cc must reproduce exactly.
#include "codec/eb_reference.h"

#include <algorithm>
#include <cstring>

#include "codec/float_io.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace eb {

float first_finite(ConstTensorView in) {
  for (size_t i = 0; i < in.count; ++i) {
    float v;
    load_as_float(in, i, 1, &v);
    if (std::isfinite(v)) return v;
  }
  return 0.0f;
}

}  // namespace eb

namespace reference {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw CorruptStream(tagged("codec:eb", what));
}

std::vector<uint8_t> element_bytes(ConstTensorView in, size_t i) {
  const size_t size = dtype_size(in.dtype);
  const auto* p = static_cast<const uint8_t*>(in.data) + i * size;
  return std::vector<uint8_t>(p, p + size);
}

uint32_t zigzag(int64_t v) { return static_cast<uint32_t>(v < 0 ? -2 * v - 1 : 2 * v); }
int64_t unzigzag(uint32_t z) { return (z & 1) ? -static_cast<int64_t>(z / 2) - 1 : z / 2; }

size_t varint_length(uint32_t v) {
  size_t n = 1;
  while (v >= 128) {
    v /= 128;
    ++n;
  }
  return n;
}

unsigned bits_for(int64_t range) {
  unsigned w = 0;
  while ((range >> w) != 0) ++w;
  return w;
}

class Writer {
 public:
  void byte(uint8_t b) { bytes_.push_back(b); }
  void bytes(const std::vector<uint8_t>& b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  void f64(double v) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    bytes_.insert(bytes_.end(), b, b + 8);
  }
  void varint(uint32_t v) {
    while (v >= 128) {
      byte(static_cast<uint8_t>(v % 128 + 128));
      v /= 128;
    }
    byte(static_cast<uint8_t>(v));
  }
  // Appends `width` bits of `value`, least significant first, into a fresh run of bytes.
  void bits(const std::vector<uint32_t>& values, unsigned width) {
    std::vector<uint8_t> packed((values.size() * width + 7) / 8, 0);
    size_t bit = 0;
    for (uint32_t v : values) {
      for (unsigned b = 0; b < width; ++b, ++bit) {
        if ((v >> b) & 1u) packed[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
    bytes(packed);
  }
  std::vector<std::byte> take() {
    std::vector<std::byte> out(bytes_.size());
    if (!bytes_.empty()) std::memcpy(out.data(), bytes_.data(), bytes_.size());
    return out;
  }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  uint8_t byte(const char* what) {
    if (at_ >= bytes_.size()) corrupt(detail::concat("payload ends inside ", what));
    return static_cast<uint8_t>(bytes_[at_++]);
  }
  double f64(const char* what) {
    uint8_t b[8];
    for (uint8_t& x : b) x = byte(what);
    double v;
    std::memcpy(&v, b, 8);
    return v;
  }
  uint32_t varint() {
    uint64_t v = 0;
    for (size_t i = 0; i < eb::kMaxVarintBytes; ++i) {
      const uint8_t b = byte("a block base");
      v += static_cast<uint64_t>(b % 128) << (7 * i);
      if (b < 128) {
        if (i > 0 && b == 0) corrupt("overlong block base");
        if (v > 0xffffffffu) corrupt("block base out of range");
        return static_cast<uint32_t>(v);
      }
    }
    corrupt("block base longer than 5 bytes");
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

}  // namespace

double eb_resolve_bound(ConstTensorView in, bool relative, double value) {
  if (!relative) return value;
  bool any = false;
  float lo = 0, hi = 0;
  for (size_t i = 0; i < in.count; ++i) {
    float v;
    load_as_float(in, i, 1, &v);
    if (!std::isfinite(v)) continue;
    if (!any || v < lo) lo = v;
    if (!any || v > hi) hi = v;
    any = true;
  }
  return any ? eb::relative_bound(value, lo, hi) : 0.0;
}

std::vector<std::byte> eb_encode(ConstTensorView in, double bound) {
  Writer w;
  if (in.count == 0) return w.take();
  const eb::Quantizer qz = eb::make_quantizer(bound, bound > 0 ? 0.0f : eb::first_finite(in));
  w.f64(qz.bound);
  w.f64(qz.step);
  const size_t elem = dtype_size(in.dtype);
  int64_t carry = 0;  // the last quantum of the previous coded block
  for (size_t begin = 0; begin < in.count; begin += eb::kBlockValues) {
    const size_t n = std::min(eb::kBlockValues, in.count - begin);
    std::vector<float> x(n);
    load_as_float(in, begin, n, x.data());

    // Quantize; an outlier takes the quantum of its predecessor so that it costs no bits.
    std::vector<int64_t> q(n);
    std::vector<bool> outlier(n);
    size_t outliers = 0;
    for (size_t i = 0; i < n; ++i) {
      int32_t qi = 0;
      outlier[i] = !eb::choose_quantum(x[i], qz, in.dtype, qi);
      q[i] = outlier[i] ? (i == 0 ? carry : q[i - 1]) : qi;
      outliers += outlier[i] ? 1 : 0;
    }

    // Offset mode stores q - min q; delta mode stores the differences minus their minimum.
    std::vector<int64_t> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = q[i] - (i == 0 ? carry : q[i - 1]);
    const int64_t q_min = *std::min_element(q.begin(), q.end());
    const int64_t q_max = *std::max_element(q.begin(), q.end());
    const int64_t d_min = *std::min_element(d.begin(), d.end());
    const int64_t d_max = *std::max_element(d.begin(), d.end());
    const unsigned offset_width = bits_for(q_max - q_min);
    const unsigned delta_width = bits_for(d_max - d_min);
    const size_t offset_bytes = varint_length(zigzag(q_min)) + (n * offset_width + 7) / 8;
    const size_t delta_bytes = varint_length(zigzag(d_min)) + (n * delta_width + 7) / 8;
    const bool delta = delta_bytes < offset_bytes;
    const unsigned width = delta ? delta_width : offset_width;

    const size_t index_bytes = outliers < (n + 7) / 8 ? outliers : (n + 7) / 8;
    const size_t outlier_bytes = outliers == 0 ? 0 : 1 + index_bytes + outliers * elem;
    const size_t coded_bytes = 1 + (delta ? delta_bytes : offset_bytes) + outlier_bytes;
    if (coded_bytes >= 1 + n * elem) {
      w.byte(static_cast<uint8_t>(eb::kVerbatimWidth));
      for (size_t i = 0; i < n; ++i) w.bytes(element_bytes(in, begin + i));
      continue;
    }

    w.byte(static_cast<uint8_t>(width + (delta ? 64 : 0) + (outliers > 0 ? 128 : 0)));
    w.varint(zigzag(delta ? d_min : q_min));
    if (outliers > 0) {
      w.byte(static_cast<uint8_t>(outliers));
      if (outliers < (n + 7) / 8) {
        for (size_t i = 0; i < n; ++i) {
          if (outlier[i]) w.byte(static_cast<uint8_t>(i));
        }
      } else {
        std::vector<uint32_t> bitmap(n);
        for (size_t i = 0; i < n; ++i) bitmap[i] = outlier[i] ? 1 : 0;
        w.bits(bitmap, 1);
      }
      for (size_t i = 0; i < n; ++i) {
        if (outlier[i]) w.bytes(element_bytes(in, begin + i));
      }
    }
    std::vector<uint32_t> values(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = static_cast<uint32_t>(delta ? d[i] - d_min : q[i] - q_min);
    }
    w.bits(values, width);
    carry = q[n - 1];
  }
  return w.take();
}

void eb_decode(std::span<const std::byte> payload, TensorView out) {
  Reader r(payload);
  if (out.count == 0) {
    if (!r.done()) corrupt("non-empty payload for 0 elements");
    return;
  }
  const double bound = r.f64("the preamble");
  const double step = r.f64("the preamble");
  if (const char* error = eb::preamble_error(bound, step)) corrupt(error);

  const size_t elem = dtype_size(out.dtype);
  auto* dst = static_cast<uint8_t*>(out.data);
  uint32_t carry = 0;
  for (size_t begin = 0; begin < out.count; begin += eb::kBlockValues) {
    const size_t n = std::min(eb::kBlockValues, out.count - begin);
    const uint8_t header = r.byte("a block header");
    const unsigned width = header % 64;
    if (width == eb::kVerbatimWidth) {
      if (header != eb::kVerbatimWidth) corrupt("flags on a verbatim block");
      for (size_t i = 0; i < n * elem; ++i) dst[begin * elem + i] = r.byte("a verbatim block");
      continue;
    }
    if (width > eb::kMaxWidth) corrupt(detail::concat("bit width ", width, " exceeds 32"));
    const bool delta = (header / 64) % 2 == 1;
    const bool has_outliers = header / 128 == 1;
    const int64_t base = unzigzag(r.varint());

    std::vector<bool> outlier(n, false);
    std::vector<std::vector<uint8_t>> raw;
    if (has_outliers) {
      const size_t k = r.byte("an outlier count");
      if (k == 0 || k > n) corrupt(detail::concat("outlier count ", k, " for ", n, " values"));
      if (k < (n + 7) / 8) {
        int last = -1;
        for (size_t j = 0; j < k; ++j) {
          const int at = r.byte("outlier positions");
          if (at <= last || at >= static_cast<int>(n)) corrupt("invalid outlier position");
          outlier[at] = true;
          last = at;
        }
      } else {
        size_t set = 0;
        for (size_t j = 0; j < (n + 7) / 8; ++j) {
          const uint8_t b = r.byte("an outlier bitmap");
          for (size_t bit = 0; bit < 8; ++bit) {
            if (((b >> bit) & 1) == 0) continue;
            if (j * 8 + bit >= n) corrupt("outlier bitmap marks a value past the block");
            outlier[j * 8 + bit] = true;
            ++set;
          }
        }
        if (set != k) corrupt("outlier bitmap disagrees with the outlier count");
      }
      for (size_t j = 0; j < k; ++j) {
        std::vector<uint8_t> value(elem);
        for (uint8_t& b : value) b = r.byte("outlier values");
        raw.push_back(value);
      }
    }

    std::vector<uint8_t> packed((n * width + 7) / 8);
    for (uint8_t& b : packed) b = r.byte("packed values");
    if (n * width % 8 != 0 && (packed.back() >> (n * width % 8)) != 0) {
      corrupt("nonzero padding bits");
    }
    size_t next_raw = 0;
    for (size_t i = 0; i < n; ++i) {
      uint32_t v = 0;
      for (unsigned b = 0; b < width; ++b) {
        const size_t bit = i * width + b;
        v |= static_cast<uint32_t>((packed[bit / 8] >> (bit % 8)) & 1) << b;
      }
      // Arithmetic modulo 2^32: a valid stream never wraps, garbage may and stays harmless.
      const uint32_t q = static_cast<uint32_t>(delta ? carry : 0) + static_cast<uint32_t>(base) + v;
      carry = q;
      if (outlier[i]) {
        std::memcpy(dst + (begin + i) * elem, raw[next_raw++].data(), elem);
      } else {
        const float x = eb::reconstruct(static_cast<int32_t>(q), step);
        store_from_float(&x, 1, out, begin + i);
      }
    }
  }
  if (!r.done()) corrupt("trailing bytes after the last block");
}

}  // namespace reference
}  // namespace hycc::codec
