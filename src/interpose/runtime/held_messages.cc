// The messages MPI_Probe and MPI_Iprobe of libhycc_mpi.so hold (the calls: mpi/probe_calls.cc).
// On a communicator whose float messages hycc routes
// (runtime/p2p.h), a program's message is on the communicator itself (any other type) or on
// the private duplicate (floats, as one hycc stream). A probe looks at both. A stream's length
// says nothing of how many floats it holds, and MPI cannot read a message without receiving it,
// so a probe that finds a stream receives it (MPI_Improbe + MPI_Mrecv: exactly the message it
// found), reads the element count from its header, keeps it as held, and reports it with that
// count (MPI_Get_count(status, MPI_FLOAT) gives what was sent). The next receive on the
// communicator that matches a held message takes it before anything MPI still has: a message
// probed is the message then received, as MPI promises. A blocking probe polls both until one
// has a message, yielding the processor between rounds.
#include <mpi.h>
#include <sched.h>

#include <deque>
#include <exception>
#include <mutex>

#include "hycc/codec.h"
#include "hycc/error.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/p2p.h"
#include "interpose/runtime/requests.h"

namespace hycc::interpose {
namespace {

struct Held {
  MPI_Comm comm;
  HeldMessage message;
};

std::mutex g_mutex;
std::deque<Held> g_held;  // in the order probes took them; guarded by g_mutex

bool matches(const Held& h, MPI_Comm comm, int source, int tag) {
  return h.comm == comm && (source == MPI_ANY_SOURCE || source == h.message.status.MPI_SOURCE) &&
         (tag == MPI_ANY_TAG || tag == h.message.status.MPI_TAG);
}

// The status of the first held message of comm that matches, if there is one.
bool held_status(MPI_Comm comm, int source, int tag, MPI_Status* status) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (const Held& h : g_held) {
    if (matches(h, comm, source, tag)) {
      if (status != MPI_STATUS_IGNORE) *status = h.message.status;
      return true;
    }
  }
  return false;
}

int query_status(void* extra, MPI_Status* status) {
  *status = *static_cast<MPI_Status*>(extra);
  return MPI_SUCCESS;
}
int free_status(void* extra) {
  delete static_cast<MPI_Status*>(extra);
  return MPI_SUCCESS;
}
int cancel_nothing(void*, int) { return MPI_SUCCESS; }

}  // namespace

int probe_once(const CommState& s, int source, int tag, MPI_Comm comm, int* flag,
               MPI_Status* status) {
  *flag = 0;
  if (held_status(comm, source, tag, status)) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  const int rc = PMPI_Iprobe(source, tag, comm, flag, status);
  if (rc != MPI_SUCCESS || *flag != 0) return rc;
  Held h{comm, {}};
  const int received = receive_stream(s, source, tag, flag, &h.message);
  if (received != MPI_SUCCESS || *flag == 0) return received;
  if (status != MPI_STATUS_IGNORE) *status = h.message.status;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_held.push_back(std::move(h));
  return MPI_SUCCESS;
}

int receive_stream(const CommState& s, int source, int tag, int* flag, HeldMessage* out) {
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status st{};
  int rc = PMPI_Improbe(source, tag, s.p2p_shadow, flag, &message, &st);
  if (rc != MPI_SUCCESS || *flag == 0) return rc;
  int bytes = 0;
  PMPI_Get_count(&st, MPI_BYTE, &bytes);
  out->stream.resize(size_t(bytes > 0 ? bytes : 0));
  rc = PMPI_Mrecv(out->stream.data(), bytes, MPI_BYTE, &message, &st);
  if (rc != MPI_SUCCESS) return rc;
  const StreamInfo info = inspect(out->stream);
  if (info.dtype != DType::kF32) {
    throw CorruptStream(
        tagged("dropin", "a probed message holds ", dtype_name(info.dtype), ", not float32"));
  }
  PMPI_Status_set_elements(&st, MPI_FLOAT, static_cast<int>(info.count));
  out->status = st;
  return MPI_SUCCESS;
}

void deliver(HeldMessage& m, void* buf, int count, MPI_Status* status) {
  HostStaging out(buf, size_t(count > 0 ? count : 0) * sizeof(float), false);
  const size_t n = decode(m.stream, m.stream.size(), out.floats(), size_t(count), &m.status);
  out.store(n * sizeof(float));  // a shorter message leaves the rest of the buffer as it was
  if (status != MPI_STATUS_IGNORE) *status = m.status;
}

std::optional<HeldMessage> take_held(MPI_Comm comm, int source, int tag) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_held.begin(); it != g_held.end(); ++it) {
    if (matches(*it, comm, source, tag)) {
      HeldMessage m = std::move(it->message);
      g_held.erase(it);
      return m;
    }
  }
  return std::nullopt;
}

int completed_request(const MPI_Status& status, MPI_Request* request) {
  auto* extra = new MPI_Status(status);
  const int rc = PMPI_Grequest_start(query_status, free_status, cancel_nothing, extra, request);
  if (rc != MPI_SUCCESS) {
    delete extra;
    return rc;
  }
  return PMPI_Grequest_complete(*request);
}

}  // namespace hycc::interpose
