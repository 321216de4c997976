// Policy: presets (and their files), rule matching, decisions, explanations, TOML errors with
// line numbers, the TOML round trip and HYCC_POLICY.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/buffer_pool.h"
#include "common/byte_size.h"
#include "hycc/error.h"
#include "hycc/policy.h"
#include "hycc/policy_engine.h"

namespace hycc {
namespace {

const std::string kSourceDir = HYCC_SOURCE_DIR;

// The message of the InvalidArgument that `f` throws ("" if none).
template <typename F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

std::string canon(const char* spec) { return CodecConfig::parse(spec).spec(); }

bool same_rules(const Policy& a, const Policy& b) {
  if (a.rules().size() != b.rules().size()) return false;
  for (size_t i = 0; i < a.rules().size(); ++i) {
    const PolicyRule &x = a.rules()[i], &y = b.rules()[i];
    if (x.dimension != y.dimension || x.operation != y.operation || x.min_bytes != y.min_bytes ||
        x.max_bytes != y.max_bytes || x.compressor != y.compressor || x.gradient != y.gradient ||
        x.threshold_bytes != y.threshold_bytes || x.alternatives != y.alternatives) {
      return false;
    }
  }
  return true;
}

TEST(ByteSize, ParsesAndFormats) {
  EXPECT_EQ(parse_byte_size("0", "x"), 0u);
  EXPECT_EQ(parse_byte_size("1000", "x"), 1000u);
  EXPECT_EQ(parse_byte_size("64K", "x"), 65536u);
  EXPECT_EQ(parse_byte_size("64k", "x"), 65536u);
  EXPECT_EQ(parse_byte_size("2M", "x"), size_t{2} << 20);
  EXPECT_EQ(parse_byte_size("1024G", "x"), size_t{1} << 40);
  for (const char* bad : {"", "K", "12KB", "1.5M", "-1", "2048G", "99999999999999"}) {
    EXPECT_THROW(parse_byte_size(bad, "x"), InvalidArgument) << bad;
  }
  EXPECT_EQ(format_byte_size(0), "0");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(65536), "64K");
  EXPECT_EQ(format_byte_size(size_t{3} << 30), "3G");
}

TEST(Policy, PresetsLoadAndEqualTheirFiles) {
  const std::vector<std::string> names = Policy::preset_names();
  for (const char* want : {"baseline", "naive", "hybrid-mz", "hybrid-z", "hybrid", "auto"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const std::string& n : names) {
    const Policy p = Policy::preset(n);
    EXPECT_EQ(p.name(), n);
    EXPECT_FALSE(p.rules().empty()) << n;
    const Policy file = Policy::load_file(kSourceDir + "/configs/policies/" + n + ".toml");
    EXPECT_TRUE(same_rules(p, file)) << n;
  }
  EXPECT_NE(invalid_message([] { Policy::preset("fast"); }).find("presets: "), std::string::npos);
}

TEST(Policy, PresetDecisions) {
  const size_t mb = 1 << 20;
  const Policy baseline = Policy::preset("baseline");
  for (const Dimension d : {Dimension::kDp, Dimension::kTp, Dimension::kOther}) {
    EXPECT_EQ(baseline.decide(d, Operation::kAllreduce, mb).compressor, "none");
  }
  const Policy naive = Policy::preset("naive");
  EXPECT_EQ(naive.decide(Dimension::kTp, Operation::kAllreduce, mb).compressor,
            canon("quant:bits=4"));
  EXPECT_EQ(naive.decide(Dimension::kDp, Operation::kAllreduce, mb).compressor,
            canon("quant:bits=4"));

  const Policy mz = Policy::preset("hybrid-mz");
  EXPECT_EQ(mz.decide(Dimension::kTp, Operation::kAllreduce, mb).compressor, canon("mpc"));
  EXPECT_EQ(mz.decide(Dimension::kTp, Operation::kAllreduce, mb, DType::kBF16).compressor,
            canon("exphuff"));
  EXPECT_EQ(mz.decide(Dimension::kEmbedding, Operation::kAllreduce, mb, DType::kBF16).compressor,
            canon("mpc"));
  EXPECT_EQ(mz.decide(Dimension::kDp, Operation::kAllreduce, mb).compressor,
            canon("zfp:rate=7.25"));
  const Policy z = Policy::preset("hybrid-z");
  EXPECT_EQ(z.decide(Dimension::kPp, Operation::kSendRecv, mb).compressor, canon("zfp:rate=16"));
  EXPECT_EQ(z.decide(Dimension::kPp, Operation::kSendRecv, mb, DType::kF16).compressor,
            canon("zfp:rate=12"));
  // Under ZeRO the data-parallel gradients travel as a reduce-scatter: the same strong codec.
  for (const char* name : {"hybrid-mz", "hybrid-z"}) {
    const Policy p = Policy::preset(name);
    for (const DType dtype : {DType::kF32, DType::kBF16}) {
      EXPECT_EQ(p.decide(Dimension::kZeroGrad, Operation::kReduceScatter, mb, dtype).compressor,
                canon("zfp:rate=7.25"))
          << name;
    }
    EXPECT_NE(p.decide(Dimension::kZeroParam, Operation::kAllgather, mb).compressor,
              canon("zfp:rate=7.25"))
        << name;
  }

  const Policy h = Policy::preset("hybrid");
  const PolicyDecision dp = h.decide(Dimension::kDp, Operation::kAllreduce, mb);
  EXPECT_TRUE(dp.gradient);
  EXPECT_EQ(dp.compressor.rfind("ef2+quant:bits=6", 0), 0u) << dp.compressor;
  EXPECT_EQ(dp.options.codec.id(), CodecId::kNone);
  const PolicyDecision zg = h.decide(Dimension::kZeroGrad, Operation::kReduceScatter, mb);
  EXPECT_TRUE(zg.gradient);
  const PolicyDecision tp = h.decide(Dimension::kTp, Operation::kAllreduce, mb);
  EXPECT_FALSE(tp.gradient);
  EXPECT_EQ(tp.options.codec.spec(), canon("bf16"));
  EXPECT_EQ(tp.options.threshold_bytes, size_t{64} << 10);
  EXPECT_EQ(h.decide(Dimension::kZeroParam, Operation::kAllgather, mb).compressor, canon("bf16"));
  EXPECT_EQ(h.decide(Dimension::kEmbedding, Operation::kAllreduce, mb).compressor, canon("mpc"));
  // dp traffic that is not the gradient allreduce falls through to the default rule.
  EXPECT_EQ(h.decide(Dimension::kDp, Operation::kBroadcast, mb).compressor, canon("bf16"));
}

constexpr const char* kRules = R"(name = "test"
threshold = "1K"

[[rule]]
dimension = "tp"
operation = "allreduce"
max_bytes = "1M"
compressor = "mpc"

[[rule]]
dimension = "tp"
compressor = "quant:bits=8"
threshold = 4096

[[rule]]
dimension = "default"
min_bytes = "64K"
compressor = "bf16"
)";

TEST(Policy, FirstMatchingRuleWins) {
  const Policy p = Policy::parse_toml(kRules, "test.toml");
  EXPECT_EQ(p.name(), "test");
  ASSERT_EQ(p.rules().size(), 3u);
  EXPECT_EQ(p.rules()[0].origin, "test.toml:4");
  EXPECT_EQ(p.rules()[0].threshold_bytes, 1024u);  // the file's default
  EXPECT_EQ(p.rules()[1].threshold_bytes, 4096u);

  PolicyDecision d = p.decide(Dimension::kTp, Operation::kAllreduce, 1000);
  EXPECT_EQ(d.rule, 0);
  EXPECT_EQ(d.compressor, CodecConfig::parse("mpc").spec());
  d = p.decide(Dimension::kTp, Operation::kAllreduce, 1 << 20);  // max_bytes is exclusive
  EXPECT_EQ(d.rule, 1);
  EXPECT_EQ(d.options.codec.spec(), CodecConfig::parse("quant:bits=8").spec());
  EXPECT_EQ(d.options.threshold_bytes, 4096u);
  EXPECT_EQ(p.decide(Dimension::kTp, Operation::kAllgather, 10).rule, 1);
  EXPECT_EQ(p.decide(Dimension::kPp, Operation::kSendRecv, 64 << 10).rule, 2);
  d = p.decide(Dimension::kPp, Operation::kSendRecv, (64 << 10) - 1);
  EXPECT_EQ(d.rule, -1);
  EXPECT_EQ(d.compressor, "none");
  EXPECT_EQ(d.options.codec.id(), CodecId::kNone);
}

// Rules for an element type: mixed-precision traffic takes its own codec, float32 the default.
TEST(Policy, RulesCanNameTheElementType) {
  const Policy p = Policy::parse_toml(
      "name = \"mixed\"\n"
      "[[rule]]\ndimension = \"default\"\ndtype = \"bf16\"\ncompressor = \"exphuff\"\n"
      "[[rule]]\ndimension = \"default\"\ncompressor = \"bf16\"\n",
      "mixed.toml");
  const size_t mb = 1 << 20;
  EXPECT_EQ(p.decide(Dimension::kTp, Operation::kAllreduce, mb, DType::kBF16).compressor,
            CodecConfig::parse("exphuff").spec());
  EXPECT_EQ(p.decide(Dimension::kTp, Operation::kAllreduce, mb, DType::kF32).compressor, "bf16");
  EXPECT_EQ(p.decide(Dimension::kTp, Operation::kAllreduce, mb, DType::kF16).compressor, "bf16");
  EXPECT_EQ(p.decide(Dimension::kTp, Operation::kAllreduce, mb).rule, 1);  // float32 by default
  const std::string e = p.explain(Dimension::kPp, Operation::kSendRecv, mb, DType::kF16);
  EXPECT_NE(e.find("of f16 on dimension pp"), std::string::npos) << e;
  EXPECT_NE(e.find("skipped: dtype is f16, not bf16"), std::string::npos) << e;
  EXPECT_NE(p.to_toml().find("dtype = \"bf16\""), std::string::npos);
  EXPECT_EQ(Policy::parse_toml(p.to_toml(), "again.toml").to_toml(), p.to_toml());
}

TEST(Policy, ExplainSaysWhichRuleMatchedAndWhy) {
  const Policy p = Policy::parse_toml(kRules, "test.toml");
  const std::string e = p.explain(Dimension::kTp, Operation::kAllreduce, 2 << 20);
  EXPECT_NE(e.find("rule 1 (test.toml:4) skipped: 2097152 bytes is outside [0, 1M)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("rule 2 (test.toml:10) matches"), std::string::npos) << e;
  EXPECT_NE(e.find("-> codec quant:bits=8,"), std::string::npos) << e;
  const std::string pp = p.explain(Dimension::kPp, Operation::kSendRecv, 100);
  EXPECT_NE(pp.find("dimension is pp, not tp"), std::string::npos) << pp;
  EXPECT_NE(pp.find("no rule matches"), std::string::npos) << pp;
  const std::string small = p.explain(Dimension::kTp, Operation::kAllgather, 100);
  EXPECT_NE(small.find("below the threshold"), std::string::npos) << small;
}

TEST(Policy, TomlRoundTrip) {
  for (const std::string& n : Policy::preset_names()) {
    const Policy p = Policy::preset(n);
    const Policy q = Policy::parse_toml(p.to_toml(), "again.toml");
    EXPECT_TRUE(same_rules(p, q)) << n << "\n" << p.to_toml();
    EXPECT_EQ(q.name(), p.name());
  }
  const Policy p = Policy::parse_toml(kRules, "test.toml");
  EXPECT_TRUE(same_rules(p, Policy::parse_toml(p.to_toml(), "again.toml"))) << p.to_toml();
}

TEST(Policy, TomlRoundTripEscapesNamesAndDescriptions) {
  // Quotes, backslashes and control characters in the strings: to_toml() wrote them raw before,
  // a text that did not parse (found by tests/fuzz/fuzz_text).
  const Policy p = Policy::parse_toml(
      "name = \"a \\\"quoted\\\" name\"\n"
      "description = \"back\\\\slash, tab\\t, newline\\n, bell\\u0007, \u00e9\"\n",
      "test.toml");
  EXPECT_EQ(p.name(), "a \"quoted\" name");
  EXPECT_EQ(p.description(), "back\\slash, tab\t, newline\n, bell\a, \u00e9");
  const Policy q = Policy::parse_toml(p.to_toml(), "again.toml");
  EXPECT_EQ(q.name(), p.name());
  EXPECT_EQ(q.description(), p.description());
  EXPECT_EQ(q.to_toml(), p.to_toml());
}

TEST(Policy, FileErrorsNameTheLineAndTheKey) {
  const auto err = [](const std::string& text) {
    return invalid_message([&] { Policy::parse_toml(text, "bad.toml"); });
  };
  const std::string rule = "[[rule]]\ndimension = \"tp\"\ncompressor = \"mpc\"\n";
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"name = \"x\"\ncolour = 3\n", "bad.toml:2: unknown key 'colour'"},
      {rule + "codec = \"mpc\"\n", "bad.toml:4: unknown key 'codec' in rule 1"},
      {"[[rule]]\ndimension = \"dq\"\ncompressor = \"mpc\"\n",
       "bad.toml:2: unknown dimension 'dq'"},
      {"[[rule]]\ndimension = \"tp\"\ncompressor = \"quant:bits=9\"\n",
       "bad.toml:3: compressor 'quant:bits=9'"},
      {"[[rule]]\ndimension = \"tp\"\n", "bad.toml:1: rule 1 has no 'compressor'"},
      {"[[rule]]\ncompressor = \"mpc\"\n", "bad.toml:1: rule 1 has no 'dimension'"},
      {rule + "operation = \"reduce\"\n", "bad.toml:4: unknown operation 'reduce'"},
      {rule + "dtype = \"f64\"\n", "bad.toml:4: unknown dtype 'f64'"},
      {rule + "threshold = \"12KB\"\n", "bad.toml:4: bad byte count '12KB' for threshold"},
      {rule + "max_bytes = -5\n", "bad.toml:4: 'max_bytes' must not be negative"},
      {rule + "min_bytes = 10\nmax_bytes = 10\n", "bad.toml:1: rule 1: min_bytes 10 is not below"},
      {"[[rule]]\ndimension = \"tp\"\ncompressor = \"ef+quant:bits=4\"\n",
       "bad.toml:1: rule 1: gradient compressor"},
      {"name = \"x\"\n[[rule]\n", "bad.toml:2:"},
      {"rule = 3\n", "bad.toml:1: 'rule' must be an array of tables"},
      {"name = 3\n", "bad.toml:1: 'name' must be a string"},
  };
  for (const Case& c : cases) {
    const std::string got = err(c.text);
    EXPECT_NE(got.find(c.want), std::string::npos)
        << "want '" << c.want << "', got '" << got << "' for:\n"
        << c.text;
  }
}

TEST(Policy, FromEnvironment) {
  ::unsetenv("HYCC_POLICY");
  EXPECT_EQ(Policy::from_environment().name(), "baseline");
  EXPECT_EQ(Policy::from_environment("hybrid").name(), "hybrid");
  ::setenv("HYCC_POLICY", "naive", 1);
  EXPECT_EQ(Policy::from_environment().name(), "naive");
  const std::string file = ::testing::TempDir() + "hycc_policy_test.toml";
  std::ofstream(file) << kRules;
  ::setenv("HYCC_POLICY", file.c_str(), 1);
  EXPECT_EQ(Policy::from_environment().name(), "test");
  ::setenv("HYCC_POLICY", "no-such-policy", 1);
  const std::string e = invalid_message([] { Policy::from_environment(); });
  EXPECT_NE(e.find("HYCC_POLICY"), std::string::npos) << e;
  EXPECT_NE(e.find("neither a preset nor a file"), std::string::npos) << e;
  ::unsetenv("HYCC_POLICY");
  std::remove(file.c_str());
}

TEST(Policy, GradientRulesKnowTheCodecTheyWrap) {
  const Policy hybrid = Policy::preset("hybrid");
  const PolicyDecision d = hybrid.decide(Dimension::kDp, Operation::kAllreduce, 1 << 20);
  EXPECT_TRUE(d.gradient);
  EXPECT_EQ(d.options.codec.id(), CodecId::kNone);
  EXPECT_EQ(d.gradient_codec.id(), CodecId::kQuant);
  const PolicyDecision t = hybrid.decide(Dimension::kTp, Operation::kAllreduce, 1 << 20);
  EXPECT_FALSE(t.gradient);
  EXPECT_EQ(t.options.codec.spec(), "bf16");
}

TEST(LogOptions, ParsesItemsAndRejectsUnknownOnes) {
  const LogOptions none = LogOptions::parse("off");
  EXPECT_FALSE(none.summary || none.calls || none.decisions || !none.json_path.empty());
  const LogOptions all = LogOptions::parse("summary,calls,decisions,json=/tmp/s.json");
  EXPECT_TRUE(all.summary && all.calls && all.decisions);
  EXPECT_EQ(all.json_path, "/tmp/s.json");
  const std::string e = invalid_message([] { LogOptions::parse("summary,loud"); });
  EXPECT_NE(e.find("HYCC_LOG"), std::string::npos) << e;
  EXPECT_NE(e.find("'loud'"), std::string::npos) << e;
  EXPECT_NE(invalid_message([] { LogOptions::parse("json="); }), "");
}

TEST(PolicyEngine, FromEnvironmentReadsEveryVariable) {
  ::setenv("HYCC_POLICY", "naive", 1);
  ::setenv("HYCC_LOG", "calls", 1);
  ::setenv("HYCC_SAMPLE_ERROR", "10", 1);
  const PolicyEngine e = PolicyEngine::from_environment();
  EXPECT_EQ(e.policy().name(), "naive");
  EXPECT_TRUE(e.options().log.calls);
  EXPECT_EQ(e.options().sample_error_every, 10u);
  ::setenv("HYCC_SAMPLE_ERROR", "often", 1);
  const std::string m = invalid_message([] { PolicyEngine::from_environment(); });
  EXPECT_NE(m.find("HYCC_SAMPLE_ERROR"), std::string::npos) << m;
  ::unsetenv("HYCC_POLICY");
  ::unsetenv("HYCC_LOG");
  ::unsetenv("HYCC_SAMPLE_ERROR");
}

// HYCC_POOL_MIB: the scratch pool's limit, set when the engine is made; a bad value names it.
TEST(PolicyEngine, PoolLimitFromEnvironment) {
  const size_t before = pool_limit();
  EXPECT_FALSE(EngineOptions::from_environment().pool_limit_bytes.has_value());
  ::setenv("HYCC_POOL_MIB", "64", 1);
  EXPECT_EQ(EngineOptions::from_environment().pool_limit_bytes, size_t{64} << 20);
  EXPECT_EQ(pool_limit(), before);  // reading the options sets nothing
  {
    const PolicyEngine e = PolicyEngine::from_environment();
    EXPECT_EQ(pool_limit(), size_t{64} << 20);
  }
  ::setenv("HYCC_POOL_MIB", "0", 1);
  EXPECT_EQ(EngineOptions::from_environment().pool_limit_bytes, size_t{0});
  for (const char* bad : {"-1", "lots", "", "1048577"}) {
    ::setenv("HYCC_POOL_MIB", bad, 1);
    const std::string m = invalid_message([] { EngineOptions::from_environment(); });
    EXPECT_NE(m.find("HYCC_POOL_MIB"), std::string::npos) << bad << ": " << m;
  }
  ::unsetenv("HYCC_POOL_MIB");
  set_pool_limit(before);
}

// A caller that chooses the policy itself (hycc-train --policy) reads only the logging variables:
// a bad HYCC_POLICY must not stop it.
TEST(PolicyEngine, OptionsFromEnvironmentIgnoreThePolicyVariable) {
  ::setenv("HYCC_POLICY", "no-such-policy", 1);
  ::setenv("HYCC_LOG", "summary", 1);
  ::setenv("HYCC_SAMPLE_ERROR", "3", 1);
  const EngineOptions o = EngineOptions::from_environment();
  EXPECT_TRUE(o.log.summary);
  EXPECT_EQ(o.sample_error_every, 3u);
  ::unsetenv("HYCC_POLICY");
  ::unsetenv("HYCC_LOG");
  ::unsetenv("HYCC_SAMPLE_ERROR");
}

}  // namespace
}  // namespace hycc
