// Compressed point to point on device buffers (send_device/recv_device).
//
// The first message is an MPI message: a 32-byte envelope (magic "HYD1", dtype, length of the
// codec's canonical spec, element count, segment count, elements per segment) followed by the
// spec, so that the receiver learns the codec, which a device payload does not carry (it has no
// header). It is matched with MPI_Mprobe/MPI_Get_count/MPI_Mrecv. The payloads, one per
// segment, follow through the transport: the sender encodes segment k + 1 while segment k is in
// flight, the receiver announces its receives a few segments ahead and decodes segment k while
// later ones arrive.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "coll/device_entry.h"
#include "coll/device_ring.h"
#include "coll/entry.h"

namespace hycc {
namespace {

using coll::ArgCheck;
namespace dev = coll::device;

struct DeviceEnvelope {
  char magic[4];  // "HYD1": hycc device point-to-point, version 1
  uint8_t dtype;
  uint8_t spec_bytes;  // length of the spec that follows the envelope
  uint8_t checksum;    // 1: every payload carries a checksum (checksum_transport.cc)
  uint8_t reserved;
  uint64_t count;          // elements in the whole message
  uint64_t segments;       // payloads that follow
  uint64_t segment_elems;  // elements per payload (the last one may have fewer)
};
static_assert(sizeof(DeviceEnvelope) == 32);
constexpr char kMagic[4] = {'H', 'Y', 'D', '1'};
constexpr size_t kMaxSpecBytes = 255;
// Receives announced ahead of the one being decoded.
constexpr size_t kRecvWindow = 4;

}  // namespace

void coll::run_send_device(const Communicator& comm, ConstTensorView data, int dest, int tag,
                           const DeviceAlgorithmOptions& options) {
  const auto start = coll::stats_clock(options);
  ArgCheck check(Operation::kSendRecv);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_device_view(check, ops.get(), "send_device", "data", data);
  if (dest < 0 || dest >= comm.size() || dest == comm.rank()) {
    check.fail(tagged("coll", "send_device: destination ", dest, " is not another rank of [0, ",
                      comm.size(), ")"));
  }
  dev::check_device_options(check, comm, Operation::kSendRecv, options);
  if (options.codec.spec().size() > kMaxSpecBytes) {
    check.fail(tagged("coll", "send_device: codec spec longer than ", kMaxSpecBytes, " bytes"));
  }
  dev::settle(check, comm, unavailable, false);
  const int itag = comm::device_p2p_tag(comm, tag);
  const coll::Segments segs{data.count, coll::segment_elems(options.segment_bytes, data.dtype)};
  const std::string& spec = options.codec.spec();

  std::vector<std::byte> head(sizeof(DeviceEnvelope) + spec.size());
  DeviceEnvelope env{};
  std::memcpy(env.magic, kMagic, 4);
  env.dtype = static_cast<uint8_t>(data.dtype);
  env.spec_bytes = static_cast<uint8_t>(spec.size());
  env.checksum = options.checksum ? 1 : 0;
  env.count = data.count;
  env.segments = segs.count();
  env.segment_elems = segs.per;
  std::memcpy(head.data(), &env, sizeof(env));
  std::memcpy(head.data() + sizeof(env), spec.data(), spec.size());
  HYCC_CHECK_MPI(
      MPI_Send(head.data(), static_cast<int>(head.size()), MPI_BYTE, dest, itag, comm.mpi()));

  const std::unique_ptr<dev::Transport> transport =
      dev::make_transport(comm, *ops, options, itag, false);
  dev::DeviceContext ctx{.rank = comm.rank(),
                         .size = comm.size(),
                         .codec = options.codec,
                         .seg_elems = segs.per,
                         .seed = options.seed,
                         .ops = *ops,
                         .transport = *transport,
                         .errors = {},
                         .counters = {}};
  ctx.counters.wire_bytes = head.size();
  const size_t bound = dev::payload_bound(options.codec, data.dtype, data.count, segs.per);
  dev::PayloadPool pool(*ops, bound);
  transport->receives_announced();
  for (size_t k = 0; k < segs.count(); ++k) {
    dev::Payload out = pool.take();
    dev::encode_payload(ctx, coll::slice(data, segs[k].offset, segs[k].count), out,
                        coll::stream_seed(options.seed, ctx.rank, 0, k));
    ctx.counters.wire_bytes += out.size;
    ctx.counters.raw_bytes += out.raw_bytes;
    ++ctx.counters.streams;
    transport->post_send(dest, std::move(out), k);
    transport->reclaim(pool.free(), false);
  }
  transport->reclaim(pool.free(), true);
  dev::report_device(options, &ctx.counters, Algorithm::kAuto, data.bytes(), start);
}

RecvStatus recv_device(const Communicator& comm, TensorView data, int source, int tag,
                       const DeviceCollectiveOptions& options) {
  ArgCheck check(Operation::kSendRecv);
  std::exception_ptr unavailable;
  const std::unique_ptr<dev::DeviceOps> ops = dev::try_make_ops(check, options, unavailable);
  dev::check_device_view(check, ops.get(), "recv_device", "data", data);
  if (source != MPI_ANY_SOURCE && (source < 0 || source >= comm.size() || source == comm.rank())) {
    check.fail(tagged("coll", "recv_device: source ", source, " is not another rank of [0, ",
                      comm.size(), ") nor MPI_ANY_SOURCE"));
  }
  dev::check_device_options(check, comm, Operation::kSendRecv, options);
  dev::settle(check, comm, unavailable, false);
  const int itag = comm::device_p2p_tag(comm, tag);

  // The envelope, of a size only the sender knew.
  MPI_Message message;
  MPI_Status status;
  int bytes = 0;
  HYCC_CHECK_MPI(MPI_Mprobe(source, itag, comm.mpi(), &message, &status));
  HYCC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<std::byte> head(static_cast<size_t>(bytes));
  HYCC_CHECK_MPI(MPI_Mrecv(head.data(), bytes, MPI_BYTE, &message, &status));
  const int from = status.MPI_SOURCE;
  RecvStatus result{from, head.size()};

  DeviceEnvelope env{};
  if (head.size() >= sizeof(env)) std::memcpy(&env, head.data(), sizeof(env));
  CodecConfig codec;
  bool valid = head.size() >= sizeof(env) && std::memcmp(env.magic, kMagic, 4) == 0 &&
               is_valid_dtype(env.dtype) && env.segment_elems != 0 && env.checksum <= 1 &&
               head.size() == sizeof(env) + env.spec_bytes &&
               env.segments == env.count / env.segment_elems + (env.count % env.segment_elems != 0);
  if (valid) {
    try {
      codec = CodecConfig::parse(std::string_view(
          reinterpret_cast<const char*>(head.data()) + sizeof(env), env.spec_bytes));
    } catch (const InvalidArgument&) {
      valid = false;
    }
  }
  if (!valid) {
    throw CorruptStream(tagged("coll", "recv_device: the message from rank ", from, " (tag ", tag,
                               ") is not a hycc device point-to-point message"));
  }
  const auto dtype = static_cast<DType>(env.dtype);
  const coll::Segments segs{env.count, env.segment_elems};
  DeviceAlgorithmOptions with_codec = options;
  with_codec.codec = codec;
  with_codec.checksum = env.checksum == 1;
  const std::unique_ptr<dev::Transport> transport =
      dev::make_transport(comm, *ops, with_codec, itag, false);
  dev::DeviceContext ctx{.rank = comm.rank(),
                         .size = comm.size(),
                         .codec = codec,
                         .seg_elems = segs.per,
                         .seed = 0,
                         .ops = *ops,
                         .transport = *transport,
                         .errors = {},
                         .counters = {}};
  const bool matches = dtype == data.dtype && env.count == data.count;
  const size_t m = segs.count();
  dev::Payload in;
  in.memory = dev::allocate_payload(*ops, dev::payload_bound(codec, dtype, env.count, segs.per));
  size_t posted = 0;
  for (size_t k = 0; k < m; ++k) {
    for (; posted < m && posted < k + kRecvWindow; ++posted) {
      transport->post_recv(from, codec.codec().max_payload_bytes(dtype, segs[posted].count),
                           posted);
      if (posted + 1 == m) transport->receives_announced();
    }
    transport->wait_recv(in);
    result.wire_bytes += in.size;
    if (!matches) continue;  // consumed, so that the sender completes
    const coll::CodecClock clock(ctx);
    try {
      ops->decode(codec, in.data(), in.size, coll::slice(data, segs[k].offset, segs[k].count));
    } catch (const Error&) {
      ctx.errors.capture();
    }
  }
  std::vector<dev::Payload> free;
  transport->reclaim(free, true);
  ops->synchronize();
  if (!matches) {
    throw CommError(tagged("coll", "recv_device: rank ", from, " sent ", env.count, " ",
                           dtype_name(dtype), " elements (tag ", tag,
                           ") but the receive buffer holds ", data.count, " ",
                           dtype_name(data.dtype)));
  }
  if (const std::string altered = transport->integrity_error(); !altered.empty()) {
    throw CorruptStream(altered);
  }
  ctx.errors.rethrow();
  result.codec_seconds = ctx.counters.codec_seconds;
  return result;
}

}  // namespace hycc
