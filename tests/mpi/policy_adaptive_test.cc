// Adaptive rules at work: the engine measures a communicator's links and the candidates' codecs
// once, every rank decides alike, slow links choose compression and fast ones none, sends never
// communicate to decide, and the collectives run what was chosen.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/error.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

const Communicator& world_comm() {
  static const Communicator w = Communicator::world();
  return w;
}

// The dp rule of `auto` (ef+ or ef2+ with quant:bits=6 or bf16, or none) and a tp codec rule
// (bf16 or none).
Policy adaptive_policy() { return Policy::preset("auto"); }

constexpr LinkFigures kSlowLink{1e-4, 1e6};  // 1 MB/s: compression always pays
constexpr LinkFigures kFreeLink{0, 1e18};    // nothing to gain: the codecs only cost

// True on every rank when every rank has the same value.
bool same_on_all_ranks(const Communicator& c, int v) {
  int lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, c.mpi());
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, c.mpi());
  return lo == hi;
}

std::vector<float> ramp(size_t n, int rank) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int((i * 7 + size_t(rank) * 3) % 17) - 8);
  return v;
}

TensorView view(std::vector<float>& v) { return {DType::kF32, v.size(), v.data()}; }

TEST(AdaptiveEngine, SlowLinksCompressAndFreeLinksDoNot) {
  if (world_comm().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Communicator dp = world_comm().dup("dp"), tp = world_comm().dup("tp");
  PolicyEngine engine(adaptive_policy());
  const size_t bytes = size_t{4} << 20;
  engine.set_link(dp, kSlowLink);
  engine.set_link(tp, kFreeLink);
  const PolicyDecision slow = engine.choose(dp, Operation::kAllreduce, bytes, DType::kF32);
  // The best ratio wins on a slow link: error feedback compressing once on 2 ranks (as many
  // bytes as two stages, less codec work), in two stages from 3 ranks on (fewer bytes).
  const int p = dp.size();
  EXPECT_EQ(slow.compressor, p == 2 ? "ef+quant:bits=6,block=64,round=nearest"
                                    : "ef2+quant:bits=6,block=64,round=nearest");
  EXPECT_TRUE(slow.gradient);
  const PolicyDecision fast = engine.choose(tp, Operation::kAllreduce, bytes, DType::kF32);
  EXPECT_EQ(fast.compressor, "none");
  EXPECT_EQ(fast.options.codec.id(), CodecId::kNone);
  // Links are per communicator: dp's figures did not reach tp.
  ASSERT_TRUE(engine.link(dp).has_value());
  EXPECT_EQ(engine.link(dp)->bandwidth, kSlowLink.bandwidth);
  EXPECT_EQ(engine.link(tp)->bandwidth, kFreeLink.bandwidth);
  // Below the rule's threshold nothing is measured or chosen: the rule's compressor, uncompressed.
  EXPECT_EQ(engine.choose(tp, Operation::kAllreduce, 1000, DType::kF32).candidate, 0);
}

TEST(AdaptiveEngine, CollectivesRunTheChoice) {
  if (world_comm().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Communicator slow = world_comm().dup("tp"), fast = world_comm().dup("tp");
  PolicyEngine engine(adaptive_policy());
  engine.set_link(slow, kSlowLink);
  engine.set_link(fast, kFreeLink);
  CollectiveOptions o;
  o.policy = &engine;
  const size_t n = 1 << 18;
  const int p = world_comm().size();
  for (const Communicator* c : {&fast, &slow}) {
    std::vector<float> x = ramp(n, c->rank()), exact(n);
    MPI_Allreduce(x.data(), exact.data(), int(n), MPI_FLOAT, MPI_SUM, c->mpi());
    CollectiveStats st;
    o.stats = &st;
    allreduce(*c, view(x), view(x), ReduceOp::kSum, o);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(x[i] - exact[i])));
    if (c == &fast) {
      EXPECT_FALSE(st.compressed);
      EXPECT_EQ(worst, 0.0);  // none: MPI's own sum
    } else {
      EXPECT_TRUE(st.compressed);
      EXPECT_GT(st.raw_bytes, st.wire_bytes);
      // bf16 rounds each of the 2(p-1) steps by at most 2^-8 relative; |x| <= 8p.
      EXPECT_LE(worst, 2.0 * p * 8.0 * p * std::ldexp(1.0, -8));
    }
  }
}

