// DS-Sync as published (Wang et al., 2020): every round the trainers are shuffled into groups (by
// the job's seed, DsSyncGroups; trainers behind slow links go to different groups), and each group
// synchronises on its own. A trainer that reported clock c is granted round c's exchange with its
// round-c group as soon as every live member of that group has reported c, whatever the other
// groups do: there is no global barrier. A straggler holds up the groups it is in, and through
// them, as the groups reshuffle, the others a few rounds later: the fast trainers run ahead by a
// few rounds instead of waiting every round (docs/modes.md).
#ifndef SYNCOPATE_SYNC_DSSYNC_POLICY_H_
#define SYNCOPATE_SYNC_DSSYNC_POLICY_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sync/bandwidth_estimator.h"
#include "sync/dssync_grouping.h"
#include "sync/policy.h"

namespace syncopate::sync {

struct DsSyncConfig {
  int groups = 2;  // per round
  // kEqual: sizes differ by at most one; kBandwidth: groups holding a slow link are smaller, by
  // the measured rates (DsSyncGroups). Trainers not measured yet count at the median.
  GroupSizing sizing = GroupSizing::kEqual;
  // Every this many rounds, one group of all trainers (DsSyncOptions::global_average_every); 0:
  // never.
  int64_t global_average_every = 0;
  // Bandwidth-aware: a trainer whose slower direction is below this fraction of the median
  // trainer's is "slow" and kept apart from the other slow ones.
  double slow_fraction = 0.5;
  uint64_t seed = 1;  // the shuffle's
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

class DsSyncPolicy final : public ClockedPolicy {
 public:
  explicit DsSyncPolicy(DsSyncConfig config);

  std::string name() const override { return "dssync"; }
  PushMode push_mode() const override { return PushMode::kNone; }
  int64_t staleness_bound() const override { return -1; }  // groups wait, the job does not
  // The group of the trainer's last grant, and the groups of the newest round shuffled (1 for a
  // global average round).
  int GroupOf(TrainerId trainer) const override;
  int group_count() const override { return group_count_; }

  // Into a job under way (a member reported a clock), a newcomer starts one past the newest clock
  // any member reached (or the newest round shuffled, if its trainer left), as if it had reported
  // that clock: that round's groups, shuffled then, include it, and its first grant is its group's
  // exchange, so that it takes its group's trained models before its first step. At the job's
  // start it starts at the newest clock and is granted at once (it pulls the store's initial
  // model). Either way it is in the groups of every later round. Joiners of one burst start one
  // round apart: the first one's round is shuffled as it joins, so the next starts past it.
  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;
  // The final round is one group of the members when its first trainer reaches it (the paper's
  // final average, so that the job ends with one model). A report past it is refused, and so is
  // a join once it was chosen.
  std::optional<int64_t> BeginFinalAverage() override;
  bool has_final_average() const override { return true; }
  absl::Status ResumeFinalAverage(int64_t round) override;
  int64_t last_closed_round() const override { return 0; }
  void ObserveTransfers(TrainerId trainer, const TransferSample& sample) override;
  const BandwidthEstimator* link_estimates() const override { return &bandwidth_; }

 private:
  // A round's groups: each trainer's group index, and the groups' members.
  struct Grouping {
    std::vector<std::vector<TrainerId>> groups;
    absl::flat_hash_map<TrainerId, int> group_of;
  };

  // A resumed trainer keeps its model (it pulls nothing). One that awaits a round whose group went
  // on without it (its grant was lost) is granted with the members still waiting, or alone.
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  // The newest clock a member reached, or the newest round shuffled if later (its trainer left
  // since); 0 before any.
  int64_t NewestRound() const;
  // Round `round`'s groups, shuffled over the members when first asked for.
  const Grouping& GroupsOf(int64_t round);
  // Grants `trainer`'s group of the round it waits at, if every live member reached that round.
  void MaybeRelease(TrainerId trainer, Decisions* decisions);
  // MaybeRelease for every waiter.
  void ReleaseAll(Decisions* decisions);
  void GrantNewcomers(absl::Time now, Decisions* decisions);
  // Groupings no member can still need: every member is past their round.
  void ForgetOldRounds();

  const DsSyncConfig config_;
  BandwidthEstimator bandwidth_;
  // Joined at the job's start (or while the gate was closed), first grant not yet sent; a joiner
  // of a job under way waits in waiting_ instead.
  std::set<TrainerId> newcomers_;
  absl::flat_hash_map<TrainerId, int64_t> waiting_;  // reported (or joined at) this clock, not
                                                     // granted yet
  std::map<int64_t, Grouping> groupings_;            // by round
  absl::flat_hash_map<TrainerId, int> group_of_;     // of each trainer's last grant
  int group_count_ = 0;
  std::optional<int64_t> final_round_;  // once BeginFinalAverage was called
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_DSSYNC_POLICY_H_
