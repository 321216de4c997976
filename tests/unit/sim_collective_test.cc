// Performance model: the alpha-beta time of one collective (the library's cost model) per
// collective and algorithm: ring shares and steps, codec work, and the two error-feedback forms
// of gradient compressors.
#include <gtest/gtest.h>

#include "collective_time.h"

namespace hycc::sim {
namespace {

GroupLinks links_of(long n, double bandwidth, double latency) {
  GroupLinks l;
  l.group_size = n;
  l.bandwidth = bandwidth;
  l.latency = latency;
  return l;
}

TEST(SimCollective, RingSharesAndSteps) {
  const CodecFigures none;
  const auto at = [&](Collective c, long n) {
    return collective_time(c, 8000, links_of(n, 1000, 1), none);
  };
  EXPECT_DOUBLE_EQ(at(Collective::kAllreduce, 4).raw_bytes, 12000);  // 2 (n-1)/n S
  EXPECT_DOUBLE_EQ(at(Collective::kAllreduce, 4).transfer, 6 + 12);  // 2 (n-1) messages
  EXPECT_DOUBLE_EQ(at(Collective::kReduceScatter, 4).raw_bytes, 6000);
  EXPECT_DOUBLE_EQ(at(Collective::kReduceScatter, 4).transfer, 3 + 6);
  EXPECT_DOUBLE_EQ(at(Collective::kAllgather, 8).raw_bytes, 7000);
  EXPECT_DOUBLE_EQ(at(Collective::kSendRecv, 8).raw_bytes, 8000);
  EXPECT_DOUBLE_EQ(at(Collective::kSendRecv, 8).transfer, 1 + 8);
  EXPECT_DOUBLE_EQ(at(Collective::kAllreduce, 1).total(), 0);  // alone: nothing to send
}

TEST(SimCollective, CodecWorkPerAlgorithm) {
  // Compress at 1 B/s, decompress for free: the codec time is the compressed share of S.
  const CodecFigures compress{"quant", 4, 1, 0};
  const CodecFigures decompress{"quant", 4, 0, 1};
  const auto share = [](Collective c, const CodecFigures& f) {
    return collective_time(c, 1, links_of(4, 1e9, 0), f).codec;
  };
  // Allreduce: reduce-scatter recompresses at each of n-1 hops, the allgather compresses its
  // chunk once: n chunks of S/n compressed, 2 (n-1) decompressed.
  EXPECT_DOUBLE_EQ(share(Collective::kAllreduce, compress), 1);
  EXPECT_DOUBLE_EQ(share(Collective::kAllreduce, decompress), 1.5);
  EXPECT_DOUBLE_EQ(share(Collective::kReduceScatter, compress), 0.75);
  EXPECT_DOUBLE_EQ(share(Collective::kReduceScatter, decompress), 0.75);
  EXPECT_DOUBLE_EQ(share(Collective::kAllgather, compress), 0.25);
  EXPECT_DOUBLE_EQ(share(Collective::kAllgather, decompress), 0.75);
  EXPECT_DOUBLE_EQ(share(Collective::kSendRecv, compress), 1);
}

TEST(SimCollective, AlphaBetaTimeByHand) {
  GroupLinks links = links_of(4, 1000, 0.5);
  CodecFigures c{"quant", 4, 2000, 8000};
  const CollectiveTime z = collective_time(Collective::kAllreduce, 4000, links, c);
  EXPECT_DOUBLE_EQ(z.raw_bytes, 6000);
  EXPECT_DOUBLE_EQ(z.wire_bytes, 1500);
  EXPECT_DOUBLE_EQ(z.transfer, 3 + 1.5);
  EXPECT_DOUBLE_EQ(z.codec, 4000 / 2000.0 + 1.5 * 4000 / 8000.0);

  c.compress_bandwidth = c.decompress_bandwidth = 0;  // free codec
  EXPECT_DOUBLE_EQ(collective_time(Collective::kAllreduce, 4000, links, c).codec, 0);
}

TEST(SimCollective, ErrorFeedbackForms) {
  const GroupLinks links = links_of(4, 1000, 0.5);
  CodecFigures c{"ef+quant", 4, 2000, 8000};
  c.feedback = Feedback::kCompressOnce;  // every rank's stream to every rank
  const CollectiveTime once = collective_time(Collective::kAllreduce, 4000, links, c);
  EXPECT_DOUBLE_EQ(once.raw_bytes, 6000);     // what the uncompressed ring sends
  EXPECT_DOUBLE_EQ(once.wire_bytes, 3000);    // (n-1) S / ratio
  EXPECT_DOUBLE_EQ(once.transfer, 1.5 + 3);   // n-1 messages
  EXPECT_DOUBLE_EQ(once.codec, 2 + 4 * 0.5);  // S compressed, n S decoded
  // Beyond 2 x ratio ranks compress-once sends more than the uncompressed ring.
  const GroupLinks many = links_of(24, 1000, 0);
  EXPECT_GT(collective_time(Collective::kAllreduce, 4000, many, c).wire_bytes,
            collective_time(Collective::kAllreduce, 4000, many, CodecFigures{}).wire_bytes);
  // A reduce-scatter runs the first stage only: each chunk to its owner, (n-1)/n S / ratio, n
  // messages (one length exchange), S compressed and (2 - 1/n) S decoded; ef2+ alike.
  const CollectiveTime rs = collective_time(Collective::kReduceScatter, 4000, links, c);
  EXPECT_DOUBLE_EQ(rs.wire_bytes, 750);
  EXPECT_DOUBLE_EQ(rs.transfer, 4 * 0.5 + 0.75);
  EXPECT_DOUBLE_EQ(rs.codec, 2 + 1.75 * 0.5);
  EXPECT_LT(collective_time(Collective::kReduceScatter, 4000, many, c).wire_bytes,
            collective_time(Collective::kReduceScatter, 4000, many, CodecFigures{}).wire_bytes);

  c.feedback = Feedback::kTwoStage;  // the ring's bytes, compressed
  const CollectiveTime two = collective_time(Collective::kAllreduce, 4000, links, c);
  EXPECT_DOUBLE_EQ(two.wire_bytes, 1500);
  EXPECT_DOUBLE_EQ(two.transfer, 8 * 0.5 + 1.5);  // 2 (n-1) messages + 2 length exchanges
  EXPECT_DOUBLE_EQ(two.codec, 1.25 * 2 + 2.75 * 0.5);
  const CollectiveTime two_rs = collective_time(Collective::kReduceScatter, 4000, links, c);
  EXPECT_DOUBLE_EQ(two_rs.wire_bytes, rs.wire_bytes);
  EXPECT_DOUBLE_EQ(two_rs.total(), rs.total());
  // Where the compressor does not reduce (a gather), its codec runs in the ring.
  EXPECT_DOUBLE_EQ(collective_time(Collective::kAllgather, 4000, links, c).wire_bytes, 750);
}

}  // namespace
}  // namespace hycc::sim
