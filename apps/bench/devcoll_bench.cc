// hycc-bench devcoll (devcoll_bench.h).
#include "devcoll_bench.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "bench_memory.h"
#include "bench_util.h"
#include "codec/float_io.h"
#include "common/byte_size.h"
#include "common/synthetic_data.h"
#include "hycc/collectives.h"
#include "hycc/collectives_device.h"
#include "hycc/device.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

enum class DevOp { kAllreduce, kReduceScatter, kAllgather, kBroadcast, kAlltoall };

DevOp parse_devop(const std::string& name) {
  if (name == "allreduce") return DevOp::kAllreduce;
  if (name == "reduce_scatter") return DevOp::kReduceScatter;
  if (name == "allgather") return DevOp::kAllgather;
  if (name == "broadcast") return DevOp::kBroadcast;
  if (name == "alltoall") return DevOp::kAlltoall;
  throw InvalidArgument(tagged("bench", "unknown --op '", name,
                               "'; expected allreduce, reduce_scatter, allgather, broadcast or ",
                               "alltoall"));
}

// nccl-tests' bus bandwidth factors.
double bus_factor(DevOp op, int p) {
  const double q = static_cast<double>(p);
  if (op == DevOp::kAllreduce) return 2 * (q - 1) / q;
  if (op == DevOp::kBroadcast) return 1;
  return (q - 1) / q;
}

using Memory = BenchMemory;

struct Shape {
  size_t send = 0, recv = 0;  // elements
};

Shape shape_of(DevOp op, size_t message_elems, int p) {
  const size_t q = static_cast<size_t>(p);
  switch (op) {
    case DevOp::kAllgather: {
      const size_t per = std::max<size_t>(message_elems / q, 1);
      return {per, per * q};
    }
    case DevOp::kReduceScatter:
      return {message_elems, chunk_range(message_elems, p, 0).count};
    case DevOp::kAlltoall: {
      const size_t n = std::max<size_t>(message_elems / q, 1) * q;
      return {n, n};
    }
    default:
      return {message_elems, message_elems};
  }
}

// One call of the operation; `host` selects the host collective with the device call's
// algorithm (the reference of the check).
void call(DevOp op, const Communicator& comm, TensorView send, TensorView recv,
          const DeviceCollectiveOptions& d, const CollectiveOptions* host) {
  const int rank = comm.rank(), p = comm.size();
  const ChunkRange mine = chunk_range(send.count, p, rank);
  const TensorView my_recv{recv.dtype, op == DevOp::kReduceScatter ? mine.count : recv.count,
                           recv.data};
  switch (op) {
    case DevOp::kAllreduce:
      host ? allreduce(comm, send, recv, ReduceOp::kSum, *host)
           : allreduce_device(comm, send, recv, ReduceOp::kSum, d);
      break;
    case DevOp::kReduceScatter:
      host ? reduce_scatter(comm, send, my_recv, ReduceOp::kSum, *host)
           : reduce_scatter_device(comm, send, my_recv, ReduceOp::kSum, d);
      break;
    case DevOp::kAllgather:
      host ? allgather(comm, send, recv, *host) : allgather_device(comm, send, recv, d);
      break;
    case DevOp::kBroadcast:
      host ? broadcast(comm, send, 0, *host) : broadcast_device(comm, send, 0, d);
      break;
    case DevOp::kAlltoall:
      host ? alltoall(comm, send, recv, *host) : alltoall_device(comm, send, recv, d);
      break;
  }
}

struct Setup {
  DevOp op = DevOp::kAllreduce;
  DType dtype = DType::kF32;
  DeviceCollectiveOptions options;
  bool cuda = false;
  size_t min_bytes = 0, max_bytes = 0;
};

// Seconds per call of `iters` calls, the slowest rank's; stream-ordered calls until the device
// has done them.
double time_block(const Communicator& comm, int iters, const std::function<void()>& fn,
                  bool until_device = false) {
  MPI_Barrier(comm.mpi());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn();
  if (until_device) synchronize_device();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm.mpi());
  return s / iters;
}

