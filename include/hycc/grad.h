// Stateful gradient compressors for the data-parallel gradient allreduce (and the ZeRO gradient
// reduce-scatter), with error feedback. docs/gradients.md describes each compressor, its state,
// its bytes per step, where the residual is taken and the save/load format.
//
// Lifecycle: construct a GradCompressor from a spec string, call grad_allreduce() once per step
// for every gradient tensor (or bucket), identified by a stable key; reset() drops the state;
// save() and load() move the state (residuals, warm-start matrices, step counters) through a
// checksummed byte blob, so that a resumed run continues with bit-identical results.
//
// Specs, in the family of the codec specs:
//   none                                   plain allreduce, no state
//   ef+CODEC            e.g. ef+quant:bits=4, ef+zfp:rate=4, ef+quant:bits=2
//                                          error feedback around any codec (compress once,
//                                          allgather the streams, sum locally)
//   ef2+CODEC           e.g. ef2+quant:bits=6
//                                          the same in two stages: chunks compressed and
//                                          alltoall'ed, summed by their server rank,
//                                          recompressed and allgathered; worker and server
//                                          residuals; 2 (p-1)/p of the stream on the wire
//   powersgd:rank=4,min_compression=2,warm_start=on,ef=on,seed=0,start=0,flat=square
//                                          low-rank P Q^T through plain allreduces
//   topk:ratio=0.01,ef=on  or  topk:count=1000,ef=on
//                                          largest magnitudes, (index, value) pairs allgathered
//   sign:ef=on                             1 bit per value + a scale (mean |x|), worker and
//                                          server residuals (two-stage compressed allreduce)
// Bad specs throw InvalidArgument naming the spec and what is accepted.
//
// Every rank holds bit-identical results after each call. All ranks of the communicator must
// call with the same keys, shapes, dtypes and options, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/dtype.h"

namespace hycc {

namespace grad {
class Engine;
struct EngineAccess;
}  // namespace grad

// One gradient tensor (or bucket): a stable key and its shape. PowerSGD views it as a matrix of
// shape[0] rows and product(shape[1..]) columns; a shape of one dimension is a vector (sent
// uncompressed). A tensor without shape or pieces is a flat buffer of unknown layout: PowerSGD
// views it as its most square matrix (flat=square, the default) or sends it uncompressed
// (flat=plain).
//
// A bucket of several tensors laid end to end (a DDP bucket, a slice of a flat gradient buffer)
// gives the shape of each in `pieces` instead, in order; their elements add up to the bucket's.
// PowerSGD then compresses each matrix of the bucket on its own, with one allreduce for the P
// factors of all of them and one for their Q factors together with the pieces it leaves
// uncompressed (vectors, small matrices). The other compressors see the flat bucket. Give shape
// or pieces, not both; a piece has at least one dimension.
struct GradTensor {
  GradTensor() = default;
  GradTensor(uint64_t tensor_key, std::vector<size_t> tensor_shape = {})
      : key(tensor_key), shape(std::move(tensor_shape)) {}
  // A bucket of tensors of these shapes.
  static GradTensor bucket(uint64_t tensor_key, std::vector<std::vector<size_t>> shapes) {
    GradTensor t(tensor_key);
    t.pieces = std::move(shapes);
    return t;
  }

