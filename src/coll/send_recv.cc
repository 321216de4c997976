// Compressed point-to-point transfer with a variable-size receive.
//
// The first message is a 32-byte envelope (magic "HYP1", dtype, element count, segment count,
// elements per segment) followed by the stream of segment 0; each further segment is one stream
// (same tag). The receiver matches the first message with MPI_Mprobe + MPI_Get_count + MPI_Mrecv,
// learns the codec from the stream header, then posts receives for the other segments into
// buffers of max_compressed_bytes() and takes each actual size from its status. The sender
// compresses segment k + 1 while segment k is in flight; the receiver decodes segment k while
// k + 1 arrives. Below the threshold (or with kNative) the streams use codec none.
#include <chrono>
#include <cstring>
#include <vector>

#include "coll/coll_internal.h"
#include "coll/entry.h"

namespace hycc {
namespace {

struct Envelope {
  char magic[4];  // "HYP1": hycc point-to-point, version 1
  uint8_t dtype;
  uint8_t reserved[3];
  uint64_t count;          // elements in the whole message
  uint64_t segments;       // streams that follow, the first one in this message
  uint64_t segment_elems;  // elements per stream (the last one may have fewer)
};
static_assert(sizeof(Envelope) == 32);
constexpr char kMagic[4] = {'H', 'Y', 'P', '1'};

const CodecConfig& uncompressed() {
  static const CodecConfig none = CodecConfig::parse("none");
  return none;
}

// The context of a send with `codec` (the one it compresses with), or of a receive (none: the
// streams name their codecs).
coll::Context p2p_context(const Communicator& comm, int tag,
                          const CodecConfig& codec = uncompressed()) {
  return coll::Context{.comm = comm.mpi(),
                       .rank = comm.rank(),
                       .size = comm.size(),
                       .tag = coll::internal_tag(comm, tag, Operation::kSendRecv),
                       .codec = codec,
                       .seg_elems = 1,
                       .seed = 0,
                       .errors = {},
                       .counters = {}};
}

}  // namespace

void coll::run_send(const Communicator& comm, ConstTensorView data, int dest, int tag,
                    const AlgorithmOptions& options) {
  coll::ArgCheck check(Operation::kSendRecv);
  coll::check_view(check, "send", "data", data);
  if (dest < 0 || dest >= comm.size() || dest == comm.rank()) {
    check.fail(tagged("coll", "send: destination ", dest, " is not another rank of [0, ",
                      comm.size(), ")"));
  }
  coll::check_options(check, comm, Operation::kSendRecv, options);
  check.run(comm, false);
  const bool raw =
      options.algorithm == Algorithm::kNative || data.bytes() < options.threshold_bytes;
  const CodecConfig& codec = raw ? uncompressed() : options.codec;
  coll::Context ctx = p2p_context(comm, tag, codec);
  const auto start = coll::stats_clock(options);
  const coll::Segments segs{data.count, coll::segment_elems(options.segment_bytes, data.dtype)};
  const size_t m = segs.count();

  Envelope env{};
  std::memcpy(env.magic, kMagic, 4);
  env.dtype = static_cast<uint8_t>(data.dtype);
  env.count = data.count;
  env.segments = m;
  env.segment_elems = segs.per;
  std::vector<std::vector<std::byte>> out(m == 0 ? 1 : m);
  std::vector<MPI_Request> sends(out.size(), MPI_REQUEST_NULL);
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t head = k == 0 ? sizeof(Envelope) : 0;  // the envelope rides with segment 0
    size_t bytes = head;
    if (k < m) {
      const ConstTensorView part = coll::slice(data, segs[k].offset, segs[k].count);
      out[k].resize(head + max_compressed_bytes(codec, part));
      const coll::CodecClock clock(ctx);
      bytes += compress(codec, part, std::span<std::byte>(out[k]).subspan(head),
                        CompressOptions{coll::stream_seed(options.seed, ctx.rank, 0, k)});
      ctx.counters.raw_bytes += part.bytes();
      ++ctx.counters.streams;
    } else {
      out[k].resize(head);
    }
    if (k == 0) std::memcpy(out[k].data(), &env, sizeof(Envelope));
    ctx.counters.wire_bytes += bytes;
    HYCC_CHECK_MPI(MPI_Isend(out[k].data(), coll::mpi_count(bytes, "message bytes"), MPI_BYTE, dest,
                             ctx.tag, ctx.comm, &sends[k]));
    int done = 0;  // drive the transfers of earlier segments while we compress the next
    HYCC_CHECK_MPI(MPI_Testall(static_cast<int>(k + 1), sends.data(), &done, MPI_STATUSES_IGNORE));
  }
  HYCC_CHECK_MPI(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE));
  coll::report(ctx, options, Algorithm::kAuto, data.bytes(), start);
}

