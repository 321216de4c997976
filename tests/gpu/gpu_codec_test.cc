// Device codecs against the CPU codecs, their oracle: for every device codec, dtype and count the
// device payload is bit-identical to the payload of the CPU stream (stochastic rounding included:
// both draw the same seeded noise), the device decodes CPU payloads to the CPU's output bit for
// bit, libzfp decodes the device's zfp streams, the codecs without kernels take the host path
// with the same payloads, and malformed payloads are rejected.
#include <gtest/gtest.h>
#include <zfp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "codec/params_io.h"
#include "hycc/codec.h"
#include "hycc/codec_device.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

const char* const kSpecs[] = {
    "none",
    "bf16",
    "fp16",
    "quant:bits=8",
    "quant:bits=4",
    "quant:bits=1",
    "quant:bits=3,block=72,round=stochastic",
    "quant:bits=5,block=8",
    "quant:bits=7,block=4096,round=stochastic",
    "quant:bits=2,round=stochastic",
    "quant:bits=6",
    "quant:bits=8,rotate=hadamard",
    "quant:bits=3,block=256,round=stochastic,rotate=hadamard",
    "zfp:rate=8",
    "zfp:rate=2.25",
    "zfp:rate=12.75",
    "zfp:rate=16",
    "zfp:rate=32",
    "zfp:accuracy=1e-3",
#if !defined(HYCC_CUDA_EMULATION)  // each position of the walk decodes a block: slow there
    "zfp:accuracy=0.5",
    "zfp:accuracy=1e-30",
#endif
    "eb:abs=1e-3",
    "eb:rel=1e-4",
    "eb:abs=1e-6",
    "eb:abs=0.5",
    "mpc",
    "mpc:dim=3",
    "mpc:dim=64",
    "exphuff",
    "exphuff:block=256",
};
const DType kDTypes[] = {DType::kF32, DType::kBF16, DType::kF16};
// The CUDA emulator (HYCC_CUDA_EMULATION builds, docs/gpu.md) runs every thread of a kernel on
// the CPU, about a thousand times slower than a GPU: there the large tensors are 8 times smaller
// (still hundreds of CUDA blocks per grid) and float32 only (the kernels' grids and walks do not
// depend on the dtype; every dtype takes them at 4097 values).
#if defined(HYCC_CUDA_EMULATION)
constexpr bool kEmulatedDevice = true;
constexpr size_t kLarge = size_t{1} << 17;
#else
constexpr bool kEmulatedDevice = false;
constexpr size_t kLarge = size_t{1} << 20;
#endif
const size_t kCounts[] = {0, 1, 3, 4097, kLarge + 3};

enum class Data { kGaussian, kSpecials };

using Param = std::tuple<const char*, DType, size_t, Data>;

std::vector<std::byte> cpu_payload(const CodecConfig& config, ConstTensorView in, uint64_t seed) {
  const std::vector<std::byte> stream = compress(config, in, CompressOptions{seed});
  const std::span<const std::byte> payload = stream_payload(stream);
  return {payload.begin(), payload.end()};
}

class DeviceCodec : public ::testing::TestWithParam<Param> {};

TEST_P(DeviceCodec, MatchesTheCpuCodecBitForBit) {
  const auto& [spec, dtype, count, data] = GetParam();
  if (kEmulatedDevice && count == kLarge + 3 && dtype != DType::kF32) {
    GTEST_SKIP() << "the large tensors of 16-bit dtypes run on a GPU only";
  }
  const CodecConfig config = CodecConfig::parse(spec);
  ASSERT_TRUE(device_supports(config));
  const std::vector<float> values = data == Data::kSpecials
                                        ? test::data_with_specials(count, 5)
                                        : make_data(DataKind::kGaussian, count, 5);
  const test::Buffer in = test::Buffer::from_floats(dtype, values);
  const std::vector<std::byte> expected = cpu_payload(config, in.view(), 42);

  const size_t max_bytes = config.codec().max_payload_bytes(dtype, count);
  DeviceBuffer d_in(in.view().bytes() + 1), d_payload(max_bytes + 1), d_out(in.view().bytes() + 1);
  copy_to_device(d_in.data(), in.view().data, in.view().bytes());
  const size_t n = encode_device(config, {dtype, count, d_in.data()}, d_payload.data(), max_bytes,
                                 CompressOptions{42});
  ASSERT_EQ(n, expected.size());
  std::vector<std::byte> payload(n);
  copy_to_host(payload.data(), d_payload.data(), n);
  ASSERT_TRUE(payload == expected) << "device payload differs from the CPU payload";

  // The device decodes the CPU payload exactly as the CPU does.
  test::Buffer cpu_out(dtype, count), dev_out(dtype, count);
  config.codec().decode(expected, cpu_out.view());
  copy_to_device(d_payload.data(), expected.data(), expected.size());
  decode_device(config, d_payload.data(), expected.size(), {dtype, count, d_out.data()});
  copy_to_host(dev_out.data(), d_out.data(), dev_out.view().bytes());
  EXPECT_TRUE(dev_out.bits_equal(cpu_out)) << "device decode differs from the CPU decode";
}

