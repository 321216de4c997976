// An Exchange between threads of one process: `size` threads share a ThreadGroup, each with its
// own ThreadExchange. Used by the unit tests to run several ranks of a compressor without MPI.
// Reductions add in rank order in float32, as the compressors themselves do.
#pragma once

#include <barrier>
#include <functional>
#include <vector>

#include "grad/exchange.h"

namespace hycc::grad {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  int size() const { return size_; }

  // Runs fn(rank) on `size` threads and waits for them; rethrows the first exception. A rank
  // that throws leaves the others waiting, so tests use it only for calls that cannot fail.
  void run(const std::function<void(int rank)>& fn);

 private:
  friend class ThreadExchange;
  int size_;
  std::barrier<> barrier_;
  std::vector<const void*> slots_;
};

class ThreadExchange : public Exchange {
 public:
  ThreadExchange(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

 protected:
  void do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) override;
  void do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) override;
  void do_allreduce(std::span<float> data, ReduceOp op) override;
  void do_reduce_scatter(std::span<float> data, ReduceOp op) override;

 private:
  // data[offset, offset + count) = op over ranks of it, summed in rank order.
  void reduce_range(std::span<float> data, size_t offset, size_t count, ReduceOp op);
  // Publishes `mine`, waits for every rank, runs read(slots), waits again.
  void share(const void* mine, const std::function<void(const std::vector<const void*>&)>& read);

  ThreadGroup& group_;
  int rank_;
};

}  // namespace hycc::grad
