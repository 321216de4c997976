// Completion of libhycc_mpi.so's nonblocking requests: MPI_Wait, MPI_Waitall, MPI_Waitany,
// MPI_Waitsome, the MPI_Test family and MPI_Request_free. Each remembers the handles it was given
// (MPI sets completed ones to MPI_REQUEST_NULL), lets MPI complete them, then finishes ours:
// a send's stream is freed, a receive's stream is decoded into the application's buffer and the
// status gets the element count, a collective's slots are decoded into its buffers. With no
// request of ours outstanding, each is one MPI call. A persistent request of hycc's
// (interpose_persistent.h) is completed as its round's request.
#include "interpose/interpose_requests.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include "hycc/codec.h"
#include "hycc/error.h"
#include "interpose/interpose_completion.h"
#include "interpose/interpose_persistent.h"
#include "interpose/interpose_state.h"

namespace hycc::interpose {
namespace {

// A request the program gave to MPI_Request_free before it completed: its MPI request is kept
// (not freed to MPI) so that the library learns when its stream may go.
struct Detached {
  MPI_Request request;
  Pending pending;
};

std::mutex g_mutex;
std::unordered_map<MPI_Request, Pending> g_pending;  // guarded by g_mutex
std::vector<Detached> g_detached;                    // guarded by g_mutex
std::atomic<size_t> g_count{0};
std::atomic<size_t> g_detached_count{0};

bool ours(MPI_Request r) {
  if (g_count.load(std::memory_order_acquire) == 0 || r == MPI_REQUEST_NULL) return false;
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_pending.count(r) != 0;
}

bool any_ours(int n, const MPI_Request* requests) {
  if (inside() || g_count.load(std::memory_order_acquire) == 0) return false;
  for (int i = 0; i < n; ++i) {
    if (ours(requests[i])) return true;
  }
  return false;
}

// The bytes a receive got: as its status says, or, for MPI_Isendrecv, its whole buffer (the
// stream's header says its length; MPICH 4.0 completes MPI_Isendrecv without a status).
size_t received_length(const Pending& p, const MPI_Status& status) {
  return p.length_from_stream ? p.stream.size() : received_bytes(status);
}

// Finishes p, whose request MPI completed with `status`.
int finish(Pending p, MPI_Status* status) {
  if (p.complete) {
    const Inside guard;
    try {
      p.complete();
    } catch (const std::exception& e) {
      return fail(MPI_COMM_WORLD, p.call, e.what());
    }
    return MPI_SUCCESS;
  }
  if (p.received) *status = *p.received;
  if (p.out == nullptr) return MPI_SUCCESS;
  int cancelled = 0;
  if (!p.length_from_stream) PMPI_Test_cancelled(status, &cancelled);
  if (cancelled != 0) return MPI_SUCCESS;
  const Inside guard;
  try {
    const size_t n =
        decode(p.stream, received_length(p, *status), p.out->floats(), p.capacity, status);
    p.out->store(n * sizeof(float));  // a shorter message leaves the rest as it was
  } catch (const std::exception& e) {
    return fail(MPI_COMM_WORLD, "completing a receive", e.what());
  }
  return MPI_SUCCESS;
}

// Statuses for n requests: the caller's array, or a local one in place of MPI_STATUSES_IGNORE.
struct Statuses {
  std::vector<MPI_Status> local;
  MPI_Status* p;
  Statuses(int n, MPI_Status* given) : local(given == MPI_STATUSES_IGNORE ? size_t(n) : 0) {
    p = given == MPI_STATUSES_IGNORE ? local.data() : given;
  }
};

// Our entries for the requests a completion call is given, taken out of the table before MPI
// completes them and finished after: MPI frees a completed request's handle at once, and with
// MPI_THREAD_MULTIPLE another thread's next request may get the same handle and be tracked
// under it while this thread has yet to finish the old entry (MPICH reuses handles at once;
// the lost entry's stream was freed while MPI still sent it). Entries whose requests did not
// complete go back (their handles are still live, so no other request has them).
class Claimed {
 public:
  Claimed(int n, const MPI_Request* requests) : handles_(requests, requests + n), entries_(n) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    for (size_t i = 0; i < handles_.size(); ++i) {
      const auto it = g_pending.find(handles_[i]);
      if (it == g_pending.end()) continue;
      entries_[i] = std::move(it->second);
      g_pending.erase(it);
      g_count.fetch_sub(1, std::memory_order_release);
    }
  }
  Claimed(const Claimed&) = delete;
  Claimed& operator=(const Claimed&) = delete;
  ~Claimed() {
    for (size_t i = 0; i < handles_.size(); ++i) {
      if (entries_[i]) track(handles_[i], std::move(*entries_[i]));
    }
  }

  // Finishes request i, which MPI completed with `status` (if it is ours).
  int finish(int i, MPI_Status* status) {
    std::optional<Pending>& e = entries_[size_t(i)];
    if (!e) return MPI_SUCCESS;
    Pending p = std::move(*e);
    e.reset();
    return interpose::finish(std::move(p), status);
  }

