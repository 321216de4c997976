// The state of one device collective call and the pipelined ring that moves its payloads: the
// device counterpart of ring_pipeline.h, with the same schedule (a ring of T steps, stream k of
// step t + 1 made from stream k of step t as soon as it has arrived), payloads in device memory
// instead of host streams, and a Transport instead of MPI calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "coll/coll_internal.h"
#include "comm/transport.h"
#include "device/device_ops.h"

namespace hycc::coll::device {

// The device layer's memory and operations, and the transport, as the algorithms name them.
using comm::Transport;
using ::hycc::device::allocate_payload;
using ::hycc::device::DeviceOps;
using ::hycc::device::holds_payload;
using ::hycc::device::kPayloadTrailer;
using ::hycc::device::Memory;
using ::hycc::device::Payload;

struct DeviceContext {
  int rank = 0;
  int size = 1;
  const CodecConfig& codec;
  size_t seg_elems = 1;
  uint64_t seed = 0;
  DeviceOps& ops;
  Transport& transport;
  DeferredError errors;
  Counters counters;
};

// Encodes `in` into `out` (payload of this call's codec) with `seed`; sets out.size and
// out.raw_bytes. `out` must hold payload_capacity() bytes for in's dtype and count.
void encode_payload(DeviceContext& ctx, ConstTensorView in, Payload& out, uint64_t seed);

// The payload buffers of one call, recycled: take() hands out a buffer for payloads of at most
// `bound` bytes, one that came back (give(), or a transport's reclaim() into free()) when it is
// large enough (received ones may be smaller: the NCCL transport's have their own bound).
class PayloadPool {
 public:
  PayloadPool(DeviceOps& ops, size_t bound) : ops_(ops), bound_(bound) {}
  Payload take();
  void give(Payload&& p) { free_.push_back(std::move(p)); }
  std::vector<Payload>& free() { return free_; }

 private:
  DeviceOps& ops_;
  size_t bound_;
  std::vector<Payload> free_;
};

// Upper bound of the payloads of `count` elements of `dtype` cut into segments of seg_elems.
size_t payload_bound(const CodecConfig& codec, DType dtype, size_t count, size_t seg_elems);

struct DeviceRingSchedule {
  int steps = 0;
  size_t first_segments = 0;
  std::function<size_t(int t)> recv_segments;
  // Upper bound (bytes) of payload k of step t.
  std::function<size_t(int t, size_t k)> recv_capacity;
  // Upper bound of every payload of the call (the size of the buffers); 0: the largest receive
  // capacity (a payload made larger grows its buffer).
  size_t max_payload = 0;
  std::function<void(size_t k, Payload& out)> first;
  // Payload k of step t has arrived in `in`. Consumes it and, when t + 1 < steps, makes payload
  // k of step t + 1 in `out` (std::swap(in, out) forwards it). Errors of malformed payloads are
  // captured in ctx.errors; the outgoing payload is made anyway.
  std::function<void(int t, size_t k, Payload& in, Payload& out)> arrived;
};

void run_device_ring(DeviceContext& ctx, const DeviceRingSchedule& schedule);

}  // namespace hycc::coll::device
