// Spec strings: canonical forms, and clear errors that name the spec and what is allowed.
#include <gtest/gtest.h>

#include <string>

#include "hycc/codec.h"
#include "hycc/error.h"
#include "test_util.h"

namespace hycc {
namespace {

TEST(CodecSpec, CanonicalFormsRoundTrip) {
  for (const char* spec :
       {"none", "bf16", "fp16", "quant:bits=4", "quant:bits=8,block=128",
        "quant:bits=2,round=stochastic", "eb:abs=0.0001", "eb:rel=1e-3", "zfp:rate=8",
        "zfp:accuracy=1e-05", "mpc", "zstd:level=1", "exphuff", "exphuff:block=512"}) {
    const std::string canonical = CodecConfig::parse(spec).spec();
    EXPECT_EQ(CodecConfig::parse(canonical).spec(), canonical) << spec;
  }
  EXPECT_EQ(CodecConfig::parse("f16").spec(), "fp16");
  EXPECT_EQ(CodecConfig::parse(" quant : bits = 4 ").spec(),
            CodecConfig::parse("quant:bits=4").spec());
  EXPECT_EQ(CodecConfig().spec(), "none");
}

TEST(CodecSpec, LosslessFlags) {
  EXPECT_TRUE(CodecConfig::parse("none").lossless());
  EXPECT_TRUE(CodecConfig::parse("mpc").lossless());
  EXPECT_TRUE(CodecConfig::parse("zstd").lossless());
  EXPECT_FALSE(CodecConfig::parse("bf16").lossless());
  EXPECT_FALSE(CodecConfig::parse("quant:bits=8").lossless());
  EXPECT_FALSE(CodecConfig::parse("eb:abs=1").lossless());
  EXPECT_FALSE(CodecConfig::parse("zfp:rate=8").lossless());
}

TEST(CodecSpec, UnknownCodecListsKnownOnes) {
  const std::string e = test::spec_error("lz4:level=1");
  EXPECT_NE(e.find("lz4:level=1"), std::string::npos) << e;
  EXPECT_NE(e.find("quant"), std::string::npos) << e;
  EXPECT_NE(e.find("zfp"), std::string::npos) << e;
}

TEST(CodecSpec, BadParametersNameTheSpecAndTheRange) {
  struct Case {
    const char* spec;
    const char* mention;
  } cases[] = {
      {"quant:bits=9", "bits"},
      {"quant:bits=0", "bits"},
      {"quant:bit=4", "bits"},
      {"quant:bits=four", "bits"},
      {"quant:block=0", "block"},
      {"quant:round=up", "stochastic"},
      {"eb", "abs"},
      {"eb:abs=-1", "abs"},
      {"eb:abs=1e-3,rel=1e-3", "abs"},
      {"eb:rel=nan", "rel"},
      {"zfp", "rate"},
      {"zfp:rate=0", "rate"},
      {"zfp:rate=8,accuracy=1", "rate"},
      {"zfp:accuracy=-1", "accuracy"},
      {"zstd:level=99", "level"},
      {"mpc:dim=0", "dim"},
      {"exphuff:block=100", "block"},
      {"exphuff:block=1000", "multiple of 256"},
      {"none:x=1", "no parameters"},
      {"bf16:x=1", "no parameters"},
      {"quant:bits", "KEY=VALUE"},
      {"quant:bits=4,bits=4", "twice"},
      {":bits=4", "empty"},
  };
  for (const auto& c : cases) {
    const std::string e = test::spec_error(c.spec);
    ASSERT_FALSE(e.empty()) << c.spec << " was accepted";
    EXPECT_NE(e.find(c.spec), std::string::npos) << "error does not quote the spec: " << e;
    EXPECT_NE(e.find(c.mention), std::string::npos)
        << "error does not mention " << c.mention << ": " << e;
  }
}

TEST(CodecSpec, HelpListsEveryCodec) {
  const std::string help = codec_help();
  for (const auto& name : codec_names()) EXPECT_NE(help.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace hycc
