#include "sync/bounded_staleness_policy.h"

#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/policy_factory.h"

namespace syncopate::sync {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Time kT0 = absl::UnixEpoch();

std::unique_ptr<SyncPolicy> Make(const std::string& mode, int64_t s = 0, int min_trainers = 1) {
  PolicyOptions options;
  options.mode = mode;
  options.staleness = s;
  options.min_trainers = min_trainers;
  return *MakePolicy(options);
}

std::vector<TrainerId> Granted(const Decisions& d) {
  std::vector<TrainerId> ids;
  for (const Grant& g : d.grants) ids.push_back(g.trainer);
  return ids;
}

// Joins trainers 1..n and drops the start grants.
void JoinAll(SyncPolicy& p, int n) {
  for (TrainerId t = 1; t <= static_cast<TrainerId>(n); ++t) {
    Decisions d;
    ASSERT_TRUE(p.OnJoin(t, kT0, &d).ok());
  }
}

TEST(Bsp, RoundClosesWhenLastTrainerPushesAndEveryonePullsIt) {
  auto p = Make("bsp");
  JoinAll(*p, 3);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), IsEmpty());
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), IsEmpty());
  Decisions d = *p->OnClock(3, 1, kT0);
  EXPECT_THAT(d.close_rounds, ElementsAre(1));
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  for (const Grant& g : d.grants) {
    EXPECT_EQ(g.pull, PullSpec::Round(1));
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
  EXPECT_THAT(d.close_rounds, ElementsAre(1));
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
  EXPECT_EQ(d.grants[0].pull, PullSpec::Round(5));
  // Round 6 now also waits for the newcomer.
  EXPECT_THAT(Granted(*p->OnClock(2, 6, kT0)), IsEmpty());
  Decisions closed = *p->OnClock(3, 6, kT0);
  EXPECT_THAT(closed.close_rounds, ElementsAre(6));
  EXPECT_THAT(Granted(closed), UnorderedElementsAre(1, 2, 3));
}

TEST(Ssp, BoundZeroIsLockstepWithoutSnapshots) {
  auto p = Make("ssp", 0);
  JoinAll(*p, 2);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), IsEmpty());
  Decisions d = *p->OnClock(2, 1, kT0);
  EXPECT_THAT(d.close_rounds, IsEmpty());
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  EXPECT_EQ(d.grants[0].pull, PullSpec::Live());
}

TEST(Ssp, BoundOneAllowsExactlyOneClockAhead) {
  auto p = Make("ssp", 1);
  JoinAll(*p, 3);
  EXPECT_THAT(Granted(*p->OnClock(1, 1, kT0)), ElementsAre(1));     // 1 - 0 <= 1
  EXPECT_THAT(Granted(*p->OnClock(1, 2, kT0)), IsEmpty());          // 2 - 0 > 1
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), ElementsAre(2));     // min still 0 (trainer 3)
  EXPECT_THAT(Granted(*p->OnClock(3, 1, kT0)), ElementsAre(1, 3));  // min 1: 2 - 1 <= 1
}

TEST(Ssp, BoundThree) {
  auto p = Make("ssp", 3);
  JoinAll(*p, 2);
  for (int64_t c = 1; c <= 3; ++c) EXPECT_THAT(Granted(*p->OnClock(1, c, kT0)), ElementsAre(1));
  EXPECT_THAT(Granted(*p->OnClock(1, 4, kT0)), IsEmpty());
  EXPECT_THAT(Granted(*p->OnClock(2, 1, kT0)), ElementsAre(1, 2));
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

TEST(PolicyFactory, RejectsUnknownModesAndNegativeBounds) {
  PolicyOptions o;
  o.mode = "bogus";
  EXPECT_EQ(MakePolicy(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.mode = "ssp";
  o.staleness = -1;
  EXPECT_EQ(MakePolicy(o).status().code(), absl::StatusCode::kInvalidArgument);
}

// Random interleavings of reports, joins and leaves: every grant respects the bound, every report
// gets exactly one grant, and nobody waits once it is within the bound.
class RandomSchedule : public ::testing::TestWithParam<int64_t> {};

TEST_P(RandomSchedule, InvariantsHold) {
  const int64_t s = GetParam();
  auto p = Make("ssp", s);
  std::mt19937 rng(1234 + s);
  std::map<TrainerId, bool> running;  // trainer -> has a grant and may report
  TrainerId next = 1;
  auto apply = [&](const Decisions& d) {
    for (const Grant& g : d.grants) {
      ASSERT_FALSE(running[g.trainer]) << "two grants for one report";
      ASSERT_LE(g.clock - *p->MinClock(), s);
      running[g.trainer] = true;
    }
  };
  for (int i = 0; i < 4; ++i) {
    Decisions d;
    ASSERT_TRUE(p->OnJoin(next, kT0, &d).ok());
    running[next++] = false;
    apply(d);
  }
  for (int step = 0; step < 5000; ++step) {
    const int action = rng() % 100;
    if (action < 2 && running.size() < 8) {
      Decisions d;
      ASSERT_TRUE(p->OnJoin(next, kT0, &d).ok());
      running[next++] = false;
      apply(d);
    } else if (action < 4 && running.size() > 2) {
      auto it = std::next(running.begin(), rng() % running.size());
      TrainerId gone = it->first;
      running.erase(it);
      apply(p->OnLeave(gone, kT0));
    } else {
      std::vector<TrainerId> ready;
      for (auto& [t, r] : running) {
        if (r) ready.push_back(t);
      }
      if (ready.empty()) continue;
      TrainerId t = ready[rng() % ready.size()];
      running[t] = false;
      auto d = p->OnClock(t, *p->ClockOf(t) + 1, kT0);
      ASSERT_TRUE(d.ok());
      apply(*d);
    }
    // Liveness: somebody can always make progress.
    bool any = false;
    for (auto& [t, r] : running) any |= r;
    ASSERT_TRUE(any) << "deadlock at step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(Bounds, RandomSchedule, ::testing::Values(0, 1, 3));

}  // namespace
}  // namespace syncopate::sync
