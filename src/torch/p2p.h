// Compressed point to point of the hycc backend (send, recv, batch_isend_irecv: pipelining's
// activations and gradients). gloo's point to point needs the exact size on both sides and a
// compressed stream's size is known to its sender only, so a stream goes as its header (its size
// and its place among the sender's streams to that peer on that tag: 16 bytes, on the call's
// tag) and then its bytes (on the tag + kPayloadTag) over a wire of its own. Both sides decide
// from their tensor (torch's point to point has the receiver name the shape), so they agree on
// compressing; the stream itself says its codec, dtype and count. A receive runs on a thread of
// its own: it waits for the header, posts the payload's receive and decodes, so that the
// sender's wait for its payload never depends on the order in which the receiver waits.
//
// Receives from any source (recvAnysource) take headers as gloo matches them (a receive naming
// the peer first, then the any-source ones in their order); their payloads' receives are posted
// in the order of the headers' places (P2pOrder), so each payload meets the receive whose header
// it follows, whichever thread posts it.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <ATen/ATen.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "hycc/codec.h"

namespace hycc::torch_backend {

inline constexpr int kPayloadTag = 1 << 30;

// The places of one wire's streams, per peer and tag: the sender numbers its streams to each
// peer and tag in the order it sends them; the receiver posts the payloads' receives from each
// peer and tag in that order.
class P2pOrder {
 public:
  // The place of the next stream to `dst` on `tag` (the caller's thread, in the program's order).
  uint64_t next_send(int dst, int tag);
  // Runs `post` (a payload's receive) once the payloads before `place` from `src` on `tag` have
  // been posted; then counts it posted (also when `post` throws).
  void in_turn(int src, int tag, uint64_t place, const std::function<void()>& post);

 private:
  std::mutex mutex_;
  std::condition_variable turn_;
  std::map<std::pair<int, int>, uint64_t> sent_, posted_;
};

// Encodes `t` (a tensor hycc takes, tensors.h) with `codec` and sends it to `dst` on `wire` as
// the stream at `place` (P2pOrder::next_send); the Work completes in wait() (as gloo's sends
// do). `*stream_bytes`: the stream's size.
c10::intrusive_ptr<c10d::Work> send_compressed(c10d::Backend& wire, const at::Tensor& t,
                                               const CodecConfig& codec, int dst, int tag,
                                               uint64_t place, size_t* stream_bytes);

// A receive of a stream from `src` (-1: any source): its header's receive is posted at once (on
// the caller's thread, so that receives match the sends in order), the rest runs on a thread of
// the backend's for that peer and tag: finish_recv() waits for the header, receives the payload
// in its turn (`order`) and decodes it into `t` (of the sender's dtype and count, and a stream
// no longer than `codec`, the one both sides decided, writes: CorruptStream or InvalidArgument
// otherwise). `source`: the peer the stream came from, once its header has.
struct PendingRecv {
  int src = 0;
  int tag = 0;
  at::Tensor header;  // 16 bytes: the stream's size and place
  c10::intrusive_ptr<c10d::Work> header_work;
  int source = -1;
};
PendingRecv post_recv(c10d::Backend& wire, int src, int tag);
void finish_recv(c10d::Backend& wire, P2pOrder& order, PendingRecv& pending,
                 const CodecConfig& codec, at::Tensor& t);

}  // namespace hycc::torch_backend
