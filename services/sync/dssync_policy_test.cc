#include "sync/dssync_policy.h"

#include <algorithm>
#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/peer_round_policy.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using testing::Granted;
using testing::JoinAll;
using testing::kT0;
using ::testing::UnorderedElementsAre;

DsSyncConfig Config(int min_trainers, int groups = 2) {
  DsSyncConfig config;
  config.min_trainers = min_trainers;
  config.groups = groups;
  return config;
}

// Every grant's exchange lists the same peers both ways, each of them granted the same round with
// this trainer among its peers: a group of the round, complete.
void ExpectGroups(const Decisions& d) {
  std::map<TrainerId, const Grant*> by_trainer;
  for (const Grant& g : d.grants) by_trainer[g.trainer] = &g;
  for (const Grant& g : d.grants) {
    ASSERT_TRUE(g.exchange.has_value());
    EXPECT_EQ(g.exchange->send_to, g.exchange->receive_from);
    for (TrainerId peer : g.exchange->send_to) {
      ASSERT_EQ(by_trainer.count(peer), 1u) << g.trainer << "'s peer " << peer << " not granted";
      const Grant& other = *by_trainer.at(peer);
      EXPECT_EQ(other.exchange->round, g.exchange->round);
      EXPECT_EQ(other.group, g.group);
      const auto& back = other.exchange->send_to;
      EXPECT_NE(std::find(back.begin(), back.end(), g.trainer), back.end());
    }
  }
}

TEST(DsSyncPolicyTest, EveryRoundIsAPartitionIntoGroupsThatKeepsSlowLinksApart) {
  DsSyncPolicy p(Config(6));
  Decisions joined = JoinAll(p, 6);
  ASSERT_EQ(Granted(joined).size(), 6u);
  for (const Grant& g : joined.grants) EXPECT_EQ(g.pull, PullSpec::Live());
  for (int64_t clock = 1; clock <= 10; ++clock) {
    Decisions round;
    for (TrainerId t = 1; t <= 6; ++t) {
      const double rate = t == 2 || t == 5 ? 1e6 : 10e6;
      p.ObserveTransfers(t, TransferSample{rate, 1.0, rate, 1.0});
      round.Append(*p.OnClock(t, clock, kT0));
    }
    ASSERT_EQ(Granted(round).size(), 6u) << "round " << clock;
    ExpectGroups(round);
    EXPECT_EQ(p.group_count(), 2);
    EXPECT_NE(p.GroupOf(2), p.GroupOf(5)) << "round " << clock;
    for (const Grant& g : round.grants) {
      EXPECT_EQ(g.clock, clock);
      EXPECT_EQ(g.pull, PullSpec::None());
      EXPECT_EQ(g.exchange->round, clock);
      EXPECT_EQ(g.exchange->send_to.size(), 2u);  // the two others of a group of 3
    }
  }
  EXPECT_EQ(p.push_mode(), PushMode::kNone);
}

TEST(DsSyncPolicyTest, SizedByBandwidthTheSlowLinksGroupIsSmaller) {
  DsSyncConfig config = Config(6);
  config.sizing = GroupSizing::kBandwidth;
  DsSyncPolicy p(config);
  JoinAll(p, 6);
  for (int64_t clock = 1; clock <= 10; ++clock) {
    for (TrainerId t = 1; t <= 6; ++t) {
      // Trainer 2's link is a tenth of the others': its group's exchange takes (2 - 1) / 1 against
      // (4 - 1) / 10 for the other group; equal groups of 3 would take it (3 - 1) / 1.
      const double rate = t == 2 ? 1e6 : 10e6;
      p.ObserveTransfers(t, TransferSample{rate, 1.0, rate, 1.0, 1, {}, {}});
    }
    Decisions round;
    for (TrainerId t = 1; t <= 6; ++t) round.Append(*p.OnClock(t, clock, kT0));
    ASSERT_EQ(Granted(round).size(), 6u) << "round " << clock;
    ExpectGroups(round);
    for (const Grant& g : round.grants) {
      const bool with_slow = p.GroupOf(g.trainer) == p.GroupOf(2);
      EXPECT_EQ(g.exchange->send_to.size(), with_slow ? 1u : 3u) << "round " << clock;
    }
  }
}

