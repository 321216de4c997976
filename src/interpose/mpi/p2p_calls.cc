// The point-to-point calls of libhycc_mpi.so: MPI_Send, MPI_Ssend, MPI_Bsend, MPI_Rsend,
// MPI_Recv, their nonblocking forms and MPI_Sendrecv (runtime/p2p.h says which messages hycc
// carries and how).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "hycc/codec.h"
#include "hycc/policy_engine.h"
#include "interpose/runtime/device_memory.h"
#include "interpose/runtime/p2p.h"
#include "interpose/runtime/requests.h"
#include "interpose/runtime/state.h"
#include "policy/engine_calls.h"

namespace hycc::interpose {
namespace {

// One outgoing message: its stream (the policy's codec, or none when that would not shrink the
// message) and what it cost. record() adds it to the statistics once it has left.
class Outgoing {
 public:
  Outgoing(CommState& s, const float* data, int count)
      : state_(s), start_(std::chrono::steady_clock::now()) {
    PolicyEngine& e = *engine();
    const ConstTensorView in{DType::kF32, size_t(count), data};
    decision_ = e.choose(s.comm, Operation::kSendRecv, in.bytes(), DType::kF32);
    policy::EngineCalls::log_decision(e, s.comm, Operation::kSendRecv, in.bytes(), decision_);
    const CodecConfig& chosen =
        decision_.gradient ? decision_.gradient_codec : decision_.options.codec;
    if (in.bytes() >= decision_.threshold_bytes && chosen.id() != CodecId::kNone) {
      stream = compress(chosen, in);
      if (stream.size() > in.bytes() + kStreamHeaderBytes) stream.clear();
    }
    stats_.compressed = !stream.empty();
    if (stream.empty()) stream = compress(CodecConfig(), in);
    stats_.message_bytes = stats_.raw_bytes = in.bytes();
    stats_.wire_bytes = stream.size();
    stats_.streams = 1;
    stats_.codec_seconds = seconds_since(start_);
  }

  int size() const { return static_cast<int>(stream.size()); }
  // Blocking sends call it after the send (their time includes the transfer); nonblocking ones
  // right away.
  void record() {
    stats_.seconds = seconds_since(start_);
    policy::EngineCalls::record(*engine(), state_.comm, Operation::kSendRecv, decision_, stats_);
  }

