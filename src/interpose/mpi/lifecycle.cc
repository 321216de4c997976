// Lifecycle of libhycc_mpi.so: the engine starts in MPI_Init / MPI_Init_thread and reports in
// MPI_Finalize; communicators the application makes get their private duplicates at once; a
// renamed communicator changes dimension.
#include <mpi.h>

#include <exception>

#include "interpose/runtime/comm_worker.h"
#include "interpose/runtime/device_route.h"
#include "interpose/runtime/progress.h"
#include "interpose/runtime/requests.h"
#include "interpose/runtime/state.h"

namespace ip = hycc::interpose;

namespace {

// The runtime units built on the state, tied to its events (runtime/state.h).
void install_state_hooks() {
  ip::set_state_hooks({
      .engine_starting = ip::read_device_codecs_setting,
      .engine_finishing = ip::report_device_buffers,
      .comm_renamed = ip::rename_worker,
      .comm_freed =
          [](ip::CommState& s) {
            if (s.stage_shadow != MPI_COMM_NULL) ip::free_when_unused(s.stage_shadow);
            ip::retire_worker(s);
          },
  });
}

int started(int rc) {
  if (rc != MPI_SUCCESS || ip::inside()) return rc;
  try {
    install_state_hooks();
    ip::start_engine();
    ip::start_progress();
  } catch (const std::exception& e) {
    return ip::fail(MPI_COMM_WORLD, "MPI_Init", e.what());
  }
  return rc;
}

// After an application call that made *comm (MPI_COMM_NULL on ranks left out).
int made(int rc, const MPI_Comm* comm, const char* call) {
  if (rc != MPI_SUCCESS || ip::inside() || *comm == MPI_COMM_NULL) return rc;
  try {
    ip::on_new_comm(*comm);
  } catch (const std::exception& e) {
    return ip::fail(*comm, call, e.what());
  }
  return rc;
}

}  // namespace

extern "C" {

// Under HYCC_PROGRESS=thread both ask MPI for MPI_THREAD_MULTIPLE (runtime/progress.h).
int MPI_Init(int* argc, char*** argv) {
  const int level = ip::init_thread_level(MPI_THREAD_SINGLE);
  if (level == MPI_THREAD_SINGLE) return started(PMPI_Init(argc, argv));
  int provided = MPI_THREAD_SINGLE;
  return started(PMPI_Init_thread(argc, argv, level, &provided));
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return started(PMPI_Init_thread(argc, argv, ip::init_thread_level(required), provided));
}

int MPI_Finalize() {
  if (!ip::inside()) {
    ip::stop_workers();
    ip::stop_progress();
    ip::release_detached();
    ip::finish_engine();
  }
  return PMPI_Finalize();
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return made(PMPI_Comm_dup(comm, newcomm), newcomm, "MPI_Comm_dup");
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return made(PMPI_Comm_split(comm, color, key, newcomm), newcomm, "MPI_Comm_split");
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return made(PMPI_Comm_split_type(comm, type, key, info, newcomm), newcomm, "MPI_Comm_split_type");
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return made(PMPI_Comm_create(comm, group, newcomm), newcomm, "MPI_Comm_create");
}

int MPI_Comm_set_name(MPI_Comm comm, const char* name) {
  const int rc = PMPI_Comm_set_name(comm, name);
  if (rc == MPI_SUCCESS && !ip::inside()) ip::on_rename(comm);
  return rc;
}

}  // extern "C"
