// How the device collectives move payloads between ranks: variable-size byte messages in device
// memory whose size the receiver learns from the message (it knows only an upper bound).
// Messages between two ranks are matched in the order they were posted, on one tag.
//
// Implementations:
// - MPI on host memory (mpi_transport.cc): MPI_Isend from the payload, MPI_Irecv of the upper
//   bound posted ahead, the size from MPI_Get_count. The host algorithms run on it.
// - staged MPI (mpi_transport.cc): a send copies the payload into pinned host memory and
//   starts MPI_Isend; receives are posted ahead (MPI_Irecv of the upper bound into pinned
//   memory), the size comes from MPI_Get_count, and the bytes are copied to the device.
// - staged over a group (group_staged_transport.cc): the same staging on a communicator that is
//   not MPI's, over the group's own host transport.
// - NCCL (nccl_transport.cc): ncclSend/ncclRecv in ncclGroupStart/End rounds on a stream of
//   their own, each payload's size first as an 8-byte message on the host transport, unless
//   the receiver knows it (PayloadSizes::kKnown).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/device_ops.h"
#include "hycc/collectives_device.h"
#include "hycc/comm.h"

namespace hycc::comm {

// The device layer's memory and payloads, as the transports name them.
using device::allocate_payload;
using device::DeviceOps;
using device::holds_payload;
using device::kPayloadTrailer;
using device::Memory;
using device::Payload;

class PendingIntegrity;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Every message belongs to a *round*, a number the sender and the receiver give it alike (the
  // algorithm's global schedule: a ring's (step, segment), a chain's (segment, position)). A
  // rank posts its sends in increasing rounds and announces its receives in increasing rounds,
  // and posts every send of rounds <= r before it waits for a receive of round r. The NCCL
  // transport moves each round's send and receive of a rank in one group, in round order, which
  // cannot deadlock; staged MPI ignores rounds.

  // Starts sending bytes [0, payload.size) of `payload` to `peer`. The transport owns the
  // payload until the send no longer needs it; reclaim() hands it back.
  virtual void post_send(int peer, Payload&& payload, uint64_t round) = 0;
  // Announces the next message from `peer`, of at most `capacity` bytes.
  virtual void post_recv(int peer, size_t capacity, uint64_t round) = 0;
  // Tells the transport that the caller will announce no further receive (so that its sends
  // need not wait for one to pair with).
  virtual void receives_announced() = 0;
  // Completes the oldest announced receive into `into` and sets into.size. The transport may
  // hand over a buffer of its own instead (swapping it with `into`'s), of at least the
  // receive's capacity.
  virtual void wait_recv(Payload& into) = 0;
  // Lets transfers progress while the caller computes.
  virtual void progress() = 0;
  // Whether the oldest announced receive has arrived, so that wait_recv would not wait (false
  // when the transport cannot tell).
  virtual bool recv_arrived() { return false; }
  // Moves the payloads of completed sends into `free`; with `wait`, completes every send first.
  virtual void reclaim(std::vector<Payload>& free, bool wait) = 0;
  // The call's last step: no send or receive follows. Every transfer is started and the call's
  // stream ordered after all of them; the payloads of the sends go to `free`, their memory
  // reusable in stream order (device_ops.h). The NCCL transport does not wait on the host; the
  // others complete every send (reclaim with `wait`).
  virtual void finish(std::vector<Payload>& free) { reclaim(free, true); }
  // A payload that arrived altered (checksum transport): the first failure, or "". Waits for the
  // checks queued so far (they run on the device).
  virtual std::string integrity_error() { return ""; }
  // The same for a call that returns once queued: null when there is nothing to check; otherwise
  // what tells, without waiting, when the checks are done and what they found. Call it last.
  virtual std::shared_ptr<const PendingIntegrity> deferred_integrity() { return nullptr; }
};

// The checks of a stream-ordered call's payloads, done on the device after the call returned.
class PendingIntegrity {
 public:
  virtual ~PendingIntegrity() = default;
  // Whether the device has passed the call's checks (without waiting).
  virtual bool done() const = 0;
  // Once done(): the first payload that failed, or "".
  virtual std::string error() const = 0;
};

// Keeps `pending` with `comm` until its checks are done (raise_deferred_integrity).
void defer_integrity(const Communicator& comm, std::shared_ptr<const PendingIntegrity> pending);
// Drops the deferred checks of `comm` that are done; throws CorruptStream for the first one that
// found an altered payload (each is raised once). A device call runs it after queueing its work,
// so that the rank still takes its part in the call and no peer waits for it.
void raise_deferred_integrity(const Communicator& comm);

// `inner` with a checksum appended to every payload (kPayloadTrailer bytes) and verified on
// arrival (checksum_transport.cc).
std::unique_ptr<Transport> with_checksums(DeviceOps& ops, std::unique_ptr<Transport> inner);

// How a receiver learns the size of a payload.
enum class PayloadSizes : uint8_t {
  kAnnounced,  // the sender tells it (NCCL: an 8-byte message on the host transport first)
  kKnown,      // every payload fills the capacity its receive was announced with (a codec whose
               // payload size depends only on dtype and count: fixed_payload_size())
};

// Whether every payload of `codec` has exactly max_payload_bytes (none, bf16, fp16), so that a
// receiver knows its size: PayloadSizes::kKnown.
bool fixed_payload_size(const CodecConfig& codec);

// The transport of a call: options.transport, or for kAuto NCCL (collectives on CUDA when
// nccl_usable) or staged MPI. `collective`: every rank of comm makes this call.
std::unique_ptr<Transport> make_transport(const Communicator& comm, DeviceOps& ops,
                                          const DeviceAlgorithmOptions& options, int tag,
                                          bool collective,
                                          PayloadSizes sizes = PayloadSizes::kAnnounced);

// Staged transfers on `comm`: staged MPI, or on a communicator over a group (comm/group.h) the
// group's host transport with each payload copied between device and host memory
// (group_staged_transport.cc).
std::unique_ptr<Transport> make_staged_transport(DeviceOps& ops, const Communicator& comm, int tag);

// MPI on `comm` with internal tag `tag`, payloads in host memory; receive buffers come from
// `host` (host memory operations: make_host_emulated_ops()).
std::unique_ptr<Transport> make_mpi_transport(DeviceOps& host, MPI_Comm comm, int tag);

// Staged MPI on `comm` with internal tag `tag`.
std::unique_ptr<Transport> make_staged_mpi_transport(DeviceOps& ops, MPI_Comm comm, int tag);

// The NCCL transport (nccl_transport.cc): NCCL on the NCCL communicator of `comm`
// (cuda/nccl_link.cc; Unavailable without CUDA or libnccl.so.2), or with the host emulation its
// MPI stand-in (mpi_nccl_link.cc; MPI communicators only); payload sizes go as 8-byte messages
// on `comm`'s host transport (host_transport(): MPI, or the group's) with `tag`, unless
// `sizes` is kKnown: then no message goes over the host and no host transport is made.
// `create`: make the NCCL communicator if `comm` has none yet (collective over `comm`);
// otherwise a missing one is an InvalidArgument.
std::unique_ptr<Transport> make_nccl_transport(const Communicator& comm, DeviceOps& ops,
                                               const DeviceAlgorithmOptions& options, int tag,
                                               bool create,
                                               PayloadSizes sizes = PayloadSizes::kAnnounced);
// Whether the ranks of `comm` can use NCCL: libnccl.so.2 loads on every rank and no two ranks
// share a GPU. Collective over `comm` the first time; cached with the communicator.
bool nccl_usable(const Communicator& comm);

namespace testing {
// A function applied to the staged bytes of every payload this process sends (it may change
// them and returns the size to send, at most the given size); empty to stop. For the tests of
// malformed payloads only.
void set_staged_send_filter(std::function<size_t(std::byte* data, size_t size)> filter);
// Payloads the staged transport of this process has copied from the device to send them (a
// forwarded one goes from the pinned buffer it arrived in), since the start.
size_t staged_send_copies();
}  // namespace testing

}  // namespace hycc::comm
