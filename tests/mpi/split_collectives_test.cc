// The split collectives of the drop-in library's nonblocking calls (coll/split_collectives.h)
// against hycc's blocking collectives with the same codec, bit for bit: allreduce against the
// compress-once algorithm (the same streams summed in the same order), broadcast, allgather and
// alltoall against the chain, ring and pairwise algorithms (one stream per block at these sizes),
// reduce_scatter against its definition (each contribution compressed once, the own exact) and,
// with error feedback, against grad_reduce_scatter,
// with an infinity and a NaN in one rank's input of 100003 values (they fit the slot's room). An
// input a quarter infinite overflows a zfp slot: that rank's block decodes as NaN on every rank;
// quant keeps such values in its blocks, so its slot never overflows.
// Slots and split_pays: codecs whose size depends on the data have no slot.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "coll/coll_internal.h"
#include "coll/split_collectives.h"
#include "coll_test_util.h"
#include "grad/engine.h"

namespace hycc::test {
namespace {

const char* const kCodecs[] = {"bf16", "quant:bits=4", "quant:bits=8,block=128", "zfp:rate=8"};
const size_t kCounts[] = {1, 1000, 100003};

std::vector<float> input(size_t n, int rank, bool specials) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(0.001f * float(i) + float(rank)) * 3;
  if (specials && rank == 0) {
    x[n / 2] = std::numeric_limits<float>::infinity();
    x[n - 1] = std::numeric_limits<float>::quiet_NaN();
  }
  return x;
}

CollectiveOptions blocking_options(const CodecConfig& codec, Algorithm algorithm) {
  CollectiveOptions o;
  o.codec = codec;
  o.algorithm = algorithm;
  o.threshold_bytes = 0;
  return o;
}

void finish(coll::SplitCollective& s) {
  MPI_Wait(s.request(), MPI_STATUS_IGNORE);
  s.finish();
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
      << what << " on rank " << world().rank();
}

// Runs f(codec, n, specials, what) for every codec, count and with or without an infinity and a
// NaN in rank 0's input; special values only in large tensors (zfp's exception list for two
// takes more than 1/16 of a small tensor).
template <typename F>
void for_each_case(F&& f) {
  for (const char* spec : kCodecs) {
    const CodecConfig codec = CodecConfig::parse(spec);
    for (size_t n : kCounts) {
      for (bool specials : {false, true}) {
        if (specials && n < 10000) continue;
        f(codec, n, specials,
          std::string(spec) + " n " + std::to_string(n) + (specials ? " with specials" : ""));
      }
    }
  }
}

TEST(SplitCollectives, EqualTheBlockingCollectivesBitForBit) {
  const int p = world().size(), r = world().rank();
  if (p < 2) GTEST_SKIP() << "one rank: the blocking collectives copy, the library does not split";
  const MPI_Comm comm = world().mpi();
  for_each_case([&](const CodecConfig& codec, size_t n, bool specials, const std::string& what) {
    const std::vector<float> x = input(n, r, specials);
    const auto pn = n * static_cast<size_t>(p);

    std::vector<float> split(n), blocking(n);
    auto s = coll::start_allreduce(comm, x.data(), split.data(), n, codec);
    finish(*s);
    allreduce(world(), ConstTensorView{DType::kF32, n, x.data()},
              TensorView{DType::kF32, n, blocking.data()}, ReduceOp::kSum,
              blocking_options(codec, Algorithm::kCompressOnce));
    expect_same_bits(split, blocking, "allreduce " + what);

    std::vector<float> b = x, bb = x;
    s = coll::start_broadcast(comm, b.data(), n, p - 1, codec);
    finish(*s);
    broadcast(world(), TensorView{DType::kF32, n, bb.data()}, p - 1,
              blocking_options(codec, Algorithm::kAuto));
    expect_same_bits(b, bb, "broadcast " + what);

    std::vector<float> g(pn), gb(pn);
    s = coll::start_allgather(comm, x.data(), g.data(), n, codec);
    finish(*s);
    allgather(world(), ConstTensorView{DType::kF32, n, x.data()},
              TensorView{DType::kF32, pn, gb.data()}, blocking_options(codec, Algorithm::kAuto));
    expect_same_bits(g, gb, "allgather " + what);

    std::vector<float> send(pn);
    for (size_t i = 0; i < pn; ++i) send[i] = x[i % n] + float(i / n);
    std::vector<float> a(pn), ab(pn);
    s = coll::start_alltoall(comm, send.data(), a.data(), n, codec);
    finish(*s);
    alltoall(world(), ConstTensorView{DType::kF32, pn, send.data()},
             TensorView{DType::kF32, pn, ab.data()}, blocking_options(codec, Algorithm::kAuto));
    expect_same_bits(a, ab, "alltoall " + what);

    // reduce_scatter: the chunks of every rank's input compressed once, summed in rank order,
    // this rank's own exact.
    const std::vector<float> mine = input(pn, r, specials);
    std::vector<float> rs(n), want(n), part(n);
    s = coll::start_reduce_scatter(comm, mine.data(), rs.data(), n, codec);
    finish(*s);
    for (int j = 0; j < p; ++j) {
      const std::vector<float> theirs = input(pn, j, specials);
      const ConstTensorView chunk{DType::kF32, n, theirs.data() + size_t(r) * n};
      if (j == r) {
        std::memcpy(part.data(), chunk.data, n * sizeof(float));
      } else {
        decompress(compress(codec, chunk), TensorView{DType::kF32, n, part.data()});
      }
      for (size_t i = 0; i < n; ++i) want[i] = j == 0 ? part[i] : want[i] + part[i];
    }
    expect_same_bits(rs, want, "reduce_scatter " + what);
  });
}

TEST(SplitCollectives, AnOverflowedSlotDecodesAsNaN) {
  const int p = world().size(), r = world().rank();
  if (p < 2) GTEST_SKIP() << "one rank";
  const size_t n = 4096;
  std::vector<float> x = input(n, r, false);
  if (r == 0) {
    for (size_t i = 0; i < n; i += 4) x[i] = std::numeric_limits<float>::infinity();
  }
  std::vector<float> g(n * static_cast<size_t>(p));
  auto s =
      coll::start_allgather(world().mpi(), x.data(), g.data(), n, CodecConfig::parse("zfp:rate=8"));
  finish(*s);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(g[i])) << "element " << i;
  for (size_t i = n; i < g.size(); ++i) ASSERT_TRUE(std::isfinite(g[i])) << "element " << i;
  // quant: the infinities stay in rank 0's blocks (one kind per block), the rest finite.
  s = coll::start_allgather(world().mpi(), x.data(), g.data(), n,
                            CodecConfig::parse("quant:bits=4"));
  finish(*s);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(i % 4 == 0 ? g[i] == std::numeric_limits<float>::infinity() : std::isfinite(g[i]))
        << "element " << i;
  }
  for (size_t i = n; i < g.size(); ++i) ASSERT_TRUE(std::isfinite(g[i])) << "element " << i;
}

