// BSP, SSP(s) and ASP as one rule: a trainer at clock c may start iteration c+1 only while
// c - (minimum live clock) <= s. BSP is s = 0 with round snapshots (everyone pulls the same
// round-c model); ASP is s = infinity.
#ifndef SYNCOPATE_SYNC_BOUNDED_STALENESS_POLICY_H_
#define SYNCOPATE_SYNC_BOUNDED_STALENESS_POLICY_H_

#include <set>

#include "sync/policy.h"
#include "sync/round_cuts.h"
#include "sync/waiting_room.h"

namespace syncopate::sync {

struct BoundedStalenessConfig {
  std::string name = "ssp";
  // -1: unbounded (ASP).
  int64_t staleness = 3;
  // Close a round when every live trainer has pushed it, and make grants pull that round (BSP).
  bool round_snapshots = false;
  // The step-size rule: kSumOverN, or as published kMean (BSP) or kSum (ASP, SSP).
  Aggregation aggregation = Aggregation::kSumOverN;
  // Hold the first grants until this many trainers joined, or until start_timeout after the first
  // join, so a run does not start with whoever happened to connect first.
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

class BoundedStalenessPolicy final : public ClockedPolicy {
 public:
  explicit BoundedStalenessPolicy(BoundedStalenessConfig config);

  std::string name() const override { return config_.name; }
  PushMode push_mode() const override {
    return config_.round_snapshots ? PushMode::kRound : PushMode::kImmediate;
  }
  int64_t staleness_bound() const override { return config_.staleness; }
  // With round snapshots (bsp): a round closes once every clock is past it, held grants or not.
  bool pipelines_grants() const override { return config_.round_snapshots; }
  double PushWeight(int live_trainers) const override {
    return config_.round_snapshots ? 1.0 : ImmediatePushWeight(config_.aggregation, live_trainers);
  }

  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;

  int64_t last_closed_round() const override { return last_closed_round_; }

 private:
  void RecoverRounds(int64_t last_closed_round) override;
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  // Closes every round that all live trainers have pushed and grants every waiter within the bound
  // (furthest behind first), touching only the waiters it grants.
  Decisions Evaluate(absl::Time now);

  const BoundedStalenessConfig config_;
  WaitingRoom waiting_;
  RoundCuts cuts_;
  // Round 0 is the initial model.
  int64_t last_closed_round_ = 0;
  // The minimum clock when the table last had members: where a trainer joining an empty job starts.
  int64_t floor_clock_ = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_BOUNDED_STALENESS_POLICY_H_
