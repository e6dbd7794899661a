// DSSP: SSP whose bound each trainer may stretch within [s_lo, s_hi] (Zhao et al., ICDCS'19).
// Staleness is counted in pushes (clocks). A trainer within s_lo of the slowest proceeds. The
// fastest trainer, on the push that takes it past s_lo, asks the controller for r* extra
// iterations (0..s_hi - s_lo) from push intervals on the coordinator's clock; others wait until
// they are back within s_lo. Beyond the paper's pseudocode: exactly one grant per report, r* = 0
// on cold start, every waiter re-evaluated when a trainer leaves, and, under the default rule, a
// hard cap at s_hi.
//
// The two rules (docs/modes.md): kCapped never lets a trainer run more than s_hi clocks ahead of
// the slowest. kPaper is Algorithm 1 as published: when the fastest trainer has used its extra
// iterations and is still past s_lo, the controller is asked again, so the fastest trainer's lead
// has no bound (only trainers that are not the fastest are held at s_lo). Under a persistent
// straggler neither beats SSP: kCapped paces every trainer at the straggler's rate, like SSP(s_hi);
// under kPaper the fastest runs far ahead, but each r* = 0 makes it wait until it is back within
// s_lo (bench/docs/reproduce.md, "DSSP claim").
#ifndef SYNCOPATE_SYNC_DSSP_POLICY_H_
#define SYNCOPATE_SYNC_DSSP_POLICY_H_

#include <map>
#include <set>

#include "sync/dssp_controller.h"
#include "sync/policy.h"
#include "sync/waiting_room.h"

namespace syncopate::sync {

enum class DsspRule { kCapped, kPaper };

struct DsspConfig {
  int64_t s_lo = 3;
  int64_t s_hi = 15;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
  // The step-size rule: kSumOverN, or kSum as published.
  Aggregation aggregation = Aggregation::kSumOverN;
  DsspRule rule = DsspRule::kCapped;
};

class DsspPolicy final : public ClockedPolicy {
 public:
  // Requires 0 <= s_lo <= s_hi (checked by MakePolicy).
  explicit DsspPolicy(DsspConfig config);

  std::string name() const override { return "dssp"; }
  PushMode push_mode() const override { return PushMode::kImmediate; }
  // The hard cap; -1 (none) under the paper's rule.
  int64_t staleness_bound() const override {
    return config_.rule == DsspRule::kCapped ? config_.s_hi : -1;
  }
  int64_t BoundOf(TrainerId trainer) const override;
  double PushWeight(int live_trainers) const override {
    return ImmediatePushWeight(config_.aggregation, live_trainers);
  }

  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;

  int64_t last_closed_round() const override { return 0; }

 private:
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  struct Trainer {
    PushTimes pushes;
    // Extra iterations beyond s_lo still granted in the current excursion.
    int64_t remaining = 0;
    // The largest gap at which this trainer may still be granted (s_lo outside an excursion).
    int64_t bound = 0;
  };

  // Grants `trainer` if its gap allows, using the controller when it is the fastest.
  std::optional<Grant> Decide(TrainerId trainer);
  // The min-clock trainer whose next push is predicted last (that push is what lifts the minimum).
  TrainerId Slowest() const;
  // Grants every waiter now within s_lo.
  void GrantWaiters(absl::Time now, Decisions* decisions);

  const DsspConfig config_;
  std::map<TrainerId, Trainer> trainers_;
  WaitingRoom waiting_;
  int64_t floor_clock_ = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DSSP_POLICY_H_
