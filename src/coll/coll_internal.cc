#include "coll/coll_internal.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <utility>

#include "codec/float_io.h"
#include "common/synthetic_data.h"
#include "common/xxh3.h"

namespace hycc::coll {
namespace {

// Largest piece of a raw transfer, in elements.
constexpr size_t kRawPieceElems = size_t{1} << 30;
// Elements converted per step by the float32 helpers (a 4 KiB stack buffer).
constexpr size_t kStripElems = 1024;

int64_t tag_upper_bound(MPI_Comm comm) {
  void* attr = nullptr;
  int flag = 0;
  HYCC_CHECK_MPI(MPI_Comm_get_attr(comm, MPI_TAG_UB, &attr, &flag));
  return flag ? *static_cast<int*>(attr) : 32767;  // 32767: the least MPI guarantees
}

// Largest user tag: base + 8 * tag + 7 must stay <= MPI_TAG_UB.
int64_t max_user_tag(MPI_Comm comm) {
  const int64_t ub = tag_upper_bound(comm);
  return (ub - (ub / 2 + 1) - 7) / 8;
}

bool algorithm_applies(OpKind op, Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
    case Algorithm::kNative:  // for send: uncompressed
      return true;
    case Algorithm::kRing:
      return op == OpKind::kAllreduce || op == OpKind::kReduceScatter || op == OpKind::kAllgather;
    case Algorithm::kRecursiveDoubling:
    case Algorithm::kCompressOnce:
      return op == OpKind::kAllreduce;
    case Algorithm::kChain:
      return op == OpKind::kBroadcast;
    case Algorithm::kPairwise:
      return op == OpKind::kAlltoall;
  }
  return false;
}

}  // namespace

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::kAllreduce:
      return "allreduce";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllgather:
      return "allgather";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kAlltoall:
      return "alltoall";
    case OpKind::kSendRecv:
      return "send/recv";
    case OpKind::kSendRecvDevice:
      return "send_device/recv_device";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kNative:
      return "native";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case Algorithm::kCompressOnce:
      return "compress_once";
    case Algorithm::kChain:
      return "chain";
    case Algorithm::kPairwise:
      return "pairwise";
  }
  return "?";
}

int internal_tag(MPI_Comm comm, int user_tag, OpKind op) {
  const int64_t ub = tag_upper_bound(comm);
  if (user_tag < 0 || user_tag > max_user_tag(comm)) {
    throw InvalidArgument(tagged("coll", "tag ", user_tag, " out of range [0, ", max_user_tag(comm),
                                 "] (hycc uses the upper half of MPI_TAG_UB ", ub, ")"));
  }
  return static_cast<int>(ub / 2 + 1 + 8 * int64_t{user_tag} + static_cast<int64_t>(op));
}

int reserved_tag(MPI_Comm comm) { return static_cast<int>(tag_upper_bound(comm) / 2 + 1); }

std::vector<TensorView> chunk_views(TensorView v, int size) {
  std::vector<TensorView> views(static_cast<size_t>(size));
  for (int j = 0; j < size; ++j) {
    const ChunkRange c = chunk_range(v.count, size, j);
    views[static_cast<size_t>(j)] = slice(v, c.offset, c.count);
  }
  return views;
}

std::vector<TensorView> block_views(TensorView v, int size, size_t per) {
  std::vector<TensorView> views(static_cast<size_t>(size));
  for (int j = 0; j < size; ++j) views[static_cast<size_t>(j)] = slice(v, size_t(j) * per, per);
  return views;
}

// ---- ArgCheck -----------------------------------------------------------------------------------

void ArgCheck::fail(std::string message) {
  if (problem_.empty()) problem_ = std::move(message);
}

