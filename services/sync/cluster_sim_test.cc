#include "sync/cluster_sim.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

ClusterSimOptions Scenario(const std::string& mode, int trainers = 8, int64_t clocks = 60) {
  ClusterSimOptions o;
  o.policy.mode = mode;
  o.trainers = trainers;
  o.stragglers = 1;
  o.straggler_slowdown = 4;
  o.step = absl::Milliseconds(100);
  o.clocks = clocks;
  return o;
}

// ASP until some trainer reports clock 3, then nothing: the trainers wait for grants that never
// come, and only the simulator's ticks are left. Forwards only what the simulator calls for asp.
class StopsGrantingPolicy final : public SyncPolicy {
 public:
  StopsGrantingPolicy() {
    PolicyOptions options;
    options.mode = "asp";
    inner_ = MakePolicy(options).value();
  }
  std::string name() const override { return "stops-granting"; }
  PushMode push_mode() const override { return inner_->push_mode(); }
  int64_t staleness_bound() const override { return inner_->staleness_bound(); }
  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* d) override {
    return inner_->OnJoin(trainer, now, d);
  }
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override {
    absl::StatusOr<Decisions> d = inner_->OnClock(trainer, clock, now);
    stopped_ |= clock >= 3;
    return stopped_ && d.ok() ? Decisions{} : d;
  }
  Decisions OnLeave(TrainerId trainer, absl::Time now) override {
    return inner_->OnLeave(trainer, now);
  }
  Decisions OnTick(absl::Time now) override {
    Decisions d = inner_->OnTick(now);
    return stopped_ ? Decisions{} : d;
  }
  absl::Status Recover(int64_t last_closed_round, int expected, absl::Duration window) override {
    return inner_->Recover(last_closed_round, expected, window);
  }
  absl::Status OnResume(const Resumption& r, absl::Time now, Decisions* d) override {
    return inner_->OnResume(r, now, d);
  }
  std::optional<int64_t> ClockOf(TrainerId trainer) const override {
    return inner_->ClockOf(trainer);
  }
  std::optional<int64_t> MinClock() const override { return inner_->MinClock(); }
  int64_t last_closed_round() const override { return inner_->last_closed_round(); }

 private:
  std::unique_ptr<SyncPolicy> inner_;
  bool stopped_ = false;
};

