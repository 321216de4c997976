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

#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/error.h"

namespace hycc::coll {

// Largest segment (uncompressed bytes): keeps every compressed segment below INT_MAX bytes.
inline constexpr size_t kMaxSegmentBytes = size_t{1} << 30;

// The operations; each has its own internal tag slot and a value in the argument signature.
enum class OpKind : uint8_t {
  kAllreduce = 1,
  kReduceScatter = 2,
  kAllgather = 3,
  kBroadcast = 4,
  kAlltoall = 5,
  kSendRecv = 6,
  kSendRecvDevice = 7,  // send_device/recv_device (hycc/collectives_device.h)
};
const char* op_name(OpKind op);
const char* algorithm_name(Algorithm a);

// ---- tags -------------------------------------------------------------------------------------

// hycc's tag for `op` with user tag `user_tag`: base + 8 * user_tag + op, where base is just above
// MPI_TAG_UB / 2. Throws InvalidArgument if user_tag is negative or the result exceeds MPI_TAG_UB.
int internal_tag(MPI_Comm comm, int user_tag, OpKind op);
// base + 0: a tag of hycc's that no operation uses (the NCCL stand-in's, nccl_link.h).
int reserved_tag(MPI_Comm comm);

// ---- argument checks ----------------------------------------------------------------------------

// Collects the local argument problems of one call, and the signature that all ranks must share.
class ArgCheck {
 public:
  explicit ArgCheck(OpKind op);

  // A value that must be equal on every rank (masked to 62 bits, so that negation cannot
  // overflow).
  void field(const char* name, int64_t value);
  // Records a local problem; the first one becomes this rank's InvalidArgument.
  void fail(std::string message);
  bool ok() const { return problem_.empty(); }

  // Throws InvalidArgument on a rank with a local problem. With more than one rank and `agree`,
  // first runs the agreement: one MPI_Allreduce(MIN) of 2 * fields + 1 int64 values (each field
  // and its negation, for min and max at once, and the lowest rank with a local problem), so
  // that every rank throws (CommError on the others) instead of leaving peers waiting.
  void run(const Communicator& comm, bool agree) const;

 private:
  OpKind op_;
  static constexpr size_t kMaxFields = 16;
  // Signature values are masked to 62 bits so that negating them (for the max) cannot overflow.
  static constexpr int64_t kFieldMask = (int64_t{1} << 62) - 1;
  std::array<const char*, kMaxFields> names_;  // [0, fields_) are set
  std::array<int64_t, kMaxFields> values_;
  size_t fields_ = 0;
  std::string problem_;
};

// Common local checks of a view: valid dtype, non-null data when count > 0, element alignment.
// `what` and `role` name it in the message ("allreduce", "send"); nothing is formatted unless a
// check fails.
void check_view(ArgCheck& check, const char* what, const char* role, ConstTensorView v);
// send and recv of operation `op` have the same dtype (checked only while the check is ok).
void check_same_dtype(ArgCheck& check, const char* op, ConstTensorView send, ConstTensorView recv);
// A valid reduce op, recorded in the cross-rank signature.
void check_reduce_op(ArgCheck& check, ReduceOp op);
// Fails `check` for a value that is not an ArgumentCheck.
void check_argument_check(ArgCheck& check, ArgumentCheck value);
// Checks options fields that do not depend on the operation (segment size, tag range).
void check_options(ArgCheck& check, const Communicator& comm, OpKind op,
                   const CollectiveOptions& options);
// Whether the ranks run the cross-rank agreement before a call that goes to native MPI
// (`native`) or to one of hycc's algorithms.
bool agree_on_arguments(const CollectiveOptions& options, bool native);
// The fields every call's signature has: count, dtype, codec (id and a hash of its spec).
void add_signature_fields(ArgCheck& check, size_t count, DType dtype, const CodecConfig& codec);
// Adds the signature fields every collective shares: count, dtype, codec, algorithm, threshold,
// segment size, tag. Nothing (not even the codec spec string) without `agree`.
void add_common_fields(ArgCheck& check, size_t count, DType dtype, const CollectiveOptions& options,
                       bool agree);
// True if [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes);

// Counts as int for MPI calls; throws InvalidArgument past INT_MAX.
int mpi_count(size_t n, const char* what);
// The MPI type that moves elements of `dtype` unchanged (MPI_FLOAT or MPI_UINT16_T).
MPI_Datatype mpi_type(DType dtype);

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

// acc[i] += element begin + i of `in` (float32 addition).
void add_f32(float* acc, ConstTensorView in, size_t begin, size_t n);
// Element begin + i of `out` = acc[i] (divided by `size` for an average), rounded once.
void store_result(const float* acc, size_t n, ReduceOp op, int size, TensorView out, size_t begin);

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
// Decodes a stream received from a peer into `out`. Throws CorruptStream if it is malformed or
// does not hold exactly out's dtype and count.
void decode_stream(Context& ctx, std::span<const std::byte> stream, TensorView out);
// The same without a Context (no codec clock): for the gradient compressors' peers' streams.
void decode_peer_stream(std::span<const std::byte> stream, TensorView out);
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
};

