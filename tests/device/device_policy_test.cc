// The device collectives with a PolicyEngine (DeviceCollectiveOptions::policy), host-emulated
// device: the rule of the communicator's dimension picks the codec (bit-identical to passing
// that codec), small messages below the threshold go native, every gradient compressor runs as
// the host policy path runs it (error feedback: device_grad_test.cc), codecs without device
// kernels run too, and the engine records every call.
#include <functional>

#include "codec/float_io.h"
#include "coll_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

DeviceCollectiveOptions emulated_with(const std::string& spec) {
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.segment_bytes = 4096;
  o.seed = 3;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

// allreduce_device of this rank's input with `o`.
Buffer device_allreduce(const Communicator& comm, size_t n, const DeviceCollectiveOptions& o) {
  const Buffer in = make_input(DType::kF32, n, comm.rank(), false);
  Buffer out(DType::kF32, n);
  allreduce_device(comm, in.view(), out.view(), ReduceOp::kSum, o);
  return out;
}

// The engine's statistics of one dimension and operation (all zero before any call).
StatsEntry entry(const PolicyEngine& engine, Dimension d, Operation op) {
  const CommStats stats = engine.stats();
  const StatsEntry* e = stats.find(d, op);
  return e != nullptr ? *e : StatsEntry{};
}

const char* const kPolicy = R"(
[[rule]]
dimension = "dp"
operation = "allreduce"
compressor = "quant:bits=4"
threshold = 16384
[[rule]]
dimension = "tp"
compressor = "bf16"
threshold = 0
[[rule]]
dimension = "zero_param"
compressor = "zfp:accuracy=1e-3"
threshold = 0
)";

TEST(DevicePolicy, TheDimensionsRuleChoosesTheCodec) {
  const Communicator dp = world().dup("dp");
  PolicyEngine engine(Policy::parse_toml(kPolicy, "test.toml"));
  DeviceCollectiveOptions o = emulated_with("none");
  o.policy = &engine;
  CollectiveStats stats;
  o.stats = &stats;
  const size_t n = 10000;  // 40000 bytes, above the threshold
  const Buffer got = device_allreduce(dp, n, o);
  expect_bits_equal(got, device_allreduce(dp, n, emulated_with("quant:bits=4")), "dp rule");
  const bool p1 = dp.size() == 1;
  EXPECT_EQ(stats.compressed, !p1);
  EXPECT_EQ(stats.message_bytes, n * 4);
  const StatsEntry e = entry(engine, Dimension::kDp, Operation::kAllreduce);
  EXPECT_EQ(e.calls, 1u);
  EXPECT_EQ(e.compressed_calls, p1 ? 0u : 1u);
  if (!p1) {
    EXPECT_GT(e.ratio(), 4.0);
  }

  // Below the threshold: the native call, as the host's.
  const size_t small = 1000;  // 4000 bytes
  const Buffer in = make_input(DType::kF32, small, dp.rank(), false);
  Buffer native(DType::kF32, small);
  CollectiveOptions h;
  h.algorithm = Algorithm::kNative;
  allreduce(dp, in.view(), native.view(), ReduceOp::kSum, h);
  expect_bits_equal(device_allreduce(dp, small, o), native, "below the threshold");
  EXPECT_FALSE(stats.compressed);
  EXPECT_EQ(stats.algorithm, p1 ? Algorithm::kAuto : Algorithm::kNative);
  EXPECT_EQ(entry(engine, Dimension::kDp, Operation::kAllreduce).calls, 2u);
  EXPECT_EQ(entry(engine, Dimension::kDp, Operation::kAllreduce).compressed_calls, p1 ? 0u : 1u);
}

