// "bf16" and "fp16": a cast to a 16-bit float format, round to nearest even, NaN and infinities
// preserved. Lossless when the input already is of the target format. Decoding widens (or, for
// 16-bit outputs of the other format, re-rounds) into the output dtype.
#include <cstdint>
#include <cstring>

#include "codec/f16_array.h"
#include "codec/float_convert.h"
#include "codec/float_io.h"
#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

class CastCodec final : public Codec {
 public:
  explicit CastCodec(DType target) : target_(target) {}

  CodecId id() const override { return target_ == DType::kBF16 ? CodecId::kBF16 : CodecId::kFP16; }
  std::string spec() const override { return target_ == DType::kBF16 ? "bf16" : "fp16"; }
  bool lossless() const override { return false; }
  CodecParams params() const override { return {}; }
  size_t max_payload_bytes(DType, size_t count) const override { return count * 2; }
  std::optional<size_t> regular_payload_bytes(DType, size_t count) const override {
    return count * 2;
  }

  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    auto* dst = reinterpret_cast<uint16_t*>(out.data());
    if (in.dtype == DType::kF32) {
      if (target_ == DType::kBF16) {
        f32_bits_to_bf16_array(static_cast<const uint32_t*>(in.data), dst, in.count);
      } else {
        f32_to_f16_array(static_cast<const float*>(in.data), dst, in.count);
      }
    } else {
      convert(in, TensorView{target_, in.count, out.data()});
    }
    return in.count * 2;
  }

  void decode(std::span<const std::byte> payload, TensorView out) const override {
    if (payload.size() != out.count * 2) {
      throw CorruptStream(tagged("codec:" + spec(), "payload of ", payload.size(),
                                 " bytes, expected ", out.count * 2));
    }
    const auto* src = reinterpret_cast<const uint16_t*>(payload.data());
    if (out.dtype == DType::kF32) {
      if (target_ == DType::kBF16) {
        auto* dst = static_cast<uint32_t*>(out.data);
        for (size_t i = 0; i < out.count; ++i) dst[i] = bf16_to_f32_bits(src[i]);
      } else {
        f16_to_f32_array(src, static_cast<float*>(out.data), out.count);
      }
    } else {
      convert(ConstTensorView{target_, out.count, payload.data()}, out);
    }
  }

 private:
  DType target_;
};

template <DType kTarget>
std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  args.finish("no parameters");
  return std::make_shared<CastCodec>(kTarget);
}

template <DType kTarget>
std::shared_ptr<const Codec> from_params(const CodecParams&) {
  return std::make_shared<CastCodec>(kTarget);
}

}  // namespace

const CodecEntry& bf16_entry() {
  static const CodecEntry e{"bf16", CodecId::kBF16, "", from_spec<DType::kBF16>,
                            from_params<DType::kBF16>};
  return e;
}

const CodecEntry& fp16_entry() {
  static const CodecEntry e{"fp16", CodecId::kFP16, "", from_spec<DType::kF16>,
                            from_params<DType::kF16>};
  return e;
}

}  // namespace hycc::codec
