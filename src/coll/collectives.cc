// The public collective operations: local argument checks, the cross-rank agreement, the
// one-rank and empty short-circuits, and the choice of algorithm. The algorithms themselves live
// in one file each (see algorithms.h).
#include <algorithm>
#include <chrono>
#include <climits>
#include <vector>

#include "coll/algorithms.h"
#include "coll/entry.h"

namespace hycc {

ChunkRange chunk_range(size_t total, int size, int rank) {
  if (size <= 0 || rank < 0 || rank >= size) {
    throw InvalidArgument(tagged("coll", "chunk_range: rank ", rank, " of ", size));
  }
  const size_t p = static_cast<size_t>(size), j = static_cast<size_t>(rank);
  const size_t base = total / p, rem = total % p;
  return {j * base + std::min(j, rem), base + (j < rem ? 1 : 0)};
}

namespace {

using coll::ArgCheck;
using coll::Context;

// Above the threshold and up to this uncompressed size (bytes), kAuto allreduce uses recursive
// doubling (log2(p) latency steps); above it, the ring (2(p-1) steps, 2(p-1)/p n bytes).
constexpr size_t kRecursiveDoublingMaxBytes = 256 << 10;

// The native path needs no tag (MPI collectives have none), so it skips the attribute lookup.
Context make_context(const Communicator& comm, Operation op, DType dtype,
                     const AlgorithmOptions& options, bool native) {
  return Context{.comm = comm.is_mpi() ? comm.mpi() : MPI_COMM_NULL,
                 .group = comm.group(),
                 .rank = comm.rank(),
                 .size = comm.size(),
                 .tag = native ? 0 : comm::internal_tag(comm, options.tag, op),
                 .codec = options.codec,
                 .seg_elems = coll::segment_elems(options.segment_bytes, dtype),
                 .seed = options.seed,
                 .errors = {},
                 .counters = {}};
}

// Native MPI when asked for, below the threshold, or (kAuto) when nothing is compressed anyway.
// `mpi_elems` is the largest count the MPI call would take; above INT_MAX only hycc's own
// algorithms can run, unless kNative is forced (then an InvalidArgument on every rank).
bool use_native(const AlgorithmOptions& options, size_t bytes, size_t mpi_elems) {
  if (options.algorithm == Algorithm::kNative) return true;
  if (mpi_elems > static_cast<size_t>(INT_MAX)) return false;
  return bytes < options.threshold_bytes ||
         (options.algorithm == Algorithm::kAuto && options.codec.id() == CodecId::kNone);
}

// Chooses between native MPI and hycc's algorithms, adds the shared signature fields and runs the
// agreement that choice calls for (ArgumentCheck). Returns true for native MPI.
bool settle(ArgCheck& check, const Communicator& comm, const AlgorithmOptions& options,
            size_t count, DType dtype, size_t bytes, size_t mpi_elems) {
  const bool native = use_native(options, bytes, mpi_elems);
  const bool agree = coll::agree_on_arguments(options, native);
  coll::add_common_fields(check, count, dtype, options, agree);
  check.run(comm, agree);
  return native;
}

// Whether the two-level algorithms can run on comm for `count` elements: an MPI communicator
// whose topology has 2 or more nodes of equally many ranks, 2 or more each (comm/topology.h;
// collective on the communicator's first call that asks), and counts MPI takes.
bool two_level_suits(const Communicator& comm, size_t count) {
  return comm.is_mpi() && count <= static_cast<size_t>(INT_MAX) && comm::topology(comm).two_level();
}

// Whether kAuto takes the two-level allreduce over the ring: where the ring's hops cross between
// nodes more often than once per node (ranks of a node not contiguous, as `mpirun --map-by node`
// places them). Where each node's ranks are contiguous the ring crosses each node's link once
// and moves 2 (p - 1)/p of the tensor over it against the two-level's 2 (N - 1)/N: on the
// emulated cluster (1 Gbit/s, 64 MiB, quant:bits=8) at 4 hosts x 2 ranks both took 0.28-0.30 s,
// at 4 x 4 the ring 0.38 s and the two-level 0.49 s; with 4 x 2 placed round robin the ring took
// 0.56 s and the two-level 0.28 s (docs/results.md).
bool two_level_pays(const Communicator& comm, size_t count) {
  if (!two_level_suits(comm, count)) return false;
  const comm::Topology& t = comm::topology(comm);
  return t.ring_crossings() > t.nodes();
}

// The two-level form or the flat one (`flat`: the ring, broadcast's chain) of a call that is not
// native. kTwoLevel runs it where the topology allows, else the flat form (`fallback`). kAuto
// takes the two-level allreduce, reduce-scatter and broadcast where two_level_pays (round robin,
// 4 emulated hosts x 2 ranks, 64 MiB: reduce-scatter 0.23 s against the ring's 0.29 s), never
// the two-level allgather: its steps inside the node are not overlapped yet and it lost to the
// ring even there (0.32 s against 0.28 s; docs/results.md).
struct Level {
  Algorithm ran;
  bool fallback = false;  // kTwoLevel asked for, the topology did not allow it
};
Level choose_level(const Communicator& comm, Operation op, const AlgorithmOptions& options,
                   size_t count, Algorithm flat) {
  if (options.algorithm == Algorithm::kTwoLevel) {
    return two_level_suits(comm, count) ? Level{Algorithm::kTwoLevel} : Level{flat, true};
  }
  if (options.algorithm == Algorithm::kAuto && op != Operation::kAllgather &&
      two_level_pays(comm, count)) {
    return {Algorithm::kTwoLevel};
  }
  return {flat};
}

void check_pair(ArgCheck& check, const char* op, ConstTensorView send, ConstTensorView recv) {
  coll::check_view(check, op, "send", send);
  coll::check_view(check, op, "recv", recv);
  coll::check_same_dtype(check, op, send, recv);
}

// The most frequent small call, a float32 sum that goes to MPI, in one step: taken only when every
// check of the full path would pass and it would make this same MPI call; anything else (other
// dtypes or options, statistics, kAlways, invalid arguments) takes the full path, which reports
// what is wrong. The test AllreduceFastPath compares the two.
bool allreduce_fast(const Communicator& comm, ConstTensorView send, TensorView recv, ReduceOp op,
                    const AlgorithmOptions& o) {
  const size_t bytes = send.count * sizeof(float);
  const bool native = o.algorithm == Algorithm::kNative ||
                      (o.algorithm == Algorithm::kAuto &&
                       (bytes < o.threshold_bytes || o.codec.id() == CodecId::kNone));
  if (!native || o.stats != nullptr || o.tag != 0 || op != ReduceOp::kSum ||
      (o.check_arguments != ArgumentCheck::kAuto && o.check_arguments != ArgumentCheck::kNever) ||
      o.segment_bytes == 0 || o.segment_bytes > coll::kMaxSegmentBytes ||
      send.dtype != DType::kF32 || recv.dtype != DType::kF32 || send.count != recv.count ||
      send.count == 0 || send.count > static_cast<size_t>(INT_MAX) || send.data == nullptr ||
      !comm.is_mpi() || recv.data == nullptr || comm.size() == 1 ||
      ((reinterpret_cast<uintptr_t>(send.data) | reinterpret_cast<uintptr_t>(recv.data)) & 3) !=
          0 ||
      (send.data != recv.data && coll::overlaps(send.data, bytes, recv.data, bytes))) {
    return false;
  }
  const void* from = send.data == recv.data ? MPI_IN_PLACE : send.data;
  HYCC_CHECK_MPI(
      MPI_Allreduce(from, recv.data, static_cast<int>(send.count), MPI_FLOAT, MPI_SUM, comm.mpi()));
  return true;
}

}  // namespace

void coll::run_allreduce(const Communicator& comm, ConstTensorView send, TensorView recv,
                         ReduceOp op, const AlgorithmOptions& options) {
  if (allreduce_fast(comm, send, recv, op, options)) return;
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAllreduce);
  check_pair(check, "allreduce", send, recv);
  if (check.ok() && recv.count != send.count) {
    check.fail(tagged("coll", "allreduce: recv has ", recv.count, " elements, send ", send.count));
  }
  if (check.ok() && send.data != recv.data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", "allreduce: send and recv overlap without being the same buffer"));
  }
  coll::check_reduce_op(check, op);
  coll::check_options(check, comm, Operation::kAllreduce, options);
  const bool native =
      settle(check, comm, options, send.count, send.dtype, send.bytes(), send.count);
  if (comm.size() == 1 || send.count == 0) {
    coll::copy_view(send, recv);
    coll::report(options, nullptr, Algorithm::kAuto, send.bytes(), start);
    return;
  }
  Context ctx = make_context(comm, Operation::kAllreduce, send.dtype, options, native);
  Level level{options.algorithm};
  if (native) {
    level.ran = Algorithm::kNative;
  } else if (level.ran == Algorithm::kAuto && send.bytes() <= kRecursiveDoublingMaxBytes) {
    level.ran = Algorithm::kRecursiveDoubling;
  } else if (level.ran == Algorithm::kAuto || level.ran == Algorithm::kTwoLevel) {
    level = choose_level(comm, Operation::kAllreduce, options, send.count, Algorithm::kRing);
  }
  const Algorithm ran = level.ran;
  if (ran == Algorithm::kNative) {
    coll::allreduce_native(ctx, send, recv, op);
  } else if (ran == Algorithm::kRing) {
    coll::allreduce_ring(ctx, send, recv, op);
  } else if (ran == Algorithm::kTwoLevel) {
    coll::allreduce_two_level(ctx, comm::level_comms(comm), send, recv, op);
  } else if (ran == Algorithm::kRecursiveDoubling) {
    coll::allreduce_recursive_doubling(ctx, send, recv, op);
  } else {
    coll::allreduce_compress_once(ctx, send, recv, op);
  }
  ctx.errors.rethrow();
  coll::report(ctx, options, ran, send.bytes(), start, level.fallback);
}