void ArgCheck::run(const Communicator& comm, bool agree) const {
  if (comm.size() > 1 && agree) {
    const size_t m = fields_;
    std::vector<int64_t> buf(2 * m + 1);
    for (size_t i = 0; i < m; ++i) {
      buf[i] = values_[i];
      buf[m + i] = -values_[i];
    }
    buf[2 * m] = ok() ? std::numeric_limits<int64_t>::max() : comm.rank();
    HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()),
                                 MPI_INT64_T, MPI_MIN, comm.mpi()));
    if (!ok()) throw InvalidArgument(problem_);
    if (buf[2 * m] != std::numeric_limits<int64_t>::max()) {
      throw CommError(tagged("coll", op_name(op_), ": rank ", buf[2 * m],
                             " passed invalid arguments (it throws InvalidArgument); ",
                             "nothing was sent"));
    }
    std::string diffs;
    for (size_t i = 0; i < m; ++i) {
      const int64_t lo = buf[i], hi = -buf[m + i];
      if (lo == hi) continue;
      diffs += detail::concat(diffs.empty() ? "" : "; ", names_[i], " (this rank ", values_[i],
                              ", min ", lo, ", max ", hi, ")");
    }
    if (!diffs.empty()) {
      throw CommError(tagged("coll", "ranks disagree on the arguments of ", op_name(op_), ": ",
                             diffs, "; nothing was sent"));
    }
  }
  if (!ok()) throw InvalidArgument(problem_);
}

void check_options(ArgCheck& check, const Communicator& comm, OpKind op,
                   const CollectiveOptions& options) {
  if (options.segment_bytes == 0 || options.segment_bytes > kMaxSegmentBytes) {
    check.fail(tagged("coll", "segment_bytes ", options.segment_bytes, " out of range [1, ",
                      kMaxSegmentBytes, "]"));
  }
  // Tag 0 is always valid (MPI guarantees MPI_TAG_UB >= 32767); others need the attribute.
  if (options.tag != 0 && (options.tag < 0 || options.tag > max_user_tag(comm.mpi()))) {
    check.fail(tagged("coll", "options.tag ", options.tag, " out of range [0, ",
                      max_user_tag(comm.mpi()), "]"));
  }
  if (!algorithm_applies(op, options.algorithm)) {
    check.fail(tagged("coll", "algorithm ", algorithm_name(options.algorithm),
                      " does not apply to ", op_name(op)));
  }
  check_argument_check(check, options.check_arguments);
}

void check_argument_check(ArgCheck& check, ArgumentCheck value) {
  if (value != ArgumentCheck::kAuto && value != ArgumentCheck::kAlways &&
      value != ArgumentCheck::kNever) {
    check.fail(tagged("coll", "invalid check_arguments ", static_cast<int>(value)));
  }
}

void add_signature_fields(ArgCheck& check, size_t count, DType dtype, const CodecConfig& codec) {
  const std::string& spec = codec.spec();
  check.field("count", static_cast<int64_t>(count));
  check.field("dtype", static_cast<int64_t>(dtype));
  check.field("codec id", static_cast<int64_t>(codec.id()));
  check.field("codec spec hash", static_cast<int64_t>(xxh3(spec.data(), spec.size())));
}

void add_common_fields(ArgCheck& check, size_t count, DType dtype, const CollectiveOptions& options,
                       bool agree) {
  if (!agree) return;
  add_signature_fields(check, count, dtype, options.codec);
  check.field("algorithm", static_cast<int64_t>(options.algorithm));
  check.field("threshold_bytes", static_cast<int64_t>(options.threshold_bytes));
  check.field("segment_bytes", static_cast<int64_t>(options.segment_bytes));
  check.field("tag", options.tag);
}

int mpi_count(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw InvalidArgument(tagged("coll", what, ": ", n, " exceeds the MPI count limit ", INT_MAX));
  }
  return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType dtype) { return dtype == DType::kF32 ? MPI_FLOAT : MPI_UINT16_T; }

// ---- views and float32 ------------------------------------------------------------------------

void copy_view(ConstTensorView from, TensorView to) {
  if (from.data != to.data && from.count != 0) std::memmove(to.data, from.data, from.bytes());
}

void add_f32(float* acc, ConstTensorView in, size_t begin, size_t n) {
  if (in.dtype == DType::kF32) {
    const float* x = static_cast<const float*>(in.data) + begin;
    for (size_t i = 0; i < n; ++i) acc[i] += x[i];
    return;
  }
  float strip[kStripElems];
  for (size_t i = 0; i < n; i += kStripElems) {
    const size_t m = std::min(kStripElems, n - i);
    codec::load_as_float(in, begin + i, m, strip);
    for (size_t j = 0; j < m; ++j) acc[i + j] += strip[j];
  }
}

