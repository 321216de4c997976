// What the algorithm layer offers the device gradient compressors (grad/) besides the
// collectives: the allgather of one codec payload per rank, of sizes the receivers do not know.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/codec.h"
#include "hycc/comm.h"

namespace hycc::coll {

namespace device {
// Gathers every rank's payload round a device ring of `comm` on `transport`: all[j] = rank j's
// payload (all[rank] = own, moved). Payloads hold at most `bound` bytes of `codec`, `raw`
// uncompressed bytes each (statistics). Returns the bytes this rank sent. A payload altered on
// the way shows in transport.integrity_error().
size_t allgather_payloads(const Communicator& comm, ::hycc::device::DeviceOps& ops,
                          comm::Transport& transport, const CodecConfig& codec,
                          ::hycc::device::Payload&& own, size_t bound, size_t raw,
                          std::vector<::hycc::device::Payload>& all);
}  // namespace device

using device::allgather_payloads;

}  // namespace hycc::coll
