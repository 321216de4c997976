// The CUDA runtime of the CPU emulator (cuda_runtime.h): memory, streams, events and errors.
#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emu/host.h"
#include "cuda_runtime.h"
#include "runtime_internal.h"

struct CUstream_st;

namespace cuda_emu {
namespace {

// ---- errors ----------------------------------------------------------------------------------

thread_local cudaError_t last_error = cudaSuccess;
std::atomic<bool> sticky{false};
std::mutex sticky_mutex;
std::string sticky_text = "unspecified launch failure";

cudaError_t sticky_error() { return record(cudaErrorLaunchFailure); }

void complain(const std::string& what) { std::fprintf(stderr, "cuda-emu: %s\n", what.c_str()); }

// ---- memory ----------------------------------------------------------------------------------

enum class MemoryKind { kDevice, kPinned };

struct Allocation {
  size_t bytes;
  MemoryKind kind;
};

struct Memory {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> blocks;  // by start address
};

Memory& memory() {
  static auto* m = new Memory;  // never destroyed: thread_local caches free blocks at exit
  return *m;
}

struct Block {
  uintptr_t begin;
  Allocation allocation;
};

// The allocation holding p (p may be its end), if any.
std::optional<Block> block_of(const void* p) {
  Memory& m = memory();
  const std::lock_guard<std::mutex> lock(m.mutex);
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = m.blocks.upper_bound(a);
  if (it == m.blocks.begin()) return std::nullopt;
  --it;
  if (a > it->first + it->second.bytes) return std::nullopt;
  return Block{it->first, it->second};
}

bool is_device(const std::optional<Block>& b) {
  return b && b->allocation.kind == MemoryKind::kDevice;
}

const char* kind_name(const std::optional<Block>& b) {
  if (!b) return "pageable host memory";
  return is_device(b) ? "device memory" : "pinned host memory";
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

cudaError_t allocate(void** p, size_t bytes, MemoryKind kind) {
  if (p == nullptr) return record(cudaErrorInvalidValue);
  if (sticky) return sticky_error();
  void* q = ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256}, std::nothrow);
  if (q == nullptr) return record(cudaErrorMemoryAllocation);
  if (kind == MemoryKind::kDevice) std::memset(q, 0xa5, bytes);  // never-written memory is junk
  Memory& m = memory();
  const std::lock_guard<std::mutex> lock(m.mutex);
  m.blocks[reinterpret_cast<uintptr_t>(q)] = {bytes, kind};
  *p = q;
  return cudaSuccess;
}

cudaError_t release(void* p, MemoryKind kind, const char* call) {
  if (p == nullptr) return cudaSuccess;
  cudaDeviceSynchronize();  // as CUDA's frees do
  Memory& m = memory();
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    const auto it = m.blocks.find(reinterpret_cast<uintptr_t>(p));
    if (it == m.blocks.end() || it->second.kind != kind) {
      complain(std::string(call) + "(" + hex(p) + "): not the start of a block it allocated");
      return record(cudaErrorInvalidValue);
    }
    m.blocks.erase(it);
  }
  ::operator delete (p, std::align_val_t{256});
  return cudaSuccess;
}

// ---- streams ---------------------------------------------------------------------------------

struct Task {
  std::function<void()> op;
  std::vector<std::pair<cudaStream_t, uint64_t>> after = {};  // (stream, operations completed)
};

}  // namespace
}  // namespace cuda_emu

struct CUstream_st {
  bool legacy = false;
  bool blocking = true;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<cuda_emu::Task> queue;
  uint64_t queued = 0, completed = 0;
  bool stop = false;
  std::thread worker;
};

struct CUevent_st {
  cudaStream_t stream = nullptr;  // where it was last recorded, nullptr: never
  uint64_t position = 0;          // the operations of that stream it waits for
  bool timing = true;
  // When the stream reached the record (shared with the queued operation, which may outlive a
  // destroyed event).
  std::shared_ptr<std::chrono::steady_clock::time_point> reached;
};

