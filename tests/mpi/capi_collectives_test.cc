// The C API's collectives (include/hycc/hycc.h) against the C++ collectives on the same inputs
// and options: bit-identical results on every rank, MPI_IN_PLACE as MPI defines it, the call
// statistics, the policy engine, and failures as statuses on every rank.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "coll_test_util.h"
#include "hycc/collectives_device.h"
#include "hycc/hycc.h"
#include "hycc/policy_engine.h"

namespace hycc::test {
namespace {

// A C API call that must succeed on this rank.
void expect_ok(hycc_status s, const std::string& what) {
  EXPECT_EQ(s, HYCC_OK) << what << ": " << hycc_status_name(s) << ": " << hycc_last_error();
}

// The same codec, threshold and seed for both APIs.
struct BothApis {
  explicit BothApis(const std::string& spec) : handle(spec) {
    hycc_options_init(&c);
    c.codec = handle.codec;
    c.threshold_bytes = 0;
    c.seed = 7;
    cpp.codec = CodecConfig::parse(spec);
    cpp.threshold_bytes = 0;
    cpp.seed = 7;
  }
  CodecHandle handle;
  hycc_options c;
  CollectiveOptions cpp;
};

const char* const kSpecs[] = {"none", "bf16", "quant:bits=8", "quant:bits=3,round=stochastic",
                              "mpc"};
const DType kDtypes[] = {DType::kF32, DType::kBF16};

std::string name_of(const std::string& op, const std::string& spec, DType dtype) {
  return op + " " + spec + " " + std::string(dtype_name(dtype));
}

TEST(CapiCollectives, AllreduceEqualsTheCppApi) {
  const int r = world().rank();
  for (const char* spec : kSpecs) {
    for (const DType dtype : kDtypes) {
      const std::string what = name_of("allreduce", spec, dtype);
      BothApis s(spec);
      const Buffer input = make_input(dtype, 1000, r, s.cpp.codec.lossless());
      Buffer want(dtype, 1000), out(dtype, 1000);
      allreduce(world(), input.view(), want.view(), ReduceOp::kSum, s.cpp);
      expect_ok(hycc_allreduce(input.view().data, out.data(), 1000, static_cast<int>(dtype),
                               HYCC_SUM, MPI_COMM_WORLD, &s.c),
                what);
      EXPECT_TRUE(out.bits_equal(want)) << what;
      Buffer in_place = clone(input);
      expect_ok(hycc_allreduce(MPI_IN_PLACE, in_place.data(), 1000, static_cast<int>(dtype),
                               HYCC_SUM, MPI_COMM_WORLD, &s.c),
                what + " MPI_IN_PLACE");
      EXPECT_TRUE(in_place.bits_equal(want)) << what << " MPI_IN_PLACE";
      expect_identical_across_ranks(out, what);
    }
  }
}

TEST(CapiCollectives, ReduceScatterEqualsTheCppApi) {
  const int p = world().size(), r = world().rank();
  const ChunkRange mine = chunk_range(1001, p, r);
  for (const char* spec : kSpecs) {
    for (const DType dtype : kDtypes) {
      const std::string what = name_of("reduce_scatter", spec, dtype);
      BothApis s(spec);
      const Buffer input = make_input(dtype, 1001, r, s.cpp.codec.lossless());
      Buffer want(dtype, mine.count), out(dtype, mine.count);
      reduce_scatter(world(), input.view(), want.view(), ReduceOp::kAverage, s.cpp);
      expect_ok(hycc_reduce_scatter(input.view().data, 1001, out.data(), static_cast<int>(dtype),
                                    HYCC_AVERAGE, MPI_COMM_WORLD, &s.c),
                what);
      EXPECT_TRUE(out.bits_equal(want)) << what;
      Buffer in_place = clone(input);  // this rank's chunk of send receives the result
      expect_ok(hycc_reduce_scatter(in_place.data(), 1001, view_of(in_place, mine.offset, 0).data,
                                    static_cast<int>(dtype), HYCC_AVERAGE, MPI_COMM_WORLD, &s.c),
                what + " in place");
      EXPECT_TRUE(part_of(in_place, mine.offset, mine.count).bits_equal(want)) << what;
    }
  }
}

TEST(CapiCollectives, AllgatherBroadcastAlltoallEqualTheCppApi) {
  const int p = world().size(), r = world().rank();
  const auto ranks = static_cast<size_t>(p);
  for (const char* spec : kSpecs) {
    for (const DType dtype : kDtypes) {
      BothApis s(spec);
      const bool lossless = s.cpp.codec.lossless();
      const int t = static_cast<int>(dtype);

      std::string what = name_of("allgather", spec, dtype);
      const Buffer block = make_input(dtype, 300, r, lossless);
      Buffer want(dtype, 300 * ranks), out(dtype, 300 * ranks);
      allgather(world(), block.view(), want.view(), s.cpp);
      expect_ok(hycc_allgather(block.view().data, 300, out.data(), t, MPI_COMM_WORLD, &s.c), what);
      EXPECT_TRUE(out.bits_equal(want)) << what;
      Buffer in_place(dtype, 300 * ranks);
      std::memcpy(view_of(in_place, 300 * static_cast<size_t>(r), 300).data, block.view().data,
                  300 * dtype_size(dtype));
      expect_ok(hycc_allgather(MPI_IN_PLACE, 300, in_place.data(), t, MPI_COMM_WORLD, &s.c), what);
      EXPECT_TRUE(in_place.bits_equal(want)) << what << " MPI_IN_PLACE";

      what = name_of("broadcast", spec, dtype);
      const int root = p - 1;
      Buffer b_want = make_input(dtype, 777, r, lossless), b_out = clone(b_want);
      broadcast(world(), b_want.view(), root, s.cpp);
      expect_ok(hycc_broadcast(b_out.data(), 777, t, root, MPI_COMM_WORLD, &s.c), what);
      EXPECT_TRUE(b_out.bits_equal(b_want)) << what;

      what = name_of("alltoall", spec, dtype);
      const Buffer send = make_input(dtype, 200 * ranks, r, lossless);
      Buffer a_want(dtype, 200 * ranks), a_out(dtype, 200 * ranks);
      alltoall(world(), send.view(), a_want.view(), s.cpp);
      expect_ok(hycc_alltoall(send.view().data, a_out.data(), 200 * ranks, t, MPI_COMM_WORLD, &s.c),
                what);
      EXPECT_TRUE(a_out.bits_equal(a_want)) << what;
      Buffer a_in_place = clone(send);
      expect_ok(
          hycc_alltoall(MPI_IN_PLACE, a_in_place.data(), 200 * ranks, t, MPI_COMM_WORLD, &s.c),
          what);
      EXPECT_TRUE(a_in_place.bits_equal(a_want)) << what << " MPI_IN_PLACE";
    }
  }
}

TEST(CapiCollectives, SendRecvAroundTheRing) {
  const int p = world().size(), r = world().rank();
  if (p < 2) GTEST_SKIP() << "needs two ranks";
  for (const char* spec : kSpecs) {
    BothApis s(spec);
    const Buffer mine = make_input(DType::kF32, 5000, r, s.cpp.codec.lossless());
    const Buffer from_prev = make_input(DType::kF32, 5000, (r + p - 1) % p, s.cpp.codec.lossless());
    // What the C++ API delivers for the previous rank's tensor: its own decode of the streams.
    Buffer want(DType::kF32, 5000), got(DType::kF32, 5000);
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    if (r % 2 == 0) {
      send(world(), mine.view(), next, 5, s.cpp);
      recv(world(), want.view(), prev, 5);
      expect_ok(hycc_send(mine.view().data, 5000, HYCC_F32, next, 6, MPI_COMM_WORLD, &s.c), spec);
      int source = -1;
      expect_ok(hycc_recv(got.data(), 5000, HYCC_F32, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &source),
                spec);
      EXPECT_EQ(source, prev);
    } else {
      recv(world(), want.view(), prev, 5);
      send(world(), mine.view(), next, 5, s.cpp);
      int source = -1;
      expect_ok(hycc_recv(got.data(), 5000, HYCC_F32, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &source),
                spec);
      EXPECT_EQ(source, prev);
      expect_ok(hycc_send(mine.view().data, 5000, HYCC_F32, next, 6, MPI_COMM_WORLD, &s.c), spec);
    }
    EXPECT_TRUE(got.bits_equal(want)) << spec;
    if (s.cpp.codec.lossless()) {
      EXPECT_TRUE(got.bits_equal(from_prev)) << spec;
    }
  }
}

TEST(CapiCollectives, CallStatisticsAreTheCppOnes) {
  const int r = world().rank();
  BothApis s("quant:bits=4");
  hycc_call_stats stats;
  s.c.stats = &stats;
  CollectiveStats want;
  s.cpp.stats = &want;
  const Buffer input = make_input(DType::kF32, 100000, r, false);
  Buffer out(DType::kF32, 100000);
  allreduce(world(), input.view(), out.view(), ReduceOp::kSum, s.cpp);
  expect_ok(hycc_allreduce(input.view().data, out.data(), 100000, HYCC_F32, HYCC_SUM,
                           MPI_COMM_WORLD, &s.c),
            "allreduce");
  EXPECT_EQ(stats.algorithm, static_cast<int>(want.algorithm));
  EXPECT_EQ(stats.compressed, want.compressed ? 1 : 0);
  EXPECT_EQ(stats.message_bytes, want.message_bytes);
  EXPECT_EQ(stats.raw_bytes, want.raw_bytes);
  EXPECT_EQ(stats.wire_bytes, want.wire_bytes);
  EXPECT_EQ(stats.streams, want.streams);
  EXPECT_GE(stats.seconds, stats.codec_seconds);
  if (world().size() > 1) {
    EXPECT_EQ(stats.compressed, 1);
    EXPECT_LT(stats.wire_bytes, stats.raw_bytes / 4);
  }
}

// True if the statistics JSON has an entry of exactly `calls` calls.
bool has_calls(const std::string& json, int calls) {
  const std::string key = "\"calls\": " + std::to_string(calls);
  for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at + 1)) {
    const size_t end = at + key.size();
    if (end < json.size() && (json[end] < '0' || json[end] > '9')) return true;
  }
  return false;
}

