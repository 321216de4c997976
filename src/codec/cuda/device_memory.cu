// hycc/device.h with CUDA.
#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codec/cuda/device_util.cuh"
#include "common/host_syncs.h"
#include "hycc/device.h"

#ifndef HYCC_CUDA_ARCHS
#define HYCC_CUDA_ARCHS "?"
#endif

namespace hycc {
namespace {

// A kernel of this build: the device runs the build's kernels if CUDA finds it for the device.
__global__ void probe_kernel() {}

}  // namespace

bool device_codecs_built() { return true; }

bool device_runs_kernels() {
  int device = 0;
  if (device_count() == 0 || cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  static std::mutex mutex;
  static std::vector<int> known;  // per device: -1 not asked yet, 0 or 1
  const std::lock_guard<std::mutex> lock(mutex);
  if (known.size() <= static_cast<size_t>(device))
    known.resize(static_cast<size_t>(device) + 1, -1);
  int& runs = known[static_cast<size_t>(device)];
  if (runs < 0) {
    cudaFuncAttributes a{};
    runs = cudaFuncGetAttributes(&a, probe_kernel) == cudaSuccess ? 1 : 0;
    cudaGetLastError();  // "no kernel image for the device" is not sticky
  }
  return runs == 1;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no device" / "no driver" error
    return 0;
  }
  return n;
}

std::string device_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return detail::concat("no CUDA device: ", cudaGetErrorString(e));
  }
  if (n == 0) return "no CUDA device";
  if (!device_runs_kernels()) {
    return detail::concat("the current device (", device_description(),
                          ") runs none of this build's kernels, compiled for sm ", HYCC_CUDA_ARCHS,
                          ": configure hycc with -DHYCC_CUDA_ARCHITECTURES=<its sm>");
  }
  return "";
}

std::string device_description() {
  int device = 0;
  HYCC_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  HYCC_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return detail::concat(p.name, ", ", static_cast<double>(p.totalGlobalMem) / (1u << 30),
                        " GiB, sm_", p.major, p.minor);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes != 0) HYCC_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    count_host_sync();
    cudaFree(data_);
  }
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

void copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  count_host_sync();
  HYCC_CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  count_host_sync();
  HYCC_CUDA_CHECK(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost));
}

void copy_on_device(void* dst, const void* src, size_t bytes, DeviceStream stream) {
  if (bytes != 0) {
    HYCC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  }
}

void synchronize_device() {
  count_host_sync();
  HYCC_CUDA_CHECK(cudaDeviceSynchronize());
}

OwnedDeviceStream::OwnedDeviceStream() {
  cudaStream_t s = nullptr;
  HYCC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

OwnedDeviceStream::~OwnedDeviceStream() {
  count_host_sync();  // destroying a stream waits for its work
  cudaStreamDestroy(stream_);
}

DeviceEvent::DeviceEvent() {
  cudaEvent_t e = nullptr;
  HYCC_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  event_ = e;
}

DeviceEvent::~DeviceEvent() { cudaEventDestroy(static_cast<cudaEvent_t>(event_)); }

void DeviceEvent::record(DeviceStream stream) {
  HYCC_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream));
}

void DeviceEvent::wait(DeviceStream stream) const {
  HYCC_CUDA_CHECK(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(event_), 0));
}

void synchronize_stream(DeviceStream stream) {
  count_host_sync();
  HYCC_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void fill_device(void* device_dst, int byte, size_t bytes) {
  if (bytes != 0) HYCC_CUDA_CHECK(cudaMemset(device_dst, byte, bytes));
}

}  // namespace hycc