// No global barrier: the group without the straggler is granted while the straggler's group
// waits for it.
TEST(DsSyncPolicyTest, AGroupProceedsWhileAnotherWaitsForItsStraggler) {
  DsSyncPolicy p(Config(4));
  JoinAll(p, 4);
  const TrainerId straggler = 4;
  Decisions others;
  for (TrainerId t = 1; t <= 3; ++t) others.Append(*p.OnClock(t, 1, kT0));
  // Groups of two: the straggler's partner waits, the other pair is through.
  ASSERT_EQ(Granted(others).size(), 2u);
  ExpectGroups(others);
  for (TrainerId t : Granted(others)) EXPECT_NE(p.GroupOf(t), -1);
  std::set<TrainerId> waiting = {1, 2, 3};
  for (TrainerId t : Granted(others)) waiting.erase(t);
  ASSERT_EQ(waiting.size(), 1u);
  const TrainerId partner = *waiting.begin();
  Decisions late = *p.OnClock(straggler, 1, kT0);
  EXPECT_THAT(Granted(late), UnorderedElementsAre(partner, straggler));
  ExpectGroups(late);
}

// Every third round is one group of all four: nobody is granted it before the straggler reports
// it, and then everyone exchanges with everyone.
TEST(DsSyncPolicyTest, AGlobalAverageRoundWaitsForEveryone) {
  DsSyncConfig config = Config(4);
  config.global_average_every = 3;
  DsSyncPolicy p(config);
  JoinAll(p, 4);
  for (int64_t clock = 1; clock <= 6; ++clock) {
    Decisions others;
    for (TrainerId t = 1; t <= 3; ++t) others.Append(*p.OnClock(t, clock, kT0));
    Decisions late = *p.OnClock(4, clock, kT0);
    if (clock % 3 == 0) {
      EXPECT_TRUE(Granted(others).empty()) << "round " << clock;
      ASSERT_EQ(Granted(late).size(), 4u) << "round " << clock;
      ExpectGroups(late);
      EXPECT_EQ(p.group_count(), 1);
      for (const Grant& g : late.grants) EXPECT_EQ(g.exchange->send_to.size(), 3u);
    } else {
      EXPECT_EQ(Granted(others).size(), 2u) << "round " << clock;  // the straggler's pair waits
      EXPECT_EQ(Granted(late).size(), 2u) << "round " << clock;
    }
  }
}

// Stepping the straggler at a third of the others' speed: under the global barrier (selmcast's
// rounds) nobody ever gets more than one clock ahead of it; under dssync the fast trainers run
// ahead, and complete more steps in the same time.
TEST(DsSyncPolicyTest, FastTrainersRunAheadOfAComputeStraggler) {
  struct Result {
    int64_t lead = 0;        // the most clocks any trainer was ahead of the straggler
    int64_t fast_steps = 0;  // steps of the fast trainers by the horizon
  };
  auto run = [](SyncPolicy& p) {
    const int n = 6;
    const TrainerId straggler = n;
    JoinAll(p, n);
    std::map<TrainerId, int64_t> clock, ready_at;  // ready_at: when its step ends (-1: waiting)
    for (TrainerId t = 1; t <= n; ++t) ready_at[t] = t == straggler ? 3 : 1;
    Result result;
    for (int64_t now = 1; now <= 300; ++now) {
      for (TrainerId t = 1; t <= n; ++t) {
        if (ready_at[t] != now) continue;
        ready_at[t] = -1;
        ++clock[t];
        Decisions d = *p.OnClock(t, clock[t], kT0);
        for (const Grant& g : d.grants)
          ready_at[g.trainer] = now + (g.trainer == straggler ? 3 : 1);
      }
      for (TrainerId t = 1; t < straggler; ++t) {
        result.lead = std::max(result.lead, clock[t] - clock[straggler]);
      }
    }
    for (TrainerId t = 1; t < straggler; ++t) result.fast_steps += clock[t];
    return result;
  };
  DsSyncPolicy dssync(Config(6, 3));
  PeerRoundConfig barrier_config;
  barrier_config.planner = "selmcast";
  barrier_config.min_trainers = 6;
  PeerRoundPolicy barrier(barrier_config);
  const Result independent = run(dssync);
  const Result synchronous = run(barrier);
  EXPECT_LE(synchronous.lead, 1);
  EXPECT_GE(independent.lead, 2);
  EXPECT_GT(independent.fast_steps, synchronous.fast_steps);
}

