#include "coll_bench.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "bench_util.h"
#include "codec/float_convert.h"
#include "codec/float_io.h"
#include "codec/spec_args.h"
#include "coll/coll_internal.h"
#include "coll_bounds.h"
#include "comm/topology.h"
#include "common/byte_size.h"
#include "common/synthetic_data.h"
#include "hycc/codec.h"
#include "hycc/collectives.h"
#include "hycc/comm.h"
#include "hycc/error.h"

namespace hycc::bench {
namespace {

// ---------------------------------------------------------------------------------------------
// The operations: what each sends, which MPI call it is compared with, its bus bandwidth factor.

struct OpInfo {
  CollOp op;
  const char* name;
  const char* native;  // the MPI call timed beside it
  bool reduces;
  bool divisible;  // the element count is rounded down to a multiple of the number of ranks
  int bus;         // nccl-tests bus bandwidth factor: 2: 2(n-1)/n, 1: (n-1)/n, 0: 1
};

constexpr OpInfo kOps[] = {
    {CollOp::kAllreduce, "allreduce", "MPI_Allreduce", true, false, 2},
    {CollOp::kReduceScatter, "reduce_scatter", "MPI_Reduce_scatter_block", true, true, 1},
    {CollOp::kAllgather, "allgather", "MPI_Allgather", false, true, 1},
    {CollOp::kBroadcast, "broadcast", "MPI_Bcast", false, false, 0},
    {CollOp::kAlltoall, "alltoall", "MPI_Alltoall", false, true, 1},
    {CollOp::kSendrecv, "sendrecv", "MPI_Sendrecv (ring: to rank+1, from rank-1)", false, false, 0},
};

const OpInfo& parse_op(const std::string& name) {
  for (const OpInfo& info : kOps) {
    if (name == info.name) return info;
  }
  throw InvalidArgument(tagged("bench", "unknown --op '", name,
                               "'; expected allreduce, reduce_scatter, allgather, broadcast, "
                               "alltoall or sendrecv"));
}

// busbw = algbw x this, so that figures compare across rank counts.
double bus_factor(const OpInfo& info, int p) {
  return info.bus == 2 ? 2.0 * (p - 1) / p : info.bus == 1 ? double(p - 1) / p : 1.0;
}
const char* bus_factor_text(const OpInfo& info) {
  return info.bus == 2 ? "2(n-1)/n" : info.bus == 1 ? "(n-1)/n" : "1";
}

// The algorithms and the operations each applies to (collectives.h); empty: every operation.
struct AlgoInfo {
  const char* name;
  Algorithm algo;
  const char* ops;
};
constexpr AlgoInfo kAlgos[] = {
    {"auto", Algorithm::kAuto, ""},
    {"native", Algorithm::kNative, ""},
    {"ring", Algorithm::kRing, " allreduce reduce_scatter allgather "},
    {"rd", Algorithm::kRecursiveDoubling, " allreduce "},
    {"compress_once", Algorithm::kCompressOnce, " allreduce "},
    {"chain", Algorithm::kChain, " broadcast "},
    {"pairwise", Algorithm::kPairwise, " alltoall "},
    {"two_level", Algorithm::kTwoLevel, " allreduce reduce_scatter allgather broadcast "},
};

Algorithm parse_algo(const std::string& name, const OpInfo& op) {
  for (const AlgoInfo& a : kAlgos) {
    if (name != a.name) continue;
    if (*a.ops && std::string(a.ops).find(std::string(" ") + op.name + " ") == std::string::npos) {
      throw InvalidArgument(tagged("bench", "--algo ", name, " does not apply to ", op.name));
    }
    return a.algo;
  }
  throw InvalidArgument(tagged("bench", "unknown --algo '", name,
                               "'; expected auto, native, ring, rd, compress_once, chain, "
                               "pairwise or two_level"));
}

size_t parse_bytes(const std::string& text) { return parse_byte_size(text, "a byte option"); }

// ---------------------------------------------------------------------------------------------
// Inputs with a known exact result, and the error bound used to count #wrong.

// Rank r's element i is k * q with k a pseudo-random integer in [-K, K] and q = 8 / K a power of
// two: |x| <= A = 8, and every sum over ranks is exact in float32 and in the 16-bit types (K is
// the largest power of two <= 2^20 with p * K within the dtype's significand). Fractions rather
// than plain integers, so that lossy codecs meet values that are not on their quantization grid.
struct Inputs {
  int64_t k_max = 1;
  double quantum = 8;
  double amplitude() const { return double(k_max) * quantum; }
  double value(int r, size_t i) const {
    const uint64_t h = splitmix64(splitmix64(0x6879636362656e63ull + uint64_t(r)) + i);
    return double(int64_t(h % uint64_t(2 * k_max + 1)) - k_max) * quantum;
  }
};

Inputs make_inputs(DType dtype, int p) {
  const int64_t significand = dtype == DType::kF32    ? 1 << 24
                              : dtype == DType::kBF16 ? 1 << 8
                                                      : 1 << 11;
  int64_t k = 1;
  while (k < (1 << 20) && 2 * k * p <= significand) k *= 2;
  return {k, 8.0 / double(k)};
}

// ---------------------------------------------------------------------------------------------
// Buffers, initialization and checking.

// 8-byte aligned storage of a tensor.
struct Tensor {
  Tensor(DType dtype, size_t count) : words((count * dtype_size(dtype) + 7) / 8 + 1) {
    view = {dtype, count, words.data()};
  }
  std::vector<uint64_t> words;
  TensorView view;
};

// Runs fn(begin, n, buf) over blocks of 4096 elements of a tensor, with a float buffer.
void for_blocks(size_t count, const std::function<void(size_t, size_t, float*)>& fn) {
  std::vector<float> buf(std::min<size_t>(count, 4096));
  for (size_t begin = 0; begin < count; begin += buf.size()) {
    fn(begin, std::min(buf.size(), count - begin), buf.data());
  }
}

// out[i] = value(i), rounded into the dtype (exact for our inputs).
void fill(TensorView out, const std::function<double(size_t)>& value) {
  for_blocks(out.count, [&](size_t begin, size_t n, float* buf) {
    for (size_t j = 0; j < n; ++j) buf[j] = float(value(begin + j));
    codec::store_from_float(buf, n, out, begin);
  });
}

struct CheckResult {
  double max_err = 0;
  uint64_t wrong = 0;
};

// Counts elements with |got - exact| > bound + 2u|exact| (u: unit roundoff of the dtype; covers
// the one rounding into the output type, and the float32 division of avg); non-finite = wrong.
CheckResult check(ConstTensorView got, const std::function<double(size_t)>& exact, double bound) {
  const double rel = 2 * unit_roundoff(got.dtype);
  CheckResult r;
  for_blocks(got.count, [&](size_t begin, size_t n, float* buf) {
    codec::load_as_float(got, begin, n, buf);
    for (size_t j = 0; j < n; ++j) {
      const double want = exact(begin + j);
      const double err = std::fabs(double(buf[j]) - want);
      r.max_err = std::max(r.max_err, std::isnan(err) ? HUGE_VAL : err);
      if (!(err <= bound + rel * std::fabs(want))) ++r.wrong;  // NaN and infinity too
    }
  });
  return r;
}

// ---------------------------------------------------------------------------------------------
// Native MPI: bf16/fp16 travel as MPI_UINT16_T and are summed by user operations in float32.

template <DType kType>
void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto load = [](uint16_t h) {
    return kType == DType::kBF16 ? codec::bf16_to_f32(h)
                                 : codec::bits_to_f32(codec::f16_to_f32_bits(h));
  };
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const uint32_t sum = codec::f32_to_bits(load(a[i]) + load(b[i]));
    b[i] = kType == DType::kBF16 ? codec::f32_bits_to_bf16(sum) : codec::f32_bits_to_f16(sum);
  }
}