void coll::run_reduce_scatter(const Communicator& comm, ConstTensorView send, TensorView recv,
                              ReduceOp op, const AlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kReduceScatter);
  check_pair(check, "reduce_scatter", send, recv);
  const ChunkRange mine = chunk_range(send.count, comm.size(), comm.rank());
  if (check.ok() && recv.count != mine.count) {
    check.fail(tagged("coll", "reduce_scatter: recv has ", recv.count, " elements, rank ",
                      comm.rank(), "'s chunk of ", send.count, " has ", mine.count));
  }
  if (check.ok() && recv.data != coll::slice(send, mine.offset, mine.count).data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", "reduce_scatter: recv overlaps send without being this rank's ",
                      "chunk of it"));
  }
  coll::check_reduce_op(check, op);
  coll::check_options(check, comm, Operation::kReduceScatter, options);
  const bool native =
      settle(check, comm, options, send.count, send.dtype, send.bytes(), send.count);
  if (comm.size() == 1 || send.count == 0) {
    coll::copy_view(send, recv);
    coll::report(options, nullptr, Algorithm::kAuto, send.bytes(), start);
    return;
  }
  Context ctx = make_context(comm, Operation::kReduceScatter, send.dtype, options, native);
  const Level level =
      native ? Level{Algorithm::kNative}
             : choose_level(comm, Operation::kReduceScatter, options, send.count, Algorithm::kRing);
  if (native) {
    coll::reduce_scatter_native(ctx, send, recv, op);
  } else if (level.ran == Algorithm::kTwoLevel) {
    coll::reduce_scatter_two_level(ctx, comm::level_comms(comm), comm::topology(comm), send, recv,
                                   op);
  } else {
    coll::reduce_scatter_ring(ctx, send, recv, op);
  }
  ctx.errors.rethrow();
  coll::report(ctx, options, level.ran, send.bytes(), start, level.fallback);
}

