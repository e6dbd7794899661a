#include "sync/bounded_staleness_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/policy_factory.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

using testing::Granted;
using testing::JoinAll;
using testing::kT0;
using testing::Make;
using testing::Rounds;

TEST(Bsp, RoundClosesWhenLastTrainerPushesAndEveryonePullsIt) {
  auto p = Make("bsp");
  JoinAll(*p, 3);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), IsEmpty());
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), IsEmpty());
  Decisions d = *p->OnClock(3, 1, kT0);
  EXPECT_THAT(Rounds(d), ElementsAre(1));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : d.grants) {
    EXPECT_EQ(g.pull, PullSpec::Round(1, 1));
    EXPECT_EQ(g.clock, 1);
    EXPECT_EQ(g.staleness_bound, 0);
  }
  EXPECT_EQ(p->push_mode(), PushMode::kRound);
}

TEST(Bsp, LeaveOfTheLastPusherReleasesTheBarrier) {
  auto p = Make("bsp");
  JoinAll(*p, 3);
  ASSERT_TRUE(p->OnClock(1, 1, kT0).ok());
  ASSERT_TRUE(p->OnClock(2, 1, kT0).ok());
  Decisions d = p->OnLeave(3, kT0);
  EXPECT_THAT(Rounds(d), ElementsAre(1));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
}

TEST(Bsp, LateJoinerStartsAtTheLastClosedRound) {
  auto p = Make("bsp");
  JoinAll(*p, 2);
  for (int64_t c = 1; c <= 5; ++c) {
    ASSERT_TRUE(p->OnClock(1, c, kT0).ok());
    ASSERT_TRUE(p->OnClock(2, c, kT0).ok());
  }
  ASSERT_TRUE(p->OnClock(1, 6, kT0).ok());  // 1 waits for 2 in round 6
  Decisions d;
  EXPECT_EQ(*p->OnJoin(3, kT0, &d), 5);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].trainer, 3u);
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(5, -1));
  // Round 6 now also waits for the newcomer.
  EXPECT_THAT(Granted(*p->OnClock(2, 6, kT0)), IsEmpty());
  Decisions closed = *p->OnClock(3, 6, kT0);
  EXPECT_THAT(Rounds(closed), ElementsAre(6));
  EXPECT_THAT(Granted(closed), UnorderedElementsAre(1, 2, 3));
}

TEST(Ssp, BoundZeroIsLockstepWithoutSnapshots) {
  auto p = Make("ssp", 0);
  JoinAll(*p, 2);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), IsEmpty());
  Decisions d = *p->OnClock(2, 1, kT0);
  EXPECT_THAT(Rounds(d), IsEmpty());
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Live());
}

TEST(Ssp, BoundOneAllowsExactlyOneClockAhead) {
  auto p = Make("ssp", 1);
  JoinAll(*p, 3);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), ElementsAre(1));  // 1 - 0 <= 1
  EXPECT_THAT(Granted(*p->OnClock(1, 2, kT0)), IsEmpty());       // 2 - 0 > 1
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), ElementsAre(2));  // min still 0 (trainer 3)
  // min 1: 2 - 1 <= 1; waiters are granted furthest behind first.
  EXPECT_THAT(Granted(*p->OnClock(3, 1, kT0)), ElementsAre(3, 1));
}

TEST(Ssp, BoundThree) {
  auto p = Make("ssp", 3);
  JoinAll(*p, 2);
  for (int64_t c = 1; c <= 3; ++c) EXPECT_THAT(Granted(*p->OnClock(1, c, kT0)), ElementsAre(1));
  EXPECT_THAT(Granted(*p->OnClock(1, 4, kT0)), IsEmpty());
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), ElementsAre(2, 1));  // furthest behind first
}

TEST(Ssp, LeaveReevaluatesEveryWaiterNotOnlyThePusher) {
  auto p = Make("ssp", 1);
  JoinAll(*p, 3);
  ASSERT_THAT(Granted(*p->OnClock(1, 1, kT0)), ElementsAre(1));
  ASSERT_THAT(Granted(*p->OnClock(1, 2, kT0)), IsEmpty());
  ASSERT_THAT(Granted(*p->OnClock(2, 1, kT0)), ElementsAre(2));
  ASSERT_THAT(Granted(*p->OnClock(2, 2, kT0)), IsEmpty());
  Decisions d = p->OnLeave(3, kT0);  // the straggler at clock 0 dies
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
}

TEST(Ssp, JoinerStartsAtMinimumAndDoesNotStallOthers) {
  auto p = Make("ssp", 2);
  JoinAll(*p, 2);
  for (int64_t c = 1; c <= 3; ++c) {
    ASSERT_TRUE(p->OnClock(1, c, kT0).ok());
    ASSERT_TRUE(p->OnClock(2, c, kT0).ok());
  }
  ASSERT_THAT(Granted(*p->OnClock(1, 4, kT0)), ElementsAre(1));
  Decisions d;
  EXPECT_EQ(*p->OnJoin(9, kT0, &d), 3);
  EXPECT_EQ(*p->MinClock(), 3);
  EXPECT_THAT(Granted(d), ElementsAre(9));
}

TEST(Asp, NeverWaits) {
  auto p = Make("asp");
  JoinAll(*p, 2);
  for (int64_t c = 1; c <= 50; ++c) EXPECT_THAT(Granted(*p->OnClock(1, c, kT0)), ElementsAre(1));
  EXPECT_EQ(p->staleness_bound(), -1);
}

TEST(Policy, RejectsOutOfOrderAndDuplicateReports) {
  auto p = Make("ssp", 0);
  JoinAll(*p, 2);
  EXPECT_EQ(p->OnClock(1, 2, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(p->OnClock(1, 1, kT0).ok());
  EXPECT_EQ(p->OnClock(1, 2, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(p->OnClock(7, 1, kT0).status().code(), absl::StatusCode::kFailedPrecondition);
  Decisions d;
  EXPECT_EQ(p->OnJoin(1, kT0, &d).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Policy, StartWaitsForMinTrainersOrTimeout) {
  auto p = Make("bsp", 0, /*min_trainers=*/3);
  Decisions d;
  ASSERT_TRUE(p->OnJoin(1, kT0, &d).ok());
  ASSERT_TRUE(p->OnJoin(2, kT0, &d).ok());
  EXPECT_TRUE(d.grants.empty());
  EXPECT_TRUE(p->OnTick(kT0 + absl::Seconds(29)).grants.empty());
  EXPECT_THAT(Granted(p->OnTick(kT0 + absl::Seconds(30))), UnorderedElementsAre(1, 2));

  auto q = Make("bsp", 0, 2);
  Decisions e;
  ASSERT_TRUE(q->OnJoin(1, kT0, &e).ok());
  ASSERT_TRUE(q->OnJoin(2, kT0, &e).ok());
  EXPECT_THAT(Granted(e), UnorderedElementsAre(1, 2));
}

}  // namespace
}  // namespace syncopate::sync
