// Gradient compressors run on thread "ranks" (ThreadExchange): the residual bookkeeping, the
// save/load round trip, determinism, and bit-identical results on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/synthetic_data.h"
#include "grad/engine.h"
#include "grad/thread_exchange.h"
#include "hycc/error.h"
#include "hycc/grad.h"

namespace hycc::grad {
namespace {

// Two tensors per step: a 32 x 20 matrix (PowerSGD compresses it: 640 >= 2 x 4 x 52) and a
// 1-D tensor of 37 elements.
const GradTensor kMatrix{11, {32, 20}};
const GradTensor kVector{12, {37}};
size_t count_of(const GradTensor& t) { return t.shape.size() == 1 ? 37 : t.shape[0] * t.shape[1]; }

// Gradient of `rank` at `step`: gaussian with a rank-dependent offset.
std::vector<float> gradient(const GradTensor& t, int rank, int step) {
  std::vector<float> g = make_data(DataKind::kGaussian, count_of(t),
                                   1000 * t.key + 100 * uint64_t(step) + uint64_t(rank));
  for (float& v : g) v += 0.25f * float(rank);
  return g;
}

// out[rank][step][tensor] of `steps` steps from step `first`, on p ranks with engines[rank].
using Outputs = std::vector<std::vector<std::vector<std::vector<float>>>>;
Outputs run(std::vector<Engine>& engines, int first, int steps, ReduceOp op) {
  const int p = int(engines.size());
  ThreadGroup group(p);
  Outputs out(static_cast<size_t>(p));
  group.run([&](int rank) {
    ThreadExchange ex(group, rank);
    for (int s = first; s < first + steps; ++s) {
      std::vector<std::vector<float>> step_out;
      for (const GradTensor* t : {&kMatrix, &kVector}) {
        std::vector<float> g = gradient(*t, rank, s);
        engines[size_t(rank)].allreduce(ex, *t, {DType::kF32, g.size(), g.data()}, op);
        step_out.push_back(std::move(g));
      }
      out[size_t(rank)].push_back(std::move(step_out));
    }
  });
  return out;
}

std::vector<Engine> make_engines(const std::string& spec, int p) {
  std::vector<Engine> e;
  for (int r = 0; r < p; ++r) e.emplace_back(spec);
  return e;
}

const std::vector<std::string>& all_specs() {
  static const std::vector<std::string> specs = {"none",
                                                 "ef+quant:bits=4",
                                                 "ef+quant:bits=2,round=stochastic",
                                                 "ef+zfp:rate=4",
                                                 "powersgd:rank=4",
                                                 "powersgd:rank=2,warm_start=off",
                                                 "topk:ratio=0.1",
                                                 "topk:count=5,ef=off",
                                                 "sign",
                                                 "sign:ef=off",
                                                 "ef2+quant:bits=4",
                                                 "ef2+quant:bits=2,round=stochastic",
                                                 "ef2+zfp:rate=4",
                                                 "ef2+mpc"};
  return specs;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class GradAllSpecs : public ::testing::TestWithParam<std::string> {};

TEST_P(GradAllSpecs, IdenticalOnEveryRankAndDeterministic) {
  for (const int p : {1, 3}) {
    std::vector<Engine> a = make_engines(GetParam(), p), b = make_engines(GetParam(), p);
    const Outputs oa = run(a, 0, 4, ReduceOp::kAverage), ob = run(b, 0, 4, ReduceOp::kAverage);
    for (int r = 0; r < p; ++r) {
      for (size_t s = 0; s < oa[0].size(); ++s) {
        for (size_t t = 0; t < 2; ++t) {
          EXPECT_TRUE(same_bits(oa[size_t(r)][s][t], oa[0][s][t]))
              << "p " << p << " rank " << r << " step " << s << " tensor " << t;
          EXPECT_TRUE(same_bits(oa[size_t(r)][s][t], ob[size_t(r)][s][t]))
              << "p " << p << " rank " << r << " step " << s << " tensor " << t;
        }
      }
      EXPECT_EQ(serialize_state(a[0].spec().canonical, a[size_t(r)].states()),
                serialize_state(b[0].spec().canonical, b[size_t(r)].states()));
    }
  }
}

// A run that saves after step 3 and loads into fresh engines continues with the same bits as
// the run that goes on.
// Two communicators of the same ranks, each stepping on a thread of its own at the same time,
// share each rank's engine (as a program that reduces gradients on two communicators from two
// threads shares the policy's compressor): every step, on keys of its own, gives the bits it
// gives when the two run one after the other, so no step sees another's scratch or state.
TEST_P(GradAllSpecs, ConcurrentStepsOnOneEngineKeepTheirOwnBits) {
  const int p = 2, steps = 4;
  const GradTensor second{21, {32, 20}};
  const auto steps_of = [&](std::vector<Engine>& engines, const GradTensor& t, int shift) {
    ThreadGroup group(p);
    std::vector<std::vector<std::vector<float>>> out(static_cast<size_t>(p));
    group.run([&](int rank) {
      ThreadExchange ex(group, rank);
      for (int s = 0; s < steps; ++s) {
        std::vector<float> g = gradient(kMatrix, rank, s + shift);
        engines[size_t(rank)].allreduce(ex, t, {DType::kF32, g.size(), g.data()}, ReduceOp::kSum);
        out[size_t(rank)].push_back(std::move(g));
      }
    });
    return out;
  };
  std::vector<Engine> alone = make_engines(GetParam(), p), shared = make_engines(GetParam(), p);
  const auto want_a = steps_of(alone, kMatrix, 0), want_b = steps_of(alone, second, 7);
  std::vector<std::vector<std::vector<float>>> got_a, got_b;
  std::thread other([&] { got_b = steps_of(shared, second, 7); });
  got_a = steps_of(shared, kMatrix, 0);
  other.join();
  for (int r = 0; r < p; ++r) {
    for (int s = 0; s < steps; ++s) {
      EXPECT_TRUE(same_bits(got_a[size_t(r)][size_t(s)], want_a[size_t(r)][size_t(s)]))
          << "rank " << r << " step " << s;
      EXPECT_TRUE(same_bits(got_b[size_t(r)][size_t(s)], want_b[size_t(r)][size_t(s)]))
          << "rank " << r << " step " << s;
    }
    EXPECT_EQ(serialize_state(GetParam(), shared[size_t(r)].states()),
              serialize_state(GetParam(), alone[size_t(r)].states()));
  }
}

TEST_P(GradAllSpecs, SaveLoadContinuesExactly) {
  const int p = 2;
  std::vector<Engine> a = make_engines(GetParam(), p);
  run(a, 0, 3, ReduceOp::kAverage);
  std::vector<std::vector<std::byte>> blobs;
  for (const Engine& e : a) blobs.push_back(serialize_state(e.spec().canonical, e.states()));
  std::vector<Engine> b = make_engines(GetParam(), p);
  for (int r = 0; r < p; ++r) {
    b[size_t(r)].states() = deserialize_state(b[size_t(r)].spec().canonical, blobs[size_t(r)]);
  }
  const Outputs oa = run(a, 3, 3, ReduceOp::kAverage), ob = run(b, 3, 3, ReduceOp::kAverage);
  for (int r = 0; r < p; ++r) {
    for (size_t s = 0; s < 3; ++s) {
      for (size_t t = 0; t < 2; ++t) {
        EXPECT_TRUE(same_bits(oa[size_t(r)][s][t], ob[size_t(r)][s][t]))
            << "rank " << r << " step " << 3 + s << " tensor " << t;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, GradAllSpecs, ::testing::ValuesIn(all_specs()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name;
                           for (const char c : param_info.param) {
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           }
                           return name;
                         });

// Residual bookkeeping with op sum on p ranks: over T steps, what reached the result plus what
// is left in the residuals equals what went in,
//   sum_t out_t + sum_ranks e_worker + e_server = sum_t sum_ranks g_t,
// since each rank's stream decodes to acc - e_new and (sign) the server's to s - e_s_new.
// Float32 arithmetic makes this hold up to rounding: per step and element there are at most
// p + 3 roundings (acc = e + g, e = acc - decoded, p - 1 additions of the rank-order sum, and for
// sign the server's s + e_s and s - decoded), each at most u = 2^-24 times a magnitude bounded
// by m_t = sum_ranks (|acc| + |e|) + |out| + |e_s|. The tolerance 2 (p + 3) u sum_t m_t takes a
// factor 2 for partial sums; a lost or double-counted residual is off by the compression error,
// orders of magnitude more.
void check_bookkeeping(const std::string& spec, int p) {
  std::vector<Engine> engines = make_engines(spec, p);
  const int steps = 6;
  const size_t n = count_of(kMatrix);
  const double u = std::ldexp(1.0, -24);
  std::vector<double> in(n, 0), got(n, 0), tol(n, 0);
  std::vector<std::vector<float>> prev_e(size_t(p), std::vector<float>(n, 0.0f));
  ThreadGroup group(p);
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<float>> outs(static_cast<size_t>(p));
    group.run([&](int rank) {
      ThreadExchange ex(group, rank);
      std::vector<float> g = gradient(kMatrix, rank, s);
      engines[size_t(rank)].allreduce(ex, kMatrix, {DType::kF32, n, g.data()}, ReduceOp::kSum);
      outs[size_t(rank)] = std::move(g);
    });
    std::vector<float> server(n, 0.0f);
    for (int r = 0; r < p; ++r) {
      const TensorState& st = engines[size_t(r)].states().at(kMatrix.key);
      const ChunkRange c = chunk_range(n, p, r);
      for (size_t i = 0; i < st.aux.size(); ++i) server[c.offset + i] = st.aux[i];
    }
    for (size_t i = 0; i < n; ++i) {
      double m = std::fabs(double(outs[0][i])) + std::fabs(double(server[i]));
      for (int r = 0; r < p; ++r) {
        const float g = gradient(kMatrix, r, s)[i];
        const std::vector<float>& e = engines[size_t(r)].states().at(kMatrix.key).residual;
        in[i] += g;
        m += std::fabs(double(prev_e[size_t(r)][i]) + g) + std::fabs(double(e[i]));
        prev_e[size_t(r)][i] = e[i];
      }
      got[i] += outs[0][i];
      tol[i] += 2.0 * (p + 3) * u * m;
    }
    if (s == steps - 1) {
      for (size_t i = 0; i < n; ++i) {
        got[i] += server[i];
        for (int r = 0; r < p; ++r) got[i] += prev_e[size_t(r)][i];
      }
    }
  }
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(got[i] - in[i]);
    if (!(err <= tol[i])) ++bad;
    worst = std::max(worst, err / tol[i]);
  }
  EXPECT_EQ(bad, 0u) << spec << " p " << p << ": worst error / tolerance " << worst;
}

TEST(GradBookkeeping, SentPlusResidualEqualsInput) {
  for (const char* spec : {"ef+quant:bits=4", "ef+quant:bits=2,round=stochastic", "ef+zfp:rate=4",
                           "topk:ratio=0.1", "topk:count=1", "sign", "ef2+quant:bits=4",
                           "ef2+quant:bits=2,round=stochastic", "ef2+zfp:rate=4"}) {
    for (const int p : {1, 3}) check_bookkeeping(spec, p);
  }
}

// The bookkeeping is not vacuous: the compressors do lose information each step (the residual
// is a sizable part of the input), and PowerSGD leaves its error in the residual too.
TEST(GradBookkeeping, ResidualsAreNotTrivial) {
  for (const char* spec :
       {"ef+quant:bits=2", "topk:ratio=0.1", "sign", "powersgd:rank=1", "ef2+quant:bits=2"}) {
    std::vector<Engine> e = make_engines(spec, 1);
    run(e, 0, 1, ReduceOp::kAverage);
    const std::vector<float>& res = e[0].states().at(kMatrix.key).residual;
    const std::vector<float> g = gradient(kMatrix, 0, 0);
    double rn = 0, gn = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      rn += double(res[i]) * res[i];
      gn += double(g[i]) * g[i];
    }
    EXPECT_GT(rn, 1e-3 * gn) << spec;
    EXPECT_LT(rn, gn) << spec;
  }
}

TEST(GradState, PowerSgdFallsBackForVectorsAndSmallMatrices) {
  std::vector<Engine> e = make_engines("powersgd:rank=4", 1);
  ThreadGroup group(1);
  ThreadExchange ex(group, 0);
  std::vector<float> v = gradient(kVector, 0, 0), want = v;
  GradStepStats st =
      e[0].allreduce(ex, kVector, {DType::kF32, v.size(), v.data()}, ReduceOp::kAverage);
  EXPECT_FALSE(st.compressed);
  EXPECT_TRUE(same_bits(v, want));     // one rank: the plain allreduce is the identity
  const GradTensor small{13, {8, 8}};  // 64 < 2 x 4 x 16
  std::vector<float> m(64, 1.0f);
  EXPECT_FALSE(
      e[0].allreduce(ex, small, {DType::kF32, 64, m.data()}, ReduceOp::kAverage).compressed);
  std::vector<float> big = gradient(kMatrix, 0, 0);
  st = e[0].allreduce(ex, kMatrix, {DType::kF32, big.size(), big.data()}, ReduceOp::kAverage);
  EXPECT_TRUE(st.compressed);
  EXPECT_EQ(st.payload_bytes, (32u + 20u) * 4u * 4u);
}

// powersgd:start=2: the first two steps of a key are plain allreduces (no state), the third is
// the first step of a compressor without start.
TEST(GradState, PowerSgdStartSendsTheFirstStepsUncompressed) {
  std::vector<Engine> late = make_engines("powersgd:rank=4,start=2", 2);
  std::vector<Engine> plain = make_engines("none", 2);
  std::vector<Engine> fresh = make_engines("powersgd:rank=4", 2);
  const Outputs warm = run(late, 0, 3, ReduceOp::kAverage);
  const Outputs none = run(plain, 0, 2, ReduceOp::kAverage);
  const Outputs first = run(fresh, 2, 1, ReduceOp::kAverage);
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < 2; ++s) {
      EXPECT_TRUE(same_bits(warm[size_t(r)][size_t(s)][0], none[size_t(r)][size_t(s)][0]))
          << "rank " << r << " step " << s;
    }
    EXPECT_TRUE(same_bits(warm[size_t(r)][2][0], first[size_t(r)][0][0])) << "rank " << r;
    EXPECT_FALSE(same_bits(warm[size_t(r)][2][0], none[size_t(r)][1][0]));
  }
}

TEST(GradState, SixteenBitGradients) {
  for (const DType d : {DType::kBF16, DType::kF16}) {
    std::vector<Engine> e = make_engines("ef+quant:bits=8", 1);
    ThreadGroup group(1);
    ThreadExchange ex(group, 0);
    std::vector<uint16_t> g(37, 0x3c00);  // f16 1.0, bf16 a small value: any bits are fine
    const GradStepStats st = e[0].allreduce(ex, kVector, {d, g.size(), g.data()}, ReduceOp::kSum);
    EXPECT_EQ(st.elements, 37u);
    EXPECT_TRUE(st.compressed);
  }
}

TEST(GradState, MisuseIsAnInvalidArgument) {
  std::vector<Engine> e = make_engines("topk:ratio=0.5", 1);
  ThreadGroup group(1);
  ThreadExchange ex(group, 0);
  std::vector<float> g(37, 1.0f);
  const GradTensor wrong_shape{1, {6, 6}};
  EXPECT_THROW(e[0].allreduce(ex, wrong_shape, {DType::kF32, 37, g.data()}, ReduceOp::kSum),
               InvalidArgument);
  e[0].allreduce(ex, kVector, {DType::kF32, 37, g.data()}, ReduceOp::kSum);
  // The same key with another size.
  EXPECT_THROW(e[0].allreduce(ex, kVector, {DType::kF32, 36, g.data()}, ReduceOp::kSum),
               InvalidArgument);
  GradCompressor c("sign");
  const std::vector<std::byte> blob = c.save();
  GradCompressor other("sign:ef=off");
  EXPECT_THROW(other.load(blob), InvalidArgument);
}

TEST(GradState, CorruptBlobsAreRejected) {
  std::vector<Engine> e = make_engines("sign", 2);
  run(e, 0, 2, ReduceOp::kAverage);
  const std::string spec = e[0].spec().canonical;
  const std::vector<std::byte> blob = serialize_state(spec, e[1].states());
  EXPECT_EQ(serialize_state(spec, deserialize_state(spec, blob)), blob);
  for (size_t cut : {size_t{0}, size_t{3}, blob.size() / 2, blob.size() - 1}) {
    EXPECT_THROW(deserialize_state(spec, std::span(blob).first(cut)), CorruptStream) << cut;
  }
  for (size_t at = 0; at < blob.size(); at += 7) {
    std::vector<std::byte> bad = blob;
    bad[at] ^= std::byte{0x10};
    EXPECT_ANY_THROW(deserialize_state(spec, bad)) << at;
  }
  std::vector<std::byte> version_one = blob;
  version_one[4] = std::byte{1};  // the version after the magic: 1 had another checksum
  try {
    deserialize_state(spec, version_one);
    ADD_FAILURE() << "a version 1 state loaded";
  } catch (const CorruptStream& error) {
    EXPECT_NE(std::string(error.what()).find("version 1, this build reads version 2"),
              std::string::npos)
        << error.what();
  }
}

// A state saved under the canonical spec of a version before a parameter was added (powersgd's
// flat) loads into the compressor that spec names now; another compressor's does not.
TEST(GradState, StateSavedUnderAnOlderCanonicalSpecLoads) {
  std::vector<Engine> e = make_engines("powersgd:rank=4", 1);
  run(e, 0, 2, ReduceOp::kAverage);
  const std::vector<std::byte> old = serialize_state(
      "powersgd:rank=4,min_compression=2,warm_start=on,ef=on,seed=0,start=0", e[0].states());
  const std::string now = e[0].spec().canonical;
  EXPECT_EQ(serialize_state(now, deserialize_state(now, old)), serialize_state(now, e[0].states()));
  GradCompressor c("powersgd:rank=4");
  c.load(old);
  EXPECT_EQ(c.tensors(), e[0].states().size());
  EXPECT_EQ(c.residual(kMatrix.key), e[0].states().at(kMatrix.key).residual);
  EXPECT_THROW(GradCompressor("powersgd:rank=4,flat=plain").load(old), InvalidArgument);
  EXPECT_THROW(GradCompressor("powersgd:rank=2").load(old), InvalidArgument);
}

TEST(GradState, CompressorLifecycle) {
  GradCompressor c("topk:count=2");
  EXPECT_EQ(c.tensors(), 0u);
  EXPECT_TRUE(c.residual(5).empty());
  GradCompressor d("topk:count=2");
  d.load(c.save());
  EXPECT_EQ(d.tensors(), 0u);
  d.reset();
  d.reset(3);
  EXPECT_EQ(d.tensors(), 0u);
}

}  // namespace
}  // namespace hycc::grad