// Training ends while the fast trainers are ahead of the straggler: the final round is past
// every clock, the groups before it go on as before, and it is one group of everyone that waits
// for the straggler. Its grants, and only they, are final; nothing joins or reports past it.
TEST(DsSyncPolicyTest, TheFinalAverageIsOneRoundOfEveryoneAfterEveryClock) {
  DsSyncPolicy p(Config(4));
  JoinAll(p, 4);
  const TrainerId straggler = 4;
  std::map<TrainerId, int64_t> clock;
  std::set<TrainerId> granted = {1, 2, 3, 4};  // may step
  std::vector<Grant> final_grants;
  // Trainer t steps if it holds a grant; the grants that step releases are recorded.
  auto step = [&](TrainerId t) {
    if (granted.erase(t) == 0) return;
    Decisions d = *p.OnClock(t, ++clock[t], kT0);
    for (const Grant& g : d.grants) {
      granted.insert(g.trainer);
      if (g.final_average) final_grants.push_back(g);
    }
  };
  // The straggler steps once while the others run ahead as far as their groups let them.
  step(straggler);
  for (int i = 0; i < 3; ++i) {
    for (TrainerId t = 1; t <= 3; ++t) step(t);
  }
  const int64_t newest = std::max({clock[1], clock[2], clock[3]});
  ASSERT_GT(newest, clock[straggler]);
  ASSERT_TRUE(final_grants.empty());
  const std::optional<int64_t> final_round = p.BeginFinalAverage();
  ASSERT_EQ(final_round, newest + 1);
  EXPECT_EQ(p.BeginFinalAverage(), final_round);  // idempotent
  Decisions ignored;
  EXPECT_EQ(p.OnJoin(9, kT0, &ignored).status().code(), absl::StatusCode::kFailedPrecondition);

  // Everyone steps on to the final round, the straggler last; nobody steps past it.
  for (int i = 0; i < 4 * *final_round && final_grants.size() < 4; ++i) {
    for (TrainerId t = 1; t <= 4; ++t) {
      if (clock[t] < *final_round) step(t);
    }
  }
  ASSERT_EQ(final_grants.size(), 4u);
  Decisions last;
  last.grants = final_grants;
  ExpectGroups(last);
  for (const Grant& g : final_grants) {
    EXPECT_EQ(g.clock, *final_round);
    EXPECT_EQ(g.exchange->round, *final_round);
    EXPECT_EQ(g.exchange->send_to.size(), 3u);  // all the others
  }
  EXPECT_EQ(p.group_count(), 1);
  EXPECT_EQ(p.OnClock(1, *final_round + 1, kT0).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A member that leaves before the final round is not waited for.
TEST(DsSyncPolicyTest, TheFinalAverageDoesNotWaitForATrainerThatLeft) {
  DsSyncPolicy p(Config(3, 1));
  JoinAll(p, 3);
  const int64_t final_round = *p.BeginFinalAverage();
  ASSERT_EQ(final_round, 1);
  EXPECT_TRUE(p.OnClock(1, 1, kT0)->grants.empty());
  EXPECT_TRUE(p.OnClock(2, 1, kT0)->grants.empty());
  Decisions d = p.OnLeave(3, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2));
  for (const Grant& g : d.grants) {
    EXPECT_TRUE(g.final_average);
    EXPECT_EQ(g.exchange->send_to.size(), 1u);
  }
}

TEST(DsSyncPolicyTest, ADepartureReleasesItsGroup) {
  DsSyncPolicy p(Config(4, 1));  // one group: everyone waits for everyone
  JoinAll(p, 4);
  for (TrainerId t = 1; t <= 3; ++t) ASSERT_TRUE(p.OnClock(t, 1, kT0)->grants.empty());
  Decisions d = p.OnLeave(4, kT0);  // 4 died before reporting
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  ExpectGroups(d);
  for (const Grant& g : d.grants) EXPECT_EQ(g.exchange->send_to.size(), 2u);
}

// Into a job under way, a newcomer starts past the newest round shuffled, as if it had reported
// it: its first grant is that round's exchange with its group, so it takes their trained models
// before its first step.
TEST(DsSyncPolicyTest, ANewcomerTakesItsGroupsModelsBeforeItsFirstStep) {
  DsSyncPolicy p(Config(2, 1));
  JoinAll(p, 2);
  ASSERT_TRUE(p.OnClock(1, 1, kT0)->grants.empty());
  ASSERT_EQ(Granted(*p.OnClock(2, 1, kT0)).size(), 2u);
  ASSERT_TRUE(p.OnClock(1, 2, kT0)->grants.empty());  // round 2 shuffled over 1 and 2
  Decisions joined;
  absl::StatusOr<int64_t> start = p.OnJoin(3, kT0, &joined);
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(*start, 3);
  EXPECT_TRUE(joined.grants.empty()) << "it waits for its group of round 3";
  EXPECT_THAT(Granted(*p.OnClock(2, 2, kT0)), UnorderedElementsAre(1, 2));
  // Round 3 was shuffled with the newcomer in it: one group of three.
  EXPECT_TRUE(p.OnClock(1, 3, kT0)->grants.empty());
  Decisions d = *p.OnClock(2, 3, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 3));
  ExpectGroups(d);
  for (const Grant& g : d.grants) {
    EXPECT_EQ(g.pull, PullSpec::None());
    EXPECT_EQ(g.exchange->send_to.size(), 2u);
  }
  EXPECT_TRUE(p.OnClock(3, 4, kT0).ok()) << "then its first step";
}

