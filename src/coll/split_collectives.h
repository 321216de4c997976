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
// exception list), at most the codec's bound (casts and quant: their stream, whatever the data).
// A stream that does not fit anyway (more than about 1/16 of the data special) is replaced by an
// overflow mark, and every rank decodes that input as NaN:
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
// not receive of it, acc minus the decoding of this rank's streams (zero where it is not finite:
// common/finite.h), before start returns. A reduce-scatter with feedback compresses its own chunk
// too and sums the decoding (the blocking grad_reduce_scatter's bits). An allreduce with feedback
// is then ef+CODEC's step bit for bit (the same stream and seed, the same sum).
// - allreduce in two stages (start_allreduce_two_stage), for callers that can run the work
//   between two exchanges when the first completes (the drop-in library's progress thread):
//   chunk j of every rank's input (chunk_range) compressed to rank j (MPI_Ialltoall); then
//   next(): each rank sums its chunk's p streams in rank order in float32 (its own exact, or
//   decoded with feedback), compresses the sum once and MPI_Iallgathers it on a second
//   communicator, and every rank decodes the same p streams (bit-identical results; error
//   p eb: p - 1 streams and the sum's). Each rank receives 2 (p - 1) slots of a chunk: fewer bytes
//   than MPI's 2 (p - 1)/p of the tensor whenever a slot is smaller than its chunk. With feedback
//   it is ef2+CODEC's step bit for bit: the worker residual against every chunk's decoding (the own
//   chunk too), the server residual (Feedback::server) of this rank's chunk against the decoding
//   of the sum's stream, the same seeds.
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
  // The two-stage allreduce's server residual (this rank's chunk, chunk_range(count, size,
  // rank)) and the seed of the stream of the sum; unused by the other calls.
  std::span<float> server = {};
  uint64_t server_seed = 0;
};

class SplitCollective {
 public:
  SplitCollective(const SplitCollective&) = delete;
  SplitCollective& operator=(const SplitCollective&) = delete;
  ~SplitCollective();  // gives its buffers back to the pool (common/buffer_pool.h)

  // MPI's request of the started collective.
  MPI_Request* request() { return &request_; }
  // True while another exchange follows the one of request() (start_allreduce_two_stage).
  bool has_next() const { return static_cast<bool>(next_); }
  // After request() has completed, when has_next(): the local work between the exchanges, then
  // the next exchange started under request(). Throws CorruptStream.
  void next();
  // After request() has completed, when !has_next(): decodes into the output. Throws
  // CorruptStream.
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
  friend std::unique_ptr<SplitCollective> start_allreduce_two_stage(MPI_Comm, MPI_Comm,
                                                                    const float*, float*, size_t,
                                                                    const CodecConfig&,
                                                                    const Feedback*);
  SplitCollective() = default;

  MPI_Request request_ = MPI_REQUEST_NULL;
  size_t slot_ = 0;
  std::vector<std::byte> sent_, received_;
  // This rank's own contribution, decoded or exact, when finish() needs it.
  std::vector<float> own_;
  std::function<void(SplitCollective&)> next_, decode_;
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

// True when the two-stage allreduce of `count` float32 values at `size` ranks makes each rank
// receive fewer bytes than MPI's allreduce (a slot of chunk 0, the largest, is smaller than the
// chunk), and its slots fit MPI's int counts.
bool two_stage_pays(const CodecConfig& codec, size_t count, int size);

// count: elements of the whole tensor (allreduce, broadcast), of each rank's block (allgather,
// alltoall), of each rank's chunk of the result (reduce_scatter: send holds size chunks). send
// may overlap recv (the input is compressed, and the own block copied, before start returns).
// feedback: error feedback (allreduce, reduce_scatter), or null.
std::unique_ptr<SplitCollective> start_allreduce(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec,
                                                 const Feedback* feedback = nullptr);
// The two-stage allreduce: the first exchange on `first`, the second (started by next()) on
// `second`, a communicator of the same group on which no other collective may start between
// this call and next() (MPI matches collectives by order per communicator). feedback (with its
// server residual): ef2+CODEC's step.
std::unique_ptr<SplitCollective> start_allreduce_two_stage(MPI_Comm first, MPI_Comm second,
                                                           const float* send, float* recv,
                                                           size_t count, const CodecConfig& codec,
                                                           const Feedback* feedback = nullptr);
std::unique_ptr<SplitCollective> start_broadcast(MPI_Comm comm, float* data, size_t count, int root,
                                                 const CodecConfig& codec);
std::unique_ptr<SplitCollective> start_allgather(MPI_Comm comm, const float* send, float* recv,
                                                 size_t count, const CodecConfig& codec);
std::unique_ptr<SplitCollective> start_alltoall(MPI_Comm comm, const float* send, float* recv,
                                                size_t count, const CodecConfig& codec);
// The reduce-scatter adds its own chunk exactly without feedback; with feedback it compresses
// that chunk too (for its residual) and adds the decoding: the blocking reduce-scatter of ef+ and
// ef2+ (grad_reduce_scatter), bit for bit.
std::unique_ptr<SplitCollective> start_reduce_scatter(MPI_Comm comm, const float* send, float* recv,
                                                      size_t count, const CodecConfig& codec,
                                                      const Feedback* feedback = nullptr);

}  // namespace hycc::coll
