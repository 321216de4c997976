#include "interpose/runtime/device_memory.h"

#include <dlfcn.h>

#if HYCC_CUDA_EMULATION
#include <cuda_runtime.h>
#endif

#include <atomic>
#include <mutex>

#include "common/buffer_pool.h"
#include "common/host_syncs.h"
#include "hycc/error.h"

namespace hycc::interpose {
namespace {

// Device buffers staged through host memory, for the device route's report.
std::atomic<uint64_t> g_staged_buffers{0};

}  // namespace
#if HYCC_CUDA_EMULATION
// The CUDA emulator's runtime: its device memory is what cudaMalloc returned; no contexts.
namespace {

cudaPointerAttributes attributes_of(const void* p) {
  cudaPointerAttributes a{};
  if (p == nullptr || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return a;
}

void copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, const char* what,
          const void* device) {
  count_host_sync();
  if (const cudaError_t rc = cudaMemcpy(dst, src, bytes, kind); rc != cudaSuccess) {
    throw CommError(tagged("dropin", "copying ", bytes, " bytes ", what, " the device buffer at ",
                           device, " failed (", cudaGetErrorString(rc), ")"));
  }
}

}  // namespace

bool cuda_in_use() { return true; }

bool is_device_memory(const void* p) {
  const cudaMemoryType t = attributes_of(p).type;
  return t == cudaMemoryTypeDevice || t == cudaMemoryTypeManaged;
}

void copy_from_device(void* host, const void* device, size_t bytes) {
  copy(host, device, bytes, cudaMemcpyDeviceToHost, "from", device);
}

void copy_to_device(void* device, const void* host, size_t bytes) {
  copy(device, host, bytes, cudaMemcpyHostToDevice, "to", device);
}

DevicePointer describe_device_pointer(const void* p) {
  const cudaPointerAttributes a = attributes_of(p);
  DevicePointer d;
  d.plain = a.type == cudaMemoryTypeDevice;
  d.ordinal = d.plain ? a.device : -1;
  return d;
}

ContextScope::ContextScope(void* context) : context_(context) {}
ContextScope::~ContextScope() = default;

#else
namespace {

// The CUDA driver API entry points used here (cuda.h's types, written out: no CUDA header).
using CUresult = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the driver's type
using CUcontext = void*;
constexpr int kAttributeContext = 1;       // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr int kAttributeMemoryType = 2;    // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttributeIsManaged = 8;     // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kAttributeOrdinal = 9;       // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemoryTypeHost = 1;    // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE

struct Driver {
  CUresult (*pointer_get_attribute)(void* data, int attribute, CUdeviceptr p) = nullptr;
  CUresult (*memcpy_dtoh)(void* dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr dst, const void* src, size_t bytes) = nullptr;
  CUresult (*ctx_push)(CUcontext ctx) = nullptr;
  CUresult (*ctx_pop)(CUcontext* ctx) = nullptr;
  // For describe_device_pointer's primary context only (a driver without them: never plain).
  CUresult (*device_get)(int* device, int ordinal) = nullptr;
  CUresult (*primary_state)(int device, unsigned* flags, int* active) = nullptr;
  CUresult (*primary_retain)(CUcontext* ctx, int device) = nullptr;
  CUresult (*primary_release)(int device) = nullptr;
};

template <typename F>
void resolve(void* handle, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(handle, name));
}

// The driver if the process has loaded it, else nullptr (asked again on the next call: a program
// may start CUDA after MPI_Init). Once found, kept (the handle is never closed).
const Driver* driver() {
  static std::atomic<const Driver*> found{nullptr};
  static std::mutex mutex;
  if (const Driver* d = found.load(std::memory_order_acquire)) return d;
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const Driver* d = found.load(std::memory_order_acquire)) return d;
  static Driver d;
  resolve(handle, "cuPointerGetAttribute", d.pointer_get_attribute);
  resolve(handle, "cuMemcpyDtoH_v2", d.memcpy_dtoh);
  resolve(handle, "cuMemcpyHtoD_v2", d.memcpy_htod);
  resolve(handle, "cuCtxPushCurrent_v2", d.ctx_push);
  resolve(handle, "cuCtxPopCurrent_v2", d.ctx_pop);
  resolve(handle, "cuDeviceGet", d.device_get);
  resolve(handle, "cuDevicePrimaryCtxGetState", d.primary_state);
  resolve(handle, "cuDevicePrimaryCtxRetain", d.primary_retain);
  resolve(handle, "cuDevicePrimaryCtxRelease_v2", d.primary_release);
  if (d.pointer_get_attribute == nullptr || d.memcpy_dtoh == nullptr || d.memcpy_htod == nullptr ||
      d.ctx_push == nullptr || d.ctx_pop == nullptr) {
    throw CommError(tagged("dropin",
                           "libcuda.so.1 is loaded but lacks the driver calls needed "
                           "to copy device buffers"));
  }
  found.store(&d, std::memory_order_release);
  return &d;
}