// auto through the C API: set link figures decide, calibrate measures alike on every rank.
TEST(CapiCollectives, TheEngineMeasuresAndSetsLinksForAdaptiveRules) {
  MPI_Comm tp = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &tp), MPI_SUCCESS);
  MPI_Comm_set_name(tp, "tp");
  hycc_engine* engine = nullptr;
  expect_ok(hycc_engine_create("auto", &engine), "engine");
  const Buffer x = make_input(DType::kF32, 100000, world().rank(), false);
  Buffer out(DType::kF32, x.count());
  for (const double bandwidth : {1e6, 1e18}) {  // 1 MB/s: bf16 pays; unlimited: it cannot
    expect_ok(hycc_engine_set_link(engine, tp, 1e-5, bandwidth), "set_link");
    hycc_call_stats st;
    hycc_options o;
    hycc_options_init(&o);
    o.engine = engine;
    o.stats = &st;
    expect_ok(hycc_allreduce(x.view().data, out.data(), x.count(), HYCC_F32, HYCC_SUM, tp, &o),
              "tp allreduce");
    EXPECT_EQ(st.compressed != 0, world().size() > 1 && bandwidth < 1e9) << bandwidth;
  }
  double latency = -1, bandwidth = -1;
  expect_ok(hycc_engine_calibrate(engine, tp, &latency, &bandwidth), "calibrate");
  EXPECT_GE(latency, 0);
  EXPECT_GE(bandwidth, 0);
  double lo = bandwidth, hi = bandwidth;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
  EXPECT_EQ(hycc_engine_set_link(engine, tp, -1, 1e9), HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("must not be negative"), std::string::npos);
  EXPECT_EQ(hycc_engine_calibrate(nullptr, tp, nullptr, nullptr), HYCC_ERR_INVALID_ARGUMENT);
  hycc_engine_destroy(engine);
  MPI_Comm_free(&tp);
}