  std::vector<std::byte> stream;

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  CommState& state_;
  std::chrono::steady_clock::time_point start_;
  PolicyDecision decision_;
  CollectiveStats stats_;
};

size_t capacity_bytes(int count) {
  return max_compressed_bytes(CodecConfig(), DType::kF32, size_t(count));
}

using SendFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
using IsendFunction = int (*)(const void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*);

// MPI_Send, MPI_Ssend, MPI_Bsend, MPI_Rsend: the stream goes with the same kind of send
// (synchronous, buffered in the program's attached buffer, or ready: the routed receive it
// meets was posted on the duplicate).
int blocking_send(SendFunction send, const char* name, const void* buf, int count,
                  MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  CommState* s = p2p_route(comm, type, P2p::kSend, dest, tag, count);
  if (s == nullptr) return send(buf, count, type, dest, tag, comm);
  const Inside guard;
  try {
    HostStaging data(buf, size_t(count) * sizeof(float));
    Outgoing m(*s, data.floats(), count);
    const int rc = send(m.stream.data(), m.size(), MPI_BYTE, dest, tag, s->p2p_shadow);
    m.record();
    return rc;
  } catch (const std::exception& e) {
    return fail(comm, name, e.what());
  }
}

// MPI_Isend, MPI_Issend, MPI_Ibsend, MPI_Irsend: the stream goes with the same kind of send and
// is kept until the request completes.
int nonblocking_send(IsendFunction isend, const char* name, const void* buf, int count,
                     MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  CommState* s = p2p_route(comm, type, P2p::kSend, dest, tag, count);
  if (s == nullptr) return isend(buf, count, type, dest, tag, comm, request);
  const Inside guard;
  try {
    Pending p;
    HostStaging data(buf, size_t(count) * sizeof(float));
    Outgoing m(*s, data.floats(), count);
    m.record();
    p.stream = std::move(m.stream);
    const int rc = isend(p.stream.data(), static_cast<int>(p.stream.size()), MPI_BYTE, dest, tag,
                         s->p2p_shadow, request);
    if (rc == MPI_SUCCESS) track(*request, std::move(p));
    return rc;
  } catch (const std::exception& e) {
    return fail(comm, name, e.what());
  }
}

#if MPI_VERSION >= 4
// MPI 4's MPI_Isendrecv and MPI_Isendrecv_replace (sendbuf == recvbuf): when each direction is
// routed or idle (MPI_PROC_NULL) and one is routed, one MPI_Isendrecv of streams on the private
// duplicate, the receive decoded on completion as MPI_Irecv's; when neither is routed, MPI's own
// call (`native`). A float message one way and another type with a real peer the other way
// would need two requests; that call is MPI's too (docs/dropin.md, "Point to point"). A receive
// of a message a probe holds is done at once; the request is then the send's.
int isendrecv(const char* name, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
              int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype, int source,
              int recvtag, MPI_Comm comm, MPI_Request* request,
              const std::function<int()>& native) {
  CommState* send = p2p_route(comm, sendtype, P2p::kSend, dest, sendtag, sendcount);
  CommState* recv = p2p_route(comm, recvtype, P2p::kReceive, source, recvtag, recvcount);
  const bool send_ok = send != nullptr || dest == MPI_PROC_NULL;
  const bool recv_ok = recv != nullptr || source == MPI_PROC_NULL;
  if ((send == nullptr && recv == nullptr) || !send_ok || !recv_ok) return native();
  CommState& s = send != nullptr ? *send : *recv;
  const Inside guard;
  try {
    Pending p;
    if (send != nullptr) {
      HostStaging data(sendbuf, size_t(sendcount) * sizeof(float));
      Outgoing m(s, data.floats(), sendcount);
      m.record();
      p.outgoing = std::move(m.stream);
    }
    if (std::optional<HeldMessage> held =
            recv != nullptr ? take_held(comm, source, recvtag) : std::nullopt) {
      deliver(*held, recvbuf, recvcount, MPI_STATUS_IGNORE);  // a probe received it already
      if (send == nullptr) return completed_request(held->status, request);
      p.received = held->status;
      const int rc = PMPI_Isend(p.outgoing.data(), static_cast<int>(p.outgoing.size()), MPI_BYTE,
                                dest, sendtag, s.p2p_shadow, request);
      if (rc == MPI_SUCCESS) track(*request, std::move(p));
      return rc;
    }
    if (recv != nullptr) {
      p.stream.resize(capacity_bytes(recvcount));
      p.out = std::make_unique<HostStaging>(recvbuf, size_t(recvcount) * sizeof(float), false);
      p.capacity = size_t(recvcount);
      p.length_from_stream = true;
    }
    const int rc = PMPI_Isendrecv(p.outgoing.data(), static_cast<int>(p.outgoing.size()), MPI_BYTE,
                                  dest, sendtag, p.stream.data(), static_cast<int>(p.stream.size()),
                                  MPI_BYTE, source, recvtag, s.p2p_shadow, request);
    if (rc == MPI_SUCCESS) track(*request, std::move(p));
    return rc;
  } catch (const std::exception& e) {
    return fail(comm, name, e.what());
  }
}
#endif

}  // namespace
}  // namespace hycc::interpose

namespace ip = hycc::interpose;
using hycc::interpose::CommState;
using hycc::interpose::Inside;

extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return ip::blocking_send(PMPI_Send, "MPI_Send", buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return ip::blocking_send(PMPI_Ssend, "MPI_Ssend", buf, count, type, dest, tag, comm);
}

int MPI_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return ip::blocking_send(PMPI_Bsend, "MPI_Bsend", buf, count, type, dest, tag, comm);
}

