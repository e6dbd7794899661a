#include "sync/cluster_sim.h"

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

}  // namespace
}  // namespace syncopate::sync
