// Libhycc_mpi.so's nonblocking requests and their completion, for the completion calls of
// mpi/completion_calls.cc (MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, the MPI_Test
// family and MPI_Request_free). Each remembers the handles it was given
// (MPI sets completed ones to MPI_REQUEST_NULL), lets MPI complete them, then finishes ours:
// a send's stream is freed, a receive's stream is decoded into the application's buffer and the
// status gets the element count, a collective's slots are decoded into its buffers. With no
// request of ours outstanding, each is one MPI call. A persistent request of hycc's
// (runtime/persistent.h) is completed as its round's request.
#include "interpose/runtime/requests.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include "hycc/codec.h"
#include "hycc/error.h"
#include "interpose/runtime/completion.h"
#include "interpose/runtime/state.h"

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

// The bytes a receive got: as its status says, or, for MPI_Isendrecv, its whole buffer (the
// stream's header says its length; MPICH 4.0 completes MPI_Isendrecv without a status).
size_t received_length(const Pending& p, const MPI_Status& status) {
  return p.length_from_stream ? p.stream.size() : received_bytes(status);
}

}  // namespace

bool any_ours(int n, const MPI_Request* requests) {
  if (inside() || g_count.load(std::memory_order_acquire) == 0) return false;
  for (int i = 0; i < n; ++i) {
    if (ours(requests[i])) return true;
  }
  return false;
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

void release_detached() {
  reap_detached();
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (Detached& d : g_detached) {
    if (d.request != MPI_REQUEST_NULL) PMPI_Request_free(&d.request);
  }
  // The streams stay: MPI_Finalize may still complete their transfers.
}

Claimed::Claimed(int n, const MPI_Request* requests)
    : handles_(requests, requests + n), entries_(n) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < handles_.size(); ++i) {
    const auto it = g_pending.find(handles_[i]);
    if (it == g_pending.end()) continue;
    entries_[i] = std::move(it->second);
    g_pending.erase(it);
    g_count.fetch_sub(1, std::memory_order_release);
  }
}

Claimed::~Claimed() {
  for (size_t i = 0; i < handles_.size(); ++i) {
    if (entries_[i]) track(handles_[i], std::move(*entries_[i]));
  }
}

int Claimed::finish(int i, MPI_Status* status) {
  std::optional<Pending>& e = entries_[size_t(i)];
  if (!e) return MPI_SUCCESS;
  Pending p = std::move(*e);
  e.reset();
  return interpose::finish(std::move(p), status);
}

int Claimed::finish_all(int n, const int* indices, MPI_Status* statuses) {
  int rc = MPI_SUCCESS;
  for (int k = 0; k < n; ++k) {
    const int fin = finish(indices == nullptr ? k : indices[k], &statuses[k]);
    if (fin != MPI_SUCCESS && rc == MPI_SUCCESS) rc = fin;
  }
  return rc;
}

void report_received(MPI_Request request, MPI_Status& status) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_pending.find(request);
  if (it == g_pending.end()) return;
  const Pending& p = it->second;
  if (p.received) {
    status = *p.received;
  } else if (p.out != nullptr) {
    try {
      const StreamInfo info = inspect(
          std::span(p.stream.data(), std::min(received_length(p, status), p.stream.size())));
      PMPI_Status_set_elements(&status, MPI_FLOAT, static_cast<int>(info.count));
    } catch (const std::exception&) {
      // A stream that is not one: the completion call reports it.
    }
  }
}

bool detach(MPI_Request request) {
  reap_detached();
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_pending.find(request);
  if (it == g_pending.end()) return false;  // another thread's now
  g_detached.push_back({request, std::move(it->second)});
  g_pending.erase(it);
  g_count.fetch_sub(1, std::memory_order_release);
  g_detached_count.store(g_detached.size(), std::memory_order_release);
  return true;
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