TEST(AdaptiveEngine, MeasuredLinksAndCodecsAgreeOnEveryRank) {
  if (world_comm().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Communicator dp = world_comm().dup("dp");
  EngineOptions options;
  options.log.decisions = true;
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  options.log_file = log;
  PolicyEngine engine(adaptive_policy(), options);
  EXPECT_FALSE(engine.link(dp).has_value());
  CollectiveOptions o;
  o.policy = &engine;
  o.key = 7;
  const size_t n = 1 << 19;
  std::vector<float> g = ramp(n, dp.rank());
  allreduce(dp, view(g), view(g), ReduceOp::kAverage, o);  // measures, decides, runs
  const std::optional<LinkFigures> link = engine.link(dp);
  ASSERT_TRUE(link.has_value());
  EXPECT_GT(link->bandwidth, 0);
  EXPECT_GE(link->latency, 0);
  const PolicyDecision d = engine.choose(dp, Operation::kAllreduce, n * 4, DType::kF32);
  EXPECT_TRUE(same_on_all_ranks(dp, d.candidate));
  EXPECT_TRUE(same_on_all_ranks(dp, int(std::lround(std::log2(link->bandwidth) * 1000))));
  // The result is the same on every rank whatever was chosen.
  std::vector<float> first(g);
  MPI_Bcast(first.data(), int(n), MPI_FLOAT, 0, dp.mpi());
  EXPECT_TRUE(same_on_all_ranks(dp, first == g ? 1 : 0));
  EXPECT_TRUE(same_on_all_ranks(dp, 1));
  // The explanation lists every candidate's modelled time and marks the choice.
  EXPECT_NE(d.choice.find("<- chosen"), std::string::npos) << d.choice;
  EXPECT_NE(d.choice.find(d.compressor + ": "), std::string::npos) << d.choice;
  std::rewind(log);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  EXPECT_NE(text.find("modelled on links of"), std::string::npos) << text;

  // calibrate() measures again, collectively, and every rank holds the same figures.
  const LinkFigures again = engine.calibrate(dp);
  EXPECT_TRUE(same_on_all_ranks(dp, int(std::lround(std::log2(again.bandwidth) * 1000))));
  EXPECT_EQ(engine.link(dp)->bandwidth, again.bandwidth);
}

TEST(AdaptiveEngine, SendsDecideWithoutCommunicating) {
  if (world_comm().size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Communicator pp = world_comm().dup("pp");
  PolicyEngine engine(adaptive_policy());
  const size_t bytes = size_t{1} << 20;
  // No link figures: the rule's compressor (bf16), on the calling rank alone.
  if (pp.rank() == 0) {
    EXPECT_EQ(engine.choose(pp, Operation::kSendRecv, bytes, DType::kF32).candidate, 0);
    engine.set_link(pp, kFreeLink);
    EXPECT_EQ(engine.choose(pp, Operation::kSendRecv, bytes, DType::kF32).compressor, "none");
    engine.set_link(pp, kSlowLink);
    EXPECT_EQ(engine.choose(pp, Operation::kSendRecv, bytes, DType::kF32).candidate, 0);
  }
  // A send and its receive under the chosen codec.
  CollectiveOptions o;
  o.policy = &engine;
  std::vector<float> x = ramp(bytes / 4, 0);
  if (pp.rank() == 0) {
    send(pp, ConstTensorView{DType::kF32, x.size(), x.data()}, 1, 3, o);
  } else if (pp.rank() == 1) {
    std::vector<float> got(x.size());
    recv(pp, view(got), 0, 3);
    EXPECT_EQ(got, x);  // small integers survive bf16
  }
}

TEST(AdaptiveEngine, BadLinkFiguresAreErrors) {
  PolicyEngine engine(adaptive_policy());
  EXPECT_THROW(engine.set_link(world_comm(), {-1, 1e9}), InvalidArgument);
  EXPECT_THROW(engine.set_link(world_comm(), {0, std::nan("")}), InvalidArgument);
}

}  // namespace
}  // namespace hycc::test
