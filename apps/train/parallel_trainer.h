// The distributed training loop: one model part per rank of a dp x tp x pp grid, the 1F1B
// pipeline (pipeline.h), tensor-parallel reductions, data-parallel bucketed allreduce or ZeRO
// 1/2 (grad_sync.h), global-norm clipping across all groups, AdamW on this rank's range, and
// checkpoints of each rank's part and shard. With dp = tp = pp = 1 it computes what Trainer
// computes. Every byte goes through hycc; the policy engine decides the compression.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adamw.h"
#include "data.h"
#include "gpt_model.h"
#include "hycc/grid.h"
#include "hycc/policy_engine.h"
#include "lr_schedule.h"
#include "train_comm.h"
#include "trainer.h"

namespace hycc::train {

struct ParallelConfig {
  int zero = 0;          // ZeRO stage 0, 1 or 2
  double bucket_mb = 4;  // data-parallel / ZeRO-2 bucket size in MiB of float32 gradients
  // Mixed precision as Megatron's bf16 mode: the weights the passes use are the bf16 rounding of
  // fp32 master weights (which AdamW updates, with its moments in fp32), and every tensor sent
  // (activations and their gradients, weight gradients, ZeRO parameters) travels as bf16.
  // Computation inside a rank stays float32 (the CPU's sgemm), gradients accumulate in fp32.
  bool bf16 = false;
};

struct ParallelStepResult {
  StepResult step;          // loss: the global batch's mean, identical on every rank
  double comm_seconds = 0;  // this rank's time inside hycc calls during the step
};

class ParallelTrainer {
 public:
  // Collective over grid.world(). train and val must outlive the trainer; val may be null.
  ParallelTrainer(const TrainConfig& config, const ParallelConfig& parallel,
                  const ParallelGrid& grid, PolicyEngine& engine, const TextData& train,
                  const TextData* val);

  // One optimizer step; collective over the world.
  ParallelStepResult train_step();
  // Mean validation loss, identical on every rank; collective.
  float evaluate();

  int step() const { return step_; }
  const GPT& model() const { return model_; }
  TrainComm& comm() { return comm_; }

  // This rank's part and shard: checkpoint_path(dir, part, dp_rank), with the state of the
  // engine's gradient compressors as extra bytes.
  std::string checkpoint_file(const std::string& dir) const;
  void save(const std::string& dir);
  void load(const std::string& dir);

 private:
  TrainConfig config_;
  ParallelConfig parallel_;
  const ParallelGrid& grid_;
  PolicyEngine& engine_;
  const TextData& train_;
  const TextData* val_;
  TrainComm comm_;
  HyccTensorParallel tp_;
  GPT model_;
  std::vector<GPTActs> acts_;
  ChunkRange range_;  // the optimizer's floats of the flat buffer
  AdamW optimizer_;
  // ZeRO or bf16: the fp32 master values of this rank's optimizer range. After the parameter
  // allgather the part holds what the zero_param policy delivered (e.g. bf16-rounded), identical
  // on every rank, and computes with it; under bf16 without ZeRO, the bf16 rounding of the
  // masters. AdamW updates the master values.
  bool has_master() const { return parallel_.zero > 0 || parallel_.bf16; }
  // The part's weights from the masters: the ZeRO allgather, or the rounding to bf16.
  void deliver_parameters();
  std::vector<float> master_;
  LrSchedule schedule_;
  int step_ = 0;
};

// Checks the parallel layout against the configuration (batch divisible by dp x micro-batches,
// heads by tp, at least one layer per stage, ...); InvalidArgument naming the flag otherwise.
void check_parallel_config(const TrainConfig& config, const ParallelConfig& parallel,
                           const GridShape& shape);

// The gradient compressors' state in a checkpoint: PolicyEngine::save_state's blob; loading also
// reads the trainer's own format of checkpoints written before it (per compressor: u32 spec
// length, spec, u64 state length, state, after a u32 count).
void load_compressor_state(PolicyEngine& engine, const std::vector<std::byte>& blob);

}  // namespace hycc::train
