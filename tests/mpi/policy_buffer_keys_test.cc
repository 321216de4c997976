// Gradient states keyed by buffer (no CollectiveOptions::key): one per buffer in use. A call on
// memory that overlaps an earlier buffer but is not it (another start or length) drops the
// earlier buffer's state; a buffer reduced again keeps its own; caller-given keys stay. The
// engine counts its states and their bytes (HYCC_LOG's summary and JSON report them).
#include <gtest/gtest.h>

#include <vector>

#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/grad.h"
#include "hycc/grad_device.h"
#include "hycc/policy_engine.h"
#include "policy/policy_calls.h"

namespace hycc::test {
namespace {

constexpr char kSpec[] = "ef2+quant:bits=6,block=64,round=nearest";  // hybrid's dp gradients
constexpr size_t kN = 1 << 16;                                       // above hybrid's threshold

void fill(std::vector<float>& v, int rank, int step) {
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(int((i * 5 + rank + step * 3) % 13) - 6) * 0.25f;
}

class PolicyBufferKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    if (dp_.size() == 1) GTEST_SKIP() << "one rank runs natively: no compressor state";
  }
  // An in-place allreduce of `count` values at `data`, keyed by the buffer (host or device).
  void reduce(float* data, size_t count, bool device, uint64_t key = 0) {
    std::vector<float> v(count);
    fill(v, dp_.rank(), step_++);
    std::copy(v.begin(), v.end(), data);
    const TensorView t{DType::kF32, count, data};
    if (device) {
      DeviceCollectiveOptions o;
      o.backend = DeviceBackend::kHostEmulation;
      o.policy = &engine_;
      o.key = key;
      allreduce_device(dp_, t, t, ReduceOp::kSum, o);
    } else {
      CollectiveOptions o;
      o.policy = &engine_;
      o.key = key;
      allreduce(dp_, t, t, ReduceOp::kSum, o);
    }
  }
  bool has_state(const float* data, size_t count, bool device) {
    const uint64_t key = policy::buffer_key(data, count, Dimension::kDp, Operation::kAllreduce);
    return !(device ? engine_.device_grad_compressor(kSpec).residual(key)
                    : engine_.grad_compressor(kSpec).residual(key))
                .empty();
  }

  Communicator dp_ = Communicator::world().dup("dp");
  PolicyEngine engine_{Policy::preset("hybrid")};
  int step_ = 0;
};

TEST_F(PolicyBufferKeys, OneBufferAtChangingLengthsKeepsOneState) {
  std::vector<float> buffer(kN);
  for (const bool device : {false, true}) {
    for (size_t s = 0; s < 5; ++s) {
      const size_t count = kN - 8 * s;  // a fusion buffer: a new length each round
      reduce(buffer.data(), count, device);
      EXPECT_TRUE(has_state(buffer.data(), count, device));
      if (s > 0) {
        EXPECT_FALSE(has_state(buffer.data(), count + 8, device)) << s;
      }
    }
    if (!device) {
      EXPECT_EQ(engine_.grad_compressor(kSpec).tensors(), 1u);
      EXPECT_EQ(engine_.gradient_states().dropped, 4u);  // each new length, the last state
    }
  }
  // The device pass: its first buffer is the host's last (another compressor: dropped too).
  EXPECT_EQ(engine_.gradient_states().dropped, 9u);
}

TEST_F(PolicyBufferKeys, DisjointBuffersKeepTheirStatesOverlappingOnesReplaceThem) {
  std::vector<float> memory(3 * kN);
  float* a = memory.data();
  float* b = memory.data() + kN;
  for (const bool device : {false, true}) {
    reduce(a, kN, device);
    reduce(b, kN, device);
    reduce(a, kN, device);  // the same buffer again: its state stays and steps on
    EXPECT_TRUE(has_state(a, kN, device));
    EXPECT_TRUE(has_state(b, kN, device));
    // Memory from inside a to inside b now holds another buffer: both earlier states go.
    float* c = a + kN / 2;
    reduce(c, kN, device);
    EXPECT_FALSE(has_state(a, kN, device));
    EXPECT_FALSE(has_state(b, kN, device));
    EXPECT_TRUE(has_state(c, kN, device));
    // A buffer that begins where c ends touches nothing.
    reduce(c + kN, kN, device);
    EXPECT_TRUE(has_state(c, kN, device));
    EXPECT_TRUE(has_state(c + kN, kN, device));
    if (!device) {
      EXPECT_EQ(engine_.grad_compressor(kSpec).tensors(), 2u);
    }
  }
  // The device calls' buffers were the host calls' memory: the host states went with it.
  EXPECT_EQ(engine_.grad_compressor(kSpec).tensors(), 0u);
}

// Memory that held a dp gradient and holds a zero gradient now (a program that freed one buffer
// and got its address back for the other) starts a state of its own: the reduce-scatter's
// results are those of the same call on other memory, not shifted by the allreduce's residual.
TEST_F(PolicyBufferKeys, AnotherKindOfCallOnTheSameMemoryStartsAfresh) {
  const Communicator zero = Communicator::world().dup("zero");
  const auto shard_of = [&](float* data) {
    std::vector<float> v(kN);
    fill(v, dp_.rank(), 7);
    std::copy(v.begin(), v.end(), data);
    std::vector<float> out(chunk_range(kN, zero.size(), zero.rank()).count);
    CollectiveOptions o;
    o.policy = &engine_;
    reduce_scatter(zero, {DType::kF32, kN, data}, {DType::kF32, out.size(), out.data()},
                   ReduceOp::kSum, o);
    return out;
  };
  std::vector<float> reused(kN), fresh(kN);
  reduce(reused.data(), kN, false);  // a dp gradient step leaves a residual there
  EXPECT_TRUE(has_state(reused.data(), kN, false));
  EXPECT_EQ(shard_of(reused.data()), shard_of(fresh.data()));
  EXPECT_FALSE(has_state(reused.data(), kN, false));  // the dp state went with the memory
}

TEST_F(PolicyBufferKeys, CallerKeysAreNeverDropped) {
  std::vector<float> buffer(kN);
  reduce(buffer.data(), kN, false, /*key=*/7);
  reduce(buffer.data(), kN - 8, false);  // the same memory, keyed by the buffer
  reduce(buffer.data() + 8, kN - 8, false);
  EXPECT_FALSE(engine_.grad_compressor(kSpec).residual(7).empty());
  EXPECT_FALSE(has_state(buffer.data(), kN - 8, false));
  EXPECT_TRUE(has_state(buffer.data() + 8, kN - 8, false));
  EXPECT_EQ(engine_.grad_compressor(kSpec).tensors(), 2u);
}

TEST_F(PolicyBufferKeys, TheEngineCountsItsStatesInBytes) {
  std::vector<float> memory(2 * kN);
  reduce(memory.data(), kN, false);
  reduce(memory.data() + kN, kN, true);
  // ef2+: the worker residual (every value) and the server residual (this rank's chunk).
  const double bytes = double(kN + chunk_range(kN, dp_.size(), dp_.rank()).count) * 4;
  const GradientStates states = engine_.gradient_states();
  EXPECT_EQ(states.tensors, 2u);
  EXPECT_EQ(states.host_bytes, uint64_t(bytes));
  EXPECT_EQ(states.device_bytes, uint64_t(bytes));
  EXPECT_EQ(states.dropped, 0u);
  EXPECT_EQ(engine_.grad_compressor(kSpec).state_bytes(), size_t(bytes));
  EXPECT_EQ(engine_.device_grad_compressor(kSpec).tensors(), 1u);
}

}  // namespace
}  // namespace hycc::test
