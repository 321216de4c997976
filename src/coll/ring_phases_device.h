// The two halves of the device ring algorithms, as pieces of a DeviceRingSchedule: the same
// protocol as ring_phases.h (chunks, steps, wire dtypes, seeds), on device payloads. Keeping
// them step for step equal to the host halves is what makes the device results bit-identical
// to the host collectives.
//
// Why the halves are twins while the engine (device_ring.cc) and the transport are shared: a
// host segment travels as a whole codec stream, whose 48-byte header (codec, dtype, count,
// checksum) every receiver validates and which point to point and the drop-in library rely on;
// a device segment is a bare payload written by DeviceOps on the device's stream (the codec is
// part of the call's agreed signature, integrity the checksum transport's). They differ only in
// how a segment becomes bytes and back.
#pragma once

#include <span>

#include "coll/device_ring.h"
#include "coll/ring_phases.h"

namespace hycc::coll::device {

// Ring reduce-scatter with compression at every hop (RingReduceScatter, on the device).
class DeviceReduceScatter {
 public:
  DeviceReduceScatter(DeviceContext& ctx, ConstTensorView send);

  int steps() const { return ctx_.size - 1; }
  size_t first_segments() const;
  size_t recv_segments(int t) const;
  size_t recv_capacity(int t, size_t k) const;
  size_t max_payload() const;
  // Encodes segment k of this rank's elements of chunk r - 1.
  void first(size_t k, Payload& out) const;
  // Decodes payload k of step t and adds this rank's elements into partial() (float32, device).
  // A malformed payload is captured in ctx.errors and counts as zeros.
  void reduce(int t, size_t k, const Payload& in);
  ChunkRange segment(int t, size_t k) const;
  // Encodes partial() as payload k of step t + 1.
  void send_on(int t, size_t k, Payload& out) const;
  // reduce() then send_on() (t + 1 < steps()): in one pass over memory where the device has a
  // fused kernel for the codec (DeviceOps::hop), the same bits.
  void hop(int t, size_t k, const Payload& in, Payload& out);
  // Rounds partial() (segment k of the last step) into `out` at the segment's offset.
  void store(int t, size_t k, ReduceOp op, TensorView out) const;

 private:
  ChunkRange chunk(int t) const;
  DType wire(int t) const { return t == 0 ? send_.dtype : DType::kF32; }

  DeviceContext& ctx_;
  ConstTensorView send_;
  Memory partial_;  // one segment of float32 partial sums
};

// Ring allgather of blocks compressed once (RingAllgather, on the device).
class DeviceAllgather {
 public:
  DeviceAllgather(DeviceContext& ctx, ConstTensorView own, std::span<const TensorView> blocks);

  int steps() const { return ctx_.size - 1; }
  size_t first_segments() const;
  size_t recv_segments(int s) const;
  size_t recv_capacity(int s, size_t k) const;
  size_t max_payload() const;
  // Encodes segment k of `own` and sets this rank's block to what the peers decode.
  void first(size_t k, Payload& out) const;
  // Decodes payload k of step s into its block and, unless s is the last step, forwards it.
  void arrived(int s, size_t k, Payload& in, Payload& out) const;

 private:
  TensorView block(int s) const;

  DeviceContext& ctx_;
  ConstTensorView own_;
  std::span<const TensorView> blocks_;
};

// The device algorithms (one file each).
void allreduce_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void reduce_scatter_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv,
                                ReduceOp op);
void allgather_ring_device(DeviceContext& ctx, ConstTensorView send, TensorView recv);
void broadcast_chain_device(DeviceContext& ctx, TensorView buffer, int root);
void alltoall_pairwise_device(DeviceContext& ctx, ConstTensorView send, TensorView recv);

}  // namespace hycc::coll::device
