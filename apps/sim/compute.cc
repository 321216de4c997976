#include "compute.h"

namespace hycc::sim {
namespace {

double layer_matrix_flops_per_token(const ModelConfig& m) {
  const double h = double(m.hidden), f = double(m.ffn_hidden), s = double(m.sequence);
  return 2.0 * (4.0 * h * h + 2.0 * h * f) + 4.0 * s * h;
}

double logit_flops_per_token(const ModelConfig& m) {
  return 2.0 * double(m.vocabulary) * double(m.hidden);
}

}  // namespace

double layer_parameters(const ModelConfig& m) {
  const double h = double(m.hidden), f = double(m.ffn_hidden);
  return (4.0 * h * h + 4.0 * h) + (2.0 * h * f + f + h) + 4.0 * h;
}

double embedding_parameters(const ModelConfig& m) {
  return double(m.vocabulary) * double(m.hidden);
}

double position_parameters(const ModelConfig& m) {
  return m.learned_positions ? double(m.sequence) * double(m.hidden) : 0.0;
}

double total_parameters(const ModelConfig& m) {
  return double(m.layers) * layer_parameters(m) + 2.0 * double(m.hidden) +
         (m.tied_embeddings ? 1.0 : 2.0) * embedding_parameters(m) + position_parameters(m);
}

double embedding_parameters_per_gpu(const ModelConfig& m, const LayoutConfig& l) {
  return embedding_parameters(m) / (m.vocab_parallel_embedding ? double(l.tp) : 1.0);
}

double parameters_per_gpu(const ModelConfig& m, const LayoutConfig& l) {
  const double layers = double(m.layers / l.pp) * layer_parameters(m) / double(l.tp);
  // With pp = 1 the only stage holds both embeddings (one when tied); otherwise the first and
  // the last stage hold one each (tied: both hold the shared one). The first stage also holds
  // the position embedding, whole on every tp rank.
  const double embeddings = l.pp == 1 && !m.tied_embeddings ? 2.0 : 1.0;
  return layers + embeddings * embedding_parameters_per_gpu(m, l) + position_parameters(m);
}

double forward_flops_per_token(const ModelConfig& m) {
  return double(m.layers) * layer_matrix_flops_per_token(m) + logit_flops_per_token(m);
}

double training_flops_per_token(const ModelConfig& m, bool activation_recompute) {
  const double layer_passes = activation_recompute ? 4.0 : 3.0;
  return layer_passes * double(m.layers) * layer_matrix_flops_per_token(m) +
         3.0 * logit_flops_per_token(m);
}

}  // namespace hycc::sim