TEST(CapiCollectives, TheEngineAppliesThePolicyByCommunicatorName) {
  const int r = world().rank();
  MPI_Comm dp = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &dp), MPI_SUCCESS);
  MPI_Comm_set_name(dp, "dp");
  hycc_engine* engine = nullptr;
  expect_ok(hycc_engine_create("hybrid", &engine), "engine");
  ASSERT_NE(engine, nullptr);
  EXPECT_STREQ(hycc_engine_policy_name(engine), "hybrid");
  PolicyEngine cpp_engine(Policy::preset("hybrid"));
  const Communicator cpp_dp = Communicator::wrap(dp, "dp");

  // Two steps of error feedback: the second step's result depends on the first's residual.
  const Buffer grad = make_input(DType::kF32, 300000, r, false);
  for (int step = 0; step < 2; ++step) {
    hycc_options o;
    hycc_options_init(&o);
    o.engine = engine;
    o.key = 11;
    CollectiveOptions cpp;
    cpp.policy = &cpp_engine;
    cpp.key = 11;
    Buffer want(DType::kF32, grad.count()), got(DType::kF32, grad.count());
    allreduce(cpp_dp, grad.view(), want.view(), ReduceOp::kAverage, cpp);
    expect_ok(
        hycc_allreduce(grad.view().data, got.data(), grad.count(), HYCC_F32, HYCC_AVERAGE, dp, &o),
        "dp allreduce");
    EXPECT_TRUE(got.bits_equal(want)) << "step " << step;
  }
  // This rank made two dp allreduces; summed over the world, every rank's two.
  char* local = nullptr;
  expect_ok(hycc_engine_stats_json(engine, MPI_COMM_NULL, &local), "local stats");
  ASSERT_NE(local, nullptr);
  const std::string local_json = local;
  hycc_free(local);
  EXPECT_NE(local_json.find("\"dimension\": \"dp\""), std::string::npos) << local_json;
  EXPECT_TRUE(has_calls(local_json, 2)) << local_json;
  char* summed = nullptr;
  expect_ok(hycc_engine_stats_json(engine, MPI_COMM_WORLD, &summed), "summed stats");
  ASSERT_NE(summed, nullptr);
  const std::string summed_json = summed;
  hycc_free(summed);
  EXPECT_TRUE(has_calls(summed_json, 2 * world().size())) << summed_json;
  expect_ok(hycc_engine_finish(engine, MPI_COMM_WORLD), "finish");
  hycc_engine_destroy(engine);
  MPI_Comm_free(&dp);
}

