// PolicyEngine: collectives handed a policy pick the rule of their communicator's dimension, run
// it (codec or gradient compressor), and record what they did; statistics reduce over ranks and
// reach the summary table and the JSON file.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
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

// x_i = small integers that differ per rank, so that sums in float32 are exact.
std::vector<float> ramp(size_t n, int rank) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int((i * 7 + size_t(rank) * 3) % 17) - 8);
  return v;
}

float exact_sum(size_t i, int size) {
  float s = 0;
  for (int r = 0; r < size; ++r) s += float(int((i * 7 + size_t(r) * 3) % 17) - 8);
  return s;
}

// True on every rank when every rank holds the same bytes.
bool identical_on_all_ranks(const Communicator& c, const std::vector<float>& v) {
  std::vector<float> first(v);
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, c.mpi());
  int same = first == v ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, c.mpi());
  return same == 1;
}

Policy policy_of(const std::string& toml) { return Policy::parse_toml(toml, "test.toml"); }

TensorView view(std::vector<float>& v) { return {DType::kF32, v.size(), v.data()}; }

TEST(PolicyEngine, BaselineIsExactAndCountsCalls) {
  const Communicator dp = world_comm().dup("dp");
  PolicyEngine engine(Policy::preset("baseline"));
  CollectiveOptions o;
  o.policy = &engine;
  const size_t n = 100000;
  std::vector<float> x = ramp(n, dp.rank());
  allreduce(dp, view(x), view(x), ReduceOp::kSum, o);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += x[i] != exact_sum(i, dp.size());
  EXPECT_EQ(wrong, 0u);
  const CommStats s = engine.stats();
  const StatsEntry* e = s.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->calls, 1u);
  EXPECT_EQ(e->compressed_calls, 0u);
  EXPECT_EQ(e->message_bytes, n * sizeof(float));
}

TEST(PolicyEngine, HybridRunsTheGradientCompressorOnDp) {
  const Communicator dp = world_comm().dup("dp");
  PolicyEngine engine(Policy::preset("hybrid"));
  CollectiveOptions o;
  o.policy = &engine;
  o.key = 42;
  const size_t n = 1 << 18;
  std::vector<float> g = ramp(n, dp.rank());
  std::vector<float> out(n);
  CollectiveStats st;
  o.stats = &st;
  allreduce(dp, view(g), view(out), ReduceOp::kAverage, o);
  EXPECT_TRUE(identical_on_all_ranks(dp, out));
  // 4-bit block quantization of averages of integers in [-8, 8]: within a bucket's step.
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, double(std::fabs(out[i] - exact_sum(i, dp.size()) / float(dp.size()))));
  }
  EXPECT_LT(worst, 16.0 / 15.0 * dp.size() + 1e-3);
  const CommStats stats = engine.stats();
  const StatsEntry* e = stats.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->calls, 1u);
  if (dp.size() > 1) {
    EXPECT_TRUE(st.compressed);
    EXPECT_EQ(e->compressed_calls, 1u);
    EXPECT_GT(e->ratio(), 4.0);
    // The error-feedback state is kept under the key given.
    EXPECT_EQ(engine.grad_compressor("ef2+quant:bits=6,block=64,round=nearest").residual(42).size(),
              n);
  }
}

