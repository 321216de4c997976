// The pipeline schedule of one optimizer step on one model part: 1F1B (PipeDream-Flush, as in
// Megatron-LM's non-interleaved schedule) over M micro-batches, with activations and their
// gradients crossing stage boundaries through hycc send/recv under the pp policy.
//
// Stage s of S runs W = min(S - s - 1, M) warmup forwards, then M - W steady iterations of one
// forward and one backward, then W cooldown backwards. Each steady iteration exchanges with one
// neighbour at a time: after its forward, a stage sends the output to s + 1 and receives the
// gradient of an earlier micro-batch from s + 1; after its backward, it sends the input gradient
// to s - 1 and receives the next input from s - 1. The sends are blocking, so in each exchange
// the stage with the even index sends first and the odd one receives first: adjacent stages
// have different parities, so every pair of blocking calls meets. At most min(S - s, M)
// micro-batches are in flight on stage s, one GPTActs each.
#pragma once

#include <cstdint>
#include <vector>

#include "data.h"
#include "gpt_model.h"
#include "train_comm.h"

namespace hycc::train {

// Which sequences of a step this rank trains, and how.
struct StepBatch {
  const TextData* text = nullptr;
  uint64_t seed = 0;
  int64_t step = 0;
  int first = 0;  // index of this data-parallel rank's first sequence of the step
  int B = 1;      // sequences per micro-batch
  int T = 1;
  int micro_batches = 1;
  float dloss = 1.0f;  // d(objective)/d(each position's loss)
};

// Layers [first, last) of stage `stage` of `stages` for L layers: L / S each, and the first
// L % S stages one more.
void stage_layers(int num_layers, int stages, int stage, int* first, int* last);

// Runs forward and backward of every micro-batch (gradients accumulate into model.grads).
// `acts` holds min(S - s, M) activation sets. Returns the sum of the micro-batches' mean losses
// on the last stage, 0 elsewhere.
double pipeline_train_step(GPT& model, std::vector<GPTActs>& acts, const StepBatch& batch,
                           TrainComm& comm, TensorParallelOps& tp);

// Forward only over validation windows [first, first + n) of `total` (n <= acts.B) through the
// pipeline; returns the sum of the n * T position losses on the last stage, 0 elsewhere.
double pipeline_eval_batch(const GPT& model, GPTActs& acts, const TextData& val, int first, int n,
                           int total, TrainComm& comm, TensorParallelOps& tp);

}  // namespace hycc::train
