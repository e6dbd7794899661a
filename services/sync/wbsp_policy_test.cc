#include "sync/wbsp_policy.h"

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
using ::testing::Pair;
using testing::Rounds;
using ::testing::UnorderedElementsAre;

Grant Only(const absl::StatusOr<Decisions>& d, TrainerId trainer) {
  EXPECT_TRUE(d.ok());
  for (const Grant& g : d->grants) {
    if (g.trainer == trainer) return g;
  }
  ADD_FAILURE() << "no grant for trainer " << trainer;
  return {};
}

TEST(Wbsp, FastTrainersNeverWaitAndTheSlowestsPushClosesTheRound) {
  WbspPolicy p(WbspConfig{});
  Decisions start = JoinAll(p, 3);
  ASSERT_THAT(Granted(start), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : start.grants) EXPECT_EQ(g.pull, PullSpec::Round(0, -1));
  // Trainers 1 and 2 push four times each: every report is granted at once, nothing to pull.
  for (int64_t c = 1; c <= 4; ++c) {
    for (TrainerId t : {1, 2}) {
      absl::StatusOr<Decisions> d = p.OnClock(t, c, kT0);
      ASSERT_TRUE(d.ok());
      EXPECT_THAT(Rounds(*d), IsEmpty());
      EXPECT_EQ(Only(d, t).pull, PullSpec::None());
    }
  }
  // Trainer 3's first push completes round 1: it takes everything reported so far.
  absl::StatusOr<Decisions> d = p.OnClock(3, 1, kT0);
  ASSERT_TRUE(d.ok());
  ASSERT_THAT(Rounds(*d), ElementsAre(1));
  EXPECT_THAT(d->close_rounds[0].cuts, ElementsAre(Pair(1, 4), Pair(2, 4), Pair(3, 1)));
  EXPECT_EQ(d->close_rounds[0].aggregation, Aggregation::kSumOverN);
  EXPECT_EQ(d->close_rounds[0].live_trainers, 3);
  EXPECT_EQ(Only(d, 3).pull, PullSpec::Round(1, 1));
  // The fast trainers learn it in the reply to their next push (clock 5 is not in the round).
  EXPECT_EQ(Only(p.OnClock(1, 5, kT0), 1).pull, PullSpec::Round(1, 4));
  EXPECT_EQ(Only(p.OnClock(1, 6, kT0), 1).pull, PullSpec::None());
  EXPECT_EQ(Only(p.OnClock(2, 5, kT0), 2).pull, PullSpec::Round(1, 4));
}

TEST(Wbsp, TheSlowTrainerDyingClosesTheRoundWithoutIt) {
  WbspPolicy p(WbspConfig{Aggregation::kMean, false, 1, absl::Seconds(30)});
  JoinAll(p, 3);
  ASSERT_TRUE(p.OnClock(1, 1, kT0).ok());
  ASSERT_TRUE(p.OnClock(2, 1, kT0).ok());
  ASSERT_TRUE(p.OnClock(3, 1, kT0).ok());  // round 1
  ASSERT_TRUE(p.OnClock(1, 2, kT0).ok());
  ASSERT_TRUE(p.OnClock(2, 2, kT0).ok());
  Decisions d = p.OnLeave(3, kT0);
  ASSERT_THAT(Rounds(d), ElementsAre(2));
  EXPECT_THAT(d.close_rounds[0].cuts, ElementsAre(Pair(1, 2), Pair(2, 2)));
  EXPECT_EQ(d.close_rounds[0].aggregation, Aggregation::kMean);
  EXPECT_EQ(Only(p.OnClock(1, 3, kT0), 1).pull, PullSpec::Round(2, 2));
}

TEST(Wbsp, ADepartedTrainersReportedPushesStillCount) {
  WbspPolicy p(WbspConfig{});
  JoinAll(p, 3);
  ASSERT_TRUE(p.OnClock(3, 1, kT0).ok());
  ASSERT_TRUE(p.OnClock(2, 1, kT0).ok());
  Decisions left = p.OnLeave(3, kT0);
  EXPECT_THAT(Rounds(left), IsEmpty());  // trainer 1 has not pushed yet
  absl::StatusOr<Decisions> d = p.OnClock(1, 1, kT0);
  ASSERT_THAT(Rounds(*d), ElementsAre(1));
  EXPECT_THAT(d->close_rounds[0].cuts, ElementsAre(Pair(1, 1), Pair(2, 1), Pair(3, 1)));
}

TEST(Wbsp, ANewcomerPullsTheLatestRoundAndTheNextRoundWaitsForItsPush) {
  WbspPolicy p(WbspConfig{});
  JoinAll(p, 2);
  ASSERT_TRUE(p.OnClock(1, 1, kT0).ok());
  ASSERT_TRUE(p.OnClock(2, 1, kT0).ok());  // round 1
  Decisions joined;
  EXPECT_EQ(*p.OnJoin(3, kT0, &joined), 0);
  ASSERT_THAT(Granted(joined), ElementsAre(3));
  EXPECT_EQ(joined.grants[0].pull, PullSpec::Round(1, -1));
  EXPECT_THAT(Rounds(*p.OnClock(1, 2, kT0)), IsEmpty());
  EXPECT_THAT(Rounds(*p.OnClock(2, 2, kT0)), IsEmpty());
  EXPECT_THAT(Rounds(*p.OnClock(3, 1, kT0)), ElementsAre(2));
}

TEST(Wbsp, ProtocolViolationsAreRefused) {
  WbspPolicy p(WbspConfig{});
  JoinAll(p, 1);
  EXPECT_EQ(p.OnClock(9, 1, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.OnClock(1, 2, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  WbspPolicy gated(WbspConfig{Aggregation::kSumOverN, true, 2, absl::Seconds(30)});
  Decisions d;
  ASSERT_TRUE(gated.OnJoin(1, kT0, &d).ok());
  EXPECT_THAT(Granted(d), IsEmpty());  // waits for the second trainer
  EXPECT_EQ(gated.OnClock(1, 1, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(gated.overlap_communication());
  EXPECT_EQ(gated.name(), "wbsp-overlap");
}

}  // namespace
}  // namespace syncopate::sync