TEST(ClusterSimTest, APolicyThatGrantsNothingIsReportedAsStalled) {
  absl::StatusOr<ClusterSimResult> r =
      SimulateCluster(Scenario("asp", 4), std::make_unique<StopsGrantingPolicy>());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("stops-granting: no trainer can go on"), std::string::npos)
      << r.status();
  // The same scenario under the policy it wraps runs to the end.
  EXPECT_TRUE(SimulateCluster(Scenario("asp", 4)).ok());
  EXPECT_EQ(SimulateCluster(Scenario("asp", 4), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClusterSimTest, BspWaitsForTheStragglerEveryRound) {
  absl::StatusOr<ClusterSimResult> r = SimulateCluster(Scenario("bsp"));
  ASSERT_TRUE(r.ok()) << r.status();
  // Every round takes the straggler's 0.4 s step and more (transfers, the close, the grant).
  EXPECT_GT(r->seconds_per_clock, 0.4);
  EXPECT_LT(r->seconds_per_clock, 0.5);
  EXPECT_EQ(r->staleness_max, 0);
  EXPECT_GE(r->rounds_closed, 60);
  // 7 of 8 trainers wait about 3/4 of every round.
  EXPECT_LT(r->compute_time_ratio, 0.45);
  EXPECT_GT(r->grants, 8 * 60);
}

TEST(ClusterSimTest, PipelinedGrantsOverlapTheCloseInBspOnly) {
  // Two equal trainers, no jitter, no bytes: a round is the step, then the close and the grant's
  // delivery, end to end (2.5 ms) or overlapped (the longer of the two, 2 ms). wbsp closes rounds
  // too, but does not pipeline its grants.
  for (std::string mode : {"bsp", "wbsp"}) {
    ClusterSimOptions o = Scenario(mode, 2, 100);
    o.stragglers = 0;
    o.jitter_sigma = 0;
    o.model_bytes = 0;
    o.directive_latency = absl::Microseconds(500);
    o.close_latency = absl::Milliseconds(2);
    o.pipeline_grants = false;
    absl::StatusOr<ClusterSimResult> after_close = SimulateCluster(o);
    o.pipeline_grants = true;
    absl::StatusOr<ClusterSimResult> pipelined = SimulateCluster(o);
    ASSERT_TRUE(after_close.ok() && pipelined.ok()) << mode;
    EXPECT_EQ(after_close->rounds_closed, pipelined->rounds_closed) << mode;
    if (mode == "bsp") {
      EXPECT_NEAR(after_close->seconds_per_clock, 0.1025, 1e-4);
      EXPECT_NEAR(pipelined->seconds_per_clock, 0.1020, 1e-4);
    } else {
      EXPECT_GT(after_close->rounds_closed, 50) << mode;
      EXPECT_EQ(after_close->simulated_seconds, pipelined->simulated_seconds) << mode;
    }
  }
}

TEST(ClusterSimTest, AspDoesNotWaitAndSspKeepsItsBound) {
  absl::StatusOr<ClusterSimResult> asp = SimulateCluster(Scenario("asp"));
  ASSERT_TRUE(asp.ok()) << asp.status();
  EXPECT_GT(asp->compute_time_ratio, 0.9);
  EXPECT_GT(asp->staleness_max, 100) << "fast trainers run far ahead of the straggler";

  absl::StatusOr<ClusterSimResult> ssp = SimulateCluster(Scenario("ssp"));
  ASSERT_TRUE(ssp.ok()) << ssp.status();
  EXPECT_LE(ssp->staleness_max, 3);
  EXPECT_LT(ssp->compute_time_ratio, asp->compute_time_ratio);
}

TEST(ClusterSimTest, EveryModeRunsThroughALeaveAndARejoin) {
  for (const std::string& mode : SupportedModes()) {
    ClusterSimOptions o = Scenario(mode, 12, 40);
    o.leave_at_clock = 10;
    o.rejoin_at_clock = 20;
    absl::StatusOr<ClusterSimResult> r = SimulateCluster(o);
    ASSERT_TRUE(r.ok()) << mode << ": " << r.status();
    EXPECT_EQ(r->mode, mode);
    EXPECT_GT(r->simulated_seconds, 0) << mode;
    EXPECT_GT(r->compute_time_ratio, 0) << mode;
    EXPECT_GT(r->events, 12 * 40) << mode;
  }
}

TEST(ClusterSimTest, TheSameSeedGivesTheSameRun) {
  ClusterSimOptions o = Scenario("dssp");
  absl::StatusOr<ClusterSimResult> a = SimulateCluster(o), b = SimulateCluster(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->simulated_seconds, b->simulated_seconds);
  EXPECT_EQ(a->grants, b->grants);
  o.seed = 2;
  absl::StatusOr<ClusterSimResult> c = SimulateCluster(o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->simulated_seconds, c->simulated_seconds);
}

TEST(ClusterSimTest, BadOptionsAreRefused) {
  ClusterSimOptions o = Scenario("bsp");
  o.trainers = 0;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("bsp");
  o.stragglers = 9;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("bsp");
  o.link_bytes_per_second = 0;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("bsp");
  o.links = {{1e9, 1e9}, {1e9, 1e9}, {1e9, 1e9}};  // 8 trainers
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.links.assign(8, {1e9, 1e9});
  o.links.back().download = 0;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("nope");
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("bsp");
  o.leave_at_clock = 5;
  o.rejoin_at_clock = 5;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Scenario("bsp", /*trainers=*/1);
  o.stragglers = 0;
  o.leave_at_clock = 5;
  EXPECT_EQ(SimulateCluster(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClusterSimTest, StepsPerSecondAndStalenessOfEqualTrainers) {
  ClusterSimOptions o = Scenario("bsp", 4, 200);
  o.stragglers = 0;  // each step jittered by 10%: trainers drift out of step with each other
  absl::StatusOr<ClusterSimResult> bsp = SimulateCluster(o);
  ASSERT_TRUE(bsp.ok()) << bsp.status();
  // A round of 4 deltas on one snapshot misses 0, 1, 2 and 3 of them: 1.5 deltas, 0.375 steps.
  EXPECT_DOUBLE_EQ(bsp->delta_staleness_mean, 0.375);
  o.policy.mode = "asp";
  absl::StatusOr<ClusterSimResult> asp = SimulateCluster(o);
  ASSERT_TRUE(asp.ok()) << asp.status();
  // Nobody waits: 4 trainers at 10 steps a second, less a push and a pull each step.
  EXPECT_NEAR(asp->steps_per_second, 40, 1);
  EXPECT_GT(asp->steps_per_second, bsp->steps_per_second);
  // Each delta misses what the 3 others pushed during its step: 3 deltas, 0.75 steps (in lockstep,
  // without jitter, it would miss 0 to 3, as under bsp).
  EXPECT_NEAR(asp->delta_staleness_mean, 0.75, 0.1);
  // dssync with one group averages every model each round: a round's steps miss 0 to 3 of each
  // other, as bsp's deltas do (peer_staleness.h).
  o.policy.mode = "dssync";
  o.policy.groups = 1;
  absl::StatusOr<ClusterSimResult> p2p = SimulateCluster(o);
  ASSERT_TRUE(p2p.ok()) << p2p.status();
  EXPECT_DOUBLE_EQ(p2p->delta_staleness_mean, 0.375);
  // In two groups of two, a model holds the other pair's steps only once a shuffle brought them.
  o.policy.groups = 2;
  p2p = SimulateCluster(o);
  ASSERT_TRUE(p2p.ok()) << p2p.status();
  EXPECT_GT(p2p->delta_staleness_mean, 0.375 + 0.25);
  EXPECT_LT(p2p->delta_staleness_mean, 2);
  // Beyond kPeerStalenessTrainers, not counted.
  o.trainers = kPeerStalenessTrainers + 1;
  o.clocks = 5;
  p2p = SimulateCluster(o);
  ASSERT_TRUE(p2p.ok()) << p2p.status();
  EXPECT_EQ(p2p->delta_staleness_mean, -1);
}

TEST(ClusterSimTest, OneSlowLinkHoldsWhoeverWaitsForItsTransfers) {
  ClusterSimOptions o = Scenario("bsp", 4, 40);
  o.stragglers = 0;
  o.model_bytes = 1e6;
  // Three links take a model in 1 ms, the last one in 0.4 s each way.
  o.links = {{1e9, 1e9}, {1e9, 1e9}, {1e9, 1e9}, {2.5e6, 2.5e6}};
  absl::StatusOr<ClusterSimResult> bsp = SimulateCluster(o);
  ASSERT_TRUE(bsp.ok()) << bsp.status();
  // Each round waits for the slow trainer's pull and push: 0.1 s of step and 0.8 s of transfers.
  EXPECT_GT(bsp->seconds_per_clock, 0.9);
  EXPECT_LT(bsp->seconds_per_clock, 1.0);
  // Only its upload slow: the push alone.
  o.links.back().download = 1e9;
  bsp = SimulateCluster(o);
  ASSERT_TRUE(bsp.ok()) << bsp.status();
  EXPECT_GT(bsp->seconds_per_clock, 0.5);
  EXPECT_LT(bsp->seconds_per_clock, 0.6);
  o.links.back().download = 2.5e6;
  o.policy.mode = "asp";
  absl::StatusOr<ClusterSimResult> asp = SimulateCluster(o);
  ASSERT_TRUE(asp.ok()) << asp.status();
  // Nobody waits for it: three trainers at about 9.7 steps a second (jitter, 2 ms of transfers),
  // the slow one at 1/0.9.
  EXPECT_NEAR(asp->steps_per_second, 3 * 9.7 + 1 / 0.9, 1);
  // An all-to-all exchange waits for the slow trainer's upload of its model to the 3 others
  // (1.2 s), not only for its own link's time on each trainer.
  o.policy.mode = "dssync";
  o.policy.groups = 1;
  absl::StatusOr<ClusterSimResult> dssync = SimulateCluster(o);
  ASSERT_TRUE(dssync.ok()) << dssync.status();
  EXPECT_GT(dssync->seconds_per_clock, 1.25);
  EXPECT_LT(dssync->seconds_per_clock, 1.4);
  // wbsp-overlap's loop steps on while its thread pushes and pulls: each delta holds the steps
  // done meanwhile, about 9 behind the slow link's 0.8 s of transfers.
  o.policy.mode = "wbsp-overlap";
  absl::StatusOr<ClusterSimResult> overlap = SimulateCluster(o);
  ASSERT_TRUE(overlap.ok()) << overlap.status();
  EXPECT_GT(overlap->compute_time_ratio, 0.9);
  EXPECT_GT(overlap->seconds_per_clock, 0.8);  // a clock is a delta
  EXPECT_GT(overlap->steps_per_second, 35);
  // selmcast-ssp's background multicasts do not hold the steps, however slow the link.
  o.policy.mode = "selmcast-ssp";
  absl::StatusOr<ClusterSimResult> background = SimulateCluster(o);
  ASSERT_TRUE(background.ok()) << background.status();
  EXPECT_LT(background->seconds_per_clock, 0.13);
  EXPECT_GT(background->compute_time_ratio, 0.9);
  o.policy.mode = "dssync";
  // The same links for everyone: one rate or four equal ones are the same run.
  o.links.assign(4, {1e9, 1e9});
  absl::StatusOr<ClusterSimResult> each = SimulateCluster(o);
  o.links.clear();
  o.link_bytes_per_second = 1e9;
  absl::StatusOr<ClusterSimResult> every = SimulateCluster(o);
  ASSERT_TRUE(each.ok() && every.ok());
  EXPECT_EQ(each->simulated_seconds, every->simulated_seconds);
  EXPECT_LT(each->seconds_per_clock, 0.13);
}

}  // namespace
}  // namespace syncopate::sync
