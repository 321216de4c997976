// Convergence with compressed gradients, at 4 ranks: distributed multi-output least squares with
// a known optimum. Each rank holds its own shard of a data set generated with a fixed seed (the
// shards differ in their feature means, as data-parallel shards of real data do), and runs
// gradient descent on W (32 x 16, a matrix PowerSGD compresses) and b (16, a 1-D tensor), the
// gradient averaged through the compressor. With error feedback every compressor ends within 1%
// of the uncompressed final loss; sign without error feedback ends measurably worse (more than
// that 1% band above it). PowerSGD also on the flat bucket [W | b] given without shapes, as the
// drop-in library hands it over (its square view).
#include <algorithm>
#include <cmath>

#include "coll_test_util.h"
#include "hycc/grad.h"

namespace hycc::test {
namespace {

constexpr size_t kIn = 32, kOut = 16, kSamples = 128;  // per rank
constexpr int kSteps = 300;
constexpr float kRate = 0.05f;

struct Shard {
  std::vector<float> x;  // kSamples x kIn
  std::vector<float> y;  // kSamples x kOut
};

float uniform(uint64_t h) { return float(double(h >> 40) / 16777216.0 * 2.0 - 1.0); }

// y = x W* + b* + noise, W* and b* the same on every rank; x has a rank-dependent mean.
Shard make_shard(int rank) {
  Shard s;
  s.x.resize(kSamples * kIn);
  s.y.resize(kSamples * kOut);
  for (size_t i = 0; i < kSamples; ++i) {
    for (size_t k = 0; k < kIn; ++k) {
      const uint64_t h = splitmix64((uint64_t(rank) << 48) ^ (i * kIn + k) ^ 0xda7a);
      s.x[i * kIn + k] = uniform(h) * 1.5f +
                         0.5f * float(rank % 2 == 0 ? 1 : -1) * float((k + size_t(rank)) % 3 == 0);
    }
    for (size_t o = 0; o < kOut; ++o) {
      double v = 0.3 * std::sin(double(o));  // b*
      for (size_t k = 0; k < kIn; ++k) {
        const double w = uniform(splitmix64(k * kOut + o)) / std::sqrt(double(kIn));  // W*
        v += double(s.x[i * kIn + k]) * w;
      }
      const uint64_t h = splitmix64((uint64_t(rank) << 48) ^ (i * kOut + o) ^ 0x4015e);
      s.y[i * kOut + o] = float(v + 0.5 * uniform(h));
    }
  }
  return s;
}

// Local loss sum_i ||x_i W + b - y_i||^2 / 2 and, if asked, its gradient / kSamples.
double local_loss(const Shard& s, const std::vector<float>& w, const std::vector<float>& b,
                  std::vector<float>* gw, std::vector<float>* gb) {
  if (gw) gw->assign(kIn * kOut, 0.0f);
  if (gb) gb->assign(kOut, 0.0f);
  double loss = 0;
  std::vector<float> r(kOut);
  for (size_t i = 0; i < kSamples; ++i) {
    for (size_t o = 0; o < kOut; ++o) {
      float v = b[o] - s.y[i * kOut + o];
      for (size_t k = 0; k < kIn; ++k) v += s.x[i * kIn + k] * w[k * kOut + o];
      r[o] = v;
      loss += 0.5 * double(v) * v;
    }
    if (!gw) continue;
    for (size_t k = 0; k < kIn; ++k) {
      for (size_t o = 0; o < kOut; ++o) (*gw)[k * kOut + o] += s.x[i * kIn + k] * r[o] / kSamples;
    }
    for (size_t o = 0; o < kOut; ++o) (*gb)[o] += r[o] / kSamples;
  }
  return loss;
}

// Final mean loss over all ranks' data after kSteps of gradient descent through `spec`.
// `flat`: W's and b's gradients in one bucket without shapes; `stats`: the last step's.
double train(const std::string& spec, const Shard& shard, bool flat = false,
             GradStepStats* stats = nullptr) {
  GradCompressor c(spec);
  std::vector<float> w(kIn * kOut, 0.0f), b(kOut, 0.0f), gw, gb, bucket;
  for (int step = 0; step < kSteps; ++step) {
    local_loss(shard, w, b, &gw, &gb);
    if (flat) {
      bucket = gw;
      bucket.insert(bucket.end(), gb.begin(), gb.end());
      const GradStepStats st =
          grad_allreduce(world(), c, {1}, {DType::kF32, bucket.size(), bucket.data()});
      if (stats) *stats = st;
      std::copy_n(bucket.begin(), gw.size(), gw.begin());
      std::copy(bucket.begin() + std::ptrdiff_t(gw.size()), bucket.end(), gb.begin());
    } else {
      grad_allreduce(world(), c, {1, {kIn, kOut}}, {DType::kF32, gw.size(), gw.data()});
      grad_allreduce(world(), c, {2, {kOut}}, {DType::kF32, gb.size(), gb.data()});
    }
    for (size_t i = 0; i < w.size(); ++i) w[i] -= kRate * gw[i];
    for (size_t i = 0; i < b.size(); ++i) b[i] -= kRate * gb[i];
  }
  double loss = local_loss(shard, w, b, nullptr, nullptr);
  MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, world().mpi());
  return loss / double(kSamples * size_t(world().size()));
}

TEST(GradConvergence, ErrorFeedbackReachesTheUncompressedLoss) {
  if (world().size() != 4) GTEST_SKIP() << "the convergence test runs at 4 ranks";
  const Shard shard = make_shard(world().rank());
  const double baseline = train("none", shard);
  for (const char* spec :
       {"ef+quant:bits=4", "ef+quant:bits=2", "ef+zfp:rate=8", "ef2+quant:bits=4",
        "ef2+quant:bits=2", "powersgd:rank=4", "topk:ratio=0.1", "sign"}) {
    const double loss = train(spec, shard);
    if (world().rank() == 0)
      std::printf("# %-20s final loss %.6f (none %.6f)\n", spec, loss, baseline);
    EXPECT_LE(loss, 1.01 * baseline)
        << spec << " ends at " << loss << ", uncompressed " << baseline;
  }
  // The flat bucket of 528 values: a 22 x 23 matrix at rank 4 (2.8x) and 22 values plain.
  GradStepStats flat_stats;
  const double flat = train("powersgd:rank=4", shard, true, &flat_stats);
  if (world().rank() == 0) {
    std::printf("# %-20s final loss %.6f, %zu of %zu bytes\n", "powersgd flat", flat,
                flat_stats.payload_bytes, flat_stats.elements * sizeof(float));
  }
  EXPECT_TRUE(flat_stats.compressed);
  EXPECT_EQ(flat_stats.payload_bytes, (22u * 4u + 4u * 23u + 22u) * sizeof(float));
  EXPECT_LE(flat, 1.01 * baseline) << "powersgd on the flat bucket ends at " << flat;
  const double no_ef = train("sign:ef=off", shard);
  if (world().rank() == 0) std::printf("# %-20s final loss %.6f\n", "sign:ef=off", no_ef);
  EXPECT_GT(no_ef, 1.01 * baseline)
      << "sign without error feedback ends at " << no_ef << ", uncompressed " << baseline;
}

}  // namespace
}  // namespace hycc::test