// A bucket of tensors (hycc_options.pieces) under a PowerSGD rule: the C++ engine's result with
// CollectiveOptions::pieces bit for bit, compressed; malformed lists are invalid arguments.
TEST(CapiCollectives, BucketPiecesReachThePolicysPowerSgd) {
  const int r = world().rank();
  const std::string path = "/tmp/hycc_capi_powersgd_" + std::to_string(r) + ".toml";
  {
    std::ofstream f(path);
    f << "name = \"dp-powersgd\"\n[[rule]]\ndimension = \"dp\"\noperation = \"allreduce\"\n"
         "compressor = \"powersgd:rank=2\"\nthreshold = 0\n";
  }
  MPI_Comm dp = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &dp), MPI_SUCCESS);
  MPI_Comm_set_name(dp, "dp");
  hycc_engine* engine = nullptr;
  expect_ok(hycc_engine_create(path.c_str(), &engine), "engine");
  ASSERT_NE(engine, nullptr);
  PolicyEngine cpp_engine(Policy::load_file(path));
  std::remove(path.c_str());
  const Communicator cpp_dp = Communicator::wrap(dp, "dp");
  const size_t c_pieces[] = {2, 48, 40, 1, 37, 3, 30, 2, 10};
  const std::vector<std::vector<size_t>> cpp_pieces = {{48, 40}, {37}, {30, 2, 10}};
  const Buffer grad = make_input(DType::kF32, 1920 + 37 + 600, r, false);
  for (int step = 0; step < 2; ++step) {  // the second step starts from the first's residual
    hycc_call_stats stats{};
    hycc_options o;
    hycc_options_init(&o);
    o.engine = engine;
    o.key = 5;
    o.pieces = c_pieces;
    o.pieces_length = std::size(c_pieces);
    o.stats = &stats;
    CollectiveOptions cpp;
    cpp.policy = &cpp_engine;
    cpp.key = 5;
    cpp.pieces = cpp_pieces;
    Buffer want(DType::kF32, grad.count()), got(DType::kF32, grad.count());
    allreduce(cpp_dp, grad.view(), want.view(), ReduceOp::kAverage, cpp);
    expect_ok(
        hycc_allreduce(grad.view().data, got.data(), grad.count(), HYCC_F32, HYCC_AVERAGE, dp, &o),
        "dp allreduce");
    EXPECT_TRUE(got.bits_equal(want)) << "step " << step;
    expect_identical_across_ranks(got, "PowerSGD bucket");
    // P (48 + 30) x 2 and Q 2 x (40 + 20) with the 37 floats of the vector: 310 of 2557 floats
    // (one rank has nothing to send).
    if (world().size() > 1) {
      EXPECT_EQ(stats.compressed, 1);
      EXPECT_LT(stats.wire_bytes, grad.count());  // a quarter of its bytes
    }
  }
  const std::vector<std::vector<size_t>> bad = {{2, 48}, {0, 1, 2557}, {1, 2556}, {1, 2558}};
  for (const std::vector<size_t>& pieces : bad) {
    hycc_options o;
    hycc_options_init(&o);
    o.engine = engine;
    o.key = 6;
    o.pieces = pieces.data();
    o.pieces_length = pieces.size();
    Buffer out(DType::kF32, grad.count());
    EXPECT_EQ(
        hycc_allreduce(grad.view().data, out.data(), grad.count(), HYCC_F32, HYCC_SUM, dp, &o),
        HYCC_ERR_INVALID_ARGUMENT)
        << pieces.size() << " values";
    EXPECT_NE(std::string(hycc_last_error()).find("pieces"), std::string::npos)
        << hycc_last_error();
  }
  hycc_options o;
  hycc_options_init(&o);
  o.engine = engine;
  o.pieces_length = 3;  // and no list
  Buffer out(DType::kF32, grad.count());
  EXPECT_EQ(hycc_allreduce(grad.view().data, out.data(), grad.count(), HYCC_F32, HYCC_SUM, dp, &o),
            HYCC_ERR_INVALID_ARGUMENT);
  hycc_engine_destroy(engine);
  MPI_Comm_free(&dp);
}

