// hycc-train optimizer pieces: AdamW against the formula, its range for ZeRO shards, weight
// decay only on matrices, gradient-norm bookkeeping for clipping, the learning-rate schedule,
// and the data sampler.
#include <gtest/gtest.h>

#include <cmath>

#include "adamw.h"
#include "data.h"
#include "lr_schedule.h"

namespace hycc::train {
namespace {

std::vector<TensorInfo> two_tensors() {
  TensorInfo w;
  w.name = "w";
  w.offset = 0;
  w.count = 4;
  w.weight_decay = true;
  w.split = TpSplit::kRows;
  TensorInfo b;
  b.name = "b";
  b.offset = 4;
  b.count = 2;
  return {w, b};
}

TEST(TrainAdamW, MatchesFormulaAndDecaysOnlyMatrices) {
  const auto tensors = two_tensors();
  AdamWConfig config;
  config.weight_decay = 0.5f;
  AdamW opt(tensors, 0, 6, config);
  std::vector<float> p = {1, 2, 3, 4, 5, 6};
  const std::vector<float> g = {0.1f, -0.2f, 0.3f, 0, 0.5f, -0.6f};
  const float lr = 0.01f;
  opt.update(p.data(), g.data(), lr, 1);
  for (size_t i = 0; i < p.size(); ++i) {
    const double p0 = static_cast<double>(i + 1);
    const double m_hat = g[i];  // step 1: bias correction undoes (1 - beta)
    const double v_hat = static_cast<double>(g[i]) * g[i];
    const double decay = i < 4 ? 0.5 : 0.0;
    const double expected = p0 - lr * (m_hat / (std::sqrt(v_hat) + 1e-8) + decay * p0);
    EXPECT_NEAR(p[i], expected, 1e-6) << i;
  }
}

TEST(TrainAdamW, UpdatesOnlyItsRange) {
  const auto tensors = two_tensors();
  AdamW shard(tensors, 3, 5, AdamWConfig{});
  EXPECT_EQ(shard.m().size(), 2u);
  std::vector<float> p = {1, 2, 3, 4, 5, 6};
  const std::vector<float> g(6, 1.0f);
  shard.update(p.data(), g.data(), 0.1f, 1);
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[2], 3.0f);
  EXPECT_NE(p[3], 4.0f);
  EXPECT_NE(p[4], 5.0f);
  EXPECT_EQ(p[5], 6.0f);
}

TEST(TrainClip, SumSquaresCountsEachGradientOnce) {
  auto tensors = two_tensors();  // w sharded, b replicated
  TensorInfo tied;
  tied.name = "wte";
  tied.offset = 6;
  tied.count = 1;
  tied.tied_copy = true;
  tensors.push_back(tied);
  const std::vector<float> g = {1, 2, 0, 0, 3, 0, 100};
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, true), 14.0);
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, false), 5.0);
  // ZeRO shards: the parts of a split of the buffer add up to the whole.
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, true, 0, 1), 1.0);
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, true, 1, 5), 13.0);
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, true, 5, 7), 0.0);
  EXPECT_DOUBLE_EQ(local_sum_squares(g.data(), tensors, false, 1, 7), 4.0);
  EXPECT_FLOAT_EQ(clip_scale(16.0, 2.0f), static_cast<float>(2.0 / (4.0 + 1e-6)));
  EXPECT_EQ(clip_scale(1.0, 2.0f), 1.0f);
  EXPECT_EQ(clip_scale(100.0, 0.0f), 1.0f);
  std::vector<float> x = {2, 4};
  apply_clip(x.data(), x.size(), 0.5f);
  EXPECT_EQ(x, (std::vector<float>{1, 2}));
}

TEST(TrainSchedule, WarmupThenCosine) {
  LrSchedule s{1.0f, 0.1f, 4, 14};
  EXPECT_FLOAT_EQ(s.at(0), 0.25f);
  EXPECT_FLOAT_EQ(s.at(3), 1.0f);
  EXPECT_FLOAT_EQ(s.at(4), 1.0f);
  EXPECT_NEAR(s.at(9), 0.55f, 1e-6);
  EXPECT_FLOAT_EQ(s.at(14), 0.1f);
  EXPECT_FLOAT_EQ(s.at(100), 0.1f);
  for (int i = 5; i < 14; ++i) EXPECT_LT(s.at(i), s.at(i - 1));
}

TEST(TrainData, BatchesDependOnSeedStepAndIndexOnly) {
  TextData text;
  text.name = "digits";
  for (int i = 0; i < 1000; ++i) text.bytes.push_back(static_cast<uint8_t>('0' + i % 10));
  const int T = 6;
  std::vector<int> tok8(8 * T), tgt8(8 * T), tok4(4 * T), tgt4(4 * T);
  sample_train_batch(text, 3, 17, 0, 8, T, tok8.data(), tgt8.data());
  for (int half = 0; half < 2; ++half) {
    sample_train_batch(text, 3, 17, 4 * half, 4, T, tok4.data(), tgt4.data());
    EXPECT_TRUE(std::equal(tok4.begin(), tok4.end(), tok8.begin() + half * 4 * T));
    EXPECT_TRUE(std::equal(tgt4.begin(), tgt4.end(), tgt8.begin() + half * 4 * T));
  }
  for (int i = 0; i < 8 * T; ++i) {
    EXPECT_EQ(tgt8[i], '0' + (tok8[i] - '0' + 1) % 10);  // targets are the next bytes
  }
  std::vector<int> other(8 * T), other_t(8 * T);
  sample_train_batch(text, 3, 18, 0, 8, T, other.data(), other_t.data());
  EXPECT_NE(other, tok8);
  eval_batch(text, 0, 8, T, 8, other.data(), other_t.data());
  EXPECT_EQ(other[0], '0');
}

TEST(TrainData, MissingFileNamesTheFetchCommand) {
  try {
    load_text("/nonexistent/train.txt");
    FAIL() << "no exception";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("scripts/fetch-data"), std::string::npos) << e.what();
  }
  TextData tiny;
  tiny.name = "tiny";
  tiny.bytes = {'a', 'b'};
  std::vector<int> tok(4), tgt(4);
  EXPECT_THROW(sample_train_batch(tiny, 1, 0, 0, 1, 4, tok.data(), tgt.data()), DataError);
}

}  // namespace
}  // namespace hycc::train
