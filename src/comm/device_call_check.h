// The argument checks of the device operations (collectives, point to point, gradient
// compressors on device buffers): the device, backend and transport settings, device memory,
// and the cross-rank agreement with an unavailable backend kept apart.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>

#include "comm/call_check.h"
#include "device/device_ops.h"
#include "hycc/collectives_device.h"

namespace hycc::comm {

using device::DeviceOps;
using device::make_ops;

// device::make_ops, or null with the failure recorded in `check` (and kept in `unavailable`, so
// that settle() rethrows it as Unavailable after the agreement).
std::unique_ptr<DeviceOps> try_make_ops(ArgCheck& check, const DeviceAlgorithmOptions& options,
                                        std::exception_ptr& unavailable);
// Runs the cross-rank agreement (or only the local checks, without `agree`); a rank whose
// backend is unavailable throws that Unavailable.
void settle(const ArgCheck& check, const Communicator& comm, const std::exception_ptr& unavailable,
            bool agree = true);

// Whether a call with this signature runs the cross-rank agreement: never with kNever, always
// with kAlways; with kAuto always, except a stream-ordered call (NCCL's contract) whose
// signature was agreed on `comm` before: it sends nothing on the host, and matching arguments are
// then the caller's duty, as with NCCL. Every rank keeps the same set of agreed signatures (it
// records one only once the agreement passed), so the ranks skip or run it alike.
bool needs_agreement(const ArgCheck& check, const Communicator& comm,
                     const DeviceAlgorithmOptions& options);
// Records the signature of `check`, which passed the agreement, for needs_agreement.
void agreed(const ArgCheck& check, const Communicator& comm, const DeviceAlgorithmOptions& options);

// Segment size, tag, backend and transport.
void check_device_options(ArgCheck& check, const Communicator& comm, Operation op,
                          const DeviceAlgorithmOptions& options);
// check_view plus: the memory belongs to the device of `ops` (when ops is set).
void check_device_view(ArgCheck& check, const DeviceOps* ops, const char* what, const char* role,
                       ConstTensorView v);
// check_device_view of send and recv, and their dtypes equal.
void check_pair(ArgCheck& check, const DeviceOps* ops, const char* op, ConstTensorView send,
                ConstTensorView recv);
// recv has send's count, and the two are the same buffer or do not overlap.
void check_same_count_or_buffer(ArgCheck& check, const char* op, ConstTensorView send,
                                ConstTensorView recv);
// The signature all ranks share: count, dtype, codec, segment size, tag, backend, transport.
void add_device_fields(ArgCheck& check, size_t count, DType dtype,
                       const DeviceAlgorithmOptions& options);

}  // namespace hycc::comm
