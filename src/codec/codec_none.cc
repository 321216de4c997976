// "none": the elements as they are. The baseline every other codec is compared with.
#include <cstring>

#include "codec/registry.h"
#include "hycc/error.h"

namespace hycc::codec {
namespace {

class NoneCodec final : public Codec {
 public:
  CodecId id() const override { return CodecId::kNone; }
  std::string spec() const override { return "none"; }
  bool lossless() const override { return true; }
  CodecParams params() const override { return {}; }
  size_t max_payload_bytes(DType dtype, size_t count) const override {
    return count * dtype_size(dtype);
  }
  std::optional<size_t> regular_payload_bytes(DType dtype, size_t count) const override {
    return count * dtype_size(dtype);
  }
  size_t encode(ConstTensorView in, std::span<std::byte> out,
                const CompressOptions&) const override {
    if (in.count != 0) std::memcpy(out.data(), in.data, in.bytes());
    return in.bytes();
  }
  void decode(std::span<const std::byte> payload, TensorView out) const override {
    if (payload.size() != out.bytes()) {
      throw CorruptStream(
          tagged("codec:none", "payload of ", payload.size(), " bytes, expected ", out.bytes()));
    }
    if (out.count != 0) std::memcpy(out.data, payload.data(), payload.size());
  }
};

std::shared_ptr<const Codec> from_spec(SpecArgs& args) {
  args.finish("no parameters");
  return std::make_shared<NoneCodec>();
}

std::shared_ptr<const Codec> from_params(const CodecParams&) {
  return std::make_shared<NoneCodec>();
}

}  // namespace

const CodecEntry& none_entry() {
  static const CodecEntry e{"none", CodecId::kNone, "", from_spec, from_params};
  return e;
}

}  // namespace hycc::codec
