#include "base/flags.h"

#include "gtest/gtest.h"

namespace syncopate::base {
namespace {

TEST(ParseDuration, AcceptsUnitsAndBareSeconds) {
  EXPECT_EQ(*ParseDuration("120s"), absl::Seconds(120));
  EXPECT_EQ(*ParseDuration("2m"), absl::Minutes(2));
  EXPECT_EQ(*ParseDuration("250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*ParseDuration("1.5"), absl::Milliseconds(1500));
}

TEST(ParseDuration, RejectsGarbageAndNegatives) {
  EXPECT_EQ(ParseDuration("soon").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDuration("-3s").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDuration("-1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseDoubleList, ParsesAndRejects) {
  EXPECT_EQ(*ParseDoubleList("1,1,2,4"), (std::vector<double>{1, 1, 2, 4}));
  EXPECT_FALSE(ParseDoubleList("1,,2").ok());
  EXPECT_FALSE(ParseDoubleList("1,x").ok());
}

}  // namespace
TEST(FlagsTest, ParseDurationsFillsEachOrStopsAtTheFirstError) {
  const std::string a = "2s", b = "250ms", bad = "soon";
  absl::Duration x, y;
  ASSERT_TRUE(ParseDurations({{&a, &x}, {&b, &y}}).ok());
  EXPECT_EQ(x, absl::Seconds(2));
  EXPECT_EQ(y, absl::Milliseconds(250));
  absl::Duration z = absl::ZeroDuration();
  EXPECT_EQ(ParseDurations({{&bad, &x}, {&a, &z}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(z, absl::ZeroDuration()) << "nothing after the error is parsed";
}

}  // namespace syncopate::base