TEST(CapiCollectives, FailuresAreStatusesOnEveryRank) {
  const int p = world().size(), r = world().rank();
  std::vector<float> buffer(100 + static_cast<size_t>(r), 1.0f);
  BothApis s("quant:bits=8");
  // Invalid on every rank: the root.
  EXPECT_EQ(hycc_broadcast(buffer.data(), 100, HYCC_F32, p, MPI_COMM_WORLD, &s.c),
            HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("root"), std::string::npos) << hycc_last_error();
  // Local checks before any communication.
  EXPECT_EQ(hycc_allreduce(buffer.data(), buffer.data(), 100, HYCC_F32, 5, MPI_COMM_WORLD, &s.c),
            HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("op is not"), std::string::npos);
  hycc_options bad = s.c;
  bad.algorithm = 42;
  EXPECT_EQ(
      hycc_allreduce(buffer.data(), buffer.data(), 100, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, &bad),
      HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      hycc_allreduce(buffer.data(), buffer.data(), 100, HYCC_F32, HYCC_SUM, MPI_COMM_NULL, &s.c),
      HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("MPI_COMM_NULL"), std::string::npos);
  // Options not made by the init function, or laid out by another hycc.h: refused, not misread.
  hycc_options zeroed{};
  EXPECT_EQ(hycc_allreduce(buffer.data(), buffer.data(), 100, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD,
                           &zeroed),
            HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("hycc_options_init"), std::string::npos)
      << hycc_last_error();
  hycc_options other = s.c;
  other.threshold_bytes = 12345;
  hycc_options_init_abi(&other, HYCC_ABI_VERSION + 1);  // writes abi_version and nothing else
  EXPECT_EQ(other.abi_version, HYCC_ABI_VERSION + 1);
  EXPECT_EQ(other.threshold_bytes, 12345u);
  EXPECT_EQ(
      hycc_allreduce(buffer.data(), buffer.data(), 100, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, &other),
      HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error())
                .find(detail::concat("ABI version ", HYCC_ABI_VERSION + 1, ", this library has ",
                                     "ABI version ", HYCC_ABI_VERSION)),
            std::string::npos)
      << hycc_last_error();
  EXPECT_EQ(hycc_abi_version(), HYCC_ABI_VERSION);
  hycc_device_options device_other;
  hycc_device_options_init_abi(&device_other, 1);
  EXPECT_EQ(hycc_allreduce_device(buffer.data(), buffer.data(), 100, HYCC_F32, HYCC_SUM,
                                  MPI_COMM_WORLD, &device_other),
            HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("ABI version 1"), std::string::npos)
      << hycc_last_error();
  if (p > 1) {
    // Counts that differ across ranks: the argument agreement fails on every rank.
    EXPECT_EQ(hycc_allreduce(buffer.data(), buffer.data(), buffer.size(), HYCC_F32, HYCC_SUM,
                             MPI_COMM_WORLD, &s.c),
              HYCC_ERR_COMM);
    EXPECT_NE(std::string(hycc_last_error()).find("count"), std::string::npos) << hycc_last_error();
  }
  // And the communicator still works afterwards.
  std::vector<float> ones(100, 1.0f);
  expect_ok(
      hycc_allreduce(MPI_IN_PLACE, ones.data(), 100, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, nullptr),
      "allreduce after the failures");
  EXPECT_EQ(ones[99], static_cast<float>(p));
  hycc_engine* engine = nullptr;
  EXPECT_EQ(hycc_engine_create("no-such-policy", &engine), HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("hybrid"), std::string::npos)
      << "the message lists the presets: " << hycc_last_error();
  EXPECT_EQ(engine, nullptr);
}