// HYCC_SAMPLE_ERROR on device calls: every compressed call (every = 1) also runs natively, and
// the engine records the largest difference, the one the test computes against the host's
// native call.
TEST(DevicePolicy, SampledCallsRecordTheirError) {
  const Communicator dp = world().dup("dp");
  EngineOptions eo;
  eo.sample_error_every = 1;
  PolicyEngine engine(Policy::parse_toml(kPolicy, "test.toml"), eo);
  DeviceCollectiveOptions o = emulated_with("none");
  o.policy = &engine;
  const size_t n = 10000;  // above the dp rule's threshold
  const Buffer got = device_allreduce(dp, n, o);
  const Buffer in = make_input(DType::kF32, n, dp.rank(), false);
  Buffer native(DType::kF32, n);
  CollectiveOptions h;
  h.algorithm = Algorithm::kNative;
  allreduce(dp, in.view(), native.view(), ReduceOp::kSum, h);
  const StatsEntry e = entry(engine, Dimension::kDp, Operation::kAllreduce);
  if (dp.size() == 1) {
    EXPECT_EQ(e.error_samples, 0u);
    return;
  }
  EXPECT_EQ(e.error_samples, 1u);
  EXPECT_GT(e.max_error, 0.0);
  EXPECT_EQ(e.max_error, codec::max_abs_difference(got.view(), native.view()));
}

// Gradient calls are sampled too, as on the host: the device engine records the error the host
// engine records for the same call (same bits, same native reference), here for hybrid's
// ef2+quant:bits=6 on dp and zero_grad.
TEST(DevicePolicy, SampledGradientCallsRecordTheHostsError) {
  const Communicator dp = world().dup("dp"), zero = world().dup("zero");
  EngineOptions eo;
  eo.sample_error_every = 1;
  PolicyEngine host_engine(Policy::preset("hybrid"), eo),
      device_engine(Policy::preset("hybrid"), eo);
  const size_t n = 1 << 16;  // above hybrid's threshold
  const Buffer g = make_input(DType::kF32, n, dp.rank(), false);
  Buffer want = clone(g), got(DType::kF32, n);
  CollectiveOptions h;
  h.policy = &host_engine;
  h.key = 4;
  allreduce(dp, want.view(), want.view(), ReduceOp::kAverage, h);
  DeviceCollectiveOptions o = emulated_with("none");
  o.policy = &device_engine;
  o.key = 4;
  allreduce_device(dp, g.view(), got.view(), ReduceOp::kAverage, o);
  expect_bits_equal(got, want, "hybrid dp, sampled");
  const ChunkRange mine = chunk_range(n, zero.size(), zero.rank());
  Buffer shard_want(DType::kF32, mine.count), shard_got(DType::kF32, mine.count);
  reduce_scatter(zero, g.view(), shard_want.view(), ReduceOp::kSum, h);
  reduce_scatter_device(zero, g.view(), shard_got.view(), ReduceOp::kSum, o);
  expect_bits_equal(shard_got, shard_want, "hybrid zero_grad, sampled");
  for (const auto& [d, op] : {std::pair{Dimension::kDp, Operation::kAllreduce},
                              std::pair{Dimension::kZeroGrad, Operation::kReduceScatter}}) {
    const StatsEntry he = entry(host_engine, d, op), de = entry(device_engine, d, op);
    const unsigned samples = world().size() > 1 ? 1u : 0u;
    EXPECT_EQ(de.error_samples, samples);
    EXPECT_EQ(he.error_samples, samples);
    EXPECT_EQ(de.max_error, he.max_error);
    if (samples > 0) {
      EXPECT_GT(de.max_error, 0.0);
    }
  }
}