int MPI_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return ip::blocking_send(PMPI_Rsend, "MPI_Rsend", buf, count, type, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  CommState* s = ip::p2p_route(comm, type, ip::P2p::kReceive, source, tag, count);
  if (s == nullptr) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  const Inside guard;
  try {
    if (auto held = ip::take_held(comm, source, tag)) {  // a probe received it already
      ip::deliver(*held, buf, count, status);
      return MPI_SUCCESS;
    }
    std::vector<std::byte> m(ip::capacity_bytes(count));
    MPI_Status st{};
    const int rc =
        PMPI_Recv(m.data(), static_cast<int>(m.size()), MPI_BYTE, source, tag, s->p2p_shadow, &st);
    if (rc != MPI_SUCCESS) return rc;
    const size_t bytes = ip::received_bytes(st);
    ip::HostStaging out(buf, size_t(count) * sizeof(float), false);
    const size_t n = ip::decode(m, bytes, out.floats(), size_t(count), &st);
    out.store(n * sizeof(float));  // a shorter message leaves the rest of the buffer as it was
    if (status != MPI_STATUS_IGNORE) *status = st;
    return MPI_SUCCESS;
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Recv", e.what());
  }
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return ip::nonblocking_send(PMPI_Isend, "MPI_Isend", buf, count, type, dest, tag, comm, request);
}

int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return ip::nonblocking_send(PMPI_Issend, "MPI_Issend", buf, count, type, dest, tag, comm,
                              request);
}

int MPI_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return ip::nonblocking_send(PMPI_Ibsend, "MPI_Ibsend", buf, count, type, dest, tag, comm,
                              request);
}

int MPI_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return ip::nonblocking_send(PMPI_Irsend, "MPI_Irsend", buf, count, type, dest, tag, comm,
                              request);
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  CommState* s = ip::p2p_route(comm, type, ip::P2p::kReceive, source, tag, count);
  if (s == nullptr) return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  const Inside guard;
  try {
    if (auto held = ip::take_held(comm, source, tag)) {  // a probe received it: complete now
      ip::deliver(*held, buf, count, MPI_STATUS_IGNORE);
      return ip::completed_request(held->status, request);
    }
    ip::Pending p;
    p.stream.resize(ip::capacity_bytes(count));
    p.out = std::make_unique<ip::HostStaging>(buf, size_t(count) * sizeof(float), false);
    p.capacity = size_t(count);
    const int rc = PMPI_Irecv(p.stream.data(), static_cast<int>(p.stream.size()), MPI_BYTE, source,
                              tag, s->p2p_shadow, request);
    if (rc == MPI_SUCCESS) ip::track(*request, std::move(p));
    return rc;
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Irecv", e.what());
  }
}

// Both directions through the wrappers above (each routed on its own), then one wait.
int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  if (ip::p2p_route(comm, sendtype, ip::P2p::kSend, dest, sendtag, sendcount) == nullptr &&
      ip::p2p_route(comm, recvtype, ip::P2p::kReceive, source, recvtag, recvcount) == nullptr) {
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  }
  MPI_Request r[2];
  int rc = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1]);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st[2];
  rc = MPI_Waitall(2, r, st);
  if (status != MPI_STATUS_IGNORE) *status = st[0];
  return rc;
}

int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                         int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (ip::p2p_route(comm, type, ip::P2p::kSend, dest, sendtag, count) == nullptr &&
      ip::p2p_route(comm, type, ip::P2p::kReceive, source, recvtag, count) == nullptr) {
    return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  }
  std::vector<float> copy(size_t(count > 0 ? count : 0));
  try {
    const Inside guard;
    ip::HostStaging data(buf, copy.size() * sizeof(float));
    std::copy_n(data.floats(), copy.size(), copy.data());
  } catch (const std::exception& e) {
    return ip::fail(comm, "MPI_Sendrecv_replace", e.what());
  }
  return MPI_Sendrecv(copy.data(), count, type, dest, sendtag, buf, count, type, source, recvtag,
                      comm, status);
}

#if MPI_VERSION >= 4
int MPI_Isendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Request* request) {
  return ip::isendrecv("MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                       recvcount, recvtype, source, recvtag, comm, request, [&] {
                         return PMPI_Isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                                               recvcount, recvtype, source, recvtag, comm, request);
                       });
}

int MPI_Isendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  return ip::isendrecv("MPI_Isendrecv_replace", buf, count, type, dest, sendtag, buf, count, type,
                       source, recvtag, comm, request, [&] {
                         return PMPI_Isendrecv_replace(buf, count, type, dest, sendtag, source,
                                                       recvtag, comm, request);
                       });
}
#endif

}  // extern "C"
