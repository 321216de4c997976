// The C API's codecs (include/hycc/hycc.h) against the C++ API: the same streams bit for bit,
// the same decoded tensors, and every failure as a status with the C++ exception's message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "hycc/codec_device.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/device.h"
#include "hycc/hycc.h"
#include "test_util.h"

namespace hycc::test {
namespace {

const char* const kSpecs[] = {"none",
                              "bf16",
                              "fp16",
                              "quant:bits=4",
                              "quant:bits=8,round=stochastic",
                              "eb:abs=1e-3",
                              "eb:rel=1e-2",
                              "zfp:rate=8",
                              "zfp:accuracy=1e-3",
                              "mpc",
                              "zstd"};

TEST(CapiCodec, StreamsAndDecodedTensorsEqualTheCppApi) {
  for (const char* spec : kSpecs) {
    for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      const std::string what = std::string(spec) + " " + std::string(dtype_name(dtype));
      const CodecConfig config = CodecConfig::parse(spec);
      const size_t n = 1000;
      const Buffer in = Buffer::from_floats(dtype, data_with_specials(n, 11));
      const std::vector<std::byte> want = compress(config, in.view(), CompressOptions{42});

      CodecHandle h(spec);
      ASSERT_NE(h.codec, nullptr) << what;
      EXPECT_EQ(hycc_codec_spec(h.codec), config.spec()) << what;
      EXPECT_EQ(hycc_codec_lossless(h.codec), config.lossless() ? 1 : 0) << what;
      size_t max_bytes = 0;
      ASSERT_EQ(hycc_max_compressed_bytes(h.codec, static_cast<int>(dtype), n, &max_bytes), HYCC_OK)
          << hycc_last_error();
      EXPECT_EQ(max_bytes, max_compressed_bytes(config, dtype, n)) << what;
      std::vector<std::byte> got(max_bytes);
      size_t bytes = 0;
      ASSERT_EQ(hycc_compress(h.codec, static_cast<int>(dtype), n, in.view().data, got.data(),
                              got.size(), 42, &bytes),
                HYCC_OK)
          << what << ": " << hycc_last_error();
      EXPECT_STREQ(hycc_last_error(), "");
      got.resize(bytes);
      EXPECT_EQ(got, want) << what << ": the C API's stream differs from compress()";

      hycc_stream_info info;
      ASSERT_EQ(hycc_stream_inspect(got.data(), got.size(), &info), HYCC_OK) << hycc_last_error();
      const StreamInfo cpp = inspect(want);
      EXPECT_EQ(info.dtype, static_cast<int>(cpp.dtype)) << what;
      EXPECT_EQ(info.count, cpp.count) << what;
      EXPECT_EQ(info.payload_bytes, cpp.payload_bytes) << what;
      EXPECT_EQ(info.stream_bytes, got.size()) << what;
      EXPECT_EQ(std::string(info.spec), cpp.spec) << what;

      Buffer out_c(dtype, n), out_cpp(dtype, n);
      ASSERT_EQ(
          hycc_decompress(got.data(), got.size(), static_cast<int>(dtype), n, out_c.view().data),
          HYCC_OK)
          << what << ": " << hycc_last_error();
      decompress(want, out_cpp.view());
      EXPECT_TRUE(out_c.bits_equal(out_cpp)) << what;
      if (config.lossless()) {
        EXPECT_TRUE(out_c.bits_equal(in)) << what;
      }
    }
  }
}

// Runs `call`, expects `status` and a last error containing `message_part`.
template <typename F>
void expect_failure(hycc_status status, const std::string& message_part, F&& call) {
  EXPECT_EQ(call(), status) << "message: " << hycc_last_error();
  EXPECT_NE(std::string(hycc_last_error()).find(message_part), std::string::npos)
      << "message '" << hycc_last_error() << "' lacks '" << message_part << "'";
}

TEST(CapiCodec, BadSpecsAreInvalidArgumentsWithTheParsersMessage) {
  hycc_codec* codec = reinterpret_cast<hycc_codec*>(uintptr_t{1});
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, spec_error("quant:bits=9"),
                 [&] { return hycc_codec_create("quant:bits=9", &codec); });
  EXPECT_EQ(codec, nullptr) << "a failed create leaves no handle";
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "spec is NULL",
                 [&] { return hycc_codec_create(nullptr, &codec); });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "codec (the result) is NULL",
                 [&] { return hycc_codec_create("mpc", nullptr); });
  EXPECT_EQ(hycc_codec_spec(nullptr), std::string());
  EXPECT_EQ(hycc_codec_lossless(nullptr), 0);
  hycc_codec_destroy(nullptr);
  EXPECT_NE(std::string(hycc_codec_help()).find("quant"), std::string::npos);
}

