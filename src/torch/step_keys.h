// Stable keys for the error-feedback states of a hycc group's gradient calls. A c10d backend is
// handed tensors, not names: DDP reduces its buckets and FSDP2 its parameter groups' gradients in
// the same order every step, but FSDP2 allocates those buffers anew each step, so keys made of
// buffer addresses (the engine's default) lose their states. A call's key here is instead its
// place in the step: the group, the operation, the dtype and count, and how many calls of the
// same kind the group made before it since the last optimizer step (hycc.torch counts
// torch.optim's steps). That is the bucket or parameter group, the same on every step and in
// every run of the program, so the states also survive a checkpoint (PolicyEngine::save_state).
//
// Until the process's first optimizer step the calls keep the engine's buffer keys (a program
// that steps no torch.optim optimizer would otherwise make a key per call); at its first step
// the group leaves them, and from then on a key the group used two steps ago but not in the last
// is stale (a layout that changed: DDP rebuilds its buckets after the first step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/dtype.h"

namespace hycc::torch_backend {

// The process's optimizer steps, counted by hycc.torch's torch.optim step hook.
void count_optimizer_step();
uint64_t optimizer_steps();

class StepKeys {
 public:
  // `group`: the group's identity, the same in every run of the program (the order in which the
  // process made its hycc groups, and its size).
  explicit StepKeys(uint64_t group) : group_(group) {}

  struct Key {
    uint64_t key = 0;  // 0: the engine keys the call by its buffer
    // States to drop before the call: stale keys, or with leaving_buffer_keys every state the
    // engine keyed by buffer.
    std::vector<uint64_t> stale;
    bool leaving_buffer_keys = false;
  };
  // The key of the group's next gradient call (allreduce, reduce_scatter) of `count` elements of
  // `dtype`. Thread-safe; calls must come in the program's order.
  Key next(Operation op, DType dtype, size_t count);

 private:
  const uint64_t group_;
  std::mutex mutex_;
  uint64_t step_ = 0;  // optimizer_steps() when the group last keyed a call
  std::map<std::tuple<Operation, DType, size_t>, uint64_t> made_;  // calls of a kind this step
  std::set<uint64_t> used_;                                        // keys of this step
  std::set<uint64_t> used_before_;                                 // keys of the step before
};

}  // namespace hycc::torch_backend
