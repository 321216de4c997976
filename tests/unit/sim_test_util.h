// A small configuration whose volumes and times are easy to compute by hand (sim_*_test.cc).
#pragma once

#include <string>

#include "config.h"
#include "hycc/error.h"

namespace hycc::sim::testing {

// 4 layers, h 8, 2 heads, s 4, V 16, f 32, tied embeddings, two forward allreduces per layer.
inline ModelConfig small_model() {
  ModelConfig m;
  m.name = "small";
  m.layers = 4;
  m.hidden = 8;
  m.heads = 2;
  m.sequence = 4;
  m.vocabulary = 16;
  m.ffn_hidden = 32;
  m.tied_embeddings = true;
  m.parallel_residual = false;
  return m;
}

// 2 nodes x 4 GPUs; 41472 flop/s makes one micro-batch of small_model() take 1 s at tp 2 x pp 2.
// Intra-node 256 B/s per GPU, inter-node 1024 B/s per node, no latency.
inline ClusterConfig small_cluster() {
  ClusterConfig c;
  c.name = "small";
  c.nodes = 2;
  c.gpus_per_node = 4;
  c.gpu_flops = 41472;
  c.intra_node = {256, 0};
  c.inter_node = {1024, 0};
  return c;
}

// tp 2 x pp 2 x dp 2, micro-batch 2 x 3 micro-batches, f32, no ZeRO, no recompute.
inline LayoutConfig small_layout() {
  LayoutConfig l;
  l.name = "small";
  l.tp = 2;
  l.pp = 2;
  l.dp = 2;
  l.micro_batch = 2;
  l.micro_batches = 3;
  l.dtype = DType::kF32;
  return l;
}

// The message of the InvalidArgument that `f` throws ("" if none).
template <typename F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace hycc::sim::testing
