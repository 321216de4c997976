// Performance model: policies and experiments read from files, the JSON output, sweeps and
// their CSV and gnuplot script.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "experiment.h"
#include "report.h"
#include "sim_test_util.h"
#include "sweep.h"

namespace hycc::sim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SimOutput, PoliciesFromFiles) {
  // A hycc policy file ([[rule]] tables) decides per dimension; its codec comes from the table.
  const std::string rules =
      write_temp("sim_rules.toml", "[[rule]]\ndimension = \"dp\"\ncompressor = \"quant:bits=8\"\n");
  CodecTable codecs;
  codecs.add_json(R"([{"codec": "quant:bits=8,block=64,round=nearest", "dtype": "f32",
                       "ratio": 3.5, "compress_gbps": 1.0, "decompress_gbps": 2.0}])",
                  "t.json");
  const SimPolicy p = load_policy(rules, codecs);
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kDp, 1 << 20, DType::kF32).ratio, 3.5);
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kTp, 1 << 20, DType::kF32).ratio, 1);
  // A figures file: ratios given directly.
  const std::string figures = write_temp("sim_figures.toml", "[default]\nratio = 2.0\n");
  EXPECT_DOUBLE_EQ(load_policy(figures, codecs).figures(Dimension::kPp, 1, DType::kF16).ratio, 2);
  // Decisions by the traffic's element type: 16-bit data take the rule for it.
  const std::string typed = write_temp(
      "sim_typed.toml",
      "[[rule]]\ndimension = \"default\"\ndtype = \"f16\"\ncompressor = \"quant:bits=8\"\n");
  codecs.add_json(R"([{"codec": "quant:bits=8,block=64,round=nearest", "dtype": "f16",
                       "ratio": 1.75, "compress_gbps": 1.0, "decompress_gbps": 2.0}])",
                  "t16.json");
  const SimPolicy by_type = load_policy(typed, codecs);
  EXPECT_DOUBLE_EQ(by_type.figures(Dimension::kTp, 1 << 20, DType::kF16).ratio, 1.75);
  EXPECT_DOUBLE_EQ(by_type.figures(Dimension::kTp, 1 << 20, DType::kF32).ratio, 1);
  // Built-in names: figures files and policy files (the study's settings).
  EXPECT_EQ(load_policy("gradients-4x-free", codecs).name(), "gradients-4x-free");
  codecs.add_json(R"([{"codec": "zfp:rate=4", "dtype": "f16", "ratio": 4.0,
                       "compress_gbps": 1.0, "decompress_gbps": 1.0}])",
                  "z.json");
  const SimPolicy study = load_policy("study-mz", codecs);
  EXPECT_EQ(study.name(), "study-mz");
  EXPECT_DOUBLE_EQ(study.figures(Dimension::kZeroGrad, 1 << 20, DType::kF16).ratio, 4.0);
  EXPECT_EQ(load_policy("baseline", codecs).name(), "baseline");
  EXPECT_NE(
      testing::invalid_message([&] { load_policy("no-such-policy", codecs); }).find("hybrid-mz"),
      std::string::npos);
}

TEST(SimOutput, CodecScaleAndFreeCodec) {
  SimPolicy p = SimPolicy::parse_figures(
      "[default]\nratio = 2.0\ncompress_gbps = 1.0\ndecompress_gbps = 2.0\n", "f.toml");
  p.scale_codec_throughput(10);
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kTp, 1, DType::kF32).compress_bandwidth, 10e9);
  p.scale_codec_throughput(HUGE_VAL);
  const CodecFigures free = p.figures(Dimension::kTp, 1, DType::kF32);
  EXPECT_DOUBLE_EQ(free.compress_bandwidth, 0);  // 0 = no codec time
  EXPECT_DOUBLE_EQ(free.ratio, 2);
}

TEST(SimOutput, ExperimentFromAFile) {
  const std::string path =
      write_temp("sim_experiment.toml",
                 "model = \"tiny\"\ncluster = \"netemu-4x2\"\nlayout = \"tiny-dp2-tp2-pp2\"\n");
  const ExperimentSpec e = load_experiment(path);
  EXPECT_EQ(e.model, "tiny");
  EXPECT_EQ(e.policies, std::vector<std::string>{"baseline"});
  EXPECT_NE(testing::invalid_message([] {
              parse_experiment("model = \"x\"\n", "e.toml");
            }).find("missing key 'cluster'"),
            std::string::npos);
}

TEST(SimOutput, JsonHasEveryPolicyAndDimension) {
  LayoutConfig l = testing::small_layout();
  const auto runs = compare_policies(testing::small_model(), testing::small_cluster(), l,
                                     {SimPolicy::baseline()});
  const nlohmann::json j = to_json(testing::small_model(), testing::small_cluster(), l, runs);
  ASSERT_EQ(j["policies"].size(), 1u);
  EXPECT_EQ(j["policies"][0]["policy"], "baseline");
  EXPECT_DOUBLE_EQ(j["policies"][0]["speedup"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(j["policies"][0]["iteration_s"].get<double>(), runs[0].result.time.iteration);
  EXPECT_EQ(j["policies"][0]["dimensions"].size(), 4u);  // tp, pp, dp, embedding
  EXPECT_EQ(j["layout"]["dp"], 2);
}

TEST(SimOutput, SweepOverNodesSkipsWhatDoesNotFit) {
  const SweepSpec spec = parse_sweep("nodes=1:4");
  std::vector<std::string> skipped;
  const auto points = run_sweep(spec, testing::small_model(), testing::small_cluster(),
                                testing::small_layout(), {SimPolicy::baseline()}, skipped);
  // 4 GPUs per node and tp x pp = 4: every node count fits; dp = nodes.
  ASSERT_EQ(points.size(), 4u);
  EXPECT_TRUE(skipped.empty());
  ClusterConfig two_gpus = testing::small_cluster();
  two_gpus.gpus_per_node = 2;
  const auto odd = run_sweep(spec, testing::small_model(), two_gpus, testing::small_layout(),
                             {SimPolicy::baseline()}, skipped);
  EXPECT_EQ(odd.size(), 2u);  // 2 and 4 nodes
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("nodes=1"), std::string::npos);

  const std::string csv = sweep_csv(spec, points);
  EXPECT_EQ(csv.rfind("nodes,policy,iteration_s", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  const std::string script = gnuplot_script(spec, points, "s.csv", "s.png");
  EXPECT_NE(script.find("set output 's.png'"), std::string::npos);
  EXPECT_NE(script.find("$policy0 << EOD\n1 1\n"), std::string::npos) << script;
}

TEST(SimOutput, BandwidthSweepChangesTheNetwork) {
  const SweepSpec spec = parse_sweep("bandwidth=8e-6,16e-6");  // Gbit/s: 1000 and 2000 B/s
  std::vector<std::string> skipped;
  const auto points = run_sweep(spec, testing::small_model(), testing::small_cluster(),
                                testing::small_layout(), {SimPolicy::baseline()}, skipped);
  ASSERT_EQ(points.size(), 2u);
  // Only pp and the embedding cross nodes: 6 x 256 B + 256 B at 1000 / 4 B/s, then twice as fast.
  const double pp_and_embedding_1000 = 7 * 256 / 250.0;
  const double diff =
      points[0].runs[0].result.time.iteration - points[1].runs[0].result.time.iteration;
  // pp also lengthens the bubble slot: one extra 2 x 256 B per slot.
  EXPECT_NEAR(diff, (pp_and_embedding_1000 + 2 * 256 / 250.0) / 2, 1e-9);
}

}  // namespace
}  // namespace hycc::sim
