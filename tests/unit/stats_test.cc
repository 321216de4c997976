// CommStats: accumulation per (dimension, operation), totals, ratio and transfer time, the table
// and the JSON.
#include <gtest/gtest.h>

#include <string>

#include "hycc/stats.h"

namespace hycc {
namespace {

CollectiveStats call(size_t raw, size_t wire, double codec, double seconds, bool compressed) {
  CollectiveStats s;
  s.message_bytes = raw;
  s.raw_bytes = raw;
  s.wire_bytes = wire;
  s.codec_seconds = codec;
  s.seconds = seconds;
  s.compressed = compressed;
  return s;
}

TEST(CommStats, AccumulatesPerDimensionAndOperation) {
  CommStats st;
  EXPECT_TRUE(st.empty());
  EXPECT_EQ(st.find(Dimension::kDp, Operation::kAllreduce), nullptr);
  st.record(Dimension::kDp, Operation::kAllreduce, call(4000, 1000, 0.5, 2.0, true));
  st.record(Dimension::kDp, Operation::kAllreduce, call(4000, 1000, 0.25, 1.0, true));
  st.record(Dimension::kTp, Operation::kAllreduce, call(800, 800, 0.0, 0.5, false));
  st.record_error(Dimension::kDp, Operation::kAllreduce, 0.01);
  st.record_error(Dimension::kDp, Operation::kAllreduce, 0.03);

  const StatsEntry* dp = st.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->calls, 2u);
  EXPECT_EQ(dp->compressed_calls, 2u);
  EXPECT_EQ(dp->raw_bytes, 8000u);
  EXPECT_EQ(dp->wire_bytes, 2000u);
  EXPECT_DOUBLE_EQ(dp->ratio(), 4.0);
  EXPECT_DOUBLE_EQ(dp->codec_seconds, 0.75);
  EXPECT_DOUBLE_EQ(dp->transfer_seconds(), 2.25);
  EXPECT_EQ(dp->error_samples, 2u);
  EXPECT_DOUBLE_EQ(dp->max_error, 0.03);

  const StatsEntry t = st.total();
  EXPECT_EQ(t.calls, 3u);
  EXPECT_EQ(t.compressed_calls, 2u);
  EXPECT_EQ(t.raw_bytes, 8800u);
  EXPECT_EQ(t.wire_bytes, 2800u);
  EXPECT_DOUBLE_EQ(t.ratio(), 8800.0 / 2800.0);
  EXPECT_EQ(st.find(Dimension::kTp, Operation::kAllgather), nullptr);
}

// Device calls count the host's synchronizations (CollectiveStats::host_syncs): per entry, in the
// JSON, and as the summary's last line, per device call; host calls add nothing to them.
TEST(CommStats, DeviceCallsReportTheHostsSynchronizations) {
  CommStats st;
  st.record(Dimension::kTp, Operation::kAllreduce, call(800, 400, 0.0, 0.5, true));
  EXPECT_EQ(st.table().find("host syncs"), std::string::npos) << "no device call yet";
  CollectiveStats device = call(800, 400, 0.0, 0.5, true);
  device.on_device = true;
  device.host_syncs = 3;
  st.record(Dimension::kDp, Operation::kAllreduce, device);
  device.host_syncs = 0;
  st.record(Dimension::kDp, Operation::kAllreduce, device);
  const StatsEntry* dp = st.find(Dimension::kDp, Operation::kAllreduce);
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->device_calls, 2u);
  EXPECT_EQ(dp->host_syncs, 3u);
  EXPECT_EQ(st.find(Dimension::kTp, Operation::kAllreduce)->device_calls, 0u);
  EXPECT_NE(st.table().find("#host syncs per device call: dp/allreduce 1.5 (2 calls)\n"),
            std::string::npos)
      << st.table();
  EXPECT_NE(st.json().find("\"device_calls\": 2, \"host_syncs\": 3"), std::string::npos)
      << st.json();
  EXPECT_EQ(st.total().host_syncs, 3u);
}

TEST(CommStats, TableAndJsonNameEveryEntry) {
  CommStats st;
  st.record(Dimension::kDp, Operation::kAllreduce, call(4000, 1000, 0.5, 2.0, true));
  st.record(Dimension::kZeroParam, Operation::kAllgather, call(2000, 1000, 0.1, 0.2, true));
  const std::string table = st.table();
  EXPECT_NE(table.find("dp          allreduce"), std::string::npos) << table;
  EXPECT_NE(table.find("zero_param  allgather"), std::string::npos) << table;
  EXPECT_NE(table.find("   4.00 "), std::string::npos) << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
  const std::string json = st.json();
  EXPECT_NE(json.find("{\"dimension\": \"dp\", \"operation\": \"allreduce\", \"calls\": 1,"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"ratio\": 4,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"total\": {\"calls\": 2,"), std::string::npos) << json;
}

}  // namespace
}  // namespace hycc
