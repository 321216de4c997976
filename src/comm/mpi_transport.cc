// The MPI transports (transport.h): payloads in host memory go to MPI as they are; device
// payloads are staged through pinned host memory.
//
// Host memory: a send is an MPI_Isend from the payload itself, which the transport keeps until
// the send completes; a receive is an MPI_Irecv of the upper bound into a host buffer of the
// transport's, posted ahead and handed over to the caller's payload on completion (swapped, no
// copy).
//
// Staged, send: copy the payload to a pinned buffer (waiting for the copy: the payload was just
// encoded, so the stream is idle but for it), MPI_Isend; the device payload is free at once and
// the pinned buffer when the send completes. A payload forwarded as it arrived (allgather,
// broadcast) still has the pinned buffer it came in (Payload::staged) and goes from there. Receive:
// MPI_Irecv of the upper bound into a pinned buffer, posted ahead; on completion the size comes
// from MPI_Get_count and the bytes are copied into the caller's device payload. Several ranks may
// share one GPU: nothing here is per device.
#include <atomic>
#include <deque>
#include <mutex>
#include <utility>

#include "comm/tags.h"
#include "comm/transport.h"

namespace hycc::comm {
namespace {

std::mutex& filter_mutex() {
  static std::mutex m;
  return m;
}
std::function<size_t(std::byte*, size_t)>& send_filter() {
  static std::function<size_t(std::byte*, size_t)> f;
  return f;
}
std::atomic<size_t>& send_copies() {
  static std::atomic<size_t> n{0};
  return n;
}

struct PostedRecv {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status{};
  bool done = false;
  int peer = 0;
  size_t capacity = 0;
  Memory staging;
};

struct PendingSend {
  MPI_Request request = MPI_REQUEST_NULL;
  Memory staging;
  Payload payload;  // host memory: the payload sent, kept until the send completes
};

class MpiTransport final : public Transport {
 public:
  // `staged`: payloads in device memory of `ops`, staged through pinned memory; otherwise in
  // host memory (`ops` the host operations, for the receive buffers).
  MpiTransport(DeviceOps& ops, MPI_Comm comm, int tag, bool staged)
      : ops_(ops), comm_(comm), tag_(tag), staged_(staged) {}
  ~MpiTransport() override {
    // Only reached with requests still active when an exception left the algorithm: cancel the
    // receives and let the sends finish, so that no buffer is freed under MPI.
    for (PostedRecv& r : recvs_) {
      if (r.request != MPI_REQUEST_NULL) {
        MPI_Cancel(&r.request);
        MPI_Wait(&r.request, MPI_STATUS_IGNORE);
      }
    }
    for (PendingSend& s : sends_) {
      if (s.request != MPI_REQUEST_NULL) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    }
  }

  const char* name() const override { return staged_ ? "staged MPI" : "MPI"; }

  void post_send(int peer, Payload&& payload, uint64_t /*round*/) override {
    PendingSend& s = sends_.emplace_back();
    if (!staged_) {
      HYCC_CHECK_MPI(MPI_Isend(payload.data(), mpi_count(payload.size, "payload bytes"), MPI_BYTE,
                               peer, tag_, comm_, &s.request));
      s.payload = std::move(payload);
      return;
    }
    if (payload.staged.data() != nullptr && payload.staged_bytes == payload.size) {
      s.staging = std::move(payload.staged);  // forwarded as it arrived: no copy back
      payload.staged_bytes = 0;
      ops_.synchronize();  // what the caller queued on the payload (a checksum trailer) is done
    } else {
      s.staging = ops_.allocate_pinned(payload.size);
      ops_.copy_to_host(s.staging.data(), payload.data(), payload.size);
      ops_.synchronize();
      send_copies().fetch_add(1, std::memory_order_relaxed);
    }
    size_t bytes = payload.size;
    {
      const std::lock_guard<std::mutex> lock(filter_mutex());
      if (send_filter()) {
        bytes = std::min(bytes, send_filter()(static_cast<std::byte*>(s.staging.data()), bytes));
      }
    }
    HYCC_CHECK_MPI(MPI_Isend(s.staging.data(), mpi_count(bytes, "payload bytes"), MPI_BYTE, peer,
                             tag_, comm_, &s.request));
    done_.push_back(std::move(payload));
  }

