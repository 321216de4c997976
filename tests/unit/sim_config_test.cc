// Performance model: TOML readers and their errors, units, codec figures, policies and the
// built-in experiments.
#include <gtest/gtest.h>

#include "experiment.h"
#include "report.h"
#include "sim_test_util.h"
#include "sweep.h"
#include "toml_fields.h"

namespace hycc::sim {
namespace {

using testing::invalid_message;

TEST(SimConfig, UnknownKeyNamesTheKeyAndLine) {
  const std::string msg = invalid_message([] {
    parse_model("layers = 2\nhidden = 8\nheads = 2\nsequence = 4\nvocab = 16\n", "m.toml");
  });
  EXPECT_NE(msg.find("m.toml:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'vocab'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vocabulary"), std::string::npos) << msg;  // the expected keys are listed
}

TEST(SimConfig, BadValuesNameTheKey) {
  EXPECT_NE(invalid_message([] { parse_layout("tp = 0\n", "l.toml"); }).find("'tp' = 0"),
            std::string::npos);
  EXPECT_NE(invalid_message([] {
              parse_layout("tp = \"2\"\n", "l.toml");
            }).find("'tp' must be an integer"),
            std::string::npos);
  EXPECT_NE(
      invalid_message([] { parse_layout("zero_stage = 3\n", "l.toml"); }).find("zero_stage 3"),
      std::string::npos);
  EXPECT_NE(invalid_message([] { parse_layout("order = \"tp,tp,pp\"\n", "l.toml"); }).find("order"),
            std::string::npos);
  const std::string cluster =
      "nodes = 1\ngpus_per_node = 1\ngpu_tflops = 1.0\n[intra_node]\nbandwidth = \"9 GB\"\n"
      "latency = \"1 us\"\n[inter_node]\nbandwidth = \"1 Gbit/s\"\nlatency = \"1 us\"\n";
  const std::string msg = invalid_message([&] { parse_cluster(cluster, "c.toml"); });
  EXPECT_NE(msg.find("c.toml:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("intra_node.bandwidth"), std::string::npos) << msg;
  EXPECT_NE(invalid_message([] { parse_model("layers = [", "bad.toml"); }).find("bad.toml:1"),
            std::string::npos);
}

TEST(SimConfig, Units) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Gbit/s", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("75GB/s", "x"), 75e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("800 Mbit/s", "x"), 1e8);
  EXPECT_DOUBLE_EQ(parse_duration("5 us", "x"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1.5 ms", "x"), 1.5e-3);
  EXPECT_NE(invalid_message([] {
              parse_bandwidth("100 Gb", "--inter-bandwidth");
            }).find("--inter-bandwidth"),
            std::string::npos);
}

TEST(SimConfig, LayoutMustFitTheCluster) {
  const ModelConfig m = testing::small_model();
  const ClusterConfig c = testing::small_cluster();
  LayoutConfig l = testing::small_layout();
  l.dp = 0;
  check_fit(m, c, l);
  EXPECT_EQ(l.dp, 2);
  l.dp = 3;
  EXPECT_NE(invalid_message([&] { check_fit(m, c, l); }).find("needs 12 GPUs"), std::string::npos);
  l.dp = 0;
  l.pp = 3;
  EXPECT_NE(invalid_message([&] { check_fit(m, c, l); }).find("not a multiple"), std::string::npos);
}

TEST(SimConfig, CodecFiguresFromTheBenchmarkJson) {
  CodecTable t;
  t.add_json(R"([{"codec": "quant:bits=4,block=64,round=nearest", "dtype": "f32", "ratio": 6.4,
                  "compress_gbps": 8.0, "decompress_gbps": 14.0},
                 {"codec": "quant:bits=6,block=64,round=nearest", "dtype": "f32", "ratio": 4.57,
                  "compress_gbps": 7.0, "decompress_gbps": 12.0}])",
             "bench.json");
  const CodecFigures f = t.find("quant:bits=4,block=64,round=nearest", DType::kF32);
  EXPECT_DOUBLE_EQ(f.ratio, 6.4);
  EXPECT_DOUBLE_EQ(f.compress_bandwidth, 8e9);
  const std::string msg =
      invalid_message([&] { t.find("quant:bits=4,block=64,round=nearest", DType::kF16); });
  EXPECT_NE(msg.find("hycc-bench codec --dtype f16"), std::string::npos) << msg;
  EXPECT_NE(invalid_message([&] { t.add_json(R"({"codec": 1})", "x.json"); }).find("x.json"),
            std::string::npos);

  // The naive preset compresses every dimension with quant:bits=4 above its threshold.
  const SimPolicy naive = SimPolicy::from_policy(Policy::preset("naive"), t);
  EXPECT_DOUBLE_EQ(naive.figures(Dimension::kTp, 1 << 20, DType::kF32).ratio, 6.4);
  EXPECT_DOUBLE_EQ(naive.figures(Dimension::kTp, 1024, DType::kF32).ratio, 1);  // below 64K
  // hybrid's dp compressor is ef2+quant:bits=6: the codec's figures.
  const SimPolicy hybrid = SimPolicy::from_policy(Policy::preset("hybrid"), t);
  const CodecFigures dp = hybrid.figures(Dimension::kDp, 1 << 20, DType::kF32);
  EXPECT_DOUBLE_EQ(dp.ratio, 4.57);
  EXPECT_EQ(dp.codec.substr(0, 4), "ef2+");
  EXPECT_EQ(dp.feedback, Feedback::kTwoStage);
  // Its tp codec, bf16, was not measured: the error says how to measure it.
  EXPECT_NE(invalid_message([&] {
              hybrid.figures(Dimension::kTp, 1 << 20, DType::kF32);
            }).find("--codec bf16"),
            std::string::npos);
}

// An adaptive rule (auto) takes the candidate of least modelled time on the group's links, as
// the engine does: none on free links, ef+ on 2 slow ranks, ef2+ on many for an allreduce.
TEST(SimConfig, AdaptiveRulesChooseByTheModel) {
  CodecTable t;
  t.add_json(R"([{"codec": "quant:bits=6,block=64,round=nearest", "dtype": "f32", "ratio": 4.57,
                  "compress_gbps": 7.0, "decompress_gbps": 12.0},
                 {"codec": "bf16", "dtype": "f32", "ratio": 2.0,
                  "compress_gbps": 9.0, "decompress_gbps": 11.0}])",
             "bench.json");
  const SimPolicy a = SimPolicy::from_policy(Policy::preset("auto"), t);
  const auto links = [](long n, double bandwidth) {
    GroupLinks l;
    l.group_size = n;
    l.bandwidth = bandwidth;
    l.latency = 1e-5;
    return l;
  };
  const double bytes = 64 << 20;
  EXPECT_EQ(a.figures(Dimension::kDp, bytes, DType::kF32, links(8, 1e15)).codec, "none");
  const CodecFigures two = a.figures(Dimension::kDp, bytes, DType::kF32, links(2, 1e8));
  EXPECT_EQ(two.codec.substr(0, 3), "ef+") << two.codec;
  EXPECT_EQ(two.feedback, Feedback::kCompressOnce);
  const CodecFigures many = a.figures(Dimension::kDp, bytes, DType::kF32, links(24, 1e8));
  EXPECT_EQ(many.codec.substr(0, 4), "ef2+") << many.codec;
  EXPECT_EQ(many.feedback, Feedback::kTwoStage);
  EXPECT_DOUBLE_EQ(many.ratio, 4.57);
  const CodecFigures zero = a.figures(Dimension::kZeroGrad, bytes, DType::kF32, links(24, 1e8));
  EXPECT_EQ(zero.codec.substr(0, 4), "ef2+") << zero.codec;
  // Without links (all candidates cost nothing) the rule's compressor.
  EXPECT_EQ(a.figures(Dimension::kDp, bytes, DType::kF32).codec.substr(0, 4), "ef2+");
}

