// Coalesced calls of the hycc backend (backend.h): allreduce_coalesced,
// allgather_into_tensor_coalesced and reduce_scatter_tensor_coalesced, which torch's
// _coalescing_manager makes of the calls inside it (Megatron-core's DDP reduces its buckets so)
// and its functional collectives make for DTensor, and the startCoalescing/endCoalescing pair.
//
// Each tensor is decided as the same call alone would be, so a coalesced call compresses (and
// counts in the statistics) exactly what the calls one by one would: the compressed tensors run
// on their lane in the call's order (their gradient states keyed as the calls alone), the others
// go to the inner backend's own coalesced call together, so that a call hycc leaves whole is
// gloo's (NCCL's) bits. One Work completes when both parts have.
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "hycc/error.h"
#include "torch/backend.h"
#include "torch/call_args.h"
#include "torch/tensors.h"
#include "torch/work.h"

namespace hycc::torch_backend {
namespace {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// Whether hycc takes every tensor of `tensors` and they are alike (one element type, one device)
// to `like`.
bool taken_alike(const std::vector<at::Tensor>& tensors, const at::Tensor& like) {
  for (const at::Tensor& t : tensors) {
    if (!hycc_takes(t) || !alike(t, like)) return false;
  }
  return true;
}

// Whether hycc takes the pairs of a coalesced reduce-scatter or all-gather: as many `small` as
// `large` tensors, all alike and taken, each large one `size` times its small one.
bool paired(const std::vector<at::Tensor>& small, const std::vector<at::Tensor>& large, int size) {
  if (small.empty() || small.size() != large.size() || !taken_alike(small, small[0]) ||
      !taken_alike(large, small[0])) {
    return false;
  }
  for (size_t i = 0; i < small.size(); ++i) {
    if (large[i].numel() != small[i].numel() * size) return false;
  }
  return true;
}

}  // namespace

WorkPtr HyccBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                         const c10d::AllreduceCoalescedOptions& opts) {
  const std::optional<ReduceOp> op = hycc_reduction(opts.reduceOp);
  if (tensors.empty() || !op || !taken_alike(tensors, tensors[0])) {
    return made(inner_for(first(tensors))->allreduce_coalesced(tensors, opts));
  }
  std::vector<at::Tensor> native;
  std::vector<NativeCall> native_calls;
  std::vector<std::function<void()>> compressed;
  for (const at::Tensor& t : tensors) {
    const Routing r = route(Operation::kAllreduce, t.nbytes(), t);
    if (!r.compresses) {
      native.push_back(t);
      native_calls.push_back({*r.decision, t.nbytes()});
      continue;
    }
    compressed.push_back([this, t, reduce = opts.reduceOp, op = *op, decision = r.decision,
                          key = gradient_key(Operation::kAllreduce, t), order = cuda_order(t)] {
      run_allreduce(t, reduce, op, decision, key, order);
    });
  }
  WorkPtr native_work;
  if (!native.empty() && native[0].is_cuda()) {
    native_work = cuda_direct(Operation::kAllreduce, native_calls,
                              cuda_inner_->allreduce_coalesced(native, opts));
  } else if (!native.empty()) {
    for (at::Tensor& t : native) premultiply(opts.reduceOp, t);
    c10d::AllreduceCoalescedOptions sum = opts;
    sum.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
    std::function<void()> after;
    if (*op == ReduceOp::kAverage) {
      after = [native, p = getSize()]() mutable {
        for (at::Tensor& t : native) t.div_(p);
      };
    }
    native_work = direct(Operation::kAllreduce, std::move(native_calls),
                         inner_->allreduce_coalesced(native, sum), native, std::move(after));
  }
  return coalesced_work(Operation::kAllreduce, c10d::OpType::ALLREDUCE_COALESCED, tensors,
                        std::move(native_work), std::move(compressed));
}

