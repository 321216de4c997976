// Device buffers of CUDA-aware programs through hycc's device collectives: a compressed blocking
// collective whose buffers are device memory on every rank runs allreduce_device & co., which
// compress on the GPU (the device codecs) and move the payloads over NCCL (one GPU per rank) or
// staged through pinned host memory over MPI, instead of copying the whole buffers to the host
// and compressing them there with the CPU codecs (device_memory.h's staging, which every other
// call on device buffers keeps). docs/dropin.md, "Device buffers".
//
// The route must be the same on every rank (a device collective and a host one do not speak the
// same messages), so the ranks agree on it: one MPI_Allreduce of a flag per call, in a build with
// device codecs, unless HYCC_DEVICE_CODECS=off, and only on communicators whose ranks all use
// CUDA (the first compressed blocking collective on a communicator finds out, once, so that a
// program without CUDA pays one agreement per communicator, not one per call). Ranks whose
// buffers differ (one on the host) all stage, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "hycc/collectives_device.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {

// Reads HYCC_DEVICE_CODECS (`auto` when unset, or `off`); InvalidArgument for anything else.
void read_device_codecs_setting();

// The route of one compressed blocking collective: constructed by every rank of `s` for the same
// call (collective, see above), with the program's buffers of the call (null ones ignored). True
// when every rank's buffers are plain device memory of one GPU (DevicePointer::plain) that hycc's
// CUDA runtime can use; their context is then current while it lives.
class DeviceRoute {
 public:
  DeviceRoute(CommState& s, std::initializer_list<const void*> buffers);
  explicit operator bool() const { return on_; }
  // The call's options: CUDA on the legacy default stream (ordered after the program's work on
  // blocking streams), NCCL or staged MPI as kAuto picks, the engine's policy with the call's
  // decision (intercept's, routing.h), the argument
  // check, the gradient key of the buffer (as policy_options).
  DeviceCollectiveOptions options(const PolicyDecision& decision, const void* key_buffer = nullptr,
                                  size_t key_count = 0) const;

 private:
  bool on_ = false;
  std::optional<ContextScope> context_;
};

// With HYCC_LOG's summary: rank 0 prints, for all ranks, the calls that took the device route
// and the device buffers staged, when there are any (collective over MPI_COMM_WORLD, at
// MPI_Finalize).
void report_device_buffers(const PolicyEngine& engine);

}  // namespace hycc::interpose