namespace hycc::grad {
namespace {

// A step with an overflowed gradient (as under fp16 loss scaling) shows the overflow on every
// rank, so that the loss scaler skips it, and does not poison the steps after it.
TEST_P(GradAllSpecs, NonFiniteStepDoesNotPoisonTheNext) {
  const int p = 2;
  std::vector<Engine> engines = make_engines(GetParam(), p);
  std::vector<std::vector<float>> overflowed(p), next(p);
  ThreadGroup group(p);
  group.run([&](int rank) {
    ThreadExchange ex(group, rank);
    for (int s = 0; s < 2; ++s) {
      for (const GradTensor* t : {&kMatrix, &kVector}) {
        std::vector<float> g = gradient(*t, rank, s);
        if (s == 0 && rank == 0) {
          g[3] = INFINITY;
          g[5] = NAN;
        }
        engines[size_t(rank)].allreduce(ex, *t, {DType::kF32, g.size(), g.data()},
                                        ReduceOp::kAverage);
        if (t == &kMatrix) (s == 0 ? overflowed : next)[size_t(rank)] = g;
      }
    }
  });
  for (int r = 0; r < p; ++r) {
    const std::vector<float>& o = overflowed[size_t(r)];
    EXPECT_FALSE(std::all_of(o.begin(), o.end(), [](float x) { return std::isfinite(x); }))
        << GetParam() << " rank " << r;
    for (size_t i = 0; i < next[size_t(r)].size(); ++i) {
      ASSERT_TRUE(std::isfinite(next[size_t(r)][i])) << GetParam() << " rank " << r << " i " << i;
    }
  }
}

// Top-k sends the values that are not finite first (they rank above every finite one); with more
// of them than it sends, those left must not stay in the residual.
TEST(GradState, TopKWithMoreNonFiniteValuesThanItSends) {
  std::vector<Engine> engines = make_engines("topk:count=5", 2);
  std::vector<float> next;
  ThreadGroup group(2);
  group.run([&](int rank) {
    ThreadExchange ex(group, rank);
    for (int s = 0; s < 2; ++s) {
      std::vector<float> g = gradient(kVector, rank, s);
      if (s == 0 && rank == 1) {
        for (size_t i = 10; i < 20; ++i) g[i] = i % 2 ? INFINITY : -NAN;
      }
      engines[size_t(rank)].allreduce(ex, kVector, {DType::kF32, g.size(), g.data()},
                                      ReduceOp::kSum);
      if (s == 1 && rank == 1) next = g;
    }
  });
  for (size_t i = 0; i < next.size(); ++i) EXPECT_TRUE(std::isfinite(next[i])) << i;
  const std::vector<float>& r = engines[1].states().at(kVector.key).residual;
  EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](float x) { return std::isfinite(x); }));
}

