// DeviceGradCompressor's state of one key and the steps of the methods that run on the device
// (grad_device.cc holds the class: checks, states, save and load).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/device_ops.h"
#include "grad/device_kernels.h"
#include "grad/grad_spec.h"
#include "hycc/grad_device.h"

namespace hycc::grad {

using device::DeviceOps;
using device::Memory;
using device::Payload;

struct GradState {
  DeviceBackend backend = DeviceBackend::kCuda;
  DeviceStream stream = nullptr;
  Memory residual;  // residual_count float32 (0: none yet)
  size_t residual_count = 0;
  Memory aux;  // aux_count float32: PowerSGD's Q (transposed, r x cols); sign, ef2: server residual
  size_t aux_count = 0;
  size_t count = 0;
  int rank = 0, size = 0;
  uint64_t steps = 0;
};

// One step of a method on device buffers (the arguments are checked, the state is this key's).
struct DeviceStep {
  const Communicator& comm;
  device::DeviceOps& ops;
  DeviceKernels& kernels;                  // made for ops
  const DeviceCollectiveOptions& options;  // codec none, no policy
  const GradTensor& tensor;
  ConstTensorView grad;
  TensorView out;  // grad.count elements; with shard_only this rank's chunk only
  ReduceOp op;
  // A reduce-scatter: only this rank's chunk of the result is wanted (grad/method.h's StepArgs).
  // ef+, ef2+ and sign take it (stage 1 of the two stages only), none runs a plain
  // reduce-scatter; the others run whole steps.
  bool shard_only = false;
};

// ef+CODEC (grad_ef_device.cc); state.residual holds count floats. shard_only runs
// ef2_device_step's first stage, as the host method does.
GradStepStats ef_device_step(const DeviceStep& s, const CodecConfig& codec, GradState& state);
// ef2+CODEC (grad_ef2_device.cc): state.residual is the worker residual, state.aux the server's.
GradStepStats ef2_device_step(const DeviceStep& s, const CodecConfig& codec, GradState& state);
// powersgd (grad_powersgd_device.cc).
GradStepStats powersgd_device_step(const DeviceStep& s, const grad::GradSpec& spec,
                                   GradState& state);
// sign (grad_sign_device.cc): state.residual is the worker residual, state.aux the server's.
GradStepStats sign_device_step(const DeviceStep& s, bool error_feedback, GradState& state);
// topk (grad_topk_device.cc).
GradStepStats topk_device_step(const DeviceStep& s, const grad::GradSpec& spec, GradState& state);

// `count` float32 zeros of device memory.
Memory device_zeros(DeviceOps& ops, size_t count);
// acc (grad.count float32) = grad + e, e the residual (zeros on first use), with error feedback;
// grad widened to float32 (zeros as +0) without (grad/method.h's accumulate()).
void accumulate_gradient(const DeviceStep& s, bool error_feedback, GradState& state, float* acc);
// Seconds since t0.
double seconds_since(std::chrono::steady_clock::time_point t0);

// A device buffer of `count` float32 or 32-bit words (sign and ef2 move words).
struct DeviceWords {
  Memory memory;
  DeviceWords(DeviceOps& ops, size_t count) : memory(ops.allocate(count * 4)) {}
  float* f() const { return static_cast<float*>(memory.data()); }
  uint32_t* w() const { return static_cast<uint32_t*>(memory.data()); }
};

// Words as a float32 view: with codec none the collectives move their bits unchanged.
inline TensorView words_view(const DeviceWords& b, size_t count) {
  return {DType::kF32, count, b.w()};
}

// The seconds spent in the calls it runs (a step's communication).
struct CommClock {
  double seconds = 0;
  template <typename Call>
  void operator()(Call&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    seconds += seconds_since(t0);
  }
  // A step's times: its communication, and the rest since `start` as codec time.
  void settle(GradStepStats& stats, std::chrono::steady_clock::time_point start) const {
    stats.comm_seconds = seconds;
    stats.compress_seconds = seconds_since(start) - seconds;
  }
};

}  // namespace hycc::grad
