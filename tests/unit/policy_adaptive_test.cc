// Adaptive rules without communication: the alternatives key (parsing, canonical form, errors,
// the TOML round trip, candidates and their decisions), the auto preset, and the cost model's
// formulas against hand-computed times.
#include <gtest/gtest.h>

#include <string>

#include "hycc/error.h"
#include "hycc/policy.h"
#include "policy/cost_model.h"

namespace hycc {
namespace {

using policy::CodecFigures;
using policy::modelled_time;
using policy::Path;

std::string canon(const char* spec) { return CodecConfig::parse(spec).spec(); }

std::string parse_error(const std::string& text) {
  try {
    Policy::parse_toml(text, "bad.toml");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kAdaptive = R"(name = "adaptive"

[[rule]]
dimension = "dp"
operation = "allreduce"
compressor = "ef+quant:bits=6"
alternatives = ["quant:bits=8", "none"]

[[rule]]
dimension = "tp"
compressor = "bf16"
)";

TEST(AdaptivePolicy, AlternativesAreCanonicalCandidates) {
  const Policy p = Policy::parse_toml(kAdaptive, "adaptive.toml");
  ASSERT_EQ(p.rules().size(), 2u);
  EXPECT_TRUE(p.adaptive());
  EXPECT_TRUE(p.rules()[0].adaptive());
  EXPECT_FALSE(p.rules()[1].adaptive());
  EXPECT_EQ(p.rules()[0].alternatives,
            (std::vector<std::string>{canon("quant:bits=8"), canon("none")}));
  ASSERT_EQ(p.candidate_count(0), 3u);
  EXPECT_EQ(p.candidate_count(1), 1u);

  // Without measurements the rule's compressor decides.
  const PolicyDecision d = p.decide(Dimension::kDp, Operation::kAllreduce, 1 << 20);
  EXPECT_EQ(d.candidate, 0);
  EXPECT_TRUE(d.gradient);
  EXPECT_EQ(d.gradient_codec.spec(), canon("quant:bits=6"));

  const PolicyDecision q8 = p.decision_for(0, 1);
  EXPECT_EQ(q8.rule, 0);
  EXPECT_EQ(q8.candidate, 1);
  EXPECT_FALSE(q8.gradient);
  EXPECT_EQ(q8.compressor, canon("quant:bits=8"));
  EXPECT_EQ(q8.options.codec.spec(), canon("quant:bits=8"));
  const PolicyDecision none = p.decision_for(0, 2);
  EXPECT_EQ(none.options.codec.id(), CodecId::kNone);
  EXPECT_EQ(none.threshold_bytes, d.threshold_bytes);
  EXPECT_THROW(p.decision_for(0, 3), std::out_of_range);

  const Policy again = Policy::parse_toml(p.to_toml(), "again.toml");
  EXPECT_EQ(again.rules()[0].alternatives, p.rules()[0].alternatives) << p.to_toml();
  EXPECT_NE(p.explain(Dimension::kDp, Operation::kAllreduce, 1 << 20).find("by measurement"),
            std::string::npos);
}

TEST(AdaptivePolicy, AutoPresetKeepsHybridsChoicesWithoutMeasurements) {
  const Policy a = Policy::preset("auto");
  const Policy h = Policy::preset("hybrid");
  EXPECT_TRUE(a.adaptive());
  EXPECT_FALSE(h.adaptive());
  const size_t mb = 1 << 20;
  for (const auto& [d, op] : {std::pair{Dimension::kDp, Operation::kAllreduce},
                              {Dimension::kZeroGrad, Operation::kReduceScatter},
                              {Dimension::kTp, Operation::kAllreduce},
                              {Dimension::kPp, Operation::kSendRecv},
                              {Dimension::kZeroParam, Operation::kAllgather},
                              {Dimension::kEmbedding, Operation::kAllreduce}}) {
    const PolicyDecision x = a.decide(d, op, mb);
    EXPECT_EQ(x.compressor, h.decide(d, op, mb).compressor) << dimension_name(d);
    // Every rule can fall back to sending the message as it is.
    const size_t rule = size_t(x.rule);
    EXPECT_EQ(a.decision_for(rule, a.candidate_count(rule) - 1).compressor, "none");
  }
}

TEST(AdaptivePolicy, BadAlternativesAreErrors) {
  const std::string dp = "[[rule]]\ndimension = \"dp\"\ncompressor = \"ef+quant:bits=4\"\n";
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {dp + "alternatives = \"none\"\n", "bad.toml:4: 'alternatives' must be an array"},
      {dp + "alternatives = [\"quant:bits=9\"]\n", "alternative 'quant:bits=9'"},
      {dp + "alternatives = [3]\n", "'alternative' must be a string"},
      {dp + "alternatives = [\"powersgd:rank=2\"]\n", "ef2+CODEC only"},
      {"[[rule]]\ndimension = \"dp\"\ncompressor = \"topk:ratio=0.01\"\nalternatives = "
       "[\"none\"]\n",
       "ef2+CODEC only"},
      {dp + "alternatives = [\"none\", \"none\"]\n", "'none' is listed twice"},
      {dp + "alternatives = [\"ef+quant:bits=4\"]\n", "is listed twice"},
      {"[[rule]]\ndimension = \"tp\"\ncompressor = \"bf16\"\nalternatives = [\"ef+bf16\"]\n",
       "rule 1: gradient compressors"},
  };
  for (const Case& c : cases) {
    const std::string got = parse_error(c.text);
    EXPECT_NE(got.find(c.want), std::string::npos)
        << "want '" << c.want << "', got '" << got << "' for:\n"
        << c.text;
  }
}

TEST(CostModel, RingAllreduceByHand) {
  // p = 4, S = 1e6 B, 10 us per message, 100 MB/s; codec: ratio 4, 1 ns/B in, 2 ns/B out.
  const LinkFigures link{1e-5, 1e8};
  const CodecFigures codec{1e-9, 2e-9, 4, true};
  const auto t = [&](Operation op, Path path, int p = 4) {
    return modelled_time(op, path, p, 1e6, link, codec);
  };
  // Native: 2(p-1) messages, 2(p-1)/p S on the wire.
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kNative).transfer, 6e-5 + 1.5e6 / 1e8);
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kNative).codec, 0);
  // Ring with a codec: the wire share shrinks by the ratio; S compressed, 2(p-1)/p S decoded.
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kCodec).transfer, 6e-5 + 1.5e6 / 4e8);
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kCodec).codec, 1e-3 + 1.5 * 2e-3);
  // Error feedback: p - 1 whole streams gathered, S compressed once, p streams decoded.
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kErrorFeedback).transfer, 3e-5 + 3e6 / 4e8);
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kErrorFeedback).codec, 1e-3 + 4 * 2e-3);
  // Two stages: 2 (p-1) messages + 2 size exchanges, the ring's bytes; S (1 + 1/p) compressed,
  // S (3 - 1/p) decoded (a rank decodes its own streams once).
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kTwoStage).transfer, 8e-5 + 1.5e6 / 4e8);
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kTwoStage).codec, 1.25e-3 + 2.75 * 2e-3);
  // The allgather compresses only its own block.
  EXPECT_DOUBLE_EQ(t(Operation::kAllgather, Path::kCodec).codec, 0.25e-3 + 0.75 * 2e-3);
  EXPECT_DOUBLE_EQ(t(Operation::kReduceScatter, Path::kCodec).transfer, 3e-5 + 0.75e6 / 4e8);
  // A send is one message whatever the group.
  EXPECT_DOUBLE_EQ(t(Operation::kSendRecv, Path::kCodec, 9).transfer, 1e-5 + 1e6 / 4e8);
  EXPECT_DOUBLE_EQ(t(Operation::kSendRecv, Path::kCodec, 1).codec, 1e-3 + 2e-3);
  // Alone, a collective costs nothing.
  EXPECT_DOUBLE_EQ(t(Operation::kAllreduce, Path::kCodec, 1).total(), 0);
  // Unknown bandwidth: latency only.
  EXPECT_DOUBLE_EQ(
      modelled_time(Operation::kAllreduce, Path::kNative, 2, 1e6, {1e-5, 0}, codec).total(), 2e-5);
}

}  // namespace
}  // namespace hycc
