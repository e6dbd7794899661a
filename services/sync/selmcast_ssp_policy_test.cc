#include "sync/selmcast_ssp_policy.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using testing::Granted;
using testing::JoinAll;
using testing::kT0;

SelMcastSspConfig Config(int min_trainers) {
  SelMcastSspConfig config;
  config.min_trainers = min_trainers;
  return config;
}

const Grant* GrantOf(const Decisions& d, TrainerId trainer) {
  for (const Grant& g : d.grants) {
    if (g.trainer == trainer) return &g;
  }
  return nullptr;
}

bool Contains(const std::vector<TrainerId>& ids, TrainerId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(SelMcastSspPolicyTest, GrantsWithinTheStalenessBoundEachWithAMulticast) {
  SelMcastSspPolicy p(Config(3));
  EXPECT_EQ(Granted(JoinAll(p, 3)).size(), 3u);
  // Trainer 3 never reports: 1 and 2 run ahead until clock - min > s = 4.
  for (int64_t clock = 1; clock <= 5; ++clock) {
    for (TrainerId t : {1, 2}) {
      absl::StatusOr<Decisions> d = p.OnClock(t, clock, kT0 + absl::Seconds(clock));
      ASSERT_TRUE(d.ok()) << d.status();
      const Grant* g = GrantOf(*d, t);
      if (clock > 4) {
        EXPECT_EQ(g, nullptr) << "trainer " << t << " ran past the bound";
        continue;
      }
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(g->staleness_bound, 4);
      EXPECT_EQ(g->pull, PullSpec::None());
      ASSERT_TRUE(g->exchange.has_value());
      EXPECT_EQ(g->exchange->round, clock);
      EXPECT_GE(g->exchange->send_to.size(), 1u);  // p = ceil(0.3 * 3)
      EXPECT_FALSE(Contains(g->exchange->send_to, t));
    }
  }
  absl::StatusOr<Decisions> d = p.OnClock(3, 1, kT0 + absl::Seconds(6));
  ASSERT_TRUE(d.ok());
  EXPECT_NE(GrantOf(*d, 1), nullptr);
  EXPECT_NE(GrantOf(*d, 2), nullptr);
  EXPECT_NE(GrantOf(*d, 3), nullptr);
}

TEST(SelMcastSspPolicyTest, ALeaverReleasesTheTrainersItHeldBack) {
  SelMcastSspPolicy p(Config(2));
  JoinAll(p, 2);
  for (int64_t clock = 1; clock <= 5; ++clock) ASSERT_TRUE(p.OnClock(1, clock, kT0).ok());
  Decisions d = p.OnLeave(2, kT0);
  ASSERT_NE(GrantOf(d, 1), nullptr);
  EXPECT_TRUE(GrantOf(d, 1)->exchange->send_to.empty());  // nobody left to send to
}

// Trainer 1 computes slowly (10 s), the others in 1 s; every trainer uploads at 4 MB/s and
// downloads at 1 MB/s, and the model is 1 MB. The fast trainers reach clock 9 by 9 s; at 10 s
// trainer 1 reports its first clock, and this returns its grant. p = 1 (of 4), s = 20.
SelMcastSspConfig SlowMulticastConfig() {
  SelMcastSspConfig config = Config(4);
  config.staleness = 20;                 // the fast trainers are never held back here
  config.min_receivers_fraction = 0.25;  // p = 1
  return config;
}
const absl::Time kSlowGrantAt = kT0 + absl::Seconds(10);
absl::StatusOr<Decisions> GrantTheSlowTrainer(SelMcastSspPolicy& p) {
  JoinAll(p, 4);
  for (TrainerId t = 1; t <= 4; ++t) {
    p.ObserveTransfers(t, TransferSample{4e6, 1.0, 1e6, 1.0, 4});
  }
  for (int64_t clock = 1; clock <= 9; ++clock) {
    for (TrainerId t : {2, 3, 4}) {
      absl::StatusOr<Decisions> d = p.OnClock(t, clock, kT0 + absl::Seconds(clock));
      if (!d.ok()) return d.status();
    }
  }
  return p.OnClock(1, 1, kSlowGrantAt);
}

// Trainer 1's multicast gets every receiver (it would wait anyway); when trainer 2 becomes ready
// right after, one of 1's receivers, barely started, is preempted for 2's multicast and never
// comes back to it while more trainers become ready. Under the paper's rule (no Pareto margin):
// 2's addition fills that receiver's download exactly to 2's deadline, which a 10% margin would
// not allow.
TEST(SelMcastSspPolicyTest, PreemptsASlowMulticastForAReadyTrainerAndNeverReAdds) {
  SelMcastSspConfig config = SlowMulticastConfig();
  config.pareto_margin = 0;
  SelMcastSspPolicy p(config);
  absl::StatusOr<Decisions> slow = GrantTheSlowTrainer(p);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_NE(GrantOf(*slow, 1), nullptr);
  EXPECT_EQ(GrantOf(*slow, 1)->exchange->send_to.size(), 3u);
  // Its p (one receiver) is required; the two Pareto additions go at low priority.
  EXPECT_EQ(GrantOf(*slow, 1)->exchange->low_priority_to.size(), 2u);
  EXPECT_TRUE(slow->preemptions.empty());
  const std::vector<TrainerId> before = p.ReceiversOf(1);
  const int64_t preempted_before = p.preempted_transfers();

  absl::StatusOr<Decisions> ready = p.OnClock(2, 10, kSlowGrantAt);
  ASSERT_TRUE(ready.ok());
  ASSERT_EQ(ready->preemptions.size(), 1u);
  const Preemption& preemption = ready->preemptions[0];
  EXPECT_EQ(preemption.sender, 1u);
  EXPECT_EQ(preemption.round, 1);
  ASSERT_FALSE(preemption.receivers.empty());
  for (TrainerId dropped : preemption.receivers) {
    EXPECT_TRUE(Contains(before, dropped));
    EXPECT_FALSE(Contains(p.ReceiversOf(1), dropped));
  }
  EXPECT_GE(p.ReceiversOf(1).size(), 1u);  // p kept

  // More trainers become ready; trainer 1's multicast only ever shrinks.
  std::vector<TrainerId> receivers = p.ReceiversOf(1);
  int64_t preempted = preempted_before + static_cast<int64_t>(preemption.receivers.size());
  for (double at : {10.0, 10.0, 10.2, 10.2, 10.2}) {
    for (TrainerId t : {3, 4, 2}) {
      if (at == 10.0 && t == 2) continue;
      absl::StatusOr<Decisions> d = p.OnClock(t, *p.ClockOf(t) + 1, kT0 + absl::Seconds(at));
      ASSERT_TRUE(d.ok()) << d.status();
      for (const Preemption& e : d->preemptions) {
        preempted += static_cast<int64_t>(e.receivers.size());
      }
      for (TrainerId r : p.ReceiversOf(1)) {
        EXPECT_TRUE(Contains(receivers, r)) << "receiver " << r << " re-added";
      }
      for (TrainerId dropped : preemption.receivers) {
        EXPECT_FALSE(Contains(p.ReceiversOf(1), dropped));
      }
      receivers = p.ReceiversOf(1);
    }
  }
  EXPECT_EQ(p.preempted_transfers(), preempted);
}

// The same two grants with the default 10% Pareto margin: trainer 2's multicast does not fill
// trainer 1's receivers to its deadline, so none of 1's is preempted (the policy passes its margin
// to the planner).
TEST(SelMcastSspPolicyTest, TheDefaultParetoMarginSparesTheSlowMulticast) {
  SelMcastSspConfig config = SlowMulticastConfig();
  EXPECT_EQ(config.pareto_margin, 0.1);
  SelMcastSspPolicy p(config);
  ASSERT_TRUE(GrantTheSlowTrainer(p).ok());
  EXPECT_EQ(p.ReceiversOf(1).size(), 3u);
  absl::StatusOr<Decisions> ready = p.OnClock(2, 10, kSlowGrantAt);
  ASSERT_TRUE(ready.ok());
  EXPECT_TRUE(ready->preemptions.empty());
  EXPECT_EQ(p.ReceiversOf(1).size(), 3u);
}

// A multicast is not cut short by its sender's next grant: the receivers the new multicast does
// not take again keep receiving the earlier model until it is delivered (by the planned rate), and
// only then are they forgotten.
TEST(SelMcastSspPolicyTest, AMulticastOutlivesItsSendersNextGrantUntilDelivered) {
  PolicyOptions options;
  // One random receiver per multicast (p = 1), drawn with the default seed: the draws differ
  // within four multicasts (kept_an_earlier_receiver below checks that they did).
  options.mode = "orpheus-ssp";
  options.min_trainers = 4;
  options.min_receivers_fraction = 0.25;
  absl::StatusOr<std::unique_ptr<SyncPolicy>> made = MakePolicy(options);
  ASSERT_TRUE(made.ok()) << made.status();
  auto& p = static_cast<SelMcastSspPolicy&>(**made);
  JoinAll(p, 4);
  // 1 MB models over 1 MB/s links: a transfer takes about a second, a step 10 ms.
  for (TrainerId t = 1; t <= 4; ++t) p.ObserveTransfers(t, TransferSample{1e6, 1.0, 1e6, 1.0, 1});
  std::set<TrainerId> sent_to;
  bool kept_an_earlier_receiver = false;
  for (int64_t clock = 1; clock <= 4; ++clock) {
    absl::StatusOr<Decisions> d = p.OnClock(1, clock, kT0 + absl::Milliseconds(10 * clock));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->preemptions.empty());
    ASSERT_NE(GrantOf(*d, 1), nullptr);
    const std::vector<TrainerId>& now_to = GrantOf(*d, 1)->exchange->send_to;
    sent_to.insert(now_to.begin(), now_to.end());
    const std::vector<TrainerId> receiving = p.ReceiversOf(1);
    EXPECT_EQ(std::set<TrainerId>(receiving.begin(), receiving.end()), sent_to)
        << "an earlier multicast was cut short at clock " << clock;
    kept_an_earlier_receiver |= receiving.size() > now_to.size();
  }
  EXPECT_TRUE(kept_an_earlier_receiver);
  // Ten seconds on, every transfer is delivered by its planned rate: forgotten at the next plan.
  ASSERT_TRUE(p.OnClock(2, 1, kT0 + absl::Seconds(10)).ok());
  EXPECT_TRUE(p.ReceiversOf(1).empty());
}

