#include "sync/flow_simulator.h"

#include <random>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

TEST(FlowSimulatorTest, SharesACapacityAndReSharesWhenATransferFinishes) {
  auto finish = SimulateTransfers({10}, {{10, {0}}, {20, {0}}});
  ASSERT_TRUE(finish.ok());
  EXPECT_DOUBLE_EQ((*finish)[0], 2.0);  // 5 bytes/s each until the first is done
  EXPECT_DOUBLE_EQ((*finish)[1], 3.0);  // then 10 bytes/s for the last 10 bytes
}

TEST(FlowSimulatorTest, RatesAreMaxMinFair) {
  // B is held to 2 by resource 1; A takes what B leaves of resource 0.
  std::vector<double> rates = MaxMinRates({10, 2}, {{1, {0}}, {1, {0, 1}}});
  EXPECT_DOUBLE_EQ(rates[0], 8);
  EXPECT_DOUBLE_EQ(rates[1], 2);
}

TEST(FlowSimulatorTest, RefusesBadInput) {
  EXPECT_FALSE(SimulateTransfers({0}, {{1, {0}}}).ok());
  EXPECT_FALSE(SimulateTransfers({1}, {{-1, {0}}}).ok());
  EXPECT_FALSE(SimulateTransfers({1}, {{1, {1}}}).ok());
}

TEST(FlowSimulatorTest, AnL3MulticastRunsAtItsSlowestReceiver) {
  MulticastProblem p;
  p.upload = {100, 100, 100};
  p.download = {100, 10, 100};
  p.volume = {50, 50, 50};
  p.min_receivers = {2, 0, 0};
  MulticastPlan plan{PairMatrix(3), PairMatrix(3), 0};
  plan.sends.set(0, 1, true);
  plan.sends.set(0, 2, true);
  EXPECT_DOUBLE_EQ(SimulateMulticastRound(p, plan)->all_seconds, 5.0);  // 50 bytes at 10 bytes/s
  p.layer = MulticastLayer::kL7;  // two unicast streams share the upload: 10 and 90 bytes/s
  EXPECT_DOUBLE_EQ(SimulateMulticastRound(p, plan)->all_seconds, 5.0);
  p.download = {100, 100, 100};
  EXPECT_DOUBLE_EQ(SimulateMulticastRound(p, plan)->all_seconds, 1.0);  // 100 bytes, one upload
}

TEST(FlowSimulatorTest, LowerPriorityOnlyTakesWhatIsLeft) {
  // Both need resource 0 (10 bytes/s); the priority-1 transfer waits for the other to finish.
  auto finish = SimulateTransfers({10}, {{10, {0}, 1}, {10, {0}, 0}});
  ASSERT_TRUE(finish.ok());
  EXPECT_DOUBLE_EQ((*finish)[1], 1.0);
  EXPECT_DOUBLE_EQ((*finish)[0], 2.0);
  // Work-conserving: what the first class cannot use goes to the second.
  std::vector<double> rates = MaxMinRates({10, 4}, {{1, {0, 1}, 0}, {1, {0}, 1}});
  EXPECT_DOUBLE_EQ(rates[0], 4);
  EXPECT_DOUBLE_EQ(rates[1], 6);
}

TEST(FlowSimulatorTest, SimulatedTimeIsAtLeastEveryBound) {
  std::mt19937_64 rng(9);
  for (MulticastLayer layer : {MulticastLayer::kL3, MulticastLayer::kL7}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int n = 4 + trial;
      MulticastProblem p =
          RandomBandwidthProblem(n, 100, 0.5, 1.0, 10, DefaultMinReceivers(n), layer, rng);
      ASSERT_TRUE(p.Validate().ok());
      PairHistory history(n, 4);
      for (const MulticastPlan& plan :
           {SelectSelMcast(p, history, 0), SelectOrpheus(p, history, 0, rng)}) {
        const double simulated = SimulateMulticastRound(p, plan)->all_seconds;
        EXPECT_GE(simulated, plan.estimated_seconds * (1 - 1e-9));
        EXPECT_GE(simulated, CompletionLowerBound(p) * (1 - 1e-9));
      }
    }
  }
}

TEST(FlowSimulatorTest, ParetoAdditionsNeverDelayTheRequiredTransfers) {
  std::mt19937_64 rng(13);
  for (MulticastLayer layer : {MulticastLayer::kL3, MulticastLayer::kL7}) {
    for (int trial = 0; trial < 20; ++trial) {
      const int n = 4 + trial;
      MulticastProblem p =
          RandomBandwidthProblem(n, 100, 0.5, 1.0, 10, DefaultMinReceivers(n), layer, rng);
      PairHistory history(n, 4);
      const MulticastPlan basic = SelectSelMcast(p, history, 0, /*pareto_additions=*/false);
      const MulticastPlan full = SelectSelMcast(p, history, 0, /*pareto_additions=*/true);
      const RoundTimes without = *SimulateMulticastRound(p, basic);
      const RoundTimes with = *SimulateMulticastRound(p, full);
      EXPECT_NEAR(with.required_seconds, without.required_seconds, 1e-9 * without.required_seconds)
          << "n=" << n;
      EXPECT_GE(with.all_seconds, with.required_seconds);
    }
  }
}

TEST(FlowSimulatorTest, RandomProblemsFollowTheSpread) {
  std::mt19937_64 rng(1);
  MulticastProblem p = RandomBandwidthProblem(500, 100, 0.5, 2.0, 7, 3, MulticastLayer::kL3, rng);
  for (int i = 0; i < 500; ++i) {
    EXPECT_GE(p.download[i], 50);
    EXPECT_LE(p.download[i], 150);
    EXPECT_GE(p.upload[i], 100);
    EXPECT_LE(p.upload[i], 300);
  }
}

}  // namespace
}  // namespace syncopate::sync
