// Gradient compressor specs: canonical forms, defaults, and clear errors naming the spec.
#include <gtest/gtest.h>

#include <string>

#include "grad/grad_spec.h"
#include "hycc/error.h"
#include "hycc/grad.h"

namespace hycc {
namespace {

std::string grad_spec_error(const std::string& spec) {
  try {
    GradCompressor c(spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(GradSpec, CanonicalForms) {
  EXPECT_EQ(GradCompressor("none").spec(), "none");
  EXPECT_EQ(GradCompressor("ef+quant:bits=4").spec(), "ef+quant:bits=4,block=64,round=nearest");
  EXPECT_EQ(GradCompressor("ef+zfp:rate=4").spec(), "ef+zfp:rate=4");
  EXPECT_EQ(GradCompressor("ef2+quant:bits=6").spec(), "ef2+quant:bits=6,block=64,round=nearest");
  EXPECT_EQ(grad::parse_grad_spec("ef2+mpc").kind, grad::Kind::kTwoStageErrorFeedback);
  EXPECT_THROW(GradCompressor("ef2+quant:bits=9"), InvalidArgument);
  EXPECT_THROW(GradCompressor("ef3+quant:bits=4"), InvalidArgument);
  EXPECT_EQ(GradCompressor("powersgd:rank=4").spec(),
            "powersgd:rank=4,min_compression=2,warm_start=on,ef=on,seed=0,start=0,flat=square");
  EXPECT_EQ(GradCompressor("powersgd:rank=2,warm_start=0,min_compression=1.5,flat=plain").spec(),
            "powersgd:rank=2,min_compression=1.5,warm_start=off,ef=on,seed=0,start=0,flat=plain");
  EXPECT_EQ(GradCompressor("topk").spec(), "topk:ratio=0.01,ef=on");
  EXPECT_EQ(GradCompressor("topk:ratio=0.25").spec(), "topk:ratio=0.25,ef=on");
  EXPECT_EQ(GradCompressor("topk:count=1000,ef=off").spec(), "topk:count=1000,ef=off");
  EXPECT_EQ(GradCompressor("sign").spec(), "sign:ef=on");
  EXPECT_EQ(GradCompressor("sign:ef=0").spec(), "sign:ef=off");
  EXPECT_EQ(GradCompressor("sign:ef=off").spec(), "sign:ef=off");
  for (const char* spec : {"none", "ef+quant:bits=2,round=stochastic", "ef+eb:abs=1e-3",
                           "powersgd:rank=8,seed=7,start=10", "topk:count=3", "sign:ef=off"}) {
    const std::string canonical = GradCompressor(spec).spec();
    EXPECT_EQ(GradCompressor(canonical).spec(), canonical) << spec;
  }
}

TEST(GradSpec, ResolvedParameters) {
  const grad::GradSpec p = grad::parse_grad_spec("powersgd:rank=3,warm_start=off,ef=off");
  EXPECT_EQ(p.kind, grad::Kind::kPowerSgd);
  EXPECT_EQ(p.rank, 3);
  EXPECT_FALSE(p.warm_start);
  EXPECT_FALSE(p.error_feedback);
  EXPECT_EQ(p.start, 0u);
  EXPECT_TRUE(p.flat_square);
  EXPECT_FALSE(grad::parse_grad_spec("powersgd:flat=plain").flat_square);
  EXPECT_EQ(grad::parse_grad_spec("powersgd:start=1000").start, 1000u);
  const grad::GradSpec t = grad::parse_grad_spec("topk:ratio=0.1");
  EXPECT_EQ(grad::topk_count(t, 0), 0u);
  EXPECT_EQ(grad::topk_count(t, 1), 1u);
  EXPECT_EQ(grad::topk_count(t, 95), 10u);  // ceil(9.5)
  EXPECT_EQ(grad::topk_count(grad::parse_grad_spec("topk:count=7"), 5), 5u);
  EXPECT_EQ(grad::parse_grad_spec("ef+quant:bits=2").codec.spec(),
            "quant:bits=2,block=64,round=nearest");
}

TEST(GradSpec, ErrorsNameTheSpecAndWhatIsAccepted) {
  struct Case {
    const char* spec;
    const char* mention;
  } cases[] = {
      {"", "empty"},
      {"lz4", "known: none"},
      {"quant:bits=4", "ef+quant:bits=4"},
      {"ef+quant:bits=9", "[1, 8]"},
      {"ef+nothing", "known codecs"},
      {"powersgd:rank=0", "rank"},
      {"powersgd:rank=4,rnak=2", "rank=1..256"},
      {"powersgd:min_compression=0.5", "min_compression"},
      {"powersgd:warm_start=maybe", "on|off"},
      {"powersgd:flat=round", "square|plain"},
      {"topk:ratio=0", "(0, 1]"},
      {"topk:ratio=1.5", "ratio"},
      {"topk:count=0", "count"},
      {"topk:count=2.5", "integer"},
      {"topk:ratio=0.1,count=10", "both"},
      {"sign:ef=yes", "on|off"},
      {"sign:bits=1", "ef=on|off"},
      {"none:x=1", "none takes no parameters"},
  };
  for (const Case& c : cases) {
    const std::string e = grad_spec_error(c.spec);
    EXPECT_NE(e.find("[grad]"), std::string::npos) << c.spec << ": " << e;
    EXPECT_NE(e.find(c.mention), std::string::npos) << c.spec << ": " << e;
    if (*c.spec != '\0') {
      EXPECT_NE(e.find(c.spec), std::string::npos) << c.spec << ": " << e;
    }
  }
}

TEST(GradSpec, HelpListsEveryCompressor) {
  const std::string help = grad_help();
  for (const char* name : {"none", "ef+CODEC", "ef2+CODEC", "powersgd:", "topk:", "sign:"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace hycc