// A split allreduce started with feedback (x, out, the feedback: residuals and seeds), and how
// it is run to its end.
using StartWithFeedback = std::function<std::unique_ptr<coll::SplitCollective>(
    const float*, float*, const coll::Feedback&)>;

// Three steps of `split`'s feedback_step running `start`, each against grad_allreduce with
// `reference` on the same input: the same result and residual bits.
void expect_steps_equal(const std::string& spec, GradCompressor& split, GradCompressor& reference,
                        uint64_t key, const StartWithFeedback& start,
                        void (*run)(coll::SplitCollective&)) {
  const int p = world().size(), r = world().rank();
  for (int step = 0; step < 3; ++step) {
    const std::string what = spec + " step " + std::to_string(step);
    const size_t n = 100003;
    std::vector<float> x = input(n, r + 3 * step, false), want = x, got(n);
    grad_allreduce(world(), reference, GradTensor(key), TensorView{DType::kF32, n, want.data()},
                   GradOptions{ReduceOp::kSum, 0});
    std::unique_ptr<coll::SplitCollective> s;
    grad::EngineAccess::engine(split).feedback_step(
        GradTensor(key), ConstTensorView{DType::kF32, n, x.data()}, r, p,
        [&](std::span<float> residual, uint64_t seed, std::span<float> server,
            uint64_t server_seed) {
          s = start(x.data(), got.data(), coll::Feedback{residual, seed, server, server_seed});
        });
    run(*s);
    expect_same_bits(got, want, what);
    expect_same_bits(split.residual(key), reference.residual(key), what + " residual");
    if (p > 1) {
      EXPECT_NE(split.residual(key), std::vector<float>(n, 0.0f)) << what;
    }
  }
}

