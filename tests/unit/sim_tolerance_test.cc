// hycc-sim --tolerance: the study's summary.json turned into a policy, per dimension the
// compressor with the largest ratio whose loss gap stays within the budget at the upper end of
// its interval.
#include <gtest/gtest.h>

#include <map>

#include "hycc/policy.h"
#include "sim_policy.h"
#include "sim_test_util.h"
#include "tolerance.h"

namespace hycc::sim {
namespace {

CodecTable figures() {
  CodecTable t;
  t.add_json(R"([
    {"codec": "quant:bits=8,block=64,round=nearest", "dtype": "f16", "ratio": 1.78,
     "compress_gbps": 1, "decompress_gbps": 1},
    {"codec": "quant:bits=4,block=64,round=nearest", "dtype": "f16", "ratio": 3.2,
     "compress_gbps": 1, "decompress_gbps": 1},
    {"codec": "quant:bits=2,block=64,round=nearest", "dtype": "f16", "ratio": 5.3,
     "compress_gbps": 1, "decompress_gbps": 1}])",
             "figures.json");
  return t;
}

const char* const kSummary = R"({"cells": [
  {"dimension": "tp", "codec": "quant:bits=8", "mean_percent": 0.05, "ci95_percent": 0.1},
  {"dimension": "tp", "codec": "quant:bits=4", "mean_percent": 0.9, "ci95_percent": 0.4},
  {"dimension": "dp", "codec": "quant:bits=4", "mean_percent": 0.1, "ci95_percent": 0.2},
  {"dimension": "dp", "codec": "ef2+quant:bits=2", "mean_percent": -0.1, "ci95_percent": 0.3},
  {"dimension": "pp", "codec": "quant:bits=8", "mean_percent": 0.8, "ci95_percent": 0.5},
  {"dimension": "embedding", "codec": "quant:bits=4", "mean_percent": 0.0, "ci95_percent": null},
  {"dimension": "zero_param", "codec": "zfp:rate=8", "mean_percent": 0.0, "ci95_percent": 0.1}
]})";

TEST(SimTolerance, PicksTheStrongestCompressorInsideTheBudget) {
  const TolerancePolicy t = policy_from_tolerance(kSummary, "s.json", 0.5, figures(), DType::kF16);
  std::map<std::string, TolerancePick> by_dim;
  for (const auto& p : t.picks) by_dim[p.dimension] = p;
  EXPECT_EQ(by_dim.at("tp").compressor, "quant:bits=8");  // quant:bits=4's bound is 1.3%
  EXPECT_NEAR(by_dim.at("tp").upper_percent, 0.15, 1e-12);
  EXPECT_EQ(by_dim.at("dp").compressor, "ef2+quant:bits=2");         // 5.3x beats 3.2x
  EXPECT_EQ(by_dim.at("pp").compressor, "");                         // nothing within 0.5%
  EXPECT_EQ(by_dim.at("embedding").compressor, "");                  // one seed: no interval
  EXPECT_EQ(by_dim.at("zero_param").compressor, "");                 // zfp:rate=8 has no figures
  EXPECT_EQ(by_dim.at("zero_grad").compressor, "ef2+quant:bits=2");  // dp's: not measured
  EXPECT_EQ(t.notes.size(), 3u);
  // The policy decides so; ef2+ on dp names the allreduce.
  const SimPolicy p = SimPolicy::from_policy(Policy::parse_toml(t.toml, "t"), figures());
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kTp, 1 << 20, DType::kF16).ratio, 1.78);
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kDp, 1 << 20, DType::kF16).ratio, 5.3);
  EXPECT_DOUBLE_EQ(p.figures(Dimension::kPp, 1 << 20, DType::kF16).ratio, 1);
  EXPECT_NE(t.toml.find("operation = \"allreduce\""), std::string::npos) << t.toml;
  EXPECT_NE(t.toml.find("operation = \"reduce_scatter\""), std::string::npos) << t.toml;
  // A larger budget takes the stronger tp codec.
  const TolerancePolicy wide =
      policy_from_tolerance(kSummary, "s.json", 2.0, figures(), DType::kF16);
  for (const auto& pick : wide.picks) {
    if (pick.dimension == "tp") {
      EXPECT_EQ(pick.compressor, "quant:bits=4");
    }
  }
}

TEST(SimTolerance, RejectsWhatIsNoSummary) {
  for (const char* bad :
       {"[1, 2]", "not json", R"({"cells": [{"dimension": "tq", "codec": "x"}]})"}) {
    EXPECT_THROW(policy_from_tolerance(bad, "bad.json", 0.5, figures(), DType::kF16),
                 InvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace hycc::sim
