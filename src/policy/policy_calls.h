// The collectives with CollectiveOptions::policy set: decide, run, record (hycc/policy_engine.h).
// The public functions of hycc/collectives.h and hycc/collectives_device.h (dispatch.cc,
// dispatch_device.cc) come here when options.policy is not null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/grad.h"
#include "hycc/grad_device.h"
#include "hycc/policy.h"

namespace hycc::policy {

// The key a gradient compressor's state has for a buffer when the caller gives none (0): made
// of its address and element count, and of the call's dimension and operation, so that memory a
// program frees and allocates again for a gradient of another kind (a dp allreduce's buffer
// reused for a zero reduce-scatter) does not take over the earlier gradient's residual.
inline uint64_t buffer_key(const void* data, size_t count, Dimension dimension, Operation op) {
  const uint64_t kind = (uint64_t(dimension) << 8 | uint64_t(op)) + 1;
  return reinterpret_cast<uintptr_t>(data) * 0x9E3779B97F4A7C15ull ^ count ^
         kind * 0xC2B2AE3D27D4EB4Full;
}

// A policy call's gradient tensor as the caller gave it: `key` (0 when none) and the bucket's
// pieces (GradTensor::pieces), for the layout check before the policy decides.
GradTensor policy_grad_layout(uint64_t key, std::span<const std::vector<size_t>> pieces);

// The tensor a gradient compressor of the policy runs on (host and device calls alike): the
// layout, and `key`, or when 0 the engine's key for the buffer (key_buffer and key_count when
// given, else `buffer`) in a call `op` on `comm` (PolicyEngine::buffer_grad_key, which drops the
// states of the buffers this one overlaps: call it for a gradient step only).
GradTensor policy_grad_tensor(PolicyEngine& engine, const Communicator& comm, Operation op,
                              uint64_t key, std::span<const std::vector<size_t>> pieces,
                              const void* key_buffer, size_t key_count, ConstTensorView buffer);

void policy_allreduce(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                      const CollectiveOptions& options);
void policy_reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv,
                           ReduceOp op, const CollectiveOptions& options);
void policy_allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
                      const CollectiveOptions& options);
void policy_broadcast(const Communicator& comm, TensorView buffer, int root,
                      const CollectiveOptions& options);
void policy_alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
                     const CollectiveOptions& options);
void policy_send(const Communicator& comm, ConstTensorView data, int dest, int tag,
                 const CollectiveOptions& options);

// Runs `call` with the options options.policy decides for a device call of `bytes` uncompressed
// bytes of `dtype` elements (policy cleared) and records it in the engine; fills *options.stats
// too. A gradient compressor decision runs `gradient` instead, with the engine's
// DeviceGradCompressor of that spec, when it is given (allreduce, reduce_scatter) and the call is
// compressed (above the threshold, more than one rank). policy_device.cc.
void run_with_policy(
    const Communicator& comm, Operation op, size_t bytes, DType dtype,
    const DeviceCollectiveOptions& options,
    const std::function<void(const DeviceCollectiveOptions&)>& call,
    const std::function<GradStepStats(DeviceGradCompressor&, const DeviceCollectiveOptions&)>&
        gradient = {});

}  // namespace hycc::policy