INSTANTIATE_TEST_SUITE_P(AllDeviceCodecs, DeviceCodec,
                         ::testing::Combine(::testing::ValuesIn(kSpecs),
                                            ::testing::ValuesIn(kDTypes),
                                            ::testing::ValuesIn(kCounts),
                                            ::testing::Values(Data::kGaussian, Data::kSpecials)));

// zstd has no kernels, and zfp:accuracy payloads other than the plain layout (NaN or infinities
// in the data) are decoded on the host: the device API runs the CPU codec on host copies, with
// the CPU's payloads (and its checks of malformed ones).
TEST(DeviceCodecHostPath, CodecsWithoutKernelsMatchTheCpuCodec) {
  for (const char* spec : {"zstd", "zstd:level=9", "zfp:accuracy=1e-3", "zfp:accuracy=0.5"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    EXPECT_EQ(device_supports(config), config.id() == CodecId::kZfp) << spec;
    for (const DType dtype : kDTypes) {
      for (const size_t count : {size_t{0}, size_t{5}, size_t{4097}}) {
        const std::string what = std::string(spec) + " " + std::string(dtype_name(dtype)) +
                                 " n=" + std::to_string(count);
        const test::Buffer in =
            test::Buffer::from_floats(dtype, test::data_with_specials(count, 3));
        const std::vector<std::byte> expected = cpu_payload(config, in.view(), 7);
        const size_t max_bytes = config.codec().max_payload_bytes(dtype, count);
        DeviceBuffer d_in(in.view().bytes() + 1), d_payload(max_bytes + 1),
            d_out(in.view().bytes() + 1);
        copy_to_device(d_in.data(), in.view().data, in.view().bytes());
        const size_t n = encode_device(config, {dtype, count, d_in.data()}, d_payload.data(),
                                       max_bytes, CompressOptions{7});
        ASSERT_EQ(n, expected.size()) << what;
        std::vector<std::byte> payload(n);
        copy_to_host(payload.data(), d_payload.data(), n);
        EXPECT_TRUE(payload == expected) << what << ": device payload differs";
        test::Buffer cpu_out(dtype, count), dev_out(dtype, count);
        config.codec().decode(expected, cpu_out.view());
        decode_device(config, d_payload.data(), n, {dtype, count, d_out.data()});
        copy_to_host(dev_out.data(), d_out.data(), dev_out.view().bytes());
        EXPECT_TRUE(dev_out.bits_equal(cpu_out)) << what << ": device decode differs";
        if (n > 1) {
          EXPECT_THROW(decode_device(config, d_payload.data(), n - 1, {dtype, count, d_out.data()}),
                       CorruptStream)
              << what << ": a truncated payload";
        }
      }
    }
  }
}

TEST(DeviceZfp, LibzfpDecodesTheDeviceStream) {
  const size_t count = kLarge + 1;
  std::vector<float> values = make_data(DataKind::kSmooth, count, 9);
  for (double rate : {2.25, 8.0, 13.0, 32.0}) {
    const CodecConfig config = CodecConfig::parse("zfp:rate=" + std::to_string(rate));
    const size_t max_bytes = config.codec().max_payload_bytes(DType::kF32, count);
    DeviceBuffer d_in(count * 4), d_payload(max_bytes);
    copy_to_device(d_in.data(), values.data(), count * 4);
    const size_t n =
        encode_device(config, {DType::kF32, count, d_in.data()}, d_payload.data(), max_bytes);
    std::vector<uint64_t> stream((n + 7) / 8 + 2, 0);
    copy_to_host(stream.data(), d_payload.data(), n);

    std::vector<float> theirs(count);
    zfp_stream* zfp = zfp_stream_open(nullptr);
    zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
    zfp_field* field = zfp_field_1d(theirs.data(), zfp_type_float, count);
    bitstream* bits = stream_open(stream.data(), stream.size() * 8);
    zfp_stream_set_bit_stream(zfp, bits);
    zfp_stream_rewind(zfp);
    EXPECT_NE(zfp_decompress(zfp, field), 0u);
    stream_close(bits);
    zfp_field_free(field);
    zfp_stream_close(zfp);

    std::vector<float> ours(count);
    decompress(compress(config, ConstTensorView{DType::kF32, count, values.data()}),
               TensorView{DType::kF32, count, ours.data()});
    EXPECT_EQ(std::memcmp(theirs.data(), ours.data(), count * 4), 0) << rate;
  }
}

// eb and mpc on the device alone: decode(encode(x)) is within the declared bound of x (eb, after
// rounding to the dtype; NaN and infinities bit for bit) or x itself (mpc).
TEST(DeviceEbMpc, RoundTripKeepsTheBoundOrIsExact) {
  const size_t count = kLarge + 7;
  const std::vector<float> values = test::data_with_specials(count, 11);
  for (const char* spec : {"eb:abs=1e-3", "eb:abs=1e-6", "mpc", "mpc:dim=5"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    for (DType dtype : kDTypes) {
      const test::Buffer in = test::Buffer::from_floats(dtype, values);
      const size_t max_bytes = config.codec().max_payload_bytes(dtype, count);
      DeviceBuffer d_in(in.view().bytes()), d_payload(max_bytes), d_out(in.view().bytes());
      copy_to_device(d_in.data(), in.view().data, in.view().bytes());
      const size_t n =
          encode_device(config, {dtype, count, d_in.data()}, d_payload.data(), max_bytes);
      decode_device(config, d_payload.data(), n, {dtype, count, d_out.data()});
      test::Buffer out(dtype, count);
      copy_to_host(out.data(), d_out.data(), out.view().bytes());
      if (config.codec().lossless()) {
        EXPECT_TRUE(out.bits_equal(in)) << spec << " " << dtype_name(dtype);
        continue;
      }
      const double bound = codec::get_f64(config.codec().params(), 8);
      const std::vector<float> x = in.to_floats(), y = out.to_floats();
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        if (std::isfinite(x[i])) {
          bad += std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])) > bound;
        } else {
          bad += std::memcmp(&x[i], &y[i], 4) != 0;
        }
      }
      EXPECT_EQ(bad, 0u) << spec << " " << dtype_name(dtype);
    }
  }
}