// The MPI type and sum operation of a dtype; owns the user operation of bf16/fp16.
struct NativeTypes {
  explicit NativeTypes(DType dtype) : type(coll::mpi_type(dtype)) {
    if (dtype == DType::kF32) return;
    HYCC_CHECK_MPI(
        MPI_Op_create(dtype == DType::kBF16 ? &sum16<DType::kBF16> : &sum16<DType::kF16>, 1, &sum));
  }
  ~NativeTypes() {
    if (sum != MPI_SUM) MPI_Op_free(&sum);
  }
  NativeTypes(const NativeTypes&) = delete;
  NativeTypes& operator=(const NativeTypes&) = delete;

  MPI_Datatype type;
  MPI_Op sum = MPI_SUM;
};

// x /= p in float32, rounded into the dtype (native avg: MPI has no average operation).
void divide(TensorView x, int p) {
  for_blocks(x.count, [&](size_t begin, size_t n, float* buf) {
    codec::load_as_float(x, begin, n, buf);
    for (size_t j = 0; j < n; ++j) buf[j] /= float(p);
    codec::store_from_float(buf, n, x, begin);
  });
}

int mpi_count(size_t n) { return coll::mpi_count(n, "elements"); }

// ---------------------------------------------------------------------------------------------
// The sweep.