// A gradient compressor that sends more than the uncompressed ring would have gets one warning,
// on rank 0: ef+none gathers p - 1 whole copies (more than the ring's 2 (p-1)/p from 3 ranks
// on); its two-stage form sends the ring's bytes and gets none; HYCC_LOG=off silences it.
TEST(PolicyEngine, WarnsOnceWhenAGradientCompressorSendsMoreThanTheRing) {
  const Communicator dp = world_comm().dup("dp");
  for (const std::string log : {"", "off"}) {
    for (const std::string spec : {"ef+none", "ef2+none"}) {
      std::FILE* file = std::tmpfile();
      ASSERT_NE(file, nullptr);
      EngineOptions eo;
      eo.log = LogOptions::parse(log);
      eo.log_file = file;
      PolicyEngine engine(
          policy_of("[[rule]]\ndimension = \"dp\"\ncompressor = \"" + spec + "\"\n"), eo);
      CollectiveOptions o;
      o.policy = &engine;
      o.key = 7;
      for (int call = 0; call < 3; ++call) {
        std::vector<float> x = ramp(1 << 16, dp.rank());
        allreduce(dp, view(x), view(x), ReduceOp::kSum, o);
      }
      std::rewind(file);
      std::string text;
      for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) text += char(c);
      std::fclose(file);
      size_t warnings = 0;
      for (size_t at = text.find("[hycc] warning"); at != std::string::npos;
           at = text.find("[hycc] warning", at + 1)) {
        ++warnings;
      }
      const bool expected = log.empty() && spec == "ef+none" && dp.size() >= 3 && dp.rank() == 0;
      EXPECT_EQ(warnings, expected ? 1u : 0u) << spec << " HYCC_LOG '" << log << "': " << text;
      if (expected) {
        EXPECT_NE(text.find("ef2+none"), std::string::npos) << text;
      }
    }
  }
}

