// hycc-train's gradient buckets as pieces for PowerSGD (bucket_pieces): for every bucket size,
// the pieces tile the bucket, and each matrix piece is whole rows of one of the model's
// matrices; a bucket that holds a whole matrix gives it whole.
#include <gtest/gtest.h>

#include "gpt_model.h"
#include "grad_sync.h"

namespace hycc::train {
namespace {

size_t elements(const std::vector<size_t>& shape) {
  size_t n = 1;
  for (const size_t d : shape) n *= d;
  return n;
}

TEST(TrainBucketPieces, PiecesTileTheBucketAndMatricesAreWholeRows) {
  GPTConfig config;
  config.max_seq_len = 16;
  config.num_layers = 2;
  config.num_heads = 4;
  config.channels = 16;
  config.vocab_size = 64;
  const GPT model(config, ModelPart{1, 0, 0, -1}, 3);
  const size_t total = model.grads_memory.size();
  for (const size_t bucket : {total, size_t{1000}, size_t{333}, size_t{40}, size_t{7}}) {
    size_t matrices = 0;
    for (size_t begin = 0; begin < total; begin += bucket) {
      const size_t count = std::min(bucket, total - begin);
      size_t at = begin;
      for (const std::vector<size_t>& piece : bucket_pieces(model, begin, count)) {
        ASSERT_FALSE(piece.empty());
        ASSERT_LE(piece.size(), 2u);
        if (piece.size() == 2) {
          ++matrices;
          // Rows of one matrix: [at, at + rows x cols) inside it, starting on a row.
          bool found = false;
          for (const TensorInfo& t : model.tensors) {
            found = found ||
                    (size_t(t.cols) == piece[1] && t.cols > 1 && at >= t.offset &&
                     at + elements(piece) <= t.offset + t.count && (at - t.offset) % piece[1] == 0);
          }
          EXPECT_TRUE(found) << "matrix piece at " << at << " of bucket " << bucket;
        }
        at += elements(piece);
      }
      EXPECT_EQ(at, begin + count) << "bucket " << bucket << " from " << begin;
    }
    if (bucket >= 40) {
      EXPECT_GT(matrices, 0u) << bucket;  // two rows of 16 fit
    }
  }
  // One bucket of everything: every matrix of the model whole, in order of offsets.
  size_t model_matrices = 0;
  for (const TensorInfo& t : model.tensors) model_matrices += t.cols > 1 ? 1 : 0;
  size_t whole = 0;
  for (const std::vector<size_t>& piece : bucket_pieces(model, 0, total)) {
    whole += piece.size() == 2 ? 1 : 0;
  }
  EXPECT_EQ(whole, model_matrices);
}

}  // namespace
}  // namespace hycc::train
