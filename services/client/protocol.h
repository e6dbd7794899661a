// The worker protocol's messages as one trainer exchanges them, each timed, counted in the
// trainer's metrics (trainer_metrics.h) and recorded in its trace: offering the initial model,
// waiting for the coordinator's directive, pulling the model it names, pushing a delta, reporting
// a clock, exchanging models with peers, evaluating. It keeps no model: the session (session.h)
// decides the order of these steps for each mode family and owns the parameters.
#ifndef SYNCOPATE_CLIENT_PROTOCOL_H_
#define SYNCOPATE_CLIENT_PROTOCOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "client/background_evaluator.h"
#include "client/links.h"
#include "client/peer_link.h"
#include "client/session_options.h"
#include "client/trace_writer.h"
#include "client/trainer_metrics.h"

namespace syncopate::client {

// Totals since the trainer joined. compute + wait + push + pull + eval <= wall, except with
// overlapped communication, where push and pull run beside compute.
struct SessionTimings {
  double compute = 0, wait = 0, push = 0, pull = 0, eval = 0;
  double emulated_compute = 0;  // part of compute
};

// Thread-safe where it says so; otherwise one thread at a time (the session's caller, or its
// communication thread in the overlapped modes, never both at once).
class Protocol {
 public:
  // Exchanges in a row in which models arrived but neither this trainer nor any of them held mass,
  // before the mixing starts afresh: one such exchange may only mean that this round's senders
  // were other joiners (a trained sender's transfer missed the deadline, a group of joiners).
  static constexpr int kMasslessExchangesBeforeRestart = 3;
  // Every reference must outlive this; `peers` may be null where no peer-to-peer mode runs, and
  // its deadlines are times of `clock` (peer_link.h).
  Protocol(const SessionOptions& options, CoordinatorLink& coordinator, StoreLink& store,
           TrainerMetrics& metrics, TraceWriter& trace, const base::Clock& clock, PeerLink* peers);

  const v1::Welcome& welcome() const { return coordinator_.welcome(); }

  // Offers the initial model (every trainer offers the same; the first one's is kept) and starts
  // the heartbeats.
  absl::Status Begin(const tensor::TensorMap& initial);
  // Waits for the next Proceed, polling `stopping` at least every 200 ms. nullopt when `stopping`
  // said so or training is done (done() tells which). ABORTED when evicted, UNAVAILABLE when the
  // coordinator is gone, DEADLINE_EXCEEDED after directive_timeout without a directive of any
  // kind (CoordinatorLink::directives_heard: a HeartbeatAck counts).
  absl::StatusOr<std::optional<v1::Proceed>> AwaitProceed(const std::function<bool()>& stopping);
  // True once the coordinator said training is done. Thread-safe.
  bool done() const { return done_.load(); }
  // The trainers in the job and this one's place among them, by rank, as of the last grant (until
  // the first: this trainer alone). Thread-safe.
  struct World {
    int rank = 0;
    int size = 1;
  };
  World world() const { return world_.load(); }
  // Pulls the model `proceed` names (nullopt for pull.none) and, when it is due, evaluates it.
  absl::StatusOr<std::optional<PulledModel>> Pull(const v1::Proceed& proceed);
  // Pushes `delta` as clock `clock` the way the mode wants it (the store link may hold `delta`
  // until it is sent).
  absl::Status Push(tensor::SharedTensorMap delta, int64_t clock);
  // Reports clock `clock`: the timings, `loss`, the accuracy evaluated since the last report and,
  // in peer-to-peer modes, the last exchange's transfers.
  absl::Status Report(int64_t clock, float loss);
  // Peer-to-peer: sends `own` to the peers `proceed` names and averages in the models they sent
  // (by the exchange deadline); `own` becomes the average, which is evaluated when due. Under
  // selmcast-ssp and orpheus-ssp: averages in whatever has arrived and plans the multicast that
  // StartPlannedMulticast starts after the next step; a trainer that joined the job under way
  // first waits, up to the exchange timeout, until a peer's model with mass arrived, so that its
  // first step starts from it.
  absl::Status Exchange(const v1::Proceed& proceed, tensor::TensorMap& own);
  // selmcast-ssp, orpheus-ssp: whether the last exchange planned a multicast not started yet.
  bool multicast_planned() const { return planned_multicast_.has_value(); }
  // Starts that multicast, of `own`: the model after the step that followed the exchange, so that
  // the step counts at this trainer's whole mass, as in push-sum SGD (sent before it, the copies
  // would carry the model without the step, and the step would move the job's model by only the
  // share kept). Each receiver gets its share of the mass; the mass kept is traced ("multicast").
  // A no-op when none is planned. Call before reporting the step.
  void StartPlannedMulticast(tensor::TensorMap own);
  // Before a clean Leave, under a compressed job whose pushes apply at once: pushes `residual`
  // (what error feedback still holds, LocalModel::TakeResidual) as the trainer's last push, so
  // that no part of its steps is lost. A failure is logged; the trainer leaves anyway. Round modes
  // do not: a push outside the rounds would be late, so there the residual is not sent.
  void PushResidual(tensor::SharedTensorMap residual);
  // Before a clean Leave: re-sends what a store shard's restart lost of this trainer's pushes,
  // where it has not pushed to that shard since (StoreLink::ResendWhatRestartsLost). A failure is
  // logged; the trainer leaves anyway. A no-op in peer-to-peer modes.
  void ResendWhatRestartsLost();
  // Leaves the job (idempotent), with an accuracy reported since the last clock report. After a
  // final average whose accuracy the caller owes (final_accuracy_due), leaves as done, with
  // `final_accuracy` if given.
  void Leave(const std::string& reason, std::optional<double> final_accuracy = std::nullopt);
  // The reason a trainer leaves with after the final average.
  static constexpr char kFinalAverageDone[] = "training is done: the final average";
  // After the final average (`proceed.final_average`, its exchange done; Exchange does not
  // evaluate it): evaluates `average` when `proceed` asks this trainer to and it has an evaluation
  // function (at once, after an evaluation in progress), and leaves with its accuracy. Asked
  // without one (a library trainer evaluates itself), it leaves nothing yet: final_accuracy_due()
  // says so, and the caller's Leave carries the accuracy. done() is true from then on.
  void LeaveAfterFinalAverage(const v1::Proceed& proceed, const tensor::TensorMap& average);

