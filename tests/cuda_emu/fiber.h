// Fibers of the CUDA emulator: one per thread of a block, switched cooperatively on one host
// thread (x86-64: a dozen instructions per switch, so a block of 256 threads with warp
// intrinsics costs microseconds, not the milliseconds of OS threads). AddressSanitizer is told of
// every switch, so kernels run under it like any other code.
#pragma once

#include <cstddef>

namespace cuda_emu {

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  // A fiber that runs entry(arg) when first resumed; entry must never return (it switches away).
  Fiber(Entry entry, void* arg);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the host thread's own stack: run the fiber until it yields.
  void resume();
  // From inside the fiber: back to the code that resumed it.
  void yield();
  // Discards the fiber's frames (a fiber abandoned inside a kernel): the next resume starts
  // entry(arg) afresh.
  void reset();

 private:
  void start();

  Entry entry_;
  void* arg_;
  char* stack_ = nullptr;  // guard page, then the stack
  size_t stack_bytes_ = 0;
  void* sp_ = nullptr;         // the fiber's saved stack pointer while it is switched out
  void* caller_sp_ = nullptr;  // the resumer's, while the fiber runs
  // AddressSanitizer's bookkeeping of the two stacks.
  void* fake_stack_ = nullptr;
  const void* caller_bottom_ = nullptr;
  size_t caller_size_ = 0;
};

}  // namespace cuda_emu
