#include "sync/hybrid_policy.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using ::testing::ElementsAre;
using testing::Granted;
using ::testing::IsEmpty;
using testing::JoinAll;
using testing::kT0;
using testing::Rounds;
using ::testing::UnorderedElementsAre;

TEST(GroupBySpeed, CutsAtTheLargestRatiosAboveTheThreshold) {
  const std::vector<std::pair<TrainerId, double>> steps = {
      {1, 0.010}, {2, 0.011}, {3, 0.020}, {4, 0.041}};
  EXPECT_EQ(GroupBySpeed(steps, 2, 1.5), (Grouping{{1, 2, 3}, {4}}));
  EXPECT_EQ(GroupBySpeed(steps, 3, 1.5), (Grouping{{1, 2}, {3}, {4}}));
  EXPECT_EQ(GroupBySpeed(steps, 1, 1.5), (Grouping{{1, 2, 3, 4}}));
  EXPECT_EQ(GroupBySpeed(steps, 4, 3.0), (Grouping{{1, 2, 3, 4}}));  // no ratio reaches 3
  EXPECT_EQ(GroupBySpeed({{7, 0.2}, {5, 0.1}}, 2, 1.5), (Grouping{{5}, {7}}));
}

// Drives trainers 1..4 with compute times 1, 1, 1.2 and 4 ms per step through the policy.
class HybridPolicyTest : public ::testing::Test {
 protected:
  HybridPolicyTest() : policy_(Config()) {}
  static HybridConfig Config() {
    HybridConfig c;
    c.max_groups = 2;
    c.split_ratio = 1.5;
    c.regroup_every = 2;
    c.min_trainers = 4;
    return c;
  }
  void SetUp() override { ASSERT_THAT(Granted(JoinAll(policy_, 4)), ElementsAre(1, 2, 3, 4)); }

  absl::StatusOr<Decisions> Report(TrainerId t) {
    static const std::map<TrainerId, double> kStep = {{1, 1e-3}, {2, 1e-3}, {3, 1.2e-3}, {4, 4e-3}};
    const int64_t clock = *policy_.ClockOf(t) + 1;
    compute_[t] += kStep.at(t);
    policy_.ObserveCompute(t, clock, compute_[t]);
    return policy_.OnClock(t, clock, kT0);
  }
  // One BSP round of the whole job (everyone still in group 0).
  Decisions Round() {
    Decisions all;
    for (TrainerId t : {1, 2, 3, 4}) all.Append(*Report(t));
    return all;
  }

  HybridPolicy policy_;
  std::map<TrainerId, double> compute_;
};

TEST_F(HybridPolicyTest, StartsAsOneBspGroupThenSplitsBySpeedWithHysteresis) {
  EXPECT_EQ(policy_.group_count(), 1);
  Decisions first = Round();
  EXPECT_THAT(Rounds(first), ElementsAre(1));
  EXPECT_THAT(Granted(first), UnorderedElementsAre(1, 2, 3, 4));
  for (const Grant& g : first.grants) EXPECT_EQ(g.pull.round, 1);
  // Rounds 2 (first proposal), 3, 4 (same proposal again: adopted).
  Round();
  Round();
  Round();
  EXPECT_EQ(policy_.group_count(), 2);
  EXPECT_EQ(policy_.GroupOf(1), 0);
  EXPECT_EQ(policy_.GroupOf(3), 0);
  EXPECT_EQ(policy_.GroupOf(4), 1);
  EXPECT_NEAR(*policy_.StepSeconds(4), 4e-3, 1e-9);
}

TEST_F(HybridPolicyTest, ASlowGroupNeverBlocksAFastOne) {
  for (int i = 0; i < 4; ++i) Round();
  ASSERT_EQ(policy_.GroupOf(4), 1);
  // Trainer 4 does not report; the fast group runs many rounds on its own.
  for (int r = 0; r < 5; ++r) {
    EXPECT_THAT(Granted(*Report(1)), IsEmpty());
    EXPECT_THAT(Granted(*Report(2)), IsEmpty());
    Decisions d = *Report(3);
    ASSERT_EQ(d.close_rounds.size(), 1u);
    EXPECT_THAT(d.close_rounds[0].cuts, ::testing::SizeIs(3));
    EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
    // Within the group every member pulls the same round.
    for (const Grant& g : d.grants) EXPECT_EQ(g.pull.round, d.close_rounds[0].round);
  }
  // The slow group's round takes only its own push.
  Decisions slow = *Report(4);
  ASSERT_EQ(slow.close_rounds.size(), 1u);
  EXPECT_THAT(slow.close_rounds[0].cuts, ElementsAre(::testing::Pair(4, 5)));
  EXPECT_THAT(Granted(slow), ElementsAre(4));
}

TEST_F(HybridPolicyTest, ALateJoinerIsItsOwnGroupAndADeparturesPushesAreKept) {
  Decisions joined;
  ASSERT_TRUE(policy_.OnJoin(5, kT0, &joined).ok());
  EXPECT_THAT(Granted(joined), ElementsAre(5));
  EXPECT_EQ(policy_.group_count(), 2);
  Decisions alone = *policy_.OnClock(5, 1, kT0);
  EXPECT_THAT(Granted(alone), ElementsAre(5));
  // Trainer 4 reports and leaves before its group closes; the next close takes its push.
  ASSERT_TRUE(Report(4).ok());
  ASSERT_TRUE(Report(1).ok());
  ASSERT_TRUE(Report(2).ok());
  Decisions left = policy_.OnLeave(3, kT0);
  ASSERT_EQ(left.close_rounds.size(), 1u);
  EXPECT_THAT(left.close_rounds[0].cuts,
              ElementsAre(::testing::Pair(1, 1), ::testing::Pair(2, 1), ::testing::Pair(4, 1)));
  EXPECT_THAT(Granted(left), UnorderedElementsAre(1, 2, 4));
}

}  // namespace
}  // namespace syncopate::sync
