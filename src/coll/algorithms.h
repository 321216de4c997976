// The collective algorithms, one per file. Each runs after collectives.cc has checked the
// arguments (locally and across ranks) and chosen it: counts, dtypes and buffers are valid, the
// operation has more than one rank and at least one element.
#pragma once

#include "coll/coll_internal.h"
#include "comm/topology.h"

namespace hycc::coll {

// native_mpi.cc: the MPI calls, uncompressed. Sums of bf16/f16 are widened to float32 for MPI.
void allreduce_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void reduce_scatter_native(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void allgather_native(Context& ctx, ConstTensorView send, TensorView recv);
void broadcast_native(Context& ctx, TensorView buffer, int root);
void alltoall_native(Context& ctx, ConstTensorView send, TensorView recv);

// The ring algorithms (their shared halves are in ring_phases.h).
// chunks: RingReduceScatter's (empty: chunk_range's); average_over: the divisor of an average
// (0: ctx.size). recv may be float32 where send is 16-bit (a sum that is not rounded).
void reduce_scatter_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op,
                         std::span<const ChunkRange> chunks = {}, int average_over = 0);
void allgather_ring(Context& ctx, ConstTensorView send, TensorView recv);
// The same for blocks of any sizes: blocks[j] receives rank j's block, `own` is this rank's
// (RingAllgather).
void allgather_blocks_ring(Context& ctx, ConstTensorView own, std::span<const TensorView> blocks);

// average_over: the divisor of an average (0: ctx.size); send may be float32 while recv is 16-bit.
void allreduce_ring(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op,
                    int average_over = 0);
void allreduce_recursive_doubling(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);
void allreduce_compress_once(Context& ctx, ConstTensorView send, TensorView recv, ReduceOp op);

// allreduce_two_level.cc: the node's sum scattered natively inside the node (float32), each
// chunk allreduced by the compressed ring between the nodes, gathered natively inside the node.
// `levels` are comm/topology.h's communicators of ctx's communicator.
void allreduce_two_level(Context& ctx, const comm::LevelComms& levels, ConstTensorView send,
                         TensorView recv, ReduceOp op);
// reduce_scatter_two_level.cc, allgather_two_level.cc: the same shape for reduce_scatter (this
// rank's chunk: the node's reduce-scatter, uncompressed, then the compressed ring
// reduce-scatter between nodes) and allgather (the compressed ring allgather between nodes,
// then the node's allgather, uncompressed); `topology` is ctx's communicator's.
void reduce_scatter_two_level(Context& ctx, const comm::LevelComms& levels,
                              const comm::Topology& topology, ConstTensorView send, TensorView recv,
                              ReduceOp op);
void allgather_two_level(Context& ctx, const comm::LevelComms& levels,
                         const comm::Topology& topology, ConstTensorView send, TensorView recv);
// broadcast_two_level.cc: the compressed chain among the root's local rank on every node, then
// the node's chain, uncompressed.
void broadcast_two_level(Context& ctx, const comm::LevelComms& levels,
                         const comm::Topology& topology, TensorView buffer, int root);

void broadcast_chain(Context& ctx, TensorView buffer, int root);

void alltoall_pairwise(Context& ctx, ConstTensorView send, TensorView recv);

}  // namespace hycc::coll