WorkPtr HyccBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::ReduceScatterOptions& opts) {
  const std::optional<ReduceOp> op = hycc_reduction(opts.reduceOp);
  if (!op || !paired(outputs, inputs, getSize())) {
    return made(inner_for(first(inputs))->reduce_scatter_tensor_coalesced(outputs, inputs, opts));
  }
  std::vector<at::Tensor> native_in, native_out;
  std::vector<NativeCall> native_calls;
  std::vector<std::function<void()>> compressed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& in = inputs[i];
    const Routing r = route(Operation::kReduceScatter, in.nbytes(), in);
    if (!r.compresses) {
      native_in.push_back(in);
      native_out.push_back(outputs[i]);
      native_calls.push_back({*r.decision, in.nbytes()});
      continue;
    }
    compressed.push_back([this, out = outputs[i], in, reduce = opts.reduceOp, op = *op,
                          decision = r.decision, key = gradient_key(Operation::kReduceScatter, in),
                          order = cuda_order(in)] {
      run_reduce_scatter(out, in, reduce, op, decision, key, order);
    });
  }
  WorkPtr native_work;
  if (!native_in.empty() && native_in[0].is_cuda()) {
    native_work =
        cuda_direct(Operation::kReduceScatter, native_calls,
                    cuda_inner_->reduce_scatter_tensor_coalesced(native_out, native_in, opts));
  } else if (!native_in.empty()) {
    if (opts.reduceOp.op_ == c10d::ReduceOp::PREMUL_SUM) {
      for (at::Tensor& in : native_in) {
        in = in.clone();  // the caller's input stays as it is
        premultiply(opts.reduceOp, in);
      }
    }
    c10d::ReduceScatterOptions sum = opts;
    sum.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
    std::function<void()> after;
    if (*op == ReduceOp::kAverage) {
      after = [native_out, p = getSize()]() mutable {
        for (at::Tensor& t : native_out) t.div_(p);
      };
    }
    native_work = direct(Operation::kReduceScatter, std::move(native_calls),
                         inner_->reduce_scatter_tensor_coalesced(native_out, native_in, sum),
                         native_out, std::move(after));
  }
  return coalesced_work(Operation::kReduceScatter, c10d::OpType::COALESCED, outputs,
                        std::move(native_work), std::move(compressed));
}

WorkPtr HyccBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) {
  if (!paired(inputs, outputs, getSize())) {
    return made(inner_for(first(inputs))->allgather_into_tensor_coalesced(outputs, inputs, opts));
  }
  std::vector<at::Tensor> native_in, native_out;
  std::vector<NativeCall> native_calls;
  std::vector<std::function<void()>> compressed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& out = outputs[i];
    const Routing r = route(Operation::kAllgather, out.nbytes(), out);
    if (!r.compresses) {
      native_in.push_back(inputs[i]);
      native_out.push_back(out);
      native_calls.push_back({*r.decision, out.nbytes()});
      continue;
    }
    compressed.push_back(
        [this, out, in = inputs[i], decision = r.decision, order = cuda_order(inputs[i])] {
          run_allgather(out, in, decision, order);
        });
  }
  WorkPtr native_work;
  if (!native_in.empty() && native_in[0].is_cuda()) {
    native_work =
        cuda_direct(Operation::kAllgather, native_calls,
                    cuda_inner_->allgather_into_tensor_coalesced(native_out, native_in, opts));
  } else if (!native_in.empty()) {
    native_work =
        direct(Operation::kAllgather, std::move(native_calls),
               inner_->allgather_into_tensor_coalesced(native_out, native_in, opts), native_out);
  }
  return coalesced_work(Operation::kAllgather, c10d::OpType::ALLGATHER_COALESCED, outputs,
                        std::move(native_work), std::move(compressed));
}

WorkPtr HyccBackend::coalesced_work(Operation op, c10d::OpType type,
                                    const std::vector<at::Tensor>& outputs, WorkPtr native,
                                    std::vector<std::function<void()>> compressed) {
  std::vector<WorkPtr> parts;
  if (native) parts.push_back(std::move(native));
  if (!compressed.empty()) {
    // One after the other on the lane (the first failure ends them).
    parts.push_back(enqueue(op, type, outputs, [calls = std::move(compressed)] {
      for (const auto& call : calls) call();
    }));
  }
  if (parts.size() == 1) return made(parts[0]);
  return made(all_of(getRank(), type, outputs, parts, *waiter_));
}

void HyccBackend::startCoalescing() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (coalescing_) {
    throw InvalidArgument(tagged("torch", "startCoalescing on group '", getGroupDesc(),
                                 "', which is coalescing already"));
  }
  coalescing_ = true;
  coalesced_.clear();
}

WorkPtr HyccBackend::endCoalescing() {
  std::vector<WorkPtr> parts;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!coalescing_) {
      throw InvalidArgument(
          tagged("torch", "endCoalescing on group '", getGroupDesc(), "' without startCoalescing"));
    }
    coalescing_ = false;
    parts.swap(coalesced_);
  }
  return all_of(getRank(), c10d::OpType::COALESCED, {}, parts, *waiter_);
}

WorkPtr HyccBackend::made(WorkPtr work) {
  if (!coalescing_) return work;  // every call passes here: no lock outside coalescing
  const std::lock_guard<std::mutex> lock(mutex_);
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

}  // namespace hycc::torch_backend