struct Setup {
  const OpInfo* info = nullptr;
  DType dtype = DType::kF32;
  ReduceOp redop = ReduceOp::kSum;
  CollectiveOptions options;
  ErrorModel model;
  int root = 0;
  int rank = 0;
  int p = 1;
  Inputs inputs;
  Bound bound;           // when hycc compresses; 0 when it runs the native MPI call
  std::string topology;  // comm/topology.h's description of the world's nodes
  int per_node = 1;      // ranks per node where the two-level algorithms run, else 1
};

struct Row {
  size_t bytes = 0, count = 0;
  bool compresses = false;
  double bound = 0;
  double time_us = 0, algbw = 0, busbw = 0, ratio = 1;
  double native_us = 0, native_busbw = 0;
  CheckResult hycc, native;
};

Row run_size(const Setup& s, const Communicator& comm, const NativeTypes& native, size_t bytes,
             const CollBenchOptions& o) {
  const CollOp op = s.info->op;
  const int p = s.p, r = s.rank;
  const Inputs& in = s.inputs;
  const size_t esize = dtype_size(s.dtype);
  size_t count = bytes / esize;
  if (s.info->divisible) count -= count % size_t(p);
  const size_t block = count / size_t(p);  // per-rank block of reduce_scatter/allgather/alltoall
  const size_t send_count = op == CollOp::kAllgather ? block : count;
  const size_t recv_count = op == CollOp::kReduceScatter ? block : count;

  Tensor send_t(s.dtype, send_count), recv_t(s.dtype, recv_count);
  const TensorView send = op == CollOp::kBroadcast ? recv_t.view : send_t.view;
  const TensorView recv = recv_t.view;
  const int left = (r + p - 1) % p, right = (r + 1) % p;

  Row row;
  row.count = count;
  row.bytes = count * esize;
  // Whether hycc compresses (collectives.h): not with one rank or no data, nor with algo native,
  // nor below the threshold (measured on the whole tensor: the receive buffer of allgather, the
  // send buffer otherwise), nor with algo auto and codec none; send always sends streams.
  const size_t message_bytes = op == CollOp::kAllgather ? recv.bytes() : send.bytes();
  row.compresses =
      p > 1 && count > 0 && s.options.algorithm != Algorithm::kNative &&
      message_bytes >= s.options.threshold_bytes &&
      !(s.options.algorithm == Algorithm::kAuto && s.options.codec.id() == CodecId::kNone);
  row.bound = row.compresses ? s.bound.value : 0;

  // Inputs and the exact result on this rank.
  std::function<double(size_t)> input = [&](size_t i) { return in.value(r, i); };
  std::function<double(size_t)> exact;
  switch (op) {
    case CollOp::kAllreduce:
    case CollOp::kReduceScatter:
      exact = [&, offset = op == CollOp::kReduceScatter ? size_t(r) * block : 0](size_t i) {
        double sum = 0;
        for (int q = 0; q < p; ++q) sum += in.value(q, offset + i);
        return s.redop == ReduceOp::kAverage ? sum / p : sum;
      };
      break;
    case CollOp::kAllgather:
      exact = [&](size_t i) { return in.value(int(i / block), i % block); };
      break;
    case CollOp::kBroadcast:
      input = [&](size_t i) { return in.value(s.root, i); };
      exact = input;
      break;
    case CollOp::kAlltoall:
      exact = [&](size_t i) { return in.value(int(i / block), size_t(r) * block + i % block); };
      break;
    case CollOp::kSendrecv:
      exact = [&](size_t i) { return in.value(left, i); };
      break;
  }
  const auto reset = [&] {
    if (op != CollOp::kBroadcast || r == s.root) fill(send, input);
    if (op != CollOp::kBroadcast || r != s.root) {
      fill(recv, [](size_t) { return std::numeric_limits<double>::quiet_NaN(); });
    }
  };
  reset();

  CollectiveOptions options = s.options;
  const auto run_hycc = [&](int iter) {
    options.seed = uint64_t(iter);
    switch (op) {
      case CollOp::kAllreduce:
        return allreduce(comm, send, recv, s.redop, options);
      case CollOp::kReduceScatter:
        return reduce_scatter(comm, send, recv, s.redop, options);
      case CollOp::kAllgather:
        return allgather(comm, send, recv, options);
      case CollOp::kBroadcast:
        return broadcast(comm, recv, s.root, options);
      case CollOp::kAlltoall:
        return alltoall(comm, send, recv, options);
      case CollOp::kSendrecv:
        // Blocking calls in a ring: odd ranks receive first, so the ring cannot deadlock.
        if (r % 2 == 0) {
          hycc::send(comm, send, right, 0, options);
          hycc::recv(comm, recv, left, 0);
        } else {
          hycc::recv(comm, recv, left, 0);
          hycc::send(comm, send, right, 0, options);
        }
        return;
    }
  };
  const MPI_Comm mc = comm.mpi();
  const MPI_Datatype type = native.type;
  const auto run_native = [&](int) {
    switch (op) {
      case CollOp::kAllreduce:
        HYCC_CHECK_MPI(MPI_Allreduce(send.data, recv.data, mpi_count(count), type, native.sum, mc));
        if (s.redop == ReduceOp::kAverage) divide(recv, p);
        return;
      case CollOp::kReduceScatter:
        HYCC_CHECK_MPI(
            MPI_Reduce_scatter_block(send.data, recv.data, mpi_count(block), type, native.sum, mc));
        if (s.redop == ReduceOp::kAverage) divide(recv, p);
        return;
      case CollOp::kAllgather:
        HYCC_CHECK_MPI(MPI_Allgather(send.data, mpi_count(block), type, recv.data, mpi_count(block),
                                     type, mc));
        return;
      case CollOp::kBroadcast:
        HYCC_CHECK_MPI(MPI_Bcast(recv.data, mpi_count(count), type, s.root, mc));
        return;
      case CollOp::kAlltoall:
        HYCC_CHECK_MPI(
            MPI_Alltoall(send.data, mpi_count(block), type, recv.data, mpi_count(block), type, mc));
        return;
      case CollOp::kSendrecv:
        HYCC_CHECK_MPI(MPI_Sendrecv(send.data, mpi_count(count), type, right, 0, recv.data,
                                    mpi_count(count), type, left, 0, mc, MPI_STATUS_IGNORE));
        return;
    }
  };
  // nccl-tests timing (WARMUP untimed calls, then the average of ITERS calls, the slowest rank's),
  // with hycc and native MPI timed in alternating blocks, hycc-native-native-hycc, so that a
  // drift of the machine's speed during the row biases neither.
  const auto block_seconds = [&](const std::function<void(int)>& fn, int first, int calls) {
    HYCC_CHECK_MPI(MPI_Barrier(mc));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) fn(first + i);
    double t = MPI_Wtime() - t0;
    HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, mc));
    return t;
  };
  for (int i = 0; i < o.warmup; ++i) run_hycc(i);
  for (int i = 0; i < o.warmup; ++i) run_native(i);
  // R rounds (--rounds) of hycc-native-native-hycc over the ITERS calls; each side's time per
  // call is the median of its rounds' averages, robust to a round that another job disturbed.
  std::vector<double> hycc_per_call, native_per_call;
  int next = o.warmup;
  for (int round = 0; round < o.rounds; ++round) {
    const long n = o.iters;
    const int calls = static_cast<int>(n * (round + 1) / o.rounds - n * round / o.rounds);
    const int half = calls / 2, rest = calls - half;
    double hycc_s = block_seconds(run_hycc, next, half);
    double native_s = block_seconds(run_native, next, half);
    native_s += block_seconds(run_native, next + half, rest);
    hycc_s += block_seconds(run_hycc, next + half, rest);
    next += calls;
    hycc_per_call.push_back(hycc_s / calls);
    native_per_call.push_back(native_s / calls);
  }
  row.time_us = median(hycc_per_call) * 1e6;
  row.native_us = median(native_per_call) * 1e6;
  const double factor = bus_factor(*s.info, p);
  row.algbw = gbps(double(row.bytes), row.time_us * 1e-6);
  row.busbw = row.algbw * factor;
  row.native_busbw = gbps(double(row.bytes), row.native_us * 1e-6) * factor;

  // Correctness after the timed loop, on fresh buffers: hycc, then native.
  if (o.check) {
    reset();
    run_hycc(o.warmup + o.iters);
    row.hycc = check(recv, exact, row.bound);
    reset();
    run_native(0);
    row.native = check(recv, exact, 0);
    double errs[2] = {row.hycc.max_err, row.native.max_err};
    uint64_t wrong[2] = {row.hycc.wrong, row.native.wrong};
    HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, errs, 2, MPI_DOUBLE, MPI_MAX, mc));
    HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, wrong, 2, MPI_UINT64_T, MPI_SUM, mc));
    row.hycc = {errs[0], wrong[0]};
    row.native = {errs[1], wrong[1]};
  }
  reset();  // the root of a lossy broadcast holds decoded values

  // Compression ratio: one more call reports, on every rank, the uncompressed bytes of the
  // streams it sent and the bytes it sent (CollectiveStats); summed over ranks.
  CollectiveStats stats;
  options.stats = &stats;
  run_hycc(o.warmup + o.iters + 1);
  options.stats = nullptr;
  reset();
  double sums[2] = {double(stats.raw_bytes), double(stats.wire_bytes)};
  HYCC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, mc));
  row.ratio = sums[1] > 0 ? sums[0] / sums[1] : 1.0;
  return row;
}

