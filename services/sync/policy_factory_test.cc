#include "sync/policy_factory.h"

#include <map>
#include <random>

#include "gtest/gtest.h"
#include "sync/policy_test_util.h"

namespace syncopate::sync {
namespace {

using testing::kT0;

TEST(PolicyFactory, BuildsEverySupportedMode) {
  for (const std::string& mode : SupportedModes()) {
    PolicyOptions o;
    o.mode = mode;
    absl::StatusOr<std::unique_ptr<SyncPolicy>> p = MakePolicy(o);
    ASSERT_TRUE(p.ok()) << mode << ": " << p.status();
    EXPECT_EQ((*p)->name(), mode);
  }
}

TEST(PolicyFactory, DsspTakesThePapersUncappedRuleOnRequest) {
  PolicyOptions o;
  o.mode = "dssp";
  absl::StatusOr<std::unique_ptr<SyncPolicy>> capped = MakePolicy(o);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ((*capped)->staleness_bound(), 15);
  EXPECT_EQ(DescribeMode(o), "s=3..15, deltas sum/n");
  o.dssp_rule = "paper";
  absl::StatusOr<std::unique_ptr<SyncPolicy>> paper = MakePolicy(o);
  ASSERT_TRUE(paper.ok()) << paper.status();
  EXPECT_EQ((*paper)->staleness_bound(), -1);
  EXPECT_EQ(DescribeMode(o), "s=3..15 uncapped (paper), deltas sum/n");
}

TEST(PolicyFactory, DsSyncSizesGroupsByBandwidthOnRequest) {
  PolicyOptions o;
  o.mode = "dssync";
  EXPECT_EQ(DescribeMode(o), "groups=2");
  EXPECT_EQ(*ResolveGroupSizing(o), GroupSizing::kEqual);
  o.group_sizes = "bandwidth";
  absl::StatusOr<std::unique_ptr<SyncPolicy>> p = MakePolicy(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(DescribeMode(o), "groups=2 sized by bandwidth");
  EXPECT_EQ(*ResolveGroupSizing(o), GroupSizing::kBandwidth);
  o.global_average_every = 20;
  EXPECT_TRUE(MakePolicy(o).ok());
  EXPECT_EQ(DescribeMode(o), "groups=2 sized by bandwidth, global average every 20 rounds");
}

TEST(PolicyFactory, RejectsUnknownModesAndBadOptions) {
  auto rejects = [](PolicyOptions o) {
    return MakePolicy(o).status().code() == absl::StatusCode::kInvalidArgument;
  };
  PolicyOptions o;
  o.mode = "bogus";
  EXPECT_TRUE(rejects(o));
  o.mode = "ssp";
  o.staleness = -1;
  EXPECT_TRUE(rejects(o));
  o.mode = "dssp";
  o.staleness = 5;
  o.staleness_max = 4;
  EXPECT_TRUE(rejects(o));
  o = PolicyOptions();
  o.mode = "wbsp";
  o.aggregation = "median";
  EXPECT_TRUE(rejects(o));
  for (const char* mode : {"dssp", "ssp"}) {
    o = PolicyOptions();
    o.mode = mode;
    o.dssp_rule = "uncapped";  // a typo is refused even where the rule does not apply
    EXPECT_TRUE(rejects(o)) << mode;
  }
  for (const char* mode : {"dssync", "bsp"}) {
    o = PolicyOptions();
    o.mode = mode;
    o.group_sizes = "topology";
    EXPECT_TRUE(rejects(o)) << mode;
  }
  o = PolicyOptions();
  o.mode = "dssync";
  o.global_average_every = -1;
  EXPECT_TRUE(rejects(o));
  o = PolicyOptions();
  o.mode = "hybrid";
  o.groups = 0;
  EXPECT_TRUE(rejects(o));
  o.groups = 2;
  o.split_ratio = 1.0;
  EXPECT_TRUE(rejects(o));
  o.split_ratio = 2;
  o.regroup_every = 0;
  EXPECT_TRUE(rejects(o));
  o = PolicyOptions();
  o.mode = "dssync";
  o.groups = 0;
  EXPECT_TRUE(rejects(o));
  o = PolicyOptions();
  o.mode = "selmcast";
  o.min_receivers_fraction = 0;
  EXPECT_TRUE(rejects(o));
  o.min_receivers_fraction = 0.3;
  o.k = -1;
  EXPECT_TRUE(rejects(o));
}

// The global model's change when each of 4 trainers pushes one step's delta (1, 2, 3 and 4) under
// `mode` and `aggregation`, as the store applies them: immediate pushes with the weight their
// grant carries (PushWeight with the 4 live), rounds by their close's aggregation.
double GlobalChangeOfOneStepEach(const std::string& mode, const std::string& aggregation) {
  PolicyOptions options;
  options.mode = mode;
  options.aggregation = aggregation;
  options.min_trainers = 4;
  std::unique_ptr<SyncPolicy> p = testing::Make(options);
  if (p == nullptr) return -1;
  const std::map<TrainerId, double> delta = {{1, 1.0}, {2, 2.0}, {3, 3.0}, {4, 4.0}};
  Decisions d;
  for (const auto& [id, _] : delta) EXPECT_TRUE(p->OnJoin(id, testing::kT0, &d).ok());
  double change = 0;
  for (const auto& [id, value] : delta) {
    p->ObserveCompute(id, 1, 0.1);
    absl::StatusOr<Decisions> after = p->OnClock(id, 1, testing::kT0);
    EXPECT_TRUE(after.ok()) << after.status();
    if (p->push_mode() == PushMode::kImmediate) change += p->PushWeight(4) * value;
    if (after.ok()) d.Append(*std::move(after));
  }
  for (const RoundClose& close : d.close_rounds) {
    double sum = 0;
    for (const auto& [id, clock] : close.cuts) sum += clock >= 1 ? delta.at(id) : 0;
    change += close.aggregation == Aggregation::kMean ? sum / static_cast<double>(close.cuts.size())
                                                      : sum / close.live_trainers;
  }
  return change;
}

// The default rule: in every store mode, four trainers' steps move the model by their mean.
TEST(StepSizeRule, EveryStoreModeMovesTheModelByTheMeanStepByDefault) {
  for (const std::string mode : {"bsp", "asp", "ssp", "dssp", "wbsp", "wbsp-overlap", "hybrid"}) {
    EXPECT_DOUBLE_EQ(GlobalChangeOfOneStepEach(mode, "sum/n"), 2.5) << mode;
  }
}

// The published rules: weight 1 moves the model N = 4 times as far (asp, ssp, dssp); bsp's and a
// single hybrid group's mean, and wbsp's sum/N, are the mean step.
TEST(StepSizeRule, PublishedRulesKeepTheirDocumentedFactors) {
  for (const std::string mode : {"asp", "ssp", "dssp"}) {
    EXPECT_DOUBLE_EQ(GlobalChangeOfOneStepEach(mode, "paper"), 4 * 2.5) << mode;
    EXPECT_DOUBLE_EQ(GlobalChangeOfOneStepEach(mode, "sum"), 4 * 2.5) << mode;
  }
  for (const std::string mode : {"bsp", "hybrid", "wbsp"}) {
    EXPECT_DOUBLE_EQ(GlobalChangeOfOneStepEach(mode, "paper"), 2.5) << mode;
    EXPECT_DOUBLE_EQ(GlobalChangeOfOneStepEach(mode, "mean"), 2.5) << mode;
  }
}

// A value a mode cannot use is refused, naming what it can use.
TEST(StepSizeRule, RefusesARuleTheModeCannotUse) {
  PolicyOptions o;
  o.mode = "bsp";
  o.aggregation = "sum";
  EXPECT_TRUE(absl::IsInvalidArgument(MakePolicy(o).status()));
  o.mode = "asp";
  o.aggregation = "mean";
  EXPECT_TRUE(absl::IsInvalidArgument(MakePolicy(o).status()));
  o.mode = "dssync";
  EXPECT_TRUE(absl::IsInvalidArgument(MakePolicy(o).status()));
  o.aggregation = "paper";
  EXPECT_TRUE(MakePolicy(o).ok());
  o.mode = "hybrid";
  o.aggregation = "paper";
  EXPECT_EQ(*ResolveAggregation(o), Aggregation::kMean);
  o.mode = "wbsp";
  EXPECT_EQ(*ResolveAggregation(o), Aggregation::kSumOverN);
}

// Random interleavings of reports, joins and leaves, for every mode: every report gets exactly
// one grant, a bounded mode never grants past its bound, every reported push is taken by exactly
// one round (cuts only move forward and never pass what was reported), rounds are numbered
// 1, 2, ... and somebody can always make progress.
struct Schedule {
  std::string mode;
  int64_t staleness;
};

class RandomSchedule : public ::testing::TestWithParam<Schedule> {};

TEST_P(RandomSchedule, InvariantsHold) {
  PolicyOptions options;
  options.mode = GetParam().mode;
  options.staleness = GetParam().staleness;
  options.staleness_max = GetParam().staleness + 4;
  options.regroup_every = 3;
  auto p = testing::Make(options);
  ASSERT_NE(p, nullptr);
  const bool gap_bounded = options.mode != "wbsp" && options.mode != "wbsp-overlap" &&
                           options.mode != "hybrid" && p->staleness_bound() >= 0;
  std::mt19937 rng(1234 + static_cast<int>(options.Staleness()));
  std::map<TrainerId, bool> running;  // trainer -> has a grant and may report
  std::map<TrainerId, int64_t> cut;   // last clock a round took
  std::map<TrainerId, double> compute;
  int64_t last_round = 0;
  absl::Time now = kT0;
  TrainerId next = 1;
  auto apply = [&](const Decisions& d) {
    for (const RoundClose& c : d.close_rounds) {
      ASSERT_EQ(c.round, ++last_round);
      for (const auto& [t, clock] : c.cuts) {
        ASSERT_GT(clock, cut[t]) << "a push taken twice";
        cut[t] = clock;
      }
    }
    for (const Preemption& e : d.preemptions) {
      // selmcast-ssp: only live senders' transfers to other live trainers are preempted.
      ASSERT_TRUE(running.count(e.sender) > 0) << "preemption for departed trainer " << e.sender;
      for (TrainerId receiver : e.receivers) {
        ASSERT_NE(receiver, e.sender);
        ASSERT_TRUE(running.count(receiver) > 0) << "preempted departed receiver " << receiver;
      }
    }
    for (const Grant& g : d.grants) {
      ASSERT_FALSE(running[g.trainer]) << "two grants for one report";
      if (g.exchange) {
        // Peer-to-peer: nobody exchanges with itself or with a trainer that is gone.
        for (TrainerId peer : g.exchange->send_to) {
          ASSERT_NE(peer, g.trainer);
          ASSERT_TRUE(running.count(peer) > 0) << "exchange with departed trainer " << peer;
        }
      }
      if (gap_bounded) {
        ASSERT_LE(g.clock - *p->MinClock(), g.staleness_bound);
        ASSERT_LE(g.staleness_bound, p->staleness_bound());
      }
      running[g.trainer] = true;
    }
  };
  auto join = [&] {
    Decisions d;
    ASSERT_TRUE(p->OnJoin(next, now, &d).ok());
    running[next] = false;
    cut[next] = 0;
    compute[next] = 0;
    ++next;
    apply(d);
  };
  for (int i = 0; i < 4; ++i) join();
  for (int step = 0; step < 5000; ++step) {
    now += absl::Milliseconds(1 + rng() % 20);
    const int action = rng() % 100;
    if (action < 2 && running.size() < 8) {
      join();
    } else if (action < 4 && running.size() > 2) {
      auto it = std::next(running.begin(), rng() % running.size());
      TrainerId gone = it->first;
      running.erase(it);
      apply(p->OnLeave(gone, now));
    } else {
      std::vector<TrainerId> ready;
      for (auto& [t, r] : running) {
        if (r) ready.push_back(t);
      }
      if (ready.empty()) continue;
      TrainerId t = ready[rng() % ready.size()];
      running[t] = false;
      const int64_t clock = *p->ClockOf(t) + 1;
      compute[t] += 0.001 * static_cast<double>(t % 3 + 1);  // three speeds for hybrid
      p->ObserveCompute(t, clock, compute[t]);
      p->ObserveTransfers(t, TransferSample{1e6 * (1 + rng() % 10), 0.1, 1e6, 0.1});
      auto d = p->OnClock(t, clock, now);
      ASSERT_TRUE(d.ok()) << d.status();
      apply(*d);
      for (const RoundClose& c : d->close_rounds) {
        for (const auto& [id, taken] : c.cuts) {
          if (running.count(id) > 0) {
            ASSERT_LE(taken, *p->ClockOf(id));
          }
        }
      }
    }
    bool any = false;
    for (auto& [t, r] : running) any |= r;
    ASSERT_TRUE(any) << "deadlock at step " << step;
  }
  if (options.mode == "hybrid") {
    EXPECT_GE(p->group_count(), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, RandomSchedule,
    ::testing::Values(Schedule{"bsp", 0}, Schedule{"ssp", 0}, Schedule{"ssp", 1},
                      Schedule{"ssp", 3}, Schedule{"asp", 0}, Schedule{"dssp", 0},
                      Schedule{"dssp", 3}, Schedule{"wbsp", 0}, Schedule{"wbsp-overlap", 0},
                      Schedule{"hybrid", 0}, Schedule{"dssync", 0}, Schedule{"selmcast", 0},
                      Schedule{"selmcast-ssp", 0}, Schedule{"selmcast-ssp", 4},
                      Schedule{"orpheus", 0}),
    [](const ::testing::TestParamInfo<Schedule>& info) {
      std::string name = info.param.mode + "_s" + std::to_string(info.param.staleness);
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace syncopate::sync
