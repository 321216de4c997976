// A group that is not MPI's (comm/group.h) for the tests: it forwards to MPI on a communicator
// of its own and counts what it is asked for, so that the same calls on an MPI communicator give
// the reference and a test can tell that the group really carried a call.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>

#include "comm/group.h"
#include "comm/transport.h"

namespace hycc::test {

class MpiBackedGroup final : public comm::Group {
 public:
  MpiBackedGroup() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~MpiBackedGroup() override { MPI_Comm_free(&comm_); }

  int rank() const override {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    return r;
  }
  int size() const override {
    int p = 0;
    MPI_Comm_size(comm_, &p);
    return p;
  }
  std::string describe() const override { return "test group"; }
  int64_t tag_upper_bound() const override { return 32767; }
  std::unique_ptr<comm::Transport> host_transport(comm::DeviceOps& host, int tag) override {
    ++transports;
    return comm::make_mpi_transport(host, comm_, tag);
  }
  void combine(std::span<int64_t> v, comm::Combine how) override {
    ++combines;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, op(how), comm_);
  }
  void combine(std::span<double> v, comm::Combine how) override {
    ++combines;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, op(how), comm_);
  }
  void barrier() override { MPI_Barrier(comm_); }
  // The native path: sums of float32 (what the tests reduce), bytes moved as they are.
  void allreduce(ConstTensorView send, TensorView recv, ReduceOp op) override {
    ++natives;
    ASSERT_EQ(send.dtype, DType::kF32);
    ASSERT_EQ(op, ReduceOp::kSum);
    const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
    MPI_Allreduce(from, recv.data, static_cast<int>(send.count), MPI_FLOAT, MPI_SUM, comm_);
  }
  void reduce_scatter(ConstTensorView, TensorView, ReduceOp) override { unexpected(); }
  void allgather(ConstTensorView send, TensorView recv) override {
    ++natives;
    const auto bytes = static_cast<int>(send.bytes());
    const std::byte* own = static_cast<const std::byte*>(recv.data) + bytes * rank();
    const void* from = send.data == own ? MPI_IN_PLACE : send.data;
    MPI_Allgather(from, bytes, MPI_BYTE, recv.data, bytes, MPI_BYTE, comm_);
  }
  void broadcast(TensorView buffer, int root) override {
    ++natives;
    MPI_Bcast(buffer.data, static_cast<int>(buffer.bytes()), MPI_BYTE, root, comm_);
  }
  void alltoall(ConstTensorView send, TensorView recv) override {
    ++natives;
    const auto block = static_cast<int>(send.bytes() / static_cast<size_t>(size()));
    const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
    MPI_Alltoall(from, block, MPI_BYTE, recv.data, block, MPI_BYTE, comm_);
  }

  std::atomic<int> transports{0}, combines{0}, natives{0};

 private:
  static MPI_Op op(comm::Combine how) {
    return how == comm::Combine::kMin ? MPI_MIN : how == comm::Combine::kMax ? MPI_MAX : MPI_SUM;
  }
  static void unexpected() { ADD_FAILURE() << "a native call the test does not make"; }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A communicator over a test group and an MPI communicator of the same ranks, both named "dp":
// a call on each must give the same result.
struct GroupBesideMpi {
  std::shared_ptr<MpiBackedGroup> group = std::make_shared<MpiBackedGroup>();
  Communicator over = Communicator::over(group, "dp");
  Communicator mpi = Communicator::world().dup("dp");
};

}  // namespace hycc::test