TEST(CapiCodec, BadCallsAreInvalidArguments) {
  CodecHandle h("quant:bits=4");
  std::vector<float> values(64, 1.5f);
  std::vector<std::byte> stream(4096);
  size_t bytes = 0;
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "codec is NULL", [&] {
    return hycc_compress(nullptr, HYCC_F32, 64, values.data(), stream.data(), stream.size(), 0,
                         &bytes);
  });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "dtype 7 is not", [&] {
    return hycc_compress(h.codec, 7, 64, values.data(), stream.data(), stream.size(), 0, &bytes);
  });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "dtype -1 is not",
                 [&] { return hycc_max_compressed_bytes(h.codec, -1, 64, &bytes); });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "in is NULL with 64 elements", [&] {
    return hycc_compress(h.codec, HYCC_F32, 64, nullptr, stream.data(), stream.size(), 0, &bytes);
  });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "not aligned", [&] {
    const auto* odd = reinterpret_cast<const std::byte*>(values.data()) + 1;
    return hycc_compress(h.codec, HYCC_F32, 8, odd, stream.data(), stream.size(), 0, &bytes);
  });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "exceeds the address space", [&] {
    return hycc_max_compressed_bytes(h.codec, HYCC_F32, SIZE_MAX / 2, &bytes);
  });
  // Too small an output buffer: the C++ API's InvalidArgument.
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "", [&] {
    return hycc_compress(h.codec, HYCC_F32, 64, values.data(), stream.data(), 16, 0, &bytes);
  });
  EXPECT_EQ(bytes, 0u) << "a failed compress reports no stream";
}

TEST(CapiCodec, MalformedStreamsAreCorruptStreams) {
  CodecHandle h("mpc");
  std::vector<float> values(256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  std::vector<std::byte> stream(8192);
  size_t bytes = 0;
  ASSERT_EQ(hycc_compress(h.codec, HYCC_F32, values.size(), values.data(), stream.data(),
                          stream.size(), 0, &bytes),
            HYCC_OK);
  stream.resize(bytes);
  std::vector<float> out(values.size());
  hycc_stream_info info;

  // Every truncation, and a flipped bit anywhere, is rejected with the validator's message.
  for (size_t cut = 0; cut < bytes; cut += 7) {
    const hycc_status s = hycc_decompress(stream.data(), cut, HYCC_F32, out.size(), out.data());
    EXPECT_EQ(s, HYCC_ERR_CORRUPT_STREAM) << "truncated to " << cut << ": " << hycc_last_error();
    EXPECT_EQ(hycc_stream_inspect(stream.data(), cut, &info), HYCC_ERR_CORRUPT_STREAM);
  }
  for (size_t byte = 0; byte < bytes; byte += 5) {
    std::vector<std::byte> bad = stream;
    bad[byte] ^= std::byte{0x10};
    std::string cpp_message;
    try {
      decompress(bad, TensorView{DType::kF32, out.size(), out.data()});
    } catch (const Error& e) {
      cpp_message = e.what();
    }
    const hycc_status s = hycc_decompress(bad.data(), bad.size(), HYCC_F32, out.size(), out.data());
    EXPECT_NE(s, HYCC_OK) << "flipped byte " << byte;
    EXPECT_EQ(hycc_last_error(), cpp_message) << "flipped byte " << byte;
  }
  // A stream of the wrong size for the output: the caller's mistake.
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "", [&] {
    return hycc_decompress(stream.data(), stream.size(), HYCC_F32, out.size() - 1, out.data());
  });
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "stream is NULL",
                 [&] { return hycc_decompress(nullptr, 48, HYCC_F32, out.size(), out.data()); });
  // And a good call afterwards clears the last error.
  ASSERT_EQ(hycc_decompress(stream.data(), stream.size(), HYCC_F32, out.size(), out.data()),
            HYCC_OK);
  EXPECT_STREQ(hycc_last_error(), "");
  EXPECT_EQ(out, values);
}

TEST(CapiCodec, StatusNamesAndVersion) {
  EXPECT_STREQ(hycc_status_name(HYCC_OK), "HYCC_OK");
  EXPECT_STREQ(hycc_status_name(HYCC_ERR_CORRUPT_STREAM), "HYCC_ERR_CORRUPT_STREAM");
  EXPECT_STREQ(hycc_status_name(HYCC_ERR_INTERNAL), "HYCC_ERR_INTERNAL");
  EXPECT_STREQ(hycc_status_name(99), "unknown status");
  EXPECT_STRNE(hycc_version(), "");
}

