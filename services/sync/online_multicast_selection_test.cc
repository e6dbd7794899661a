#include "sync/online_multicast_selection.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace syncopate::sync {
namespace {

OnlineMulticastProblem Idle(int n, int p, MulticastLayer layer = MulticastLayer::kL7) {
  OnlineMulticastProblem problem;
  problem.links.upload.assign(n, 100);
  problem.links.download.assign(n, 100);
  problem.links.volume.assign(n, 10);
  problem.links.min_receivers.assign(n, p);
  problem.links.layer = layer;
  problem.in_flight = PairMatrix(n);
  problem.pinned = PairMatrix(n);
  problem.remaining.assign(static_cast<size_t>(n) * n, 0.0);
  problem.tau.assign(n, 0.0);
  return problem;
}

// History in which every pair synchronized in the round before `round` (nothing forced).
PairHistory Fresh(int n, int k, int64_t round) {
  PairHistory history(n, k);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) history.Set(i, j, round - 1);
  }
  return history;
}

void StartFlight(OnlineMulticastProblem& p, int i, int j, double remaining) {
  p.in_flight.set(i, j, true);
  p.remaining[static_cast<size_t>(i) * p.size() + j] = remaining;
}

// What each task's chosen transfers take, the way the deadlines are defined.
double Finish(const OnlineMulticastProblem& p, const PairMatrix& sends, int i) {
  const int n = p.size();
  auto volume = [&](int a, int b) { return a == p.ready ? p.links.volume[a] : p.Remaining(a, b); };
  double sent = 0;
  for (int j = 0; j < n; ++j) {
    if (!sends.at(i, j)) continue;
    sent =
        p.links.layer == MulticastLayer::kL7 ? sent + volume(i, j) : std::max(sent, volume(i, j));
  }
  double finish = std::max(p.tau[i], sent / p.links.upload[i]);
  for (int j = 0; j < n; ++j) {
    if (!sends.at(i, j) || volume(i, j) == 0) continue;  // delivered: i no longer waits on j
    double received = 0;
    for (int l = 0; l < n; ++l) {
      if (sends.at(l, j)) received += volume(l, j);
    }
    finish = std::max(finish, received / p.links.download[j]);
  }
  return finish;
}

TEST(OnlineMulticastProblemTest, ValidateRefusesBadInput) {
  EXPECT_TRUE(Idle(4, 1).Validate().ok());
  OnlineMulticastProblem p = Idle(4, 1);
  p.ready = 4;
  EXPECT_FALSE(p.Validate().ok());
  p = Idle(4, 1);
  p.eta = 0;
  EXPECT_FALSE(p.Validate().ok());
  p = Idle(4, 1);
  p.tau[2] = -1;
  EXPECT_FALSE(p.Validate().ok());
  p = Idle(4, 1);
  p.remaining.pop_back();
  EXPECT_FALSE(p.Validate().ok());
}

TEST(OnlineMulticastSelectionTest, ReadyTrainerPicksTheLightestReceiver) {
  OnlineMulticastProblem p = Idle(4, 1);
  p.links.download = {100, 100, 1000, 100};
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, Fresh(4, 4, 7), 7);
  EXPECT_TRUE(plan.sends.at(0, 2));
  EXPECT_EQ(plan.sends.RowCount(0), 1);  // L7: a second receiver would double its upload time
  EXPECT_EQ(plan.preempted.RowCount(1), 0);
}

TEST(OnlineMulticastSelectionTest, PreemptsAnInFlightReceiverThatIsFarFromDone) {
  // Trainer 1 is sending to 2 and 3, both barely started, but needs only one receiver: when 0
  // becomes ready, 1 keeps the lighter one and the other is preempted.
  OnlineMulticastProblem p = Idle(4, 1);
  StartFlight(p, 1, 2, 10);
  StartFlight(p, 1, 3, 10);
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, Fresh(4, 4, 3), 3);
  EXPECT_EQ(plan.sends.RowCount(1), 1);
  EXPECT_EQ(plan.preempted.RowCount(1), 1);
  for (int j : {2, 3}) EXPECT_NE(plan.sends.at(1, j), plan.preempted.at(1, j));
  EXPECT_EQ(plan.sends.RowCount(0), 1);
  EXPECT_EQ(plan.preempted.RowCount(0), 0);  // kappa's own unchosen candidates are not preemptions
}

