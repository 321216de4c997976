/* Preloaded into the MPICH runs of tests/mpich/mpich_test.sh: yields the core when a poll of
 * UCX made no progress.
 *
 * MPICH 4.0's ch4:ucx device (Debian's) waits by polling ucp_worker_progress without ever
 * yielding. With more ranks than cores, as in the tests on 2 cores, a rank that waits then spins
 * through its whole time slice while the rank it waits for is not running: each message costs a
 * slice of the scheduler (the transparency program at 3 ranks: 63 s; with this, 5 s). Open MPI
 * yields by itself when oversubscribed (mpi_yield_when_idle). This changes when ranks run,
 * nothing of what they compute; under another MPICH device it is never called. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef unsigned (*ProgressFunction)(void* worker);

unsigned ucp_worker_progress(void* worker);

unsigned ucp_worker_progress(void* worker) {
  static ProgressFunction real;
  ProgressFunction progress = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
  if (progress == NULL) {
    progress = (ProgressFunction)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (progress == NULL) return 0;
    __atomic_store_n(&real, progress, __ATOMIC_RELEASE);
  }
  const unsigned events = progress(worker);
  if (events == 0) sched_yield();
  return events;
}