void coll::run_allgather(const Communicator& comm, ConstTensorView send, TensorView recv,
                         const AlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAllgather);
  check_pair(check, "allgather", send, recv);
  const size_t p = static_cast<size_t>(comm.size());
  if (check.ok() && (send.count > SIZE_MAX / p || recv.count != p * send.count)) {
    check.fail(tagged("coll", "allgather: recv has ", recv.count, " elements, ", p, " ranks x ",
                      send.count, " expected"));
  }
  const size_t own_at = static_cast<size_t>(comm.rank()) * send.count;
  if (check.ok() && send.data != coll::slice(recv, own_at, send.count).data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", "allgather: send overlaps recv without being this rank's block"));
  }
  coll::check_options(check, comm, Operation::kAllgather, options);
  const bool native =
      settle(check, comm, options, send.count, send.dtype, recv.bytes(), send.count);
  if (comm.size() == 1 || send.count == 0) {
    coll::copy_view(send, recv);
    coll::report(options, nullptr, Algorithm::kAuto, recv.bytes(), start);
    return;
  }
  Context ctx = make_context(comm, Operation::kAllgather, send.dtype, options, native);
  const Level level =
      native ? Level{Algorithm::kNative}
             : choose_level(comm, Operation::kAllgather, options, recv.count, Algorithm::kRing);
  if (native) {
    coll::allgather_native(ctx, send, recv);
  } else if (level.ran == Algorithm::kTwoLevel) {
    coll::allgather_two_level(ctx, comm::level_comms(comm), comm::topology(comm), send, recv);
  } else {
    coll::allgather_ring(ctx, send, recv);
  }
  ctx.errors.rethrow();
  coll::report(ctx, options, level.ran, recv.bytes(), start, level.fallback);
}

