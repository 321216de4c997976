// send_device/recv_device with the host-emulated device: what the receiver decodes is what the
// host send/recv delivers, bit for bit (same codec, segment size and seed), for every codec x
// dtype x count; mismatched receives and malformed payloads fail on the receiver only.
#include <functional>

#include "coll_test_util.h"
#include "comm/transport.h"
#include "hycc/collectives_device.h"

namespace hycc::test {
namespace {

DeviceCollectiveOptions emulated(const std::string& spec, size_t segment_bytes) {
  DeviceCollectiveOptions o;
  o.codec = CodecConfig::parse(spec);
  o.segment_bytes = segment_bytes;
  o.seed = 7;
  o.backend = DeviceBackend::kHostEmulation;
  return o;
}

// Every rank sends to rank + 1 and receives from rank - 1; even ranks send first, so that
// blocking sends of large messages cannot wait on each other in a cycle.
void ring_exchange(const std::function<void()>& send_part, const std::function<void()>& recv_part) {
  if (world().rank() % 2 == 0) {
    send_part();
    recv_part();
  } else {
    recv_part();
    send_part();
  }
}

// Both transports; the NCCL one (its MPI stand-in) with three codecs.
TEST(DeviceSendRecv, MatchesHostSendRecvBitForBit) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const std::vector<std::string> staged_specs = {
      "none", "bf16",       "quant:bits=4",      "eb:abs=1e-3",
      "mpc",  "zfp:rate=8", "zfp:accuracy=1e-3", "zstd"};
  const std::vector<std::string> nccl_specs = {"none", "quant:bits=4", "eb:abs=1e-3"};
  for (const DeviceTransport t : {DeviceTransport::kStagedMpi, DeviceTransport::kNccl}) {
    for (const std::string& spec : t == DeviceTransport::kNccl ? nccl_specs : staged_specs) {
      for (const DType d : test_dtypes()) {
        for (const size_t n :
             {size_t{0}, size_t{1}, size_t{7}, size_t{100000} / kSanitizerDivisor + 3}) {
          const size_t seg = n > 7 ? (size_t{32} << 10) / kSanitizerDivisor : size_t{4};
          const std::string what = "send/recv " + spec +
                                   (t == DeviceTransport::kNccl ? " nccl " : " staged ") +
                                   std::string(dtype_name(d)) + " n=" + std::to_string(n);
          const Buffer mine = make_input(d, n, r, false);
          Buffer host_got(d, n), dev_got(d, n);
          CollectiveOptions host;
          host.codec = CodecConfig::parse(spec);
          host.threshold_bytes = 0;
          host.segment_bytes = seg;
          host.seed = 7;
          ring_exchange([&] { send(world(), mine.view(), right, 5, host); },
                        [&] { recv(world(), host_got.view(), left, 5); });
          DeviceCollectiveOptions o = emulated(spec, seg);
          o.transport = t;
          RecvStatus status;
          ring_exchange([&] { send_device(world(), mine.view(), right, 5, o); },
                        [&] { status = recv_device(world(), dev_got.view(), left, 5, o); });
          EXPECT_EQ(status.source, left) << what;
          expect_bits_equal(dev_got, host_got, what);
        }
      }
    }
  }
}

TEST(DeviceSendRecv, AnySourceAndStatistics) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const Buffer data = make_input(DType::kF32, 5000, 1, true);
  if (r == 1) {
    CollectiveStats stats;
    DeviceCollectiveOptions o = emulated("mpc", 4096);
    o.stats = &stats;
    send_device(world(), data.view(), 0, 9, o);
    EXPECT_EQ(stats.streams, 5u);
    EXPECT_EQ(stats.raw_bytes, 20000u);
    EXPECT_TRUE(stats.compressed);
  } else if (r == 0) {
    Buffer got(DType::kF32, 5000);
    const RecvStatus s = recv_device(world(), got.view(), MPI_ANY_SOURCE, 9, emulated("none", 1));
    EXPECT_EQ(s.source, 1);
    EXPECT_TRUE(got.bits_equal(data)) << "mpc is lossless";
  }
}

TEST(DeviceSendRecv, MismatchedReceiveIsCommErrorAfterConsumingTheMessage) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const Buffer data = make_input(DType::kF32, 300, r, true);
  if (r == 0) {
    send_device(world(), data.view(), 1, 3, emulated("quant:bits=4", 256));
    send_device(world(), data.view(), 1, 3, emulated("none", 256));
  } else if (r == 1) {
    Buffer wrong(DType::kF32, 299), right_size(DType::kF32, 300);
    EXPECT_THROW(recv_device(world(), wrong.view(), 0, 3, emulated("none", 1)), CommError);
    recv_device(world(), right_size.view(), 0, 3, emulated("none", 1));
    EXPECT_TRUE(right_size.bits_equal(make_input(DType::kF32, 300, 0, true)))
        << "the next message arrives intact";
  }
}

TEST(DeviceSendRecv, TruncatedPayloadIsCorruptStreamOnTheReceiver) {
  const int p = world().size(), r = world().rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const Buffer data = make_input(DType::kF32, 1000, r, false);
  for (const char* spec : {"none", "quant:bits=4", "eb:abs=1e-3", "mpc", "zfp:rate=8"}) {
    if (r == 0) {
      comm::testing::set_staged_send_filter(
          [](std::byte*, size_t size) { return size == 0 ? size_t{0} : size - 1; });
      send_device(world(), data.view(), 1, 4, emulated(spec, 1024));
      comm::testing::set_staged_send_filter({});
    } else if (r == 1) {
      Buffer got(DType::kF32, 1000);
      EXPECT_THROW(recv_device(world(), got.view(), 0, 4, emulated("none", 1)), CorruptStream)
          << spec;
    }
  }
}

}  // namespace
}  // namespace hycc::test
