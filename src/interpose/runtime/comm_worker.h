// Nonblocking collectives that no split form can take (codecs whose stream size depends on the
// data: mpc, eb, zstd, zfp:accuracy; gradient compressors that exchange more than once:
// PowerSGD, top-k, sign; adaptive rules), run as the library's blocking collective on a worker
// thread of the communicator, where the progress thread's MPI_THREAD_MULTIPLE allows it
// (docs/dropin.md, "Nonblocking collectives").
//
// Each communicator gets, at its first such call, a thread and a twin: a duplicate under the
// same name, with shadows of its own. The thread runs the communicator's calls in call order, each
// the program's blocking call (MPI_Allreduce for MPI_Iallreduce, ...) on the twin through the
// library's wrappers, so the policy, error feedback (keyed by the program's buffer, as the
// blocking calls key it), device staging and statistics are the blocking call's. MPI orders
// collectives per communicator, so every rank's worker runs the same sequence, and workers of
// different communicators are independent threads: no call waits for the program's, and a
// program blocked anywhere cannot stall a peer's collective.
#pragma once

#include <mpi.h>

#include <functional>

#include "interpose/runtime/state.h"

namespace hycc::interpose {

// Queues call(twin) on s's worker, made on first use (collective over the communicator: every
// rank calls this in the same call); *request becomes a generalized request that completes with
// call's return code once it has run. Throws CommError.
void run_on_worker(CommState& s, std::function<int(MPI_Comm twin)> call, MPI_Request* request);

// The communicator was renamed: the calls queued after this see the new name.
void rename_worker(CommState& s);

// The communicator is being freed: its worker runs what is queued, frees the twin and ends.
void retire_worker(CommState& s);

// Before MPI_Finalize: every worker ends (after what is queued) and is joined.
void stop_workers();

}  // namespace hycc::interpose
