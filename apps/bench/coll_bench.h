// hycc-bench coll: compressed collectives against the native MPI call on the same data, one row
// per message size, in the conventions of nccl-tests (flags -b -e -f -n -w -c -d -o, columns size
// count type redop time algbw busbw #wrong, correctness checked after the timed loop, a footer that
// says OK or FAILED). Run it under mpirun; only rank 0 prints.
#pragma once

#include <cstddef>
#include <string>

namespace hycc::bench {

struct CollBenchOptions {
  std::string op = "allreduce";   // allreduce|reduce_scatter|allgather|broadcast|alltoall|sendrecv
  std::string min_bytes = "32M";  // BYTES with an optional K, M or G suffix (powers of 1024)
  std::string max_bytes = "32M";
  size_t factor = 2;                // size multiplier between rows
  int iters = 20;                   // timed calls per size
  int warmup = 5;                   // untimed calls before them
  int rounds = 1;                   // timing rounds per size (median), see --rounds
  int check = 1;                    // 1: check the results after the timed loop
  std::string dtype = "float";      // float|bf16|fp16 (f32, f16, half accepted)
  std::string redop = "sum";        // sum|avg
  int root = 0;                     // broadcast root
  std::string codec = "none";       // codec spec
  std::string algo = "auto";        // auto|ring|rd|compress_once|native
  std::string threshold;            // BYTES; empty: the library default
  std::string segment;              // BYTES; empty: the library default
  std::string check_args = "auto";  // auto|always|never: the cross-rank argument agreement
  std::string json;                 // path of the JSON output, empty for none
};

// Initializes MPI if needed, runs the sweep, prints the table on rank 0; returns the process exit
// code (0 OK, 1 out-of-bounds values, 2 invalid arguments). Failures in the middle of the sweep
// abort the MPI job, since the other ranks would otherwise wait forever.
int run_coll_bench(const CollBenchOptions& options);

}  // namespace hycc::bench
