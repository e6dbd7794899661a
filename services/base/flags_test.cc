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
}  // namespace syncopate::base
