// Which calls of libhycc_mpi.so go through hycc, shared by the blocking collectives
// (interpose_collectives.cc, interpose_vector_collectives.cc) and the nonblocking ones
// (interpose_nonblocking.cc): float data on a communicator the library knows, and a policy
// decision that compresses.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <exception>

#include "hycc/policy_engine.h"
#include "interpose/interpose_state.h"
#include "policy/policy_calls.h"

namespace hycc::interpose {

inline TensorView floats(void* data, size_t count) { return {DType::kF32, count, data}; }

// The state of comm when the call is for hycc: the library is running, the caller is not hycc
// itself, and the data is float. The first call on a communicator the library has not seen
// makes its duplicates (collective, as the call itself is); if that fails, MPI does the call.
inline CommState* route(MPI_Comm comm, MPI_Datatype a, MPI_Datatype b = MPI_FLOAT) {
  if (inside() || engine() == nullptr || !is_float32(a) || !is_float32(b)) return nullptr;
  try {
    return state_of(comm);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Allgather and alltoall: float blocks of equal count on both sides (or MPI_IN_PLACE).
inline CommState* route_blocks(MPI_Comm comm, const void* sendbuf, int sendcount,
                               MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (recvcount < 0 || (!in_place && sendcount != recvcount)) return nullptr;
  return route(comm, in_place ? MPI_FLOAT : sendtype, recvtype);
}

inline size_t comm_size(MPI_Comm comm) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  return size_t(size);
}

inline bool adaptive(const Policy& policy, const PolicyDecision& d) {
  return d.rule >= 0 && policy.rules()[size_t(d.rule)].adaptive();
}

// True when the call may compress: its rule compresses, or is adaptive (it measures and
// chooses inside the compressed path, whose MPI calls the guard sends to MPI itself; if it
// chooses none, that path runs MPI's own call).
inline bool compresses(const CommState& s, const Policy& policy, const PolicyDecision& d,
                       size_t bytes) {
  const bool lossy = d.gradient || d.options.codec.id() != CodecId::kNone || adaptive(policy, d);
  return lossy && s.comm.size() > 1 && bytes > 0 && bytes >= d.threshold_bytes;
}

// Runs the application's own MPI call for a decision that leaves it uncompressed (so its results
// are exactly MPI's) and records it.
template <typename Native>
int run_native(const CommState& s, Operation op, size_t bytes, const PolicyDecision& d,
               Native&& native) {
  PolicyEngine& e = *engine();
  e.log_decision(s.comm, op, bytes, d);
  const auto start = std::chrono::steady_clock::now();
  const int rc = native();
  CollectiveStats st;
  st.algorithm = Algorithm::kNative;
  st.message_bytes = st.raw_bytes = st.wire_bytes = bytes;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.record(s.comm, op, d, st);
  return rc;
}

// The policy's decision for a call; when it leaves the call uncompressed, runs it as MPI's
// (run_native) and sets *rc.
template <typename Native>
bool left_to_mpi(const CommState& s, Operation op, size_t bytes, int* rc, Native&& native) {
  PolicyEngine& e = *engine();
  const PolicyDecision d = e.decide(s.comm, op, bytes);
  if (compresses(s, e.policy(), d, bytes)) return false;
  *rc = run_native(s, op, bytes, d, native);
  return true;
}

// key: the program's buffer that keys a gradient compressor's state (the receive buffer of an
// allreduce, the send buffer of a reduce-scatter), so that a staged device buffer keeps its
// error-feedback residual from call to call as a host buffer does.
inline CollectiveOptions policy_options(const void* key_buffer = nullptr, size_t key_count = 0) {
  CollectiveOptions o;
  o.policy = engine();
  o.check_arguments = argument_check();
  if (key_buffer != nullptr) o.key = policy::buffer_key(key_buffer, key_count);
  return o;
}

// What every routed collective does: MPI's own call when the call is not routed (s null) or the
// policy leaves it uncompressed, otherwise `compressed` inside the guard, with failures handed to
// the communicator's error handler. `elems` is the message size the policy sees, in floats.
template <typename Native, typename Compressed>
int intercept(CommState* s, MPI_Comm comm, Operation op, size_t elems, const char* name,
              Native&& native, Compressed&& compressed) {
  if (s == nullptr) return native();
  int rc = MPI_SUCCESS;
  if (left_to_mpi(*s, op, elems * sizeof(float), &rc, native)) return rc;
  const Inside guard;
  try {
    compressed(*s);
  } catch (const std::exception& e) {
    return fail(comm, name, e.what());
  }
  return MPI_SUCCESS;
}

}  // namespace hycc::interpose
