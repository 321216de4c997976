// Two-level allreduce over N nodes of L ranks (comm/topology.h; docs/algorithms.md), in pieces
// of the tensor so that the steps inside the node overlap the compressed ring between nodes:
// 1. inside the node, MPI_Ireduce_scatter of the piece in float32 (16-bit inputs widened
//    first, exactly): local rank l holds chunk l (chunk_range(m, L, l)) of the piece's node sum;
// 2. between the nodes, the compressed ring allreduce of that chunk among the N ranks of local
//    rank l (one ring per local rank, so every node's link carries L rings at once): the node
//    sums travel as float32 in the first step, the result is rounded once into the dtype;
// 3. inside the node, MPI_Iallgatherv of the piece's L chunks in the dtype.
// While the ring of piece k runs, the reduce-scatter of piece k + 1 and the allgather of piece
// k - 1 progress inside its MPI waits (MPI's nonblocking collectives), so the link between nodes
// is kept busy and the node's steps cost little beside it.
// Every rank of ring l holds the same bits of each chunk l (the ring's rule) and step 3 copies
// them exactly, so all p ranks hold bit-identical results. Each element is compressed once per
// step of one N-rank ring: the error is the ring's over N ranks whose inputs are node sums of L
// inputs, sum over k = 1 .. N-1 of e(k L) plus e(p), against the flat ring's sum over
// k = 1 .. p-1 of e(k) plus e(p). Per rank, the link between nodes carries 2 (N - 1)/N of n/L
// elements, compressed.
#include <algorithm>
#include <vector>

#include "codec/float_io.h"
#include "coll/algorithms.h"
#include "coll/two_level.h"
#include "common/buffer_pool.h"

namespace hycc::coll {
namespace {

// Elements of a piece: 8 MiB of float32 node sums, so that a 64 MiB tensor makes 8 pieces to
// overlap (on the emulated cluster, 4 hosts x 2 ranks at 1 Gbit/s, 64 MiB: pieces of 8 MiB took
// 0.26-0.27 s, of 16 MiB 0.30 s, of 32 MiB 0.43 s, of 4 MiB 0.31 s; docs/results.md), and at
// most 16 segments of each local rank (small segments, small pieces), at least one.
constexpr size_t kPieceElems = size_t{2} << 20;
constexpr size_t kMaxSegmentsPerPiece = 16;

size_t piece_elems(size_t n, const Context& ctx, int local_size) {
  const size_t segments = ctx.seg_elems * static_cast<size_t>(local_size);
  return std::max<size_t>(
      1, std::min(n, std::max(segments, std::min(kPieceElems, kMaxSegmentsPerPiece * segments))));
}

// The L chunks of a piece of m elements, for the MPI calls inside the node.
struct ChunkLayout {
  std::vector<int> counts, displs;
};

ChunkLayout chunk_layout(size_t m, int parts) {
  ChunkLayout c;
  for (int j = 0; j < parts; ++j) {
    const ChunkRange r = chunk_range(m, parts, j);
    c.counts.push_back(mpi_count(r.count, "two-level allreduce: chunk"));
    c.displs.push_back(mpi_count(r.offset, "two-level allreduce: chunk offset"));
  }
  return c;
}

// One piece's steps inside the node.
struct Piece {
  ChunkRange range;  // of the tensor
  ChunkLayout layout;
  std::vector<float> wide;      // 16-bit inputs widened to float32
  std::vector<float> node_sum;  // this rank's chunk of the node's sum
  MPI_Request reduce = MPI_REQUEST_NULL, gather = MPI_REQUEST_NULL;
};

}  // namespace

void allreduce_two_level(Context& ctx, const comm::LevelComms& levels, ConstTensorView send,
                         TensorView recv, ReduceOp op) {
  const size_t n = send.count;
  const int local = levels.intra.rank(), local_size = levels.intra.size();
  const MPI_Comm intra = levels.intra.mpi();
  Context inter = level_context(ctx, levels.inter, ctx.codec, 0);
  const MPI_Datatype type = mpi_type(recv.dtype);
  const size_t per = piece_elems(n, ctx, local_size);
  const size_t pieces = (n + per - 1) / per;

  const auto start_reduce = [&](Piece& piece) {
    const ChunkRange mine = chunk_range(piece.range.count, local_size, local);
    piece.layout = chunk_layout(piece.range.count, local_size);
    piece.node_sum = pooled_floats(mine.count);
    const void* from = slice(send, piece.range.offset, piece.range.count).data;
    if (send.dtype != DType::kF32) {
      piece.wide = pooled_floats(piece.range.count);
      codec::load_as_float(send, piece.range.offset, piece.range.count, piece.wide.data());
      from = piece.wide.data();
    }
    HYCC_CHECK_MPI(MPI_Ireduce_scatter(from, piece.node_sum.data(), piece.layout.counts.data(),
                                       MPI_FLOAT, MPI_SUM, intra, &piece.reduce));
  };

  std::vector<Piece> all(pieces);
  for (size_t k = 0; k < pieces; ++k) all[k].range = {k * per, std::min(per, n - k * per)};
  start_reduce(all[0]);
  size_t gathered = 0;  // pieces whose allgather has completed
  for (size_t k = 0; k < pieces; ++k) {
    Piece& piece = all[k];
    HYCC_CHECK_MPI(MPI_Wait(&piece.reduce, MPI_STATUS_IGNORE));
    recycle(piece.wide);
    // Started before this piece's ring, so that it progresses inside the ring's waits.
    if (k + 1 < pieces) start_reduce(all[k + 1]);
    const TensorView whole = slice(recv, piece.range.offset, piece.range.count);
    const ChunkRange mine = chunk_range(piece.range.count, local_size, local);
    if (mine.count > 0) {
      inter.seed = stream_seed(ctx.seed, local, kTwoLevelPhase, k);
      allreduce_ring(inter, ConstTensorView{DType::kF32, mine.count, piece.node_sum.data()},
                     slice(whole, mine.offset, mine.count), op, ctx.size);
    }
    recycle(piece.node_sum);
    HYCC_CHECK_MPI(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole.data,
                                   piece.layout.counts.data(), piece.layout.displs.data(), type,
                                   intra, &piece.gather));
    for (; gathered + 2 <= k; ++gathered) {  // at most two allgathers in flight
      HYCC_CHECK_MPI(MPI_Wait(&all[gathered].gather, MPI_STATUS_IGNORE));
    }
  }
  for (; gathered < pieces; ++gathered) {
    HYCC_CHECK_MPI(MPI_Wait(&all[gathered].gather, MPI_STATUS_IGNORE));
  }

  add_level_counters(ctx, inter, true);
  ctx.counters.intra_bytes += n * sizeof(float) + n * dtype_size(recv.dtype);
  inter.errors.rethrow();
}

}  // namespace hycc::coll
