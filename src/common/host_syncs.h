// A count of the host's synchronizations with the device: every stream, event and device
// synchronization, blocking copy, and free of device or pinned memory (which waits for the device)
// that hycc makes, counted where it makes them. Per host thread, so that a call's statistics
// count its own (CollectiveStats::host_syncs); the CUDA emulator counts the same waits on its
// side, and a test checks that the two agree.
#pragma once

#include <cstdint>

namespace hycc {

// Counts one synchronization of this thread.
void count_host_sync();
// This thread's synchronizations since it started.
uint64_t host_syncs_of_this_thread();

}  // namespace hycc
