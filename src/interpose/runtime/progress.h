// The progress thread of libhycc_mpi.so: it drives the split collectives that take more than one
// exchange (coll::start_allreduce_two_stage), whose work between the exchanges (decoding, summing,
// compressing the sum) must run when the first completes, whatever the program is doing then.
// MPI's rules require that: a rank blocked in MPI_Send to a peer that is itself waiting for this
// collective must still let it complete, so the second exchange cannot wait for the program's own
// MPI_Wait or MPI_Test. A thread calling MPI beside the program needs MPI_THREAD_MULTIPLE, so the
// thread runs only when MPI provides it on every rank (docs/dropin.md, "Nonblocking collectives").
//
// HYCC_PROGRESS, which governs the communicators' workers too (runtime/comm_worker.h): `auto`
// (default) uses the threads when the program initialized MPI with MPI_THREAD_MULTIPLE (mpi4py
// does by default); `thread` asks MPI for MPI_THREAD_MULTIPLE in MPI_Init and MPI_Init_thread
// so that it can; `off` never (allreduces then take the compress-once form where it pays, and
// what has no split form goes to MPI).
//
// The program holds a generalized request (MPI_Grequest_start) that the thread completes once
// the collective has completed and its results are in the program's buffers, so MPI_Wait,
// MPI_Test and their variants work on it unchanged. The thread polls the collectives' requests
// in call order, starting each second exchange in that order per communicator (MPI matches
// collectives by order), and sleeps while there are none.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <shared_mutex>

#include "coll/split_collectives.h"

namespace hycc::interpose {

// The thread level to ask MPI for when the program asks for `required` (MPI_Init: what MPI_Init
// gives, MPI_THREAD_SINGLE): MPI_THREAD_MULTIPLE under HYCC_PROGRESS=thread. Throws
// InvalidArgument for a bad HYCC_PROGRESS.
int init_thread_level(int required);

// After MPI_Init (every rank of MPI_COMM_WORLD: one small allreduce agrees on whether all have
// MPI_THREAD_MULTIPLE). Throws InvalidArgument for a bad HYCC_PROGRESS.
void start_progress();
// Before MPI_Finalize: the thread stops (every request should be complete by then).
void stop_progress();

// True when split collectives with exchanges left can be driven (start_progress decided).
bool progress_available();

// Hands `split`, started and with exchanges left, to the thread, and sets *request to the
// program's generalized request. When the last exchange has completed, the thread runs
// split->finish() and `complete` (storing results, statistics), then completes the request; an
// exception there is reported as `call` on stderr and the request completes with
// MPI_ERR_OTHER. `order`: the communicator of split's next exchanges. `state_lock`, unless
// null, is held shared while split's stages run (the gradient lock, for the error feedback
// state they write).
void drive(std::shared_ptr<coll::SplitCollective> split, MPI_Comm order,
           std::function<void()> complete, const char* call, MPI_Request* request,
           std::shared_mutex* state_lock);

// Frees `comm` (a communicator that drive()n collectives use for their next exchanges) once no
// collective left to the thread uses it, now if none does.
void free_when_unused(MPI_Comm comm);

}  // namespace hycc::interpose
