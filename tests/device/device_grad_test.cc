// DeviceGradCompressor (error feedback on device buffers, host-emulated device): results and
// residuals bit-identical to the host GradCompressor of the same spec, step after step, with
// both transports; the specs staged through the host (powersgd, topk, sign) and error feedback
// around codecs without kernels likewise; the policy path (hybrid's ef+quant on dp)
// bit-identical to the host policy path; bad specs and stale states rejected.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "coll_test_util.h"
#include "hycc/grad.h"
#include "hycc/grad_device.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

DeviceCollectiveOptions emulated(DeviceTransport transport = DeviceTransport::kAuto) {
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kHostEmulation;
  o.transport = transport;
  return o;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Gradient of step t on this rank: different every step, so that the residual matters.
Buffer gradient(DType d, size_t n, int step) {
  return make_input(d, n, world().rank() + 7 * step, false);
}

TEST(DeviceGrad, ErrorFeedbackMatchesTheHostCompressorStepAfterStep) {
  constexpr uint64_t kKey = 11;
  for (const char* spec :
       {"ef+quant:bits=4", "ef+quant:bits=2,round=stochastic", "ef+zfp:rate=4", "ef+eb:abs=0.01",
        "ef2+quant:bits=4", "ef2+quant:bits=2,round=stochastic", "ef2+zfp:rate=4"}) {
    for (const DeviceTransport t : {DeviceTransport::kStagedMpi, DeviceTransport::kNccl}) {
      for (const DType d : {DType::kF32, DType::kBF16}) {
        for (const size_t n : {size_t{1000}, size_t{100000} / kSanitizerDivisor + 3}) {
          for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
            GradCompressor host(spec);
            DeviceGradCompressor device(spec);
            for (int step = 0; step < 3; ++step) {
              const std::string what =
                  std::string(spec) + (t == DeviceTransport::kNccl ? " nccl " : " staged ") +
                  std::string(dtype_name(d)) + " n=" + std::to_string(n) +
                  (op == ReduceOp::kSum ? " sum" : " average") + " step " + std::to_string(step);
              const Buffer g = gradient(d, n, step);
              Buffer want = clone(g), got(d, n);
              grad_allreduce(world(), host, GradTensor{kKey, {}}, want.view(), GradOptions{op, 0});
              const GradStepStats s =
                  device.allreduce(world(), kKey, g.view(), got.view(), op, emulated(t));
              expect_bits_equal(got, want, what);
              expect_identical_across_ranks(got, what);
              EXPECT_TRUE(same_bits(device.residual(kKey), host.residual(kKey)))
                  << what << ": residuals differ";
              EXPECT_TRUE(s.compressed) << what;
              EXPECT_GT(s.payload_bytes, 0u) << what;
            }
          }
        }
      }
    }
  }
}

// reduce_scatter: ef+'s first stage only (each chunk to its owner), as grad_reduce_scatter (out
// of place and in place).
TEST(DeviceGrad, ReduceScatterMatchesTheHostCompressor) {
  const int p = world().size(), r = world().rank();
  for (const DType d : {DType::kF32, DType::kBF16}) {
    for (const bool in_place : {false, true}) {
      GradCompressor host("ef+quant:bits=4");
      DeviceGradCompressor device("ef+quant:bits=4");
      const size_t n = 10007;
      const ChunkRange mine = chunk_range(n, p, r);
      for (int step = 0; step < 3; ++step) {
        const std::string what = std::string(dtype_name(d)) + (in_place ? " in place" : "") +
                                 " step " + std::to_string(step);
        const Buffer g = gradient(d, n, step);
        Buffer want(d, mine.count);
        grad_reduce_scatter(world(), host, GradTensor{3, {}}, g.view(), want.view(),
                            GradOptions{ReduceOp::kAverage, 0});
        Buffer got_in = clone(g), got(d, mine.count);
        const TensorView shard = in_place ? view_of(got_in, mine.offset, mine.count) : got.view();
        device.reduce_scatter(world(), 3, got_in.view(), shard, ReduceOp::kAverage, emulated());
        const Buffer result = in_place ? part_of(got_in, mine.offset, mine.count) : clone(got);
        expect_bits_equal(result, want, "reduce_scatter " + what);
        EXPECT_TRUE(same_bits(device.residual(3), host.residual(3))) << what << ": residuals";
      }
    }
  }
}

