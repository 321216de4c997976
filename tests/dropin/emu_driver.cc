// The four CUDA driver calls of dropin_device_program.c, served by the CUDA emulator's runtime
// (tests/cuda_emu): the program's device memory is then the emulator's cudaMalloc'd memory, which
// libhycc_mpi.so built for the emulator hands to hycc's device collectives (its device route) or
// stages through host memory with the emulator's copies (HYCC_DEVICE_CODECS=off, and the calls
// the route does not take). ctest dropin_device_route.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the driver's type
constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2;

void* pointer(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
int result(cudaError_t e) { return e == cudaSuccess ? kSuccess : kInvalidValue; }
}  // namespace

extern "C" {

int cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  void* d = nullptr;
  if (cudaMalloc(&d, bytes) != cudaSuccess) return kOutOfMemory;
  *p = reinterpret_cast<uintptr_t>(d);
  return kSuccess;
}

int cuMemFree_v2(CUdeviceptr p) { return result(cudaFree(pointer(p))); }

int cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return result(cudaMemcpy(dst, pointer(src), bytes, cudaMemcpyDeviceToHost));
}

int cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return result(cudaMemcpy(pointer(dst), src, bytes, cudaMemcpyHostToDevice));
}

}  // extern "C"
