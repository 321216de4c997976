// What the CUDA emulator tells a test about the host's side of the device: how often the host
// waited for the device, and a stand-in for a long kernel.
#pragma once

#include <chrono>
#include <cstdint>

struct CUstream_st;

namespace cuda_emu {

// Host synchronizations since the start, by every thread of the process: stream, event and
// device synchronizations, the blocking copies (cudaMemcpy but device to device, and any copy
// into pageable memory), and the implicit device synchronization of cudaFree, cudaFreeHost and
// cudaStreamDestroy. Each call counts once, whether or not the device was still busy.
uint64_t host_waits();

// Queues an operation on `stream` that keeps it busy for `duration` (a long kernel).
void occupy_stream(CUstream_st* stream, std::chrono::milliseconds duration);

// The next `count` non-empty messages this process receives through the emulated NCCL's
// point-to-point calls arrive with one bit flipped (a payload altered on its way): bit 4 of the
// middle byte, or with `offset` >= 0 the 4 bytes from `offset` set to 0xff (within the message).
void corrupt_nccl_receives(int count, long offset = -1);

}  // namespace cuda_emu
