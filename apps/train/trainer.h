// Single-rank training loop: one optimizer step = `batch` sequences of `seq` tokens, run as
// `micro_batches` forward/backward passes with gradient accumulation, then global-norm clipping,
// the learning-rate schedule and AdamW. The distributed trainer composes the same pieces
// (gpt_model.h, adamw.h, data.h, checkpoint.h) with communication in between.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "adamw.h"
#include "data.h"
#include "gpt_model.h"
#include "lr_schedule.h"

namespace hycc::train {

struct TrainConfig {
  GPTConfig model;  // max_seq_len is set to seq
  int batch = 8;    // sequences per optimizer step
  int micro_batches = 1;
  int seq = 64;
  int steps = 100;
  float lr = 1e-3f;
  float min_lr_ratio = 0.1f;  // the cosine ends at lr * min_lr_ratio
  int warmup = -1;            // steps; -1: steps / 10
  float grad_clip = 1.0f;     // max global gradient norm; 0: off
  AdamWConfig adamw;
  uint64_t seed = 1;
  int eval_sequences = 32;  // validation windows, evenly spaced over the validation text
};

struct StepResult {
  int step = 0;  // optimizer steps done, this one included
  float loss = 0.0f;
  float lr = 0.0f;
  float grad_norm = 0.0f;  // before clipping
  double seconds = 0.0;
  double comm_seconds = 0.0;  // time in communication (none on one rank)
};

class Trainer {
 public:
  // train and val must outlive the trainer; val may be null (no evaluation).
  Trainer(const TrainConfig& config, const TextData& train, const TextData* val);

  StepResult train_step();
  // Mean loss over config.eval_sequences validation windows.
  float evaluate();

  int step() const { return step_; }
  const TrainConfig& config() const { return config_; }
  GPT& model() { return model_; }
  const LrSchedule& schedule() const { return schedule_; }

  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  TrainConfig config_;
  const TextData& train_;
  const TextData* val_;
  GPT model_;
  GPTActs acts_;
  AdamW optimizer_;
  LrSchedule schedule_;
  NoTensorParallel tp_;
  int step_ = 0;
  std::vector<int> tokens_;
  std::vector<int> targets_;
};

// Validates a configuration (batch divisible into micro-batches, positive sizes, ...).
void check_train_config(const TrainConfig& config);

}  // namespace hycc::train
