// Compressed collectives in two phases, for callers that must not block: the drop-in library's
// MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ialltoall and MPI_Ireduce_scatter_block
// (docs/dropin.md, "Nonblocking collectives"). start_*() compresses this rank's input (local work,
// no message) and starts MPI's own nonblocking collective on the compressed bytes, so progress,
// ordering and completion are MPI's; once request() has completed, finish() decodes into the
// output.
//
// Every stream travels in a slot of slot_bytes(codec, count) bytes, the same on every rank, since
// MPI must know what it receives before any rank has compressed: the stream's length (u64), the
// stream, padding. A slot has room for the codec's stream of regular data
// (regular_compressed_bytes: casts, quant, zfp fixed-rate; other codecs cannot take this form)
// plus 1/16 of the data's bytes for what the codec keeps verbatim (NaN and infinities in a zfp
// exception list, quant's raw blocks). A stream that does not fit anyway (more than about 1/16 of
// the data special) is replaced by an overflow mark, and every rank decodes that input as NaN:
// the result is not finite where it was, as loss scalers expect, but holds none of its values.
// float32 data only.
// - allreduce: compress once, MPI_Iallgather of the slots, every rank decodes the p inputs and
//   sums them in rank order in float32 (bit-identical results; error p eb for an absolute bound
//   eb). Each rank receives (p - 1) slots: fewer bytes than MPI's 2 (p - 1)/p of the tensor only
//   while the ratio exceeds p/2 (split_pays).
// - broadcast: the root's slot through MPI_Ibcast; the root keeps what the others decode.
// - allgather: MPI_Iallgather of the slots; the own block is what the others decode.
// - alltoall: block j's slot to rank j through MPI_Ialltoall; the own block is copied exactly.
// - reduce_scatter: chunk j's slot to rank j through MPI_Ialltoall; each rank sums the p
//   contributions to its chunk in rank order in float32, its own exact (error (p - 1) eb).
// As in the blocking collectives, each rank decodes what it received; a malformed slot throws
// CorruptStream on the ranks that decode it.
// Error feedback (Feedback, for ef+CODEC and ef2+CODEC gradients): allreduce and reduce_scatter
// compress acc = send + residual instead of send, and replace the residual by what the peers do
// not receive of it, acc minus the decoding of this rank's streams (zero on a reduce-scatter's
// own chunk, which is summed exactly, and where it is not finite: common/finite.h), before start
// returns. An allreduce with feedback is then
// ef+CODEC's step bit for bit (the same stream and seed, the same sum).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/policy.h"

namespace hycc::coll {

// The residual of error feedback (count values: the whole input) and the seed of the step; the
// stream of slot j is compressed with seed + j.
struct Feedback {
  std::span<float> residual;
  uint64_t seed = 0;
};

class SplitCollective {
 public:
  SplitCollective(const SplitCollective&) = delete;
  SplitCollective& operator=(const SplitCollective&) = delete;
  ~SplitCollective();  // gives its buffers back to the pool (common/buffer_pool.h)

  // MPI's request of the started collective.
  MPI_Request* request() { return &request_; }
  // After request() has completed: decodes into the output. Throws CorruptStream.
  void finish();
  // Bytes and codec time on this rank (seconds: codec time; the transfer overlaps the caller's
  // work and is not measured).
  const CollectiveStats& stats() const { return stats_; }

 private:
  friend struct SplitBuilder;
  friend std::unique_ptr<SplitCollective> start_allreduce(MPI_Comm, const float*, float*, size_t,
                                                          const CodecConfig&, const Feedback*);
  friend std::unique_ptr<SplitCollective> start_broadcast(MPI_Comm, float*, size_t, int,
                                                          const CodecConfig&);
  friend std::unique_ptr<SplitCollective> start_allgather(MPI_Comm, const float*, float*, size_t,
                                                          const CodecConfig&);
  friend std::unique_ptr<SplitCollective> start_alltoall(MPI_Comm, const float*, float*, size_t,
                                                         const CodecConfig&);
  friend std::unique_ptr<SplitCollective> start_reduce_scatter(MPI_Comm, const float*, float*,
                                                               size_t, const CodecConfig&,
                                                               const Feedback*);
  SplitCollective() = default;

  MPI_Request request_ = MPI_REQUEST_NULL;
  size_t slot_ = 0;
  std::vector<std::byte> sent_, received_;
  // This rank's own contribution, decoded or exact, when finish() needs it.
  std::vector<float> own_;
  std::function<void(SplitCollective&)> decode_;
  CollectiveStats stats_;
};

// The length word of a slot whose stream did not fit.
inline constexpr uint64_t kOverflow = ~uint64_t{0};
// A slot's room beyond the regular stream: the data's bytes / kSlackDivisor.
inline constexpr size_t kSlackDivisor = 16;

// Bytes of the slot of a stream of `count` float32 values; nullopt for codecs whose stream size
// depends on the data.
std::optional<size_t> slot_bytes(const CodecConfig& codec, size_t count);

// True when the split form of `op` (allreduce, broadcast, allgather, alltoall, reduce_scatter) on
// `count`
// float32 values per slot, at `size` ranks, makes each rank receive fewer bytes than MPI's
// uncompressed collective, and its slots fit MPI's int counts.
bool split_pays(Operation op, const CodecConfig& codec, size_t count, int size);

// count: elements of the whole tensor (allreduce, broadcast), of each rank's block (allgather,
// alltoall), of each rank's chunk of the result (reduce_scatter: send holds size chunks). send
// may overlap recv (the input is compressed, and the own block copied, before start returns).
// feedback: error feedback (allreduce, reduce_scatter), or null.
std::unique_ptr<SplitCollective> start_allreduce(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec,
                                                 const Feedback* feedback = nullptr);
std::unique_ptr<SplitCollective> start_broadcast(MPI_Comm comm, float* data, size_t count, int root,
                                                 const CodecConfig& codec);
std::unique_ptr<SplitCollective> start_allgather(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec);
std::unique_ptr<SplitCollective> start_alltoall(MPI_Comm comm, const float* send, float* recv,
                                                size_t count, const CodecConfig& codec);
std::unique_ptr<SplitCollective> start_reduce_scatter(MPI_Comm comm, const float* send, float* recv,
                                                      size_t count, const CodecConfig& codec,
                                                      const Feedback* feedback = nullptr);

}  // namespace hycc::coll
