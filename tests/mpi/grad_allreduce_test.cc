// Gradient compressors over MPI: every rank holds the same bits after every step, for every
// compressor, any number of ranks; the MPI path gives the same bits as the in-process threads
// of grad/thread_exchange.h for the compressors that reduce in rank order; the ZeRO
// reduce-scatter gives this rank's chunk of the reduction (ef+, ef2+, sign: of their first
// stage).
#include <cstring>

#include "coll_test_util.h"
#include "grad/engine.h"
#include "grad/method.h"
#include "grad/sign_block.h"
#include "grad/sign_codec.h"
#include "grad/thread_exchange.h"
#include "hycc/grad.h"

namespace hycc::test {
namespace {

const GradTensor kMatrix{1, {48, 40}};  // PowerSGD compresses it (1920 >= 2 x 4 x 88)
const GradTensor kVector{2, {}};
constexpr size_t kVectorCount = 37;
size_t count_of(const GradTensor& t) { return t.shape.empty() ? kVectorCount : 48 * 40; }

std::vector<float> gradient(const GradTensor& t, int rank, int step) {
  std::vector<float> g = make_data(DataKind::kGaussian, count_of(t),
                                   100 * t.key + 10 * uint64_t(step) + uint64_t(rank));
  for (float& v : g) v += 0.1f * float(rank % 3);
  return g;
}

const std::vector<std::string>& specs() {
  static const std::vector<std::string> s = {"none",
                                             "ef+quant:bits=4",
                                             "ef+quant:bits=2,round=stochastic",
                                             "ef+zfp:rate=4",
                                             "ef2+quant:bits=4",
                                             "ef2+quant:bits=2,round=stochastic",
                                             "ef2+mpc",
                                             "powersgd:rank=4",
                                             "powersgd:rank=1,warm_start=off",
                                             "topk:ratio=0.05",
                                             "sign",
                                             "sign:ef=off"};
  return s;
}

std::string name_of(const std::string& spec) {
  std::string n;
  for (const char c : spec) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

class GradMpi : public ::testing::TestWithParam<std::string> {};

TEST_P(GradMpi, IdenticalOnEveryRank) {
  const int r = world().rank();
  GradCompressor c(GetParam());
  for (int step = 0; step < 3; ++step) {
    for (const GradTensor* t : {&kMatrix, &kVector}) {
      for (const ReduceOp op : {ReduceOp::kAverage, ReduceOp::kSum}) {
        const GradTensor keyed{t->key + (op == ReduceOp::kSum ? 10 : 0), t->shape};
        Buffer g = Buffer::from_floats(DType::kF32, gradient(*t, r, step));
        const GradStepStats st = grad_allreduce(world(), c, keyed, g.view(), {.op = op});
        const std::string what =
            GetParam() + " step " + std::to_string(step) + " key " + std::to_string(keyed.key);
        expect_identical_across_ranks(g, what);
        EXPECT_EQ(st.elements, count_of(*t));
        size_t bad = 0;
        for (const float v : g.to_floats()) bad += std::isfinite(v) ? 0 : 1;
        EXPECT_EQ(bad, 0u) << what << ": non-finite results";
      }
    }
  }
  EXPECT_EQ(c.tensors(), 4u);
}

TEST_P(GradMpi, SixteenBitGradientsIdenticalOnEveryRank) {
  GradCompressor c(GetParam());
  for (const DType d : {DType::kBF16, DType::kF16}) {
    Buffer g = Buffer::from_floats(d, gradient(kMatrix, world().rank(), 0));
    grad_allreduce(world(), c, {uint64_t(d) + 100, kMatrix.shape}, g.view());
    expect_identical_across_ranks(g, GetParam() + " " + std::string(dtype_name(d)));
  }
}

bool two_stage_first(const std::string& spec) {
  return spec.starts_with("ef+") || spec.starts_with("ef2+") || spec.starts_with("sign");
}

// What ef+, ef2+ and sign run for a reduce-scatter, written out plainly for every rank j:
// acc_j = g_j + e_j; chunk c of acc_j coded alone (the codec seeded by step_seed(key, step, j)
// + c, or sign's chunk code), e_j = acc_j - decoded; this rank's shard = the decoded chunks of
// all ranks summed in rank order, averaged.
class FirstStageModel {
 public:
  FirstStageModel(const std::string& spec, int p) : spec_(grad::parse_grad_spec(spec)), e_(p) {}

  std::vector<float> step(int step, int me) {
    const int p = static_cast<int>(e_.size());
    const size_t n = count_of(kMatrix);
    const bool ef = spec_.kind != grad::Kind::kSign || spec_.error_feedback;
    std::vector<float> shard(chunk_range(n, p, me).count, 0.0f);
    for (int j = 0; j < p; ++j) {
      std::vector<float> acc = gradient(kMatrix, j, step);
      if (ef && !e_[size_t(j)].empty()) {
        for (size_t i = 0; i < n; ++i) acc[i] += e_[size_t(j)][i];
      }
      std::vector<float> decoded(n);
      for (int c = 0; c < p; ++c) {
        const ChunkRange r = chunk_range(n, p, c);
        const std::span<const float> x(acc.data() + r.offset, r.count);
        code(x, grad::step_seed(kMatrix.key, uint64_t(step), j) + uint64_t(c),
             std::span<float>(decoded.data() + r.offset, r.count));
      }
      if (ef) {  // without error feedback no residual is kept
        e_[size_t(j)].resize(n);
        for (size_t i = 0; i < n; ++i) e_[size_t(j)][i] = acc[i] - decoded[i];
      }
      const ChunkRange mine = chunk_range(n, p, me);
      for (size_t i = 0; i < mine.count; ++i) shard[i] += decoded[mine.offset + i];
    }
    for (float& v : shard) v /= float(p);
    return shard;
  }
  const std::vector<float>& residual(int rank) const { return e_[size_t(rank)]; }

 private:
  void code(std::span<const float> x, uint64_t seed, std::span<float> out) const {
    if (spec_.kind == grad::Kind::kSign) {
      std::vector<uint32_t> words(grad::sign::chunk_words(x.size()));
      grad::encode_sign(x, words);
      grad::decode_sign(words, out);
      return;
    }
    const ConstTensorView in{DType::kF32, x.size(), x.data()};
    std::vector<std::byte> stream(max_compressed_bytes(spec_.codec, in));
    const size_t bytes = compress(spec_.codec, in, stream, {.seed = seed});
    decompress({stream.data(), bytes}, TensorView{DType::kF32, out.size(), out.data()});
  }

  grad::GradSpec spec_;
  std::vector<std::vector<float>> e_;  // per rank
};

// The ZeRO reduce-scatter. ef+, ef2+ and sign send each chunk to its owner only: the shard and
// the residual are those of FirstStageModel, and the bytes half or less of an allreduce's. The
// others run their allreduce: the shard is the chunk of a twin compressor's allreduce.
TEST_P(GradMpi, ReduceScatter) {
  const int p = world().size(), r = world().rank();
  GradCompressor a(GetParam()), b(GetParam());
  FirstStageModel model(GetParam(), p);
  const ChunkRange mine = chunk_range(count_of(kMatrix), p, r);
  for (int step = 0; step < 3; ++step) {
    const std::string what = GetParam() + " step " + std::to_string(step);
    Buffer g = Buffer::from_floats(DType::kF32, gradient(kMatrix, r, step));
    Buffer shard(DType::kF32, mine.count);
    const GradStepStats rs = grad_reduce_scatter(world(), a, kMatrix, g.view(), shard.view());
    const GradStepStats all = grad_allreduce(world(), b, kMatrix, g.view());
    if (GetParam() == "none") {  // the plain reduce-scatter, MPI's order of sums
      Buffer plain(DType::kF32, mine.count);
      reduce_scatter(world(), Buffer::from_floats(DType::kF32, gradient(kMatrix, r, step)).view(),
                     plain.view(), ReduceOp::kAverage);
      EXPECT_TRUE(shard.bits_equal(plain)) << what;
      EXPECT_EQ(rs.wire_bytes, (size_t(p) - 1) * g.view().bytes() / size_t(p)) << what;
      EXPECT_FALSE(rs.compressed) << what;
      continue;
    }
    if (!two_stage_first(GetParam())) {
      EXPECT_TRUE(shard.bits_equal(part_of(g, mine.offset, mine.count))) << what;
      continue;
    }
    EXPECT_TRUE(shard.bits_equal(Buffer::from_floats(DType::kF32, model.step(step, r)))) << what;
    EXPECT_EQ(a.residual(kMatrix.key), model.residual(r)) << what;
    // Block padding and length words aside, half the allreduce's bytes (ef+: less still).
    EXPECT_LE(rs.wire_bytes, all.wire_bytes / 2 + 64 * size_t(p)) << what;
    EXPECT_TRUE(rs.compressed) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, GradMpi, ::testing::ValuesIn(specs()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return name_of(param_info.param);
                         });

// Compressors whose reductions add in rank order give the same bits over MPI as p threads in
// one process (the unit tests' model); PowerSGD and none add in MPI_Allreduce's order instead.
TEST(GradMpiModel, SameBitsAsThreads) {
  const int p = world().size(), r = world().rank();
  for (const std::string spec : {"ef+quant:bits=4", "ef+zfp:rate=4", "ef2+quant:bits=4",
                                 "ef2+zfp:rate=4", "topk:ratio=0.05", "sign", "sign:ef=off"}) {
    GradCompressor c(spec);
    std::vector<grad::Engine> engines;
    for (int j = 0; j < p; ++j) engines.emplace_back(spec);
    grad::ThreadGroup group(p);
    for (int step = 0; step < 3; ++step) {
      Buffer g = Buffer::from_floats(DType::kF32, gradient(kMatrix, r, step));
      grad_allreduce(world(), c, kMatrix, g.view());
      std::vector<float> model;
      group.run([&](int j) {
        grad::ThreadExchange ex(group, j);
        std::vector<float> gj = gradient(kMatrix, j, step);
        engines[size_t(j)].allreduce(ex, kMatrix, {DType::kF32, gj.size(), gj.data()},
                                     ReduceOp::kAverage);
        if (j == r) model = std::move(gj);
      });
      EXPECT_TRUE(g.bits_equal(Buffer::from_floats(DType::kF32, model)))
          << spec << " step " << step;
      EXPECT_EQ(c.residual(kMatrix.key), engines[size_t(r)].states().at(kMatrix.key).residual)
          << spec << " step " << step;
    }
  }
}

// With "none", grad_reduce_scatter is the plain reduce-scatter: this rank's chunk of the exact
// sum, (p - 1) / p of the tensor sent per rank, as the ZeRO gradients without compression.
TEST(GradMpiModel, NoneReduceScatterIsThePlainReduceScatter) {
  const int p = world().size(), r = world().rank();
  GradCompressor c("none");
  const Buffer g = make_input(DType::kF32, 1001, r, true);
  const ChunkRange mine = chunk_range(1001, p, r);
  Buffer shard(DType::kF32, mine.count);
  const GradStepStats st =
      grad_reduce_scatter(world(), c, {7, {}}, g.view(), shard.view(), {.op = ReduceOp::kSum});
  const Buffer sum = reference_reduce(gather_all(g), DType::kF32, ReduceOp::kSum);
  expect_bits_equal(shard, part_of(sum, mine.offset, mine.count), "none reduce_scatter");
  EXPECT_FALSE(st.compressed);
  EXPECT_EQ(st.payload_bytes, 4004u);
  EXPECT_EQ(st.wire_bytes, (size_t(p) - 1) * 4004 / size_t(p));
  Buffer whole = make_input(DType::kF32, 1001, r, true);
  const GradStepStats all = grad_allreduce(world(), c, {8, {}}, whole.view());
  EXPECT_LE(st.wire_bytes * 2, all.wire_bytes + 1) << "half the allreduce's bytes";
}

// Arguments that differ across ranks make every rank throw CommError naming them, before a byte
// of the step is sent (before, ef+ on a rank with the smaller tensor wrote a larger peer's
// stream past its buffer); a local error is InvalidArgument there and CommError elsewhere. The
// compressors stay usable afterwards.
TEST(GradMpiModel, ArgumentsThatDifferAcrossRanksAreCommErrorEverywhere) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  struct Case {
    const char* what;
    size_t count;
    const char* spec;
    GradTensor tensor;
    ReduceOp op;
  };
  const bool odd = r % 2 == 1;
  const Case cases[] = {
      {"count", odd ? 1001u : 1000u, "ef+quant:bits=4", {1, {}}, ReduceOp::kSum},
      {"spec hash", 1000, odd ? "ef+zstd" : "ef+quant:bits=4", {1, {}}, ReduceOp::kSum},
      {"layout hash",
       1000,
       "powersgd:rank=2",
       {1, odd ? std::vector<size_t>{40, 25} : std::vector<size_t>{25, 40}},
       ReduceOp::kSum},
      {"reduce op", 1000, "ef2+quant:bits=4", {1, {}}, odd ? ReduceOp::kSum : ReduceOp::kAverage}};
  for (const Case& c : cases) {
    GradCompressor compressor(c.spec);
    Buffer g = make_input(DType::kF32, c.count, r, true);
    expect_outcome(Outcome::kComm, std::string("grad_allreduce, ") + c.what, c.what,
                   [&] { grad_allreduce(world(), compressor, c.tensor, g.view(), {.op = c.op}); });
    Buffer shard(DType::kF32, chunk_range(c.count, p, r).count);
    expect_outcome(Outcome::kComm, std::string("grad_reduce_scatter, ") + c.what, c.what, [&] {
      grad_reduce_scatter(world(), compressor, c.tensor, g.view(), shard.view(), {.op = c.op});
    });
  }
  // A shard of the wrong size on rank 0 only.
  GradCompressor ef("ef2+quant:bits=4");
  const Buffer g = make_input(DType::kF32, 1000, r, true);
  Buffer shard(DType::kF32, chunk_range(1000, p, r).count + (r == 0 ? 1 : 0));
  expect_outcome(r == 0 ? Outcome::kInvalid : Outcome::kComm, "a wrong shard on rank 0", [&] {
    grad_reduce_scatter(world(), ef, {1, {}}, g.view(), shard.view());
  });
  // Still usable: the same compressor with agreed arguments.
  Buffer whole = make_input(DType::kF32, 1000, r, true);
  expect_outcome(Outcome::kOk, "after the errors", [&] {
    grad_allreduce(world(), ef, {1, {}}, whole.view());
  });
  expect_identical_across_ranks(whole, "after the errors");
}

// GradOptions::check_arguments: kNever skips the agreement, kAuto and kAlways run it. Ranks that
// give different tags (which the agreement refuses) step with kNever, since the compressors'
// exchanges go to MPI, whose collectives have no tags, and get a common tag's bits; a value
// that is not an ArgumentCheck is refused on every rank.
TEST(GradMpiModel, CheckArgumentsNeverSkipsTheAgreement) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  for (const char* spec : {"ef+quant:bits=4", "ef2+quant:bits=6", "powersgd:rank=2"}) {
    GradCompressor compressor(spec), common(spec);
    const Buffer g = make_input(DType::kF32, 1000, r, true);
    GradOptions own_tag{.op = ReduceOp::kSum, .tag = r % 2};
    for (const ArgumentCheck check : {ArgumentCheck::kAuto, ArgumentCheck::kAlways}) {
      own_tag.check_arguments = check;
      Buffer refused = clone(g);
      expect_outcome(Outcome::kComm, std::string(spec) + ": tags differ", "tag", [&] {
        grad_allreduce(world(), compressor, {1, {}}, refused.view(), own_tag);
      });
    }
    own_tag.check_arguments = ArgumentCheck::kNever;
    Buffer got = clone(g), want = clone(g);
    expect_outcome(Outcome::kOk, std::string(spec) + ": unchecked", [&] {
      grad_allreduce(world(), compressor, {1, {}}, got.view(), own_tag);
    });
    grad_allreduce(world(), common, {1, {}}, want.view(), {.op = ReduceOp::kSum});
    expect_bits_equal(got, want, std::string(spec) + ": unchecked");
    own_tag.check_arguments = static_cast<ArgumentCheck>(9);
    expect_outcome(Outcome::kInvalid, std::string(spec) + ": invalid", "check_arguments", [&] {
      grad_allreduce(world(), compressor, {1, {}}, got.view(), own_tag);
    });
  }
}

// With one compressor "none", the result is the plain allreduce of the inputs.
TEST(GradMpiModel, NoneIsThePlainAllreduce) {
  const int r = world().rank();
  GradCompressor c("none");
  Buffer g = make_input(DType::kF32, 1001, r, true);
  const auto inputs = gather_all(g);
  const GradStepStats st = grad_allreduce(world(), c, {7, {}}, g.view(), {.op = ReduceOp::kSum});
  expect_bits_equal(g, reference_reduce(inputs, DType::kF32, ReduceOp::kSum), "none");
  EXPECT_FALSE(st.compressed);
  EXPECT_EQ(st.payload_bytes, 4004u);
}

}  // namespace
}  // namespace hycc::test
