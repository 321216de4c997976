#include "grad/thread_exchange.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

namespace hycc::grad {

ThreadGroup::ThreadGroup(int size)
    : size_(size), barrier_(size), slots_(static_cast<size_t>(size)) {}

void ThreadGroup::run(const std::function<void(int)>& fn) {
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

void ThreadExchange::share(const void* mine,
                           const std::function<void(const std::vector<const void*>&)>& read) {
  group_.slots_[static_cast<size_t>(rank_)] = mine;
  group_.barrier_.arrive_and_wait();
  read(group_.slots_);
  group_.barrier_.arrive_and_wait();
}

void ThreadExchange::do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) {
  share(mine.data(), [&](const std::vector<const void*>& slots) {
    for (size_t j = 0; j < slots.size(); ++j) {
      const auto* src = static_cast<const uint32_t*>(slots[j]);
      std::copy(src, src + mine.size(), all.begin() + static_cast<std::ptrdiff_t>(j * mine.size()));
    }
  });
}

void ThreadExchange::do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) {
  const size_t block = send.size() / static_cast<size_t>(size());
  const size_t me = static_cast<size_t>(rank_);
  share(send.data(), [&](const std::vector<const void*>& slots) {
    for (size_t j = 0; j < slots.size(); ++j) {
      const auto* src = static_cast<const uint32_t*>(slots[j]) + me * block;
      std::copy(src, src + block, recv.begin() + static_cast<std::ptrdiff_t>(j * block));
    }
  });
}

void ThreadExchange::do_allreduce(std::span<float> data, ReduceOp op) {
  reduce_range(data, 0, data.size(), op);
}

void ThreadExchange::do_reduce_scatter(std::span<float> data, ReduceOp op) {
  const ChunkRange mine = chunk_range(data.size(), size(), rank_);
  reduce_range(data, mine.offset, mine.count, op);
}

void ThreadExchange::reduce_range(std::span<float> data, size_t offset, size_t count, ReduceOp op) {
  std::vector<float> sum(count);
  share(data.data(), [&](const std::vector<const void*>& slots) {
    for (size_t j = 0; j < slots.size(); ++j) {
      const float* src = static_cast<const float*>(slots[j]) + offset;
      for (size_t i = 0; i < count; ++i) sum[i] = j == 0 ? src[i] : sum[i] + src[i];
    }
  });
  if (op == ReduceOp::kAverage) {
    for (float& s : sum) s /= static_cast<float>(size());
  }
  std::copy(sum.begin(), sum.end(), data.begin() + static_cast<std::ptrdiff_t>(offset));
}

}  // namespace hycc::grad