void coll::run_broadcast(const Communicator& comm, TensorView buffer, int root,
                         const AlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kBroadcast);
  coll::check_view(check, "broadcast", "buffer", buffer);
  if (root < 0 || root >= comm.size()) {
    check.fail(tagged("coll", "broadcast: root ", root, " out of range [0, ", comm.size(), ")"));
  }
  coll::check_options(check, comm, Operation::kBroadcast, options);
  check.field("root", root);
  const bool native =
      settle(check, comm, options, buffer.count, buffer.dtype, buffer.bytes(), buffer.count);
  if (comm.size() == 1 || buffer.count == 0) {
    coll::report(options, nullptr, Algorithm::kAuto, buffer.bytes(), start);
    return;
  }
  Context ctx = make_context(comm, Operation::kBroadcast, buffer.dtype, options, native);
  const Level level =
      native ? Level{Algorithm::kNative}
             : choose_level(comm, Operation::kBroadcast, options, buffer.count, Algorithm::kChain);
  if (native) {
    coll::broadcast_native(ctx, buffer, root);
  } else if (level.ran == Algorithm::kTwoLevel) {
    coll::broadcast_two_level(ctx, comm::level_comms(comm), comm::topology(comm), buffer, root);
  } else {
    coll::broadcast_chain(ctx, buffer, root);
  }
  ctx.errors.rethrow();
  coll::report(ctx, options, level.ran, buffer.bytes(), start, level.fallback);
}

void coll::run_alltoall(const Communicator& comm, ConstTensorView send, TensorView recv,
                        const AlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kAlltoall);
  check_pair(check, "alltoall", send, recv);
  if (check.ok() && recv.count != send.count) {
    check.fail(tagged("coll", "alltoall: recv has ", recv.count, " elements, send ", send.count));
  }
  if (check.ok() && send.count % static_cast<size_t>(comm.size()) != 0) {
    check.fail(tagged("coll", "alltoall: ", send.count, " elements are not a multiple of ",
                      comm.size(), " ranks"));
  }
  if (check.ok() && send.data != recv.data &&
      coll::overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    check.fail(tagged("coll", "alltoall: send and recv overlap without being the same buffer"));
  }
  coll::check_options(check, comm, Operation::kAlltoall, options);
  const bool native = settle(check, comm, options, send.count, send.dtype, send.bytes(),
                             send.count / static_cast<size_t>(comm.size()));
  if (comm.size() == 1 || send.count == 0) {
    coll::copy_view(send, recv);
    coll::report(options, nullptr, Algorithm::kAuto, send.bytes(), start);
    return;
  }
  Context ctx = make_context(comm, Operation::kAlltoall, send.dtype, options, native);
  if (native) {
    coll::alltoall_native(ctx, send, recv);
  } else {
    coll::alltoall_pairwise(ctx, send, recv);
  }
  ctx.errors.rethrow();
  coll::report(ctx, options, native ? Algorithm::kNative : Algorithm::kPairwise, send.bytes(),
               start);
}

ArgumentCheck parse_argument_check(std::string_view text, std::string_view setting) {
  if (text == "auto") return ArgumentCheck::kAuto;
  if (text == "always") return ArgumentCheck::kAlways;
  if (text == "never") return ArgumentCheck::kNever;
  throw InvalidArgument(tagged("coll", setting, " '", text, "' is not one of auto, always, never"));
}

}  // namespace hycc