// The device collectives through the C API with the host-emulated device (host memory, the
// whole device algorithm on the CPU), both transports, against the C++ device calls.
// check_arguments: the init functions default it to HYCC_CHECK_AUTO; ranks whose thresholds
// differ (both below the tensor's size, so that they would take the same path) fail the
// agreement on every rank with AUTO and ALWAYS, and with NEVER skip it and get the bits of
// agreeing options; a value outside hycc_arg_check is refused. Host and device options.
TEST(CapiCollectives, CheckArgumentsSelectsTheAgreement) {
  const int p = world().size(), r = world().rank();
  CodecHandle h("quant:bits=4");
  const Buffer input = make_input(DType::kF32, 3001, r, false);
  hycc_options host;
  hycc_options_init(&host);
  hycc_device_options device;
  hycc_device_options_init(&device);
  EXPECT_EQ(host.check_arguments, HYCC_CHECK_AUTO);
  EXPECT_EQ(device.check_arguments, HYCC_CHECK_AUTO);
  host.codec = device.codec = h.codec;
  host.algorithm = HYCC_ALGO_RING;
  device.backend = HYCC_DEVICE_HOST_EMULATION;
  device.transport = HYCC_TRANSPORT_STAGED_MPI;
  const auto run = [&](int check, size_t threshold, bool on_device, Buffer& out) {
    host.check_arguments = device.check_arguments = check;
    host.threshold_bytes = device.threshold_bytes = threshold;
    return on_device ? hycc_allreduce_device(input.view().data, out.data(), 3001, HYCC_F32,
                                             HYCC_SUM, MPI_COMM_WORLD, &device)
                     : hycc_allreduce(input.view().data, out.data(), 3001, HYCC_F32, HYCC_SUM,
                                      MPI_COMM_WORLD, &host);
  };
  for (const bool on_device : {false, true}) {
    const std::string what = on_device ? "device" : "host";
    Buffer want(DType::kF32, 3001), got(DType::kF32, 3001);
    expect_ok(run(HYCC_CHECK_AUTO, 0, on_device, want), what + " agreeing");
    const size_t differing = r == 0 ? 0 : 1024;  // 3001 floats are above both
    for (const int check : {HYCC_CHECK_AUTO, HYCC_CHECK_ALWAYS}) {
      if (p == 1) break;  // one rank agrees with itself
      EXPECT_EQ(run(check, differing, on_device, got), HYCC_ERR_COMM) << what << " " << check;
      EXPECT_NE(std::string(hycc_last_error()).find("threshold_bytes"), std::string::npos)
          << hycc_last_error();
    }
    expect_ok(run(HYCC_CHECK_NEVER, differing, on_device, got), what + " never");
    EXPECT_TRUE(got.bits_equal(want)) << what << ": unchecked bits differ";
    EXPECT_EQ(run(3, 0, on_device, got), HYCC_ERR_INVALID_ARGUMENT) << what;
    EXPECT_NE(std::string(hycc_last_error()).find("check_arguments"), std::string::npos)
        << hycc_last_error();
  }
}

