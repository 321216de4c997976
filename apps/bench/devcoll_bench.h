// hycc-bench devcoll: the collectives on device buffers (hycc/collectives_device.h), one row per
// message size: the call with the codec against the same device algorithm with codec "none" and
// against the native path (the MPI call on staged host copies) in the same run (rounds of the
// three, median per side), and a check that the result equals the host
// collective's bits (kRing / kChain / kPairwise, threshold 0, same codec, segments and seed).
// --device cuda needs a GPU; --device emulation runs the same algorithm on host memory with the
// CPU codecs (what the device path adds to the host collectives). Run it under mpirun; rank 0
// prints.
#pragma once

#include <cstddef>
#include <string>

namespace hycc::bench {

struct DevCollBenchOptions {
  std::string op = "allreduce";  // allreduce|reduce_scatter|allgather|broadcast|alltoall
  std::string min_bytes = "1M";  // message bytes (send buffer; allgather: receive buffer)
  std::string max_bytes = "64M";
  size_t factor = 4;
  int iters = 5;   // timed calls per block
  int warmup = 2;  // untimed calls before the first block
  int rounds = 3;  // blocks of each side per size (codec, none, native, native, ...): median
  std::string dtype = "float";
  std::string codec = "quant:bits=4";
  std::string device = "auto";     // auto|cuda|emulation (auto: cuda when a GPU is present)
  std::string transport = "auto";  // auto|staged|nccl
  std::string segment;             // BYTES; empty: the library default
  int checksum = 1;                // payload checksums on (1) or off (0)
  int check = 1;                   // compare with the host collective after the timing
  int stream_ordered = 0;          // 1: NCCL's contract (calls return once queued)
  std::string json;                // one JSON object per row (rank 0)
};

// Exit code: 0 OK, 1 results differing from the host collective, 2 bad arguments.
int run_devcoll_bench(const DevCollBenchOptions& options);

}  // namespace hycc::bench
