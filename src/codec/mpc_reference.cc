#include "codec/mpc_reference.h"

#include <cstdint>
#include <cstring>

#include "hycc/error.h"

namespace hycc::codec::reference {
namespace {

// Word width in bits: one element is one word.
int word_bits(DType dtype) { return static_cast<int>(dtype_size(dtype)) * 8; }

uint32_t word_mask(int bits) { return bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1; }

std::vector<uint32_t> load_words(ConstTensorView in) {
  std::vector<uint32_t> w(in.count);
  for (size_t i = 0; i < in.count; ++i) {
    if (in.dtype == DType::kF32) {
      std::memcpy(&w[i], static_cast<const uint32_t*>(in.data) + i, 4);
    } else {
      uint16_t v;
      std::memcpy(&v, static_cast<const uint16_t*>(in.data) + i, 2);
      w[i] = v;
    }
  }
  return w;
}

void store_words(const std::vector<uint32_t>& w, TensorView out) {
  for (size_t i = 0; i < out.count; ++i) {
    if (out.dtype == DType::kF32) {
      std::memcpy(static_cast<uint32_t*>(out.data) + i, &w[i], 4);
    } else {
      const auto v = static_cast<uint16_t>(w[i]);
      std::memcpy(static_cast<uint16_t*>(out.data) + i, &v, 2);
    }
  }
}

// Negative deltas (sign bit set) keep the sign bit and flip all others: -1 becomes 100..0,
// -2 becomes 100..01. Applying it twice gives the delta back.
uint32_t sign_magnitude(uint32_t d, int bits) {
  const uint32_t sign = 1u << (bits - 1);
  return (d & sign) != 0 ? d ^ (sign - 1) : d;
}

// out[j] bit k = in[k] bit j, for a bits x bits matrix.
std::vector<uint32_t> transpose_bits(const std::vector<uint32_t>& in, int bits) {
  std::vector<uint32_t> out(bits, 0);
  for (int j = 0; j < bits; ++j) {
    for (int k = 0; k < bits; ++k) {
      if ((in[k] >> j) & 1u) out[j] |= 1u << k;
    }
  }
  return out;
}

void put_word(std::vector<std::byte>& out, uint32_t v, int bits) {
  for (int b = 0; b < bits / 8; ++b) out.push_back(static_cast<std::byte>(v >> (8 * b)));
}

}  // namespace

std::vector<std::byte> mpc_encode(ConstTensorView in, int dim) {
  const int bits = word_bits(in.dtype);
  const std::vector<uint32_t> w = load_words(in);

  std::vector<uint32_t> mapped(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const uint32_t previous = i >= static_cast<size_t>(dim) ? w[i - dim] : 0;
    mapped[i] = sign_magnitude((w[i] - previous) & word_mask(bits), bits);
  }

  std::vector<std::byte> out;
  for (size_t begin = 0; begin < mapped.size(); begin += bits) {
    std::vector<uint32_t> group(bits, 0);  // zero padding past the last element
    for (size_t k = 0; k < static_cast<size_t>(bits) && begin + k < mapped.size(); ++k) {
      group[k] = mapped[begin + k];
    }
    const std::vector<uint32_t> planes = transpose_bits(group, bits);
    uint32_t bitmap = 0;
    for (int j = 0; j < bits; ++j) {
      if (planes[j] != 0) bitmap |= 1u << j;
    }
    put_word(out, bitmap, bits);
    for (int j = 0; j < bits; ++j) {
      if (planes[j] != 0) put_word(out, planes[j], bits);
    }
  }
  return out;
}

void mpc_decode(std::span<const std::byte> payload, TensorView out, int dim) {
  const int bits = word_bits(out.dtype);
  const size_t word_bytes = static_cast<size_t>(bits) / 8;
  size_t at = 0;  // bytes of the payload read so far
  auto next_word = [&]() {
    if (payload.size() - at < word_bytes) {
      throw CorruptStream(tagged("codec:mpc", "payload of ", payload.size(),
                                 " bytes ends inside a group at byte ", at));
    }
    uint32_t v = 0;
    for (size_t b = 0; b < word_bytes; ++b) {
      v |= static_cast<uint32_t>(std::to_integer<uint8_t>(payload[at + b])) << (8 * b);
    }
    at += word_bytes;
    return v;
  };

  std::vector<uint32_t> mapped(out.count);
  for (size_t begin = 0; begin < out.count; begin += bits) {
    const uint32_t bitmap = next_word();
    std::vector<uint32_t> planes(bits, 0);
    for (int j = 0; j < bits; ++j) {
      if ((bitmap >> j) & 1u) {
        planes[j] = next_word();
        if (planes[j] == 0) {
          throw CorruptStream(tagged("codec:mpc", "bitmap marks a zero word as present"));
        }
      }
    }
    const std::vector<uint32_t> group = transpose_bits(planes, bits);
    for (size_t k = 0; k < static_cast<size_t>(bits); ++k) {
      if (begin + k < out.count) {
        mapped[begin + k] = group[k];
      } else if (group[k] != 0) {
        throw CorruptStream(tagged("codec:mpc", "non-zero padding after the last element"));
      }
    }
  }
  if (at != payload.size()) {
    throw CorruptStream(tagged("codec:mpc", "payload of ", payload.size(), " bytes has ",
                               payload.size() - at, " bytes after the last group"));
  }

  std::vector<uint32_t> w(out.count);
  for (size_t i = 0; i < w.size(); ++i) {
    const uint32_t previous = i >= static_cast<size_t>(dim) ? w[i - dim] : 0;
    w[i] = (previous + sign_magnitude(mapped[i], bits)) & word_mask(bits);
  }
  store_words(w, out);
}

}  // namespace hycc::codec::reference
