// policy/comm_names.h: HYCC_COMM_NAMES maps the program's communicator names to dimensions.
#include "policy/comm_names.h"

#include <gtest/gtest.h>

#include <string>

#include "hycc/error.h"

namespace hycc {
namespace {

std::string refusal(const char* spec) {
  try {
    CommNames::parse(spec, "HYCC_COMM_NAMES");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(CommNames, MapsListedNamesAndKeepsOthers) {
  const CommNames names =
      CommNames::parse(" MPI_COMM_WORLD = dp ,model group=tp,,stage=pp,z=zero,emb=embedding,dp=tp",
                       "HYCC_COMM_NAMES");
  EXPECT_FALSE(names.empty());
  EXPECT_EQ(names.apply("MPI_COMM_WORLD"), "dp");
  EXPECT_EQ(names.apply("model group"), "tp");  // blanks inside a name are part of it
  EXPECT_EQ(names.apply("stage"), "pp");
  EXPECT_EQ(names.apply("z"), "zero");
  EXPECT_EQ(names.apply("emb"), "embedding");
  EXPECT_EQ(names.apply("dp"), "tp");  // a dimension's own name can be mapped too
  EXPECT_EQ(names.apply("tp"), "tp");
  EXPECT_EQ(names.apply(""), "");                              // unnamed communicators stay unnamed
  EXPECT_EQ(names.apply("mpi_comm_world"), "mpi_comm_world");  // names are case-sensitive
}

TEST(CommNames, WorldCoversTheUnnamedCommunicatorsOfAllRanks) {
  const CommNames names = CommNames::parse("@world=dp, stage=pp", "HYCC_COMM_NAMES");
  EXPECT_FALSE(names.empty());
  EXPECT_TRUE(names.has_world());
  EXPECT_EQ(names.apply("", true), "dp");                // an unnamed duplicate of world
  EXPECT_EQ(names.apply("MPI_COMM_WORLD", true), "dp");  // world itself
  EXPECT_EQ(names.apply("", false), "");                 // unnamed, some of the ranks
  EXPECT_EQ(names.apply("grads", true), "grads");        // a name of the program's own
  EXPECT_EQ(names.apply("stage", true), "pp");
  EXPECT_EQ(names.apply(""), "");  // spans_world defaults to false
  // A listed name wins over @world.
  const CommNames both = CommNames::parse("MPI_COMM_WORLD=tp,@world=dp", "HYCC_COMM_NAMES");
  EXPECT_EQ(both.apply("MPI_COMM_WORLD", true), "tp");
  EXPECT_EQ(both.apply("", true), "dp");
  EXPECT_FALSE(CommNames::parse("world=dp", "HYCC_COMM_NAMES").has_world());
}

TEST(CommNames, AnEmptySpecListsNothing) {
  EXPECT_TRUE(CommNames::parse("", "HYCC_COMM_NAMES").empty());
  EXPECT_TRUE(CommNames::parse(" , ,", "HYCC_COMM_NAMES").empty());
  EXPECT_EQ(CommNames{}.apply("MPI_COMM_WORLD"), "MPI_COMM_WORLD");
}

TEST(CommNames, RefusesWhatItCannotRead) {
  for (const char* bad : {"MPI_COMM_WORLD", "=dp", " = dp", "world=", "world=dp=tp"}) {
    const std::string m = refusal(bad);
    EXPECT_NE(m.find("HYCC_COMM_NAMES"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("NAME=DIMENSION"), std::string::npos) << bad << ": " << m;
  }
  const std::string other = refusal("world=data");
  EXPECT_NE(other.find("'data' is not a dimension"), std::string::npos) << other;
  EXPECT_NE(refusal("world=other").find("not a dimension"), std::string::npos);
  EXPECT_NE(refusal("world=DP").find("not a dimension"), std::string::npos);
  const std::string twice = refusal("world=dp,world=tp");
  EXPECT_NE(twice.find("'world' is listed twice"), std::string::npos) << twice;
  EXPECT_NE(refusal("@world=dp,@world=tp").find("'@world' is listed twice"), std::string::npos);
  const std::string group = refusal("@all=dp");
  EXPECT_NE(group.find("'@all' is not a group of communicators"), std::string::npos) << group;
  EXPECT_NE(refusal("@world=data").find("'data' is not a dimension"), std::string::npos);
}

}  // namespace
}  // namespace hycc