void print_header(const Setup& s, const CollBenchOptions& o) {
  const std::string dtype(dtype_name(s.dtype));
  const CollOp op = s.info->op;
  std::string what = format("%s, %d ranks, dtype %s", s.info->name, s.p, dtype.c_str());
  if (s.info->reduces) what += s.redop == ReduceOp::kSum ? ", redop sum" : ", redop avg";
  if (op == CollOp::kBroadcast) what += format(", root %d", s.root);
  std::printf("# hycc-bench coll: %s\n", what.c_str());
  std::printf("# codec %s, algo %s, threshold %zu B, segment %zu B, argument check %s\n",
              s.options.codec.spec().c_str(), o.algo.c_str(), s.options.threshold_bytes,
              s.options.segment_bytes, o.check_args.c_str());
  std::printf("# topology: %s%s\n", s.topology.c_str(),
              s.options.algorithm == Algorithm::kTwoLevel && s.per_node == 1
                  ? "; two_level falls back to ring on it"
                  : "");
  std::printf(
      "# time: average per call over %d iters after %d warmup, slowest rank (us); hycc and native\n"
      "#   timed in alternating blocks (hycc, native, native, hycc) of iters/2%s\n",
      o.iters, o.warmup,
      o.rounds == 1 ? ""
                    : format(" in each of %d rounds; the median of the rounds", o.rounds).c_str());
  std::printf("# algbw = uncompressed bytes / time (GB/s = 1e9 B/s), busbw = algbw x %s\n",
              bus_factor_text(*s.info));
  std::printf(
      "# ratio: uncompressed / sent bytes of the streams every rank sent (CollectiveStats;\n"
      "#   reduce-scatter partial sums count as float32); 1 where hycc does not compress\n");
  std::printf("# inputs: k * 2^%d, k pseudo-random in [-%lld, %lld]: |x| <= A = %g, exact sums\n",
              int(std::lround(std::log2(s.inputs.quantum))), (long long)s.inputs.k_max,
              (long long)s.inputs.k_max, s.inputs.amplitude());
  std::printf(
      "# max_err: max |hycc - exact| over ranks; #wrong: elements with |hycc - exact|\n"
      "#   > B + 2u|exact| (u = %g: unit roundoff of %s), summed over ranks; B = 0 where\n"
      "#   hycc does not compress (1 rank, algo native, below threshold, auto with codec none),\n",
      unit_roundoff(s.dtype), dtype.c_str());
  if (s.p == 1 || !s.model.lossy) {
    std::printf("#   B = 0 (%s)\n", s.bound.formula.c_str());
  } else {
    std::printf("#   B = %.6g%s: %s\n", s.bound.value, s.model.guaranteed ? "" : " (empirical)",
                s.bound.formula.c_str());
    std::printf("#   e(M) = %s, M = max |compressed value|:\n#     %s\n", s.model.text.c_str(),
                s.model.why.c_str());
  }
  std::string native = s.info->native;
  if (s.dtype != DType::kF32) {
    native += s.info->reduces ? " as MPI_UINT16_T with a user MPI_Op summing in float32"
                              : " as MPI_UINT16_T";
  }
  std::printf("# native: %s, same data\n# speedup = native time / hycc time\n", native.c_str());
}

