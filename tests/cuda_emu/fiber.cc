// Fibers of the CUDA emulator (fiber.h): a hand-written x86-64 context switch.
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CUDA_EMU_ASAN 1
#else
#define CUDA_EMU_ASAN 0
#endif

#if !defined(__x86_64__)
#error "the CUDA emulator's fibers are written for x86-64"
#endif

// cuda_emu_switch(save, load): saves the callee-saved registers, the SSE and x87 control words
// and the return address on the current stack, stores the stack pointer in *save, and resumes the
// context whose stack pointer is `load`. cuda_emu_start: the first return of a new fiber lands
// here, with the Fiber in r12 and its start function in r13.
extern "C" void cuda_emu_switch(void** save, void* load);
extern "C" void cuda_emu_start();
asm(R"(
  .text
  .globl cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr 8(%rsp)
  fldcw (%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch

  .globl cuda_emu_start
  .type cuda_emu_start, @function
cuda_emu_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cuda_emu_start, .-cuda_emu_start
)");

namespace cuda_emu {
namespace {

constexpr size_t kStackBytes = size_t{256} << 10;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

Fiber::Fiber(Entry entry, void* arg) : entry_(entry), arg_(arg) {
  const size_t guard = page_size();
  void* p = mmap(nullptr, guard + kStackBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mprotect(p, guard, PROT_NONE);  // a stack overflow faults instead of corrupting memory
  stack_ = static_cast<char*>(p);
  stack_bytes_ = kStackBytes;
  reset();
}

Fiber::~Fiber() { munmap(stack_, page_size() + stack_bytes_); }

void Fiber::reset() {
  char* bottom = stack_ + page_size();
#if CUDA_EMU_ASAN
  __asan_unpoison_memory_region(bottom, stack_bytes_);
#endif
  // The frame cuda_emu_switch pops: control words, r15, r14, r13, r12, rbx, rbp, return address;
  // after the return the stack pointer is 16-byte aligned, as before a call.
  auto top = reinterpret_cast<uintptr_t>(bottom + stack_bytes_) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 88);
  std::memset(frame, 0, 88);
  const uint16_t x87 = 0x037f;
  const uint32_t mxcsr = 0x1f80;
  std::memcpy(&frame[0], &x87, sizeof(x87));
  std::memcpy(&frame[1], &mxcsr, sizeof(mxcsr));
  frame[4] = reinterpret_cast<uint64_t>(+[](Fiber* f) { f->start(); });  // r13
  frame[5] = reinterpret_cast<uint64_t>(this);                           // r12
  frame[8] = reinterpret_cast<uint64_t>(&cuda_emu_start);                // return address
  sp_ = frame;
}

void Fiber::start() {
#if CUDA_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &caller_bottom_, &caller_size_);
#endif
  entry_(arg_);
}

void Fiber::resume() {
#if CUDA_EMU_ASAN
  void* caller_fake = nullptr;
  __sanitizer_start_switch_fiber(&caller_fake, stack_ + page_size(), stack_bytes_);
  cuda_emu_switch(&caller_sp_, sp_);
  __sanitizer_finish_switch_fiber(caller_fake, nullptr, nullptr);
#else
  cuda_emu_switch(&caller_sp_, sp_);
#endif
}

void Fiber::yield() {
#if CUDA_EMU_ASAN
  __sanitizer_start_switch_fiber(&fake_stack_, caller_bottom_, caller_size_);
  cuda_emu_switch(&sp_, caller_sp_);
  __sanitizer_finish_switch_fiber(fake_stack_, &caller_bottom_, &caller_size_);
#else
  cuda_emu_switch(&sp_, caller_sp_);
#endif
}

}  // namespace cuda_emu
