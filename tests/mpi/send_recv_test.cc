// send/recv: codec x dtype x count; ranks pair up (0-1, 2-3, ..; the last of an odd count
// idles), the even rank sends, the odd rank receives and answers. The in-place flag of the case
// selects MPI_ANY_SOURCE for the receives instead. Received data equals the sender's exactly for
// lossless codecs, within one compression otherwise.
#include "coll/coll_internal.h"
#include "coll_test_util.h"

namespace hycc::test {
namespace {

void expect_received(const Buffer& got, int from, const Case& c, bool lossless,
                     const std::string& what) {
  const Buffer want = make_input(c.dtype, c.count, from, lossless);
  if (lossless) {
    expect_bits_equal(got, want, what);
  } else {
    expect_within(got, as_doubles(want.to_floats(), 0, c.count), compression_error(c.codec, 1), 1,
                  what);
  }
}

void run_send_recv_case(const Case& c) {
  const int p = world().size(), r = world().rank();
  const CollectiveOptions o = options_for(c);
  const bool lossless = o.codec.lossless();
  const std::string what = case_name(c);
  if (p % 2 == 1 && r == p - 1) return;  // no partner (point to point: nobody waits for us)
  const int partner = r ^ 1;
  const int source = c.in_place ? MPI_ANY_SOURCE : partner;
  const Buffer mine = make_input(c.dtype, c.count, r, lossless);
  Buffer got(c.dtype, c.count);
  RecvStatus status;
  if (r % 2 == 0) {
    send(world(), mine.view(), partner, 5, o);
    status = recv(world(), got.view(), source, 6);
  } else {
    status = recv(world(), got.view(), source, 5);
    send(world(), mine.view(), partner, 6, o);
  }
  EXPECT_EQ(status.source, partner) << what;
  EXPECT_GE(status.wire_bytes, 32u) << what;
  expect_received(got, partner, c, lossless, what);
}

std::vector<Case> send_recv_cases() {
  std::vector<Case> cases = make_cases(Algorithm::kAuto, test_codecs());
  for (Case& c : make_cases(Algorithm::kNative, {"none"})) cases.push_back(c);
  return cases;
}

class SendRecvTest : public ::testing::TestWithParam<Case> {};

TEST_P(SendRecvTest, DeliversData) { run_send_recv_case(GetParam()); }

// The statistics of a send: compressed above the threshold, not below it (where the stream is
// codec none, framed but not compressed, so it sends a little more than the message).
TEST(SendRecvStats, CompressedOnlyAboveTheThreshold) {
  const int p = world().size(), r = world().rank();
  if (p < 2 || r > 1) return;
  for (const size_t count : {size_t{100}, size_t{100000}}) {
    const Buffer mine = make_input(DType::kF32, count, r, false);
    Buffer got(DType::kF32, count);
    CollectiveOptions o;
    o.codec = CodecConfig::parse("quant:bits=8");
    o.threshold_bytes = 64 << 10;
    CollectiveStats stats;
    o.stats = &stats;
    const std::string what = std::to_string(count) + " floats";
    if (r == 0) {
      send(world(), mine.view(), 1, 9, o);
      EXPECT_EQ(stats.compressed, count * 4 >= o.threshold_bytes) << what;
      EXPECT_EQ(stats.message_bytes, count * 4) << what;
      if (stats.compressed) {
        EXPECT_LT(stats.wire_bytes, stats.raw_bytes) << what;
      } else {
        EXPECT_GT(stats.wire_bytes, stats.raw_bytes) << what;  // the envelope and the header
      }
    } else {
      recv(world(), got.view(), 0, 9);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(P2P, SendRecvTest, ::testing::ValuesIn(send_recv_cases()), CaseName());
INSTANTIATE_TEST_SUITE_P(FullLarge, SendRecvTest,
                         ::testing::ValuesIn(full_large_cases(Algorithm::kAuto)), CaseName());

// Several segmented messages on one tag arrive in order, whatever their compressed sizes.
TEST(SendRecv, MessagesOnOneTagStayInOrder) {
  const int p = world().size(), r = world().rank();
  if (p % 2 == 1 && r == p - 1) return;
  CollectiveOptions o;
  o.codec = CodecConfig::parse("eb:abs=1e-3");
  o.threshold_bytes = 0;
  o.segment_bytes = 256;
  const std::vector<size_t> counts = {1000, 0, 3, 5000};
  if (r % 2 == 0) {
    for (size_t k = 0; k < counts.size(); ++k) {
      const Buffer b = make_input(DType::kF32, counts[k], static_cast<int>(k), false);
      send(world(), b.view(), r + 1, 9, o);
    }
  } else {
    for (size_t k = 0; k < counts.size(); ++k) {
      Buffer got(DType::kF32, counts[k]);
      recv(world(), got.view(), r - 1, 9);
      const Buffer want = make_input(DType::kF32, counts[k], static_cast<int>(k), false);
      expect_within(got, as_doubles(want.to_floats(), 0, counts[k]), 1e-3, 1,
                    "message " + std::to_string(k));
    }
  }
}

// A message on hycc's tag that is not what hycc::send produces, or whose stream is corrupted,
// is a CorruptStream at the receiver, not a crash.
TEST(SendRecv, ForeignOrCorruptMessageIsCorruptStream) {
  const int p = world().size(), r = world().rank();
  if (p % 2 == 1 && r == p - 1) return;
  const int tag = comm::internal_tag(world(), 11, Operation::kSendRecv);
  if (r % 2 == 0) {
    // An envelope (magic, f32, 4 elements, 1 segment of 4) and a stream with a flipped bit.
    const std::vector<float> values = {1, 2, 3, 4};
    std::vector<std::byte> stream =
        compress(CodecConfig::parse("none"), ConstTensorView{DType::kF32, 4, values.data()});
    stream.back() ^= std::byte{1};
    std::vector<std::byte> message(32, std::byte{0});
    std::memcpy(message.data(), "HYP1", 4);
    const uint64_t fields[3] = {4, 1, 4};
    std::memcpy(message.data() + 8, fields, sizeof(fields));
    message.insert(message.end(), stream.begin(), stream.end());
    MPI_Send(message.data(), static_cast<int>(message.size()), MPI_BYTE, r + 1, tag, world().mpi());
    const char junk[5] = "junk";
    MPI_Send(junk, 4, MPI_BYTE, r + 1, tag, world().mpi());
  } else {
    Buffer got(DType::kF32, 4);
    EXPECT_THROW(recv(world(), got.view(), r - 1, 11), CorruptStream);
    EXPECT_THROW(recv(world(), got.view(), r - 1, 11), CorruptStream);
  }
}

}  // namespace
}  // namespace hycc::test
