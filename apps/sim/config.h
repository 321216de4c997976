// The three inputs of the performance model: the model, the cluster and the parallel layout.
// Each is read from a TOML file (configs/models, configs/clusters, configs/layouts; docs/sim.md
// lists every key with its unit) and can be overridden field by field from the command line.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "hycc/dtype.h"

namespace hycc::sim {

// A GPT-style decoder-only transformer.
struct ModelConfig {
  std::string name;
  long layers = 0;
  long hidden = 0;      // model width h
  long heads = 0;       // attention heads (h must be a multiple)
  long sequence = 0;    // tokens per sample s
  long vocabulary = 0;  // V
  long ffn_hidden = 0;  // MLP width; 4 h when 0 in the file
  // Input and output embeddings share one matrix (its gradient is allreduced between the first
  // and the last pipeline stage).
  bool tied_embeddings = true;
  // Attention and MLP read the same input and add their outputs before one reduction (GPT-J,
  // GPT-NeoX): one tensor-parallel allreduce per layer in the forward pass instead of two.
  bool parallel_residual = false;
  // A learned position embedding (s x h, on the first stage, not split by tensor parallelism),
  // as GPT-2; false: rotary or none, no parameters.
  bool learned_positions = false;
  // Tensor parallelism splits the token embedding by vocabulary rows (Megatron-LM); false: every
  // tp rank holds it whole (hycc-train), so its gradient travels whole.
  bool vocab_parallel_embedding = true;
};

// A link class: the links between GPUs of one node, or the network between nodes.
struct LinkClass {
  double bandwidth = 0;  // bytes/s per direction: per GPU within a node, per node between nodes
  double latency = 0;    // seconds per message (alpha)
  // Share of `bandwidth` that carries the messages' bytes (the rest: protocol headers, e.g. TCP/IP
  // in Ethernet frames on a link shaped by its frame rate); 1 when the bandwidth is a goodput.
  double efficiency = 1;
  double goodput() const { return bandwidth * efficiency; }  // message bytes/s
};

struct ClusterConfig {
  std::string name;
  long nodes = 0;
  long gpus_per_node = 0;
  // Achieved (not peak) dense matrix throughput of one GPU on this model's kernels, flop/s.
  double gpu_flops = 0;
  LinkClass intra_node;
  LinkClass inter_node;  // the node's injection bandwidth, shared by the flows that leave it

  long gpus() const { return nodes * gpus_per_node; }
};

// The parallel dimensions in the order ranks are numbered, fastest-varying first.
enum class Axis { kTp = 0, kDp = 1, kPp = 2 };
const char* axis_name(Axis a);

struct LayoutConfig {
  std::string name;
  long tp = 1, pp = 1;
  long dp = 0;             // 0: every GPU of the cluster (nodes * gpus_per_node / (tp * pp))
  int zero_stage = 0;      // 0 (plain allreduce), 1 or 2
  long micro_batch = 1;    // samples per micro-batch
  long micro_batches = 1;  // micro-batches per iteration (gradient accumulation steps) m
  bool activation_recompute = false;  // the forward pass runs again during the backward pass
  // The gradient reduction (allreduce or ZeRO reduce-scatter) overlaps the backward pass of the
  // last micro-batch.
  bool overlap_dp = false;
  DType dtype = DType::kF16;  // element type of activations, gradients and parameters sent
  // Rank order, fastest first: Megatron-LM numbers tp, then dp, then pp.
  std::array<Axis, 3> order = {Axis::kTp, Axis::kDp, Axis::kPp};
};

// Readers; `source` names the text in errors. Throw InvalidArgument "[sim] source:line: ...".
ModelConfig parse_model(std::string_view toml, std::string source);
ClusterConfig parse_cluster(std::string_view toml, std::string source);
LayoutConfig parse_layout(std::string_view toml, std::string source);

// Fills layout.dp from the cluster when 0 and checks that tp * pp * dp GPUs are what the cluster
// has, that tp divides the heads and pp the layers; throws InvalidArgument otherwise.
void check_fit(const ModelConfig& model, const ClusterConfig& cluster, LayoutConfig& layout);

}  // namespace hycc::sim