// Without a key, a gradient rule keys its state by the buffer's address, which differs across
// ranks (here by a rank-dependent offset into the allocation): the ranks' calls still agree, on
// the host and on the device, and both give the same bits.
TEST(DevicePolicy, GradientRulesWithoutAKeyAgreeAcrossRanks) {
  const Communicator dp = world().dup("dp");
  PolicyEngine host_engine(Policy::preset("hybrid")), device_engine(Policy::preset("hybrid"));
  const size_t n = 1 << 16;  // above hybrid's threshold
  const size_t offset = static_cast<size_t>(dp.rank()) * 16;
  const Buffer g = make_input(DType::kF32, n, dp.rank(), false);
  Buffer host_memory(DType::kF32, n + offset), device_memory(DType::kF32, n + offset);
  Buffer got(DType::kF32, n);
  const TensorView host_view{DType::kF32, n,
                             static_cast<std::byte*>(host_memory.data()) + offset * sizeof(float)};
  const TensorView device_view{
      DType::kF32, n, static_cast<std::byte*>(device_memory.data()) + offset * sizeof(float)};
  CollectiveOptions h;
  h.policy = &host_engine;
  DeviceCollectiveOptions o = emulated_with("none");
  o.policy = &device_engine;
  for (int step = 0; step < 2; ++step) {
    std::memcpy(host_view.data, g.view().data, g.view().bytes());
    std::memcpy(device_view.data, g.view().data, g.view().bytes());
    expect_outcome(Outcome::kOk, "host, no key",
                   [&] { allreduce(dp, host_view, host_view, ReduceOp::kAverage, h); });
    expect_outcome(Outcome::kOk, "device, no key",
                   [&] { allreduce_device(dp, device_view, device_view, ReduceOp::kAverage, o); });
    EXPECT_EQ(std::memcmp(host_view.data, device_view.data, n * sizeof(float)), 0)
        << "step " << step;
  }
}

TEST(DevicePolicy, OtherOperationsAndDimensions) {
  PolicyEngine engine(Policy::parse_toml(kPolicy, "test.toml"));
  const Communicator tp = world().dup("tp");
  const int p = tp.size(), r = tp.rank();
  const size_t n = 3001;
  DeviceCollectiveOptions o = emulated_with("none");
  o.policy = &engine;

  const Buffer in = make_input(DType::kF32, n, r, false);
  Buffer gathered(DType::kF32, n * static_cast<size_t>(p)), want(DType::kF32, gathered.count());
  allgather_device(tp, in.view(), gathered.view(), o);
  allgather_device(tp, in.view(), want.view(), emulated_with("bf16"));
  expect_bits_equal(gathered, want, "tp allgather (bf16)");

  Buffer b = clone(in), b_want = clone(in);
  broadcast_device(tp, b.view(), p - 1, o);
  broadcast_device(tp, b_want.view(), p - 1, emulated_with("bf16"));
  expect_bits_equal(b, b_want, "tp broadcast (bf16)");
  const Buffer a2a = make_input(DType::kF32, 1000 * static_cast<size_t>(p), r, false);
  Buffer a2a_got(DType::kF32, a2a.count()), a2a_want(DType::kF32, a2a.count());
  alltoall_device(tp, a2a.view(), a2a_got.view(), o);
  alltoall_device(tp, a2a.view(), a2a_want.view(), emulated_with("bf16"));
  expect_bits_equal(a2a_got, a2a_want, "tp alltoall (bf16)");
  EXPECT_EQ(entry(engine, Dimension::kTp, Operation::kAlltoall).calls, 1u);
  EXPECT_EQ(entry(engine, Dimension::kTp, Operation::kAllgather).calls, 1u);
  EXPECT_EQ(entry(engine, Dimension::kTp, Operation::kBroadcast).calls, 1u);

  // A codec without device kernels runs as chosen, as the host's allgather with it does.
  const Communicator zero = world().dup("zero");  // allgather: zero_param
  ASSERT_EQ(engine.decide(zero, Operation::kAllgather, n * 4).options.codec.id(), CodecId::kZfp);
  Buffer zp_got(DType::kF32, gathered.count()), zp_want(DType::kF32, gathered.count());
  allgather_device(zero, in.view(), zp_got.view(), o);
  CollectiveOptions zh;
  zh.codec = CodecConfig::parse("zfp:accuracy=1e-3");
  zh.algorithm = Algorithm::kRing;
  zh.threshold_bytes = 0;
  zh.segment_bytes = o.segment_bytes;
  allgather(zero, in.view(), zp_want.view(), zh);
  expect_bits_equal(zp_got, zp_want, "zfp:accuracy on the device");
  if (p > 1) {
    EXPECT_GT(codec::max_abs_difference(zp_got.view(), gathered.view()), 0.0)
        << "zfp:accuracy ran as none";
  }
  EXPECT_EQ(entry(engine, Dimension::kZeroParam, Operation::kAllgather).calls, 1u);

  // Point to point follows the policy too; the receiver needs none.
  if (p > 1) {
    const int right = (r + 1) % p, left = (r + p - 1) % p;
    Buffer got(DType::kF32, n), got_want(DType::kF32, n);
    const auto exchange = [&](const DeviceCollectiveOptions& so, Buffer& into) {
      const auto send_part = [&] { send_device(tp, in.view(), right, 1, so); };
      const auto recv_part = [&] { recv_device(tp, into.view(), left, 1, emulated_with("none")); };
      if (r % 2 == 0) {
        send_part();
        recv_part();
      } else {
        recv_part();
        send_part();
      }
    };
    exchange(o, got);
    exchange(emulated_with("bf16"), got_want);
    expect_bits_equal(got, got_want, "tp send (bf16)");
    EXPECT_EQ(entry(engine, Dimension::kTp, Operation::kSendRecv).calls, 1u);
  }
}

