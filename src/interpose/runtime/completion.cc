#include "interpose/runtime/completion.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "hycc/comm.h"

namespace hycc::interpose {
namespace {

// The requests started here, until MPI frees them.
std::mutex g_mutex;
std::vector<MPI_Request> g_live;

// The generalized request's callbacks; extra_state is a heap shared_ptr<Completion>.
int query(void* extra_state, MPI_Status* status) {
  const Completion& c = **static_cast<std::shared_ptr<Completion>*>(extra_state);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  const int error = c.error.load(std::memory_order_acquire);
  status->MPI_ERROR = error;
  return error;
}

int release(void* extra_state) {
  auto* c = static_cast<std::shared_ptr<Completion>*>(extra_state);
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_live.erase(std::find(g_live.begin(), g_live.end(), (*c)->request));
  }
  delete c;
  return MPI_SUCCESS;
}

int cancel(void*, int) { return MPI_SUCCESS; }  // a collective cannot be cancelled

}  // namespace

std::shared_ptr<Completion> start_completion(MPI_Request* request) {
  auto c = std::make_shared<Completion>();
  auto* holder = new std::shared_ptr<Completion>(c);
  const int rc = PMPI_Grequest_start(query, release, cancel, holder, request);
  if (rc != MPI_SUCCESS) {
    delete holder;
    HYCC_CHECK_MPI(rc);
  }
  c->request = *request;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_live.push_back(*request);
  return c;
}

void complete(Completion& c, int error) {
  c.error.store(error, std::memory_order_release);
  PMPI_Grequest_complete(c.request);
}

bool any_completion(int n, const MPI_Request requests[]) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_live.empty()) return false;
  for (int i = 0; i < n; ++i) {
    if (requests[i] != MPI_REQUEST_NULL &&
        std::find(g_live.begin(), g_live.end(), requests[i]) != g_live.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace hycc::interpose