// In place, and "none" (a plain allreduce, no state).
TEST(DeviceGrad, InPlaceAndNone) {
  const size_t n = 4099;
  GradCompressor host("ef+quant:bits=4");
  DeviceGradCompressor device("ef+quant:bits=4");
  Buffer want = gradient(DType::kF32, n, 0), got = clone(want);
  grad_allreduce(world(), host, GradTensor{5, {}}, want.view(), GradOptions{ReduceOp::kSum, 0});
  device.allreduce(world(), 5, got.view(), got.view(), ReduceOp::kSum, emulated());
  expect_bits_equal(got, want, "in place");

  DeviceGradCompressor none("none");
  const Buffer g = gradient(DType::kF32, n, 1);
  Buffer plain(DType::kF32, n), via_none(DType::kF32, n);
  allreduce_device(world(), g.view(), plain.view(), ReduceOp::kSum, emulated());
  const GradStepStats s =
      none.allreduce(world(), 5, g.view(), via_none.view(), ReduceOp::kSum, emulated());
  expect_bits_equal(via_none, plain, "none");
  EXPECT_FALSE(s.compressed);
  EXPECT_TRUE(none.residual(5).empty());
}

// hybrid's zero_grad rule (ef2+quant:bits=6 on reduce-scatters of the "zero" communicator).
TEST(DeviceGrad, HybridPolicyOnZeroGradMatchesTheHostPolicyPath) {
  const Communicator zero = world().dup("zero");
  PolicyEngine host_engine(Policy::preset("hybrid")), device_engine(Policy::preset("hybrid"));
  const size_t n = 1 << 16;
  const ChunkRange mine = chunk_range(n, zero.size(), zero.rank());
  for (int step = 0; step < 3; ++step) {
    const Buffer g = gradient(DType::kF32, n, step);
    Buffer want(DType::kF32, mine.count), got(DType::kF32, mine.count);
    CollectiveOptions h;
    h.policy = &host_engine;
    h.key = 5;
    reduce_scatter(zero, g.view(), want.view(), ReduceOp::kAverage, h);
    DeviceCollectiveOptions o = emulated();
    o.policy = &device_engine;
    o.key = 5;
    reduce_scatter_device(zero, g.view(), got.view(), ReduceOp::kAverage, o);
    expect_bits_equal(got, want, "hybrid zero_grad step " + std::to_string(step));
  }
  const CommStats s = device_engine.stats();
  const StatsEntry* e = s.find(Dimension::kZeroGrad, Operation::kReduceScatter);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->compressed_calls, zero.size() > 1 ? 3u : 0u);
}

TEST(DeviceGrad, HybridPolicyOnDpMatchesTheHostPolicyPath) {
  const Communicator dp = world().dup("dp");
  PolicyEngine host_engine(Policy::preset("hybrid")), device_engine(Policy::preset("hybrid"));
  const size_t n = 1 << 16;  // above hybrid's threshold
  for (int step = 0; step < 3; ++step) {
    const Buffer g = gradient(DType::kBF16, n, step);
    Buffer want = clone(g), got(DType::kBF16, n);
    CollectiveOptions h;
    h.policy = &host_engine;
    h.key = 99;
    allreduce(dp, want.view(), want.view(), ReduceOp::kAverage, h);
    DeviceCollectiveOptions o = emulated();
    o.policy = &device_engine;
    o.key = 99;
    CollectiveStats stats;
    o.stats = &stats;
    allreduce_device(dp, g.view(), got.view(), ReduceOp::kAverage, o);
    expect_bits_equal(got, want, "hybrid dp step " + std::to_string(step));
    EXPECT_EQ(stats.compressed, dp.size() > 1);
  }
  const CommStats s = device_engine.stats();
  const StatsEntry* e = s.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->calls, 3u);
  EXPECT_EQ(e->compressed_calls, dp.size() > 1 ? 3u : 0u);
  if (dp.size() > 1) {
    const std::string spec = "ef2+quant:bits=6,block=64,round=nearest";
    EXPECT_TRUE(same_bits(device_engine.device_grad_compressor(spec).residual(99),
                          host_engine.grad_compressor(spec).residual(99)));
  }
}

