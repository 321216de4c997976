// Device buffers handed to libhycc_mpi.so by CUDA-aware programs (cudaMalloc'd pointers passed to
// MPI_Allreduce, MPI_Send, ...). The host path cannot read them, so a call that hycc compresses
// stages them through host memory: the input is copied from the device first, the result back
// after. Calls the library leaves to MPI keep the program's own pointers (MPI must then be
// CUDA-aware, as without the library).
//
// The CUDA driver is asked only when the process has loaded it (libcuda.so.1, found with
// RTLD_NOLOAD): a program that never used CUDA has no device memory and pays nothing, and the
// library never loads the driver or creates a CUDA context itself. Copies run in the context
// that owns the pointer (pushed around the copy), so any thread may make the call. In a build
// for the CUDA emulator (tests/cuda_emu) the emulated runtime answers instead of the driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hycc::interpose {

// True when p lies in memory of a CUDA device (device or managed memory; pinned host memory is
// host memory).
bool is_device_memory(const void* p);

// Device buffers staged through host memory (HostStaging) so far.
uint64_t staged_buffers();

// A buffer of the program as the host path sees it: the buffer itself when it is host memory,
// otherwise a host copy of its `bytes` (loaded from the device at construction when `load`).
// store() copies the host copy back to the device. Copies throw CommError when the driver fails.
class HostStaging {
 public:
  HostStaging(void* data, size_t bytes, bool load);
  HostStaging(const void* data, size_t bytes);  // an input: loaded, never stored
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging();  // the host copy goes back to the pool (common/buffer_pool.h)

  void* data() { return copy_.empty() ? data_ : static_cast<void*>(copy_.data()); }
  float* floats() { return static_cast<float*>(data()); }
  void store() { store(bytes_); }
  void store(size_t bytes);  // the first `bytes` only

 private:
  void* data_;
  size_t bytes_;
  // Device memory's host copy (pooled: a call's copy serves the next call), else empty.
  std::vector<std::byte> copy_;
};

// Copies between host and device memory (either argument device memory the driver knows).
void copy_from_device(void* host, const void* device, size_t bytes);
void copy_to_device(void* device, const void* host, size_t bytes);

// Whether the process uses CUDA: it has loaded the driver (always with the CUDA emulator).
bool cuda_in_use();

// What the device route (device_route.h) needs to know of a buffer.
struct DevicePointer {
  bool plain = false;       // cudaMalloc'd memory (not managed), in its device's primary context:
                            // what hycc's device collectives run on
  int ordinal = -1;         // its device
  void* context = nullptr;  // its CUDA context (null with the CUDA emulator)
};
DevicePointer describe_device_pointer(const void* p);

// Makes `context` the calling thread's current CUDA context for the scope (cuCtxPushCurrent),
// so that hycc's CUDA runtime works on the buffer's device; nothing for a null context.
class ContextScope {
 public:
  explicit ContextScope(void* context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  void* context_;
};

}  // namespace hycc::interpose
