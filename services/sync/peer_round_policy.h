// The peer-to-peer multicast modes: trainers exchange models with each other instead of pushing to
// the store. Rounds are bulk-synchronous: when every live trainer has reported clock c, each is
// granted with the exchange of round c (whom to send its model to, whom to expect models from), and
// then computes iteration c + 1. Who talks to whom is the planner's choice:
//   selmcast  SelMcast's greedy load balancing over the receivers' measured download rates, then
//             Pareto additions (Luo et al., TSC 2024), sent at low priority
//             (PeerExchange::low_priority_to); at least p receivers per sender
//   orpheus   p receivers at random (the baseline SelMcast is measured against)
// (dssync has no global barrier: dssync_policy.h.) Both multicast planners keep the k-round rule
// (every pair exchanges at least once per k+1 rounds). Bandwidth comes from the trainers' measured
// transfers (ObserveTransfers). A trainer that leaves releases the barrier; peers it was to
// exchange with stop waiting for it at the exchange deadline (the trainer side).
#ifndef SYNCOPATE_SYNC_PEER_ROUND_POLICY_H_
#define SYNCOPATE_SYNC_PEER_ROUND_POLICY_H_

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sync/bandwidth_estimator.h"
#include "sync/multicast_selection.h"
#include "sync/policy.h"
#include "sync/waiting_room.h"

namespace syncopate::sync {

struct PeerRoundConfig {
  std::string planner = "selmcast";     // selmcast or orpheus
  double min_receivers_fraction = 0.3;  // p = ceil(fraction * n)
  int k = 4;                            // the k-round rule
  // selmcast: a Pareto addition must leave this fraction of the estimated round spare on both of
  // its links (SelectSelMcast's pareto_margin). The rates are measured, so not exact: an addition
  // that fills the slow link to the estimate lengthened the round (bench/README.md).
  double pareto_margin = 0.1;
  uint64_t seed = 1;  // orpheus's random choices
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

class PeerRoundPolicy final : public ClockedPolicy {
 public:
  explicit PeerRoundPolicy(PeerRoundConfig config);

  std::string name() const override { return config_.planner; }
  PushMode push_mode() const override { return PushMode::kNone; }
  int64_t staleness_bound() const override { return 0; }

  // Into a job under way (a round was granted), a newcomer starts at the next round as if it had
  // reported it: its first grant is that round's exchange, in which at least one trained trainer
  // sends to it (the fastest uploader), so its first step starts from a trained model. At the
  // job's start it starts at the granted clock and is granted at once (it pulls the store's
  // initial model).
  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;
  int64_t last_closed_round() const override { return 0; }
  void ObserveTransfers(TrainerId trainer, const TransferSample& sample) override;
  const BandwidthEstimator* link_estimates() const override { return &bandwidth_; }

  // The last planned round's exchanges, by trainer (for status and tests).
  const std::map<TrainerId, PeerExchange>& last_plan() const { return last_plan_; }
  const BandwidthEstimator& bandwidth() const { return bandwidth_; }

 private:
  // A resumed trainer keeps its model (it pulls nothing). One that awaits the release of a round
  // the others already got (its grant was lost) is granted alone, without an exchange.
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  // Grants every waiter with round `clock_`'s exchange once all live members wait.
  void MaybeRelease(Decisions* decisions);
  void GrantNewcomers(absl::Time now, Decisions* decisions);
  std::map<TrainerId, PeerExchange> PlanMulticast(const std::vector<TrainerId>& members,
                                                  int64_t round);

  const PeerRoundConfig config_;
  BandwidthEstimator bandwidth_;
  std::mt19937_64 rng_;
  // Joined at the job's start (or while the gate was closed), first grant not yet sent; a joiner
  // of a job under way waits in waiting_ instead.
  std::set<TrainerId> newcomers_;
  std::set<TrainerId> resumed_;  // of newcomers_: resumed, so they keep their model
  // Joined a job under way, and no round has planned a sender to them yet.
  std::set<TrainerId> unfed_;
  WaitingRoom waiting_;        // reported the barrier clock (or joined at it), not granted yet
  int64_t granted_clock_ = 0;  // the clock every member was last granted at
  // The k-round rule's memory across membership changes: last round (sender, receiver) exchanged.
  std::map<std::pair<TrainerId, TrainerId>, int64_t> last_exchanged_;
  std::map<TrainerId, PeerExchange> last_plan_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_PEER_ROUND_POLICY_H_