namespace cuda_emu {
namespace {

unsigned delay_us() {
  static const unsigned us = [] {
    const char* v = std::getenv("HYCC_CUDA_EMU_DELAY_US");
    return v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 0u;
  }();
  return us;
}

// Host synchronizations (cuda_emu/host.h).
std::atomic<uint64_t> host_wait_count{0};
// HYCC_CUDA_EMU_TRACE_WAITS=1: every host wait prints its call stack to stderr (where a wait
// comes from, when a count rises).
void count_host_wait() {
  host_wait_count.fetch_add(1, std::memory_order_relaxed);
  static const bool trace = [] {
    const char* v = std::getenv("HYCC_CUDA_EMU_TRACE_WAITS");
    return v != nullptr && std::string(v) == "1";
  }();
  if (trace) {
    void* frames[24];
    const int depth = backtrace(frames, 24);
    std::fprintf(stderr, "cuda_emu: host wait\n");
    backtrace_symbols_fd(frames, depth, 2);
  }
}

void wait_for(cudaStream_t s, uint64_t position) {
  std::unique_lock<std::mutex> lock(s->mutex);
  s->changed.wait(lock, [&] { return s->completed >= position; });
}

void work(cudaStream_t s) {
  for (;;) {
    Task t;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->changed.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) return;
      t = std::move(s->queue.front());
      s->queue.pop_front();
    }
    for (const auto& [other, position] : t.after) wait_for(other, position);
    // HYCC_CUDA_EMU_DELAY_US: a slow device, so that a host that does not wait for its results
    // reads them before they are there.
    if (delay_us() != 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us()));
    if (!sticky && t.op) t.op();
    {
      const std::lock_guard<std::mutex> lock(s->mutex);
      ++s->completed;
    }
    s->changed.notify_all();
  }
}

struct Streams {
  std::mutex mutex;
  std::set<cudaStream_t> live;
  std::vector<std::unique_ptr<CUstream_st>> all;  // kept: events may still name them
  cudaStream_t legacy = nullptr;
};

Streams& streams() {
  static auto* s = new Streams;
  return *s;
}

cudaStream_t create_stream(bool blocking, bool legacy) {
  auto s = std::make_unique<CUstream_st>();
  s->blocking = blocking;
  s->legacy = legacy;
  cudaStream_t raw = s.get();
  s->worker = std::thread(work, raw);
  Streams& all = streams();
  const std::lock_guard<std::mutex> lock(all.mutex);
  all.live.insert(raw);
  all.all.push_back(std::move(s));
  return raw;
}

cudaStream_t legacy_stream() {
  static cudaStream_t s = create_stream(true, true);
  return s;
}

cudaStream_t resolve(cudaStream_t s) { return s == nullptr ? legacy_stream() : s; }

uint64_t queued_now(cudaStream_t s) {
  const std::lock_guard<std::mutex> lock(s->mutex);
  return s->queued;
}

// Queues t on s; returns the number of operations s must complete to have completed t.
uint64_t push(cudaStream_t s, Task t) {
  s = resolve(s);
  // The legacy default stream waits for the blocking streams' earlier work, and they wait for
  // its earlier work.
  if (s->legacy) {
    Streams& all = streams();
    const std::lock_guard<std::mutex> lock(all.mutex);
    for (cudaStream_t other : all.live) {
      if (other != s && other->blocking) t.after.emplace_back(other, queued_now(other));
    }
  } else if (s->blocking) {
    const cudaStream_t l = legacy_stream();
    t.after.emplace_back(l, queued_now(l));
  }
  uint64_t position = 0;
  {
    const std::lock_guard<std::mutex> lock(s->mutex);
    s->queue.push_back(std::move(t));
    position = ++s->queued;
  }
  s->changed.notify_all();
  return position;
}

cudaError_t synchronize(cudaStream_t s) {
  count_host_wait();
  s = resolve(s);
  wait_for(s, queued_now(s));
  return sticky ? sticky_error() : cudaSuccess;
}

