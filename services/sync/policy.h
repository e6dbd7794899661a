// The sync policy interface. A policy turns events (a trainer joined, reported a clock, left; time
// passed) into decisions (which rounds close, which trainers may proceed and what they pull). It
// owns no threads, sockets or clocks: the coordinator and the simulator feed it the same events.
#ifndef SYNCOPATE_SYNC_POLICY_H_
#define SYNCOPATE_SYNC_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/bandwidth_estimator.h"
#include "sync/clock_table.h"
#include "sync/start_gate.h"

namespace syncopate::sync {

// What a granted trainer pulls before its next iteration.
struct PullSpec {
  enum class Kind {
    kLive,   // the live model
    kRound,  // a published round snapshot
    kNone,   // nothing: keep training the local model (WBSP between rounds)
  };
  Kind kind = Kind::kLive;
  int64_t round = 0;  // for kRound
  // For kRound: the trainer's pushes up to this clock are in the round; later ones are still
  // pending and stay in its local model (-1: none of its pushes).
  int64_t includes_clock = -1;

  static PullSpec Live() { return {Kind::kLive, 0, -1}; }
  static PullSpec Round(int64_t r, int64_t includes_clock) {
    return {Kind::kRound, r, includes_clock};
  }
  static PullSpec None() { return {Kind::kNone, 0, -1}; }
  bool operator==(const PullSpec& o) const {
    return kind == o.kind && round == o.round && includes_clock == o.includes_clock;
  }
};

// The step-size rule: how far one trainer's delta moves the global model (docs/modes.md).
enum class Aggregation {
  // Each delta weighs 1/N, N = the job's trainers (at a round's close; for an immediate push, as
  // the coordinator last told the stores, which apply it): N trainer steps move the model as far as
  // one step along their mean, whatever the mode. The default of every store mode (and WBSP as
  // published).
  kSumOverN,
  // Round modes: sum(delta) / pushes in the round (BSP and hybrid as published).
  kMean,
  // Immediate modes: each delta weighs 1 (ASP, SSP and DSSP as published).
  kSum,
};

// The weight of an immediate push under `aggregation` (kSum: 1; otherwise 1/N, N >= 1).
inline double ImmediatePushWeight(Aggregation aggregation, int live_trainers) {
  return aggregation == Aggregation::kSum ? 1.0 : 1.0 / (live_trainers > 0 ? live_trainers : 1);
}

// A round to close on every store shard: it takes each listed trainer's pending pushes up to the
// given clock. Rounds are numbered 1, 2, ... across the whole job (and across groups).
struct RoundClose {
  int64_t round = 0;
  std::map<TrainerId, int64_t> cuts;
  Aggregation aggregation = Aggregation::kSumOverN;
  // For kSumOverN: every live trainer, not only those the round takes (a hybrid group's).
  int live_trainers = 0;
};

// The peer-to-peer modes' part of a grant: before computing its next iteration, the trainer sends
// its model to `send_to` and averages in the models that arrive from `receive_from` by the
// exchange deadline.
// `low_priority_to`: SelMcast's Pareto additions among `send_to`, sent at low priority (on the
// upload the others leave idle).
struct PeerExchange {
  int64_t round = 0;
  std::vector<TrainerId> send_to = {};
  std::vector<TrainerId> receive_from = {};
  std::set<TrainerId> low_priority_to = {};  // a subset of send_to
  bool operator==(const PeerExchange& o) const {
    return round == o.round && send_to == o.send_to && receive_from == o.receive_from &&
           low_priority_to == o.low_priority_to;
  }
};

// Permission for `trainer`, now at `clock`, to compute iteration clock + 1.
struct Grant {
  TrainerId trainer = 0;
  int64_t clock = 0;
  PullSpec pull;
  // The bound in force when granted (0 for BSP, -1 for none).
  int64_t staleness_bound = -1;
  // The trainer's group (hybrid, dssync); -1 when the mode has none.
  int group = -1;
  // Peer-to-peer modes: the exchange to do first.
  std::optional<PeerExchange> exchange = std::nullopt;
  // The exchange is the job's final average (BeginFinalAverage): the trainer takes no step after
  // it.
  bool final_average = false;
};

// selmcast-ssp: `sender` stops sending its round-`round` model to `receivers` (their transfers
// were preempted to make room for another multicast).
struct Preemption {
  TrainerId sender = 0;
  int64_t round = 0;
  std::vector<TrainerId> receivers;
  bool operator==(const Preemption& o) const {
    return sender == o.sender && round == o.round && receivers == o.receivers;
  }
};

// Decisions to carry out in order: first close the rounds (on every store shard), then send the
// preemptions and the grants (some pull those rounds).
struct Decisions {
  std::vector<RoundClose> close_rounds;
  std::vector<Preemption> preemptions;
  std::vector<Grant> grants;