void store_result(const float* acc, size_t n, ReduceOp op, int size, TensorView out, size_t begin) {
  if (op == ReduceOp::kSum) {
    codec::store_from_float(acc, n, out, begin);
    return;
  }
  const float p = static_cast<float>(size);
  float strip[kStripElems];
  for (size_t i = 0; i < n; i += kStripElems) {
    const size_t m = std::min(kStripElems, n - i);
    for (size_t j = 0; j < m; ++j) strip[j] = acc[i + j] / p;
    codec::store_from_float(strip, m, out, begin + i);
  }
}

// ---- segmentation ------------------------------------------------------------------------------

uint64_t stream_seed(uint64_t seed, int rank, uint64_t phase, uint64_t segment) {
  return splitmix64(splitmix64(splitmix64(seed ^ static_cast<uint64_t>(rank)) ^ phase) ^ segment);
}

// ---- streams -----------------------------------------------------------------------------------

void decode_peer_stream(std::span<const std::byte> stream, TensorView out) {
  try {
    decompress(stream, out);
  } catch (const InvalidArgument& e) {  // a well-formed stream of another shape
    throw CorruptStream(tagged("coll", "a peer's stream does not match the expected ", out.count,
                               " ", dtype_name(out.dtype), " elements: ", e.what()));
  }
}

size_t compress_into(Context& ctx, ConstTensorView in, std::vector<std::byte>& out, uint64_t seed) {
  const CodecClock clock(ctx);
  const size_t bound = max_compressed_bytes(ctx.codec, in);
  if (out.size() < bound) out.resize(bound);
  return compress(ctx.codec, in, out, CompressOptions{seed});
}

void decode_stream(Context& ctx, std::span<const std::byte> stream, TensorView out) {
  const CodecClock clock(ctx);
  decode_peer_stream(stream, out);
}

void decode_stream_f32(Context& ctx, std::span<const std::byte> stream, DType dtype, size_t n,
                       float* out) {
  const CodecClock clock(ctx);
  if (dtype == DType::kF32) {
    decode_peer_stream(stream, {DType::kF32, n, out});
    return;
  }
  std::vector<uint16_t> narrow(n);
  decode_peer_stream(stream, {dtype, n, narrow.data()});
  codec::load_as_float({dtype, n, narrow.data()}, 0, n, out);
}

void adopt_own_stream(Context& ctx, std::span<const std::byte> stream, ConstTensorView in,
                      TensorView out) {
  const CodecClock clock(ctx);
  if (ctx.codec.lossless()) {
    copy_view(in, out);
  } else {
    decompress(stream, out);
  }
}