// Taken again by the sender's next multicast, a receiver gets the newer model unless the earlier
// one is nearly delivered (less than eta = 0.75 of it left), which then finishes instead.
TEST(SelMcastSspPolicyTest, ANearlyDeliveredTransferIsNotSuperseded) {
  PolicyOptions options;
  options.mode = "orpheus-ssp";
  options.min_trainers = 4;
  options.min_receivers_fraction = 1.0;  // every multicast goes to all three others
  absl::StatusOr<std::unique_ptr<SyncPolicy>> made = MakePolicy(options);
  ASSERT_TRUE(made.ok()) << made.status();
  auto& p = static_cast<SelMcastSspPolicy&>(**made);
  JoinAll(p, 4);
  // 1 MB models; trainer 1's 1 MB/s upload split three ways: a multicast takes 3 s.
  for (TrainerId t = 1; t <= 4; ++t) p.ObserveTransfers(t, TransferSample{1e6, 1.0, 1e6, 1.0, 1});
  auto send_to = [&](int64_t clock, absl::Duration at) {
    absl::StatusOr<Decisions> d = p.OnClock(1, clock, kT0 + at);
    EXPECT_TRUE(d.ok()) << d.status();
    const Grant* g = d.ok() ? GrantOf(*d, 1) : nullptr;
    return g == nullptr ? std::vector<TrainerId>{99} : g->exchange->send_to;
  };
  EXPECT_EQ(send_to(1, absl::ZeroDuration()), (std::vector<TrainerId>{2, 3, 4}));
  // Half a second in, 5/6 of each model is still to go: the newer model replaces it.
  EXPECT_EQ(send_to(2, absl::Milliseconds(500)), (std::vector<TrainerId>{2, 3, 4}));
  // 2.5 s later a sixth is left: those transfers finish, and the new model goes nowhere.
  EXPECT_TRUE(send_to(3, absl::Seconds(3)).empty());
  EXPECT_EQ(p.ReceiversOf(1), (std::vector<TrainerId>{2, 3, 4}));
}

