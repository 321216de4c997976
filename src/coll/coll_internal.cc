#include "coll/coll_internal.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "codec/float_io.h"
#include "codec/peer_stream.h"
#include "comm/group.h"
#include "comm/transport.h"
#include "common/synthetic_data.h"
#include "common/xxh3.h"

namespace hycc::coll {
namespace {

// Largest piece of a raw transfer, in bytes (an MPI count).
constexpr size_t kRawPieceBytes = size_t{1} << 30;

}  // namespace

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

void add_common_fields(ArgCheck& check, size_t count, DType dtype, const AlgorithmOptions& options,
                       bool agree) {
  if (!agree) return;
  add_signature_fields(check, count, dtype, options.codec);
  check.field("algorithm", static_cast<int64_t>(options.algorithm));
  check.field("threshold_bytes", static_cast<int64_t>(options.threshold_bytes));
  check.field("segment_bytes", static_cast<int64_t>(options.segment_bytes));
  check.field("tag", options.tag);
}

// ---- views and float32 ------------------------------------------------------------------------

void copy_view(ConstTensorView from, TensorView to) {
  if (from.data != to.data && from.count != 0) std::memmove(to.data, from.data, from.bytes());
}

// ---- segmentation ------------------------------------------------------------------------------

uint64_t stream_seed(uint64_t seed, int rank, uint64_t phase, uint64_t segment) {
  return splitmix64(splitmix64(splitmix64(seed ^ static_cast<uint64_t>(rank)) ^ phase) ^ segment);
}

// ---- streams -----------------------------------------------------------------------------------

size_t compress_into(Context& ctx, ConstTensorView in, device::Payload& out, uint64_t seed) {
  const CodecClock clock(ctx);
  const size_t bound = max_compressed_bytes(ctx.codec, in);
  if (!device::holds_payload(out, bound)) {
    out.memory = device::allocate_payload(device::host_ops(), bound);
  }
  out.size =
      compress(ctx.codec, in, {static_cast<std::byte*>(out.data()), bound}, CompressOptions{seed});
  out.raw_bytes = in.bytes();
  out.rewritten();
  return out.size;
}

size_t compress_into(Context& ctx, ConstTensorView in, std::vector<std::byte>& out, uint64_t seed) {
  const CodecClock clock(ctx);
  const size_t bound = max_compressed_bytes(ctx.codec, in);
  if (out.size() < bound) out.resize(bound);
  return compress(ctx.codec, in, out, CompressOptions{seed});
}

void decode_stream(Context& ctx, std::span<const std::byte> stream, TensorView out) {
  const CodecClock clock(ctx);
  codec::decode_peer_stream(stream, out);
}

void decode_stream_f32(Context& ctx, std::span<const std::byte> stream, DType dtype, size_t n,
                       float* out) {
  const CodecClock clock(ctx);
  if (dtype == DType::kF32) {
    codec::decode_peer_stream(stream, {DType::kF32, n, out});
    return;
  }
  std::vector<uint16_t> narrow(n);
  codec::decode_peer_stream(stream, {dtype, n, narrow.data()});
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

void report(const AlgorithmOptions& options, const Counters* counters, Algorithm ran,
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
    s.intra_bytes = counters->intra_bytes;
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
              const std::function<void(size_t)>& consume, std::vector<device::Payload>& in) {
  const std::unique_ptr<comm::Transport> transport = host_transport(ctx, device::host_ops());
  in.resize(std::max(in.size(), nrecv));
  for (size_t k = 0; k < nrecv; ++k) transport->post_recv(source, capacity(k), k);
  transport->receives_announced();
  size_t next = 0;  // the next stream to consume; streams are consumed in order
  const auto finish = [&] {
    transport->wait_recv(in[next]);
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
    // The caller's stream, lent to the transport until the sends complete below.
    transport->post_send(dest, device::lent_payload(out.data(), out.size()), k);
    while (next < nrecv && transport->recv_arrived()) finish();  // decode what has arrived
  }
  while (next < nrecv) finish();
  std::vector<device::Payload> returned;
  transport->reclaim(returned, true);
}

void send_raw(Context& ctx, ConstTensorView v, int dest) {
  ctx.counters.raw_bytes += v.bytes();
  ctx.counters.wire_bytes += v.bytes();
  const std::unique_ptr<comm::Transport> transport = host_transport(ctx, device::host_ops());
  const auto* data = static_cast<const std::byte*>(v.data);
  for (size_t off = 0, k = 0; off < v.bytes(); off += kRawPieceBytes, ++k) {
    // The caller's memory, lent until the sends complete below.
    transport->post_send(
        dest, device::lent_payload(data + off, std::min(kRawPieceBytes, v.bytes() - off)), k);
  }
  std::vector<device::Payload> returned;
  transport->reclaim(returned, true);
}

std::unique_ptr<comm::Transport> host_transport(const Context& ctx, device::DeviceOps& ops) {
  if (ctx.group != nullptr) return ctx.group->host_transport(ops, ctx.tag);
  return comm::make_mpi_transport(ops, ctx.comm, ctx.tag);
}

void recv_raw(const Context& ctx, TensorView v, int source) {
  const std::unique_ptr<comm::Transport> transport = host_transport(ctx, device::host_ops());
  for (size_t off = 0, k = 0; off < v.bytes(); off += kRawPieceBytes, ++k) {
    transport->post_recv(source, std::min(kRawPieceBytes, v.bytes() - off), k);
  }
  transport->receives_announced();
  auto* data = static_cast<std::byte*>(v.data);
  device::Payload piece;
  for (size_t off = 0; off < v.bytes(); off += kRawPieceBytes) {
    const size_t bytes = std::min(kRawPieceBytes, v.bytes() - off);
    transport->wait_recv(piece);
    if (piece.size != bytes) {
      throw CommError(tagged("coll", "raw transfer from rank ", source, ": ", piece.size,
                             " bytes arrived, ", bytes, " expected"));
    }
    std::memcpy(data + off, piece.data(), bytes);
  }
}

}  // namespace hycc::coll
