// Performance model: parameter counts and flops per token.
#include <gtest/gtest.h>

#include "compute.h"
#include "experiment.h"
#include "sim_test_util.h"

namespace hycc::sim {
namespace {

TEST(SimCompute, SmallModelByHand) {
  const ModelConfig m = testing::small_model();
  // 4 h^2 + 4 h = 288; 2 h f + f + h = 552; 4 h = 32.
  EXPECT_DOUBLE_EQ(layer_parameters(m), 872);
  EXPECT_DOUBLE_EQ(embedding_parameters(m), 128);
  EXPECT_DOUBLE_EQ(total_parameters(m), 4 * 872 + 16 + 128);
  // Per layer 2 (4 h^2 + 2 h f) + 4 s h = 1536 + 128; logits 2 V h = 256.
  EXPECT_DOUBLE_EQ(forward_flops_per_token(m), 4 * 1664 + 256);
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, false), 3 * (4 * 1664 + 256));
  EXPECT_DOUBLE_EQ(training_flops_per_token(m, true), 4 * 4 * 1664 + 3 * 256);
}

TEST(SimCompute, PerGpuParametersFollowTheStages) {
  const ModelConfig m = testing::small_model();
  LayoutConfig l = testing::small_layout();
  EXPECT_DOUBLE_EQ(parameters_per_gpu(m, l), (2 * 872 + 128) / 2.0);  // a stage with an embedding
  l.pp = 1;
  l.tp = 1;
  EXPECT_DOUBLE_EQ(parameters_per_gpu(m, l), 4 * 872 + 128);  // tied: one matrix
  ModelConfig untied = m;
  untied.tied_embeddings = false;
  EXPECT_DOUBLE_EQ(parameters_per_gpu(untied, l), 4 * 872 + 2 * 128);
}

TEST(SimCompute, TinyMatchesTheTrainersParameters) {
  const ModelConfig m = load_model("tiny");
  LayoutConfig l = load_layout("tiny-dp2-tp2-pp2");
  // hycc-train's GPT, h 256: a layer holds 12 h^2 + 13 h = 789760; wte 256 x 256, wpe 64 x 256,
  // final layer norm 2 h: 4 x 789760 + 65536 + 16384 + 512.
  EXPECT_DOUBLE_EQ(total_parameters(m), 3241472);
  // Stage 0 of tp 2 x pp 2: its 2 layers split over tp (789760), wte whole (65536: tp
  // replicates it), wpe (16384). The trainer holds 873216 there: it also keeps the layers'
  // layer norms and row-parallel biases whole (6 h x 2 layers / 2 = 1536 more).
  EXPECT_DOUBLE_EQ(parameters_per_gpu(m, l), 871680);
  EXPECT_DOUBLE_EQ(embedding_parameters_per_gpu(m, l), 65536);
  ModelConfig split = m;
  split.vocab_parallel_embedding = true;
  EXPECT_DOUBLE_EQ(embedding_parameters_per_gpu(split, l), 32768);
}

TEST(SimCompute, NeoX20BMatchesItsPublishedSize) {
  const ModelConfig m = load_model("neox20b");
  // GPT-NeoX-20B: 20,554,567,680 parameters (Black et al. 2022).
  EXPECT_DOUBLE_EQ(total_parameters(m), 20554567680.0);
  // With recompute, 96 l h^2 (1 + s / (6 h) + V / (16 l h)) per sample of s tokens (Narayanan et
  // al. 2021), per token divided by s.
  const double l = 44, h = 6144, s = 2048, v = 50432;
  const double megatron = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  EXPECT_NEAR(training_flops_per_token(m, true) / megatron, 1.0, 1e-12);
}

}  // namespace
}  // namespace hycc::sim
