// hycc-bench codec: ratio, speed and error of each codec on one data set, with memcpy measured in
// the same run as the yardstick.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace hycc::bench {

struct CodecBenchOptions {
  std::string data = "gaussian";   // gaussian|laplace|smooth or a file of raw little-endian float32
  size_t count = size_t{1} << 24;  // values (64 MiB of float32)
  std::string dtype = "f32";
  std::vector<std::string> codecs;  // empty: a representative set
  std::string json;                 // path of the JSON output, empty for none
  double min_seconds = 0.3;         // minimum timed time per measurement
  uint64_t seed = 1;
};

// Registers the "codec" subcommand and its options.
CLI::App* add_codec_command(CLI::App& app, CodecBenchOptions& options);

// Runs the benchmark and prints the table; returns the process exit code.
int run_codec_bench(const CodecBenchOptions& options);

}  // namespace hycc::bench
