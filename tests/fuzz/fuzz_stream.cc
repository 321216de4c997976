// fuzz_stream: decompress() of arbitrary streams. The harness recomputes the checksum, so that
// the codecs' own structural checks are what the input meets. Properties:
// - inspect() and decompress() throw nothing but CorruptStream, and touch no memory they do not
//   own (the targets run under AddressSanitizer and UndefinedBehaviorSanitizer);
// - quant, eb and mpc: the slow reference decoder accepts exactly the payloads the fast one
//   accepts, and decodes them to the same bits;
// - zfp (float32): a payload that is one plain zfp bitstream decodes to libzfp's values, bit for
//   bit.
#include <algorithm>
#include <cstring>

#include "codec/eb_reference.h"
#include "codec/exphuff_reference.h"
#include "codec/mpc_reference.h"
#include "codec/quant_reference.h"
#include "codec/stream.h"
#include "fuzz_target.h"
#include "hycc/codec.h"
#include "hycc/error.h"
#include "oracles.h"
#include "test_util.h"

namespace hycc::fuzz {
namespace {

constexpr uint64_t kMaxCount = uint64_t{1} << 18;

// Runs `decode`; true if it accepted the payload, false on CorruptStream.
template <typename F>
bool accepts(F&& decode) {
  try {
    decode();
    return true;
  } catch (const CorruptStream&) {
    return false;
  }
}

// libzfp's values for a payload that is exactly one zfp bitstream; false if libzfp reads a
// different number of bytes.
bool plain_zfp_decode(const std::string& spec, std::span<const std::byte> payload,
                      std::vector<float>& values) {
  PlainZfp zfp(spec, values.data(), values.size());
  std::vector<uint64_t> padded((std::max(payload.size(), zfp.maximum_size()) + 7) / 8 + 1);
  if (!payload.empty()) std::memcpy(padded.data(), payload.data(), payload.size());
  return zfp.decompress(padded) == payload.size();
}

void compare_with_reference(const StreamInfo& info, std::span<const std::byte> stream,
                            const test::Buffer& fast, bool fast_ok) {
  const std::span<const std::byte> payload = stream_payload(stream);
  test::Buffer slow(info.dtype, info.count);
  bool slow_ok = true;
  if (info.codec == CodecId::kQuant) {
    const codec::reference::QuantParams p = quant_params(info.spec);
    slow_ok = accepts([&] { codec::reference::quant_decode(p, payload, slow.view()); });
  } else if (info.codec == CodecId::kEb) {
    slow_ok = accepts([&] { codec::reference::eb_decode(payload, slow.view()); });
  } else if (info.codec == CodecId::kExpHuff) {
    const size_t block = std::stoul(spec_value(info.spec, "block"));
    slow_ok = accepts([&] { codec::reference::exphuff_decode(payload, slow.view(), block); });
  } else if (info.codec == CodecId::kMpc) {
    const int dim = std::stoi(spec_value(info.spec, "dim"));
    slow_ok = accepts([&] { codec::reference::mpc_decode(payload, slow.view(), dim); });
  } else if (info.codec == CodecId::kZfp && info.dtype == DType::kF32 && fast_ok &&
             info.count != 0) {  // libzfp itself crashes on a field of 0 values
    std::vector<float> plain(info.count);
    if (plain_zfp_decode(info.spec, payload, plain)) {
      check(std::memcmp(plain.data(), fast.view().data, plain.size() * sizeof(float)) == 0,
            info.spec + ": our decoder and libzfp's differ on one bitstream");
    }
    return;
  } else {
    return;
  }
  check(fast_ok == slow_ok,
        info.spec +
            (fast_ok ? ": the reference rejects a payload" : ": the reference accepts a payload") +
            " the fast decoder " + (fast_ok ? "accepts" : "rejects"));
  if (fast_ok) check(fast.bits_equal(slow), info.spec + ": fast and reference decode differ");
}

}  // namespace

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  const char* specs[] = {"none",
                         "bf16",
                         "fp16",
                         "quant:bits=8",
                         "quant:bits=3,block=16,round=stochastic",
                         "quant:bits=4,block=32,rotate=hadamard",
                         "eb:abs=1e-3",
                         "eb:rel=1e-5",
                         "zfp:rate=8",
                         "zfp:rate=3",
                         "zfp:accuracy=1e-4",
                         "mpc",
                         "mpc:dim=3",
                         "zstd:level=1",
                         "exphuff:block=256"};
  for (const char* spec : specs) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (size_t count : {size_t{1}, size_t{37}, size_t{300}}) {
        const CodecConfig config = CodecConfig::parse(spec);
        const test::Buffer in =
            test::Buffer::from_floats(dtype, test::data_with_specials(count, count));
        const std::vector<std::byte> s = compress(config, in.view(), {.seed = count});
        const auto* p = reinterpret_cast<const uint8_t*>(s.data());
        out.emplace_back(p, p + s.size());
      }
    }
  }
  // exphuff with blocks long enough to be Huffman-coded.
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const test::Buffer in =
        test::Buffer::from_floats(dtype, make_data(DataKind::kGaussian, 700, 3));
    const std::vector<std::byte> s = compress(CodecConfig::parse("exphuff:block=256"), in.view());
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    out.emplace_back(p, p + s.size());
  }
  return out;
}

}  // namespace hycc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hycc;
  std::vector<uint64_t> storage(size / 8 + 1);  // 8-byte aligned, as streams usually are
  if (size > 0) std::memcpy(storage.data(), data, size);
  const std::span<std::byte> stream(reinterpret_cast<std::byte*>(storage.data()), size);
  StreamInfo info;
  try {
    codec::reseal_stream(stream);  // rejects what inspect() would, but for the checksum
    info = inspect(stream);
  } catch (const CorruptStream&) {
    return 0;
  }
  if (info.count > fuzz::kMaxCount) return 0;
  test::Buffer out(info.dtype, info.count);
  const bool ok = fuzz::accepts([&] { decompress(stream, out.view()); });
  fuzz::compare_with_reference(info, stream, out, ok);
  return 0;
}
