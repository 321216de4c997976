// The collective algorithms, one per file. Each runs after collectives.cc has checked the
// arguments (locally and across ranks) and chosen it: counts, dtypes and buffers are valid, the
// operation has more than one rank and at least one element.
#pragma once

#include <span>
#include <vector>

#include "coll/coll_internal.h"

namespace hycc::coll {

// native_mpi.cc: the MPI calls, uncompressed. Sums of bf16/f16 are widened to float32 for MPI.
void allreduce_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void reduce_scatter_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void allgather_native(Context& ctx, ConstTensorView send, TensorView recv);
void broadcast_native(Context& ctx, TensorView buffer, int root);
void alltoall_native(Context& ctx, ConstTensorView send, TensorView recv);

// reduce_scatter_ring.cc. The ring reduce-scatter shared with allreduce_ring: on return
// `chunk_sum` holds chunk_range(send.count, size, rank) of the sum over ranks, in float32.
void ring_reduce_scatter_f32(Context& ctx, ConstTensorView send, std::vector<float>& chunk_sum);
void reduce_scatter_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);

// allgather_ring.cc. The ring allgather of compressed blocks shared with allreduce_ring: rank j
// compresses `own` once, the streams are forwarded unchanged, and block j of every rank
// (blocks[j], any sizes) is the decoded stream, this rank's own block included. `own` may be
// blocks[rank] itself.
void ring_allgather_compressed(Context& ctx, ConstTensorView own,
                               std::span<const TensorView> blocks);
void allgather_ring(Context& ctx, ConstTensorView send, TensorView recv);

void allreduce_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void allreduce_recursive_doubling(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void allreduce_compress_once(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);

void broadcast_chain(Context& ctx, TensorView buffer, int root);

void alltoall_pairwise(Context& ctx, ConstTensorView send, TensorView recv);

}  // namespace hycc::coll
