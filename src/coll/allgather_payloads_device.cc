// The device allgather of payloads of different sizes (payload_gather.h): one payload per rank
// forwarded round the device ring unchanged.
#include <utility>

#include "coll/device_ring.h"
#include "coll/payload_gather.h"

namespace hycc::coll::device {

size_t allgather_payloads(const Communicator& comm, DeviceOps& ops, Transport& transport,
                          const CodecConfig& codec, Payload&& own, size_t bound, size_t raw,
                          std::vector<Payload>& all) {
  const int p = comm.size(), me = comm.rank();
  DeviceContext ctx{.rank = me,
                    .size = p,
                    .codec = codec,
                    .seg_elems = 1,
                    .seed = 0,
                    .ops = ops,
                    .transport = transport,
                    .errors = {},
                    .counters = {}};
  all.resize(static_cast<size_t>(p));
  DeviceRingSchedule ring;
  ring.steps = p - 1;
  ring.first_segments = 1;
  ring.recv_segments = [](int) { return size_t{1}; };
  ring.recv_capacity = [&](int, size_t) { return bound; };
  ring.max_payload = bound;
  const auto copy = [&](const Payload& from, Payload& to) {
    // Forwarded as received: with the checksum trailer it arrived with.
    const size_t trailer = from.has_checksum ? kPayloadTrailer : 0;
    ctx.ops.copy_device(to.data(), from.data(), from.size + trailer);
    to.size = from.size;
    to.raw_bytes = raw;
    to.has_checksum = from.has_checksum;
  };
  ring.first = [&](size_t, Payload& out) { copy(own, out); };
  ring.arrived = [&](int t, size_t, Payload& in, Payload& out) {
    Payload& slot = all[static_cast<size_t>((me - 1 - t + 2 * p) % p)];
    std::swap(in, slot);
    if (t + 1 < ring.steps) copy(slot, out);
  };
  if (p > 1) run_device_ring(ctx, ring);
  all[static_cast<size_t>(me)] = std::move(own);
  return ctx.counters.wire_bytes;
}

}  // namespace hycc::coll::device
