/* A stand-in for the CUDA driver (libcuda.so.1) for the drop-in library's device-buffer test:
 * the few driver calls a CUDA-aware program and libhycc_mpi.so make, on "device memory" that
 * the CPU cannot touch. Each allocation is one shared memory object mapped twice: without access
 * rights at the address handed out (any read or write there by the CPU is SIGSEGV, as for real
 * device memory), and readable and writable at a shadow address that only this library uses, in
 * its copies. Thread-safe: the library copies on its progress and worker threads while the
 * program allocates and frees on its own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void* CUcontext;

enum { kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kMaxAllocations = 64 };
enum { kAttributeContext = 1, kAttributeMemoryType = 2 };
enum { kMemoryTypeDevice = 2 };

struct Allocation {
  uintptr_t device;
  char* shadow;
  size_t bytes;
};
static struct Allocation allocations[kMaxAllocations];
static int context_marker;                                /* the one "context": its address */
static pthread_mutex_t table = PTHREAD_MUTEX_INITIALIZER; /* allocations[], and copies */

/* The shadow of [p, p + bytes) if it lies in one allocation, else NULL. */
static char* shadow_of(CUdeviceptr p, size_t bytes) {
  for (int i = 0; i < kMaxAllocations; ++i) {
    const struct Allocation* a = &allocations[i];
    if (a->bytes != 0 && p >= a->device && p - a->device <= a->bytes &&
        bytes <= a->bytes - (p - a->device)) {
      return a->shadow + (p - a->device);
    }
  }
  return NULL;
}

static CUresult allocate(CUdeviceptr* p, size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t size = (bytes + page - 1) / page * page;
  for (int i = 0; i < kMaxAllocations; ++i) {
    if (allocations[i].bytes != 0) continue;
    const int fd = memfd_create("fake-cuda-device-memory", 0);
    if (fd < 0) return kOutOfMemory;
    if (ftruncate(fd, (off_t)size) != 0) {
      close(fd);
      return kOutOfMemory;
    }
    void* device = mmap(NULL, size, PROT_NONE, MAP_SHARED, fd, 0);
    void* shadow = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (device == MAP_FAILED || shadow == MAP_FAILED) return kOutOfMemory;
    allocations[i] = (struct Allocation){(uintptr_t)device, shadow, bytes};
    *p = (CUdeviceptr)(uintptr_t)device;
    return kSuccess;
  }
  return kOutOfMemory;
}

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  pthread_mutex_lock(&table);
  const CUresult rc = allocate(p, bytes);
  pthread_mutex_unlock(&table);
  return rc;
}

static CUresult release(CUdeviceptr p) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < kMaxAllocations; ++i) {
    struct Allocation* a = &allocations[i];
    if (a->bytes == 0 || a->device != p) continue;
    const size_t size = (a->bytes + page - 1) / page * page;
    munmap((void*)a->device, size);
    munmap(a->shadow, size);
    a->bytes = 0;
    return kSuccess;
  }
  return kInvalidValue;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  pthread_mutex_lock(&table);
  const CUresult rc = release(p);
  pthread_mutex_unlock(&table);
  return rc;
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  pthread_mutex_lock(&table);
  const char* from = shadow_of(src, bytes);
  if (from != NULL) memcpy(dst, from, bytes);
  pthread_mutex_unlock(&table);
  return from == NULL ? kInvalidValue : kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  pthread_mutex_lock(&table);
  char* to = shadow_of(dst, bytes);
  if (to != NULL) memcpy(to, src, bytes);
  pthread_mutex_unlock(&table);
  return to == NULL ? kInvalidValue : kSuccess;
}

/* Memory the driver did not allocate is an error (CUDA_ERROR_INVALID_VALUE), as for malloc'd
 * memory with the real driver. */
CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr p) {
  pthread_mutex_lock(&table);
  const char* shadow = shadow_of(p, 1);
  pthread_mutex_unlock(&table);
  if (shadow == NULL) return kInvalidValue;
  switch (attribute) {
    case kAttributeContext:
      *(CUcontext*)data = &context_marker;
      return kSuccess;
    case kAttributeMemoryType:
      *(unsigned*)data = kMemoryTypeDevice;
      return kSuccess;
    default:
      return kInvalidValue;
  }
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return ctx == &context_marker ? kSuccess : kInvalidValue;
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (ctx != NULL) *ctx = &context_marker;
  return kSuccess;
}
