// The device collectives with the host-emulated device (DeviceBackend::kHostEmulation): the whole
// device algorithm (device payloads, segmentation, recycled buffers) runs on the CPU with both
// transports: staged MPI (staging through "pinned" buffers, sizes from MPI_Get_count) and the
// NCCL transport on its MPI stand-in (sizes over MPI, payloads in groups with NCCL's ordering and
// synchronous sends: a protocol that could deadlock hangs here). The result must be the host
// collective's bit for bit (Algorithm::kRing, threshold 0, same codec, segment size and seed), on
// every rank. Cases are grouped (one test per operation, codec and transport loops over dtypes,
// counts and in/out of place) to keep the number of test cases small.
#include <functional>

#include "codec/float_io.h"
#include "coll_test_util.h"
#include "comm/transport.h"
#include "hycc/collectives_device.h"

namespace hycc::test {
namespace {

const std::vector<std::string>& device_test_codecs() {
  // Stochastic rounding too: its noise depends on the seed of every payload (rank, phase and
  // segment), which the device rings must choose as the host rings do. zfp:accuracy and zstd
  // have no kernels (they take the host path on a GPU) but run the same rings.
  static const std::vector<std::string> specs = {
      "none",        "bf16", "quant:bits=4", "quant:bits=4,round=stochastic",
      "eb:abs=1e-3", "mpc",  "zfp:rate=8",   "zfp:accuracy=1e-3",
      "zstd"};
  return specs;
}
// 2^18 + 3 in segments of 64 KiB (under the sanitizers 2^15 + 3 in 8 KiB): uneven chunks, several
// segments.
constexpr size_t kDeviceLargeCount = (size_t{1} << 18) / kSanitizerDivisor + 3;
constexpr size_t kDeviceLargeSegment = (size_t{64} << 10) / kSanitizerDivisor;

enum class Op { kAllreduce, kReduceScatter, kAllgather };

const char* op_label(Op op) {
  return op == Op::kAllreduce       ? "allreduce"
         : op == Op::kReduceScatter ? "reduce_scatter"
                                    : "allgather";
}

// The NCCL transport runs with a subset of the codecs (its protocol does not depend on the
// codec, only on the payload sizes, which these vary).
const std::vector<std::string>& nccl_test_codecs() {
  static const std::vector<std::string> specs = {"none", "quant:bits=4", "eb:abs=1e-3"};
  return specs;
}

const char* transport_label(DeviceTransport t) {
  return t == DeviceTransport::kNccl ? "nccl" : "staged";
}

DeviceCollectiveOptions device_options(const std::string& spec, size_t segment_bytes,
                                       DeviceTransport transport) {
  DeviceCollectiveOptions o;
  o.transport = transport;
  o.codec = CodecConfig::parse(spec);
  o.segment_bytes = segment_bytes;
  o.seed = 42;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

CollectiveOptions host_options(const std::string& spec, size_t segment_bytes) {
  CollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.algorithm = Algorithm::kRing;
  o.threshold_bytes = 0;
  o.segment_bytes = segment_bytes;
  o.seed = 42;
  return o;
}

// One operation on one input, on the host and on the emulated device; the two results must be
// bit-identical (and so identical across ranks, which is checked too).
void run_case(Op op, const std::string& spec, DeviceTransport transport, DType dtype, size_t count,
              bool in_place, size_t segment_bytes, ReduceOp reduce) {
  const int p = world().size(), r = world().rank();
  const std::string what = std::string(op_label(op)) + " " + spec + " " +
                           transport_label(transport) + " " + std::string(dtype_name(dtype)) +
                           " n=" + std::to_string(count) + (in_place ? " in place" : "") +
                           " seg=" + std::to_string(segment_bytes) +
                           (reduce == ReduceOp::kAverage ? " average" : "");
  const DeviceCollectiveOptions dopt = device_options(spec, segment_bytes, transport);
  const CollectiveOptions hopt = host_options(spec, segment_bytes);
  const Buffer input = make_input(dtype, count, r, false);
  const ChunkRange mine = chunk_range(count, p, r);
  const size_t out_count = op == Op::kAllreduce       ? count
                           : op == Op::kReduceScatter ? mine.count
                                                      : count * static_cast<size_t>(p);
  // The allgather's input is `count` elements per rank; in place it sits in this rank's block.
  Buffer host_in = clone(input), dev_in = clone(input);
  Buffer host_out(dtype, out_count), dev_out(dtype, out_count);
  if (op == Op::kAllgather && in_place) {
    const size_t at = static_cast<size_t>(r) * count;
    for (Buffer* b : {&host_out, &dev_out}) {
      if (count != 0)
        std::memcpy(view_of(*b, at, count).data, input.view().data, count * dtype_size(dtype));
    }
  }
  const auto run = [&](Buffer& in, Buffer& out, bool device) {
    TensorView send = in.view(), recv = out.view();
    if (in_place) {
      if (op == Op::kAllreduce) recv = send;
      if (op == Op::kReduceScatter) recv = view_of(in, mine.offset, mine.count);
      if (op == Op::kAllgather) send = view_of(out, static_cast<size_t>(r) * count, count);
    }
    if (op == Op::kAllreduce) {
      device ? allreduce_device(world(), send, recv, reduce, dopt)
             : allreduce(world(), send, recv, reduce, hopt);
    } else if (op == Op::kReduceScatter) {
      device ? reduce_scatter_device(world(), send, recv, reduce, dopt)
             : reduce_scatter(world(), send, recv, reduce, hopt);
    } else {
      device ? allgather_device(world(), send, recv, dopt) : allgather(world(), send, recv, hopt);
    }
  };
  run(host_in, host_out, false);
  run(dev_in, dev_out, true);
  const bool result_in_input = in_place && op != Op::kAllgather;
  const Buffer& want = result_in_input ? host_in : host_out;
  const Buffer& got = result_in_input ? dev_in : dev_out;
  if (in_place && op == Op::kReduceScatter) {
    expect_bits_equal(part_of(got, mine.offset, mine.count), part_of(want, mine.offset, mine.count),
                      what + " (vs host)");
  } else {
    expect_bits_equal(got, want, what + " (vs host)");
  }
  if (op != Op::kReduceScatter) expect_identical_across_ranks(got, what);
  if (!in_place) {
    EXPECT_TRUE(dev_in.bits_equal(input)) << what << ": the send buffer changed";
  }
}

struct CodecCase {
  Op op;
  std::string codec;
  DeviceTransport transport;
};

void PrintTo(const CodecCase& c, std::ostream* os) {
  *os << op_label(c.op) << " " << c.codec << " " << transport_label(c.transport);
}

std::string codec_case_name(const ::testing::TestParamInfo<CodecCase>& info) {
  std::string codec;
  for (const char ch : info.param.codec) {
    codec += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  return std::string(op_label(info.param.op)) + "_" + codec + "_" +
         transport_label(info.param.transport);
}

std::vector<CodecCase> codec_cases() {
  std::vector<CodecCase> cases;
  for (const Op op : {Op::kAllreduce, Op::kReduceScatter, Op::kAllgather}) {
    for (const std::string& codec : device_test_codecs()) {
      cases.push_back({op, codec, DeviceTransport::kStagedMpi});
    }
    for (const std::string& codec : nccl_test_codecs()) {
      cases.push_back({op, codec, DeviceTransport::kNccl});
    }
  }
  return cases;
}

class DeviceCollTest : public ::testing::TestWithParam<CodecCase> {};

// Every dtype x count (0, 1, 7: small segments of 4 bytes in place, so that 7 elements make
// several segments; kDeviceLargeCount in segments of kDeviceLargeSegment) x in/out of place;
// sums, and averages for the small counts.
TEST_P(DeviceCollTest, MatchesHostCollectiveBitForBit) {
  const CodecCase& c = GetParam();
  for (const DType d : test_dtypes()) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, kDeviceLargeCount}) {
      for (const bool in_place : {false, true}) {
        const size_t seg = n == kDeviceLargeCount ? kDeviceLargeSegment
                           : in_place             ? size_t{4}
                                                  : size_t{1} << 20;
        run_case(c.op, c.codec, c.transport, d, n, in_place, seg, ReduceOp::kSum);
        if (c.op != Op::kAllgather && n != kDeviceLargeCount) {
          run_case(c.op, c.codec, c.transport, d, n, in_place, seg, ReduceOp::kAverage);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Emulated, DeviceCollTest, ::testing::ValuesIn(codec_cases()),
                         codec_case_name);

// Chunks whose segment counts differ (385 elements over 2, 3 or 4 ranks in segments of 16
// elements), so that payloads of different steps are in flight at once.
TEST(DeviceColl, UnevenSegmentsMatchHost) {
  for (const DeviceTransport t : {DeviceTransport::kStagedMpi, DeviceTransport::kNccl}) {
    for (const char* codec : {"mpc", "quant:bits=4", "eb:abs=1e-3"}) {
      for (const Op op : {Op::kAllreduce, Op::kReduceScatter, Op::kAllgather}) {
        run_case(op, codec, t, DType::kBF16, 385, false, 32, ReduceOp::kSum);
        run_case(op, codec, t, DType::kF32, 385, true, 64, ReduceOp::kSum);
      }
    }
  }
}

// broadcast_device against the host's chained broadcast: every codec x dtype x count, two roots;
// the NCCL transport with its codecs.
TEST(DeviceColl, BroadcastMatchesHostChainBitForBit) {
  const int p = world().size(), r = world().rank();
  for (const DeviceTransport t : {DeviceTransport::kStagedMpi, DeviceTransport::kNccl}) {
    for (const std::string& spec :
         t == DeviceTransport::kNccl ? nccl_test_codecs() : device_test_codecs()) {
      for (const DType d : test_dtypes()) {
        for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, kDeviceLargeCount}) {
          for (const int root : {0, p - 1}) {
            const size_t seg = n == kDeviceLargeCount ? kDeviceLargeSegment : size_t{4};
            const std::string what = "broadcast " + spec + " " + transport_label(t) + " " +
                                     std::string(dtype_name(d)) + " n=" + std::to_string(n) +
                                     " root " + std::to_string(root);
            const Buffer input = make_input(d, n, r, false);
            Buffer host = clone(input), dev = clone(input);
            CollectiveOptions h = host_options(spec, seg);
            h.algorithm = Algorithm::kChain;
            broadcast(world(), host.view(), root, h);
            broadcast_device(world(), dev.view(), root, device_options(spec, seg, t));
            expect_bits_equal(dev, host, what + " (vs host)");
            expect_identical_across_ranks(dev, what);
          }
        }
      }
    }
  }
}

// alltoall_device against the host's pairwise exchange: every codec x dtype x block size x in/out
// of place; the NCCL transport with its codecs.
TEST(DeviceColl, AlltoallMatchesHostPairwiseBitForBit) {
  const int p = world().size(), r = world().rank();
  for (const DeviceTransport t : {DeviceTransport::kStagedMpi, DeviceTransport::kNccl}) {
    for (const std::string& spec :
         t == DeviceTransport::kNccl ? nccl_test_codecs() : device_test_codecs()) {
      for (const DType d : test_dtypes()) {
        for (const size_t block :
             {size_t{0}, size_t{1}, size_t{7}, (size_t{1} << 16) / kSanitizerDivisor + 1}) {
          for (const bool in_place : {false, true}) {
            const size_t n = block * static_cast<size_t>(p);
            const size_t seg = block > 7 ? (size_t{16} << 10) / kSanitizerDivisor : size_t{4};
            const std::string what =
                "alltoall " + spec + " " + transport_label(t) + " " + std::string(dtype_name(d)) +
                " block=" + std::to_string(block) + (in_place ? " in place" : "");
            const Buffer input = make_input(d, n, r, false);
            Buffer host_in = clone(input), dev_in = clone(input);
            Buffer host_out(d, n), dev_out(d, n);
            CollectiveOptions h = host_options(spec, seg);
            h.algorithm = Algorithm::kPairwise;
            const DeviceCollectiveOptions o = device_options(spec, seg, t);
            if (in_place) {
              alltoall(world(), host_in.view(), host_in.view(), h);
              alltoall_device(world(), dev_in.view(), dev_in.view(), o);
              expect_bits_equal(dev_in, host_in, what + " (vs host)");
            } else {
              alltoall(world(), host_in.view(), host_out.view(), h);
              alltoall_device(world(), dev_in.view(), dev_out.view(), o);
              expect_bits_equal(dev_out, host_out, what + " (vs host)");
              EXPECT_TRUE(dev_in.bits_equal(input)) << what << ": the send buffer changed";
            }
          }
        }
      }
    }
  }
}

// Below threshold_bytes every operation runs the host's native call on staged copies (the same
// bits as that call); at the threshold the device algorithm runs.
TEST(DeviceColl, BelowTheThresholdCallsGoNative) {
  const int p = world().size(), r = world().rank();
  const size_t n = 60 * static_cast<size_t>(p);  // a multiple of p, for alltoall
  const Buffer in = make_input(DType::kBF16, n, r, false);
  CollectiveOptions native;
  native.algorithm = Algorithm::kNative;
  DeviceCollectiveOptions o = device_options("quant:bits=4", 64, DeviceTransport::kAuto);
  CollectiveStats stats;
  o.stats = &stats;
  const Algorithm expected = p == 1 ? Algorithm::kAuto : Algorithm::kNative;
  const ChunkRange mine = chunk_range(n, p, r);
  o.threshold_bytes = n * 2 + 1;
  Buffer want = clone(in), got = clone(in);
  allreduce(world(), want.view(), want.view(), ReduceOp::kAverage, native);
  allreduce_device(world(), got.view(), got.view(), ReduceOp::kAverage, o);
  expect_bits_equal(got, want, "allreduce in place");
  EXPECT_EQ(stats.algorithm, expected);
  Buffer rs_want(DType::kBF16, mine.count), rs_got(DType::kBF16, mine.count);
  reduce_scatter(world(), in.view(), rs_want.view(), ReduceOp::kSum, native);
  reduce_scatter_device(world(), in.view(), rs_got.view(), ReduceOp::kSum, o);
  expect_bits_equal(rs_got, rs_want, "reduce_scatter");
  const size_t all_n = n * static_cast<size_t>(p);
  Buffer all_want(DType::kBF16, all_n), all_got(DType::kBF16, all_n);
  o.threshold_bytes = all_n * 2 + 1;
  allgather(world(), in.view(), all_want.view(), native);
  allgather_device(world(), in.view(), all_got.view(), o);
  expect_bits_equal(all_got, all_want, "allgather");
  o.threshold_bytes = n * 2 + 1;
  Buffer b_want = clone(in), b_got = clone(in);
  broadcast(world(), b_want.view(), p - 1, native);
  broadcast_device(world(), b_got.view(), p - 1, o);
  expect_bits_equal(b_got, b_want, "broadcast");
  Buffer a_want(DType::kBF16, n), a_got(DType::kBF16, n);
  alltoall(world(), in.view(), a_want.view(), native);
  alltoall_device(world(), in.view(), a_got.view(), o);
  expect_bits_equal(a_got, a_want, "alltoall");
  EXPECT_EQ(stats.algorithm, expected);
  // At the threshold: the ring.
  o.threshold_bytes = n * 2;
  Buffer out(DType::kBF16, n);
  allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, o);
  EXPECT_EQ(stats.algorithm, p == 1 ? Algorithm::kAuto : Algorithm::kRing);
}

// The staged transport forwards an allgather's payloads from the pinned buffers they arrived in:
// a rank copies back from the device only the payloads it encoded itself (its own block's
// segments), not the (p - 2) blocks it passes on.
TEST(DeviceColl, StagedAllgatherForwardsWithoutCopyingBack) {
  const int p = world().size(), r = world().rank();
  const size_t n = 3000;  // several segments of about 4000 bytes (f32)
  const Buffer in = make_input(DType::kF32, n, r, false);
  Buffer out(DType::kF32, n * static_cast<size_t>(p));
  DeviceCollectiveOptions o = device_options("quant:bits=4", 4000, DeviceTransport::kStagedMpi);
  CollectiveStats stats;
  o.stats = &stats;
  const size_t before = comm::testing::staged_send_copies();
  allgather_device(world(), in.view(), out.view(), o);
  const size_t copies = comm::testing::staged_send_copies() - before;
  if (p == 1) {
    EXPECT_EQ(copies, 0u);
  } else {
    EXPECT_GE(copies, 3u);  // the own block's segments (segments are whole codec blocks)
    EXPECT_EQ(stats.streams, copies * static_cast<size_t>(p - 1));
  }
}

// max_error: the largest difference from the native call's result, for every operation; 0 when
// the call does not compress.
TEST(DeviceColl, MaxErrorIsTheDifferenceFromTheNativeResult) {
  const int p = world().size(), r = world().rank();
  const size_t n = 3000 * static_cast<size_t>(p);
  const Buffer in = make_input(DType::kF32, n, r, false);
  CollectiveOptions native;
  native.algorithm = Algorithm::kNative;
  double error = -1;
  DeviceCollectiveOptions o = device_options("quant:bits=4", 4096, DeviceTransport::kAuto);
  o.max_error = &error;
  Buffer got(DType::kF32, n), want(DType::kF32, n);
  allreduce_device(world(), in.view(), got.view(), ReduceOp::kSum, o);
  allreduce(world(), in.view(), want.view(), ReduceOp::kSum, native);
  EXPECT_EQ(error, codec::max_abs_difference(got.view(), want.view()));
  if (p > 1) {
    EXPECT_GT(error, 0.0);
  }
  Buffer b_got = clone(in), b_want = clone(in);
  broadcast_device(world(), b_got.view(), 0, o);
  broadcast(world(), b_want.view(), 0, native);
  EXPECT_EQ(error, codec::max_abs_difference(b_got.view(), b_want.view()));
  Buffer a_got(DType::kF32, n), a_want(DType::kF32, n);
  alltoall_device(world(), in.view(), a_got.view(), o);
  alltoall(world(), in.view(), a_want.view(), native);
  EXPECT_EQ(error, codec::max_abs_difference(a_got.view(), a_want.view()));
  o.threshold_bytes = n * 4 + 1;  // native: nothing compressed
  error = -1;
  allreduce_device(world(), in.view(), got.view(), ReduceOp::kSum, o);
  EXPECT_EQ(error, 0.0);
}

TEST(DeviceColl, StatisticsDescribeTheRing) {
  const int p = world().size();
  const Buffer in = make_input(DType::kF32, 1000, world().rank(), false);
  Buffer out(DType::kF32, 1000);
  CollectiveStats stats;
  DeviceCollectiveOptions o = device_options("quant:bits=4", 1024, DeviceTransport::kAuto);
  o.stats = &stats;
  allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, o);
  if (p == 1) {
    EXPECT_EQ(stats.algorithm, Algorithm::kAuto);
    EXPECT_EQ(stats.streams, 0u);
  } else {
    EXPECT_EQ(stats.algorithm, Algorithm::kRing);
    EXPECT_TRUE(stats.compressed);
    EXPECT_GT(stats.streams, 0u);
    EXPECT_GT(stats.raw_bytes, stats.wire_bytes);
  }
  EXPECT_EQ(stats.message_bytes, 4000u);
}

}  // namespace
}  // namespace hycc::test
