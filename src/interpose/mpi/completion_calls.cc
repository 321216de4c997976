// The completion calls of libhycc_mpi.so: MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, the
// MPI_Test family, MPI_Request_get_status and MPI_Request_free. Each remembers the handles it
// was given (MPI sets completed ones to MPI_REQUEST_NULL), lets MPI complete them, then finishes
// ours (runtime/requests.h): a send's stream is freed, a receive's stream is decoded into the
// application's buffer and the status gets the element count, a collective's slots are decoded
// into its buffers. With no request of ours outstanding, each is one MPI call. A persistent
// request of hycc's (runtime/persistent.h) is completed as its round's request.
#include <mpi.h>

#include "interpose/runtime/completion.h"
#include "interpose/runtime/persistent.h"
#include "interpose/runtime/requests.h"

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
  if (ip::any_completion(n, requests)) {  // one at a time (runtime/completion.h)
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
  ip::report_received(request, st);
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
  if (!ip::detach(*request)) return PMPI_Request_free(request);  // another thread's now
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
