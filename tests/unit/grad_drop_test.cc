// Engine::drop_if_idle (the policy engine's drops of states whose buffers went away): a state
// whose step is running stays; an idle one goes.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "grad/engine.h"
#include "grad/thread_exchange.h"

namespace hycc::grad {
namespace {

bool has_state(const Engine& e, uint64_t key) {
  return e.with_states([key](const StateTable& t) { return t.count(key) != 0; });
}

TEST(GradDrop, AStateWhoseStepRunsStaysAnIdleOneGoes) {
  constexpr uint64_t kKey = 5;
  std::vector<Engine> engines;
  for (int r = 0; r < 2; ++r) engines.emplace_back("ef2+quant:bits=6");
  ThreadGroup group(2);
  std::vector<std::vector<float>> grads(2, std::vector<float>(4096, 0.5f));
  const auto step = [&](int r) {
    ThreadExchange ex(group, r);
    engines[size_t(r)].allreduce(ex, GradTensor{kKey, {}},
                                 {DType::kF32, grads[size_t(r)].size(), grads[size_t(r)].data()},
                                 ReduceOp::kSum);
  };
  // Rank 0's step takes its state, then waits in the exchange for rank 1, not yet started.
  std::thread rank0(step, 0);
  while (!has_state(engines[0], kKey)) std::this_thread::yield();
  EXPECT_FALSE(engines[0].drop_if_idle(kKey));
  EXPECT_TRUE(has_state(engines[0], kKey));
  std::thread rank1(step, 1);
  rank0.join();
  rank1.join();
  EXPECT_EQ(grads[0][0], 1.0f);  // 0.5 + 0.5, exact in 6-bit quantization of a constant block
  EXPECT_TRUE(engines[0].drop_if_idle(kKey));
  EXPECT_FALSE(has_state(engines[0], kKey));
  EXPECT_FALSE(engines[0].drop_if_idle(kKey));  // nothing left to drop
}

}  // namespace
}  // namespace hycc::grad