// stream_ordered reaches the device call: the ranks agree on it (a rank that differs is named),
// and a stream-ordered call gives the blocking call's bits and its statistics' host_syncs.
TEST(CapiCollectives, StreamOrderedIsPartOfTheDeviceCall) {
  const int p = world().size(), r = world().rank();
  CodecHandle h("bf16");
  const Buffer input = make_input(DType::kF32, 3001, r, false);
  hycc_device_options o;
  hycc_device_options_init(&o);
  EXPECT_EQ(o.stream_ordered, 0);
  o.codec = h.codec;
  o.backend = HYCC_DEVICE_HOST_EMULATION;
  o.transport = HYCC_TRANSPORT_STAGED_MPI;
  hycc_call_stats stats;
  o.stats = &stats;
  Buffer want(DType::kF32, 3001), got(DType::kF32, 3001);
  const auto run = [&](Buffer& out) {
    return hycc_allreduce_device(input.view().data, out.data(), 3001, HYCC_F32, HYCC_SUM,
                                 MPI_COMM_WORLD, &o);
  };
  expect_ok(run(want), "blocking");
  o.stream_ordered = 1;
  expect_ok(run(got), "stream-ordered");
  EXPECT_TRUE(got.bits_equal(want));
  EXPECT_EQ(stats.host_syncs, 0u) << "the host emulation never waits";
  if (p > 1) {
    // Always checked: with auto, rank 0 would skip the agreement of a signature it has agreed
    // on before while the others run it (matching arguments are then the caller's duty).
    o.check_arguments = HYCC_CHECK_ALWAYS;
    o.stream_ordered = r == 0 ? 1 : 0;
    EXPECT_EQ(run(got), HYCC_ERR_COMM);
    EXPECT_NE(std::string(hycc_last_error()).find("stream_ordered"), std::string::npos)
        << hycc_last_error();
  }
}