TEST(SelMcastSspPolicyTest, FactoryBuildsItWithThePapersDefaults) {
  PolicyOptions options;
  options.mode = "selmcast-ssp";
  EXPECT_EQ(options.Staleness(), 4);
  absl::StatusOr<std::unique_ptr<SyncPolicy>> policy = MakePolicy(options);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->staleness_bound(), 4);
  EXPECT_EQ((*policy)->push_mode(), PushMode::kNone);
  options.eta = 1.5;
  EXPECT_FALSE(MakePolicy(options).ok());
  options.eta = 0.75;
  options.staleness = -1;
  EXPECT_FALSE(MakePolicy(options).ok());
  options.staleness.reset();
  options.mode = "ssp";
  EXPECT_EQ(options.Staleness(), 3);
}

// A trainer joining a job under way holds an untrained model: it pulls nothing, and the next
// multicast granted to a trained trainer sends to it, whoever the planner would have picked, and
// is never preempted. A joiner at the job's start pulls the store's initial model.
TEST(SelMcastSspPolicyTest, AJoinerOfAJobUnderWayIsSentATrainedModelFirst) {
  constexpr absl::Duration kStep = absl::Milliseconds(100);
  for (const std::string planner : {"selmcast", "orpheus"}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      SCOPED_TRACE(planner + ", seed " + std::to_string(seed));
      SelMcastSspConfig config = Config(3);
      config.planner = planner;
      config.seed = seed;
      config.min_receivers_fraction = 0.01;  // p = 1 of the 3 others
      SelMcastSspPolicy p(config);
      for (const Grant& g : JoinAll(p, 3).grants) EXPECT_EQ(g.pull, PullSpec::Live());
      absl::Time now = kT0;
      for (int64_t clock = 1; clock <= 3; ++clock) {
        for (TrainerId t : {1, 2, 3}) ASSERT_TRUE(p.OnClock(t, clock, now += kStep).ok());
      }
      Decisions joined;
      absl::StatusOr<int64_t> start = p.OnJoin(4, now, &joined);
      ASSERT_TRUE(start.ok()) << start.status();
      EXPECT_EQ(*start, 3);
      const Grant* first = GrantOf(joined, 4);
      ASSERT_NE(first, nullptr);
      EXPECT_EQ(first->pull, PullSpec::None()) << "the store's model is untrained";
      ASSERT_TRUE(first->exchange.has_value());
      // Trainer 2 reports next: its one receiver is the joiner, whatever the draw or the loads.
      absl::StatusOr<Decisions> d = p.OnClock(2, 4, now += kStep);
      ASSERT_TRUE(d.ok()) << d.status();
      const Grant* fed = GrantOf(*d, 2);
      ASSERT_NE(fed, nullptr);
      ASSERT_TRUE(fed->exchange.has_value());
      EXPECT_EQ(fed->exchange->send_to, std::vector<TrainerId>{4});
      // The others' multicasts go on, and never preempt the one that feeds the joiner.
      for (int64_t clock = 4; clock <= 6; ++clock) {
        for (TrainerId t : {1, 3, 4}) {
          d = p.OnClock(t, clock, now += absl::Milliseconds(1));
          ASSERT_TRUE(d.ok()) << d.status();
          for (const Preemption& preemption : d->preemptions) {
            EXPECT_FALSE(preemption.sender == 2 && Contains(preemption.receivers, 4));
          }
        }
      }
    }
  }
}