// ---- copies ----------------------------------------------------------------------------------

const char* direction_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost:
      return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice:
      return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost:
      return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "cudaMemcpyDeviceToDevice";
    default:
      return "cudaMemcpyDefault";
  }
}

// "" when [p, p + bytes) is memory of the expected side (device or host) for the copy.
std::string check_side(const char* role, const void* p, size_t bytes, bool device) {
  const std::optional<Block> b = block_of(p);
  if (is_device(b) != device) {
    return std::string(role) + " " + hex(p) + " is " + kind_name(b) + ", not " +
           (device ? "device" : "host") + " memory";
  }
  if (b && reinterpret_cast<uintptr_t>(p) + bytes > b->begin + b->allocation.bytes) {
    return std::string(role) + " " + hex(p) + " + " + std::to_string(bytes) +
           " bytes runs past the end of its " + std::to_string(b->allocation.bytes) + "-byte block";
  }
  return "";
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                 bool blocking_call, const char* call) {
  if (sticky) return sticky_error();
  if (bytes == 0) return cudaSuccess;
  if (kind == cudaMemcpyDefault) {
    kind = static_cast<cudaMemcpyKind>((is_device(block_of(src)) ? 2 : 0) +
                                       (is_device(block_of(dst)) ? 1 : 0));
  }
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  std::string problem = check_side("source", src, bytes, src_device);
  if (problem.empty()) problem = check_side("destination", dst, bytes, dst_device);
  if (!problem.empty()) {
    complain(std::string(call) + "(" + direction_name(kind) + ", " + std::to_string(bytes) +
             " bytes): " + problem);
    return record(cudaErrorInvalidValue);
  }
  const bool src_pageable = !src_device && !block_of(src);
  const bool dst_pageable = !dst_device && !block_of(dst);
  uint64_t position = 0;
  if (src_pageable) {
    // Pageable source: CUDA stages it before returning; the caller may reuse it at once.
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
    position = push(stream, {[dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }});
  } else {
    position = push(stream, {[dst, src, bytes] { std::memmove(dst, src, bytes); }});
  }
  // Into pageable memory, and every cudaMemcpy but device to device, the call returns when done.
  if (dst_pageable || (blocking_call && kind != cudaMemcpyDeviceToDevice)) {
    count_host_wait();
    wait_for(resolve(stream), position);
  }
  return sticky ? sticky_error() : cudaSuccess;
}

cudaError_t set(void* p, int value, size_t bytes, cudaStream_t stream, const char* call) {
  if (sticky) return sticky_error();
  if (bytes == 0) return cudaSuccess;
  if (const std::string problem = check_side("destination", p, bytes, true); !problem.empty()) {
    complain(std::string(call) + ": " + problem);
    return record(cudaErrorInvalidValue);
  }
  push(stream, {[p, value, bytes] { std::memset(p, value, bytes); }});
  return cudaSuccess;
}

// Loads the emulator's libnccl.so.2 from beside this library when the program starts, so that
// a later dlopen("libnccl.so.2") (hycc's NCCL transport) finds it loaded, whatever the search
// path would give (a real NCCL, or nothing: under AddressSanitizer, dlopen does not search the
// program's RUNPATH).
__attribute__((constructor)) void load_emulated_nccl() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&load_emulated_nccl), &self) == 0 ||
      self.dli_fname == nullptr) {
    return;
  }
  std::string path = self.dli_fname;
  path = path.substr(0, path.find_last_of('/') + 1) + "libnccl.so.2";
  dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // absent (a bundle without it): no NCCL
}

}  // namespace

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

void fail(const char* what) {
  {
    const std::lock_guard<std::mutex> lock(sticky_mutex);
    if (sticky) return;
    sticky_text = std::string("unspecified launch failure (cuda-emu: ") + what + ")";
    sticky = true;
  }
  complain(what);
}

