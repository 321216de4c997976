// hycc-bench walk: the step counts of the parallel walk that finds every block of an "eb" or a
// "zfp:accuracy" payload and every group of an "mpc" payload on the device
// (codec/block/chain_walk.h), run on the CPU over the CPU codec's payload, against the one-thread
// walk: the longest sequential part of each, and the parallel walk's total work. Counts, not times:
// they are the same on every machine.
#pragma once

#include <string>
#include <vector>

namespace hycc::bench {

struct WalkBenchOptions {
  std::vector<std::string> codecs;  // eb, mpc, zfp:accuracy specs; default eb and mpc
  std::string data = "gaussian";    // gaussian | laplace | smooth
  std::string dtype = "f32";
  size_t count = size_t{64} << 20;  // values (256 MiB of float32)
  uint64_t seed = 1;
};

// Prints one row per codec; returns 0, or 1 where the parallel walk differs from the reference.
int run_walk_bench(const WalkBenchOptions& options);

}  // namespace hycc::bench
