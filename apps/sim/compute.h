// Parameter counts and floating-point work of a GPT-style transformer (docs/sim.md, "Compute").
#pragma once

#include "config.h"

namespace hycc::sim {

// Weights and biases of one transformer layer: QKV and output projections (4 h^2 + 4 h), the
// MLP (2 h f + f + h) and two layer norms (4 h).
double layer_parameters(const ModelConfig& m);
// One embedding matrix, V x h.
double embedding_parameters(const ModelConfig& m);
// A learned position embedding, s x h; 0 without one.
double position_parameters(const ModelConfig& m);
// Every parameter: the layers, the final layer norm (2 h), one (tied) or two embeddings and the
// position embedding.
double total_parameters(const ModelConfig& m);
// One GPU's share of an embedding matrix: V h / tp when split by vocabulary, else V h.
double embedding_parameters_per_gpu(const ModelConfig& m, const LayoutConfig& l);
// Parameters held by one GPU of the largest pipeline stage (the first: an embedding and the
// position embedding): its layers / tp, its embedding share and the position embedding. What
// its gradient reduction and ZeRO parameter gather carry. (The layers' biases and layer norms
// that tp replicates are counted as split: 6 h per layer, under 0.2% of the tiny model.)
double parameters_per_gpu(const ModelConfig& m, const LayoutConfig& l);

// Floating-point operations per token of one forward pass, flop:
//   per layer 2 (4 h^2 + 2 h f)  (matrix products, 2 flop per multiply-add)
//           + 4 s h               (attention scores Q K^T and their product with V, full s x s)
//   output logits 2 V h
double forward_flops_per_token(const ModelConfig& m);
// One training step per token: the backward pass costs twice the forward pass (1:2), and with
// activation recompute the layers (not the logits) run their forward pass once more.
// Without recompute this is 6 N' + 12 l s h with N' the matrix parameters (layers and logits).
double training_flops_per_token(const ModelConfig& m, bool activation_recompute);

}  // namespace hycc::sim