// save() writes GradCompressor::save()'s blob byte for byte; each loads the other's, and the
// resumed compressors continue with the same bits as the uninterrupted ones.
TEST(DeviceGrad, SaveAndLoadInterchangeWithTheHostCompressor) {
  const std::string spec = "ef+quant:bits=4,round=stochastic";
  const size_t n = 5003;
  GradCompressor host(spec);
  DeviceGradCompressor device(spec);
  const auto step_both = [&](GradCompressor& h, DeviceGradCompressor& d, int step, uint64_t key,
                             const std::string& what) {
    const Buffer g = gradient(DType::kF32, n, step + static_cast<int>(key));
    Buffer want = clone(g), got(DType::kF32, n);
    grad_allreduce(world(), h, GradTensor{key, {}}, want.view(), GradOptions{ReduceOp::kSum, 0});
    d.allreduce(world(), key, g.view(), got.view(), ReduceOp::kSum, emulated());
    expect_bits_equal(got, want, what);
    return got;
  };
  for (int step = 0; step < 2; ++step) {
    for (const uint64_t key : {uint64_t{1}, uint64_t{2}})
      step_both(host, device, step, key, "before");
  }
  const std::vector<std::byte> from_device = device.save(), from_host = host.save();
  EXPECT_TRUE(from_device == from_host) << "the device blob differs from the host's";
  GradCompressor host_resumed(spec);
  DeviceGradCompressor device_resumed(spec);
  host_resumed.load(from_device);
  device_resumed.load(from_host, emulated());
  const Buffer a = step_both(host, device, 2, 1, "uninterrupted");
  const Buffer b = step_both(host_resumed, device_resumed, 2, 1, "resumed");
  expect_bits_equal(b, a, "resumed vs uninterrupted");
  EXPECT_TRUE(same_bits(device_resumed.residual(1), device.residual(1)));

  std::vector<std::byte> bad = from_device;
  bad[bad.size() / 2] ^= std::byte{1};
  EXPECT_THROW(device_resumed.load(bad, emulated()), CorruptStream);
  EXPECT_THROW(DeviceGradCompressor("ef+quant:bits=8").load(from_device, emulated()),
               InvalidArgument);
}

