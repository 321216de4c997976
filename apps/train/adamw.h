// AdamW (decoupled weight decay) over a range of a model part's flat parameter buffer, and
// global gradient-norm clipping.
//
// Weight decay applies to the tensors marked weight_decay (matmul weights and both embeddings,
// i.e. every matrix, as in GPT-2/nanoGPT); biases and LayerNorm parameters are not decayed.
//
// Distributed use: the optimizer covers [begin, end) of the flat buffer, so a ZeRO rank keeps
// moments only for its shard. Clipping needs the norm over all ranks: each rank computes
// local_sum_squares() over the gradients it alone is responsible for, the caller sums them over
// the groups (tp, pp, and dp shards under ZeRO), then every rank calls apply_clip().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpt_model.h"

namespace hycc::train {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

class AdamW {
 public:
  // Moments for floats [begin, end) of a flat buffer laid out as `tensors`.
  AdamW(const std::vector<TensorInfo>& tensors, size_t begin, size_t end, AdamWConfig config);

  // One update of params[begin, end) from grads[begin, end) (whole-buffer pointers); `step`
  // counts updates from 1 (bias correction).
  void update(float* params, const float* grads, float lr, int step);

  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  std::vector<float>& m() { return m_; }  // first moments of [begin, end)
  std::vector<float>& v() { return v_; }  // second moments
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }
  const AdamWConfig& config() const { return config_; }

 private:
  struct Range {
    size_t begin, end;  // in the flat buffer
    bool decay;
  };
  AdamWConfig config_;
  size_t begin_;
  size_t end_;
  std::vector<Range> ranges_;
  std::vector<float> m_;
  std::vector<float> v_;
};

// Sum of squares of the gradients this rank is responsible for in the global norm: every
// TP-sharded tensor, replicated ones only when count_replicated (true on tp rank 0), and never a
// tied copy (the last stage's wte, counted on stage 0). Summed in double in a fixed order.
double local_sum_squares(const float* grads, const std::vector<TensorInfo>& tensors,
                         bool count_replicated);
// The same over floats [begin, end) of the flat buffer only (a ZeRO shard): each tensor's part
// inside the range, with the same rules. Over [0, size) it equals the whole-buffer sum.
double local_sum_squares(const float* grads, const std::vector<TensorInfo>& tensors,
                         bool count_replicated, size_t begin, size_t end);

// The factor that brings the global norm sqrt(global_sum_squares) down to max_norm (1 when it
// is below, or when max_norm <= 0: clipping off).
float clip_scale(double global_sum_squares, float max_norm);

// grads[0, count) *= scale.
void apply_clip(float* grads, size_t count, float scale);

}  // namespace hycc::train