// Error feedback (the drop-in's nonblocking gradient calls): an allreduce started through the
// engine's feedback_step is ef+CODEC's step, bit for bit: results, residuals and saved states
// equal those of grad_allreduce with a compressor of the same spec, step after step (the same
// seeds: stochastic rounding included).
TEST(SplitCollectives, AllreduceWithFeedbackIsTheErrorFeedbackStep) {
  const uint64_t key = 5;
  for (const char* spec : {"ef+quant:bits=4", "ef+quant:bits=2,round=stochastic", "ef+zfp:rate=8",
                           "ef2+quant:bits=6"}) {
    GradCompressor split(spec);
    const std::string ef_spec = "ef+" + std::string(std::strchr(spec, '+') + 1);
    GradCompressor reference(ef_spec);  // ef2+'s split form is ef+'s step
    const CodecConfig codec = CodecConfig::parse(std::strchr(spec, '+') + 1);
    expect_steps_equal(
        spec, split, reference, key,
        [&](const float* x, float* out, const coll::Feedback& feedback) {
          return coll::start_allreduce(world().mpi(), x, out, 100003, codec, &feedback);
        },
        finish);
    if (std::string(spec) == ef_spec) {
      EXPECT_EQ(split.save(), reference.save()) << spec;
    }
  }
}

// Runs a two-stage allreduce to its end as the drop-in's progress thread does.
void finish_two_stage(coll::SplitCollective& s) {
  ASSERT_TRUE(s.has_next());
  MPI_Wait(s.request(), MPI_STATUS_IGNORE);
  s.next();
  ASSERT_FALSE(s.has_next());
  finish(s);
}

// A communicator for the second exchanges, freed at the end of the test.
struct SecondComm {
  MPI_Comm comm = MPI_COMM_NULL;
  SecondComm() { MPI_Comm_dup(world().mpi(), &comm); }
  ~SecondComm() { MPI_Comm_free(&comm); }
};

// The two-stage allreduce without feedback against its definition written out plainly: chunk
// j is the sum over ranks k in rank order of k's chunk j (exact for k = j, else compressed once
// with k's seed of stream j), compressed once by rank j with its seed of stream p, decoded.
TEST(SplitCollectives, TwoStageAllreduceIsItsDefinition) {
  const int p = world().size(), r = world().rank();
  if (p < 2) GTEST_SKIP() << "one rank";
  const SecondComm second;
  for_each_case([&](const CodecConfig& codec, size_t n, bool specials, const std::string& what) {
    std::vector<float> x = input(n, r, specials), got(n), want(n);
    auto s =
        coll::start_allreduce_two_stage(world().mpi(), second.comm, x.data(), got.data(), n, codec);
    finish_two_stage(*s);
    for (int j = 0; j < p; ++j) {
      const ChunkRange c = chunk_range(n, p, j);
      std::vector<float> sum(c.count), part(c.count);
      for (int k = 0; k < p; ++k) {
        const std::vector<float> theirs = input(n, k, specials);
        const ConstTensorView chunk{DType::kF32, c.count, theirs.data() + c.offset};
        if (k == j) {
          std::copy_n(theirs.data() + c.offset, c.count, part.data());
        } else {
          decompress(compress(codec, chunk, {coll::stream_seed(0, k, 0, uint64_t(j))}),
                     TensorView{DType::kF32, c.count, part.data()});
        }
        for (size_t i = 0; i < c.count; ++i) sum[i] = k == 0 ? part[i] : sum[i] + part[i];
      }
      decompress(compress(codec, ConstTensorView{DType::kF32, c.count, sum.data()},
                          {coll::stream_seed(0, j, 0, uint64_t(p))}),
                 TensorView{DType::kF32, c.count, want.data() + c.offset});
    }
    expect_same_bits(got, want, "two-stage allreduce " + what);
    EXPECT_EQ(s->stats().algorithm, Algorithm::kRing) << what;
  });
}