  // Thread-safe. Time the caller spent computing (its steps) or waiting (for the session).
  // One step's compute: `real` on the caller's thread, then `emulated` slept (session_options.h).
  void AddCompute(absl::Duration real, absl::Duration emulated);
  void AddWait(absl::Duration d);
  void AddPull(absl::Duration d);
  // Thread-safe. Without SessionOptions::evaluate: whether the coordinator asked this trainer for
  // an evaluation that no ReportAccuracy has answered yet.
  bool evaluation_due() const;
  // Thread-safe. After the final average: the caller owes its accuracy, which its Leave carries.
  bool final_accuracy_due() const;
  // Thread-safe. An accuracy the caller evaluated, of the model it had at `taken_at` (default:
  // now), sent with the next report.
  void ReportAccuracy(double accuracy, std::optional<absl::Time> taken_at = std::nullopt);
  // Thread-safe.
  v1::TrainerTimings Timings() const;

 private:
  struct ExchangeOutcome {
    int received = 0;   // peers' models averaged in
    int missed = 0;     // transfers that failed, or models due that did not arrive in time
    int preempted = 0;  // transfers cancelled by the coordinator or superseded
  };
  absl::StatusOr<ExchangeOutcome> ExchangeInRound(const v1::PeerExchange& exchange,
                                                  tensor::TensorMap& own, absl::Time deadline);
  // Averages in what has arrived and plans the multicast StartPlannedMulticast starts.
  absl::StatusOr<ExchangeOutcome> ExchangeInBackground(const v1::PeerExchange& exchange,
                                                       tensor::TensorMap& own);
  // The mass this trainer mixes `received` in with: `kept`, or 1 on the
  // kMasslessExchangesBeforeRestart-th exchange in a row in which neither it nor any model that
  // arrived held mass (nobody in reach does: the mixing starts afresh).
  double OwnMass(double kept, const std::map<uint64_t, PeerModel>& received);
  // Now plus the exchange timeout the coordinator set (10 s when it set none).
  absl::Time ExchangeDeadline() const;
  // A push header naming this trainer (its id and incarnation) and nothing else.
  v1::PushHeader Identity() const;
  // Evaluates `model` with options_.evaluate on this thread and reports the accuracy.
  double EvaluateNow(const tensor::TensorMap& model);
  // Evaluates `model` (or marks an evaluation due) when `proceed` asks and eval_interval passed.
  void MaybeEvaluate(const v1::Proceed& proceed, const tensor::TensorMap& model);
  void AddTime(double SessionTimings::*field, absl::Duration d);
  // The Leave after the final average, with the evaluator's accuracy of it.
  static v1::Leave FinalLeave(std::optional<double> accuracy);
  // Moves the accuracy reported since the last report, and its model's age, into `message` (a
  // ClockReport or a Leave).
  template <typename Message>
  void MovePendingAccuracy(Message* message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SessionOptions& options_;
  CoordinatorLink& coordinator_;
  StoreLink& store_;
  TrainerMetrics& metrics_;
  TraceWriter& trace_;
  const base::Clock& clock_;
  PeerLink* const peers_;
  const absl::Time joined_at_;
  uint64_t sequence_ = 0;
  int64_t last_pushed_clock_ = 0;
  double push_weight_ = 0;  // of the last grant (0: none said)
  // Peer-to-peer modes: this trainer's push-sum mass (MixInto); 0 for a joiner until its peers'
  // models reach it.
  double mass_ = 1;
  // A joiner of a job under way whose first background exchange has not come yet: that exchange
  // waits for a peer's model (Exchange).
  bool await_peers_model_ = false;
  int massless_exchanges_ = 0;                         // in a row (OwnMass)
  std::optional<v1::PeerExchange> planned_multicast_;  // StartPlannedMulticast's
  std::atomic<bool> done_{false};
  std::atomic<World> world_{World{}};
  std::atomic<int64_t> last_compute_us_{0};  // the last step's, for the trace's push span
  v1::TransferReport transfers_;             // the last exchange's, for the next report

  mutable absl::Mutex mu_;
  SessionTimings timings_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> last_eval_ ABSL_GUARDED_BY(mu_);
  bool evaluation_due_ ABSL_GUARDED_BY(mu_) = false;
  // The final average is done and its accuracy due from the caller: the Leave waits for it.
  bool final_accuracy_due_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<double> accuracy_ ABSL_GUARDED_BY(mu_);  // for the next report
  absl::Time accuracy_taken_at_ ABSL_GUARDED_BY(mu_);    // when its model was taken
  // With SessionOptions::evaluate_in_background; declared last, so it stops first.
  std::unique_ptr<BackgroundEvaluator> evaluator_;
};

}  // namespace syncopate::client

#endif  // SYNCOPATE_CLIENT_PROTOCOL_H_