// orpheus-ssp is the same policy with Orpheus's random receivers: the bound holds alike, and it
// never preempts.
TEST(SelMcastSspPolicyTest, OrpheusSspKeepsTheBoundAndNeverPreempts) {
  PolicyOptions options;
  options.mode = "orpheus-ssp";
  options.min_trainers = 4;
  absl::StatusOr<std::unique_ptr<SyncPolicy>> made = MakePolicy(options);
  ASSERT_TRUE(made.ok()) << made.status();
  SyncPolicy& p = **made;
  EXPECT_EQ(p.name(), "orpheus-ssp");
  EXPECT_EQ(p.staleness_bound(), 4);
  EXPECT_TRUE(p.exchange_in_background());
  EXPECT_EQ(Granted(JoinAll(p, 4)).size(), 4u);
  std::mt19937_64 rng(11);
  std::map<TrainerId, int64_t> clock;
  std::set<TrainerId> computing = {1, 2, 3, 4};  // granted, not reported yet
  for (int event = 0; event < 400; ++event) {
    // A random trainer that is computing reports; trainer 4 only every fifth time (a straggler).
    std::vector<TrainerId> ready(computing.begin(), computing.end());
    TrainerId t = ready[rng() % ready.size()];
    if (t == 4 && rng() % 5 != 0 && ready.size() > 1) t = ready[0] == 4 ? ready[1] : ready[0];
    computing.erase(t);
    absl::StatusOr<Decisions> d = p.OnClock(t, ++clock[t], kT0 + absl::Milliseconds(event));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->preemptions.empty());
    for (const Grant& g : d->grants) {
      computing.insert(g.trainer);
      int64_t min = clock[1];
      for (TrainerId u : {2, 3, 4}) min = std::min(min, clock[u]);
      EXPECT_LE(g.clock - min, 4) << "trainer " << g.trainer << " past the bound";
      ASSERT_TRUE(g.exchange.has_value());
      EXPECT_GE(g.exchange->send_to.size(), 2u);  // p = ceil(0.3 * 4)
    }
    ASSERT_FALSE(computing.empty()) << "every trainer waits: the bound deadlocked";
  }
}

}  // namespace
}  // namespace syncopate::sync
