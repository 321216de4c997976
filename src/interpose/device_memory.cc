#include "interpose/device_memory.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "common/buffer_pool.h"
#include "hycc/error.h"

namespace hycc::interpose {
namespace {

// The CUDA driver API entry points used here (cuda.h's types, written out: no CUDA header).
using CUresult = int;
using CUdeviceptr = unsigned long long;  // NOLINT(google-runtime-int): the driver's type
using CUcontext = void*;
constexpr int kAttributeContext = 1;     // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr int kAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr unsigned kMemoryTypeHost = 1;  // CU_MEMORYTYPE_HOST

struct Driver {
  CUresult (*pointer_get_attribute)(void* data, int attribute, CUdeviceptr p) = nullptr;
  CUresult (*memcpy_dtoh)(void* dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr dst, const void* src, size_t bytes) = nullptr;
  CUresult (*ctx_push)(CUcontext ctx) = nullptr;
  CUresult (*ctx_pop)(CUcontext* ctx) = nullptr;
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

HostStaging::HostStaging(void* data, size_t bytes, bool load) : data_(data), bytes_(bytes) {
  if (bytes == 0 || !is_device_memory(data)) return;
  copy_ = pooled_bytes(bytes);
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
