// hycc-bench codec --device cuda, on float32 data: the ring's per-hop work without the network,
// on one GPU (device_chain_bench.cc).
#pragma once

#include <cstddef>
#include <vector>

#include "hycc/codec.h"
#include "hycc/device.h"

namespace hycc::bench {

// Prints the chain table for the codecs whose payload size needs no host (none is skipped);
// returns false if a chain's result differs from the same steps run one after the other.
bool print_chain_rows(const std::vector<CodecConfig>& configs, const DeviceBuffer& d_in, size_t n,
                      double min_seconds);

}  // namespace hycc::bench
