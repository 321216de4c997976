// hycc-bench codec --device cuda: compress and decompress GB/s of the device codecs on device
// buffers (256 MiB by default), with device-to-device cudaMemcpy bandwidth measured in the same
// run as the yardstick (same convention for both: uncompressed bytes / time). Every timed call
// ends with a synchronization of the stream (the codecs whose size depends on the data make it
// themselves). On float32 data, then the ring's middle hop per codec, fused and as separate steps,
// and the one-GPU chain of a hop's work on three streams (device_chain_bench.cc).
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "codec/float_io.h"
#include "codec_bench.h"
#include "device/device_ops.h"
#include "device_chain_bench.h"
#include "hycc/codec.h"
#include "hycc/codec_device.h"
#include "hycc/device.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

const std::vector<std::string> kDeviceCodecs = {
    "none",
    "bf16",
    "fp16",
    "quant:bits=8",
    "quant:bits=4",
    "quant:bits=2",
    "quant:bits=4,round=stochastic",
    "zfp:rate=8",
    "zfp:rate=16",
    "zfp:accuracy=1e-3",
    "eb:abs=1e-3",
    "eb:rel=1e-4",
    "mpc",
};

std::vector<std::byte> device_bytes(const void* device, size_t bytes) {
  std::vector<std::byte> v(bytes);
  copy_to_host(v.data(), device, bytes);
  return v;
}

// The ring's middle hop on float32 partial sums: decode a payload, add this rank's values,
// encode the sum. Fused (DeviceOps::hop: one kernel, the casts) and as separate steps
// (decode_accumulate, then encode), both against memcpy; the two results must be the same bits.
// Returns false if they are not.
bool print_hop_rows(const std::vector<CodecConfig>& configs, const DeviceBuffer& d_in, size_t n,
                    double memcpy_gbps, double min_seconds) {
  const auto ops = device::make_cuda_ops(nullptr);
  const ConstTensorView own{DType::kF32, n, d_in.data()};
  DeviceBuffer partial(n * sizeof(float));
  const Table table({{"hop codec", 36},
                     {"fused GB/s", 11},
                     {"x memcpy", 9},
                     {"steps GB/s", 11},
                     {"x memcpy", 9},
                     {"same bits", 10}});
  std::printf(
      "\n# ring hop on float32 partial sums (decode + add + encode), GB/s of float32 "
      "values; fused: one kernel (DeviceOps::hop), steps: decode_accumulate + encode\n");
  std::printf("%s\n", table.header().c_str());
  bool same_everywhere = true;
  for (const CodecConfig& config : configs) {
    if (!device_supports(config) || config.id() == CodecId::kNone) continue;
    const size_t bound = config.codec().max_payload_bytes(DType::kF32, n);
    DeviceBuffer in(bound), fused_out(bound), steps_out(bound);
    const size_t in_bytes = ops->encode(config, own, in.data(), bound, 1);
    size_t fused_bytes = 0, steps_bytes = 0;
    const bool has_fused = ops->hop(config, in.data(), in_bytes, DType::kF32, own, fused_out.data(),
                                    bound, 2, &fused_bytes);
    const auto steps = [&] {
      ops->decode_accumulate(config, in.data(), in_bytes, DType::kF32, own,
                             static_cast<float*>(partial.data()));
      steps_bytes =
          ops->encode(config, {DType::kF32, n, partial.data()}, steps_out.data(), bound, 2);
      ops->synchronize();
    };
    steps();
    const double steps_gbps = gbps(double(n) * 4, best_time(steps, 5, min_seconds));
    std::string fused = "-", fused_x = "-", same = "-";
    if (has_fused) {
      const double s = best_time(
          [&] {
            ops->hop(config, in.data(), in_bytes, DType::kF32, own, fused_out.data(), bound, 2,
                     &fused_bytes);
            ops->synchronize();
          },
          5, min_seconds);
      fused = format("%.1f", gbps(double(n) * 4, s));
      fused_x = format("%.3f", gbps(double(n) * 4, s) / memcpy_gbps);
      const bool equal =
          fused_bytes == steps_bytes && device_bytes(fused_out.data(), fused_bytes) ==
                                            device_bytes(steps_out.data(), steps_bytes);
      same = equal ? "yes" : "NO";
      same_everywhere = same_everywhere && equal;
    }
    std::printf("%s\n", table
                            .row({config.spec(), fused, fused_x, format("%.1f", steps_gbps),
                                  format("%.3f", steps_gbps / memcpy_gbps), same})
                            .c_str());
    std::fflush(stdout);
  }
  return same_everywhere;
}

}  // namespace

