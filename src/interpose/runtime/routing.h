// Which calls of libhycc_mpi.so go through hycc, shared by the blocking collectives
// (mpi/collectives.cc, mpi/vector_collectives.cc) and the nonblocking ones
// (mpi/nonblocking_collectives.cc): float data on a communicator the library knows, and a policy
// decision that compresses.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/policy_engine.h"
#include "interpose/runtime/state.h"
#include "policy/engine_calls.h"
#include "policy/policy_calls.h"

namespace hycc::interpose {

inline TensorView floats(void* data, size_t count) { return {DType::kF32, count, data}; }

// The state of comm when the call is for hycc: the library is running, the caller is not hycc
// itself, and the data is float. The first call on a communicator the library has not seen
// makes its duplicates (collective, as the call itself is); if that fails, MPI does the call.
inline bool for_hycc(MPI_Datatype a, MPI_Datatype b = MPI_FLOAT) {
  return !inside() && engine() != nullptr && is_float32(a) && is_float32(b);
}

inline CommState* route(MPI_Comm comm, MPI_Datatype a, MPI_Datatype b = MPI_FLOAT) {
  if (!for_hycc(a, b)) return nullptr;
  try {
    return state_of(comm);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Broadcast: floats, a count and root MPI takes (a call MPI refuses stays MPI's, so that its
// error is MPI's own, through the program's error handler).
inline CommState* route_bcast(MPI_Comm comm, int count, MPI_Datatype type, int root) {
  if (count < 0 || root < 0) return nullptr;
  CommState* s = route(comm, type);
  return s != nullptr && root < s->comm.size() ? s : nullptr;
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
  policy::EngineCalls::log_decision(e, s.comm, op, bytes, d);
  const auto start = std::chrono::steady_clock::now();
  const int rc = native();
  CollectiveStats st;
  st.algorithm = Algorithm::kNative;
  st.message_bytes = st.raw_bytes = st.wire_bytes = bytes;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  policy::EngineCalls::record(e, s.comm, op, d, st);
  return rc;
}

// key: the program's buffer that keys a gradient compressor's state (the receive buffer of an
// allreduce, the send buffer of a reduce-scatter), so that a staged device buffer keeps its
// error-feedback residual from call to call as a host buffer does.
// `decision`: the call's (intercept's), handed down so that the policy does not decide again.
inline CollectiveOptions policy_options(const PolicyDecision& decision,
                                        const void* key_buffer = nullptr, size_t key_count = 0) {
  CollectiveOptions o;
  o.policy = engine();
  o.decision = &decision;
  o.check_arguments = argument_check();
  o.key_buffer = key_buffer;
  o.key_count = key_count;
  return o;
}

// What every routed collective does: the policy decides once, from the program's message
// (`elems` floats, before any padding); MPI's own call runs when the call is not routed (s null)
// or the decision leaves it uncompressed, otherwise `compressed(state, decision)` inside the
// guard (it hands the decision down: policy_options, DeviceRoute::options), with failures handed
// to the communicator's error handler.
template <typename Native, typename Compressed>
int intercept(CommState* s, MPI_Comm comm, Operation op, size_t elems, const char* name,
              Native&& native, Compressed&& compressed) {
  if (s == nullptr) return native();
  PolicyEngine& e = *engine();
  const size_t bytes = elems * sizeof(float);
  const PolicyDecision d = e.decide(s->comm, op, bytes);
  if (!compresses(*s, e.policy(), d, bytes)) return run_native(*s, op, bytes, d, native);
  const Inside guard;
  try {
    compressed(*s, d);
  } catch (const std::exception& ex) {
    return fail(comm, name, ex.what());
  }
  return MPI_SUCCESS;
}

// hycc::reduce_scatter of `total` floats from sendbuf (recvbuf with MPI_IN_PLACE), this rank's
// chunk `mine` (chunk_range's) to the start of recvbuf; device buffers staged. What
// MPI_Reduce_scatter_block and MPI_Reduce_scatter with chunk_range's counts run
// (mpi/vector_collectives.cc).
void reduce_scatter_chunk(CommState& st, const PolicyDecision& d, const void* sendbuf,
                          void* recvbuf, size_t total, ChunkRange mine);

// The counts of a vector collective, when every one is >= 0 and they differ by at most one.
struct Counts {
  std::vector<size_t> n;
  size_t total = 0;
  size_t longest = 0;
};

inline bool balanced_counts(const int* counts, size_t size, Counts* out) {
  if (counts == nullptr || size == 0) return false;
  const auto [lo, hi] = std::minmax_element(counts, counts + size);
  if (*lo < 0 || *hi - *lo > 1) return false;
  out->n.assign(counts, counts + size);
  for (const size_t c : out->n) out->total += c;
  out->longest = size_t(*hi);
  return true;
}

// Copies n floats to a block of `longest`, the rest repeating the last one: a zero after smooth
// data would widen the range of its quantization block (quant's max error grew tenfold).
inline void pad_block(const float* in, size_t n, float* block, size_t longest) {
  std::copy_n(in, n, block);
  std::fill(block + n, block + longest, n > 0 ? in[n - 1] : 0.0f);
}

// Each chunk of `c` (laid end to end in `in`) padded to an equal slot of c.longest in `wide`.
inline void pad_chunks(const float* in, const Counts& c, float* wide) {
  for (size_t r = 0, at = 0; r < c.n.size(); at += c.n[r], ++r) {
    pad_block(in + at, c.n[r], wide + r * c.longest, c.longest);
  }
}

// The floats [lo, hi) from the receive buffer that an allgatherv's blocks span (lo <= 0).
struct Extent {
  ptrdiff_t lo = 0;
  ptrdiff_t hi = 0;
  size_t floats() const { return size_t(hi - lo); }
};

inline Extent extent_of(const Counts& c, const int* displs) {
  Extent e;
  for (size_t r = 0; r < c.n.size(); ++r) {
    e.lo = std::min(e.lo, ptrdiff_t(displs[r]));
    e.hi = std::max(e.hi, ptrdiff_t(displs[r]) + ptrdiff_t(c.n[r]));
  }
  return e;
}

// MPI_Reduce_scatter / MPI_Ireduce_scatter: MPI_SUM on floats, counts one apart (set in *c).
inline CommState* route_reduce_scatter(MPI_Comm comm, const int* recvcounts, MPI_Datatype type,
                                       MPI_Op op, Counts* c) {
  // The cheap checks first: hycc's own calls and other types pay no count scan.
  if (op != MPI_SUM || !for_hycc(type)) return nullptr;
  if (!balanced_counts(recvcounts, comm_size(comm), c)) return nullptr;
  return route(comm, type);
}

// MPI_Allgatherv / MPI_Iallgatherv: floats, counts one apart (set in *c), this rank's send count
// its receive count (or MPI_IN_PLACE). Decided from the counts, the same on every rank.
inline CommState* route_allgatherv(MPI_Comm comm, const void* sendbuf, int sendcount,
                                   MPI_Datatype sendtype, const int* recvcounts, const int* displs,
                                   MPI_Datatype recvtype, Counts* c) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (displs == nullptr || !for_hycc(in_place ? MPI_FLOAT : sendtype, recvtype)) return nullptr;
  if (!balanced_counts(recvcounts, comm_size(comm), c)) return nullptr;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (!in_place && (sendcount < 0 || size_t(sendcount) != c->n[size_t(rank)])) return nullptr;
  return route(comm, in_place ? MPI_FLOAT : sendtype, recvtype);
}

// MPI_Iallgatherv and MPI_Ireduce_scatter (mpi/nonblocking_collectives.cc) with `native` as MPI's
// own call when hycc does not take it: the program's call with its own arguments, which MPI may
// read until the request completes (the int form, or the large-count form whose counts were
// narrowed here: mpi/large_count.cc). `name` names the call in warnings and errors.
int iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                MPI_Request* request, const char* name, const std::function<int()>& native);
int ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                    const char* name, const std::function<int()>& native);

}  // namespace hycc::interpose
