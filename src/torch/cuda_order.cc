#include "torch/cuda_order.h"

#include "common/host_syncs.h"
#include "hycc/error.h"

#if HYCC_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <map>
#endif

namespace hycc::torch_backend {

#if HYCC_TORCH_CUDA

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CommError(tagged("torch", what, ": ", cudaGetErrorString(e)));
  }
}

// This thread's stream on `device` (a lane's thread: one per device, for the process's life).
cudaStream_t lane_stream(int device) {
  thread_local std::map<int, cudaStream_t> streams;
  cudaStream_t& s = streams[device];
  if (s == nullptr) {
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  return s;
}

}  // namespace

bool cuda_built() { return true; }

CudaOrder::CudaOrder(const at::Tensor& t) : device_(t.device().index()) {
  const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(t.device().index());
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  event_ = e;
  check_cuda(cudaEventRecord(e, caller.stream()), "cudaEventRecord");
}

CudaOrder::~CudaOrder() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

CudaScope::CudaScope(const CudaOrder& order) {
  check_cuda(cudaSetDevice(order.device()), "cudaSetDevice");
  cudaStream_t s = lane_stream(order.device());
  check_cuda(cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(order.event()), 0),
             "cudaStreamWaitEvent");
  stream_ = s;
  guard_ = std::make_shared<c10::cuda::CUDAStreamGuard>(
      c10::cuda::getStreamFromExternal(s, static_cast<c10::DeviceIndex>(order.device())));
}

CudaScope::~CudaScope() = default;

void CudaScope::finish() const {
  count_host_sync();
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
}

#else

namespace {
[[noreturn]] void not_built() {
  throw InvalidArgument(tagged("torch", "a CUDA tensor, but this hycc backend was built without ",
                               "CUDA (a CPU build of torch, or hycc without the CUDA toolkit)"));
}
}  // namespace

bool cuda_built() { return false; }
CudaOrder::CudaOrder(const at::Tensor&) { not_built(); }
CudaOrder::~CudaOrder() = default;
CudaScope::CudaScope(const CudaOrder&) { not_built(); }
CudaScope::~CudaScope() = default;
void CudaScope::finish() const {}

#endif

}  // namespace hycc::torch_backend