RecvStatus recv(const Communicator& comm, TensorView data, int source, int tag) {
  coll::ArgCheck check(Operation::kSendRecv);
  coll::check_view(check, "recv", "data", data);
  if (source != MPI_ANY_SOURCE && (source < 0 || source >= comm.size() || source == comm.rank())) {
    check.fail(tagged("coll", "recv: source ", source, " is not another rank of [0, ", comm.size(),
                      ") nor MPI_ANY_SOURCE"));
  }
  check.run(comm, false);
  coll::Context ctx = p2p_context(comm, tag);

  // The first message: envelope + stream 0, of a size only the sender knew.
  MPI_Message message;
  MPI_Status status;
  int bytes = 0;
  HYCC_CHECK_MPI(MPI_Mprobe(source, ctx.tag, ctx.comm, &message, &status));
  HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<std::byte> first(static_cast<size_t>(bytes));
  HYCC_CHECK_MPI(MPI_Mrecv(first.data(), bytes, MPI_BYTE, &message, &status));
  RecvStatus result{status.MPI_SOURCE, first.size()};
  const int from = status.MPI_SOURCE;

  Envelope env{};
  if (first.size() >= sizeof(Envelope)) std::memcpy(&env, first.data(), sizeof(Envelope));
  if (first.size() < sizeof(Envelope) || std::memcmp(env.magic, kMagic, 4) != 0 ||
      !is_valid_dtype(env.dtype) || env.segment_elems == 0 ||
      env.segments != env.count / env.segment_elems + (env.count % env.segment_elems != 0) ||
      (env.segments == 0) != (first.size() == sizeof(Envelope))) {
    throw CorruptStream(tagged("coll", "recv: the message from rank ", from, " (tag ", tag,
                               ") is not a hycc point-to-point message"));
  }
  // Consumes the remaining segments, so that the sender completes even if this receive fails.
  const auto drain = [&] {
    for (uint64_t k = 1; k < env.segments; ++k) {
      HYCC_CHECK_MPI(MPI_Mprobe(from, ctx.tag, ctx.comm, &message, &status));
      HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
      std::vector<std::byte> scratch(static_cast<size_t>(bytes));
      HYCC_CHECK_MPI(MPI_Mrecv(scratch.data(), bytes, MPI_BYTE, &message, &status));
    }
  };
  const auto dtype = static_cast<DType>(env.dtype);
  if (dtype != data.dtype || env.count != data.count) {
    drain();
    throw CommError(tagged("coll", "recv: rank ", from, " sent ", env.count, " ", dtype_name(dtype),
                           " elements (tag ", tag, ") but the receive buffer holds ", data.count,
                           " ", dtype_name(data.dtype)));
  }
  if (env.segments == 0) return result;

  const coll::Segments segs{env.count, env.segment_elems};
  const std::span<const std::byte> stream0 = std::span<const std::byte>(first).subspan(32);
  CodecConfig codec;
  try {
    codec = CodecConfig::parse(inspect(stream0).spec);
  } catch (const Error&) {
    drain();
    throw;
  }
  const size_t m = segs.count();
  std::vector<std::vector<std::byte>> in(m);
  std::vector<MPI_Request> recvs(m, MPI_REQUEST_NULL);
  for (size_t k = 1; k < m; ++k) {
    in[k].resize(max_compressed_bytes(codec, dtype, segs[k].count));
    HYCC_CHECK_MPI(MPI_Irecv(in[k].data(), coll::mpi_count(in[k].size(), "segment bytes"), MPI_BYTE,
                             from, ctx.tag, ctx.comm, &recvs[k]));
  }
  coll::DeferredError errors;
  for (size_t k = 0; k < m; ++k) {
    std::span<const std::byte> stream = stream0;
    if (k > 0) {
      HYCC_CHECK_MPI(MPI_Wait(&recvs[k], &status));
      HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
      stream = std::span<const std::byte>(in[k].data(), static_cast<size_t>(bytes));
      result.wire_bytes += stream.size();
    }
    try {
      coll::decode_stream(ctx, stream, coll::slice(data, segs[k].offset, segs[k].count));
    } catch (const Error&) {
      errors.capture();
    }
  }
  errors.rethrow();
  result.codec_seconds = ctx.counters.codec_seconds;
  return result;
}

}  // namespace hycc
