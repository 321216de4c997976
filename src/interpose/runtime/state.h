// State of libhycc_mpi.so, the drop-in library for unmodified MPI programs (docs/dropin.md).
//
// - One PolicyEngine per process, made from the environment (HYCC_POLICY, default baseline;
//   HYCC_LOG, default summary) when MPI is initialized, finished in MPI_Finalize.
// - A reentrancy guard: MPI calls made by hycc itself (and by the library while it is inside an
//   intercepted call) go straight to the PMPI_ entry points.
// - Per user communicator, as an MPI attribute: two private duplicates (one for hycc's
//   collectives, one for compressed point-to-point messages, so neither can match the
//   application's messages or each other's; a third for the progress thread's exchanges when
//   it first has one), and the communicator's name, which gives the dimension the policy sees.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "hycc/comm.h"
#include "hycc/policy_engine.h"

namespace hycc::interpose {

// The process's engine, or nullptr before MPI_Init / after MPI_Finalize (calls pass through).
PolicyEngine* engine();
// HYCC_CHECK_ARGUMENTS (auto when unset): whether the routed collectives first agree on their
// arguments across ranks.
ArgumentCheck argument_check();
void start_engine();   // after PMPI_Init: throws for a bad HYCC_POLICY / HYCC_LOG /
                       // HYCC_CHECK_ARGUMENTS
void finish_engine();  // before PMPI_Finalize: HYCC_LOG output, shadows of MPI_COMM_WORLD freed

// True while this thread runs inside an intercepted call: MPI calls go to PMPI.
bool inside();
class Inside {
 public:
  Inside();
  ~Inside();
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

class CommWorker;  // runtime/comm_worker.h

struct CommState {
  MPI_Comm collective_shadow = MPI_COMM_NULL;
  MPI_Comm p2p_shadow = MPI_COMM_NULL;
  // The second exchanges of two-stage split collectives (stage_shadow()); null until then.
  MPI_Comm stage_shadow = MPI_COMM_NULL;
  Communicator comm;  // collective_shadow wrapped, under the user communicator's name
  std::string name;
  // Runs the nonblocking calls no split form takes (runtime/comm_worker.h); null until then.
  std::shared_ptr<CommWorker> worker;
  // Whether the device route (device_route.h) is agreed call by call on this communicator: -1
  // until its first compressed blocking collective decides, 1 if every rank had loaded the CUDA
  // driver by then, 0 if not (device buffers are staged from then on, without agreements).
  int device_route = -1;
};

// What the units built on the state do at its events: the device route reads its setting when
// the engine starts and reports when it finishes, a communicator's worker follows its renames
// and retires (with the stage duplicate, once no progress uses it) when it is freed. Installed
// by MPI_Init (mpi/lifecycle.cc) before start_engine(); the state knows none of those units.
struct StateHooks {
  void (*engine_starting)() = nullptr;
  void (*engine_finishing)(const PolicyEngine& engine) = nullptr;
  void (*comm_renamed)(CommState& s) = nullptr;
  void (*comm_freed)(CommState& s) = nullptr;  // before the state is deleted
};
void set_state_hooks(const StateHooks& hooks);

// The state of `comm`, made on first use: collective over comm (it duplicates comm twice).
// nullptr for intercommunicators.
CommState* state_of(MPI_Comm comm);
// The state if it exists (never communicates).
CommState* existing_state_of(MPI_Comm comm);
// s's duplicate for the second exchanges of two-stage split collectives, which the progress
// thread starts (runtime/progress.h) while the program may start others on
// collective_shadow. Made on first use: collective over the communicator, so every rank calls
// this in the same call.
MPI_Comm stage_shadow(CommState& s);
// A communicator's worker's twin (runtime/comm_worker.h): its state, made now or renamed,
// under `name` (the state of the communicator it twins).
void adopt_twin(MPI_Comm twin, const std::string& name);
// A new communicator made by the application: its shadows are made now, while all its ranks
// are here (point-to-point needs them, and its first use may not be collective).
void on_new_comm(MPI_Comm comm);
// MPI_Comm_set_name: the dimension follows the new name.
void on_rename(MPI_Comm comm);

// True for the datatypes hycc takes as float32: MPI_FLOAT, and Fortran's MPI_REAL and MPI_REAL4
// where they are 4 bytes (a program built with -fdefault-real-8 has an 8-byte REAL).
bool is_float32(MPI_Datatype type);

// A private duplicate of MPI_COMM_SELF (made on first use; a duplicate of MPI_COMM_SELF involves
// no other process) for the handles that stand for hycc's persistent requests and matched
// messages (runtime/persistent.cc, mpi/persistent_calls.cc, mpi/mprobe.cc).
MPI_Comm private_self_comm();

// Reports a failure of hycc inside an intercepted call: a line on stderr, then the
// communicator's error handler (MPI_ERRORS_ARE_FATAL by default ends the job); returns the code.
int fail(MPI_Comm comm, const char* call, const char* what);

}  // namespace hycc::interpose
