#include "parallel_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "checkpoint.h"
#include "codec/float_convert.h"
#include "grad_sync.h"
#include "hycc/error.h"
#include "pipeline.h"

namespace hycc::train {
namespace {

GPTConfig with_seq(GPTConfig model, int seq) {
  model.max_seq_len = seq;
  return model;
}

ModelPart part_of(const TrainConfig& c, const ParallelGrid& grid) {
  ModelPart part;
  part.tp_size = grid.shape().tp;
  part.tp_rank = grid.tp_rank();
  stage_layers(c.model.num_layers, grid.shape().pp, grid.pp_rank(), &part.first_layer,
               &part.last_layer);
  return part;
}

int micro_size(const TrainConfig& c, const GridShape& s) {
  return c.batch / (s.dp * c.micro_batches);
}

ChunkRange optimizer_range(size_t total, int zero, const ParallelGrid& grid) {
  if (zero == 0) return {0, total};
  return zero_shard(total, grid);
}

}  // namespace

void check_parallel_config(const TrainConfig& c, const ParallelConfig& p, const GridShape& s) {
  auto fail = [](const std::string& what) { throw InvalidArgument(tagged("train", what)); };
  check_train_config(c);
  if (c.batch % (s.dp * c.micro_batches) != 0) {
    fail(detail::concat("--batch ", c.batch, " is not divisible by --dp ", s.dp,
                        " x --micro-batches ", c.micro_batches));
  }
  if (c.model.num_heads < 1 || c.model.channels % c.model.num_heads != 0) {
    fail(detail::concat("--hidden ", c.model.channels, " is not divisible by --heads ",
                        c.model.num_heads));
  }
  if (c.model.num_heads % s.tp != 0) {
    fail(detail::concat("--heads ", c.model.num_heads, " is not divisible by --tp ", s.tp));
  }
  if (c.model.num_layers < s.pp) {
    fail(detail::concat("--layers ", c.model.num_layers, " is fewer than --pp ", s.pp, " stages"));
  }
  if (p.zero < 0 || p.zero > 2) fail(detail::concat("--zero ", p.zero, " is not 0, 1 or 2"));
  if (!(p.bucket_mb > 0)) fail("--bucket-mb must be positive");
}

namespace {

// x[0, n) rounded to bf16 (nearest even), kept as float32.
void round_to_bf16(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = codec::bf16_to_f32(codec::f32_to_bf16(x[i]));
}

}  // namespace

ParallelTrainer::ParallelTrainer(const TrainConfig& config, const ParallelConfig& parallel,
                                 const ParallelGrid& grid, PolicyEngine& engine,
                                 const TextData& train, const TextData* val)
    : config_((check_parallel_config(config, parallel, grid.shape()), config)),
      parallel_(parallel),
      grid_(grid),
      engine_(engine),
      train_(train),
      val_(val),
      comm_(grid, engine),
      tp_(comm_),
      model_(with_seq(config.model, config.seq), part_of(config, grid), config.seed),
      range_(optimizer_range(model_.params_memory.size(), parallel.zero, grid)),
      optimizer_(model_.tensors, range_.offset, range_.offset + range_.count, config.adamw) {
  config_.model.max_seq_len = config.seq;
  schedule_.max_lr = config.lr;
  schedule_.min_lr = config.lr * config.min_lr_ratio;
  schedule_.warmup = config.warmup >= 0 ? config.warmup : config.steps / 10;
  schedule_.total = config.steps;
  comm_.wire = parallel.bf16 ? DType::kBF16 : DType::kF32;
  if (has_master()) {
    const float* shard = model_.params_memory.data() + range_.offset;
    master_.assign(shard, shard + range_.count);
    if (parallel.bf16) round_to_bf16(model_.params_memory.data(), model_.params_memory.size());
  }
  // Sends decide without communicating; adaptive rules need the stages' links measured first
  // (the collectives measure their communicators' links themselves).
  if (engine.policy().adaptive() && grid.shape().pp > 1) engine.calibrate(grid.pp());
  const int in_flight = std::min(grid.shape().pp - grid.pp_rank(), config.micro_batches);
  acts_.reserve(static_cast<size_t>(in_flight));
  for (int i = 0; i < in_flight; ++i) {
    acts_.emplace_back(model_, micro_size(config, grid.shape()), config.seq);
  }
}

ParallelStepResult ParallelTrainer::train_step() {
  const auto start = std::chrono::steady_clock::now();
  comm_.seconds = 0.0;
  if (comm_.dump != nullptr) comm_.dump->begin_step(step_ + 1);
  const GridShape& shape = grid_.shape();
  StepBatch b;
  b.text = &train_;
  b.seed = config_.seed;
  b.step = step_;
  b.B = micro_size(config_, shape);
  b.T = config_.seq;
  b.micro_batches = config_.micro_batches;
  b.first = grid_.dp_rank() * b.B * b.micro_batches;
  // Mean over every position of the global batch; data-parallel ranks sum their gradients.
  b.dloss = 1.0f / (static_cast<float>(config_.batch) * static_cast<float>(config_.seq));

  gpt_zero_grad(model_);
  const double loss_sum = pipeline_train_step(model_, acts_, b, comm_, tp_);

  reduce_tied_embedding(model_, comm_);
  const size_t bucket_floats =
      std::max<size_t>(1, static_cast<size_t>(parallel_.bucket_mb * (1 << 20) / sizeof(float)));
  if (parallel_.zero == 0) {
    allreduce_gradient_buckets(model_, comm_, bucket_floats);
  } else {
    reduce_scatter_gradients(model_, comm_, parallel_.zero, bucket_floats);
  }

  // Global norm: this rank's floats (its shard under ZeRO), summed over the ZeRO shards, the
  // tensor-parallel ranks and the stages; data-parallel replicas are not added twice.
  float* grads = model_.grads_memory.data();
  const size_t end = range_.offset + range_.count;
  double sum_squares =
      local_sum_squares(grads, model_.tensors, grid_.tp_rank() == 0, range_.offset, end);
  if (parallel_.zero > 0) sum_squares = exact_sum(comm_, grid_.zero(), sum_squares);
  sum_squares = exact_sum(comm_, grid_.tp(), sum_squares);
  sum_squares = exact_sum(comm_, grid_.pp(), sum_squares);
  apply_clip(grads + range_.offset, range_.count, clip_scale(sum_squares, config_.grad_clip));

  ParallelStepResult r;
  r.step.lr = schedule_.at(step_);
  float* shard = model_.params_memory.data() + range_.offset;
  if (has_master()) std::copy(master_.begin(), master_.end(), shard);
  optimizer_.update(model_.params_memory.data(), grads, r.step.lr, step_ + 1);
  if (has_master()) {
    std::copy_n(shard, range_.count, master_.begin());
    deliver_parameters();
  }
  ++step_;

  // The loss of the global batch: the last stages' sums over dp, then to every stage.
  double loss = 0.0;
  if (grid_.last_stage()) {
    loss = exact_sum(comm_, grid_.dp(), loss_sum) / (shape.dp * config_.micro_batches);
  }
  r.step.loss = exact_broadcast(comm_, grid_.pp(), static_cast<float>(loss), shape.pp - 1);
  r.step.step = step_;
  r.step.grad_norm = static_cast<float>(std::sqrt(sum_squares));
  r.step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.step.comm_seconds = comm_.seconds;
  r.comm_seconds = comm_.seconds;
  return r;
}

float ParallelTrainer::evaluate() {
  if (val_ == nullptr || config_.eval_sequences == 0) return NAN;
  const int B = acts_[0].B;
  const int total = config_.eval_sequences;
  const int dp = grid_.shape().dp;
  // Batches of B windows, batch k on data-parallel rank k % dp.
  double sum = 0.0;
  int k = 0;
  for (int first = 0; first < total; first += B, ++k) {
    if (k % dp != grid_.dp_rank()) continue;
    const int n = std::min(B, total - first);
    sum += pipeline_eval_batch(model_, acts_[0], *val_, first, n, total, comm_, tp_);
  }
  double loss = 0.0;
  if (grid_.last_stage()) {
    loss = exact_sum(comm_, grid_.dp(), sum) / (static_cast<double>(total) * config_.seq);
  }
  return exact_broadcast(comm_, grid_.pp(), static_cast<float>(loss), grid_.shape().pp - 1);
}

std::string ParallelTrainer::checkpoint_file(const std::string& dir) const {
  return checkpoint_path(dir, model_.part, grid_.dp_rank());
}

void ParallelTrainer::save(const std::string& dir) {
  // Under ZeRO the file keeps the master values of the shard (the rest as delivered).
  float* shard = model_.params_memory.data() + range_.offset;
  std::swap_ranges(master_.begin(), master_.end(), shard);
  try {
    save_checkpoint(checkpoint_file(dir), model_, optimizer_, config_.seed, step_,
                    engine_.save_state());
  } catch (...) {
    std::swap_ranges(master_.begin(), master_.end(), shard);
    throw;
  }
  std::swap_ranges(master_.begin(), master_.end(), shard);
}

void ParallelTrainer::load(const std::string& dir) {
  std::vector<std::byte> extra;
  step_ = static_cast<int>(
      load_checkpoint(checkpoint_file(dir), model_, optimizer_, config_.seed, &extra));
  load_compressor_state(engine_, extra);
  if (has_master()) {
    // Master values back, and every part's copy as the allgather delivered it after the step
    // that wrote the checkpoint (the same codec on the same values gives the same bytes).
    const float* shard = model_.params_memory.data() + range_.offset;
    master_.assign(shard, shard + range_.count);
    deliver_parameters();
  }
}

void ParallelTrainer::deliver_parameters() {
  if (parallel_.zero > 0) {
    allgather_parameters(model_, comm_);  // bf16 on the wire under --precision bf16
  } else {
    round_to_bf16(model_.params_memory.data(), model_.params_memory.size());
  }
}

void load_compressor_state(PolicyEngine& engine, const std::vector<std::byte>& blob) {
  if (blob.empty()) return;  // a checkpoint without compressor state
  if (blob.size() >= 4 && std::memcmp(blob.data(), "HYES", 4) == 0) {
    engine.load_state(blob);
    return;
  }
  // The trainer's own format (checkpoints written before PolicyEngine::save_state).
  size_t pos = 0;
  auto take = [&](void* to, size_t n) {
    if (n == 0) return;
    if (blob.size() - pos < n) {
      throw DataError(tagged("train:checkpoint", "truncated gradient compressor state"));
    }
    std::memcpy(to, blob.data() + pos, n);
    pos += n;
  };
  uint32_t entries = 0;
  take(&entries, sizeof(entries));
  for (uint32_t i = 0; i < entries; ++i) {
    uint32_t spec_size = 0;
    take(&spec_size, sizeof(spec_size));
    std::string spec(spec_size, '\0');
    take(spec.data(), spec_size);
    uint64_t state_size = 0;
    take(&state_size, sizeof(state_size));
    std::vector<std::byte> state(state_size);
    take(state.data(), state_size);
    engine.grad_compressor(spec).load(state);
  }
}

}  // namespace hycc::train