// With feedback the two-stage allreduce is ef2+CODEC's step, bit for bit: results, worker and
// server residuals (the saved states) equal those of grad_allreduce with a compressor of the same
// spec, step after step, stochastic rounding included.
TEST(SplitCollectives, TwoStageAllreduceWithFeedbackIsTheEf2Step) {
  const uint64_t key = 9;
  const SecondComm second;
  for (const char* spec :
       {"ef2+quant:bits=6", "ef2+quant:bits=2,round=stochastic", "ef2+zfp:rate=8", "ef2+bf16"}) {
    GradCompressor blocking(spec), split(spec);
    const CodecConfig codec = CodecConfig::parse(std::strchr(spec, '+') + 1);
    expect_steps_equal(
        spec, split, blocking, key,
        [&](const float* x, float* out, const coll::Feedback& feedback) {
          return coll::start_allreduce_two_stage(world().mpi(), second.comm, x, out, 100003, codec,
                                                 &feedback);
        },
        finish_two_stage);
    EXPECT_EQ(split.save(), blocking.save()) << spec << ": server residuals";
  }
}

// A reduce-scatter with error feedback keeps what each rank's streams lose: per step, this rank's
// chunk of the result plus every rank's residual on that chunk is the sum of every rank's input
// plus its residual before the step (within float32 rounding).
TEST(SplitCollectives, ReduceScatterWithFeedbackKeepsWhatItLoses) {
  const int p = world().size(), r = world().rank();
  const auto pz = static_cast<size_t>(p);
  const size_t n = 20011, total = n * pz;
  const CodecConfig codec = CodecConfig::parse("quant:bits=4");
  std::vector<float> residual(total, 0.0f);
  for (int step = 0; step < 3; ++step) {
    const std::string what = "step " + std::to_string(step);
    std::vector<float> x = input(total, r + 5 * step, false), got(n);
    // Every rank's input + residual on this rank's chunk, summed in double.
    std::vector<double> acc(n), kept(n);
    std::vector<double> mine(total);
    for (size_t i = 0; i < total; ++i) mine[i] = double(x[i]) + double(residual[i]);
    MPI_Reduce_scatter_block(mine.data(), acc.data(), int(n), MPI_DOUBLE, MPI_SUM, world().mpi());
    const coll::Feedback feedback{residual, 1234 + uint64_t(step)};
    auto s = coll::start_reduce_scatter(world().mpi(), x.data(), got.data(), n, codec, &feedback);
    finish(*s);
    std::vector<double> after(residual.begin(), residual.end());
    MPI_Reduce_scatter_block(after.data(), kept.data(), int(n), MPI_DOUBLE, MPI_SUM, world().mpi());
    double worst = 0, lost = 0;
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(double(got[i]) + kept[i] - acc[i]));
      lost = std::max(lost, std::fabs(kept[i]));
    }
    EXPECT_LE(worst, 1e-5 * p) << what;
    if (p > 1) {
      EXPECT_GT(lost, 1e-3) << what << ": nothing was lost, so nothing was compressed";
    }
  }
}

// With feedback the reduce-scatter is the blocking grad_reduce_scatter of ef+ and ef2+ (the
// first of the two stages, the own chunk compressed too), bit for bit: the shard and the worker
// residual step after step, stochastic rounding included; ef+'s saved states too (ef2+'s
// feedback step also makes the server residual, zeros, that its blocking reduce-scatter leaves).
TEST(SplitCollectives, ReduceScatterWithFeedbackIsTheBlockingStep) {
  const int p = world().size(), r = world().rank();
  const size_t n = 20011, total = n * static_cast<size_t>(p);
  const uint64_t key = 11;
  for (const char* spec :
       {"ef2+quant:bits=6", "ef+quant:bits=2,round=stochastic", "ef2+zfp:rate=8", "ef+bf16"}) {
    GradCompressor blocking(spec), split(spec);
    const CodecConfig codec = CodecConfig::parse(std::strchr(spec, '+') + 1);
    for (int step = 0; step < 3; ++step) {
      const std::string what = std::string(spec) + " step " + std::to_string(step);
      const std::vector<float> x = input(total, r + 3 * step, false);
      std::vector<float> want(n), got(n);
      grad_reduce_scatter(world(), blocking, GradTensor(key),
                          ConstTensorView{DType::kF32, total, x.data()},
                          TensorView{DType::kF32, n, want.data()}, GradOptions{ReduceOp::kSum, 0});
      std::unique_ptr<coll::SplitCollective> s;
      grad::EngineAccess::engine(split).feedback_step(
          GradTensor(key), ConstTensorView{DType::kF32, total, x.data()}, r, p,
          [&](std::span<float> residual, uint64_t seed, std::span<float>, uint64_t) {
            const coll::Feedback feedback{residual, seed};
            s = coll::start_reduce_scatter(world().mpi(), x.data(), got.data(), n, codec,
                                           &feedback);
          });
      finish(*s);
      expect_same_bits(got, want, what);
      expect_same_bits(split.residual(key), blocking.residual(key), what + " residual");
      if (p > 1) {
        EXPECT_NE(split.residual(key), std::vector<float>(total, 0.0f)) << what;
      }
    }
    if (std::strncmp(spec, "ef+", 3) == 0) {
      EXPECT_EQ(split.save(), blocking.save()) << spec;
    }
  }
}

