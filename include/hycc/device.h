// Minimal CUDA device-memory helpers for callers that do not include CUDA headers (tests,
// benchmarks, applications): plain cudaMalloc buffers and synchronous copies. Without CUDA in
// the build every function but device_count() throws Unavailable.
#pragma once

#include <cstddef>
#include <string>

struct CUstream_st;

namespace hycc {

using DeviceStream = CUstream_st*;  // a cudaStream_t; nullptr: the legacy default stream

// True if this build of hycc has the CUDA code.
bool device_codecs_built();

// Number of CUDA devices usable by this process (0 without CUDA, driver or device).
int device_count();

// Whether the current device runs this build's kernels: there is one, and the architectures the
// build compiled its device code for (HYCC_CUDA_ARCHITECTURES, sm_90 by default) include one it
// runs. Asked once per device.
bool device_runs_kernels();

// Why device_count() is 0 ("built without CUDA", CUDA's error string such as an insufficient
// driver) or the current device does not run this build's kernels, or "" if it does.
std::string device_unavailable_reason();

// Name and memory of the current device, e.g. "NVIDIA H200, 139.8 GiB, sm_90".
std::string device_description();

// A device allocation (cudaMalloc), freed on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Synchronous copies (they wait for the default stream).
void copy_to_device(void* device_dst, const void* host_src, size_t bytes);
void copy_to_host(void* host_dst, const void* device_src, size_t bytes);
// Device-to-device copy ordered on `stream`; returns without waiting.
void copy_on_device(void* dst, const void* src, size_t bytes, DeviceStream stream = nullptr);
// Waits for all work on the current device.
void synchronize_device();
// Waits for the work queued on `stream`.
void synchronize_stream(DeviceStream stream);
// Sets every byte of a device range.
void fill_device(void* device_dst, int byte, size_t bytes);

// A stream of its own (cudaStreamNonBlocking: it does not wait for the legacy default stream),
// destroyed with the object. For work on several streams at once, ordered by DeviceEvent.
class OwnedDeviceStream {
 public:
  OwnedDeviceStream();
  ~OwnedDeviceStream();
  OwnedDeviceStream(const OwnedDeviceStream&) = delete;
  OwnedDeviceStream& operator=(const OwnedDeviceStream&) = delete;
  DeviceStream get() const { return stream_; }

 private:
  DeviceStream stream_ = nullptr;
};

// A CUDA event without timing: record() marks the work queued so far on a stream, wait() makes
// another stream's later work wait for that mark (the host does not wait for either).
class DeviceEvent {
 public:
  DeviceEvent();
  ~DeviceEvent();
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  void record(DeviceStream stream);
  void wait(DeviceStream stream) const;

 private:
  void* event_ = nullptr;  // cudaEvent_t
};

}  // namespace hycc