  bool empty() const { return close_rounds.empty() && preemptions.empty() && grants.empty(); }
  void Append(Decisions other);
};

// A trainer that was a member before the coordinator restarted, as it reports itself and the
// stores know it.
struct Resumption {
  TrainerId trainer = 0;
  // The last clock it reported (or was about to report), or its start clock.
  int64_t clock = 0;
  // True: it waits for the grant of `clock`. False: it holds that grant and computes clock + 1.
  bool awaiting_grant = true;
  // Round modes: the clock up to which a closed round took its pushes (-1: none).
  int64_t last_cut = -1;
};

// Push semantics the trainers must use under a policy.
enum class PushMode {
  kImmediate,  // the store applies each delta at once with the trainer's weight
  kRound,      // the delta joins its round; the round's mean is applied when the round closes
  kNone,       // nothing goes to the store: trainers exchange models with each other (P2P modes)
};

// Not thread-safe: the caller serialises events.
class SyncPolicy {
 public:
  virtual ~SyncPolicy() = default;

  virtual std::string name() const = 0;
  virtual PushMode push_mode() const = 0;
  // The current staleness bound (-1: unbounded).
  virtual int64_t staleness_bound() const = 0;

  // A trainer joined. It starts at the returned clock; its first grant comes in some Decisions,
  // possibly later. FAILED_PRECONDITION if it is already a member.
  virtual absl::StatusOr<int64_t> OnJoin(TrainerId trainer, absl::Time now,
                                         Decisions* decisions) = 0;

  // The trainer finished and pushed iteration `clock`, and waits for a grant. Every report gets
  // exactly one grant unless the trainer leaves first. FAILED_PRECONDITION for an unknown trainer,
  // one that already waits, or a clock that is not its previous clock + 1.
  virtual absl::StatusOr<Decisions> OnClock(TrainerId trainer, int64_t clock, absl::Time now) = 0;

  // The trainer left or was evicted; waiters blocked on it are re-evaluated. Unknown: no-op.
  virtual Decisions OnLeave(TrainerId trainer, absl::Time now) = 0;

  // Time passed (for time-based rules such as the start timeout).
  virtual Decisions OnTick(absl::Time now) = 0;

  // Training ends. A mode with a final average (dssync) returns its round: one past every round a
  // member reached or was shuffled for, in which every member exchanges models with all the others
  // (those grants carry final_average). Members go on to it as before; nobody computes past it, and
  // joins are refused from now on. Idempotent: the same round again. nullopt (nothing changes)
  // when the mode has no final average.
  virtual std::optional<int64_t> BeginFinalAverage() { return std::nullopt; }
  // Whether BeginFinalAverage picks a round (the mode ends with a final average).
  virtual bool has_final_average() const { return false; }
  // Whether a round's grants may go out before the round closes on the stores (pipelined grants,
  // docs/faults.md): each pulls a round its decision closes, and a policy recovered after a
  // coordinator restart closes that round again from the trainers' resumed clocks alone, whether
  // they await their grants or hold them and pull.
  virtual bool pipelines_grants() const { return false; }
  // Whether a decision's grants may go out while the rounds it closes are being closed: the mode
  // pipelines grants, the decision closes a round, and every grant pulls a round (a live pull or
  // an exchange would read the model before the close).
  bool MayGrantWhileClosing(bool closes_rounds, const std::vector<Grant>& grants) const;
  // A coordinator that took over a job its predecessor was ending (the stores kept its final
  // round): the final round is `round`, as BeginFinalAverage had picked it, and everything after
  // is as after BeginFinalAverage. Call before any resume (before or after Recover).
  // FAILED_PRECONDITION (nothing changes) when the mode has no final average or has picked another
  // round; INVALID_ARGUMENT for a round below 1.
  virtual absl::Status ResumeFinalAverage(int64_t round);