int sweep(const CollBenchOptions& o, const Setup& s, const Communicator& comm, size_t min_bytes,
          size_t max_bytes) {
  const NativeTypes native(s.dtype);
  const bool print = s.rank == 0;
  // nccl-tests columns, then ratio and error, then the native call; a second line of units.
  const Table table({{"size(B)", 12, ""},
                     {"count", 11, "(elements)"},
                     {"type", 5, ""},
                     {"redop", 5, ""},
                     {"time(us)", 10, "(us)"},
                     {"algbw", 7, "(GB/s)"},
                     {"busbw", 7, "(GB/s)"},
                     {"ratio", 7, ""},
                     {"max_err", 9, ""},
                     {"#wrong", 7, ""},
                     {"nat(us)", 10, "(us)"},
                     {"nat_busbw", 9, "(GB/s)"},
                     {"speedup", 7, ""}});
  if (print) {
    print_header(s, o);
    std::printf("%s\n", table.header().c_str());
    std::fflush(stdout);
  }
  const std::string dtype(dtype_name(s.dtype));
  const std::string redop = !s.info->reduces ? "none" : s.redop == ReduceOp::kSum ? "sum" : "avg";
  nlohmann::json rows = nlohmann::json::array();
  uint64_t wrong = 0, native_wrong = 0;
  double busbw_sum = 0, native_busbw_sum = 0;
  int n_rows = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes;) {
    const Row row = run_size(s, comm, native, bytes, o);
    wrong += row.hycc.wrong;
    native_wrong += row.native.wrong;
    busbw_sum += row.busbw;
    native_busbw_sum += row.native_busbw;
    ++n_rows;
    const double speedup = row.time_us > 0 ? row.native_us / row.time_us : 0;
    if (print) {
      std::printf("%s\n",
                  table
                      .row({format("%zu", row.bytes), format("%zu", row.count), dtype, redop,
                            format("%.1f", row.time_us), format("%.2f", row.algbw),
                            format("%.2f", row.busbw), format("%.3f", row.ratio),
                            o.check ? format("%.2e", row.hycc.max_err) : "N/A",
                            o.check ? format("%llu", (unsigned long long)row.hycc.wrong) : "N/A",
                            format("%.1f", row.native_us), format("%.2f", row.native_busbw),
                            format("%.2f", speedup)})
                      .c_str());
      std::fflush(stdout);
    }
    const auto checked = [&](auto v) { return o.check ? nlohmann::json(v) : nlohmann::json(); };
    rows.push_back({{"op", s.info->name},
                    {"codec", s.options.codec.spec()},
                    {"algo", o.algo},
                    {"check_args", o.check_args},
                    {"dtype", dtype},
                    {"redop", redop},
                    {"ranks", s.p},
                    {"bytes", row.bytes},
                    {"count", row.count},
                    {"time_us", row.time_us},
                    {"algbw", row.algbw},
                    {"busbw", row.busbw},
                    {"ratio", row.ratio},
                    {"bound", row.bound},
                    {"max_err", checked(row.hycc.max_err)},
                    {"wrong", checked(row.hycc.wrong)},
                    {"native_time_us", row.native_us},
                    {"native_busbw", row.native_busbw},
                    {"speedup", speedup}});
    if (bytes > max_bytes / o.factor) break;  // the next size would overflow or pass the end
    bytes = std::max(bytes * o.factor, bytes + 1);
  }
  const bool failed = wrong > 0 || native_wrong > 0;
  if (print) {
    std::printf("# Out of bounds values : %llu %s%s\n", (unsigned long long)wrong,
                failed ? "FAILED" : "OK", o.check ? "" : " (not checked: -c 0)");
    if (native_wrong > 0) {
      std::printf("# Native out of bounds values : %llu (the native MPI results are wrong)\n",
                  (unsigned long long)native_wrong);
    }
    std::printf("# Avg bus bandwidth    : %g\n", n_rows ? busbw_sum / n_rows : 0.0);
    std::printf("# Avg native bus bandwidth : %g\n", n_rows ? native_busbw_sum / n_rows : 0.0);
    if (!o.json.empty()) {
      write_json(o.json, rows);
      std::printf("# wrote %s\n", o.json.c_str());
    }
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}

}  // namespace