TEST(SimConfig, FiguresFileErrors) {
  const std::string msg =
      invalid_message([] { SimPolicy::parse_figures("[dp]\nratio = 2.0\nspeed = 3\n", "f.toml"); });
  EXPECT_NE(msg.find("f.toml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'dp.speed'"), std::string::npos) << msg;
  EXPECT_NE(invalid_message([] {
              SimPolicy::parse_figures("[xp]\nratio = 2.0\n", "f.toml");
            }).find("'xp'"),
            std::string::npos);
}

TEST(SimConfig, SweepSpecs) {
  EXPECT_EQ(parse_sweep("nodes=2:8:2").values, (std::vector<double>{2, 4, 6, 8}));
  EXPECT_EQ(parse_sweep("bandwidth=10,25,100").values, (std::vector<double>{10, 25, 100}));
  EXPECT_NE(invalid_message([] { parse_sweep("gpus=1:2"); }).find("nodes=VALUES"),
            std::string::npos);
  EXPECT_NE(invalid_message([] { parse_sweep("nodes=1.5"); }).find("not an integer"),
            std::string::npos);
}

TEST(SimConfig, EveryBuiltInExperimentLoadsAndRuns) {
  const auto names = config_names("experiments");
  ASSERT_FALSE(names.empty());
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const ExperimentSpec e = load_experiment(name);
    const ModelConfig m = load_model(e.model);
    const ClusterConfig c = load_cluster(e.cluster);
    LayoutConfig l = load_layout(e.layout);
    check_fit(m, c, l);
    const CodecTable codecs = load_codec_figures(e.codec_figures);
    std::vector<SimPolicy> policies;
    for (const auto& p : e.policies) policies.push_back(load_policy(p, codecs));
    const auto runs = compare_policies(m, c, l, policies);
    ASSERT_EQ(runs.size(), e.policies.size());
    EXPECT_GT(runs[0].result.time.iteration, 0);
    EXPECT_FALSE(breakdown_table(runs).empty());
  }
  EXPECT_NE(invalid_message([] { load_model("no-such-model"); }).find("built in: neox20b"),
            std::string::npos);
}

}  // namespace
}  // namespace hycc::sim