// PowerSGD after an overflowed step starts again as a fresh compressor: the residual of a
// compressed matrix is all non-finite (one value spreads through the products), and Q, not
// finite either, is drawn again as on the first step, not left at zero.
TEST(GradState, PowerSgdAfterAnOverflowStartsAfresh) {
  const int p = 2;
  std::vector<Engine> overflowed = make_engines("powersgd:rank=4", p);
  std::vector<Engine> fresh = make_engines("powersgd:rank=4", p);
  std::vector<std::vector<float>> a(p), b(p);
  ThreadGroup group(p);
  group.run([&](int rank) {
    ThreadExchange ex(group, rank);
    std::vector<float> g = gradient(kMatrix, rank, 0);
    g[7] = INFINITY;
    overflowed[size_t(rank)].allreduce(ex, kMatrix, {DType::kF32, g.size(), g.data()},
                                       ReduceOp::kAverage);
    a[size_t(rank)] = b[size_t(rank)] = gradient(kMatrix, rank, 1);
    overflowed[size_t(rank)].allreduce(ex, kMatrix, {DType::kF32, g.size(), a[size_t(rank)].data()},
                                       ReduceOp::kAverage);
    fresh[size_t(rank)].allreduce(ex, kMatrix, {DType::kF32, g.size(), b[size_t(rank)].data()},
                                  ReduceOp::kAverage);
  });
  for (int r = 0; r < p; ++r) EXPECT_TRUE(same_bits(a[size_t(r)], b[size_t(r)])) << r;
}

}  // namespace
}  // namespace hycc::grad
