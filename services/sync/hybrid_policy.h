// Grouped hybrid sync: trainers are grouped by measured speed (an EWMA of compute seconds per
// step); inside a group they run BSP (a group round closes when every member has pushed and all
// members pull that round's snapshot); groups update the global model asynchronously, so a slow
// group never holds up a fast one. Rounds are numbered across groups: each group close is the
// next round of the store.
//
// Grouping: sort live trainers by step time and cut where the ratio between neighbours is at least
// `split_ratio`, at the (max_groups - 1) largest such ratios. The job starts as one group (plain
// BSP) while speeds are measured; every `regroup_every` rounds a new grouping is proposed, and it
// is adopted only when the same proposal comes twice in a row (hysteresis). A trainer that joins a
// running job is a group of its own until the next regrouping.
#ifndef SYNCOPATE_SYNC_HYBRID_POLICY_H_
#define SYNCOPATE_SYNC_HYBRID_POLICY_H_

#include <map>
#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "sync/policy.h"
#include "sync/round_cuts.h"

namespace syncopate::sync {

struct HybridConfig {
  int max_groups = 2;
  double split_ratio = 1.5;
  int regroup_every = 8;
  // The step-size rule: kSumOverN (1/N of all live trainers), or kMean, the group's mean, as
  // published.
  Aggregation aggregation = Aggregation::kSumOverN;
  double ewma_alpha = 0.3;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

// Groups of trainer ids, fastest group first; within a group, fastest first.
using Grouping = std::vector<std::vector<TrainerId>>;

// The grouping rule above, on (trainer, seconds per step) pairs. Pure; exposed for tests.
Grouping GroupBySpeed(std::vector<std::pair<TrainerId, double>> step_seconds, int max_groups,
                      double split_ratio);

class HybridPolicy final : public ClockedPolicy {
 public:
  // Requires max_groups >= 1, split_ratio > 1, regroup_every >= 1, 0 < ewma_alpha <= 1.
  explicit HybridPolicy(HybridConfig config);

  std::string name() const override { return "hybrid"; }
  PushMode push_mode() const override { return PushMode::kRound; }
  int64_t staleness_bound() const override { return 0; }
  int GroupOf(TrainerId trainer) const override;
  int group_count() const override;

  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;
  void ObserveCompute(TrainerId trainer, int64_t clock, double compute_seconds) override;

  int64_t last_closed_round() const override { return last_closed_round_; }

  // Smoothed seconds per step; nullopt until two reports were observed.
  std::optional<double> StepSeconds(TrainerId trainer) const;

 private:
  void RecoverRounds(int64_t last_closed_round) override;
  // A resumed trainer rejoins group 0: the groups form again from speeds measured anew.
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;

  struct Speed {
    int64_t clock = 0;
    double compute_seconds = 0;
    std::optional<double> ewma;
  };

  Decisions Evaluate(absl::Time now);
  // Closes every group whose live members have all reported: O(groups) to find them.
  void CloseCompleteGroups(Decisions* decisions);
  void MaybeRegroup();
  // Keep group_, members_, reported_ and reported_in_ in step.
  void Assign(TrainerId trainer, int group);
  void Unassign(TrainerId trainer);
  void MarkReported(TrainerId trainer);
  void ClearReported(TrainerId trainer);

  const HybridConfig config_;
  RoundCuts cuts_;
  std::map<TrainerId, int> group_;
  absl::flat_hash_map<TrainerId, Speed> speed_;
  std::set<TrainerId> newcomers_;               // joined, first grant not yet sent
  absl::flat_hash_set<TrainerId> reported_;     // pushed and waiting for their group's round
  std::map<int, std::set<TrainerId>> members_;  // group -> its live members (no empty group)
  std::map<int, size_t> reported_in_;           // group -> how many of them are in reported_
  std::optional<std::set<std::set<TrainerId>>> proposal_;
  int next_group_ = 1;
  int closes_since_regroup_ = 0;
  int64_t last_closed_round_ = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_HYBRID_POLICY_H_