// Every other spec: PowerSGD (matrices of one and of several row blocks, with and without error
// feedback and warm start, and a 1-D tensor that falls back to a plain allreduce), sign (with
// and without error feedback; uneven chunks, several tiles of sign::kTile values), top-k (ratio
// and count, ties among equal magnitudes), ef around codecs without kernels, ef2 (its server
// residual included in the saved states). Results,
// residuals, statistics and saved states equal the host's, step after step, allreduce and
// reduce_scatter.
TEST(DeviceGrad, EverySpecMatchesTheHostCompressorStepAfterStep) {
  const int p = world().size(), r = world().rank();
  struct Case {
    const char* spec;
    std::vector<size_t> shape;
    std::vector<std::vector<size_t>> pieces;  // a bucket (shape empty)
  };
  const Case cases[] = {{"none", {}, {}},
                        {"none", {40, 10}, {}},
                        {"powersgd:rank=2", {61, 37}, {}},
                        {"powersgd:rank=3,ef=off", {130, 17}, {}},
                        {"powersgd:rank=5,warm_start=off", {200, 21}, {}},
                        {"powersgd:rank=2,start=1", {61, 37}, {}},
                        {"powersgd:rank=2", {}, {}},
                        {"powersgd:rank=2,flat=plain", {}, {}},
                        {"topk:ratio=0.05", {}, {}},
                        {"topk:count=300,ef=off", {}, {}},
                        {"topk:ratio=0.5", {3, 8201}, {}},
                        {"sign", {}, {}},
                        {"sign:ef=off", {}, {}},
                        {"sign", {3, 8201}, {}},
                        {"ef+zstd", {}, {}},
                        {"ef+zfp:accuracy=1e-2", {}, {}},
                        {"ef2+quant:bits=6", {}, {}},
                        {"ef2+mpc", {}, {}},
                        {"ef2+zstd", {}, {}},
                        {"powersgd:rank=2", {}, {{61, 37}, {37}, {8, 8}, {20, 3, 10}, {5, 1}}},
                        {"powersgd:rank=3,ef=off,warm_start=off", {}, {{9}, {130, 17}}},
                        {"ef2+quant:bits=6", {}, {{61, 37}, {37}}}};
  for (const Case& c : cases) {
    const bool ef_codec = std::string(c.spec).rfind("ef", 0) == 0;
    const bool none = std::string(c.spec) == "none";
    for (const DType d : {DType::kF32, DType::kBF16}) {
      size_t n = c.shape.empty() && c.pieces.empty() ? 2257 : c.pieces.empty() ? 1 : 0;
      for (const size_t dim : c.shape) n *= dim;
      for (const std::vector<size_t>& piece : c.pieces) {
        size_t count = 1;
        for (const size_t dim : piece) count *= dim;
        n += count;
      }
      const ChunkRange mine = chunk_range(n, p, r);
      GradCompressor host(c.spec), host_rs(c.spec);
      DeviceGradCompressor device(c.spec), device_rs(c.spec);
      for (int step = 0; step < 3; ++step) {
        const std::string what = std::string(c.spec) + " " + std::string(dtype_name(d)) + " step " +
                                 std::to_string(step);
        GradTensor tensor{4, c.shape};
        tensor.pieces = c.pieces;
        const Buffer g = gradient(d, n, step);
        Buffer want = clone(g), got(d, n);
        const GradStepStats hs =
            grad_allreduce(world(), host, tensor, want.view(), GradOptions{ReduceOp::kAverage, 0});
        // Device none is allreduce_device: the host ring's bits (the host's none may run
        // natively, in MPI's order of sums).
        const auto host_ring = [&](ReduceOp op) {
          Buffer sum = clone(g);
          CollectiveOptions ring;
          ring.algorithm = Algorithm::kRing;
          ring.threshold_bytes = 0;
          allreduce(world(), sum.view(), sum.view(), op, ring);
          return sum;
        };
        if (none) want = host_ring(ReduceOp::kAverage);
        const GradStepStats ds =
            device.allreduce(world(), tensor, g.view(), got.view(), ReduceOp::kAverage, emulated());
        expect_bits_equal(got, want, what);
        expect_identical_across_ranks(got, what);
        EXPECT_TRUE(same_bits(device.residual(4), host.residual(4))) << what << ": residuals";
        EXPECT_EQ(ds.compressed, hs.compressed) << what;
        // ef's device payloads have no stream header; none moves the tensor's own dtype on the
        // device (float32 on the host) and counts the ring's bytes, not a formula.
        if (!ef_codec && !none) {
          EXPECT_EQ(ds.payload_bytes, hs.payload_bytes) << what;
          EXPECT_EQ(ds.wire_bytes, hs.wire_bytes) << what;
        }
        // ef2's blocks are padded to the largest payload, as the host's to the largest stream
        // (not to the codec's bound): no more bytes than the host's, whose streams have headers.
        if (std::string(c.spec).rfind("ef2+", 0) == 0) {
          EXPECT_LE(ds.wire_bytes, hs.wire_bytes) << what;
          EXPECT_LE(ds.payload_bytes, hs.payload_bytes) << what;
        }

        Buffer shard_want(d, mine.count), shard_got(d, mine.count);
        grad_reduce_scatter(world(), host_rs, tensor, g.view(), shard_want.view(),
                            GradOptions{ReduceOp::kSum, 0});
        if (none) {  // device none is reduce_scatter_device: the host ring's bits
          CollectiveOptions ring;
          ring.algorithm = Algorithm::kRing;
          ring.threshold_bytes = 0;
          reduce_scatter(world(), g.view(), shard_want.view(), ReduceOp::kSum, ring);
        }
        device_rs.reduce_scatter(world(), tensor, g.view(), shard_got.view(), ReduceOp::kSum,
                                 emulated());
        expect_bits_equal(shard_got, shard_want, what + " reduce_scatter");
        EXPECT_TRUE(same_bits(device_rs.residual(4), host_rs.residual(4)))
            << what << ": reduce_scatter residuals";
      }
      EXPECT_TRUE(device.save() == host.save()) << c.spec << ": saved states differ";
      EXPECT_TRUE(device_rs.save() == host_rs.save())
          << c.spec << ": saved states differ after reduce_scatter";
      if (std::string(c.spec) == "powersgd:rank=2") {  // a matrix, a bucket, a flat tensor
        EXPECT_FALSE(device.residual(4).empty()) << "PowerSGD compressed the matrix";
      }
    }
  }
  // The state moves between host and device compressors.
  GradCompressor host("topk:ratio=0.05");
  DeviceGradCompressor device("topk:ratio=0.05");
  const Buffer g = gradient(DType::kF32, 1000, 0);
  Buffer out(DType::kF32, 1000);
  device.allreduce(world(), 8, g.view(), out.view(), ReduceOp::kSum, emulated());
  host.load(device.save());
  EXPECT_TRUE(same_bits(host.residual(8), device.residual(8)));
  device.reset(8);
  EXPECT_TRUE(device.residual(8).empty());
}