  // Finishes the completed requests: indices[k] with statuses[k] (k < n), or, with indices null,
  // every i < n with statuses[i]. Returns the first failure.
  int finish_all(int n, const int* indices, MPI_Status* statuses) {
    int rc = MPI_SUCCESS;
    for (int k = 0; k < n; ++k) {
      const int fin = finish(indices == nullptr ? k : indices[k], &statuses[k]);
      if (fin != MPI_SUCCESS && rc == MPI_SUCCESS) rc = fin;
    }
    return rc;
  }

 private:
  std::vector<MPI_Request> handles_;
  std::vector<std::optional<Pending>> entries_;
};

// Drops the detached requests MPI has completed: a send's stream, a receive's stream (never
// decoded: the program gave up the only call that would say when its buffer may change). The
// rest stay. MPI is called outside the lock, on entries taken out of the table.
void reap_detached() {
  if (g_detached_count.load(std::memory_order_acquire) == 0) return;
  std::vector<Detached> mine;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    mine.swap(g_detached);
  }
  std::vector<Detached> left;
  for (Detached& d : mine) {
    int done = 0;
    if (PMPI_Test(&d.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done == 0) {
      left.push_back(std::move(d));
    }
  }
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (Detached& d : left) g_detached.push_back(std::move(d));
  g_detached_count.store(g_detached.size(), std::memory_order_release);
}

}  // namespace

void release_detached() {
  reap_detached();
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (Detached& d : g_detached) {
    if (d.request != MPI_REQUEST_NULL) PMPI_Request_free(&d.request);
  }
  // The streams stay: MPI_Finalize may still complete their transfers.
}

void track(MPI_Request request, Pending p) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_pending.emplace(request, std::move(p));
  g_count.fetch_add(1, std::memory_order_release);
}

size_t received_bytes(const MPI_Status& status) {
  int n = 0;
  PMPI_Get_count(&status, MPI_BYTE, &n);
  return n < 0 ? 0 : size_t(n);
}

size_t decode(const std::vector<std::byte>& stream, size_t bytes, float* out, size_t capacity,
              MPI_Status* status) {
  const std::span<const std::byte> s(stream.data(), std::min(bytes, stream.size()));
  const StreamInfo info = inspect(s);
  if (info.dtype != DType::kF32 || info.count > capacity) {
    throw CommError(tagged("dropin", "received ", info.count, " elements of ",
                           dtype_name(info.dtype), " into a buffer of ", capacity, " floats"));
  }
  decompress(s.first(info.stream_bytes()), TensorView{DType::kF32, size_t(info.count), out});
  if (status != MPI_STATUS_IGNORE) {
    PMPI_Status_set_elements(status, MPI_FLOAT, static_cast<int>(info.count));
  }
  return size_t(info.count);
}

}  // namespace hycc::interpose

namespace ip = hycc::interpose;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (ip::any_persistent(1, request)) {
    return ip::on_rounds(1, request, [&](MPI_Request* r) { return MPI_Wait(r, status); });
  }
  if (!ip::any_ours(1, request)) return PMPI_Wait(request, status);
  ip::Claimed claimed(1, request);
  MPI_Status st{};  // zeroed in all four: an MPI may complete a request without filling it in
  const int rc = PMPI_Wait(request, &st);
  const int fin = rc == MPI_SUCCESS ? claimed.finish(0, &st) : rc;
  if (status != MPI_STATUS_IGNORE) *status = st;
  return fin;
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (ip::any_persistent(1, request)) {
    return ip::on_rounds(1, request, [&](MPI_Request* r) { return MPI_Test(r, flag, status); });
  }
  if (!ip::any_ours(1, request)) return PMPI_Test(request, flag, status);
  ip::Claimed claimed(1, request);
  MPI_Status st{};
  const int rc = PMPI_Test(request, flag, &st);
  if (rc != MPI_SUCCESS || *flag == 0) return rc;
  const int fin = claimed.finish(0, &st);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return fin;
}

int MPI_Waitall(int n, MPI_Request requests[], MPI_Status statuses[]) {
  if (ip::any_completion(n, requests)) {  // one at a time (interpose_completion.h)
    bool failed = false;
    for (int i = 0; i < n; ++i) {
      MPI_Status* status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
      const int rc = MPI_Wait(&requests[i], status);
      if (rc != MPI_SUCCESS) {
        failed = true;
        if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = rc;
      }
    }
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
  }
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests, [&](MPI_Request* r) { return MPI_Waitall(n, r, statuses); });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Waitall(n, requests, statuses);
  ip::Claimed claimed(n, requests);
  ip::Statuses st(n, statuses);
  const int rc = PMPI_Waitall(n, requests, st.p);
  return rc != MPI_SUCCESS ? rc : claimed.finish_all(n, nullptr, st.p);
}