int run_coll_bench(const CollBenchOptions& o) {
  const MpiSession mpi;
  const Communicator comm = Communicator::world();
  int rc = 0;
  Setup s;
  size_t min_bytes = 0, max_bytes = 0;
  // Arguments: every rank validates the same ones, so every rank fails alike; rank 0 says why.
  try {
    s.info = &parse_op(o.op);
    s.dtype = parse_dtype(o.dtype);
    if (o.redop != "sum" && o.redop != "avg") {
      throw InvalidArgument(tagged("bench", "unknown -o '", o.redop, "'; expected sum or avg"));
    }
    s.redop = o.redop == "sum" ? ReduceOp::kSum : ReduceOp::kAverage;
    s.options.codec = CodecConfig::parse(o.codec);
    s.options.algorithm = parse_algo(o.algo, *s.info);
    if (!o.threshold.empty()) s.options.threshold_bytes = parse_bytes(o.threshold);
    if (!o.segment.empty()) s.options.segment_bytes = parse_bytes(o.segment);
    s.options.check_arguments = parse_check_args(o.check_args);
    s.rank = comm.rank();
    s.p = comm.size();
    if (o.root < 0 || o.root >= s.p) {
      throw InvalidArgument(tagged("bench", "root ", o.root, " is not a rank of ", s.p));
    }
    if (s.info->op == CollOp::kSendrecv && s.p < 2) {
      throw InvalidArgument(tagged("bench", "sendrecv needs at least 2 ranks"));
    }
    s.root = o.root;
    min_bytes = parse_bytes(o.min_bytes);
    max_bytes = parse_bytes(o.max_bytes);
    if (min_bytes > max_bytes) {
      throw InvalidArgument(tagged("bench", "-b ", o.min_bytes, " exceeds -e ", o.max_bytes));
    }
    if (o.rounds > o.iters) {
      throw InvalidArgument(tagged("bench", "--rounds ", o.rounds, " exceeds -n ", o.iters,
                                   ": each round needs at least one timed call"));
    }
    s.inputs = make_inputs(s.dtype, s.p);
    s.model = error_model(s.options.codec, s.dtype);
    const comm::Topology& topology = comm::topology(comm);
    s.topology = topology.describe();
    s.per_node = topology.two_level() ? s.p / topology.nodes() : 1;
    s.bound = error_bound(s.info->op, s.options.algorithm, s.model, s.redop, s.p, s.per_node,
                          s.inputs.amplitude());
  } catch (const Error& e) {
    if (comm.rank() == 0) std::fprintf(stderr, "hycc-bench coll: %s\n", e.what());
    rc = 2;
  }
  if (rc == 0) {
    try {
      rc = sweep(o, s, comm, min_bytes, max_bytes);
    } catch (const std::exception& e) {
      // A failure on one rank leaves the others waiting in a collective: end the whole job.
      std::fprintf(stderr, "hycc-bench coll: rank %d: %s\n", s.rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  return rc;
}

}  // namespace hycc::bench
