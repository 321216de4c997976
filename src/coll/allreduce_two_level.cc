// Two-level allreduce over N nodes of L ranks (comm/topology.h; docs/algorithms.md):
// 1. inside the node, the ring reduce-scatter with codec none: local rank l holds chunk l
//    (chunk_range(n, L, l)) of the node's sum in float32, exact;
// 2. between the nodes, the compressed ring allreduce of that chunk among the N ranks of local
//    rank l (one ring per local rank, so every node's link carries L rings at once): the node sums
//    travel as float32 in the first step, the result is rounded once into the dtype;
// 3. inside the node, the ring allgather of the L chunks with codec none.
// Inside the node hycc's own pipelined ring runs rather than MPI_Reduce_scatter and
// MPI_Allgatherv: on the emulated cluster (8 ranks on 2 cores) Open MPI's reduce-scatter of
// 64 MiB between 2 ranks took 200-800 ms, hycc's ring a fraction of that (docs/results.md).
// Every rank of ring l holds the same bits of chunk l (the ring's rule) and step 3 copies them
// exactly, so all p ranks hold bit-identical results. Each element is compressed once per step of
// one N-rank ring: the error is the ring's over N ranks whose inputs are node sums of L inputs,
// sum over k = 1 .. N-1 of e(k L) plus e(p), against the flat ring's sum over k = 1 .. p-1 of e(k)
// plus e(p). Per rank, the link between nodes carries 2 (N - 1)/N of n/L elements, compressed.
#include <vector>

#include "coll/algorithms.h"
#include "common/buffer_pool.h"

namespace hycc::coll {
namespace {

// The phase of the inter-node rings' stream seeds (stream_seed), apart from the flat ring's.
constexpr uint64_t kTwoLevelPhase = 0x7477'6f6c'6576'656cull;

Context level_context(const Context& ctx, const Communicator& level, const CodecConfig& codec,
                      uint64_t seed) {
  return Context{.comm = level.mpi(),
                 .group = nullptr,
                 .rank = level.rank(),
                 .size = level.size(),
                 .tag = ctx.tag,
                 .codec = codec,
                 .seg_elems = ctx.seg_elems,
                 .seed = seed,
                 .errors = {},
                 .counters = {}};
}

}  // namespace

void allreduce_two_level(Context& ctx, const comm::LevelComms& levels, ConstTensorView send,
                         TensorView recv, ReduceOp op) {
  const size_t n = send.count;
  const int local = levels.intra.rank(), local_size = levels.intra.size();
  const ChunkRange mine = chunk_range(n, local_size, local);
  static const CodecConfig kUncompressed = CodecConfig::parse("none");
  Context intra = level_context(ctx, levels.intra, kUncompressed, ctx.seed);
  Context inter =
      level_context(ctx, levels.inter, ctx.codec, stream_seed(ctx.seed, local, kTwoLevelPhase, 0));

  // 1. The node's sum of this rank's chunk, in float32.
  PooledFloats node_sum(mine.count);
  reduce_scatter_ring(intra, send, TensorView{DType::kF32, mine.count, node_sum.data()},
                      ReduceOp::kSum);
  // 2. The chunk's sum over the nodes, compressed between them, into recv's chunk.
  const TensorView own = slice(recv, mine.offset, mine.count);
  if (mine.count > 0) {
    allreduce_ring(inter, ConstTensorView{DType::kF32, mine.count, node_sum.data()}, own, op,
                   ctx.size);
  }
  // 3. The node's chunks to every rank of the node, as they are.
  const std::vector<TensorView> chunks = chunk_views(recv, local_size);
  allgather_blocks_ring(intra, own, chunks);

  for (const Context* level : {&intra, &inter}) {
    ctx.counters.codec_seconds += level->counters.codec_seconds;
  }
  ctx.counters.raw_bytes += inter.counters.raw_bytes;
  ctx.counters.wire_bytes += inter.counters.wire_bytes;
  ctx.counters.streams += inter.counters.streams;
  ctx.counters.intra_bytes += intra.counters.wire_bytes;
  intra.errors.rethrow();
  inter.errors.rethrow();
}

}  // namespace hycc::coll