int sweep(const DevCollBenchOptions& o, const Setup& s, const Communicator& comm) {
  const int p = comm.size(), rank = comm.rank();
  const size_t esize = dtype_size(s.dtype);
  const bool ordered = s.options.stream_ordered && s.cuda;
  std::vector<Table::Column> columns = {
      {"size", 12, "(B)"},     {"count", 12, "(elements)"}, {"type", 6},
      {"time", 10, "(us)"},    {"algbw", 8, "(GB/s)"},      {"busbw", 8, "(GB/s)"},
      {"none", 10, "(us)"},    {"speedup", 8, "(x)"},       {"native", 10, "(us)"},
      {"vs_native", 9, "(x)"}, {"ratio", 7, "(x)"},         {"#wrong", 8}};
  if (ordered) {
    columns.push_back({"return", 9, "(us)"});
    columns.push_back({"syncs", 6});
  }
  const Table table(columns);
  if (rank == 0) {
    std::printf(
        "# hycc-bench devcoll: %s %s, codec %s vs none vs native, %s, %d ranks, %d x %d "
        "calls\n",
        o.op.c_str(), dtype_name(s.dtype).data(), s.options.codec.spec().c_str(),
        s.cuda ? "CUDA" : "host emulation", p, o.rounds, o.iters);
    std::printf(
        "# none: the same device algorithm uncompressed; native: the MPI call on staged "
        "host copies (the path below threshold_bytes); speedup, vs_native: their time / "
        "time\n");
    if (ordered) {
      std::printf(
          "# stream-ordered: each block ends when the device is done; return: the host's time "
          "per codec call to return (mean of a block); syncs: the host's synchronizations in "
          "the last call\n");
    }
    std::printf("%s\n", table.header().c_str());
  }
  nlohmann::json rows = nlohmann::json::array();
  size_t wrong_total = 0;
  for (size_t bytes = s.min_bytes; bytes <= s.max_bytes;) {
    const Shape shape = shape_of(s.op, std::max<size_t>(bytes / esize, 1), p);
    std::vector<float> values =
        make_data(DataKind::kGaussian, shape.send, 1000 + static_cast<uint64_t>(rank));
    std::vector<std::byte> input(shape.send * esize);
    codec::store_from_float(values.data(), shape.send, {s.dtype, shape.send, input.data()}, 0);
    Memory send(s.cuda, input.size()), recv(s.cuda, shape.recv * esize);
    send.load(input);
    const TensorView sv{s.dtype, shape.send, send.data()}, rv{s.dtype, shape.recv, recv.data()};
    DeviceCollectiveOptions with_codec = s.options, none = s.options, native = s.options;
    none.codec = CodecConfig{};
    native.threshold_bytes = SIZE_MAX;
    CollectiveStats stats;
    with_codec.stats = &stats;
    for (int i = 0; i < o.warmup; ++i) {
      call(s.op, comm, sv, rv, with_codec, nullptr);
      call(s.op, comm, sv, rv, none, nullptr);
      call(s.op, comm, sv, rv, native, nullptr);
    }
    std::vector<double> codec_t, none_t, native_t;
    for (int round = 0; round < o.rounds; ++round) {
      const auto codec_block = [&] {
        codec_t.push_back(time_block(
            comm, o.iters, [&] { call(s.op, comm, sv, rv, with_codec, nullptr); }, ordered));
      };
      const auto none_block = [&] {
        none_t.push_back(time_block(
            comm, o.iters, [&] { call(s.op, comm, sv, rv, none, nullptr); }, ordered));
      };
      const auto native_block = [&] {
        native_t.push_back(time_block(
            comm, o.iters, [&] { call(s.op, comm, sv, rv, native, nullptr); }, ordered));
      };
      if (round % 2 == 0) {
        codec_block();
        none_block();
        native_block();
      } else {
        native_block();
        none_block();
        codec_block();
      }
    }
    // Stream-ordered: the host's time for a call to return, each call alone.
    double returned = 0;
    if (ordered) {
      MPI_Barrier(comm.mpi());
      for (int i = 0; i < o.iters; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        call(s.op, comm, sv, rv, with_codec, nullptr);
        returned += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      synchronize_device();
      returned /= o.iters;
      MPI_Allreduce(MPI_IN_PLACE, &returned, 1, MPI_DOUBLE, MPI_MAX, comm.mpi());
    }
    // The check: a fresh call against the host collective with the device call's algorithm.
    size_t wrong = 0;
    if (o.check) {
      send.load(input);
      call(s.op, comm, sv, rv, with_codec, nullptr);
      const bool in_send = s.op == DevOp::kBroadcast;
      const size_t out_n = s.op == DevOp::kReduceScatter ? chunk_range(shape.send, p, rank).count
                           : in_send                     ? shape.send
                                                         : shape.recv;
      const std::vector<std::byte> got = (in_send ? send : recv).bytes(out_n * esize);
      std::vector<std::byte> host_in = input, host_out(shape.recv * esize);
      CollectiveOptions h;
      h.codec = s.options.codec;
      h.segment_bytes = s.options.segment_bytes;
      h.seed = s.options.seed;
      h.threshold_bytes = 0;
      h.algorithm = s.op == DevOp::kBroadcast  ? Algorithm::kChain
                    : s.op == DevOp::kAlltoall ? Algorithm::kPairwise
                                               : Algorithm::kRing;
      call(s.op, comm, {s.dtype, shape.send, host_in.data()},
           {s.dtype, shape.recv, host_out.data()}, with_codec, &h);
      const std::byte* want = in_send ? host_in.data() : host_out.data();
      for (size_t i = 0; i < out_n; ++i) {
        wrong += std::memcmp(got.data() + i * esize, want + i * esize, esize) != 0;
      }
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UINT64_T, MPI_SUM, comm.mpi());
    }
    wrong_total += wrong;
    const size_t message = (s.op == DevOp::kAllgather ? shape.recv : shape.send) * esize;
    const double t = median(codec_t), tn = median(none_t), tm = median(native_t);
    const double algbw = gbps(static_cast<double>(message), t);
    const double ratio = stats.wire_bytes > 0 ? static_cast<double>(stats.raw_bytes) /
                                                    static_cast<double>(stats.wire_bytes)
                                              : 0;
    if (rank == 0) {
      std::vector<std::string> cells = {format("%zu", message),
                                        format("%zu", shape.send),
                                        std::string(dtype_name(s.dtype)),
                                        format("%.1f", t * 1e6),
                                        format("%.2f", algbw),
                                        format("%.2f", algbw * bus_factor(s.op, p)),
                                        format("%.1f", tn * 1e6),
                                        format("%.2f", t > 0 ? tn / t : 0),
                                        format("%.1f", tm * 1e6),
                                        format("%.2f", t > 0 ? tm / t : 0),
                                        format("%.2f", ratio),
                                        o.check ? format("%zu", wrong) : std::string("-")};
      if (ordered) {
        cells.push_back(format("%.1f", returned * 1e6));
        cells.push_back(format("%llu", static_cast<unsigned long long>(stats.host_syncs)));
      }
      std::printf("%s\n", table.row(cells).c_str());
      rows.push_back({{"op", o.op},
                      {"bytes", message},
                      {"count", shape.send},
                      {"dtype", std::string(dtype_name(s.dtype))},
                      {"codec", s.options.codec.spec()},
                      {"device", s.cuda ? "cuda" : "emulation"},
                      {"ranks", p},
                      {"seconds", t},
                      {"none_seconds", tn},
                      {"native_seconds", tm},
                      {"algbw_gbps", algbw},
                      {"busbw_gbps", algbw * bus_factor(s.op, p)},
                      {"ratio", ratio},
                      {"wrong", wrong}});
      if (ordered) {
        rows.back()["return_seconds"] = returned;
        rows.back()["host_syncs"] = stats.host_syncs;
      }
    }
    if (bytes > s.max_bytes / std::max<size_t>(o.factor, 2)) break;
    bytes *= std::max<size_t>(o.factor, 2);
  }
  if (rank == 0) {
    std::printf("# %s\n", wrong_total == 0 ? "OK: every result is the host collective's"
                                           : "FAILED: results differ from the host collective");
    if (!o.json.empty()) write_json(o.json, rows);
  }
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace

int run_devcoll_bench(const DevCollBenchOptions& o) {
  const MpiSession mpi;
  const Communicator comm = Communicator::world();
  int rc = 0;
  Setup s;
  try {
    s.op = parse_devop(o.op);
    s.dtype = parse_dtype(o.dtype);
    s.options.codec = CodecConfig::parse(o.codec);
    if (!o.segment.empty()) s.options.segment_bytes = parse_byte_size(o.segment, "--segment");
    s.options.checksum = o.checksum == 1;
    s.options.stream_ordered = o.stream_ordered == 1;
    s.options.seed = 7;
    if (o.device == "cuda" || (o.device == "auto" && device_count() > 0)) {
      if (device_count() == 0) {
        throw Unavailable(tagged("bench", "--device cuda: ", device_unavailable_reason()));
      }
      s.cuda = true;
    } else if (o.device != "emulation" && o.device != "auto") {
      throw InvalidArgument(
          tagged("bench", "unknown --device '", o.device, "'; expected auto, cuda or emulation"));
    }
    s.options.backend = s.cuda ? DeviceBackend::kCuda : DeviceBackend::kHostEmulation;
    if (o.transport == "staged") {
      s.options.transport = DeviceTransport::kStagedMpi;
    } else if (o.transport == "nccl") {
      s.options.transport = DeviceTransport::kNccl;
    } else if (o.transport != "auto") {
      throw InvalidArgument(tagged("bench", "unknown --transport '", o.transport,
                                   "'; expected auto, staged or nccl"));
    }
    s.min_bytes = parse_byte_size(o.min_bytes, "-b");
    s.max_bytes = parse_byte_size(o.max_bytes, "-e");
    if (s.min_bytes > s.max_bytes) {
      throw InvalidArgument(tagged("bench", "-b ", o.min_bytes, " exceeds -e ", o.max_bytes));
    }
  } catch (const Error& e) {
    if (comm.rank() == 0) std::fprintf(stderr, "hycc-bench devcoll: %s\n", e.what());
    rc = 2;
  }
  if (rc == 0) {
    try {
      rc = sweep(o, s, comm);
    } catch (const Error& e) {
      // Argument problems the collectives report (e.g. a codec without a device version) reach
      // every rank alike; anything else may leave ranks waiting: end the job.
      if (dynamic_cast<const InvalidArgument*>(&e) != nullptr ||
          dynamic_cast<const Unavailable*>(&e) != nullptr) {
        if (comm.rank() == 0) std::fprintf(stderr, "hycc-bench devcoll: %s\n", e.what());
        rc = 2;
      } else {
        std::fprintf(stderr, "hycc-bench devcoll: rank %d: %s\n", comm.rank(), e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
  }
  return rc;
}

}  // namespace hycc::bench