// A step whose gradient overflowed on one rank (fp16 loss scaling): the device compressor
// restarts the state values that are not finite as the host's does (grad/method.h), so the
// overflowed step and the next have the host's bits, residuals and saved state, and the next
// step is finite.
TEST(DeviceGrad, AnOverflowedStepRestartsTheStateAsOnTheHost) {
  const struct {
    const char* spec;
    std::vector<size_t> shape;
  } cases[] = {{"ef+quant:bits=4", {}},       {"ef2+quant:bits=6", {}},
               {"powersgd:rank=2", {61, 37}}, {"sign", {}},
               {"topk:ratio=0.05", {}},       {"ef+zfp:rate=8", {}}};
  for (const auto& c : cases) {
    const size_t n = c.shape.empty() ? 2257 : c.shape[0] * c.shape[1];
    GradCompressor host(c.spec);
    DeviceGradCompressor device(c.spec);
    for (int step = 0; step < 3; ++step) {
      const std::string what = std::string(c.spec) + " step " + std::to_string(step);
      std::vector<float> values = gradient(DType::kF32, n, step).to_floats();
      if (step == 0 && world().rank() == 0) values[5] = INFINITY;
      const Buffer g = Buffer::from_floats(DType::kF32, values);
      Buffer want = clone(g), got(DType::kF32, n);
      const GradTensor tensor{3, c.shape};
      grad_allreduce(world(), host, tensor, want.view(), GradOptions{ReduceOp::kSum, 0});
      device.allreduce(world(), tensor, g.view(), got.view(), ReduceOp::kSum, emulated());
      expect_bits_equal(got, want, what);
      EXPECT_TRUE(same_bits(device.residual(3), host.residual(3))) << what << ": residuals";
      EXPECT_TRUE(device.save() == host.save()) << what << ": saved states differ";
      const std::vector<float> out = got.to_floats();
      const bool finite =
          std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); });
      EXPECT_EQ(finite, step != 0) << what;
    }
  }
}

// As on the host: ranks that pass other layouts (the same count) or specs all throw CommError
// naming them; keys may differ (each rank's own name for its state).
TEST(DeviceGrad, ArgumentsThatDifferAcrossRanksAreCommErrorEverywhere) {
  const int r = world().rank();
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  const bool odd = r % 2 == 1;
  const Buffer g = gradient(DType::kF32, 1000, 0);
  Buffer out(DType::kF32, 1000);
  DeviceGradCompressor powersgd("powersgd:rank=2");
  const GradTensor shape{1, odd ? std::vector<size_t>{40, 25} : std::vector<size_t>{25, 40}};
  expect_outcome(Outcome::kComm, "layouts", "layout hash", [&] {
    powersgd.allreduce(world(), shape, g.view(), out.view(), ReduceOp::kSum, emulated());
  });
  DeviceGradCompressor spec(odd ? "ef+zstd" : "ef+quant:bits=4");
  expect_outcome(Outcome::kComm, "specs", "spec hash", [&] {
    spec.allreduce(world(), 1, g.view(), out.view(), ReduceOp::kSum, emulated());
  });
  DeviceGradCompressor ef("ef+quant:bits=4");
  expect_outcome(Outcome::kOk, "keys", [&] {
    ef.allreduce(world(), 1 + static_cast<uint64_t>(r), g.view(), out.view(), ReduceOp::kSum,
                 emulated());
  });
  expect_identical_across_ranks(out, "keys that differ");
}

