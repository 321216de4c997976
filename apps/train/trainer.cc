#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "checkpoint.h"
#include "hycc/error.h"

namespace hycc::train {
namespace {

GPTConfig with_seq(GPTConfig model, int seq) {
  model.max_seq_len = seq;
  return model;
}

int micro_size(const TrainConfig& c) { return c.batch / c.micro_batches; }

}  // namespace

void check_train_config(const TrainConfig& c) {
  auto fail = [](const std::string& what) { throw InvalidArgument(tagged("train", what)); };
  if (c.batch < 1 || c.micro_batches < 1 || c.seq < 1 || c.steps < 0) {
    fail("batch, micro-batches and sequence length must be positive, steps not negative");
  }
  if (c.batch % c.micro_batches != 0) {
    fail(detail::concat("--batch ", c.batch, " is not divisible by --micro-batches ",
                        c.micro_batches));
  }
  if (!(c.lr > 0.0f)) fail("--lr must be positive");
  if (c.eval_sequences < 0) fail("eval sequences must not be negative");
}

Trainer::Trainer(const TrainConfig& config, const TextData& train, const TextData* val)
    : config_((check_train_config(config), config)),
      train_(train),
      val_(val),
      model_(with_seq(config.model, config.seq), ModelPart{}, config.seed),
      acts_(model_, micro_size(config), config.seq),
      optimizer_(model_.tensors, 0, model_.params_memory.size(), config.adamw) {
  config_.model.max_seq_len = config.seq;
  schedule_.max_lr = config.lr;
  schedule_.min_lr = config.lr * config.min_lr_ratio;
  schedule_.warmup = config.warmup >= 0 ? config.warmup : config.steps / 10;
  schedule_.total = config.steps;
  tokens_.resize(static_cast<size_t>(micro_size(config)) * config.seq);
  targets_.resize(tokens_.size());
}

StepResult Trainer::train_step() {
  const auto start = std::chrono::steady_clock::now();
  const int B = micro_size(config_);
  const int T = config_.seq;
  // Mean over every position of the step: each micro-batch's loss weighs 1 / micro_batches.
  const float dloss = 1.0f / (static_cast<float>(config_.batch) * static_cast<float>(T));
  gpt_zero_grad(model_);
  double loss_sum = 0.0;
  for (int mb = 0; mb < config_.micro_batches; ++mb) {
    sample_train_batch(train_, config_.seed, step_, mb * B, B, T, tokens_.data(), targets_.data());
    loss_sum += gpt_forward(model_, acts_, tokens_.data(), nullptr, targets_.data(), tp_);
    gpt_backward(model_, acts_, nullptr, dloss, tp_);
  }
  // One part holds the whole model: nothing to reduce across groups.
  const double sum_squares = local_sum_squares(model_.grads_memory.data(), model_.tensors, true);
  apply_clip(model_.grads_memory.data(), model_.grads_memory.size(),
             clip_scale(sum_squares, config_.grad_clip));
  StepResult r;
  r.lr = schedule_.at(step_);
  optimizer_.update(model_.params_memory.data(), model_.grads_memory.data(), r.lr, step_ + 1);
  ++step_;
  r.step = step_;
  r.loss = static_cast<float>(loss_sum / config_.micro_batches);
  r.grad_norm = static_cast<float>(std::sqrt(sum_squares));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

float Trainer::evaluate() {
  if (val_ == nullptr || config_.eval_sequences == 0) return NAN;
  const int B = micro_size(config_);
  const int T = config_.seq;
  const int total = config_.eval_sequences;
  double loss_sum = 0.0;
  for (int first = 0; first < total; first += B) {
    const int n = std::min(B, total - first);
    // A short last batch keeps earlier (valid) tokens in its tail, left out of the mean.
    eval_batch(*val_, first, n, T, total, tokens_.data(), targets_.data());
    gpt_forward(model_, acts_, tokens_.data(), nullptr, targets_.data(), tp_);
    for (size_t i = 0; i < static_cast<size_t>(n) * T; ++i) loss_sum += acts_.losses[i];
  }
  return static_cast<float>(loss_sum / (static_cast<double>(total) * T));
}

void Trainer::save(const std::string& path) const {
  save_checkpoint(path, model_, optimizer_, config_.seed, step_);
}

void Trainer::load(const std::string& path) {
  step_ = static_cast<int>(load_checkpoint(path, model_, optimizer_, config_.seed));
}

}  // namespace hycc::train
