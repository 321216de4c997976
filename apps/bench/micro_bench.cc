// Micro-benchmarks (Google Benchmark) of the building blocks under the codecs: the checksums,
// the 16-bit float conversions, a codec's encoder alone and whole-stream compression of 1 MiB.
#include <benchmark/benchmark.h>

#include <vector>

#include "codec/f16_array.h"
#include "codec/float_convert.h"
#include "codec/stream.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"

namespace {

constexpr size_t kCount = size_t{1} << 18;  // 1 MiB of float32

// XXH3, the checksum of compressed streams.
void BM_StreamChecksum(benchmark::State& state) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  const std::span<const std::byte> bytes = std::as_bytes(std::span(v));
  for (auto _ : state) benchmark::DoNotOptimize(hycc::codec::payload_checksum(bytes));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
BENCHMARK(BM_StreamChecksum);

void BM_F32ToBF16(benchmark::State& state) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  std::vector<uint16_t> out(kCount);
  for (auto _ : state) {
    for (size_t i = 0; i < kCount; ++i) out[i] = hycc::codec::f32_to_bf16(v[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
BENCHMARK(BM_F32ToBF16);

void BM_F32ToBF16Array(benchmark::State& state) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  std::vector<uint16_t> out(kCount);
  for (auto _ : state) {
    hycc::codec::f32_bits_to_bf16_array(reinterpret_cast<const uint32_t*>(v.data()), out.data(),
                                        kCount);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
BENCHMARK(BM_F32ToBF16Array);

void BM_F32ToF16(benchmark::State& state) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  std::vector<uint16_t> out(kCount);
  for (auto _ : state) {
    for (size_t i = 0; i < kCount; ++i) out[i] = hycc::codec::f32_to_f16(v[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
BENCHMARK(BM_F32ToF16);

void BM_Compress(benchmark::State& state, const char* spec) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  const hycc::CodecConfig config = hycc::CodecConfig::parse(spec);
  const hycc::ConstTensorView in{hycc::DType::kF32, kCount, v.data()};
  std::vector<std::byte> out(hycc::max_compressed_bytes(config, in));
  for (auto _ : state) benchmark::DoNotOptimize(hycc::compress(config, in, out));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
// The codec's encoder alone: compress() without the header and the checksum.
void BM_Encode(benchmark::State& state, const char* spec) {
  const std::vector<float> v = hycc::make_data(hycc::DataKind::kGaussian, kCount);
  const hycc::CodecConfig config = hycc::CodecConfig::parse(spec);
  const hycc::ConstTensorView in{hycc::DType::kF32, kCount, v.data()};
  std::vector<std::byte> out(hycc::max_compressed_bytes(config, in));
  for (auto _ : state) benchmark::DoNotOptimize(config.codec().encode(in, out, {}));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCount * 4));
}
BENCHMARK_CAPTURE(BM_Encode, quant8, "quant:bits=8");
BENCHMARK_CAPTURE(BM_Encode, quant4, "quant:bits=4");

BENCHMARK_CAPTURE(BM_Compress, none, "none");
BENCHMARK_CAPTURE(BM_Compress, bf16, "bf16");
BENCHMARK_CAPTURE(BM_Compress, quant8, "quant:bits=8");
BENCHMARK_CAPTURE(BM_Compress, quant4, "quant:bits=4");
BENCHMARK_CAPTURE(BM_Compress, mpc, "mpc");

}  // namespace

BENCHMARK_MAIN();