void clear_sticky_error_for_testing() {
  const std::lock_guard<std::mutex> lock(sticky_mutex);
  sticky = false;
  sticky_text = "unspecified launch failure";
  last_error = cudaSuccess;
}

std::string describe_kernel_access(const void* p) {
  if (block_of(p)) return "";
  return hex(p) + " is not device memory (a host pointer?)";
}

bool reverse_order() {
  static const bool reverse = [] {
    const char* v = std::getenv("HYCC_CUDA_EMU_ORDER");
    return v != nullptr && std::strcmp(v, "reverse") == 0;
  }();
  return reverse;
}

void enqueue(cudaStream_t stream, std::function<void()> op) { push(stream, {std::move(op)}); }

uint64_t host_waits() { return host_wait_count.load(std::memory_order_relaxed); }

namespace {
std::atomic<int> nccl_corruptions{0};
std::atomic<long> nccl_corruption_offset{-1};
}  // namespace

void corrupt_nccl_receives(int count, long offset) {
  nccl_corruption_offset.store(offset);
  nccl_corruptions.store(count);
}

void alter_received(unsigned char* data, size_t bytes) {
  const long offset = nccl_corruption_offset.load();
  if (offset < 0) {
    data[bytes / 2] ^= 0x10;
    return;
  }
  for (size_t i = static_cast<size_t>(offset); i < bytes && i < static_cast<size_t>(offset) + 4;
       ++i) {
    data[i] = 0xff;
  }
}

bool take_nccl_corruption() {
  int left = nccl_corruptions.load();
  while (left > 0 && !nccl_corruptions.compare_exchange_weak(left, left - 1)) {
  }
  return left > 0;
}

void occupy_stream(CUstream_st* stream, std::chrono::milliseconds duration) {
  push(stream, {[duration] { std::this_thread::sleep_for(duration); }});
}

cudaError_t func_attributes(cudaFuncAttributes* attributes) {
  if (attributes == nullptr) return record(cudaErrorInvalidValue);
  static const bool no_image = [] {
    const char* v = std::getenv("HYCC_CUDA_EMU_NO_KERNEL_IMAGE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  if (no_image) return record(cudaErrorNoKernelImageForDevice);
  *attributes = cudaFuncAttributes{};
  return cudaSuccess;
}

}  // namespace cuda_emu

using cuda_emu::record;

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorNoKernelImageForDevice:
      return "no kernel image is available for execution on the device";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure: {
      const std::lock_guard<std::mutex> lock(cuda_emu::sticky_mutex);
      return cuda_emu::sticky_text.c_str();
    }
  }
  return "unknown error";
}

const char* cudaGetErrorName(cudaError_t error) { return cudaGetErrorString(error); }