struct Context {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int tag = 0;               // the internal tag of this operation
  const CodecConfig& codec;  // the caller's options outlive the call
  size_t seg_elems = 1;      // elements per segment
  uint64_t seed = 0;
  DeferredError errors;
  Counters counters;
};

// Adds the time from its construction to its destruction to ctx's codec time.
class CodecClock {
 public:
  explicit CodecClock(Context& ctx) : ctx_(ctx), start_(std::chrono::steady_clock::now()) {}
  ~CodecClock() {
    ctx_.counters.codec_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  CodecClock(const CodecClock&) = delete;
  CodecClock& operator=(const CodecClock&) = delete;

 private:
  Context& ctx_;
  std::chrono::steady_clock::time_point start_;
};

// The start time of a call when options.stats is set (nothing is timed otherwise).
inline std::chrono::steady_clock::time_point stats_clock(const CollectiveOptions& options) {
  return options.stats != nullptr ? std::chrono::steady_clock::now()
                                  : std::chrono::steady_clock::time_point{};
}
// Fills *options.stats (if set) at the end of a call that started at `start`; `counters` may be
// null for a call with nothing to do. The call is compressed when it sent streams of a codec
// other than none: `codec`, the one it ran with (null: options.codec).
void report(const CollectiveOptions& options, const Counters* counters, Algorithm ran,
            size_t message_bytes, std::chrono::steady_clock::time_point start,
            const CodecConfig* codec = nullptr);
inline void report(const Context& ctx, const CollectiveOptions& options, Algorithm ran,
                   size_t message_bytes, std::chrono::steady_clock::time_point start) {
  report(options, &ctx.counters, ran, message_bytes, start, &ctx.codec);
}

// Counts a stream this rank is about to send.
void count_sent_stream(Context& ctx, std::span<const std::byte> stream);

// ---- the pipelined exchange --------------------------------------------------------------------

// Sends `nsend` streams to `dest` and receives `nrecv` from `source` (same tag; either side may
// be empty). Receives are posted first, into in[k] sized capacity(k) bytes. produce(k) returns
// outgoing stream k (compressing it then, so that compressing segment k+1 overlaps the transfer
// of segment k); it must stay valid until exchange returns. As each stream arrives, in[k] is
// shrunk to its actual size and consume(k) runs (decoding overlaps the remaining transfers);
// an exception from consume is captured in ctx.errors and the exchange goes on.
void exchange(Context& ctx, int dest, size_t nsend,
              const std::function<std::span<const std::byte>(size_t)>& produce, int source,
              size_t nrecv, const std::function<size_t(size_t)>& capacity,
              const std::function<void(size_t)>& consume, std::vector<std::vector<std::byte>>& in);

// Blocking uncompressed transfer of a view (split into pieces of at most 2^30 elements).
void send_raw(Context& ctx, ConstTensorView v, int dest);
void recv_raw(const Context& ctx, TensorView v, int source);

// ---- inline definitions of the per-call checks (they run on every call, also natively)
// -----------

inline ArgCheck::ArgCheck(OpKind op) : op_(op) { field("operation", static_cast<int64_t>(op)); }

inline void ArgCheck::field(const char* name, int64_t value) {
  if (fields_ == kMaxFields) {
    throw InvalidArgument(tagged("coll", "internal: more than ", kMaxFields, " signature fields"));
  }
  names_[fields_] = name;
  values_[fields_] = value & kFieldMask;
  ++fields_;
}

inline void check_view(ArgCheck& check, const char* what, const char* role, ConstTensorView v) {
  if (!is_valid_dtype(static_cast<uint8_t>(v.dtype))) {
    check.fail(tagged("coll", what, " ", role, ": invalid dtype ", static_cast<int>(v.dtype)));
  } else if (v.count != 0 && v.data == nullptr) {
    check.fail(tagged("coll", what, " ", role, ": null data with ", v.count, " elements"));
  } else if (reinterpret_cast<uintptr_t>(v.data) % dtype_size(v.dtype) != 0) {
    check.fail(tagged("coll", what, " ", role, ": data at ", v.data, " is not aligned to its ",
                      dtype_size(v.dtype), "-byte elements"));
  }
}

inline bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

inline bool agree_on_arguments(const CollectiveOptions& options, bool native) {
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
