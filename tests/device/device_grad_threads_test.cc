// Device gradient steps of one PolicyEngine on two threads at once, each on a communicator of
// its own (hybrid's ef2+ compressor on dp and on zero_grad), host-emulated device. The ranks
// start the threads in opposite orders, so that a lock held over a whole step (communication
// included) deadlocks: rank 0's dp step would hold it while waiting for rank 1's dp step, which
// waits for the lock rank 1's zero_grad step holds while waiting for rank 0's. The steps must
// give the bits of the same steps run one after the other on a second engine.
#include <chrono>
#include <thread>
#include <vector>

#include "coll_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

constexpr size_t kCount = size_t{1} << 16;  // above hybrid's threshold
constexpr int kSteps = 3;

struct Results {
  std::vector<Buffer> dp, zero;  // one per step
};

DeviceCollectiveOptions emulated(PolicyEngine& engine, uint64_t key) {
  DeviceCollectiveOptions o;
  o.backend = DeviceBackend::kHostEmulation;
  o.policy = &engine;
  o.key = key;
  return o;
}

void dp_steps(const Communicator& dp, PolicyEngine& engine, Results& r) {
  for (int step = 0; step < kSteps; ++step) {
    const Buffer g = make_input(DType::kF32, kCount, dp.rank() + 7 * step, false);
    Buffer out(DType::kF32, kCount);
    allreduce_device(dp, g.view(), out.view(), ReduceOp::kAverage, emulated(engine, 1));
    r.dp.push_back(std::move(out));
  }
}

void zero_steps(const Communicator& zero, PolicyEngine& engine, Results& r) {
  const ChunkRange mine = chunk_range(kCount, zero.size(), zero.rank());
  for (int step = 0; step < kSteps; ++step) {
    const Buffer g = make_input(DType::kF32, kCount, 100 + zero.rank() + 7 * step, false);
    Buffer shard(DType::kF32, mine.count);
    reduce_scatter_device(zero, g.view(), shard.view(), ReduceOp::kSum, emulated(engine, 2));
    r.zero.push_back(std::move(shard));
  }
}

TEST(DeviceGradThreads, StepsOnTwoCommunicatorsRunAtOnce) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI gave no MPI_THREAD_MULTIPLE";
  const Communicator dp = world().dup("dp"), zero = world().dup("zero");
  PolicyEngine engine(Policy::preset("hybrid")), reference(Policy::preset("hybrid"));
  ASSERT_TRUE(engine.decide(dp, Operation::kAllreduce, kCount * 4).gradient);
  ASSERT_TRUE(engine.decide(zero, Operation::kReduceScatter, kCount * 4).gradient);

  Results got;
  const bool dp_first = dp.rank() % 2 == 0;
  const auto later = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  std::thread dp_thread([&] {
    if (!dp_first) later();
    dp_steps(dp, engine, got);
  });
  std::thread zero_thread([&] {
    if (dp_first) later();
    zero_steps(zero, engine, got);
  });
  dp_thread.join();
  zero_thread.join();

  Results want;
  dp_steps(dp, reference, want);
  zero_steps(zero, reference, want);
  ASSERT_EQ(got.dp.size(), want.dp.size());
  ASSERT_EQ(got.zero.size(), want.zero.size());
  for (int step = 0; step < kSteps; ++step) {
    expect_bits_equal(got.dp[step], want.dp[step], "dp step " + std::to_string(step));
    expect_bits_equal(got.zero[step], want.zero[step], "zero_grad step " + std::to_string(step));
  }
  if (dp.size() > 1) {
    const CommStats stats = engine.stats();
    const StatsEntry* e = stats.find(Dimension::kDp, Operation::kAllreduce);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->compressed_calls, static_cast<uint64_t>(kSteps));
  }
}

}  // namespace
}  // namespace hycc::test