cudaError_t cudaGetLastError() {
  if (cuda_emu::sticky) return cudaErrorLaunchFailure;
  const cudaError_t e = cuda_emu::last_error;
  cuda_emu::last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() {
  return cuda_emu::sticky ? cudaErrorLaunchFailure : cuda_emu::last_error;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : record(cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr || device != 0) return record(cudaErrorInvalidValue);
  *prop = {};
  std::snprintf(prop->name, sizeof(prop->name), "hycc CUDA emulator (CPU)");
  prop->totalGlobalMem = size_t{16} << 30;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  prop->warpSize = 32;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int device) {
  if (bus_id == nullptr || length <= 0 || device != 0) return record(cudaErrorInvalidValue);
  // Every process has a device of its own (its memory is the process's): ranks of one machine
  // count as ranks with one GPU each, as NCCL needs.
  std::snprintf(bus_id, static_cast<size_t>(length), "emulated:%d", static_cast<int>(getpid()));
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  cuda_emu::count_host_wait();
  std::vector<cudaStream_t> live;
  {
    cuda_emu::Streams& all = cuda_emu::streams();
    const std::lock_guard<std::mutex> lock(all.mutex);
    live.assign(all.live.begin(), all.live.end());
  }
  for (cudaStream_t s : live) cuda_emu::wait_for(s, cuda_emu::queued_now(s));
  return cuda_emu::sticky ? cuda_emu::sticky_error() : cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  return cuda_emu::allocate(p, bytes, cuda_emu::MemoryKind::kDevice);
}
cudaError_t cudaFree(void* p) {
  return cuda_emu::release(p, cuda_emu::MemoryKind::kDevice, "cudaFree");
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) {
  return cuda_emu::allocate(p, bytes, cuda_emu::MemoryKind::kPinned);
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }
cudaError_t cudaFreeHost(void* p) {
  return cuda_emu::release(p, cuda_emu::MemoryKind::kPinned, "cudaFreeHost");
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  if (attributes == nullptr) return record(cudaErrorInvalidValue);
  *attributes = {};
  const std::optional<cuda_emu::Block> b = cuda_emu::block_of(p);
  if (b) {
    const bool device = cuda_emu::is_device(b);
    attributes->type = device ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
    attributes->devicePointer = const_cast<void*>(p);
    attributes->hostPointer = device ? nullptr : const_cast<void*>(p);
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return cuda_emu::copy(dst, src, bytes, kind, nullptr, true, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return cuda_emu::copy(dst, src, bytes, kind, stream, false, "cudaMemcpyAsync");
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  return cuda_emu::set(p, value, bytes, nullptr, "cudaMemset");
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  return cuda_emu::set(p, value, bytes, stream, "cudaMemsetAsync");
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr) return record(cudaErrorInvalidValue);
  *stream = cuda_emu::create_stream((flags & cudaStreamNonBlocking) == 0, false);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || stream->legacy) return record(cudaErrorInvalidResourceHandle);
  cuda_emu::synchronize(stream);
  {
    cuda_emu::Streams& all = cuda_emu::streams();
    const std::lock_guard<std::mutex> lock(all.mutex);
    if (all.live.erase(stream) == 0) return record(cudaErrorInvalidResourceHandle);
  }
  {
    const std::lock_guard<std::mutex> lock(stream->mutex);
    stream->stop = true;
  }
  stream->changed.notify_all();
  stream->worker.join();
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return cuda_emu::synchronize(stream); }
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  const cudaStream_t s = cuda_emu::resolve(stream);
  const std::lock_guard<std::mutex> lock(s->mutex);
  return s->completed == s->queued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (cuda_emu::sticky) return cuda_emu::sticky_error();
  cuda_emu::Task t;
  if (event->stream != nullptr) t.after.emplace_back(event->stream, event->position);
  cuda_emu::push(stream, std::move(t));
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr) return record(cudaErrorInvalidValue);
  *event = new CUevent_st;
  (*event)->timing = (flags & cudaEventDisableTiming) == 0;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (cuda_emu::sticky) return cuda_emu::sticky_error();
  auto reached = std::make_shared<std::chrono::steady_clock::time_point>();
  event->position =
      cuda_emu::push(stream, {[reached] { *reached = std::chrono::steady_clock::now(); }});
  event->stream = cuda_emu::resolve(stream);
  event->reached = std::move(reached);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (event->stream == nullptr) return cudaSuccess;
  const std::lock_guard<std::mutex> lock(event->stream->mutex);
  return event->stream->completed >= event->position ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  cuda_emu::count_host_wait();
  if (event->stream != nullptr) cuda_emu::wait_for(event->stream, event->position);
  return cuda_emu::sticky ? cuda_emu::sticky_error() : cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return record(cudaErrorInvalidValue);
  if (!start->timing || !end->timing || start->stream == nullptr || end->stream == nullptr) {
    return record(cudaErrorInvalidResourceHandle);
  }
  if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(end) != cudaSuccess) {
    return record(cudaErrorNotReady);
  }
  *ms = std::chrono::duration<float, std::milli>(*end->reached - *start->reached).count();
  return cudaSuccess;
}
