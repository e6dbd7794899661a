#include "sync/dssp_policy.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using ::testing::ElementsAre;
using testing::Granted;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

absl::Time At(double seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

PushTimes Pushes(double previous, double last) {
  PushTimes t;
  t.Record(At(previous));
  t.Record(At(last));
  return t;
}

// The worked examples of the DSSP rule (docs/modes.md, `dssp`): r* by hand from the push times.
TEST(DsspController, WorkedExampleOneMatchesExactly) {
  EXPECT_EQ(ChooseExtraIterations(Pushes(100.0, 100.5), Pushes(98.0, 100.0), 4), 3);
}

TEST(DsspController, WorkedExampleTwoTakesTheClosest) {
  EXPECT_EQ(ChooseExtraIterations(Pushes(100.0, 100.5), Pushes(99.0, 100.9), 4), 4);
}

TEST(DsspController, ColdStartAndTiesChooseZeroOrTheSmallest) {
  PushTimes one;
  one.Record(At(100));
  EXPECT_EQ(ChooseExtraIterations(one, Pushes(98.0, 100.0), 4), 0);
  EXPECT_EQ(ChooseExtraIterations(Pushes(100.0, 100.5), one, 4), 0);
  EXPECT_EQ(ChooseExtraIterations(Pushes(100.0, 100.5), Pushes(98.0, 100.0), 0), 0);
  // Fast pushes at 101, 102, ..., 105; slow ones at 104.5, 108.5, ...: r = 3 and r = 4 are both
  // 0.5 away from 104.5; the smaller wins.
  EXPECT_EQ(ChooseExtraIterations(Pushes(100.0, 101.0), Pushes(96.0, 100.0), 4), 3);
}

class DsspPolicyTest : public ::testing::Test {
 protected:
  // s_lo = 1, s_hi = 5 (r_max = 4); trainers 1 (fast) and 2 (slow) joined at 90 s.
  void SetUp() override {
    Decisions d;
    ASSERT_TRUE(policy_.OnJoin(1, At(90), &d).ok());
    ASSERT_TRUE(policy_.OnJoin(2, At(90), &d).ok());
    ASSERT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  }
  Decisions Report(TrainerId t, int64_t clock, double at) {
    absl::StatusOr<Decisions> d = policy_.OnClock(t, clock, At(at));
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decisions();
  }
  DsspPolicy policy_{DsspConfig{1, 5, 1, absl::Seconds(30)}};
};

TEST_F(DsspPolicyTest, FastestGetsTheControllersExtraIterationsThenWaits) {
  EXPECT_THAT(Granted(Report(2, 1, 98.0)), ElementsAre(2));  // gap 1 <= s_lo
  EXPECT_THAT(Granted(Report(1, 1, 99.0)), ElementsAre(1));
  EXPECT_THAT(Granted(Report(2, 2, 100.0)), ElementsAre(2));  // slow: 98.0, 100.0
  EXPECT_THAT(Granted(Report(1, 2, 100.0)), ElementsAre(1));
  EXPECT_THAT(Granted(Report(1, 3, 100.5)), ElementsAre(1));  // gap 1
  // Gap 2 > s_lo: fast pushes predicted at 101.0 + 0.5r, the slow one at 102.0: r* = 2.
  Decisions d = Report(1, 4, 101.0);
  ASSERT_THAT(Granted(d), ElementsAre(1));
  EXPECT_EQ(d.grants[0].staleness_bound, 3);
  EXPECT_EQ(policy_.BoundOf(1), 3);
  EXPECT_THAT(Granted(Report(1, 5, 101.5)), ElementsAre(1));  // the second extra iteration
  // Out of extra iterations; the controller now sees no better moment than waiting.
  EXPECT_THAT(Granted(Report(1, 6, 102.0)), IsEmpty());
  // The slow trainer's push lifts the minimum to 3: still 3 ahead, still waiting.
  EXPECT_THAT(Granted(Report(2, 3, 102.0)), ElementsAre(2));
  EXPECT_THAT(Granted(Report(2, 4, 104.0)), ElementsAre(2));
  // Minimum 5: trainer 1 (clock 6) is back within s_lo and proceeds with the base bound.
  d = Report(2, 5, 106.0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  EXPECT_EQ(policy_.BoundOf(1), 1);
}

TEST_F(DsspPolicyTest, NotTheFastestWaitsForTheLowerBound) {
  Decisions d;
  ASSERT_TRUE(policy_.OnJoin(3, At(90), &d).ok());  // clock 0, the slowest from now on
  EXPECT_THAT(Granted(Report(1, 1, 91)), ElementsAre(1));
  EXPECT_THAT(Granted(Report(2, 1, 91)), ElementsAre(2));
  EXPECT_THAT(Granted(Report(1, 2, 92)), IsEmpty());  // fastest, cold start: r* = 0
  EXPECT_THAT(Granted(Report(2, 2, 92)), IsEmpty());  // gap 2 and trainer 1 is as fast
  EXPECT_THAT(Granted(Report(3, 1, 95)), UnorderedElementsAre(1, 2, 3));
}

TEST_F(DsspPolicyTest, HardCapHoldsWhateverTheController) {
  // A very slow trainer 2 makes the controller grant the maximum every time it is asked.
  EXPECT_THAT(Granted(Report(2, 1, 90.0)), ElementsAre(2));
  EXPECT_THAT(Granted(Report(2, 2, 190.0)), IsEmpty());  // 2 ahead of trainer 1 (clock 0)
  double t = 91;
  int64_t clock = 0;
  // Trainer 1 runs until it must wait; the gap at every grant stays <= s_hi.
  while (true) {
    Decisions d = Report(1, ++clock, t += 0.1);
    bool granted = false;
    for (const Grant& g : d.grants) {
      if (g.trainer != 1) continue;
      granted = true;
      EXPECT_LE(g.clock - *policy_.MinClock(), 5);
      EXPECT_LE(g.staleness_bound, 5);
    }
    if (!granted) break;
    ASSERT_LT(clock, 100) << "never stopped";
  }
  EXPECT_LE(clock - *policy_.MinClock(), 6);
}

TEST(DsspPaperRule, TheFastestRunsPastTheCapWhileOthersAreHeldAtTheLowerBound) {
  // s_lo = 1, s_hi = 5, as published: trainer 1 is fast (0.1 s a step), 2 slower (0.5 s), 3 the
  // straggler (10 s). The controller is asked again whenever trainer 1's extra iterations run out.
  DsspPolicy policy(
      DsspConfig{1, 5, 1, absl::Seconds(30), Aggregation::kSumOverN, DsspRule::kPaper});
  EXPECT_EQ(policy.staleness_bound(), -1);
  Decisions d;
  for (TrainerId t : {1, 2, 3}) ASSERT_TRUE(policy.OnJoin(t, At(90), &d).ok());
  ASSERT_TRUE(policy.OnClock(3, 1, At(90)).ok());
  ASSERT_TRUE(policy.OnClock(3, 2, At(100)).ok());  // its interval: 10 s
  const std::map<TrainerId, absl::Duration> step = {{1, absl::Seconds(0.1)},
                                                    {2, absl::Seconds(0.5)}};
  std::map<TrainerId, int64_t> clock = {{1, 0}, {2, 0}};
  std::map<TrainerId, absl::Time> next = {{1, At(100.1)}, {2, At(100.5)}};
  int64_t max_gap_of_2 = 0;
  // Trainers 1 and 2 report a step after each grant; trainer 3 does not report again.
  for (int events = 0; events < 100; ++events) {
    const TrainerId t = next[1] <= next[2] ? 1 : 2;
    if (next[t] == absl::InfiniteFuture()) break;
    const absl::Time now = next[t];
    absl::StatusOr<Decisions> out = policy.OnClock(t, ++clock[t], now);
    ASSERT_TRUE(out.ok()) << out.status();
    next[t] = absl::InfiniteFuture();
    for (const Grant& g : out->grants) {
      if (g.trainer == 3) continue;
      next[g.trainer] = now + step.at(g.trainer);
      if (g.trainer == 2) max_gap_of_2 = std::max(max_gap_of_2, g.clock - *policy.MinClock());
    }
  }
  // Trainer 3 is at clock 2. Trainer 1 went far past s_hi; trainer 2, never the fastest, was held
  // within s_lo.
  EXPECT_GT(clock[1] - 2, 5 + 1);
  EXPECT_LE(max_gap_of_2, 1);
  EXPECT_LE(clock[2] - 2, 2);
}

TEST(DsspCappedRule, TheSameScheduleStopsTheFastestAtTheCap) {
  DsspPolicy policy(DsspConfig{1, 5, 1, absl::Seconds(30)});
  EXPECT_EQ(policy.staleness_bound(), 5);
  Decisions d;
  for (TrainerId t : {1, 2}) ASSERT_TRUE(policy.OnJoin(t, At(90), &d).ok());
  ASSERT_TRUE(policy.OnClock(2, 1, At(90)).ok());
  ASSERT_TRUE(policy.OnClock(2, 2, At(100)).ok());
  int64_t clock = 0;
  for (double t = 90.1;; t += 0.1) {
    absl::StatusOr<Decisions> out = policy.OnClock(1, ++clock, At(t));
    ASSERT_TRUE(out.ok()) << out.status();
    if (Granted(*out).empty()) break;
    ASSERT_LT(clock, 100) << "never stopped";
  }
  EXPECT_LE(clock - 2, 5 + 1);  // the report that waits may be one past the cap
}

TEST_F(DsspPolicyTest, LeaveAndJoinDuringAWait) {
  EXPECT_THAT(Granted(Report(1, 1, 91)), ElementsAre(1));
  EXPECT_THAT(Granted(Report(1, 2, 92)), IsEmpty());  // gap 2, cold start: waits for trainer 2
  // A newcomer starts at the minimum (0): it does not move the minimum, trainer 1 still waits.
  Decisions joined;
  EXPECT_EQ(*policy_.OnJoin(3, At(93), &joined), 0);
  EXPECT_THAT(Granted(joined), ElementsAre(3));
  // Trainers 2 and 3 leave: trainer 1 is alone and is released at once.
  EXPECT_THAT(Granted(policy_.OnLeave(2, At(94))), IsEmpty());
  EXPECT_THAT(Granted(policy_.OnLeave(3, At(94))), ElementsAre(1));
}

}  // namespace
}  // namespace syncopate::sync