  uint64_t key = 0;
  std::vector<size_t> shape;
  std::vector<std::vector<size_t>> pieces;
};

struct GradOptions {
  ReduceOp op = ReduceOp::kAverage;
  // Tag of the hycc collectives the compressor calls (see CollectiveOptions::tag).
  int tag = 0;
  // The cross-rank agreement on the call's arguments (count, dtype, layout, spec, op, tag: one
  // small MPI_Allreduce before the step). kAuto and kAlways run it (a compressor's step is
  // always hycc's own exchange); kNever runs the local checks only: ranks that disagree may
  // hang or exchange streams sized for another tensor. The policy collectives pass
  // CollectiveOptions::check_arguments on.
  ArgumentCheck check_arguments = ArgumentCheck::kAuto;
};

// What one call did, on this rank.
struct GradStepStats {
  size_t elements = 0;
  // Bytes of this rank's compressed gradient (for sign: its p encoded chunks; for none and the
  // PowerSGD fallback: the uncompressed tensor).
  size_t payload_bytes = 0;
  // Bytes this rank puts on the wire for the step, from the pattern of the collectives used
  // (e.g. (p - 1) x payload for an allgather). 0 with one rank.
  size_t wire_bytes = 0;
  // False when the tensor went through a plain uncompressed allreduce (spec none, or PowerSGD's
  // fallback for 1-D, small or badly compressing tensors).
  bool compressed = false;
  double compress_seconds = 0;  // local work: encode, decode, residual update, reduction
  double comm_seconds = 0;      // inside hycc collectives
};

class GradCompressor {
 public:
  // Throws InvalidArgument for a bad spec.
  explicit GradCompressor(std::string_view spec);
  ~GradCompressor();
  GradCompressor(GradCompressor&&) noexcept;
  GradCompressor& operator=(GradCompressor&&) noexcept;

  // Canonical spec: every parameter spelled out; parsing it again gives the same compressor.
  const std::string& spec() const;

  // Drops the state of every tensor, or of one key.
  void reset();
  void reset(uint64_t key);
  // Number of tensors with state.
  size_t tensors() const;
  // Bytes the states hold on this rank: residuals, server residuals, PowerSGD's Q (between
  // steps: a running step may be resizing its state).
  size_t state_bytes() const;

  // The whole state as a blob: a header (magic, version, spec), one entry per key (step count,
  // rank and size of the communicator, residuals, warm-start matrix) and a checksum.
  std::vector<std::byte> save() const;
  // Replaces the state by a saved one. Throws CorruptStream for a malformed blob and
  // InvalidArgument if it was saved by a compressor of another spec.
  void load(std::span<const std::byte> blob);

  // The error-feedback residual of a key (a copy; empty if none), for inspection and tests.
  std::vector<float> residual(uint64_t key) const;

 private:
  friend GradStepStats grad_allreduce(const Communicator&, GradCompressor&, const GradTensor&,
                                      TensorView, const GradOptions&);
  friend GradStepStats grad_reduce_scatter(const Communicator&, GradCompressor&, const GradTensor&,
                                           ConstTensorView, TensorView, const GradOptions&);
  friend struct grad::EngineAccess;  // the library's own callers of the engine (grad/engine.h)
  std::unique_ptr<grad::Engine> engine_;
};

// The DP gradient allreduce: grad (in place, any dtype) becomes the compressed sum or average of
// every rank's grad, bit-identical on all ranks; the compressor's state for tensor.key is updated.
// Every rank passes the same count, dtype, layout (shape or pieces), compressor spec, op and tag
// (the key may differ): one small MPI_Allreduce before the step checks it, and ranks that differ
// all throw CommError naming the arguments (a rank with a local error throws InvalidArgument,
// the others CommError); nothing of the step is sent then. A peer's message that is malformed
// or sized for another tensor is CorruptStream.
GradStepStats grad_allreduce(const Communicator& comm, GradCompressor& compressor,
                             const GradTensor& tensor, TensorView grad,
                             const GradOptions& options = {});

// The ZeRO gradient reduce-scatter: shard = this rank's chunk (chunk_range(grad.count, size,
// rank)) of the compressed reduction. ef+CODEC, ef2+CODEC and sign send each chunk to its owner
// only ((p - 1) / p of the compressed tensor per rank; the owner's sum of the decoded chunks),
// none runs the plain reduce-scatter; powersgd and topk run their allreduce and keep the chunk
// (docs/gradients.md, "ZeRO reduce-scatter").
// grad and shard must not overlap; same dtype.
GradStepStats grad_reduce_scatter(const Communicator& comm, GradCompressor& compressor,
                                  const GradTensor& tensor, ConstTensorView grad, TensorView shard,
                                  const GradOptions& options = {});

// Names of the compressors with their parameters, one per line.
std::string grad_help();

}  // namespace hycc