int MPI_Testall(int n, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests,
                         [&](MPI_Request* r) { return MPI_Testall(n, r, flag, statuses); });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Testall(n, requests, flag, statuses);
  ip::Claimed claimed(n, requests);
  ip::Statuses st(n, statuses);
  const int rc = PMPI_Testall(n, requests, flag, st.p);
  return rc != MPI_SUCCESS || *flag == 0 ? rc : claimed.finish_all(n, nullptr, st.p);
}

int MPI_Waitany(int n, MPI_Request requests[], int* index, MPI_Status* status) {
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests,
                         [&](MPI_Request* r) { return MPI_Waitany(n, r, index, status); });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Waitany(n, requests, index, status);
  ip::Claimed claimed(n, requests);
  MPI_Status st{};
  const int rc = PMPI_Waitany(n, requests, index, &st);
  if (rc != MPI_SUCCESS || *index == MPI_UNDEFINED) return rc;
  const int fin = claimed.finish(*index, &st);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return fin;
}

int MPI_Testany(int n, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests,
                         [&](MPI_Request* r) { return MPI_Testany(n, r, index, flag, status); });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Testany(n, requests, index, flag, status);
  ip::Claimed claimed(n, requests);
  MPI_Status st{};
  const int rc = PMPI_Testany(n, requests, index, flag, &st);
  if (rc != MPI_SUCCESS || *flag == 0 || *index == MPI_UNDEFINED) return rc;
  const int fin = claimed.finish(*index, &st);
  if (status != MPI_STATUS_IGNORE) *status = st;
  return fin;
}

int MPI_Waitsome(int n, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests, [&](MPI_Request* r) {
      return MPI_Waitsome(n, r, outcount, indices, statuses);
    });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Waitsome(n, requests, outcount, indices, statuses);
  ip::Claimed claimed(n, requests);
  ip::Statuses st(n, statuses);
  const int rc = PMPI_Waitsome(n, requests, outcount, indices, st.p);
  if (rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED) return rc;
  return claimed.finish_all(*outcount, indices, st.p);
}

int MPI_Testsome(int n, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  if (ip::any_persistent(n, requests)) {
    return ip::on_rounds(n, requests, [&](MPI_Request* r) {
      return MPI_Testsome(n, r, outcount, indices, statuses);
    });
  }
  if (!ip::any_ours(n, requests)) return PMPI_Testsome(n, requests, outcount, indices, statuses);
  ip::Claimed claimed(n, requests);
  ip::Statuses st(n, statuses);
  const int rc = PMPI_Testsome(n, requests, outcount, indices, st.p);
  if (rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED) return rc;
  return claimed.finish_all(*outcount, indices, st.p);
}

// Completion without freeing: a receive of ours that MPI has completed reports the element count
// its stream's header gives (MPI's status counts the stream's bytes); it is decoded when the
// program then completes it.
int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (ip::any_persistent(1, &request)) {
    return ip::on_rounds(1, &request,
                         [&](MPI_Request* r) { return MPI_Request_get_status(*r, flag, status); });
  }
  if (!ip::any_ours(1, &request)) return PMPI_Request_get_status(request, flag, status);
  MPI_Status st{};
  const int rc = PMPI_Request_get_status(request, flag, &st);
  if (rc != MPI_SUCCESS || *flag == 0) return rc;
  {
    const std::lock_guard<std::mutex> lock(ip::g_mutex);
    const auto it = ip::g_pending.find(request);
    if (it != ip::g_pending.end()) {
      const ip::Pending& p = it->second;
      if (p.received) {
        st = *p.received;
      } else if (p.out != nullptr) {
        try {
          const hycc::StreamInfo info = hycc::inspect(
              std::span(p.stream.data(), std::min(ip::received_length(p, st), p.stream.size())));
          PMPI_Status_set_elements(&st, MPI_FLOAT, static_cast<int>(info.count));
        } catch (const std::exception&) {
          // A stream that is not one: the completion call reports it.
        }
      }
    }
  }
  if (status != MPI_STATUS_IGNORE) *status = st;
  return MPI_SUCCESS;
}

// A freed send completes in the background: its stream must outlive it, and no longer. The
// library keeps the MPI request and drops the stream once MPI has completed it (looked at in
// each later MPI_Request_free of a request of ours, and at MPI_Finalize), so a program that
// frees every send it makes holds only the streams still in flight. A freed receive is never
// decoded (the application gave up the only way to know when it completes); its stream goes
// as a send's does.
int MPI_Request_free(MPI_Request* request) {
  if (ip::any_persistent(1, request)) return ip::free_persistent(request);
  if (!ip::any_ours(1, request)) return PMPI_Request_free(request);
  ip::reap_detached();
  {
    const std::lock_guard<std::mutex> lock(ip::g_mutex);
    const auto it = ip::g_pending.find(*request);
    if (it == ip::g_pending.end()) return PMPI_Request_free(request);  // another thread's now
    ip::g_detached.push_back({*request, std::move(it->second)});
    ip::g_pending.erase(it);
    ip::g_count.fetch_sub(1, std::memory_order_release);
    ip::g_detached_count.store(ip::g_detached.size(), std::memory_order_release);
  }
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
