#include "store/parameter_table.h"

#include "gtest/gtest.h"
#include "store/test_pushes.h"

namespace syncopate::store {
namespace {

using testing::Header;
using testing::Stage;

std::vector<float> Live(const ParameterTable& t, const std::string& name) {
  auto s = *t.Snapshot(-1);
  for (size_t i = 0; i < s->specs.size(); ++i) {
    if (s->specs[i].name == name) return s->values[i];
  }
  return {};
}

class ParameterTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_.SetMembers({{1, 1}, {2, 1}});
    ASSERT_TRUE(table_.Initialize(Stage(Header(1, 1, 0), {{"a", {1, 2}}, {"b", {10}}})).ok());
  }
  ParameterTable table_;
};

TEST_F(ParameterTableTest, InitializeIsIdempotentAndChecksShapes) {
  auto again = table_.Initialize(Stage(Header(2, 1, 0), {{"a", {7, 7}}}));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_initialized);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{1, 2}));
  EXPECT_EQ(table_.Initialize(Stage(Header(2, 1, 0), {{"a", {1, 2, 3}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.last_closed_round(), 0);
}

TEST_F(ParameterTableTest, ImmediatePushAppliesWeightedDelta) {
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_IMMEDIATE, 0.5f), {{"a", {2, 4}}})).ok());
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 4}));
}

TEST_F(ParameterTableTest, RetriedPushIsAppliedOnce) {
  StagedPush push = Stage(Header(1, 1, 5), {{"a", {1, 1}}});
  ASSERT_FALSE(table_.Apply(push)->duplicate);
  EXPECT_TRUE(table_.Apply(push)->duplicate);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
}

TEST_F(ParameterTableTest, MembershipIsEnforced) {
  const std::vector<float> before = Live(table_, "a");
  EXPECT_EQ(table_.Apply(Stage(Header(9, 1, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(table_.Apply(Stage(Header(1, 2, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  table_.SetMembers({{2, 1}});
  EXPECT_EQ(table_.Apply(Stage(Header(1, 1, 1), {{"a", {1, 1}}})).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Live(table_, "a"), before);
}

TEST_F(ParameterTableTest, RoundAppliesMeanAndPublishesIdenticalSnapshot) {
  ASSERT_TRUE(
      table_.Apply(Stage(Header(1, 1, 1, v1::APPLY_MODE_ROUND, 1, 1), {{"a", {2, 0}}, {"b", {4}}}))
          .ok());
  ASSERT_TRUE(
      table_.Apply(Stage(Header(2, 1, 1, v1::APPLY_MODE_ROUND, 1, 1), {{"a", {0, 2}}, {"b", {0}}}))
          .ok());
  // Nothing is visible before the close.
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{1, 2}));
  absl::StatusOr<CloseResult> closed = table_.CloseRound(1);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->pushes, 2u);
  EXPECT_EQ(Live(table_, "a"), (std::vector<float>{2, 3}));
  EXPECT_EQ(Live(table_, "b"), (std::vector<float>{12}));
  auto s1 = *table_.Snapshot(1);
  auto s1_again = *table_.Snapshot(1);
  EXPECT_EQ(s1->checksum, closed->checksum);
  EXPECT_EQ(s1_again->checksum, closed->checksum);
  // Closing again returns the recorded result; a late push for the closed round is refused.
  EXPECT_EQ(table_.CloseRound(1)->checksum, closed->checksum);
  EXPECT_EQ(table_.Apply(Stage(Header(1, 1, 2, v1::APPLY_MODE_ROUND, 1, 1), {{"a", {5, 5}}}))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.CloseRound(3).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table_.Snapshot(2).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParameterTableTest, OldSnapshotsAreDropped) {
  for (int64_t r = 1; r <= 6; ++r) ASSERT_TRUE(table_.CloseRound(r).ok());
  EXPECT_EQ(table_.Snapshot(1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(table_.Snapshot(6).ok());
  EXPECT_TRUE(table_.Snapshot(3).ok());
}

}  // namespace
}  // namespace syncopate::store