// Before anyone reported a clock there is no trained model: a newcomer pulls the store's initial
// model, as the first trainers did, and is granted at once.
TEST(DsSyncPolicyTest, ANewcomerAtTheJobsStartPullsTheInitialModel) {
  DsSyncPolicy p(Config(2, 1));
  JoinAll(p, 2);
  Decisions joined;
  absl::StatusOr<int64_t> start = p.OnJoin(3, kT0, &joined);
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(*start, 0);
  ASSERT_THAT(Granted(joined), UnorderedElementsAre(3));
  EXPECT_EQ(joined.grants[0].pull, PullSpec::Live());
}

// The fastest trainer shuffled round 2 and left: a newcomer starts past that round, so that it is
// in the groups of its first round rather than alone.
TEST(DsSyncPolicyTest, ANewcomerStartsPastARoundShuffledWithoutIt) {
  DsSyncPolicy p(Config(3, 1));
  JoinAll(p, 3);
  for (TrainerId t = 1; t <= 3; ++t) ASSERT_TRUE(p.OnClock(t, 1, kT0).ok());
  ASSERT_TRUE(p.OnClock(3, 2, kT0)->grants.empty());  // round 2 shuffled over 1, 2, 3
  p.OnLeave(3, kT0);
  Decisions joined;
  absl::StatusOr<int64_t> start = p.OnJoin(4, kT0, &joined);
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(*start, 3);
  EXPECT_TRUE(joined.grants.empty()) << "it waits for its group of round 3";
  EXPECT_THAT(Granted(*p.OnClock(1, 2, kT0)), UnorderedElementsAre());
  EXPECT_THAT(Granted(*p.OnClock(2, 2, kT0)), UnorderedElementsAre(1, 2));
  EXPECT_TRUE(p.OnClock(1, 3, kT0)->grants.empty());
  Decisions d = *p.OnClock(2, 3, kT0);
  EXPECT_THAT(Granted(d), UnorderedElementsAre(1, 2, 4));
  ExpectGroups(d);
}

TEST(DsSyncPolicyTest, BadReportsAreRefused) {
  DsSyncPolicy p(Config(2, 1));
  JoinAll(p, 2);
  EXPECT_FALSE(p.OnClock(9, 1, kT0).ok());  // unknown
  EXPECT_FALSE(p.OnClock(1, 2, kT0).ok());  // skips a clock
  ASSERT_TRUE(p.OnClock(1, 1, kT0).ok());
  EXPECT_FALSE(p.OnClock(1, 2, kT0).ok());  // still waiting for its grant
}

}  // namespace
}  // namespace syncopate::sync
