#include "codec_bench.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "bench_util.h"
#include "codec/float_io.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

const std::vector<std::string> kDefaultCodecs = {
    "none",
    "bf16",
    "fp16",
    "quant:bits=8",
    "quant:bits=4",
    "quant:bits=2",
    "eb:abs=1e-3",
    "eb:rel=1e-4",
    "zfp:rate=8",
    "zfp:rate=9",
    "zfp:accuracy=1e-3",
    "mpc",
    "zstd:level=1",
};

// Reads raw little-endian float32 values; at most `max_count` of them.
std::vector<float> read_floats(const std::string& path, size_t max_count) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InvalidArgument(tagged("bench", "cannot open data file '", path, "'"));
  const auto bytes = static_cast<size_t>(in.tellg());
  if (bytes == 0 || bytes % 4 != 0) {
    throw InvalidArgument(tagged("bench", "data file '", path, "' has ", bytes,
                                 " bytes; expected a non-empty multiple of 4 (raw float32)"));
  }
  std::vector<float> v(std::min(bytes / 4, max_count));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  if (!in) throw InvalidArgument(tagged("bench", "cannot read data file '", path, "'"));
  return v;
}

}  // namespace

std::vector<float> load_bench_data(const CodecBenchOptions& o, size_t count) {
  if (o.data == "gaussian" || o.data == "laplace" || o.data == "smooth") {
    return make_data(parse_data_kind(o.data), count, o.seed);
  }
  return read_floats(o.data, count);
}

namespace {

// 8-byte aligned storage for tensors and streams.
struct AlignedBytes {
  explicit AlignedBytes(size_t n) : words((n + 7) / 8 + 1), size(n) {}
  std::byte* data() { return reinterpret_cast<std::byte*>(words.data()); }
  std::vector<uint64_t> words;
  size_t size;
};

}  // namespace

ErrorStats measure_error(const std::vector<float>& reference, const std::vector<float>& decoded) {
  ErrorStats e;
  double sq = 0, ref_sq = 0;
  size_t n = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    if (!std::isfinite(reference[i])) continue;
    const double d = double(decoded[i]) - double(reference[i]);
    e.max_abs = std::max(e.max_abs, std::fabs(d));
    sq += d * d;
    ref_sq += double(reference[i]) * double(reference[i]);
    ++n;
  }
  e.rmse = n ? std::sqrt(sq / double(n)) : 0;
  e.rel_l2 = ref_sq > 0 ? std::sqrt(sq / ref_sq) : std::sqrt(sq);
  return e;
}

int run_codec_bench(const CodecBenchOptions& o) {
  if (o.device == "cuda") return run_codec_bench_device(o);
  const DType dtype = parse_dtype(o.dtype);
  const std::vector<std::string>& specs = o.codecs.empty() ? kDefaultCodecs : o.codecs;
  std::vector<CodecConfig> configs;
  for (const auto& s : specs) configs.push_back(CodecConfig::parse(s));  // fail before timing

  const std::vector<float> values = load_bench_data(o, o.count != 0 ? o.count : size_t{1} << 24);
  const size_t count = values.size();
  AlignedBytes input_storage(count * dtype_size(dtype));
  const TensorView input{dtype, count, input_storage.data()};
  codec::store_from_float(values.data(), count, input, 0);
  std::vector<float> reference(count);  // the input as the codecs see it
  codec::load_as_float(input, 0, count, reference.data());

  AlignedBytes copy(input.bytes());
  const double memcpy_s =
      best_time([&] { std::memcpy(copy.data(), input.data, input.bytes()); }, 5, o.min_seconds);
  const double bytes = double(input.bytes());
  const double memcpy_gbps = gbps(bytes, memcpy_s);

  std::printf("# hycc-bench codec: data %s, %zu %s values (%.1f MiB), single thread\n",
              o.data.c_str(), count, std::string(dtype_name(dtype)).c_str(), bytes / 1048576.0);
  std::printf("# bandwidth = uncompressed bytes / time (GB/s = 1e9 B/s); best of repeated runs\n");
  std::printf("# memcpy: %.2f GB/s\n", memcpy_gbps);
  const Table table({{"codec", 36},
                     {"bits/val", 9},
                     {"ratio", 8},
                     {"comp GB/s", 10},
                     {"x memcpy", 9},
                     {"decomp GB/s", 12},
                     {"x memcpy", 9},
                     {"max_abs_err", 12},
                     {"rmse", 10},
                     {"rel_l2", 10}});
  std::printf("%s\n", table.header().c_str());

  nlohmann::json rows = nlohmann::json::array();
  AlignedBytes decoded_storage(input.bytes());
  const TensorView decoded{dtype, count, decoded_storage.data()};
  std::vector<float> decoded_floats(count);
  for (const CodecConfig& config : configs) {
    AlignedBytes stream(max_compressed_bytes(config, input));
    const std::span<std::byte> out(stream.data(), stream.size);
    size_t stream_bytes = 0;
    const double comp_s =
        best_time([&] { stream_bytes = compress(config, input, out); }, 3, o.min_seconds);
    const std::span<const std::byte> in(stream.data(), stream_bytes);
    const double decomp_s = best_time([&] { decompress(in, decoded); }, 3, o.min_seconds);
    codec::load_as_float(decoded, 0, count, decoded_floats.data());
    const ErrorStats err = measure_error(reference, decoded_floats);

    const double bits_per_value = double(stream_bytes) * 8.0 / double(count);
    const double ratio = bytes / double(stream_bytes);
    const double comp_gbps = gbps(bytes, comp_s), decomp_gbps = gbps(bytes, decomp_s);
    std::printf("%s\n",
                table
                    .row({config.spec(), format("%.3f", bits_per_value), format("%.3f", ratio),
                          format("%.3f", comp_gbps), format("%.3f", comp_gbps / memcpy_gbps),
                          format("%.3f", decomp_gbps), format("%.3f", decomp_gbps / memcpy_gbps),
                          format("%.3e", err.max_abs), format("%.3e", err.rmse),
                          format("%.3e", err.rel_l2)})
                    .c_str());
    std::fflush(stdout);
    rows.push_back({{"codec", config.spec()},
                    {"dtype", std::string(dtype_name(dtype))},
                    {"data", o.data},
                    {"count", count},
                    {"bits_per_value", bits_per_value},
                    {"ratio", ratio},
                    {"compress_gbps", comp_gbps},
                    {"decompress_gbps", decomp_gbps},
                    {"max_abs_err", err.max_abs},
                    {"rmse", err.rmse},
                    {"rel_l2", err.rel_l2},
                    {"memcpy_gbps", memcpy_gbps}});
  }
  if (!o.json.empty()) {
    write_json(o.json, rows);
    std::printf("# wrote %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace hycc::bench