TEST(SplitCollectives, SlotsAndWhereTheyPay) {
  EXPECT_FALSE(coll::slot_bytes(CodecConfig::parse("eb:abs=1e-3"), 1000));
  EXPECT_FALSE(coll::slot_bytes(CodecConfig::parse("zfp:accuracy=1e-3"), 1000));
  const CodecConfig bf16 = CodecConfig::parse("bf16");
  // bf16: no room beyond its stream (it never takes more); an allreduce pays below 4 ranks.
  EXPECT_EQ(coll::slot_bytes(bf16, 1000), 8 + max_compressed_bytes(bf16, DType::kF32, 1000));
  EXPECT_TRUE(coll::split_pays(Operation::kAllreduce, bf16, 100000, 3));
  EXPECT_FALSE(coll::split_pays(Operation::kAllreduce, bf16, 100000, 4));
  EXPECT_TRUE(coll::split_pays(Operation::kAllgather, bf16, 100000, 64));
  EXPECT_FALSE(coll::split_pays(Operation::kAllgather, CodecConfig::parse("none"), 100000, 2));
  EXPECT_TRUE(coll::split_pays(Operation::kReduceScatter, bf16, 100000, 64));
  EXPECT_FALSE(coll::split_pays(Operation::kSendRecv, bf16, 100000, 2));
  EXPECT_FALSE(coll::split_pays(Operation::kAllreduce, bf16, 100000, 1));
  // quant:bits=8: 9 bits per value, its stream is its slot (no room: its size never depends on
  // the data); an allreduce pays up to 7 ranks.
  const CodecConfig q8 = CodecConfig::parse("quant:bits=8");
  EXPECT_EQ(coll::slot_bytes(q8, 1000), 8 + max_compressed_bytes(q8, DType::kF32, 1000));
  EXPECT_TRUE(coll::split_pays(Operation::kAllreduce, q8, 100000, 7));
  EXPECT_FALSE(coll::split_pays(Operation::kAllreduce, q8, 100000, 8));
  // hybrid's ef2+quant:bits=6 (docs/dropin.md): 56 bytes per block of 64, a nonblocking
  // gradient allreduce pays up to 9 ranks.
  const CodecConfig q6 = CodecConfig::parse("quant:bits=6");
  EXPECT_TRUE(coll::split_pays(Operation::kAllreduce, q6, 100000, 9));
  EXPECT_FALSE(coll::split_pays(Operation::kAllreduce, q6, 100000, 10));
  // zfp:rate=8: 1/4 of the data plus 1/16 of room for its exception list.
  const CodecConfig z8 = CodecConfig::parse("zfp:rate=8");
  EXPECT_EQ(coll::slot_bytes(z8, 100000),
            8 + *regular_compressed_bytes(z8, DType::kF32, 100000) + 100000 * 4 / 16);
  // The two-stage form pays wherever a slot is smaller than its chunk: at any number of ranks
  // for a chunk large enough for the slot's length word.
  EXPECT_TRUE(coll::two_stage_pays(q6, 100000, 8));
  EXPECT_TRUE(coll::two_stage_pays(bf16, 100000, 64));
  EXPECT_FALSE(coll::two_stage_pays(bf16, 2, 2));  // 8 bytes of length for 4 of data
  EXPECT_FALSE(coll::two_stage_pays(CodecConfig::parse("none"), 100000, 4));
  EXPECT_FALSE(coll::two_stage_pays(CodecConfig::parse("eb:abs=1e-3"), 100000, 4));
  EXPECT_FALSE(coll::two_stage_pays(bf16, 100000, 1));
}

}  // namespace
}  // namespace hycc::test
