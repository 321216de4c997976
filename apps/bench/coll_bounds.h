// Error bounds that hycc-bench coll checks results against: what one compression of a codec may
// change, and how the collective algorithms accumulate it (docs/algorithms.md).
#pragma once

#include <functional>
#include <string>

#include "hycc/codec.h"
#include "hycc/collectives.h"

namespace hycc::bench {

enum class CollOp { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall, kSendrecv };

// What one compression may change, as a function of M = max |value| of the compressed tensor.
struct ErrorModel {
  bool lossy = false;
  bool guaranteed = true;  // false: an empirical figure, not a documented guarantee
  std::string text;        // the formula, for the header
  std::string why;         // where it comes from
  std::function<double(double)> per_compression;
};

// Bound on |hycc - exact| when hycc compresses, from the error growth of each algorithm
// (src/coll/*.cc, docs/algorithms.md), for p ranks and inputs within [-a, a]; e(M) is one
// compression of values within M, and each term carries the error accumulated before it.
struct Bound {
  double value = 0;
  std::string formula;
};

// Unit roundoff of the dtype (half an ulp, relative).
double unit_roundoff(DType dtype);

ErrorModel error_model(const CodecConfig& codec, DType dtype);

// Bound on |hycc - exact| of `op` with `algo` over p ranks for inputs within [-a, a];
// per_node: the ranks of each node where the two-level algorithms run (1: they fall back).
Bound error_bound(CollOp op, Algorithm algo, const ErrorModel& m, ReduceOp redop, int p,
                  int per_node, double a);

}  // namespace hycc::bench
