// PowerSGD on a bucket of tensors (GradTensor::pieces), on thread "ranks": every matrix of the
// bucket compressed on its own and the rest allreduced plainly, as a plain model written out
// below computes it; a bucket of one piece is the tensor of that shape; the other compressors
// see the flat bucket; a tensor given without shape or pieces is its square view (flat=square) or
// one plain allreduce (flat=plain); bad layouts are invalid arguments.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/synthetic_data.h"
#include "grad/engine.h"
#include "grad/low_rank.h"
#include "grad/low_rank_plan.h"
#include "grad/method.h"
#include "grad/thread_exchange.h"
#include "hycc/error.h"

namespace hycc::grad {
namespace {

using Shapes = std::vector<std::vector<size_t>>;

// rank 4: 32 x 20 and 20 x (3 x 10) are compressed; the vector, the 8 x 8 matrix (64 < 2 x 4 x
// 16) and the 5 x 1 matrix (rank 1: 5 < 2 x 6) are not.
const Shapes kPieces = {{32, 20}, {37}, {8, 8}, {20, 3, 10}, {5, 1}};
constexpr size_t kCount = 640 + 37 + 64 + 600 + 5;
constexpr uint64_t kKey = 21;

std::vector<float> gradient(int rank, int step, size_t n = kCount) {
  std::vector<float> g =
      make_data(DataKind::kGaussian, n, 7000 + 100 * uint64_t(step) + uint64_t(rank));
  for (float& v : g) v += 0.25f * float(rank);
  return g;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// outputs[rank][step] and the residuals after the last step, of `steps` steps of `tensor`.
struct Steps {
  std::vector<std::vector<std::vector<float>>> out;
  std::vector<std::vector<float>> residual;
  std::vector<GradStepStats> stats;
};
Steps run_steps(const std::string& spec, const GradTensor& tensor, int p, int steps, ReduceOp op) {
  std::vector<Engine> engines;
  for (int r = 0; r < p; ++r) engines.emplace_back(spec);
  Steps result{std::vector<std::vector<std::vector<float>>>(size_t(p)),
               std::vector<std::vector<float>>(size_t(p)), std::vector<GradStepStats>(size_t(p))};
  ThreadGroup group(p);
  group.run([&](int rank) {
    ThreadExchange ex(group, rank);
    for (int s = 0; s < steps; ++s) {
      std::vector<float> g = gradient(rank, s);
      result.stats[size_t(rank)] =
          engines[size_t(rank)].allreduce(ex, tensor, {DType::kF32, g.size(), g.data()}, op);
      result.out[size_t(rank)].push_back(std::move(g));
    }
    const auto found = engines[size_t(rank)].states().find(tensor.key);
    if (found != engines[size_t(rank)].states().end()) {
      result.residual[size_t(rank)] = found->second.residual;
    }
  });
  return result;
}

// powersgd:rank=4 (warm start, error feedback) on kPieces, every rank at once, written out
// piece by piece: M_j = e_j + g_j; for each compressed piece i (seed step_seed(0, 0, i) for
// its first Q), P = sum_j M_j Q in rank order, orthonormalized, Q = op_j M_j^T P in rank
// order, out = P Q^T, e_j = M_j - out / (p for a sum); each other piece: out = op_j g_j, e_j = 0.
class BucketModel {
 public:
  BucketModel(int p, ReduceOp op) : p_(p), op_(op), e_(size_t(p), std::vector<float>(kCount)) {
    const GradSpec spec = parse_grad_spec("powersgd:rank=4");
    for (const std::vector<size_t>& shape : kPieces) {
      size_t count = 1;
      for (const size_t d : shape) count *= d;
      shapes_.push_back(low_rank_shape(spec, shape, count));
      counts_.push_back(count);
    }
  }

  std::vector<float> step(int s) {
    std::vector<std::vector<float>> m(static_cast<size_t>(p_));
    for (int j = 0; j < p_; ++j) {
      const std::vector<float> g = gradient(j, s);
      m[size_t(j)].resize(kCount);
      for (size_t k = 0; k < kCount; ++k) m[size_t(j)][k] = e_[size_t(j)][k] + g[k];
    }
    std::vector<float> out(kCount);
    size_t offset = 0;
    q_.resize(kPieces.size());
    for (size_t i = 0; i < kPieces.size(); ++i) {
      const LowRankShape& x = shapes_[i];
      const size_t n = counts_[i];
      const std::span<float> o(out.data() + offset, n);
      if (!x.compresses) {
        for (int j = 0; j < p_; ++j) {
          const std::vector<float> g = gradient(j, s);
          for (size_t k = 0; k < n; ++k) o[k] = j == 0 ? g[offset + k] : o[k] + g[offset + k];
          std::fill_n(e_[size_t(j)].begin() + std::ptrdiff_t(offset), n, 0.0f);
        }
        finish(o);
        offset += n;
        continue;
      }
      std::vector<float>& q = q_[i];
      if (q.empty()) {
        q.resize(x.r * x.cols);
        fill_normal(q, step_seed(0, 0, int(i)));  // the spec's seed, 0
      }
      std::vector<float> pm(x.rows * x.r), part(pm.size());
      for (int j = 0; j < p_; ++j) {
        multiply_mq(piece(m[size_t(j)], offset, n), x.rows, x.cols, q, x.r, part);
        for (size_t k = 0; k < pm.size(); ++k) pm[k] = j == 0 ? part[k] : pm[k] + part[k];
      }
      orthogonalize(pm, x.rows, x.r);
      std::vector<float> qsum(q.size()), qpart(q.size());
      for (int j = 0; j < p_; ++j) {
        multiply_mtp(piece(m[size_t(j)], offset, n), x.rows, x.cols, pm, x.r, qpart);
        for (size_t k = 0; k < q.size(); ++k) qsum[k] = j == 0 ? qpart[k] : qsum[k] + qpart[k];
      }
      finish(qsum);
      q = qsum;
      multiply_pqt(pm, q, x.rows, x.cols, x.r, o);
      const float scale = op_ == ReduceOp::kSum ? float(p_) : 1.0f;
      for (int j = 0; j < p_; ++j) {
        for (size_t k = 0; k < n; ++k) {
          e_[size_t(j)][offset + k] = m[size_t(j)][offset + k] - o[k] / scale;
        }
      }
      offset += n;
    }
    return out;
  }
  const std::vector<float>& residual(int rank) const { return e_[size_t(rank)]; }

 private:
  static std::span<const float> piece(const std::vector<float>& v, size_t offset, size_t n) {
    return {v.data() + offset, n};
  }
  void finish(std::span<float> sum) const {
    if (op_ == ReduceOp::kAverage) {
      for (float& v : sum) v /= float(p_);
    }
  }

  int p_;
  ReduceOp op_;
  std::vector<std::vector<float>> e_;
  std::vector<std::vector<float>> q_;
  std::vector<LowRankShape> shapes_;
  std::vector<size_t> counts_;
};

TEST(GradBucket, PowerSgdCompressesEachMatrixAsThePlainModel) {
  for (const int p : {1, 2, 3}) {
    for (const ReduceOp op : {ReduceOp::kAverage, ReduceOp::kSum}) {
      const Steps got = run_steps("powersgd:rank=4", GradTensor::bucket(kKey, kPieces), p, 3, op);
      BucketModel model(p, op);
      for (int s = 0; s < 3; ++s) {
        const std::vector<float> want = model.step(s);
        for (int r = 0; r < p; ++r) {
          EXPECT_TRUE(same_bits(got.out[size_t(r)][size_t(s)], want))
              << p << " ranks, step " << s << ", rank " << r;
        }
      }
      for (int r = 0; r < p; ++r) {
        EXPECT_TRUE(same_bits(got.residual[size_t(r)], model.residual(r)))
            << p << " ranks, rank " << r << ": residual";
      }
      // P: 32 x 4 + 20 x 4; Q: 4 x 20 + 4 x 30; plain: 37 + 64 + 5 floats.
      const GradStepStats& st = got.stats[0];
      EXPECT_TRUE(st.compressed);
      EXPECT_EQ(st.payload_bytes, (208u + 200u + 106u) * 4u);
      if (p > 1) {
        const size_t pp = size_t(p);
        EXPECT_EQ(st.wire_bytes, 2 * (pp - 1) * 208 * 4 / pp + 2 * (pp - 1) * 306 * 4 / pp);
      }
    }
  }
}

TEST(GradBucket, ABucketOfOnePieceIsTheTensorOfThatShape) {
  const std::vector<size_t> shape = {20, 3, 10};
  const auto flat = [&](const std::string& spec, const GradTensor& t) {
    std::vector<Engine> e;
    e.emplace_back(spec);
    e.emplace_back(spec);
    ThreadGroup group(2);
    std::vector<std::vector<float>> out(2);
    group.run([&](int rank) {
      ThreadExchange ex(group, rank);
      for (int s = 0; s < 3; ++s) {
        out[size_t(rank)] = gradient(rank, s, 600);
        e[size_t(rank)].allreduce(ex, t, {DType::kF32, 600, out[size_t(rank)].data()},
                                  ReduceOp::kAverage);
      }
    });
    return out[1];
  };
  for (const std::string spec : {"powersgd:rank=4", "powersgd:rank=2,warm_start=off"}) {
    EXPECT_TRUE(same_bits(flat(spec, GradTensor::bucket(3, {shape})), flat(spec, {3, shape})))
        << spec;
  }
  // The other compressors see the flat bucket: the same bits with pieces or without.
  for (const std::string spec : {"ef+quant:bits=4", "ef2+quant:bits=6", "topk:ratio=0.1", "sign"}) {
    EXPECT_TRUE(same_bits(flat(spec, GradTensor::bucket(3, {{10, 30}, {300}})), flat(spec, {3})))
        << spec;
  }
}

TEST(GradBucket, SquareViewIsTheMostSquareMatrixAndARemainder) {
  EXPECT_EQ(square_view(0), Shapes{});
  EXPECT_EQ(square_view(1), (Shapes{{1, 1}}));
  EXPECT_EQ(square_view(3), (Shapes{{1, 2}, {1}}));
  EXPECT_EQ(square_view(2304), (Shapes{{48, 48}}));
  EXPECT_EQ(square_view(2257), (Shapes{{47, 48}, {1}}));
  EXPECT_EQ(square_view(kCount), (Shapes{{36, 37}, {14}}));
  for (size_t n = 1; n < 5000; n += 7) {
    const Shapes v = square_view(n);
    const size_t rows = v[0][0], cols = v[0][1];
    const size_t rest = v.size() == 2 ? v[1][0] : 0;
    EXPECT_EQ(rows * cols + rest, n) << n;
    EXPECT_TRUE(cols * cols >= n && (cols - 1) * (cols - 1) < n) << n << ": cols " << cols;
    EXPECT_LT(rest, cols) << n;
    EXPECT_EQ(v.size() == 2, rest > 0) << n;  // no empty remainder
  }
}

TEST(GradBucket, AFlatTensorIsItsSquareViewOrPlain) {
  for (const int p : {1, 2, 3}) {
    const GradTensor flat(kKey), vector(kKey, {kCount});
    const Steps got = run_steps("powersgd:rank=4", flat, p, 3, ReduceOp::kAverage);
    const Steps want = run_steps("powersgd:rank=4", GradTensor::bucket(kKey, square_view(kCount)),
                                 p, 3, ReduceOp::kAverage);
    for (int r = 0; r < p; ++r) {
      for (int s = 0; s < 3; ++s) {
        EXPECT_TRUE(same_bits(got.out[size_t(r)][size_t(s)], want.out[size_t(r)][size_t(s)]))
            << p << " ranks, step " << s << ", rank " << r;
      }
      EXPECT_TRUE(same_bits(got.residual[size_t(r)], want.residual[size_t(r)])) << p << " ranks";
    }
    // P: 36 x 4, Q: 4 x 37, the 14 values left over plain: 306 floats for 1346.
    EXPECT_TRUE(got.stats[0].compressed);
    EXPECT_EQ(got.stats[0].payload_bytes, (144u + 148u + 14u) * 4u);
    // flat=plain, and a tensor whose shape says it is a vector: one plain allreduce, no state.
    for (const auto& [spec, tensor] :
         {std::pair{"powersgd:rank=4,flat=plain", flat}, std::pair{"powersgd:rank=4", vector}}) {
      const Steps plain = run_steps(spec, tensor, p, 2, ReduceOp::kAverage);
      const Steps none = run_steps("none", tensor, p, 2, ReduceOp::kAverage);
      EXPECT_FALSE(plain.stats[0].compressed) << spec;
      EXPECT_TRUE(plain.residual[0].empty()) << spec;
      EXPECT_TRUE(same_bits(plain.out[0][1], none.out[0][1])) << spec;
    }
  }
}

// The first Q comes from the spec's seed, not from the key: ranks that give different keys for
// the same tensor (the policy path and the drop-in library key by buffer address) still draw
// the same Q, and get the results of a common key bit for bit.
TEST(GradBucket, RanksWithDifferentKeysDrawTheSameQ) {
  for (const std::string spec : {"powersgd:rank=4", "powersgd:rank=2,warm_start=off"}) {
    std::vector<std::vector<float>> common(2), own_keys(2);
    for (const bool differ : {false, true}) {
      std::vector<Engine> engines;
      engines.emplace_back(spec);
      engines.emplace_back(spec);
      ThreadGroup group(2);
      group.run([&](int rank) {
        ThreadExchange ex(group, rank);
        const uint64_t key = differ ? 1000 + 77 * uint64_t(rank) : kKey;
        std::vector<float>& out = (differ ? own_keys : common)[size_t(rank)];
        for (int s = 0; s < 3; ++s) {
          out = gradient(rank, s);
          engines[size_t(rank)].allreduce(ex, GradTensor::bucket(key, kPieces),
                                          {DType::kF32, out.size(), out.data()},
                                          ReduceOp::kAverage);
        }
      });
    }
    EXPECT_TRUE(same_bits(own_keys[0], common[0])) << spec;
    EXPECT_TRUE(same_bits(own_keys[1], own_keys[0])) << spec;
  }
}

TEST(GradBucket, BadLayoutsAreInvalidArguments) {
  Engine e("powersgd:rank=4");
  ThreadGroup group(1);
  ThreadExchange ex(group, 0);
  std::vector<float> g(100, 1.0f);
  const TensorView view{DType::kF32, g.size(), g.data()};
  GradTensor both = GradTensor::bucket(1, {{10, 10}});
  both.shape = {10, 10};
  const std::pair<GradTensor, const char*> bad[] = {
      {both, "both a shape and pieces"},
      {GradTensor::bucket(1, {{10, 5}, {40}}), "hold 90 elements, the tensor 100"},
      {GradTensor::bucket(1, {{10, 10}, {1}}), "more than the tensor's 100"},
      {GradTensor::bucket(1, {{10, 10}, {}}), "piece 1 of key 1 has no dimensions"},
      {GradTensor::bucket(1, {{0, 4}, {100}}), "piece 0 of key 1 holds no elements"},
      {GradTensor{1, {3, 3}}, "holds 9 elements"}};
  for (const auto& [tensor, message] : bad) {
    try {
      e.allreduce(ex, tensor, view, ReduceOp::kSum);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(e.states().size(), 0u);  // nothing ran
}

}  // namespace
}  // namespace hycc::grad