TEST(PolicyEngine, CodecRulesFollowTheCommunicatorName) {
  PolicyEngine engine(policy_of(R"(
[[rule]]
dimension = "tp"
compressor = "bf16"
threshold = 0
[[rule]]
dimension = "pp"
compressor = "mpc"
threshold = 0
)"));
  CollectiveOptions o;
  o.policy = &engine;
  const Communicator tp = world_comm().dup("tp");
  const Communicator other = world_comm().dup("mine");
  std::vector<float> x(1000, 1.0f / 3.0f);
  std::vector<float> y = x;
  allreduce(tp, view(x), view(x), ReduceOp::kSum, o);
  allreduce(other, view(y), view(y), ReduceOp::kSum, o);
  EXPECT_TRUE(identical_on_all_ranks(tp, x));
  // Unnamed traffic matches no rule: exact. tp traffic was rounded to bf16 on the way.
  for (const float v : y) EXPECT_FLOAT_EQ(v, float(tp.size()) / 3.0f);
  const CommStats s = engine.stats();
  ASSERT_NE(s.find(Dimension::kTp, Operation::kAllreduce), nullptr);
  ASSERT_NE(s.find(Dimension::kOther, Operation::kAllreduce), nullptr);
  EXPECT_EQ(s.find(Dimension::kOther, Operation::kAllreduce)->compressed_calls, 0u);
  if (tp.size() > 1) {
    EXPECT_EQ(s.find(Dimension::kTp, Operation::kAllreduce)->compressed_calls, 1u);
    EXPECT_NE(x[0], float(tp.size()) / 3.0f);  // bf16 cannot hold 1/3
  }
}

TEST(PolicyEngine, SampledErrorIsZeroForLosslessAndPositiveForLossy) {
  EngineOptions options;
  options.sample_error_every = 2;
  PolicyEngine engine(policy_of(R"(
[[rule]]
dimension = "pp"
compressor = "mpc"
threshold = 0
[[rule]]
dimension = "tp"
compressor = "quant:bits=4"
threshold = 0
)"),
                      options);
  CollectiveOptions o;
  o.policy = &engine;
  const Communicator pp = world_comm().dup("pp");
  const Communicator tp = world_comm().dup("tp");
  const size_t n = 5000;
  size_t wrong = 0;
  for (int call = 0; call < 4; ++call) {
    std::vector<float> a = ramp(n, pp.rank());
    std::vector<float> b = a;
    for (float& v : b) v /= 7.0f;
    allreduce(pp, view(a), view(a), ReduceOp::kSum, o);
    allreduce(tp, view(b), view(b), ReduceOp::kSum, o);
    for (size_t i = 0; i < n; ++i) wrong += a[i] != exact_sum(i, pp.size());
  }
  EXPECT_EQ(wrong, 0u);
  const CommStats s = engine.stats();
  const StatsEntry* lossless = s.find(Dimension::kPp, Operation::kAllreduce);
  const StatsEntry* lossy = s.find(Dimension::kTp, Operation::kAllreduce);
  ASSERT_NE(lossless, nullptr);
  ASSERT_NE(lossy, nullptr);
  const uint64_t expected_samples = pp.size() > 1 ? 2 : 0;  // calls 2 and 4 of 4
  EXPECT_EQ(lossless->error_samples, expected_samples);
  EXPECT_EQ(lossy->error_samples, expected_samples);
  EXPECT_EQ(lossless->max_error, 0.0);
  if (tp.size() > 1) {
    EXPECT_GT(lossy->max_error, 0.0);
    EXPECT_LT(lossy->max_error, 16.0 / 7.0 / 15.0 * tp.size());  // one 4-bit step per hop
  }
}

TEST(PolicyEngine, ZeroShardsGoThroughGradientAndCodecRules) {
  const Communicator zero = world_comm().dup("zero");
  PolicyEngine engine(Policy::preset("hybrid"));
  CollectiveOptions o;
  o.policy = &engine;
  const int p = zero.size();
  const size_t per = 70000;
  std::vector<float> grad = ramp(per * size_t(p), zero.rank());
  std::vector<float> shard(per);
  reduce_scatter(zero, view(grad), view(shard), ReduceOp::kSum, o);
  // In place: the shard is this rank's chunk of the gradient buffer.
  std::vector<float> grad2 = ramp(per * size_t(p), zero.rank());
  const TensorView mine{DType::kF32, per, grad2.data() + per * size_t(zero.rank())};
  o.key = 7;
  reduce_scatter(zero, view(grad2), mine, ReduceOp::kSum, o);
  std::vector<float> params(per * size_t(p));
  allgather(zero, view(shard), view(params), o);
  EXPECT_TRUE(identical_on_all_ranks(zero, params));
  const CommStats s = engine.stats();
  const StatsEntry* rs = s.find(Dimension::kZeroGrad, Operation::kReduceScatter);
  const StatsEntry* ag = s.find(Dimension::kZeroParam, Operation::kAllgather);
  ASSERT_NE(rs, nullptr);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(rs->calls, 2u);
  EXPECT_EQ(ag->calls, 1u);
  if (p > 1) {
    EXPECT_EQ(rs->compressed_calls, 2u);
    EXPECT_GT(rs->ratio(), 4.0);
    EXPECT_EQ(ag->compressed_calls, 1u);
    EXPECT_GT(ag->ratio(), 1.9);  // bf16
    // Both reduce-scatters of the same data agree: the in-place copy changes nothing.
    for (size_t i = 0; i < per; ++i) ASSERT_EQ(grad2[per * size_t(zero.rank()) + i], shard[i]);
  }
}

TEST(PolicyEngine, BelowTheThresholdRunsNatively) {
  const Communicator tp = world_comm().dup("tp");
  PolicyEngine engine(Policy::preset("naive"));  // threshold 64 KiB
  CollectiveOptions o;
  o.policy = &engine;
  CollectiveStats st;
  o.stats = &st;
  std::vector<float> x = ramp(1000, tp.rank());
  allreduce(tp, view(x), view(x), ReduceOp::kSum, o);
  EXPECT_FALSE(st.compressed);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], exact_sum(i, tp.size()));
  if (tp.size() > 1) {
    EXPECT_EQ(st.algorithm, Algorithm::kNative);
  }
}

