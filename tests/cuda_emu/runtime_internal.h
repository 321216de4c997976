// What the parts of the CUDA emulator share (runtime.cc: memory, streams, errors; blocks.cc:
// launches).
#pragma once

#include <string>

#include "cuda_runtime.h"

namespace cuda_emu {

// The error of a call, remembered as CUDA's "last error" of the host thread.
cudaError_t record(cudaError_t e);
// "" if p lies in a device allocation or pinned host block (memory a kernel may touch), else
// what it is.
std::string describe_kernel_access(const void* p);

// Environment switches: HYCC_CUDA_EMU_ORDER=reverse runs the blocks of a grid and the threads of
// a block in reverse order (a kernel whose result depends on the order has a race).
bool reverse_order();

// Whether the message just received should arrive altered (corrupt_nccl_receives); counts it.
bool take_nccl_corruption();
// Alters a received message of `bytes` bytes as corrupt_nccl_receives asked.
void alter_received(unsigned char* data, size_t bytes);

}  // namespace cuda_emu