// Corrupted eb, mpc, zfp:accuracy and exphuff payloads: the device rejects what the CPU rejects,
// and decodes what the CPU accepts to the same bits.
TEST(DeviceEbMpc, GarbageIsHandledAsTheCpuDoes) {
  const size_t count = 5000;
  const std::vector<float> values = make_data(DataKind::kSmooth, count, 4);
  uint64_t state = 99;
  for (const char* spec : {"eb:abs=1e-3", "mpc", "zfp:accuracy=1e-3", "exphuff:block=256"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    const test::Buffer in = test::Buffer::from_floats(DType::kF32, values);
    const std::vector<std::byte> good = cpu_payload(config, in.view(), 0);
    DeviceBuffer d_payload(good.size()), d_out(count * 4);
    const int trials = config.id() == CodecId::kZfp ? 60 : 200;
    for (int trial = 0; trial < trials; ++trial) {
      std::vector<std::byte> bad = good;
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const size_t at = 16 + (state >> 33) % (bad.size() - 16);
      bad[at] ^= static_cast<std::byte>(1u << ((state >> 20) % 8));
      test::Buffer cpu_out(DType::kF32, count), dev_out(DType::kF32, count);
      bool cpu_ok = true, dev_ok = true;
      try {
        config.codec().decode(bad, cpu_out.view());
      } catch (const CorruptStream&) {
        cpu_ok = false;
      }
      copy_to_device(d_payload.data(), bad.data(), bad.size());
      try {
        decode_device(config, d_payload.data(), bad.size(), {DType::kF32, count, d_out.data()});
      } catch (const CorruptStream&) {
        dev_ok = false;
      }
      ASSERT_EQ(cpu_ok, dev_ok) << spec << " byte " << at;
      if (!cpu_ok) continue;
      copy_to_host(dev_out.data(), d_out.data(), count * 4);
      EXPECT_TRUE(dev_out.bits_equal(cpu_out)) << spec << " byte " << at;
    }
  }
}

TEST(DeviceCodecErrors, RejectsMalformedPayloads) {
  const size_t count = 1000;
  DeviceBuffer d_payload(1 << 16), d_out(count * 4);
  fill_device(d_payload.data(), 0xff, 1 << 16);
  const TensorView out{DType::kF32, count, d_out.data()};
  const CodecConfig quant = CodecConfig::parse("quant:bits=4");
  EXPECT_THROW(decode_device(quant, d_payload.data(), 10, out), CorruptStream);
  // The right size, headers of 0xff bytes (the raw marker of older payloads), and one byte more.
  const size_t fixed = quant.codec().max_payload_bytes(DType::kF32, count);
  EXPECT_THROW(decode_device(quant, d_payload.data(), fixed, out), CorruptStream);
  EXPECT_THROW(decode_device(quant, d_payload.data(), fixed + 1, out), CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("bf16"), d_payload.data(), 7, out), CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("zstd"), d_payload.data(), 7, out), CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("zfp:accuracy=1e-3"), d_payload.data(), 7, out),
               CorruptStream);
  // eb: a preamble of 0xff bytes (NaN bound), then a short payload; mpc: bitmaps announcing more
  // words than there are, then a length that is not a whole number of words.
  EXPECT_THROW(decode_device(CodecConfig::parse("eb:abs=1e-3"), d_payload.data(), 100, out),
               CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("eb:abs=1e-3"), d_payload.data(), 10, out),
               CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("mpc"), d_payload.data(), 100, out), CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("mpc"), d_payload.data(), 7, out), CorruptStream);
  // exphuff: a directory of 0xff entries; a payload shorter than its directory and rest area.
  EXPECT_THROW(decode_device(CodecConfig::parse("exphuff"), d_payload.data(), 5000, out),
               CorruptStream);
  EXPECT_THROW(decode_device(CodecConfig::parse("exphuff"), d_payload.data(), 7, out),
               CorruptStream);
  EXPECT_THROW(encode_device(CodecConfig::parse("zfp:rate=8"), out, d_payload.data(), 10),
               InvalidArgument);
}

}  // namespace
}  // namespace hycc