// A caller that routed on the policy (the drop-in, the torch backend) hands its decision down:
// the call runs and records that decision, not a second one of its own.
TEST(PolicyEngine, TakesTheDecisionItIsHanded) {
  const Communicator tp = world_comm().dup("tp");
  if (tp.size() < 2) GTEST_SKIP() << "needs two ranks";
  PolicyEngine engine(Policy::preset("baseline"));  // would leave tp uncompressed
  const PolicyEngine naive(Policy::preset("naive"));
  const size_t n = 100000;
  const PolicyDecision handed = naive.decide(tp, Operation::kAllreduce, n * sizeof(float));
  ASSERT_EQ(handed.options.codec.id(), CodecId::kQuant);
  CollectiveOptions o;
  o.policy = &engine;
  o.decision = &handed;
  CollectiveStats st;
  o.stats = &st;
  std::vector<float> x = ramp(n, tp.rank());
  allreduce(tp, view(x), view(x), ReduceOp::kSum, o);
  EXPECT_TRUE(st.compressed);
  EXPECT_TRUE(identical_on_all_ranks(tp, x));
  const CommStats stats = engine.stats();
  const StatsEntry* e = stats.find(Dimension::kTp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->compressed_calls, 1u);
  EXPECT_GT(e->ratio(), 5.0);  // naive: quant:bits=4

  o.decision = nullptr;  // the engine's own decision again: baseline's
  allreduce(tp, view(x), view(x), ReduceOp::kSum, o);
  EXPECT_FALSE(st.compressed);
}

TEST(PolicyEngine, SendFollowsThePolicyAndRecvNeedsNone) {
  const Communicator pp = world_comm().dup("pp");
  if (pp.size() < 2) GTEST_SKIP() << "needs two ranks";
  PolicyEngine engine(Policy::preset("hybrid"));  // pp: bf16
  CollectiveOptions o;
  o.policy = &engine;
  const size_t n = 50000;
  std::vector<float> x(n, 1.0f / 3.0f);
  if (pp.rank() == 0) {
    send(pp, view(x), 1, 5, o);
    const CommStats stats = engine.stats();
    const StatsEntry* e = stats.find(Dimension::kPp, Operation::kSendRecv);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->compressed_calls, 1u);
    EXPECT_GT(e->ratio(), 1.9);
  } else if (pp.rank() == 1) {
    std::vector<float> y(n);
    recv(pp, view(y), 0, 5);
    EXPECT_EQ(y[0], 0.333984375f);  // 1/3 in bf16
  }
}

TEST(PolicyEngine, StatisticsReduceOverRanksAndReachTheJsonFile) {
  const Communicator dp = world_comm().dup("dp");
  int pid = int(getpid());  // one file name for the whole run: rank 0's process id
  MPI_Bcast(&pid, 1, MPI_INT, 0, dp.mpi());
  const std::string path = "/tmp/hycc_policy_engine_test_" + std::to_string(pid) + ".json";
  EngineOptions options;
  options.log = LogOptions::parse("summary,json=" + path);
  std::FILE* table = std::tmpfile();
  options.log_file = table;
  PolicyEngine engine(Policy::preset("hybrid"), options);
  CollectiveOptions o;
  o.policy = &engine;
  std::vector<float> x = ramp(100000, dp.rank());
  allreduce(dp, view(x), view(x), ReduceOp::kAverage, o);
  allreduce(dp, view(x), view(x), ReduceOp::kAverage, o);
  const CommStats all = engine.reduce_stats(dp);
  ASSERT_NE(all.find(Dimension::kDp, Operation::kAllreduce), nullptr);
  EXPECT_EQ(all.find(Dimension::kDp, Operation::kAllreduce)->calls, 2u * size_t(dp.size()));
  engine.finish(dp);
  if (dp.rank() == 0) {
    std::rewind(table);
    char line[512] = {};
    std::string text;
    while (std::fgets(line, sizeof line, table) != nullptr) text += line;
    EXPECT_NE(text.find("policy 'hybrid'"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce"), std::string::npos) << text;
    std::ifstream in(path);
    std::stringstream json;
    json << in.rdbuf();
    EXPECT_NE(json.str().find("\"policy\": \"hybrid\""), std::string::npos) << json.str();
    EXPECT_NE(json.str().find("\"calls\": " + std::to_string(2 * dp.size())), std::string::npos)
        << json.str();
    std::remove(path.c_str());
  }
  std::fclose(table);
}

}  // namespace
}  // namespace hycc::test
