// Point to point of libhycc_mpi.so, shared by the sends and receives (interpose_p2p.cc) and the
// probes (runtime/held_messages.cc, mpi/probe_calls.cc).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "interpose/runtime/state.h"

namespace hycc::interpose {

// The state of comm when a float message to or from `peer` goes through hycc. Only named
// dimensions: on other communicators a program's probes would have to look at two communicators
// for each message. Both ends decide alike, from the name and the policy only: the policy must
// have a rule that compresses this dimension's point-to-point messages (of some size).
// Otherwise, as under the baseline policy, messages are MPI's own. So are calls whose peer, tag
// or count MPI refuses: the error is then MPI's own, through the program's error handler.
enum class P2p { kSend, kReceive };  // receives and probes may take MPI_ANY_SOURCE, MPI_ANY_TAG
CommState* p2p_route(MPI_Comm comm, MPI_Datatype type, P2p direction, int peer, int tag, int count);

// A message of hycc's that a probe received from the private duplicate to learn its element
// count (MPI_Probe, MPI_Iprobe): its stream, and the status the probe gave (source, tag, the
// element count as floats). The next receive that matches it takes it.
struct HeldMessage {
  std::vector<std::byte> stream;
  MPI_Status status{};
};

// Receives the first of hycc's streams on s's duplicate that a receive from `source` with `tag`
// matches, if there is one (*flag), into *out: its stream, and its status with the element count
// as floats. Throws CorruptStream (a stream that does not hold floats).
int receive_stream(const CommState& s, int source, int tag, int* flag, HeldMessage* out);

// One probe (MPI_Iprobe) of comm and of its duplicate s: a held message that matches, a message
// of the program's, or one of hycc's streams, which is then received and held for the receive
// that matches it (*flag; *status as the probe reports it). Throws CorruptStream (a stream that
// is not one).
int probe_once(const CommState& s, int source, int tag, MPI_Comm comm, int* flag,
               MPI_Status* status);

// A held message received into the program's buffer (count floats; device memory staged) as a
// receive does; sets *status (unless MPI_STATUS_IGNORE). Throws CommError / CorruptStream.
void deliver(HeldMessage& m, void* buf, int count, MPI_Status* status);

// The first held message of comm that a receive from `source` with `tag` (wildcards allowed)
// matches, taken out; nothing when there is none.
std::optional<HeldMessage> take_held(MPI_Comm comm, int source, int tag);

// A request already complete with `status` (a generalized request): MPI_Irecv of a held message.
int completed_request(const MPI_Status& status, MPI_Request* request);

}  // namespace hycc::interpose
