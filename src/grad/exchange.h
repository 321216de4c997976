// The few collective operations the gradient compressors need, behind a small interface:
// hycc's collectives over a Communicator (CommExchange) in the library, and an in-process group
// of threads (ThreadExchange) that lets unit tests run several ranks without MPI.
//
// Payloads are arrays of 32-bit words (packed bits, float bit patterns, codec streams padded to
// whole words); they travel bit for bit. Every rank passes equal sizes.
#pragma once

#include <cstdint>
#include <span>

#include "hycc/collectives.h"
#include "hycc/comm.h"

namespace hycc::grad {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // all = every rank's `mine`, in rank order (all.size() == size * mine.size()).
  void allgather(std::span<const uint32_t> mine, std::span<uint32_t> all);
  // send holds size equal blocks; block j goes to rank j, block i of recv comes from rank i.
  void alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv);
  // data = op over ranks of data, uncompressed float32, bit-identical on every rank.
  void allreduce(std::span<float> data, ReduceOp op);
  // This rank's chunk of data (chunk_range(data.size(), size, rank)) = that chunk of op over
  // ranks of data, uncompressed float32; the rest of data is left unspecified.
  void reduce_scatter(std::span<float> data, ReduceOp op);

  // Seconds spent in the calls above since construction.
  double seconds() const { return seconds_; }

 protected:
  virtual void do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) = 0;
  virtual void do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) = 0;
  virtual void do_allreduce(std::span<float> data, ReduceOp op) = 0;
  virtual void do_reduce_scatter(std::span<float> data, ReduceOp op) = 0;

 private:
  double seconds_ = 0;
};

// hycc collectives with codec none (the native MPI calls for counts below INT_MAX).
class CommExchange : public Exchange {
 public:
  CommExchange(const Communicator& comm, int tag);
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }

 protected:
  void do_allgather(std::span<const uint32_t> mine, std::span<uint32_t> all) override;
  void do_alltoall(std::span<const uint32_t> send, std::span<uint32_t> recv) override;
  void do_allreduce(std::span<float> data, ReduceOp op) override;
  void do_reduce_scatter(std::span<float> data, ReduceOp op) override;

 private:
  const Communicator& comm_;
  CollectiveOptions options_;
};

}  // namespace hycc::grad
