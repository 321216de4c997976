// Compressed point to point of the hycc backend (send, recv, batch_isend_irecv: pipelining's
// activations and gradients). gloo's point to point needs the exact size on both sides and a
// compressed stream's size is known to its sender only, so a stream goes as its size (8 bytes,
// on the call's tag) and then its bytes (on the tag + kPayloadTag) over a wire of its own. Both
// sides decide from their tensor (torch's point to point has the receiver name the shape), so they
// agree on compressing; the stream itself says its codec, dtype and count. A receive runs on a
// thread of its own: it waits for the size, posts the payload's receive and decodes, so that the
// sender's wait for its payload never depends on the order in which the receiver waits.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <ATen/ATen.h>

#include "hycc/codec.h"

namespace hycc::torch_backend {

inline constexpr int kPayloadTag = 1 << 30;

// Encodes `t` (a tensor hycc takes, tensors.h) with `codec` and sends it to `dst` on `wire`; the
// Work completes in wait() (as gloo's sends do). `*stream_bytes`: the stream's size.
c10::intrusive_ptr<c10d::Work> send_compressed(c10d::Backend& wire, const at::Tensor& t,
                                               const CodecConfig& codec, int dst, int tag,
                                               size_t* stream_bytes);

// A receive of a stream from `src`: its size's receive is posted at once (on the caller's
// thread, so that receives from one peer and tag match the sends in order), the rest runs on a
// thread of the backend's for that peer and tag: finish_recv() waits for the size, receives the
// payload and decodes it into `t` (of the sender's dtype and count, and a stream no longer than
// `codec`, the one both sides decided, writes: CorruptStream or InvalidArgument otherwise).
struct PendingRecv {
  int src = 0;
  int tag = 0;
  at::Tensor size;  // 8 bytes
  c10::intrusive_ptr<c10d::Work> size_work;
};
PendingRecv post_recv(c10d::Backend& wire, int src, int tag);
void finish_recv(c10d::Backend& wire, PendingRecv& pending, const CodecConfig& codec,
                 at::Tensor& t);

}  // namespace hycc::torch_backend