void report(const CollectiveOptions& options, const Counters* counters, Algorithm ran,
            size_t message_bytes, std::chrono::steady_clock::time_point start,
            const CodecConfig* codec) {
  if (options.stats == nullptr) return;
  CollectiveStats& s = *options.stats;
  s = CollectiveStats{};
  s.algorithm = ran;
  s.message_bytes = message_bytes;
  if (ran == Algorithm::kNative) {
    s.raw_bytes = s.wire_bytes = message_bytes;
  } else if (counters != nullptr) {
    s.raw_bytes = counters->raw_bytes;
    s.wire_bytes = counters->wire_bytes;
    s.streams = counters->streams;
    s.codec_seconds = counters->codec_seconds;
    s.compressed =
        counters->streams > 0 && (codec != nullptr ? *codec : options.codec).id() != CodecId::kNone;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void count_sent_stream(Context& ctx, std::span<const std::byte> stream) {
  ctx.counters.wire_bytes += stream.size();
  ++ctx.counters.streams;
  // Header: dtype at byte 5, element count (u64, little-endian) at byte 8 (codec/stream.h).
  if (stream.size() < 16 || !is_valid_dtype(static_cast<uint8_t>(stream[5]))) return;
  uint64_t count = 0;
  for (int i = 7; i >= 0; --i) count = (count << 8) | static_cast<uint8_t>(stream[8 + i]);
  ctx.counters.raw_bytes += count * dtype_size(static_cast<DType>(stream[5]));
}

// ---- the pipelined exchange --------------------------------------------------------------------

void exchange(Context& ctx, int dest, size_t nsend,
              const std::function<std::span<const std::byte>(size_t)>& produce, int source,
              size_t nrecv, const std::function<size_t(size_t)>& capacity,
              const std::function<void(size_t)>& consume, std::vector<std::vector<std::byte>>& in) {
  in.resize(std::max(in.size(), nrecv));
  std::vector<MPI_Request> recvs(nrecv, MPI_REQUEST_NULL), sends(nsend, MPI_REQUEST_NULL);
  for (size_t k = 0; k < nrecv; ++k) {
    in[k].resize(capacity(k));
    HYCC_CHECK_MPI(MPI_Irecv(in[k].data(), mpi_count(in[k].size(), "segment bytes"), MPI_BYTE,
                             source, ctx.tag, ctx.comm, &recvs[k]));
  }
  size_t next = 0;  // the next stream to consume; streams are consumed in order
  const auto finish = [&](const MPI_Status& status) {
    int bytes = 0;
    HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
    in[next].resize(static_cast<size_t>(bytes));
    try {
      consume(next);
    } catch (const Error&) {
      ctx.errors.capture();
    }
    ++next;
  };
  for (size_t k = 0; k < nsend; ++k) {
    const std::span<const std::byte> out = produce(k);
    count_sent_stream(ctx, out);
    HYCC_CHECK_MPI(MPI_Isend(out.data(), mpi_count(out.size(), "segment bytes"), MPI_BYTE, dest,
                             ctx.tag, ctx.comm, &sends[k]));
    while (next < nrecv) {  // decode what has arrived before compressing the next segment
      int done = 0;
      MPI_Status status;
      HYCC_CHECK_MPI(MPI_Test(&recvs[next], &done, &status));
      if (!done) break;
      finish(status);
    }
  }
  while (next < nrecv) {
    MPI_Status status;
    HYCC_CHECK_MPI(MPI_Wait(&recvs[next], &status));
    finish(status);
  }
  if (nsend != 0) {
    HYCC_CHECK_MPI(MPI_Waitall(static_cast<int>(nsend), sends.data(), MPI_STATUSES_IGNORE));
  }
}

void send_raw(Context& ctx, ConstTensorView v, int dest) {
  ctx.counters.raw_bytes += v.bytes();
  ctx.counters.wire_bytes += v.bytes();
  for (size_t off = 0; off < v.count; off += kRawPieceElems) {
    const ConstTensorView piece = slice(v, off, std::min(kRawPieceElems, v.count - off));
    HYCC_CHECK_MPI(MPI_Send(piece.data, static_cast<int>(piece.count), mpi_type(v.dtype), dest,
                            ctx.tag, ctx.comm));
  }
}

void recv_raw(const Context& ctx, TensorView v, int source) {
  for (size_t off = 0; off < v.count; off += kRawPieceElems) {
    const TensorView piece = slice(v, off, std::min(kRawPieceElems, v.count - off));
    HYCC_CHECK_MPI(MPI_Recv(piece.data, static_cast<int>(piece.count), mpi_type(v.dtype), source,
                            ctx.tag, ctx.comm, MPI_STATUS_IGNORE));
  }
}

void check_same_dtype(ArgCheck& check, const char* op, ConstTensorView send, ConstTensorView recv) {
  if (check.ok() && send.dtype != recv.dtype) {
    check.fail(tagged("coll", op, ": send dtype ", dtype_name(send.dtype), " differs from recv ",
                      dtype_name(recv.dtype)));
  }
}

void check_reduce_op(ArgCheck& check, ReduceOp op) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    check.fail(tagged("coll", "invalid reduce op ", static_cast<int>(op)));
  }
  check.field("reduce op", static_cast<int64_t>(op));
}

}  // namespace hycc::coll
