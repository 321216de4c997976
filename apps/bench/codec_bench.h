// hycc-bench codec: ratio, speed and error of each codec on one data set, with memcpy measured in
// the same run as the yardstick.
#pragma once

#include <string>
#include <vector>

namespace hycc::bench {

struct CodecBenchOptions {
  std::string data = "gaussian";  // gaussian|laplace|smooth or a file of raw little-endian float32
  size_t count = 0;  // values; 0: 2^24 on the CPU (64 MiB of float32), 256 MiB on a device
  std::string device = "cpu";  // cpu | cuda
  std::string dtype = "f32";
  std::vector<std::string> codecs;  // empty: a representative set
  std::string json;                 // path of the JSON output, empty for none
  double min_seconds = 0.3;         // minimum timed time per measurement
  uint64_t seed = 1;
};

// Shared by the CPU and device runs: the input values and the error measures.
std::vector<float> load_bench_data(const CodecBenchOptions& options, size_t count);
struct ErrorStats {
  double max_abs = 0, rmse = 0, rel_l2 = 0;
};
// Errors of `decoded` against `reference` over the finite reference values.
ErrorStats measure_error(const std::vector<float>& reference, const std::vector<float>& decoded);

// Runs the benchmark and prints the table; returns the process exit code.
int run_codec_bench(const CodecBenchOptions& options);

// The same on a CUDA device (codec_bench_device.cc): device buffers, device-to-device memcpy as
// the yardstick. Throws Unavailable without CUDA or device.
int run_codec_bench_device(const CodecBenchOptions& options);

}  // namespace hycc::bench