// Gradient compressors other than error feedback (top-k, sign) give the host policy path's bits,
// step after step, allreduce and reduce_scatter; error feedback: device_grad_test.cc.
TEST(DevicePolicy, GradientCompressorsMatchTheHostPolicyPath) {
  const Communicator dp = world().dup("dp"), zero = world().dup("zero");
  const char* const policy = R"(
[[rule]]
dimension = "dp"
operation = "allreduce"
compressor = "topk:ratio=0.1"
threshold = 0
[[rule]]
dimension = "zero_grad"
operation = "reduce_scatter"
compressor = "sign"
threshold = 0
)";
  PolicyEngine host_engine(Policy::parse_toml(policy, "test.toml"));
  PolicyEngine device_engine(Policy::parse_toml(policy, "test.toml"));
  const size_t n = 1 << 14;
  ASSERT_TRUE(device_engine.decide(dp, Operation::kAllreduce, n * 4).gradient);
  const ChunkRange mine = chunk_range(n, zero.size(), zero.rank());
  for (int step = 0; step < 3; ++step) {
    const std::string at = " step " + std::to_string(step);
    const Buffer g = make_input(DType::kF32, n, dp.rank() + 5 * step, false);
    Buffer want = clone(g), got(DType::kF32, n);
    CollectiveOptions h;
    h.policy = &host_engine;
    h.key = 3;
    allreduce(dp, want.view(), want.view(), ReduceOp::kAverage, h);
    DeviceCollectiveOptions o = emulated_with("none");
    o.policy = &device_engine;
    o.key = 3;
    CollectiveStats stats;
    o.stats = &stats;
    allreduce_device(dp, g.view(), got.view(), ReduceOp::kAverage, o);
    expect_bits_equal(got, want, "top-k on dp" + at);
    EXPECT_EQ(stats.compressed, dp.size() > 1);

    Buffer shard_want(DType::kF32, mine.count), shard_got(DType::kF32, mine.count);
    reduce_scatter(zero, g.view(), shard_want.view(), ReduceOp::kSum, h);
    reduce_scatter_device(zero, g.view(), shard_got.view(), ReduceOp::kSum, o);
    expect_bits_equal(shard_got, shard_want, "sign on zero_grad" + at);
  }
  EXPECT_EQ(entry(device_engine, Dimension::kDp, Operation::kAllreduce).calls, 3u);
  EXPECT_EQ(entry(device_engine, Dimension::kDp, Operation::kAllreduce).compressed_calls,
            dp.size() > 1 ? 3u : 0u);
  EXPECT_EQ(entry(device_engine, Dimension::kZeroGrad, Operation::kReduceScatter).compressed_calls,
            zero.size() > 1 ? 3u : 0u);
}

}  // namespace
}  // namespace hycc::test