TEST(CapiCollectives, DeviceCollectivesEqualTheCppApi) {
  const int p = world().size(), r = world().rank();
  const auto ranks = static_cast<size_t>(p);
  for (const int transport : {HYCC_TRANSPORT_STAGED_MPI, HYCC_TRANSPORT_NCCL}) {
    for (const char* spec : {"none", "quant:bits=4,round=stochastic", "mpc"}) {
      const std::string what =
          std::string(spec) + (transport == HYCC_TRANSPORT_NCCL ? " nccl" : "");
      CodecHandle h(spec);
      hycc_device_options c;
      hycc_device_options_init(&c);
      c.codec = h.codec;
      c.backend = HYCC_DEVICE_HOST_EMULATION;
      c.transport = transport;
      c.segment_bytes = 4096;
      c.seed = 3;
      hycc_call_stats stats;
      c.stats = &stats;
      DeviceCollectiveOptions cpp;
      cpp.codec = CodecConfig::parse(spec);
      cpp.backend = DeviceBackend::kHostEmulation;
      cpp.transport = static_cast<DeviceTransport>(transport);
      cpp.segment_bytes = 4096;
      cpp.seed = 3;
      const bool lossless = cpp.codec.lossless();

      const Buffer input = make_input(DType::kF32, 3001, r, lossless);
      Buffer want = clone(input), got = clone(input);
      allreduce_device(world(), want.view(), want.view(), ReduceOp::kSum, cpp);
      expect_ok(hycc_allreduce_device(MPI_IN_PLACE, got.data(), 3001, HYCC_F32, HYCC_SUM,
                                      MPI_COMM_WORLD, &c),
                what + " allreduce");
      EXPECT_TRUE(got.bits_equal(want)) << what << " allreduce";
      expect_identical_across_ranks(got, what + " allreduce");
      EXPECT_EQ(stats.message_bytes, 3001u * 4) << what;

      const ChunkRange mine = chunk_range(3001, p, r);
      Buffer rs_want(DType::kF32, mine.count), rs_got(DType::kF32, mine.count);
      reduce_scatter_device(world(), input.view(), rs_want.view(), ReduceOp::kAverage, cpp);
      expect_ok(hycc_reduce_scatter_device(input.view().data, 3001, rs_got.data(), HYCC_F32,
                                           HYCC_AVERAGE, MPI_COMM_WORLD, &c),
                what + " reduce_scatter");
      EXPECT_TRUE(rs_got.bits_equal(rs_want)) << what << " reduce_scatter";

      const Buffer block = make_input(DType::kBF16, 500, r, lossless);
      Buffer ag_want(DType::kBF16, 500 * ranks), ag_got(DType::kBF16, 500 * ranks);
      allgather_device(world(), block.view(), ag_want.view(), cpp);
      expect_ok(hycc_allgather_device(block.view().data, 500, ag_got.data(), HYCC_BF16,
                                      MPI_COMM_WORLD, &c),
                what + " allgather");
      EXPECT_TRUE(ag_got.bits_equal(ag_want)) << what << " allgather";

      Buffer b_want = clone(input), b_got = clone(input);
      broadcast_device(world(), b_want.view(), 0, cpp);
      expect_ok(hycc_broadcast_device(b_got.data(), 3001, HYCC_F32, 0, MPI_COMM_WORLD, &c),
                what + " broadcast");
      EXPECT_TRUE(b_got.bits_equal(b_want)) << what << " broadcast";

      const Buffer a_in = make_input(DType::kF32, 700 * ranks, r, lossless);
      Buffer a_want(DType::kF32, 700 * ranks), a_got(DType::kF32, 700 * ranks);
      alltoall_device(world(), a_in.view(), a_want.view(), cpp);
      expect_ok(hycc_alltoall_device(a_in.view().data, a_got.data(), 700 * ranks, HYCC_F32,
                                     MPI_COMM_WORLD, &c),
                what + " alltoall");
      EXPECT_TRUE(a_got.bits_equal(a_want)) << what << " alltoall";
    }
  }
  // Point to point: rank 0 sends to the last rank through the C API, which receives through it.
  if (p > 1) {
    CodecHandle h("quant:bits=8");
    hycc_device_options c;
    hycc_device_options_init(&c);
    c.codec = h.codec;
    c.backend = HYCC_DEVICE_HOST_EMULATION;
    const Buffer data = make_input(DType::kF32, 2000, 0, false);
    if (r == 0) {
      expect_ok(hycc_send_device(data.view().data, 2000, HYCC_F32, p - 1, 9, MPI_COMM_WORLD, &c),
                "send_device");
    } else if (r == p - 1) {
      Buffer got(DType::kF32, 2000), want(DType::kF32, 2000);
      int source = -1;
      expect_ok(hycc_recv_device(got.data(), 2000, HYCC_F32, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &c,
                                 &source),
                "recv_device");
      EXPECT_EQ(source, 0);
      decompress(compress(CodecConfig::parse("quant:bits=8"), data.view()), want.view());
      EXPECT_TRUE(got.bits_equal(want)) << "the receiver holds the decoded payload";
    }
  }
  hycc_device_options bad;
  hycc_device_options_init(&bad);
  bad.backend = 7;
  std::vector<float> v(10, 1.0f);
  EXPECT_EQ(
      hycc_allreduce_device(MPI_IN_PLACE, v.data(), 10, HYCC_F32, HYCC_SUM, MPI_COMM_WORLD, &bad),
      HYCC_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(hycc_last_error()).find("backend"), std::string::npos);
}

}  // namespace
}  // namespace hycc::test
