// hycc's view of a torch process group (comm/group.h): the ranks of a c10d backend, here one of
// the gloo backends the hycc backend creates beside the caller's for hycc's own traffic (a
// lane's wire, call_lane.h). Payloads travel as byte tensors through the wire's send and recv
// (torch_transport.cc), the small collectives and the native path are the wire's collectives.
// Only the lane's thread uses its wire, so the wire sees every rank's calls in one order.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <memory>
#include <string>

#include "comm/group.h"

namespace hycc::torch_backend {

// c10d's element type of a hycc DType.
at::ScalarType scalar_type(DType dtype);
// A CPU tensor over the elements of `view` (no copy).
at::Tensor as_tensor(ConstTensorView view);

class TorchGroup final : public comm::Group {
 public:
  TorchGroup(c10::intrusive_ptr<c10d::Backend> wire, std::string label);

  int rank() const override { return wire_->getRank(); }
  int size() const override { return wire_->getSize(); }
  std::string describe() const override;
  int64_t tag_upper_bound() const override;
  std::unique_ptr<comm::Transport> host_transport(comm::DeviceOps& host, int tag) override;
  void combine(std::span<int64_t> values, comm::Combine how) override;
  void combine(std::span<double> values, comm::Combine how) override;
  void barrier() override;
  void allreduce(ConstTensorView send, TensorView recv, ReduceOp op) override;
  void reduce_scatter(ConstTensorView send, TensorView recv, ReduceOp op) override;
  void allgather(ConstTensorView send, TensorView recv) override;
  void broadcast(TensorView buffer, int root) override;
  void alltoall(ConstTensorView send, TensorView recv) override;

 private:
  c10::intrusive_ptr<c10d::Backend> wire_;
  std::string label_;
};

// The transport over `wire`'s point to point (torch_transport.cc): each payload's size as an
// 8-byte message on `tag`, its bytes on `tag` + kDataTagOffset.
constexpr int kDataTagOffset = 1 << 30;
std::unique_ptr<comm::Transport> make_torch_transport(c10d::Backend& wire, comm::DeviceOps& host,
                                                      int tag);

}  // namespace hycc::torch_backend
