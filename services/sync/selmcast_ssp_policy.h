// selmcast-ssp: SelMcast's online variant under stale-synchronous parallel (Luo et al., TSC 2024,
// Algorithm 2). A trainer at clock c may compute iteration c+1 while c - (minimum live clock) <= s.
// Each grant carries the trainer's multicast of its clock-c model: SelectSelMcastOnline picks its
// receivers from the live bandwidth estimates, and may preempt receivers of multicasts still in
// flight (Decisions::preemptions), except nearly-delivered ones (< eta of the model left) and the
// pairs the k-round rule required. Trainers send in the background while they compute, and average
// whatever models have arrived before each iteration. A multicast runs until it is delivered or
// preempted: a trainer's next grant does not cancel it. Where the new multicast takes a receiver
// again, the earlier transfer is kept if it is nearly delivered (< eta of the model left), and the
// new model skips that receiver; otherwise the newer model supersedes the older on that pair. With
// the "orpheus" planner (orpheus-ssp, the baseline) the same policy draws each multicast's
// receivers at random (SelectOrpheusOnline) and preempts nothing.
//
// What the policy estimates, from its own event times and the trainers' reports:
//   - a transfer's remaining bytes: the model's bytes less the pair's planned rate (the sender's
//     upload split over its transfers, the receiver's download split over its senders) times the
//     time since the grant; a transfer with nothing left by that estimate counts as delivered;
//   - tau_i, the time before trainer i could start its next multicast anyway: the rest of its
//     current iteration (smoothed report-minus-grant time), or, while the bound holds it back, the
//     rest of the slowest trainer's iteration;
//   - a transfer counts from the grant, although the trainer starts it after the step that
//     follows (the model must carry that step): the estimate runs one iteration early;
//   - the model's bytes: bytes sent per completed model transfer, as reported.
// The planner sees one multicast per trainer: while a trainer's new multicast is planned, what is
// left of its earlier ones (on receivers the new one does not take) is not counted in its
// receivers' loads; it takes a share of the upload from the new transfers, while its own planned
// rate stays as it was.
#ifndef SYNCOPATE_SYNC_SELMCAST_SSP_POLICY_H_
#define SYNCOPATE_SYNC_SELMCAST_SSP_POLICY_H_

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sync/bandwidth_estimator.h"
#include "sync/online_multicast_selection.h"
#include "sync/policy.h"

namespace syncopate::sync {

struct SelMcastSspConfig {
  // "selmcast" (SelectSelMcastOnline: the mode selmcast-ssp) or "orpheus" (SelectOrpheusOnline:
  // orpheus-ssp, the baseline, whose receivers are drawn with `seed`).
  std::string planner = "selmcast";
  uint64_t seed = 1;
  int64_t staleness = 4;
  double eta = 0.75;
  // Planner "selmcast" only: SelectSelMcastOnline's pareto_margin, the same default as
  // PeerRoundConfig::pareto_margin's (the rates are measured, so not exact).
  double pareto_margin = 0.1;
  double min_receivers_fraction = 0.3;
  int k = 4;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);
};

class SelMcastSspPolicy final : public ClockedPolicy {
 public:
  explicit SelMcastSspPolicy(SelMcastSspConfig config);

  std::string name() const override { return config_.planner + "-ssp"; }
  PushMode push_mode() const override { return PushMode::kNone; }
  int64_t staleness_bound() const override { return config_.staleness; }
  bool exchange_in_background() const override { return true; }

  // A trainer joins at the minimum live clock. At the job's start (that clock is 0) it pulls the
  // store's initial model, and its first multicast comes with its next grant. Into a job under
  // way its model is untrained (these modes never update the store's): its first grant is a
  // multicast like any other, and the next multicast planned for a trainer that was not such a
  // joiner sends to it, as if the k-round rule required the pair (so it is never preempted). Its
  // session waits for that model before its first step (Protocol::Exchange).
  absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now, Decisions* decisions) override;
  absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) override;
  // Its multicast ends and it is no longer anyone's receiver; waiters it held back are granted.
  Decisions OnLeave(TrainerId trainer, absl::Time now) override;
  Decisions OnTick(absl::Time now) override;
  int64_t last_closed_round() const override { return 0; }
  void ObserveTransfers(TrainerId trainer, const TransferSample& sample) override;
  const BandwidthEstimator* link_estimates() const override { return &bandwidth_; }

  // The receivers `sender`'s multicasts are still sending to (of any of its rounds), for tests and
  // status.
  std::vector<TrainerId> ReceiversOf(TrainerId sender) const;
  // Preemptions so far.
  int64_t preempted_transfers() const { return preempted_transfers_; }

 private:
  // A resumed trainer keeps its model; awaiting a grant, it gets a multicast like any waiter.
  void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) override;
  // One receiver of a multicast in flight.
  struct Transfer {
    int64_t round = 0;
    absl::Time start;
    double rate = 0;      // planned bytes/s
    bool pinned = false;  // forced by the k-round rule
    // The pair's previous last exchange, restored if it is preempted (it did not synchronize).
    int64_t previous_exchange = -1;
  };
  using Transfers = std::map<TrainerId, Transfer>;  // receiver -> its transfer

  Decisions Evaluate(absl::Time now);
  // Plans `trainer`'s multicast of round `round` and preempts in-flight receivers it displaces.
  PeerExchange PlanMulticast(TrainerId trainer, int64_t round, absl::Time now,
                             Decisions* decisions);
  double Tau(TrainerId trainer, absl::Time now) const;
  // Bytes still to deliver on `transfer`, by its planned rate.
  double Remaining(const Transfer& transfer, absl::Time now) const;
  // Forgets the transfers delivered by now (by Remaining).
  void RetireDelivered(absl::Time now);
  // Forgets senders with no transfer left.
  void EraseEmptyRows();
  double ModelBytes() const { return model_bytes_ > 0 ? model_bytes_ : 1.0; }

  const SelMcastSspConfig config_;
  std::mt19937_64 rng_;  // orpheus-ssp's draws
  BandwidthEstimator bandwidth_;
  std::set<TrainerId> waiting_;    // reported (or joined), not granted yet
  std::set<TrainerId> newcomers_;  // joined, first grant (a pull, no multicast) not sent yet
  // Joined a job under way; no multicast from a trained trainer planned to reach them yet.
  std::set<TrainerId> unfed_;
  std::map<TrainerId, absl::Time> granted_at_;
  std::map<TrainerId, double> iteration_seconds_;  // smoothed report - grant
  std::map<TrainerId, Transfers> in_flight_;       // sender -> its transfers in flight
  std::map<TrainerId, int64_t> newest_round_;      // sender -> the round of its last multicast
  std::map<std::pair<TrainerId, TrainerId>, int64_t> last_exchanged_;  // (sender, receiver)
  double model_bytes_ = 0;
  int64_t floor_clock_ = 0;
  int64_t preempted_transfers_ = 0;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_SELMCAST_SSP_POLICY_H_
