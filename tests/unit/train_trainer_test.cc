// hycc-train loop: gradient accumulation equals one big batch, a resumed run repeats an
// uninterrupted one bit for bit, checkpoints reject what does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint.h"
#include "rng.h"
#include "trainer.h"

namespace hycc::train {
namespace {

// A few kilobytes of English-like text, so the tests need neither network nor corpus.
TextData small_text(uint64_t seed) {
  static const char* const kWords[] = {"the",   "jury",  "said", "that",   "election", "was",
                                       "city",  "of",    "a",    "report", "and",      "county",
                                       "court", "judge", "in",   "new",    "laws",     "to"};
  Rng rng(seed);
  TextData text;
  text.name = "small text";
  std::string s;
  while (s.size() < 8000) {
    const int words = 4 + static_cast<int>(rng.below(8));
    for (int w = 0; w < words; ++w) {
      std::string word = kWords[rng.below(std::size(kWords))];
      if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      s += word;
      s += w + 1 < words ? " " : ".\n";
    }
  }
  text.bytes.assign(s.begin(), s.end());
  return text;
}

TrainConfig tiny_train_config() {
  TrainConfig c;
  c.model.num_layers = 2;
  c.model.num_heads = 2;
  c.model.channels = 16;
  c.seq = 16;
  c.batch = 8;
  c.steps = 6;
  c.lr = 3e-3f;
  c.warmup = 2;
  c.seed = 99;
  c.eval_sequences = 5;
  return c;
}

TEST(TrainLoop, MicroBatchesMatchOneBatch) {
  const TextData text = small_text(1);
  TrainConfig one = tiny_train_config();
  TrainConfig four = one;
  four.micro_batches = 4;
  Trainer a(one, text, &text);
  Trainer b(four, text, &text);
  for (int step = 0; step < 4; ++step) {
    const StepResult ra = a.train_step();
    const StepResult rb = b.train_step();
    EXPECT_NEAR(ra.loss, rb.loss, 2e-6 * ra.loss) << "step " << step;
    EXPECT_NEAR(ra.grad_norm, rb.grad_norm, 1e-5 * ra.grad_norm) << "step " << step;
    if (step == 0) {
      // The (clipped) gradients of the first step, before any parameter differs.
      const auto& ga = a.model().grads_memory;
      const auto& gb = b.model().grads_memory;
      float scale = 0.0f;
      for (float g : ga) scale = std::max(scale, std::fabs(g));
      for (size_t i = 0; i < ga.size(); ++i) {
        ASSERT_NEAR(ga[i], gb[i], 1e-5f * scale) << "gradient " << i;
      }
    }
  }
  EXPECT_NEAR(a.evaluate(), b.evaluate(), 1e-4);
}

TEST(TrainLoop, LossDecreases) {
  const TextData text = small_text(2);
  TrainConfig c = tiny_train_config();
  c.steps = 20;
  Trainer t(c, text, &text);
  const float before = t.evaluate();
  float first = 0.0f, last = 0.0f;
  for (int i = 0; i < c.steps; ++i) {
    const float loss = t.train_step().loss;
    if (i == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, first - 0.5f);
  EXPECT_LT(t.evaluate(), before - 0.5f);
  EXPECT_NEAR(before, std::log(256.0f), 0.1f);  // an untrained model guesses uniformly
}

TEST(TrainLoop, ResumeRepeatsUninterruptedRunExactly) {
  const TextData text = small_text(3);
  const TrainConfig c = tiny_train_config();
  const std::string dir = ::testing::TempDir() + "/hycc_train_resume";
  std::filesystem::create_directories(dir);
  const std::string path = checkpoint_path(dir, ModelPart{});

  Trainer full(c, text, nullptr);
  std::vector<float> full_losses;
  for (int i = 0; i < c.steps; ++i) full_losses.push_back(full.train_step().loss);

  {
    Trainer first(c, text, nullptr);
    for (int i = 0; i < c.steps / 2; ++i) {
      EXPECT_EQ(first.train_step().loss, full_losses[i]) << "step " << i;
    }
    first.save(path);
  }
  Trainer resumed(c, text, nullptr);
  resumed.load(path);
  EXPECT_EQ(resumed.step(), c.steps / 2);
  for (int i = c.steps / 2; i < c.steps; ++i) {
    EXPECT_EQ(resumed.train_step().loss, full_losses[i]) << "step " << i;
  }
  EXPECT_EQ(0, std::memcmp(resumed.model().params_memory.data(), full.model().params_memory.data(),
                           full.model().params_memory.size() * sizeof(float)));
  std::filesystem::remove_all(dir);
}

TEST(TrainLoop, CheckpointRejectsOtherShapesAndDamage) {
  const TextData text = small_text(4);
  const TrainConfig c = tiny_train_config();
  const std::string dir = ::testing::TempDir() + "/hycc_train_ckpt";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/a.ckpt";
  Trainer t(c, text, nullptr);
  t.train_step();
  t.save(path);

  TrainConfig wider = c;
  wider.model.channels = 32;
  Trainer other(wider, text, nullptr);
  EXPECT_THROW(other.load(path), InvalidArgument);
  TrainConfig reseeded = c;
  reseeded.seed = 7;
  Trainer other_seed(reseeded, text, nullptr);
  EXPECT_THROW(other_seed.load(path), InvalidArgument);

  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x55');
  }
  Trainer same(c, text, nullptr);
  EXPECT_THROW(same.load(path), DataError);
  EXPECT_THROW(same.load(dir + "/missing.ckpt"), DataError);

  // A checkpoint of format version 1 (before XXH3) is rejected by its version.
  t.save(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);  // after the magic
    f.put('\x01');
  }
  try {
    same.load(path);
    ADD_FAILURE() << "a version 1 checkpoint loaded";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("has version 1, this build reads version 2"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(TrainLoop, RejectsBatchNotDivisibleIntoMicroBatches) {
  const TextData text = small_text(5);
  TrainConfig c = tiny_train_config();
  c.micro_batches = 3;
  EXPECT_THROW(Trainer(c, text, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace hycc::train