TEST(OnlineMulticastSelectionTest, KeepsNearlyDeliveredAndPinnedReceivers) {
  OnlineMulticastProblem p = Idle(4, 1);
  StartFlight(p, 1, 2, 10);
  StartFlight(p, 1, 3, 1);  // 1 < eta * 10 left: nearly delivered
  p.pinned = PairMatrix(4);
  StartFlight(p, 2, 0, 10);
  StartFlight(p, 2, 3, 10);
  p.pinned.set(2, 0, true);
  p.pinned.set(2, 3, true);  // the k-round rule required both
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, Fresh(4, 4, 3), 3);
  EXPECT_TRUE(plan.sends.at(1, 3));
  EXPECT_TRUE(plan.sends.at(2, 0));
  EXPECT_TRUE(plan.sends.at(2, 3));
  EXPECT_FALSE(plan.preempted.at(1, 3));
  EXPECT_FALSE(plan.preempted.at(2, 0));
}

TEST(OnlineMulticastSelectionTest, ForcedPairsOfTheReadyTrainerAreKept) {
  OnlineMulticastProblem p = Idle(5, 1);
  PairHistory history = Fresh(5, 2, 10);
  history.Set(0, 3, 6);  // four rounds ago, k = 2
  history.Set(0, 4, 5);
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, history, 10);
  EXPECT_TRUE(plan.sends.at(0, 3));
  EXPECT_TRUE(plan.sends.at(0, 4));
}

TEST(OnlineMulticastSelectionTest, BlockedTasksAbsorbMoreReceivers) {
  // A ready trainer that would block for 10 s anyway gets every receiver the others can take.
  OnlineMulticastProblem p = Idle(5, 1);
  p.tau[0] = 10;
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, Fresh(5, 4, 2), 2);
  EXPECT_EQ(plan.sends.RowCount(0), 4);
  EXPECT_GE(plan.deadline_seconds[0], 10);
  // One receiver is its p; the other three are Pareto additions, sent at low priority.
  EXPECT_EQ(plan.additions.RowCount(0), 3);
}

TEST(OnlineMulticastSelectionTest, AParetoMarginLeavesRoomWithinTheDeadline) {
  // Trainer 0 would block 0.4 s anyway; each model takes 0.1 s of its upload (L7). With no margin
  // its additions fill the upload to the deadline; with 0.1 they must end by 0.36 s.
  OnlineMulticastProblem p = Idle(5, 1);
  p.tau[0] = 0.4;
  EXPECT_EQ(SelectSelMcastOnline(p, Fresh(5, 4, 2), 2).sends.RowCount(0), 4);
  p.pareto_margin = 0.1;
  const OnlineMulticastPlan plan = SelectSelMcastOnline(p, Fresh(5, 4, 2), 2);
  EXPECT_EQ(plan.sends.RowCount(0), 3);
  EXPECT_EQ(plan.additions.RowCount(0), 2);  // 0.3 s of upload: a fourth would take 0.4 s
  p.pareto_margin = std::nan("");            // counts as none
  EXPECT_EQ(SelectSelMcastOnline(p, Fresh(5, 4, 2), 2).sends.RowCount(0), 4);
}

// Many rounds of online decisions on random links: every decision keeps p (as far as candidates
// allow), never delays a task past the deadline its additions respected, and a receiver dropped
// from a multicast never comes back to it.
// orpheus-ssp: the ready trainer's forced pairs, topped up to p with random others; every in-flight
// pair is kept, however far from done.
TEST(OnlineMulticastSelectionTest, OrpheusPicksForcedPairsThenRandomReceiversAndPreemptsNothing) {
  const int n = 8;
  OnlineMulticastProblem p = Idle(n, 2);
  p.ready = 0;
  StartFlight(p, 1, 2, 10);  // nothing of it delivered yet
  StartFlight(p, 3, 2, 10);
  PairHistory history = Fresh(n, 4, 10);
  history.Set(0, 5, 4);  // last synchronized 6 rounds ago: forced
  std::mt19937_64 rng(7);
  std::vector<int> picked(n, 0);
  for (int trial = 0; trial < 200; ++trial) {
    const OnlineMulticastPlan plan = SelectOrpheusOnline(p, history, 10, rng);
    EXPECT_EQ(plan.sends.RowCount(0), 2) << "p = 2: the forced pair and one more";
    EXPECT_TRUE(plan.sends.at(0, 5));
    EXPECT_FALSE(plan.sends.at(0, 0));
    EXPECT_TRUE(plan.sends.at(1, 2));
    EXPECT_TRUE(plan.sends.at(3, 2));
    EXPECT_EQ(plan.preempted.RowCount(1) + plan.preempted.RowCount(3), 0);
    for (int j = 1; j < n; ++j) picked[j] += plan.sends.at(0, j) ? 1 : 0;
  }
  // The random picks spread over the six other candidates (200 picks, 33 each expected).
  for (int j : {1, 2, 3, 4, 6, 7}) EXPECT_GT(picked[j], 15) << j;
}

