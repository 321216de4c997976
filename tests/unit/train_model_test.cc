// hycc-train model: tensor-parallel shards (tp=2, in one process) and pipeline stages (4 layers
// in 2 stages) against the whole model; gradients against finite differences; results that do
// not depend on the number of OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "gpt_model.h"
#include "hycc/error.h"
#include "rng.h"

namespace hycc::train {
namespace {

GPTConfig tiny_config(int layers) {
  GPTConfig c;
  c.max_seq_len = 16;
  c.num_layers = layers;
  c.num_heads = 4;
  c.channels = 16;
  return c;
}

struct Batch {
  std::vector<int> tokens;
  std::vector<int> targets;
};

Batch random_batch(int B, int T, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  for (int i = 0; i < B * T + 1; ++i) b.tokens.push_back(static_cast<int>(rng.below(256)));
  b.targets.assign(b.tokens.begin() + 1, b.tokens.end());
  b.tokens.pop_back();
  return b;
}

// |a - b| <= tol * max(1, max|b|) for every element.
void expect_all_close(const float* a, const float* b, size_t n, double tol,
                      const std::string& what) {
  double scale = 1.0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (err > worst) {
      worst = err;
      at = i;
    }
  }
  EXPECT_LE(worst, tol * scale) << what << ": element " << at << " is " << a[at] << ", expected "
                                << b[at];
}

const TensorInfo& find_tensor(const GPT& m, const std::string& name) {
  for (const TensorInfo& t : m.tensors) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

// The tp ranks of one process run in threads; allreduce_sum sums their buffers in rank order,
// so every rank gets the same bits.
class ThreadTensorParallel {
 public:
  explicit ThreadTensorParallel(int size) : size_(size), slots_(size), barrier_(size) {}

  struct Rank final : TensorParallelOps {
    ThreadTensorParallel* group;
    int rank;
    std::vector<float> sum;
    void allreduce_sum(float* data, size_t count, const char*) override {
      group->slots_[rank] = data;
      group->barrier_.arrive_and_wait();
      sum.assign(group->slots_[0], group->slots_[0] + count);
      for (int r = 1; r < group->size_; ++r) {
        for (size_t i = 0; i < count; ++i) sum[i] += group->slots_[r][i];
      }
      group->barrier_.arrive_and_wait();
      std::copy(sum.begin(), sum.end(), data);
      group->barrier_.arrive_and_wait();
    }
  };

 private:
  int size_;
  std::vector<float*> slots_;
  std::barrier<> barrier_;
};

TEST(TrainModel, TensorParallelShardsMatchWholeModel) {
  const GPTConfig config = tiny_config(2);
  const int B = 2;
  const int T = 8;
  const int tp = 2;
  const Batch batch = random_batch(B, T, 7);
  const float dloss = 1.0f / (B * T);

  GPT whole(config, {}, 42);
  GPTActs whole_acts(whole, B, T);
  NoTensorParallel none;
  const float whole_loss =
      gpt_forward(whole, whole_acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
  gpt_backward(whole, whole_acts, nullptr, dloss, none);

  std::vector<GPT> shards;
  std::vector<GPTActs> acts;
  for (int r = 0; r < tp; ++r) shards.emplace_back(config, ModelPart{tp, r, 0, -1}, 42);
  for (int r = 0; r < tp; ++r) acts.emplace_back(shards[r], B, T);
  ThreadTensorParallel group(tp);
  std::vector<ThreadTensorParallel::Rank> ops(tp);
  std::vector<float> losses(tp);
  std::vector<std::thread> threads;
  for (int r = 0; r < tp; ++r) {
    ops[r].group = &group;
    ops[r].rank = r;
    threads.emplace_back([&, r] {
      losses[r] = gpt_forward(shards[r], acts[r], batch.tokens.data(), nullptr,
                              batch.targets.data(), ops[r]);
      gpt_backward(shards[r], acts[r], nullptr, dloss, ops[r]);
    });
  }
  for (auto& t : threads) t.join();

  for (int r = 0; r < tp; ++r) {
    EXPECT_NEAR(losses[r], whole_loss, 1e-6 * whole_loss) << "rank " << r;
    expect_all_close(acts[r].logits.data(), whole_acts.logits.data(), whole_acts.logits.size(),
                     1e-5, "logits");
  }
  EXPECT_EQ(losses[0], losses[1]);
  ASSERT_EQ(shards[0].tensors.size(), whole.tensors.size());
  for (size_t t = 0; t < whole.tensors.size(); ++t) {
    const TensorInfo& info = whole.tensors[t];
    std::vector<float> params(info.count), grads(info.count);
    for (int r = 0; r < tp; ++r) {
      const TensorInfo& s = shards[r].tensors[t];
      ASSERT_EQ(s.name, info.name);
      EXPECT_EQ(s.count * (s.split == TpSplit::kReplicated ? 1 : tp), info.count) << info.name;
      if (s.split == TpSplit::kReplicated) {
        std::copy_n(shards[r].params_memory.data() + s.offset, s.count, params.data());
        std::copy_n(shards[r].grads_memory.data() + s.offset, s.count, grads.data());
      } else {
        tp_unslice(s, tp, r, shards[r].params_memory.data() + s.offset, params.data());
        tp_unslice(s, tp, r, shards[r].grads_memory.data() + s.offset, grads.data());
      }
      if (s.split == TpSplit::kReplicated || r == tp - 1) {
        // Parameters are exact slices of the whole model's.
        EXPECT_EQ(0, std::memcmp(params.data(), whole.params_memory.data() + info.offset,
                                 info.count * sizeof(float)))
            << info.name;
        expect_all_close(grads.data(), whole.grads_memory.data() + info.offset, info.count, 1e-5,
                         info.name + " gradient, rank " + std::to_string(r));
      }
    }
  }
}

TEST(TrainModel, PipelineStagesMatchWholeModel) {
  const GPTConfig config = tiny_config(4);
  const int B = 2;
  const int T = 8;
  const Batch batch = random_batch(B, T, 8);
  const float dloss = 1.0f / (B * T);
  NoTensorParallel none;

  GPT whole(config, {}, 5);
  GPTActs whole_acts(whole, B, T);
  const float whole_loss =
      gpt_forward(whole, whole_acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
  gpt_backward(whole, whole_acts, nullptr, dloss, none);

  GPT s0(config, ModelPart{1, 0, 0, 1}, 5);  // embeddings + layer 0
  GPT s1(config, ModelPart{1, 0, 1, 3}, 5);  // layers 1, 2
  GPT s2(config, ModelPart{1, 0, 3, 4}, 5);  // layer 3 + final LN + head
  GPTActs a0(s0, B, T), a1(s1, B, T), a2(s2, B, T);
  EXPECT_TRUE(gpt_needs_embedding_reduction(s0));
  EXPECT_TRUE(gpt_needs_embedding_reduction(s2));
  EXPECT_FALSE(gpt_needs_embedding_reduction(whole));
  EXPECT_EQ(gpt_tied_embedding_grad(s1, nullptr), nullptr);

  gpt_forward(s0, a0, batch.tokens.data(), nullptr, nullptr, none);
  gpt_forward(s1, a1, nullptr, gpt_output(s0, a0), nullptr, none);
  const float loss = gpt_forward(s2, a2, nullptr, gpt_output(s1, a1), batch.targets.data(), none);
  EXPECT_EQ(loss, whole_loss);
  const float* d2 = gpt_backward(s2, a2, nullptr, dloss, none);
  const float* d1 = gpt_backward(s1, a1, d2, dloss, none);
  EXPECT_EQ(gpt_backward(s0, a0, d1, dloss, none), nullptr);

  // The embedding hook: sum the two wte gradients (what the `embedding` group's allreduce does).
  size_t n0 = 0, n2 = 0;
  float* g0 = gpt_tied_embedding_grad(s0, &n0);
  float* g2 = gpt_tied_embedding_grad(s2, &n2);
  ASSERT_EQ(n0, n2);
  for (size_t i = 0; i < n0; ++i) g0[i] = g2[i] = g0[i] + g2[i];

  for (const GPT* stage : {&s0, &s1, &s2}) {
    for (const TensorInfo& t : stage->tensors) {
      const TensorInfo& w = find_tensor(whole, t.name);
      ASSERT_EQ(t.count, w.count) << t.name;
      EXPECT_EQ(t.tied_copy, stage == &s2 && t.name == "wte") << t.name;
      EXPECT_EQ(0, std::memcmp(stage->params_memory.data() + t.offset,
                               whole.params_memory.data() + w.offset, t.count * sizeof(float)))
          << t.name;
      expect_all_close(stage->grads_memory.data() + t.offset, whole.grads_memory.data() + w.offset,
                       t.count, t.name == "wte" ? 1e-6 : 0.0, t.name + " gradient");
    }
  }
}

// tp = 2 within each of 2 pipeline stages: four parts, each stage's two shards in threads.
TEST(TrainModel, TensorAndPipelinePartsMatchWholeModel) {
  const GPTConfig config = tiny_config(2);
  const int B = 2;
  const int T = 8;
  const int tp = 2;
  const Batch batch = random_batch(B, T, 13);
  const float dloss = 1.0f / (B * T);
  NoTensorParallel none;
  GPT whole(config, {}, 21);
  GPTActs whole_acts(whole, B, T);
  const float whole_loss =
      gpt_forward(whole, whole_acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
  gpt_backward(whole, whole_acts, nullptr, dloss, none);

  std::vector<GPT> parts;  // stage * tp + tp_rank
  for (int stage = 0; stage < 2; ++stage) {
    for (int r = 0; r < tp; ++r) parts.emplace_back(config, ModelPart{tp, r, stage, stage + 1}, 21);
  }
  std::vector<GPTActs> acts;
  for (const GPT& p : parts) acts.emplace_back(p, B, T);
  auto run_stage = [&](int stage, const std::function<void(int, TensorParallelOps&)>& fn) {
    ThreadTensorParallel group(tp);
    std::vector<ThreadTensorParallel::Rank> ops(tp);
    std::vector<std::thread> threads;
    for (int r = 0; r < tp; ++r) {
      ops[r].group = &group;
      ops[r].rank = r;
      threads.emplace_back([&, r] { fn(stage * tp + r, ops[r]); });
    }
    for (auto& t : threads) t.join();
  };
  std::vector<float> losses(parts.size());
  run_stage(0, [&](int i, TensorParallelOps& ops) {
    gpt_forward(parts[i], acts[i], batch.tokens.data(), nullptr, nullptr, ops);
  });
  run_stage(1, [&](int i, TensorParallelOps& ops) {
    losses[i] = gpt_forward(parts[i], acts[i], nullptr, gpt_output(parts[i - tp], acts[i - tp]),
                            batch.targets.data(), ops);
    gpt_backward(parts[i], acts[i], nullptr, dloss, ops);
  });
  run_stage(0, [&](int i, TensorParallelOps& ops) {
    gpt_backward(parts[i], acts[i], acts[i + tp].dresidual.data(), dloss, ops);
  });
  EXPECT_NEAR(losses[tp], whole_loss, 1e-6 * whole_loss);
  for (int r = 0; r < tp; ++r) {
    size_t n = 0;
    float* g0 = gpt_tied_embedding_grad(parts[r], &n);
    float* g1 = gpt_tied_embedding_grad(parts[tp + r], nullptr);
    for (size_t i = 0; i < n; ++i) g0[i] = g1[i] = g0[i] + g1[i];
  }
  for (const TensorInfo& info : whole.tensors) {
    std::vector<float> grads(info.count);
    for (const GPT& p : parts) {
      for (const TensorInfo& s : p.tensors) {
        if (s.name != info.name) continue;
        if (s.split == TpSplit::kReplicated) {
          std::copy_n(p.grads_memory.data() + s.offset, s.count, grads.data());
        } else {
          tp_unslice(s, tp, p.part.tp_rank, p.grads_memory.data() + s.offset, grads.data());
        }
      }
    }
    expect_all_close(grads.data(), whole.grads_memory.data() + info.offset, info.count, 1e-5,
                     info.name + " gradient");
  }
}

// Central differences of the float loss at the largest gradients of every tensor.
TEST(TrainModel, GradientsMatchFiniteDifferences) {
  GPTConfig config = tiny_config(2);
  config.channels = 8;
  config.num_heads = 2;
  const int B = 1;
  const int T = 6;
  const Batch batch = random_batch(B, T, 9);
  NoTensorParallel none;
  GPT model(config, {}, 11);
  // Non-trivial LN and bias values, so their gradients are exercised too.
  Rng rng(3);
  for (const TensorInfo& t : model.tensors) {
    if (t.weight_decay) continue;
    for (size_t i = 0; i < t.count; ++i) {
      model.params_memory[t.offset + i] += static_cast<float>(0.1 * rng.normal());
    }
  }
  GPTActs acts(model, B, T);
  gpt_forward(model, acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
  gpt_backward(model, acts, nullptr, 1.0f / (B * T), none);

  for (const TensorInfo& t : model.tensors) {
    size_t best = t.offset;
    for (size_t i = t.offset; i < t.offset + t.count; ++i) {
      if (std::fabs(model.grads_memory[i]) > std::fabs(model.grads_memory[best])) best = i;
    }
    const float saved = model.params_memory[best];
    const float h = 1e-2f;
    model.params_memory[best] = saved + h;
    const double plus =
        gpt_forward(model, acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
    model.params_memory[best] = saved - h;
    const double minus =
        gpt_forward(model, acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
    model.params_memory[best] = saved;
    const double numeric = (plus - minus) / (2.0 * h);
    const double analytic = model.grads_memory[best];
    EXPECT_NEAR(analytic, numeric, 2e-4 + 0.03 * std::fabs(numeric))
        << t.name << " element " << best - t.offset;
  }
}

TEST(TrainModel, ResultsDoNotDependOnThreadCount) {
  GPTConfig config = tiny_config(2);
  config.max_seq_len = 40;
  const int B = 3;
  const int T = 40;  // 120 rows: several gemm tiles
  const Batch batch = random_batch(B, T, 10);
  NoTensorParallel none;
  std::vector<float> grads[2];
  float losses[2];
  const int saved = omp_get_max_threads();
  for (int run = 0; run < 2; ++run) {
    omp_set_num_threads(run == 0 ? 1 : 3);
    GPT model(config, {}, 12);
    GPTActs acts(model, B, T);
    losses[run] =
        gpt_forward(model, acts, batch.tokens.data(), nullptr, batch.targets.data(), none);
    gpt_backward(model, acts, nullptr, 1.0f / (B * T), none);
    grads[run] = model.grads_memory;
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(0, std::memcmp(grads[0].data(), grads[1].data(), grads[0].size() * sizeof(float)));
}

TEST(TrainModel, RejectsBadShapes) {
  GPTConfig config = tiny_config(2);
  EXPECT_THROW(GPT(config, ModelPart{3, 0, 0, -1}, 1), InvalidArgument);  // 4 heads, tp 3
  EXPECT_THROW(GPT(config, ModelPart{1, 0, 1, 1}, 1), InvalidArgument);   // empty stage
  config.channels = 18;
  EXPECT_THROW(GPT(config, ModelPart{}, 1), InvalidArgument);
  GPT model(tiny_config(2), {}, 1);
  EXPECT_THROW(GPTActs(model, 1, 17), InvalidArgument);  // longer than max_seq_len
}

}  // namespace
}  // namespace hycc::train