int run_codec_bench_device(const CodecBenchOptions& o) {
  if (!device_codecs_built()) {
    throw Unavailable(tagged("bench", "--device cuda: this hycc-bench was built without CUDA"));
  }
  if (device_count() == 0) {
    throw Unavailable(tagged("bench", "--device cuda: ", device_unavailable_reason()));
  }
  const DType dtype = parse_dtype(o.dtype);
  const std::vector<std::string>& specs = o.codecs.empty() ? kDeviceCodecs : o.codecs;
  std::vector<CodecConfig> configs;
  std::string host_path;  // codecs without kernels: measured through the host path
  for (const auto& s : specs) {
    configs.push_back(CodecConfig::parse(s));
    if (!device_supports(configs.back())) host_path += " " + configs.back().spec();
  }

  const size_t count = o.count != 0 ? o.count : (size_t{256} << 20) / dtype_size(dtype);
  const std::vector<float> values = load_bench_data(o, count);
  const size_t n = values.size();
  std::vector<uint64_t> host_input((n * dtype_size(dtype) + 7) / 8);
  const TensorView input{dtype, n, host_input.data()};
  codec::store_from_float(values.data(), n, input, 0);
  std::vector<float> reference(n);
  codec::load_as_float(input, 0, n, reference.data());

  const size_t bytes = input.bytes();
  DeviceBuffer d_in(bytes), d_copy(bytes), d_out(bytes);
  copy_to_device(d_in.data(), input.data, bytes);
  const double memcpy_s = best_time(
      [&] {
        copy_on_device(d_copy.data(), d_in.data(), bytes);
        synchronize_device();
      },
      5, o.min_seconds);
  const double memcpy_gbps = gbps(double(bytes), memcpy_s);

  std::printf("# hycc-bench codec --device cuda: %s\n", device_description().c_str());
  std::printf("# data %s, %zu %s values (%.1f MiB) in device memory\n", o.data.c_str(), n,
              std::string(dtype_name(dtype)).c_str(), double(bytes) / 1048576.0);
  std::printf("# bandwidth = uncompressed bytes / time (GB/s = 1e9 B/s); best of repeated runs\n");
  std::printf("# device-to-device memcpy: %.2f GB/s\n", memcpy_gbps);
  if (!host_path.empty()) {
    std::printf("# no kernels, host path (copies + CPU codec):%s\n", host_path.c_str());
  }
  const Table table({{"codec", 36},
                     {"bits/val", 9},
                     {"ratio", 8},
                     {"comp GB/s", 10},
                     {"x memcpy", 9},
                     {"decomp GB/s", 12},
                     {"x memcpy", 9},
                     {"max_abs_err", 12},
                     {"rel_l2", 10}});
  std::printf("%s\n", table.header().c_str());

  nlohmann::json rows = nlohmann::json::array();
  std::vector<uint64_t> host_decoded((bytes + 7) / 8);
  std::vector<float> decoded_floats(n);
  for (const CodecConfig& config : configs) {
    const size_t max_bytes = config.codec().max_payload_bytes(dtype, n);
    DeviceBuffer d_payload(max_bytes);
    const ConstTensorView d_input{dtype, n, d_in.data()};
    const TensorView d_output{dtype, n, d_out.data()};
    size_t payload_bytes = 0;
    // The casts return once their kernel is queued: each timed call ends at the stream.
    const auto encode = [&] {
      payload_bytes = encode_device(config, d_input, d_payload.data(), max_bytes, {o.seed});
      synchronize_stream(nullptr);
    };
    const auto decode = [&] {
      decode_device(config, d_payload.data(), payload_bytes, d_output);
      synchronize_stream(nullptr);
    };
    encode();  // warm-up (first launches, scratch allocation)
    decode();
    const double comp_s = best_time(encode, 5, o.min_seconds);
    const double decomp_s = best_time(decode, 5, o.min_seconds);
    copy_to_host(host_decoded.data(), d_out.data(), bytes);
    codec::load_as_float({dtype, n, host_decoded.data()}, 0, n, decoded_floats.data());
    const ErrorStats err = measure_error(reference, decoded_floats);

    const double bits_per_value = double(payload_bytes) * 8.0 / double(n);
    const double ratio = double(bytes) / double(payload_bytes);
    const double comp_gbps = gbps(double(bytes), comp_s);
    const double decomp_gbps = gbps(double(bytes), decomp_s);
    std::printf("%s\n",
                table
                    .row({config.spec(), format("%.3f", bits_per_value), format("%.3f", ratio),
                          format("%.1f", comp_gbps), format("%.3f", comp_gbps / memcpy_gbps),
                          format("%.1f", decomp_gbps), format("%.3f", decomp_gbps / memcpy_gbps),
                          format("%.3e", err.max_abs), format("%.3e", err.rel_l2)})
                    .c_str());
    std::fflush(stdout);
    rows.push_back({{"codec", config.spec()},
                    {"device", "cuda"},
                    {"kernels", device_supports(config)},
                    {"dtype", std::string(dtype_name(dtype))},
                    {"data", o.data},
                    {"count", n},
                    {"bits_per_value", bits_per_value},
                    {"ratio", ratio},
                    {"compress_gbps", comp_gbps},
                    {"decompress_gbps", decomp_gbps},
                    {"max_abs_err", err.max_abs},
                    {"rel_l2", err.rel_l2},
                    {"memcpy_gbps", memcpy_gbps}});
  }
  if (!o.json.empty()) {
    write_json(o.json, rows);
    std::printf("# wrote %s\n", o.json.c_str());
  }
  if (dtype == DType::kF32 && !print_hop_rows(configs, d_in, n, memcpy_gbps, o.min_seconds)) {
    std::fprintf(stderr, "hycc-bench: the fused ring hop differs from its separate steps\n");
    return 1;
  }
  if (dtype == DType::kF32 && !print_chain_rows(configs, d_in, n, o.min_seconds)) {
    std::fprintf(stderr, "hycc-bench: the pipelined chain differs from its stages in order\n");
    return 1;
  }
  return 0;
}

}  // namespace hycc::bench