// check_arguments = kNever (no agreement before the step or inside it) gives the bits of the
// checked step, for the compressor and for a device collective; a value that is not an
// ArgumentCheck is refused on every rank.
TEST(DeviceGrad, UncheckedStepsGiveTheCheckedBits) {
  const Buffer g = gradient(DType::kF32, 3000, 0);
  DeviceCollectiveOptions unchecked = emulated();
  unchecked.check_arguments = ArgumentCheck::kNever;
  for (const char* spec : {"ef2+quant:bits=6", "ef+quant:bits=4", "powersgd:rank=2", "sign"}) {
    DeviceGradCompressor checked_c(spec), unchecked_c(spec);
    Buffer want(DType::kF32, 3000), got(DType::kF32, 3000);
    for (int step = 0; step < 2; ++step) {
      checked_c.allreduce(world(), 5, g.view(), want.view(), ReduceOp::kSum, emulated());
      unchecked_c.allreduce(world(), 5, g.view(), got.view(), ReduceOp::kSum, unchecked);
      expect_bits_equal(got, want, std::string(spec) + " unchecked");
    }
    DeviceCollectiveOptions invalid = emulated();
    invalid.check_arguments = static_cast<ArgumentCheck>(9);
    expect_outcome(Outcome::kInvalid, std::string(spec) + " invalid", "check_arguments", [&] {
      checked_c.allreduce(world(), 5, g.view(), got.view(), ReduceOp::kSum, invalid);
    });
  }
  DeviceCollectiveOptions quant = unchecked;
  quant.codec = CodecConfig::parse("quant:bits=8");
  Buffer want(DType::kF32, 3000), got(DType::kF32, 3000);
  allreduce_device(world(), g.view(), got.view(), ReduceOp::kSum, quant);
  quant.check_arguments = ArgumentCheck::kAuto;
  allreduce_device(world(), g.view(), want.view(), ReduceOp::kSum, quant);
  expect_bits_equal(got, want, "allreduce_device unchecked");
}

TEST(DeviceGrad, BadSpecsAndStaleStatesAreRejected) {
  for (const char* spec : {"nonsense", "ef+nonsense", "topk:ratio=2", "powersgd:rank=0"}) {
    EXPECT_THROW(DeviceGradCompressor{spec}, InvalidArgument) << spec;
  }
  DeviceGradCompressor device("ef+quant:bits=4");
  const Buffer a = gradient(DType::kF32, 100, 0), b = gradient(DType::kF32, 200, 0);
  Buffer out_a(DType::kF32, 100), out_b(DType::kF32, 200);
  device.allreduce(world(), 1, a.view(), out_a.view(), ReduceOp::kSum, emulated());
  EXPECT_THROW(device.allreduce(world(), 1, b.view(), out_b.view(), ReduceOp::kSum, emulated()),
               InvalidArgument);
  device.reset(1);
  device.allreduce(world(), 1, b.view(), out_b.view(), ReduceOp::kSum, emulated());
  EXPECT_EQ(device.residual(1).size(), 200u);
  // "none" keeps its key's shape too, as the host's does.
  DeviceGradCompressor none("none");
  none.allreduce(world(), 2, a.view(), out_a.view(), ReduceOp::kSum, emulated());
  EXPECT_THROW(none.allreduce(world(), 2, b.view(), out_b.view(), ReduceOp::kSum, emulated()),
               InvalidArgument);
  EXPECT_THROW(none.allreduce(world(), GradTensor{3, {7, 7}}, a.view(), out_a.view(),
                              ReduceOp::kSum, emulated()),
               InvalidArgument);
}

}  // namespace
}  // namespace hycc::test
