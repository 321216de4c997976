// The matched probes of libhycc_mpi.so: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv. On a
// routed communicator (runtime/p2p.h) a matched probe looks where MPI_Probe looks: a held
// message (one MPI_Probe received), the communicator itself (the program's own messages, whose
// message handles are MPI's and received by MPI), and the private duplicate, where a stream it
// finds is received (runtime/held_messages.cc, mpi/probe_calls.cc) to learn its element count. A
// received stream has no message of MPI's left to stand for it, so the library makes one: a
// zero-byte message to itself on a private duplicate of MPI_COMM_SELF, matched by MPI_Mprobe, whose
// real handle the program gets. MPI_Mrecv and MPI_Imrecv of that handle receive the zero bytes (so
// MPI frees the handle and sets it to MPI_MESSAGE_NULL, as for any message) and decode the stream
// into the buffer. A handle converts to Fortran and back as any other. Other handles are MPI's own.
#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "interpose/runtime/p2p.h"
#include "interpose/runtime/state.h"

namespace hycc::interpose {
namespace {

// A stream received by a matched probe, and what stands for it.
struct Matched {
  MPI_Comm comm = MPI_COMM_NULL;
  HeldMessage message;
  MPI_Request self_send = MPI_REQUEST_NULL;  // the zero-byte message behind the handle
};

std::mutex g_mutex;
std::unordered_map<MPI_Message, Matched> g_matched;  // guarded by g_mutex
std::atomic<size_t> g_count{0};

// A message handle of MPI's for m, which the program then receives with MPI_Mrecv/MPI_Imrecv.
int stand_in(MPI_Comm comm, HeldMessage m, MPI_Message* message) {
  static std::atomic<unsigned> next_tag{0};
  const int tag = static_cast<int>(next_tag.fetch_add(1) % 32768U);  // MPI_TAG_UB >= 32767
  Matched entry{comm, std::move(m), MPI_REQUEST_NULL};
  int rc = PMPI_Isend(nullptr, 0, MPI_BYTE, 0, tag, private_self_comm(), &entry.self_send);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Mprobe(0, tag, private_self_comm(), message, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return rc;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_matched[*message] = std::move(entry);
  g_count.fetch_add(1, std::memory_order_release);
  return MPI_SUCCESS;
}

// The stream behind `message`, taken out, and MPI's stand-in received; nothing for MPI's own
// messages.
std::optional<Matched> take(MPI_Message* message) {
  if (g_count.load(std::memory_order_acquire) == 0 || *message == MPI_MESSAGE_NULL) {
    return std::nullopt;
  }
  std::optional<Matched> m;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_matched.find(*message);
    if (it == g_matched.end()) return std::nullopt;
    m = std::move(it->second);
    g_matched.erase(it);
    g_count.fetch_sub(1, std::memory_order_release);
  }
  PMPI_Mrecv(nullptr, 0, MPI_BYTE, message, MPI_STATUS_IGNORE);
  PMPI_Wait(&m->self_send, MPI_STATUS_IGNORE);
  return m;
}

// One look, as MPI_Improbe. Throws CorruptStream.
int improbe_once(const CommState& s, int source, int tag, MPI_Comm comm, int* flag,
                 MPI_Message* message, MPI_Status* status) {
  if (auto held = take_held(comm, source, tag)) {  // an MPI_Probe received it
    *flag = 1;
    if (status != MPI_STATUS_IGNORE) *status = held->status;
    return stand_in(comm, std::move(*held), message);
  }
  const int rc = PMPI_Improbe(source, tag, comm, flag, message, status);
  if (rc != MPI_SUCCESS || *flag != 0) return rc;
  HeldMessage m;
  const int received = receive_stream(s, source, tag, flag, &m);
  if (received != MPI_SUCCESS || *flag == 0) return received;
  if (status != MPI_STATUS_IGNORE) *status = m.status;
  return stand_in(comm, std::move(m), message);
}

// MPI_Mrecv and MPI_Imrecv of a stand-in: the stream decoded into buf.
int receive_matched(Matched& m, void* buf, int count, MPI_Datatype type, const char* call,
                    MPI_Status* status) {
  if (!is_float32(type)) {
    return fail(m.comm, call, "a float message received as another datatype");
  }
  const Inside guard;
  try {
    deliver(m.message, buf, count, status);
    return MPI_SUCCESS;
  } catch (const std::exception& e) {
    return fail(m.comm, call, e.what());
  }
}

}  // namespace
}  // namespace hycc::interpose

namespace ip = hycc::interpose;

extern "C" {

int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                MPI_Status* status) {
  ip::CommState* s = ip::p2p_route(comm, MPI_FLOAT, ip::P2p::kReceive, source, tag, 0);
  if (s == nullptr) return PMPI_Improbe(source, tag, comm, flag, message, status);
  const ip::Inside guard;
  try {
    return ip::improbe_once(*s, source, tag, comm, flag, message, status);
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Improbe", e.what());
  }
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  ip::CommState* s = ip::p2p_route(comm, MPI_FLOAT, ip::P2p::kReceive, source, tag, 0);
  if (s == nullptr) return PMPI_Mprobe(source, tag, comm, message, status);
  const ip::Inside guard;
  try {
    for (;;) {
      int flag = 0;
      const int rc = ip::improbe_once(*s, source, tag, comm, &flag, message, status);
      if (rc != MPI_SUCCESS || flag != 0) return rc;
      sched_yield();
    }
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Mprobe", e.what());
  }
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  std::optional<ip::Matched> m = ip::take(message);
  if (!m) return PMPI_Mrecv(buf, count, type, message, status);
  return ip::receive_matched(*m, buf, count, type, "MPI_Mrecv", status);
}

int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
               MPI_Request* request) {
  std::optional<ip::Matched> m = ip::take(message);
  if (!m) return PMPI_Imrecv(buf, count, type, message, request);
  const int rc = ip::receive_matched(*m, buf, count, type, "MPI_Imrecv", MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return rc;
  const ip::Inside guard;
  return ip::completed_request(m->message.status, request);
}

}  // extern "C"
