// Internals shared by the collective algorithms: argument checks and the cross-rank agreement,
// internal tags, segmentation, float32 accumulation, stream helpers, and the pipelined exchange
// of segmented compressed streams with one peer.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "codec/float_io.h"
#include "comm/call_check.h"
#include "comm/tags.h"
#include "comm/transport.h"
#include "device/device_ops.h"
#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/error.h"

namespace hycc::coll {

// ---- argument checks ----------------------------------------------------------------------------

// The checks, tags and MPI helpers of the layer below (comm/call_check.h, comm/tags.h).
using comm::add_signature_fields;
using comm::algorithm_name;
using comm::ArgCheck;
using comm::check_argument_check;
using comm::check_options;
using comm::check_reduce_op;
using comm::check_same_dtype;
using comm::check_view;
using comm::internal_tag;
using comm::kMaxSegmentBytes;
using comm::max_user_tag;
using comm::mpi_count;
using comm::mpi_type;
using comm::overlaps;
using comm::reserved_tag;

// Whether the ranks run the cross-rank agreement before a call that goes to native MPI
// (`native`) or to one of hycc's algorithms.
bool agree_on_arguments(const AlgorithmOptions& options, bool native);
// Adds the signature fields every collective shares: count, dtype, codec, algorithm, threshold,
// segment size, tag. Nothing (not even the codec spec string) without `agree`.
void add_common_fields(ArgCheck& check, size_t count, DType dtype, const AlgorithmOptions& options,
                       bool agree);
// ---- views and float32 ------------------------------------------------------------------------

inline ConstTensorView slice(ConstTensorView v, size_t offset, size_t count) {
  return {v.dtype, count, static_cast<const std::byte*>(v.data) + offset * dtype_size(v.dtype)};
}
inline TensorView slice(TensorView v, size_t offset, size_t count) {
  return {v.dtype, count, static_cast<std::byte*>(v.data) + offset * dtype_size(v.dtype)};
}
// The `size` chunks of `v` (chunk_range(v.count, size, j)), as the reductions split a tensor.
std::vector<TensorView> chunk_views(TensorView v, int size);
// `size` consecutive blocks of `per` elements of `v`, as allgather lays out its result.
std::vector<TensorView> block_views(TensorView v, int size, size_t per);
// Copies elements (same dtype and count); nothing if the views are the same memory.
void copy_view(ConstTensorView from, TensorView to);

// float32 accumulation and rounding (codec/float_io.h).
using codec::add_f32;
using codec::store_result;

// ---- segmentation ------------------------------------------------------------------------------

// Elements per segment for options.segment_bytes of `dtype` (see CollectiveOptions).
size_t segment_elems(size_t segment_bytes, DType dtype);

// A range of `total` elements cut into pieces of `per` elements (the last one shorter).
struct Segments {
  size_t total = 0;
  size_t per = 1;
  size_t count() const { return (total + per - 1) / per; }
  ChunkRange operator[](size_t k) const {
    const size_t off = k * per;
    return {off, total - off < per ? total - off : per};
  }
};

// The seed of one stream: different per rank, phase and segment, so that stochastic rounding
// errors of different streams are independent.
uint64_t stream_seed(uint64_t seed, int rank, uint64_t phase, uint64_t segment);

// ---- streams -----------------------------------------------------------------------------------

// The first error a rank meets while decoding what peers sent. It is kept and rethrown once the
// operation's message pattern has completed, so that no peer is left waiting.
class DeferredError {
 public:
  void capture() {
    if (!first_) first_ = std::current_exception();
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::exception_ptr first_;
};

// The helpers below take the call's Context, whose counters (codec time, bytes sent) feed
// CollectiveOptions::stats.
struct Context;

// Compresses `in` with ctx.codec into `out` (grown to max_compressed_bytes() if smaller, never
// shrunk); returns the stream size in bytes.
size_t compress_into(Context& ctx, ConstTensorView in, std::vector<std::byte>& out, uint64_t seed);
// The same into a host payload (grown, from the host operations, if it cannot hold the bound);
// sets out.size and out.raw_bytes.
size_t compress_into(Context& ctx, ConstTensorView in, ::hycc::device::Payload& out, uint64_t seed);
// Decodes a stream received from a peer into `out`. Throws CorruptStream if it is malformed or
// does not hold exactly out's dtype and count.
void decode_stream(Context& ctx, std::span<const std::byte> stream, TensorView out);
// Decodes a peer's stream of `n` elements of `dtype` into floats (exact widening).
void decode_stream_f32(Context& ctx, std::span<const std::byte> stream, DType dtype, size_t n,
                       float* out);
// Sets `out` to what the peers decode from a stream this rank sent of `in`: a copy when the
// codec is lossless, otherwise the decoded stream. `in` and `out` may be the same memory.
void adopt_own_stream(Context& ctx, std::span<const std::byte> stream, ConstTensorView in,
                      TensorView out);

// ---- the state of one call ---------------------------------------------------------------------

// What a call did on this rank so far.
struct Counters {
  size_t raw_bytes = 0;   // uncompressed bytes of the streams sent (from their headers)
  size_t wire_bytes = 0;  // bytes sent
  size_t streams = 0;
  double codec_seconds = 0;
  size_t intra_bytes = 0;  // two-level calls: handed to the native calls inside the node
};

struct Context {
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL on a group that is not MPI's
  comm::Group* group = nullptr;   // that group (comm/group.h); null on MPI
  int rank = 0;
  int size = 1;
  int tag = 0;               // the internal tag of this operation
  const CodecConfig& codec;  // the caller's options outlive the call
  size_t seg_elems = 1;      // elements per segment
  uint64_t seed = 0;
  DeferredError errors;
  Counters counters;
};

// Adds the time from its construction to its destruction to a call's codec time (of a host
// Context or a device one: anything with Counters `counters`).
class CodecClock {
 public:
  template <typename CallContext>
  explicit CodecClock(CallContext& ctx)
      : counters_(ctx.counters), start_(std::chrono::steady_clock::now()) {}
  ~CodecClock() {
    counters_.codec_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  CodecClock(const CodecClock&) = delete;
  CodecClock& operator=(const CodecClock&) = delete;

 private:
  Counters& counters_;
  std::chrono::steady_clock::time_point start_;
};

// The start time of a call when options.stats is set (nothing is timed otherwise).
inline std::chrono::steady_clock::time_point stats_clock(const CommonOptions& options) {
  return options.stats != nullptr ? std::chrono::steady_clock::now()
                                  : std::chrono::steady_clock::time_point{};
}
// Fills *options.stats (if set) at the end of a call that started at `start`; `counters` may be
// null for a call with nothing to do. The call is compressed when it sent streams of a codec
// other than none: `codec`, the one it ran with (null: options.codec).
void report(const AlgorithmOptions& options, const Counters* counters, Algorithm ran,
            size_t message_bytes, std::chrono::steady_clock::time_point start,
            const CodecConfig* codec = nullptr);
// topology_fallback: Algorithm::kTwoLevel was asked for and `ran` is the flat form instead.
inline void report(const Context& ctx, const AlgorithmOptions& options, Algorithm ran,
                   size_t message_bytes, std::chrono::steady_clock::time_point start,
                   bool topology_fallback = false) {
  report(options, &ctx.counters, ran, message_bytes, start, &ctx.codec);
  if (options.stats != nullptr) options.stats->topology_fallback = topology_fallback;
}

// Counts a stream this rank is about to send.
void count_sent_stream(Context& ctx, std::span<const std::byte> stream);

// The transport on host memory of a call (comm/transport.h): MPI on ctx.comm, or the group's.
std::unique_ptr<comm::Transport> host_transport(const Context& ctx, ::hycc::device::DeviceOps& ops);

// ---- the pipelined exchange --------------------------------------------------------------------

// Sends `nsend` streams to `dest` and receives `nrecv` from `source` (same tag; either side may
// be empty), over the MPI transport on host memory (comm/transport.h). Receives are announced
// first, of capacity(k) bytes each. produce(k) returns outgoing stream k (compressing it then, so
// that compressing segment k+1 overlaps the transfer of segment k); it must stay valid until
// exchange returns. As each stream arrives it is in in[k] (bytes [0, size)) and consume(k) runs
// (decoding overlaps the remaining transfers); an exception from consume is captured in
// ctx.errors and the exchange goes on.
void exchange(Context& ctx, int dest, size_t nsend,
              const std::function<std::span<const std::byte>(size_t)>& produce, int source,
              size_t nrecv, const std::function<size_t(size_t)>& capacity,
              const std::function<void(size_t)>& consume, std::vector<::hycc::device::Payload>& in);

// Blocking uncompressed transfer of a view (split into pieces of at most 2^30 elements).
void send_raw(Context& ctx, ConstTensorView v, int dest);
void recv_raw(const Context& ctx, TensorView v, int source);

inline bool agree_on_arguments(const AlgorithmOptions& options, bool native) {
  switch (options.check_arguments) {
    case ArgumentCheck::kAuto:
      return !native;
    case ArgumentCheck::kAlways:
      return true;
    case ArgumentCheck::kNever:
      return false;
  }
  return true;  // an invalid value: check_options reports it, after the agreement
}

inline size_t segment_elems(size_t segment_bytes, DType dtype) {
  size_t e = segment_bytes / dtype_size(dtype);
  // Whole codec blocks (quant 64, zfp 4, eb 64, mpc 32 words) per segment for large segments.
  if (e >= 512) e -= e % 256;
  return std::max<size_t>(e, 1);
}

}  // namespace hycc::coll
