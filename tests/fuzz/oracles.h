// The oracles the fuzz targets compare the codecs with, set up from canonical specs: the reference
// quant parameters, and plain libzfp on a float32 field ("zfp:rate=8", "zfp:accuracy=1e-4").
#pragma once

#include <zfp.h>

#include <cstdint>
#include <span>
#include <string>

#include "codec/quant_reference.h"

namespace hycc::fuzz {

// The value of KEY=... in a canonical spec ("quant:bits=4,block=64,round=nearest").
inline std::string spec_value(const std::string& spec, const std::string& key) {
  const size_t at = spec.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 1;
  return spec.substr(begin, spec.find(',', begin) - begin);
}

inline codec::reference::QuantParams quant_params(const std::string& spec) {
  codec::reference::QuantParams p;
  p.bits = std::stoi(spec_value(spec, "bits"));
  p.block = std::stoul(spec_value(spec, "block"));
  p.stochastic = spec_value(spec, "round") == "stochastic";
  p.rotate = spec_value(spec, "rotate") == "hadamard";
  return p;
}

class PlainZfp {
 public:
  PlainZfp(const std::string& spec, float* values, size_t count)
      : zfp_(zfp_stream_open(nullptr)), field_(zfp_field_1d(values, zfp_type_float, count)) {
    const std::string rate = spec_value(spec, "rate");
    if (!rate.empty()) {
      zfp_stream_set_rate(zfp_, std::stod(rate), zfp_type_float, 1, zfp_false);
    } else {
      zfp_stream_set_accuracy(zfp_, std::stod(spec_value(spec, "accuracy")));
    }
  }
  ~PlainZfp() {
    if (bits_ != nullptr) stream_close(bits_);
    zfp_field_free(field_);
    zfp_stream_close(zfp_);
  }
  PlainZfp(const PlainZfp&) = delete;
  PlainZfp& operator=(const PlainZfp&) = delete;

  // Bytes zfp may write or read for the field (it reads without bounds checks: give it this).
  size_t maximum_size() const { return zfp_stream_maximum_size(zfp_, field_); }
  // The field into `words`; returns the bytes written.
  size_t compress(std::span<uint64_t> words) {
    attach(words);
    return zfp_compress(zfp_, field_);
  }
  // `words` into the field; returns the bytes read.
  size_t decompress(std::span<uint64_t> words) {
    attach(words);
    return zfp_decompress(zfp_, field_);
  }

 private:
  void attach(std::span<uint64_t> words) {
    if (bits_ != nullptr) stream_close(bits_);
    bits_ = stream_open(words.data(), words.size() * sizeof(uint64_t));
    zfp_stream_set_bit_stream(zfp_, bits_);
    zfp_stream_rewind(zfp_);
  }

  zfp_stream* zfp_;
  zfp_field* field_;
  bitstream* bits_ = nullptr;
};

}  // namespace hycc::fuzz