  void post_recv(int peer, size_t capacity, uint64_t /*round*/) override {
    PostedRecv& r = recvs_.emplace_back();
    r.peer = peer;
    r.capacity = capacity;
    r.staging = staged_ ? ops_.allocate_pinned(capacity) : allocate_payload(ops_, capacity);
    HYCC_CHECK_MPI(MPI_Irecv(r.staging.data(), mpi_count(capacity, "payload bytes"), MPI_BYTE, peer,
                             tag_, comm_, &r.request));
  }

  void receives_announced() override {}

  void wait_recv(Payload& into) override {
    PostedRecv& r = recvs_.front();
    if (!r.done) HYCC_CHECK_MPI(MPI_Wait(&r.request, &r.status));
    int bytes = 0;
    HYCC_CHECK_MPI(MPI_Get_count(&r.status, MPI_BYTE, &bytes));
    into.size = static_cast<size_t>(bytes);
    if (!staged_) {
      std::swap(into.memory, r.staging);
      into.rewritten();
      recvs_.pop_front();
      return;
    }
    ops_.copy_to_device(into.data(), r.staging.data(), into.size);
    ops_.synchronize();
    into.rewritten();
    into.staged = std::move(r.staging);  // for a forward of the payload as it is
    into.staged_bytes = into.size;
    recvs_.pop_front();
  }

  bool recv_arrived() override {
    progress();
    return !recvs_.empty() && recvs_.front().done;
  }

  void progress() override {
    if (recvs_.empty()) {  // a sender only: testing its oldest send drives MPI's progress
      if (!sends_.empty()) {
        int done = 0;
        HYCC_CHECK_MPI(MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE));
      }
      return;
    }
    if (recvs_.front().done) return;
    int done = 0;
    HYCC_CHECK_MPI(MPI_Test(&recvs_.front().request, &done, &recvs_.front().status));
    recvs_.front().done = done != 0;
  }

  void reclaim(std::vector<Payload>& free, bool wait) override {
    while (!sends_.empty()) {
      if (wait) {
        HYCC_CHECK_MPI(MPI_Wait(&sends_.front().request, MPI_STATUS_IGNORE));
      } else {
        int done = 0;
        HYCC_CHECK_MPI(MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE));
        if (!done) break;
      }
      if (!staged_) free.push_back(std::move(sends_.front().payload));
      sends_.pop_front();
    }
    for (Payload& p : done_) free.push_back(std::move(p));
    done_.clear();
  }

 private:
  DeviceOps& ops_;
  MPI_Comm comm_;
  int tag_;
  bool staged_;
  std::deque<PostedRecv> recvs_;
  std::deque<PendingSend> sends_;
  std::vector<Payload> done_;  // device payloads already staged
};

}  // namespace

std::unique_ptr<Transport> make_staged_mpi_transport(DeviceOps& ops, MPI_Comm comm, int tag) {
  return std::make_unique<MpiTransport>(ops, comm, tag, true);
}

std::unique_ptr<Transport> make_mpi_transport(DeviceOps& host, MPI_Comm comm, int tag) {
  return std::make_unique<MpiTransport>(host, comm, tag, false);
}

namespace testing {
void set_staged_send_filter(std::function<size_t(std::byte* data, size_t size)> filter) {
  const std::lock_guard<std::mutex> lock(filter_mutex());
  send_filter() = std::move(filter);
}

size_t staged_send_copies() { return send_copies().load(std::memory_order_relaxed); }
}  // namespace testing

}  // namespace hycc::comm