TEST(OnlineMulticastSelectionTest, RandomDecisionsKeepTheirInvariants) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(0, 1);
  for (MulticastLayer layer : {MulticastLayer::kL3, MulticastLayer::kL7}) {
    const int n = 9;
    OnlineMulticastProblem p = Idle(n, 3, layer);
    for (int i = 0; i < n; ++i) {
      p.links.upload[i] = 100 * (1 + 0.5 * (2 * unit(rng) - 1));
      p.links.download[i] = 100 * (1 + 0.5 * (2 * unit(rng) - 1));
    }
    PairHistory history(n, 4);
    PairMatrix dropped(n);  // per sender's current multicast
    int preemptions = 0;
    for (int64_t round = 0; round < 300; ++round) {
      p.ready = static_cast<int>(rng() % n);
      for (int i = 0; i < n; ++i) p.tau[i] = unit(rng) < 0.3 ? 2 * unit(rng) : 0;
      for (int j = 0; j < n; ++j) {
        p.in_flight.set(p.ready, j, false);  // kappa's previous multicast ended
        dropped.set(p.ready, j, false);
      }
      // Transfers progress.
      for (size_t c = 0; c < p.remaining.size(); ++c) p.remaining[c] *= unit(rng);
      ASSERT_TRUE(p.Validate().ok());
      const OnlineMulticastPlan plan = SelectSelMcastOnline(p, history, round);

      for (int i = 0; i < n; ++i) {
        const bool task = i == p.ready || p.in_flight.RowCount(i) > 0;
        if (!task) {
          EXPECT_EQ(plan.sends.RowCount(i), 0);
          continue;
        }
        const int candidates = i == p.ready ? n - 1 : p.in_flight.RowCount(i);
        EXPECT_GE(plan.sends.RowCount(i), std::min(p.links.min_receivers[i], candidates));
        EXPECT_LE(Finish(p, plan.sends, i), plan.deadline_seconds[i] * (1 + 1e-6) + 1e-12)
            << "round " << round << " task " << i;
        for (int j = 0; j < n; ++j) {
          EXPECT_FALSE(plan.sends.at(i, i));
          EXPECT_FALSE(plan.additions.at(i, j) && !plan.sends.at(i, j));
          if (i != p.ready) {
            EXPECT_FALSE(plan.sends.at(i, j) && !p.in_flight.at(i, j));
          }
          EXPECT_FALSE(plan.sends.at(i, j) && dropped.at(i, j)) << "re-added " << i << "->" << j;
          if (plan.preempted.at(i, j)) {
            EXPECT_TRUE(p.in_flight.at(i, j));
            dropped.set(i, j, true);
            ++preemptions;
          }
        }
      }
      // Carry the decision forward: chosen pairs are in flight, kappa's with its full volume.
      for (int j = 0; j < n; ++j) {
        if (plan.sends.at(p.ready, j)) {
          StartFlight(p, p.ready, j, p.links.volume[p.ready]);
          p.pinned.set(p.ready, j, history.Forced(p.ready, j, round));
        }
      }
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) p.in_flight.set(i, j, plan.sends.at(i, j));
      }
      PairMatrix ready_row(n);
      for (int j = 0; j < n; ++j) ready_row.set(p.ready, j, plan.sends.at(p.ready, j));
      history.Record(ready_row, round);
    }
    EXPECT_GT(preemptions, 0);  // the invariants were exercised
  }
}

}  // namespace
}  // namespace syncopate::sync
