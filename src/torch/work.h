// The Works the hycc backend returns (backend.cc, coalesced.cc): a call completed (or failed,
// with hycc's exception) by its lane or when the inner backend's Work completes, and one Work
// for the parts of a coalesced call. wait() rethrows the failure, as c10d's Work does, and
// honours its timeout; the future carries the output tensors (what DDP's communication hooks
// read) or the failure.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <exception>
#include <functional>
#include <vector>

#include "torch/call_lane.h"

namespace hycc::torch_backend {

class HyccWork final : public c10d::Work {
 public:
  HyccWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  // The future first: a waiter woken by finish() may read it at once.
  void complete(std::exception_ptr error);
  // The peer an any-source receive took its tensor from (before complete()).
  void set_source(int rank) { source_ = rank; }

  int sourceRank() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_ = -1;
};

// Runs `then` with `work`'s failure (or none) once it has completed: from its future's
// callback, or for a Work without a future (some of gloo's: _reduce_scatter_base) on `waiter`'s
// thread, after the Works queued there before it.
void when_done(const c10::intrusive_ptr<c10d::Work>& work, CallLane& waiter,
               std::function<void(std::exception_ptr)> then);

// One Work for `parts`: it completes when they all have, with `outputs`, or fails with the first
// part's failure once they all have ended. No parts: completed. A part without a future (some of
// gloo's Works) is waited for on `waiter`'s thread.
c10::intrusive_ptr<c10d::Work> all_of(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                                      const std::vector<c10::intrusive_ptr<c10d::Work>>& parts,
                                      CallLane& waiter);

// The inner backend's Works of the calls hycc leaves to it (backend.cc, direct()): held until
// the inner backend's own thread has let go of one, then released on a caller's thread (at a
// later call) or at the interpreter's exit (release_inner_works), so that the last reference to
// the tensors a Work holds is not dropped by gloo's worker thread while Python finalizes, which
// aborts the process (call_lane.h, CallLane::quiesce; docs/torch.md, "Faults").
void hold_inner_work(c10::intrusive_ptr<c10d::Work> work);
// Waits until the inner backends' threads have let go of every Work held (at most until
// `deadline`), releases those, and keeps the rest (the process is exiting); whether all were.
bool release_inner_works(std::chrono::steady_clock::time_point deadline);

}  // namespace hycc::torch_backend
