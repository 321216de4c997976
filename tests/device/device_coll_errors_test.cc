// Failures of the device collectives (host-emulated device): invalid local arguments give
// InvalidArgument on the ranks that passed them and CommError on the others; unsupported codecs
// and transports are InvalidArgument everywhere; a backend that cannot run is Unavailable;
// malformed payloads give CorruptStream on the ranks that decode them, after the message pattern
// completed. Nothing hangs, and the communicator stays usable afterwards.
#include <functional>

#include "coll_test_util.h"
#include "comm/transport.h"
#include "hycc/collectives_device.h"
#include "hycc/device.h"

namespace hycc::test {
namespace {

DeviceCollectiveOptions emulated(const char* spec = "quant:bits=4") {
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.segment_bytes = 64;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

// A correct device allreduce with exact inputs, to show that nothing is left in flight.
void expect_still_works() {
  const Buffer in = make_input(DType::kF32, 41, world().rank(), true);
  Buffer out(DType::kF32, 41);
  allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, emulated("none"));
  expect_bits_equal(out, reference_reduce(gather_all(in), DType::kF32, ReduceOp::kSum),
                    "allreduce_device after a failed call");
}

TEST(DeviceCollErrors, WrongSizeOnOneRank) {
  const int p = world().size(), r = world().rank();
  const Buffer in = make_input(DType::kF32, 20, r, true);
  Buffer out(DType::kF32, 21);
  const Outcome others = p == 1 ? Outcome::kOk : Outcome::kComm;
  const bool culprit = r == p - 1;
  expect_outcome(culprit ? Outcome::kInvalid : others, "allreduce_device with recv too long", [&] {
    allreduce_device(world(), in.view(), {DType::kF32, culprit ? 21u : 20u, out.data()},
                     ReduceOp::kSum, emulated());
  });
  expect_outcome(culprit ? Outcome::kInvalid : others, "allgather_device with recv too short", [&] {
    Buffer all(DType::kF32, 20 * static_cast<size_t>(p));
    allgather_device(world(), in.view(),
                     {DType::kF32, culprit ? all.count() - 1 : all.count(), all.data()},
                     emulated());
  });
  expect_outcome(culprit ? Outcome::kInvalid : others, "broadcast_device with a bad root", [&] {
    Buffer b = clone(in);
    broadcast_device(world(), b.view(), culprit ? p : 0, emulated());
  });
  const ChunkRange mine = chunk_range(20, p, r);
  expect_outcome(culprit ? Outcome::kInvalid : others, "reduce_scatter_device, wrong chunk", [&] {
    reduce_scatter_device(world(), in.view(),
                          {DType::kF32, culprit ? mine.count + 1 : mine.count, out.data()},
                          ReduceOp::kSum, emulated());
  });
  // alltoall: the counts agree, but they are not a multiple of the ranks (everyone's problem).
  if (p > 1) {
    const Buffer odd = make_input(DType::kF32, 2 * static_cast<size_t>(p) + 1, r, true);
    Buffer odd_out(DType::kF32, odd.count());
    expect_outcome(Outcome::kInvalid, "alltoall_device with a count not a multiple of p",
                   [&] { alltoall_device(world(), odd.view(), odd_out.view(), emulated()); });
  }
  expect_still_works();
}

TEST(DeviceCollErrors, DisagreeingCountsAreCommErrors) {
  if (world().size() == 1) GTEST_SKIP() << "needs two ranks";
  const size_t n = world().rank() == 0 ? 10 : 12;
  const Buffer in = make_input(DType::kF32, n, world().rank(), true);
  Buffer out(DType::kF32, n);
  expect_outcome(Outcome::kComm, "allreduce_device with different counts", [&] {
    allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, emulated());
  });
  expect_still_works();
}

TEST(DeviceCollErrors, BadSegmentSizes) {
  const Buffer in = make_input(DType::kF32, 8, world().rank(), true);
  Buffer out(DType::kF32, 8);
  DeviceCollectiveOptions bad_segment = emulated();
  bad_segment.segment_bytes = 0;
  expect_outcome(Outcome::kInvalid, "segment_bytes 0",
                 [&] { allgather_device(world(), in.view(), out.view(), bad_segment); });
  expect_still_works();
}

TEST(DeviceCollErrors, CudaBackendWithoutDeviceIsUnavailable) {
  if (device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const Buffer in = make_input(DType::kF32, 8, world().rank(), true);
  Buffer out(DType::kF32, 8);
  DeviceCollectiveOptions cuda = emulated();
  cuda.backend = DeviceBackend::kCuda;
  expect_outcome(Outcome::kUnavailable, "CUDA backend without a device",
                 [&] { allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, cuda); });
  expect_still_works();
}

// With `filter` applied to what rank 0 sends, every codec x {allreduce, allgather}: the ranks
// that decode what rank 0 sent (or forwarded) throw CorruptStream, rank 0 itself completes,
// nobody hangs.
void expect_corrupt_from_rank0(const std::function<size_t(std::byte*, size_t)>& filter,
                               const std::string& how) {
  const int p = world().size(), r = world().rank();
  const size_t n = 1000;
  for (const std::string spec :
       {"none", "bf16", "quant:bits=4", "eb:abs=1e-3", "mpc", "zfp:rate=8"}) {
    for (const char* op : {"allreduce", "allgather"}) {
      if (r == 0) comm::testing::set_staged_send_filter(filter);
      const Buffer in = make_input(DType::kF32, n, r, false);
      Buffer out(DType::kF32, std::string(op) == "allreduce" ? n : n * static_cast<size_t>(p));
      const Outcome want = r == 0 || p == 1 ? Outcome::kOk : Outcome::kCorrupt;
      expect_outcome(want, spec + " " + op + " with " + how + " payloads from rank 0", [&] {
        DeviceCollectiveOptions o = emulated(spec.c_str());
        o.segment_bytes = 1024;
        if (std::string(op) == "allreduce") {
          allreduce_device(world(), in.view(), out.view(), ReduceOp::kSum, o);
        } else {
          allgather_device(world(), in.view(), out.view(), o);
        }
      });
      comm::testing::set_staged_send_filter({});
    }
  }
}

// Rank 0 sends every payload one byte short.
TEST(DeviceCollErrors, TruncatedPayloadsAreCorruptStreamsOnTheDecodingRanks) {
  expect_corrupt_from_rank0(
      [](std::byte*, size_t size) { return size == 0 ? size_t{0} : size - 1; }, "truncated");
  expect_still_works();
}

// Rank 0 flips one bit in the middle of every payload it sends (the size stays right): caught by
// the checksums, for every codec, "none" included; without them, codec "none" delivers the
// altered values silently (what the checksum is for).
TEST(DeviceCollErrors, AlteredPayloadsFailTheirChecksum) {
  const auto flip = [](std::byte* data, size_t size) {
    if (size > 16) data[size / 2] ^= std::byte{0x10};
    return size;
  };
  expect_corrupt_from_rank0(flip, "altered");
  const int p = world().size(), r = world().rank();
  const size_t n = 1000;
  // Without checksums an altered "none" payload goes unnoticed: the result is wrong on the ranks
  // that received rank 0's data, and nothing is thrown.
  const Buffer in = make_input(DType::kF32, n, r, true);
  Buffer right(DType::kF32, n * static_cast<size_t>(p)), altered(DType::kF32, right.count());
  DeviceCollectiveOptions o = emulated("none");
  o.segment_bytes = 1024;
  o.checksum = false;
  allgather_device(world(), in.view(), right.view(), o);
  if (r == 0) comm::testing::set_staged_send_filter(flip);
  expect_outcome(Outcome::kOk, "allgather without checksums",
                 [&] { allgather_device(world(), in.view(), altered.view(), o); });
  comm::testing::set_staged_send_filter({});
  EXPECT_EQ(altered.bits_equal(right), r == 0 || p == 1);
  expect_still_works();
}

}  // namespace
}  // namespace hycc::test
