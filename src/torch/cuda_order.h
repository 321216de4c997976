// CUDA tensors on a lane (backend.cc): a call the caller makes on its current stream runs on a
// stream of the lane's thread, ordered after what the caller queued before the call; the lane
// finishes it (the device collectives return once the result is in place) before the Work
// completes, so a wait() on the Work makes the result safe to use on any stream. Without a CUDA
// build of torch and hycc (HYCC_TORCH_CUDA), making one throws InvalidArgument.
#pragma once

#include <ATen/ATen.h>

#include <memory>

#include "hycc/device.h"

namespace hycc::torch_backend {

// On the caller's thread: a mark (a CUDA event) after the work queued so far on the current
// stream of `t`'s device.
class CudaOrder {
 public:
  explicit CudaOrder(const at::Tensor& t);
  ~CudaOrder();
  CudaOrder(const CudaOrder&) = delete;
  CudaOrder& operator=(const CudaOrder&) = delete;

  int device() const { return device_; }
  void* event() const { return event_; }

 private:
  int device_ = -1;
  void* event_ = nullptr;  // cudaEvent_t
};

// On the lane's thread, for one call: the order's device current, this thread's stream for it
// (made on first use) current for torch's operations too, after the order's mark.
class CudaScope {
 public:
  explicit CudaScope(const CudaOrder& order);
  ~CudaScope();
  CudaScope(const CudaScope&) = delete;
  CudaScope& operator=(const CudaScope&) = delete;

  // The stream the call's device collective runs on.
  DeviceStream stream() const { return stream_; }
  // Waits until everything queued on the stream is done (the call's last step).
  void finish() const;

 private:
  DeviceStream stream_ = nullptr;
  std::shared_ptr<void> guard_;  // torch's stream guard, restored on destruction
};

// Whether this build of the backend runs CUDA tensors (HYCC_TORCH_CUDA).
bool cuda_built();

}  // namespace hycc::torch_backend