TEST(CapiCodec, ChunkRangeEqualsTheCppApi) {
  for (const size_t total : {0, 1, 7, 1000}) {
    for (int size = 1; size <= 5; ++size) {
      for (int rank = 0; rank < size; ++rank) {
        size_t offset = 99, count = 99;
        ASSERT_EQ(hycc_chunk_range(total, size, rank, &offset, &count), HYCC_OK);
        const ChunkRange want = chunk_range(total, size, rank);
        EXPECT_EQ(offset, want.offset);
        EXPECT_EQ(count, want.count);
      }
    }
  }
  size_t offset = 0, count = 0;
  expect_failure(HYCC_ERR_INVALID_ARGUMENT, "0 <= rank < size",
                 [&] { return hycc_chunk_range(10, 3, 3, &offset, &count); });
}

}  // namespace
}  // namespace hycc::test

namespace hycc::test {
namespace {

// Device codecs: where a device exists (a GPU, or the CUDA emulator of the sanitizer build), the
// C API's payload is the C++ API's and the host stream's payload, and decodes to the host's
// result; without one, a status that says why.
TEST(CapiDevice, PayloadsEqualTheCppApiOrUnavailable) {
  const size_t n = 5000;
  const Buffer in = Buffer::from_floats(DType::kF32, data_with_specials(n, 3));
  for (const char* spec : {"bf16", "quant:bits=4", "quant:bits=8,round=stochastic", "mpc",
                           "zfp:rate=8", "eb:abs=1e-2", "zstd"}) {
    const CodecConfig config = CodecConfig::parse(spec);
    CodecHandle h(spec);
    size_t capacity = 0;
    ASSERT_EQ(hycc_max_payload_bytes(h.codec, HYCC_F32, n, &capacity), HYCC_OK);
    EXPECT_EQ(capacity, config.codec().max_payload_bytes(DType::kF32, n)) << spec;
    EXPECT_EQ(hycc_codec_device_kernels(h.codec), device_supports(config) ? 1 : 0) << spec;
    if (hycc_device_count() == 0) {
      std::vector<std::byte> payload(capacity);
      size_t bytes = 0;
      EXPECT_EQ(hycc_encode_device(h.codec, HYCC_F32, n, in.view().data, payload.data(),
                                   payload.size(), 0, nullptr, &bytes),
                HYCC_ERR_UNAVAILABLE)
          << spec;
      EXPECT_NE(std::string(hycc_last_error()), "") << "the reason";
      continue;
    }
    DeviceBuffer d_in(in.count() * 4), d_payload(capacity), d_out(in.count() * 4);
    copy_to_device(d_in.data(), in.view().data, in.count() * 4);
    size_t bytes = 0;
    ASSERT_EQ(hycc_encode_device(h.codec, HYCC_F32, n, d_in.data(), d_payload.data(), capacity, 9,
                                 nullptr, &bytes),
              HYCC_OK)
        << spec << ": " << hycc_last_error();
    std::vector<std::byte> got(bytes);
    copy_to_host(got.data(), d_payload.data(), bytes);
    const std::vector<std::byte> stream = compress(config, in.view(), CompressOptions{9});
    const std::span<const std::byte> want = stream_payload(stream);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
        << spec << ": the device payload differs from the host stream's";
    ASSERT_EQ(
        hycc_decode_device(h.codec, d_payload.data(), bytes, HYCC_F32, n, d_out.data(), nullptr),
        HYCC_OK)
        << spec << ": " << hycc_last_error();
    Buffer out(DType::kF32, n), host(DType::kF32, n);
    copy_to_host(out.data(), d_out.data(), n * 4);
    decompress(stream, host.view());
    EXPECT_TRUE(out.bits_equal(host)) << spec;
  }
}

TEST(CapiDevice, OptionsDefaultsAreTheCppOnes) {
  hycc_device_options o;
  hycc_device_options_init(&o);
  const DeviceCollectiveOptions want;
  EXPECT_EQ(o.codec, nullptr);
  EXPECT_EQ(o.segment_bytes, want.segment_bytes);
  EXPECT_EQ(o.threshold_bytes, want.threshold_bytes);
  EXPECT_EQ(o.backend, static_cast<int>(want.backend));
  EXPECT_EQ(o.transport, static_cast<int>(want.transport));
  EXPECT_EQ(o.checksum, 1);
  hycc_options h;
  hycc_options_init(&h);
  const CollectiveOptions host;
  EXPECT_EQ(h.threshold_bytes, host.threshold_bytes);
  EXPECT_EQ(h.segment_bytes, host.segment_bytes);
  EXPECT_EQ(h.algorithm, static_cast<int>(host.algorithm));
}

}  // namespace
}  // namespace hycc::test