  // The job was under way when this policy was made (the coordinator restarted): rounds up to
  // `last_closed_round` are closed on the stores, and `expected` trainers should resume. Decisions
  // wait for them, or for `window` after the first resumed, as at a start. Call once, before any
  // other event. An error when the mode cannot take over a job.
  virtual absl::Status Recover(int64_t last_closed_round, int expected, absl::Duration window) = 0;
  // A trainer of the job resumes (after Recover) where it was: at its clock, awaiting its grant or
  // computing. Its grant, if it awaits one, comes in some Decisions. FAILED_PRECONDITION if it is
  // a member already; INVALID_ARGUMENT for a negative clock or a cut past it.
  virtual absl::Status OnResume(const Resumption& resumption, absl::Time now,
                                Decisions* decisions) = 0;

  // Clock of a member; nullopt if unknown.
  virtual std::optional<int64_t> ClockOf(TrainerId trainer) const = 0;
  // Minimum clock over members; nullopt when there are none.
  virtual std::optional<int64_t> MinClock() const = 0;
  // Rounds closed so far (round snapshots only; 0 otherwise).
  virtual int64_t last_closed_round() const = 0;

  // Immediate-push modes: the weight of a push granted now, with `live_trainers` live (1 for
  // other modes; see Aggregation).
  virtual double PushWeight(int /*live_trainers*/) const { return 1.0; }
  // Trainers compute and communicate on separate threads (wbsp-overlap).
  virtual bool overlap_communication() const { return false; }
  // P2P modes: trainers send their multicast in the background while they compute (selmcast-ssp).
  virtual bool exchange_in_background() const { return false; }
  // The bound in force for one trainer (DSSP varies it per trainer).
  virtual int64_t BoundOf(TrainerId) const { return staleness_bound(); }
  // A trainer's group and the number of groups (hybrid); -1 and 0 when the mode has none.
  virtual int GroupOf(TrainerId) const { return -1; }
  virtual int group_count() const { return 0; }

  // The trainer's total compute seconds when it reported `clock` (call before OnClock). Policies
  // that group by speed use it; others ignore it.
  virtual void ObserveCompute(TrainerId, int64_t /*clock*/, double /*compute_seconds*/) {}
  // The trainer's transfers of its last exchange (call before OnClock). P2P modes plan with them.
  virtual void ObserveTransfers(TrainerId, const TransferSample&) {}
  // The link estimates the mode plans with, from ObserveTransfers (P2P modes): each trainer's
  // rates by direction and each pair's. nullptr where the mode measures no links.
  virtual const BandwidthEstimator* link_estimates() const { return nullptr; }
};

// The base of policies that keep a clock per member (every policy so far): the clock table, its
// accessors, the start gate, the checks every join and report must pass, and the steps every
// resume shares.
class ClockedPolicy : public SyncPolicy {
 public:
  std::optional<int64_t> ClockOf(TrainerId trainer) const override { return clocks_.Get(trainer); }
  std::optional<int64_t> MinClock() const override { return clocks_.Min(); }

  // The gate waits for the `expected` trainers (or `window`); the mode takes the round
  // (RecoverRounds).
  absl::Status Recover(int64_t last_closed_round, int expected, absl::Duration window) final;
  // Checks the resumption, notes it at the gate and sets the clock; then the mode's Resume.
  absl::Status OnResume(const Resumption& resumption, absl::Time now, Decisions* decisions) final;

 protected:
  ClockedPolicy(int min_trainers, absl::Duration start_timeout)
      : gate_(min_trainers, start_timeout) {}

  // The mode's part of Recover: rounds up to `last_closed_round` (>= 0) are closed on the stores.
  virtual void RecoverRounds(int64_t /*last_closed_round*/) {}
  // The mode's part of OnResume, once the trainer is a member at its clock.
  virtual void Resume(const Resumption& resumption, absl::Time now, Decisions* decisions) = 0;

  // FAILED_PRECONDITION when `trainer` is already a member.
  absl::Status CheckJoin(TrainerId trainer) const;
  // FAILED_PRECONDITION for a trainer that is not a member, one still awaiting its grant, or a
  // clock that is not its previous clock + 1.
  absl::Status CheckReport(TrainerId trainer, int64_t clock, bool awaiting_grant) const;

  ClockTable clocks_;
  // Holds the first grants until enough trainers joined (or resumed, after Recover).
  StartGate gate_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_H_