CUdeviceptr address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Runs copy (a driver call) in the context that owns `device`.
template <typename Copy>
void in_context_of(const Driver& d, const void* device, size_t bytes, const char* what,
                   Copy&& copy) {
  CUcontext ctx = nullptr;
  CUresult rc = d.pointer_get_attribute(&ctx, kAttributeContext, address(device));
  if (rc == 0) rc = d.ctx_push(ctx);
  if (rc != 0) {
    throw CommError(tagged("dropin", "no CUDA context for the device buffer at ", device,
                           " (CUresult ", rc, ")"));
  }
  const CUresult copied = copy();
  CUcontext popped = nullptr;
  d.ctx_pop(&popped);
  if (copied != 0) {
    throw CommError(tagged("dropin", "copying ", bytes, " bytes ", what, " the device buffer at ",
                           device, " failed (CUresult ", copied, ")"));
  }
}

}  // namespace

bool cuda_in_use() { return driver() != nullptr; }

bool is_device_memory(const void* p) {
  if (p == nullptr) return false;
  const Driver* d = driver();
  if (d == nullptr) return false;
  unsigned type = 0;
  // Memory the driver does not know (malloc, the stack) is an error: host memory.
  if (d->pointer_get_attribute(&type, kAttributeMemoryType, address(p)) != 0) return false;
  return type != kMemoryTypeHost;
}

void copy_from_device(void* host, const void* device, size_t bytes) {
  const Driver& d = *driver();
  in_context_of(d, device, bytes, "from",
                [&] { return d.memcpy_dtoh(host, address(device), bytes); });
}

void copy_to_device(void* device, const void* host, size_t bytes) {
  const Driver& d = *driver();
  in_context_of(d, device, bytes, "to",
                [&] { return d.memcpy_htod(address(device), host, bytes); });
}

namespace {

// Whether `ctx` is the primary context of device `ordinal` (the one the CUDA runtime uses),
// without creating it when it is not active.
bool is_primary_context(const Driver& d, int ordinal, CUcontext ctx) {
  if (d.device_get == nullptr || d.primary_state == nullptr || d.primary_retain == nullptr ||
      d.primary_release == nullptr) {
    return false;
  }
  int device = 0, active = 0;
  unsigned flags = 0;
  if (d.device_get(&device, ordinal) != 0 || d.primary_state(device, &flags, &active) != 0 ||
      active == 0) {
    return false;
  }
  CUcontext primary = nullptr;
  if (d.primary_retain(&primary, device) != 0) return false;
  d.primary_release(device);
  return primary == ctx;
}

}  // namespace

DevicePointer describe_device_pointer(const void* p) {
  DevicePointer r;
  const Driver* d = p == nullptr ? nullptr : driver();
  if (d == nullptr) return r;
  unsigned type = 0;
  int managed = 1, ordinal = -1;
  CUcontext ctx = nullptr;
  // Memory the driver does not know (host memory) fails the first question.
  if (d->pointer_get_attribute(&type, kAttributeMemoryType, address(p)) != 0 ||
      type != kMemoryTypeDevice ||
      d->pointer_get_attribute(&managed, kAttributeIsManaged, address(p)) != 0 ||
      d->pointer_get_attribute(&ordinal, kAttributeOrdinal, address(p)) != 0 ||
      d->pointer_get_attribute(&ctx, kAttributeContext, address(p)) != 0) {
    return r;
  }
  r.ordinal = ordinal;
  r.context = ctx;
  r.plain = managed == 0 && is_primary_context(*d, ordinal, ctx);
  return r;
}

ContextScope::ContextScope(void* context) : context_(context) {
  if (context_ != nullptr && driver()->ctx_push(context_) != 0) {
    throw CommError(tagged("dropin", "cannot make the CUDA context of a device buffer current"));
  }
}

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  if (context_ != nullptr) driver()->ctx_pop(&popped);
}
#endif

uint64_t staged_buffers() { return g_staged_buffers.load(std::memory_order_relaxed); }

HostStaging::HostStaging(void* data, size_t bytes, bool load) : data_(data), bytes_(bytes) {
  if (bytes == 0 || !is_device_memory(data)) return;
  copy_ = pooled_bytes(bytes);
  g_staged_buffers.fetch_add(1, std::memory_order_relaxed);
  if (load) copy_from_device(copy_.data(), data, bytes);
}

HostStaging::~HostStaging() { recycle(copy_); }

HostStaging::HostStaging(const void* data, size_t bytes)
    : HostStaging(const_cast<void*>(data), bytes, true) {}

void HostStaging::store(size_t bytes) {
  if (!copy_.empty() && bytes != 0)
    copy_to_device(data_, copy_.data(), bytes < bytes_ ? bytes : bytes_);
}

}  // namespace hycc::interpose
