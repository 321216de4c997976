// The CUDA runtime API of the CPU emulator (tests/cuda_emu): the subset hycc's CUDA sources use,
// with CUDA's semantics where they matter to a program's correctness:
// - one emulated device; device memory is host memory that the emulator tracks, filled with a
//   pattern when allocated (code that reads memory it never wrote sees garbage, as on a GPU);
// - every stream is a worker thread that runs its operations in order, asynchronously to the
//   host: a host that reads a result before synchronizing reads stale memory, as on a GPU;
//   copies from/to pageable host memory block as CUDA's do, copies from/to pinned memory
//   (cudaHostAlloc) do not; the legacy default stream orders itself with the blocking streams;
// - copies check that their pointers are of the kind the call names and lie inside allocations;
// - kernels run on fibers (cuda_emu/kernel.h); a failed launch or a broken warp-synchronous
//   operation is a sticky error, returned by every later call, as a GPU's launch failure is.
#pragma once

#include <cstddef>

#include "cuda_emu/kernel.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3,
};

struct cudaPointerAttributes {
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = 0;
  void* devicePointer = nullptr;
  void* hostPointer = nullptr;
};

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
  int warpSize;
};

struct CUevent_st;
using cudaEvent_t = CUevent_st*;

constexpr unsigned cudaStreamDefault = 0;
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0;
constexpr unsigned cudaEventDisableTiming = 2;
constexpr unsigned cudaHostAllocDefault = 0;

const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int device);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p);

// The emulator runs every kernel on every device: the attributes of any kernel are found, unless
// HYCC_CUDA_EMU_NO_KERNEL_IMAGE=1 makes the device one of an architecture the kernels were not
// built for (cudaErrorNoKernelImageForDevice, not sticky).
struct cudaFuncAttributes {
  int maxThreadsPerBlock = 1024;
  int numRegs = 0;
};
namespace cuda_emu {
cudaError_t func_attributes(cudaFuncAttributes* attributes);
}
template <typename Kernel>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, Kernel*) {
  return cuda_emu::func_attributes(attributes);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace cuda_emu {

// Queues `op` on `stream` (nullptr: the legacy default stream); it runs on the stream's worker
// thread after everything queued before it. For library code built on the emulator (cub).
void enqueue(cudaStream_t stream, std::function<void()> op);
// Records a sticky error (the launch or operation that failed and why); every later call
// returns cudaErrorLaunchFailure.
void fail(const char* what);
// For the emulator's own tests of error paths: forgets the sticky error (a GPU cannot).
void clear_sticky_error_for_testing();

}  // namespace cuda_emu
