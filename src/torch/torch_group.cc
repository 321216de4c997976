#include "torch/torch_group.h"

#include <vector>

#include "hycc/error.h"

namespace hycc::torch_backend {
namespace {

c10d::ReduceOp reduce_op(comm::Combine how) {
  switch (how) {
    case comm::Combine::kMin:
      return c10d::ReduceOp::MIN;
    case comm::Combine::kMax:
      return c10d::ReduceOp::MAX;
    case comm::Combine::kSum:
      return c10d::ReduceOp::SUM;
  }
  return c10d::ReduceOp::SUM;
}

// Waits for `work`; a failure of the wire becomes hycc's CommError with torch's message.
void finish(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw CommError(tagged("torch", what, " on the wire group failed: ", e.what()));
  }
}

}  // namespace

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return at::kFloat;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF16:
      return at::kHalf;
  }
  throw InvalidArgument(tagged("torch", "no torch type for dtype ", int(dtype)));
}

at::Tensor as_tensor(ConstTensorView view) {
  return at::from_blob(const_cast<void*>(view.data), {static_cast<int64_t>(view.count)},
                       at::TensorOptions().dtype(scalar_type(view.dtype)));
}

TorchGroup::TorchGroup(c10::intrusive_ptr<c10d::Backend> wire, std::string label)
    : wire_(std::move(wire)), label_(std::move(label)) {}

std::string TorchGroup::describe() const {
  return "torch process group" + (label_.empty() ? std::string() : " '" + label_ + "'") + " (" +
         wire_->getBackendName() + " wire)";
}

int64_t TorchGroup::tag_upper_bound() const { return kDataTagOffset - 1; }

std::unique_ptr<comm::Transport> TorchGroup::host_transport(comm::DeviceOps& host, int tag) {
  return make_torch_transport(*wire_, host, tag);
}

void TorchGroup::combine(std::span<int64_t> values, comm::Combine how) {
  std::vector<at::Tensor> t{at::from_blob(values.data(), {static_cast<int64_t>(values.size())},
                                          at::TensorOptions().dtype(at::kLong))};
  finish(wire_->allreduce(t, {.reduceOp = reduce_op(how)}), "combine");
}

void TorchGroup::combine(std::span<double> values, comm::Combine how) {
  std::vector<at::Tensor> t{at::from_blob(values.data(), {static_cast<int64_t>(values.size())},
                                          at::TensorOptions().dtype(at::kDouble))};
  finish(wire_->allreduce(t, {.reduceOp = reduce_op(how)}), "combine");
}

void TorchGroup::barrier() { finish(wire_->barrier(), "barrier"); }

void TorchGroup::allreduce(ConstTensorView send, TensorView recv, ReduceOp op) {
  std::vector<at::Tensor> t{as_tensor(recv)};
  if (send.data != recv.data) t[0].copy_(as_tensor(send));
  finish(wire_->allreduce(t), "allreduce");
  if (op == ReduceOp::kAverage) t[0].div_(size());
}

void TorchGroup::reduce_scatter(ConstTensorView send, TensorView recv, ReduceOp op) {
  const size_t p = static_cast<size_t>(size());
  at::Tensor out = as_tensor(recv);
  if (send.count % p == 0 && send.data != recv.data) {
    at::Tensor in = as_tensor(send);
    finish(wire_->_reduce_scatter_base(out, in), "reduce_scatter");
  } else {  // uneven chunks (chunk_range): the sum everywhere, then this rank's chunk
    at::Tensor sum = as_tensor(send).clone();
    std::vector<at::Tensor> t{sum};
    finish(wire_->allreduce(t), "reduce_scatter");
    const ChunkRange own = chunk_range(send.count, size(), rank());
    out.copy_(sum.narrow(0, static_cast<int64_t>(own.offset), static_cast<int64_t>(own.count)));
  }
  if (op == ReduceOp::kAverage) out.div_(size());
}

void TorchGroup::allgather(ConstTensorView send, TensorView recv) {
  at::Tensor out = as_tensor(recv);
  at::Tensor in = as_tensor(send);
  if (send.data ==
      out.narrow(0, static_cast<int64_t>(send.count) * rank(), static_cast<int64_t>(send.count))
          .data_ptr()) {
    in = in.clone();  // gloo reads the input while it writes the output
  }
  finish(wire_->_allgather_base(out, in), "allgather");
}

void TorchGroup::broadcast(TensorView buffer, int root) {
  std::vector<at::Tensor> t{as_tensor(buffer)};
  finish(wire_->broadcast(t, {.rootRank = root}), "broadcast");
}

void TorchGroup::alltoall(ConstTensorView send, TensorView recv) {
  at::Tensor out = as_tensor(recv);
  at::Tensor in = as_tensor(send);
  if (send.data == recv.data) in = in.clone();
  std::vector<int64_t> even;
  finish(wire_->alltoall_base(out, in, even, even), "alltoall");
}

}  // namespace hycc::torch_backend
