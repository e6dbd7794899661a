// The sync coordinator's engine: membership (join, heartbeat, leave, eviction), the sync policy,
// and the actions its decisions imply (store membership, round closes, directives). gRPC-free: the
// session service feeds it events and drains each trainer's Outbox.
#ifndef SYNCOPATE_COORDINATOR_COORDINATOR_H_
#define SYNCOPATE_COORDINATOR_COORDINATOR_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/outbox.h"
#include "coordinator/progress_watch.h"
#include "coordinator/store_control.h"
#include "coordinator/store_queue.h"
#include "coordinator/trainer_book.h"
#include "coordinator/world_ranks.h"
#include "sync/membership.h"
#include "sync/policy.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::coordinator {

struct CoordinatorOptions {
  // A trainer silent for this long is evicted.
  absl::Duration eviction_timeout = absl::Seconds(5);
  // Liveness is progress: while another trainer has waited this long for its grant, a trainer
  // that holds its grant and has not reported a clock for this long (it heartbeats, but its
  // training is stuck) is evicted. Zero: never. Must exceed the slowest step.
  absl::Duration progress_timeout = absl::Seconds(60);
  // Told to trainers in Welcome; should be well below the eviction timeout.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // How often the action thread checks for expired trainers and retries failed store calls.
  absl::Duration tick = absl::Milliseconds(100);
  // A watchdog thread that makes no calls beats every `tick`; beats further apart than this mean
  // the coordinator itself did not run (its process was frozen, or starved of CPU): that time is
  // not held against the trainers' silence or progress, since their messages from it are still
  // on their way (a store call that blocks the action thread is not a pause). Infinite: never.
  absl::Duration pause_threshold = absl::Seconds(1);
  // Training is done once a reported test accuracy reaches this (0: never): every trainer, and any
  // that joins later, is told Done.
  double target_accuracy = 0;
  // Peer-to-peer modes: how long one exchange may wait for its peers (told to trainers).
  absl::Duration exchange_timeout = absl::Seconds(10);
  // How trainers compress what they send (told to trainers, and to the stores, which refuse another
  // codec): store modes' pushes, and for top-k the share of each tensor a push carries; the
  // peer-to-peer modes' exchanged models (bf16 or fp16 only).
  v1::Codec codec = v1::CODEC_NONE;
  double topk_ratio = 1;
  // How often the stores are asked who they are, to notice a shard that restarted while nothing
  // needed it; and how failed store calls are retried.
  absl::Duration store_probe_interval = absl::Seconds(1);
  base::BackoffOptions store_backoff;
  // A coordinator that finds a job under way on the stores (it restarted) waits this long for
  // the job's trainers to resume; those that do not are dropped from the job.
  absl::Duration recovery_window = absl::Seconds(10);
  // The status (GetStatus, `syncopate status`) keeps this many departed trainers, the latest: joins
  // under ever new names cannot grow it without bound.
  size_t departed_statuses_kept = 1000;
  // Pipelined grants, in the modes that allow them (SyncPolicy::pipelines_grants: bsp): an action
  // that closes rounds sends its grants first and closes its rounds on the stores meanwhile, so
  // the trainers' pulls travel while the round closes (a store shard holds a pull of a round it
  // has not closed until it closes it). False: the grants go out once every shard closed the
  // round.
  bool pipeline_grants = true;
  // Whether Start runs the action thread and the pause watchdog. False: nothing runs in the
  // background, and the caller steps the coordinator with RunActions (tests, on a fake clock).
  bool background_threads = true;
};

struct SessionKey {
  sync::TrainerId id = 0;
  uint64_t incarnation = 0;
};

// A test accuracy the evaluator reported, of the model it took `age_seconds` before.
struct Evaluation {
  double accuracy = 0;
  double age_seconds = 0;
};

// Thread-safe: events may come from any thread. Actions run on one internal thread, in the order
// the events produced them. A round is closed on every shard before any later action runs; its
// own grants go out while it closes (CoordinatorOptions::pipeline_grants) or once it closed.
class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, std::unique_ptr<sync::SyncPolicy> policy,
              StoreControl& stores, const base::Clock& clock, CoordinatorMetrics& metrics);
  ~Coordinator();

  // Asks the stores once whether a job is under way (this coordinator restarted: it then takes the
  // job over), and starts the action thread, which asks again until they answer. Call once.
  // Until the stores have answered, joins are refused with UNAVAILABLE (retry).
  void Start();
  // One turn of the action thread, on the caller's thread: the queued store actions (memberships,
  // round closes, then their directives), the periodic checks (a pause of the coordinator itself,
  // silent and stalled trainers, the recovery window, the policy's tick) and a store probe when
  // one is due. With background_threads false, the caller's steps are all that runs; with it true,
  // only the action thread may call it (one turn at a time).
  void RunActions() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops it; closes every outbox. Idempotent.
  void Stop();
  // Waits, up to `timeout` of real time, until the pause watchdog (or a turn of the action thread)
  // has beaten at `at` or later on this coordinator's clock; whether it has. For tests that run
  // the background threads on a fake clock.
  bool AwaitBeat(absl::Time at, absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // A trainer opened a session. Its Welcome, then Proceed directives, go to `outbox`.
  // INVALID_ARGUMENT for a join without a name; UNAVAILABLE (retry) before the stores answered or
  // while a job taken over waits for its trainers to resume. A join with `resume` (a trainer of
  // the job before this coordinator restarted) keeps its identity and clock: FAILED_PRECONDITION
  // when it is not a member the stores know, or the recovery window has passed. A new trainer gets
  // OUT_OF_RANGE (training is done) once training ends with a final average (Finish, or a final
  // round taken over from the stores, also while recovering). ALREADY_EXISTS when a live trainer
  // (heard from within two heartbeat intervals) holds the join's name or rank: two processes
  // started as one trainer are refused instead of evicting each other; a silent holder (a frozen
  // or vanished process under the same name) is replaced by the new incarnation.
  absl::StatusOr<SessionKey> Join(const v1::Join& join, std::shared_ptr<Outbox> outbox);
  // The trainer pushed `report.clock`. A report that breaks the protocol evicts the trainer.
  void Report(const SessionKey& key, const v1::ClockReport& report);
  // Keeps a live trainer from being evicted as silent and takes its timings; answers a heartbeat
  // that says awaiting_grant with a HeartbeatAck, unless the stores are failing.
  void Heartbeat(const SessionKey& key, const v1::Heartbeat& heartbeat);
  // `final_accuracy`: the evaluator's accuracy of the final average (taken from the evaluator
  // only, after a final round, when it passes the accuracy checks). `last`: an accuracy the
  // evaluator evaluated after its last report, taken as a report's.
  void Leave(const SessionKey& key, const std::string& reason,
             std::optional<double> final_accuracy = std::nullopt,
             std::optional<Evaluation> last = std::nullopt);
  // Ends training for `reason` (the target reached, an operator). In a mode with a final average
  // (SyncPolicy::BeginFinalAverage), with trainers live, they go on to its round, exchange with
  // everyone, and leave (state "done"); joins are refused from now on, and the job is done once no
  // trainer is left (none live or expected to resume). The final round goes to the stores with
  // the membership (Membership.job_end), so that a coordinator taking the job over ends it in that
  // round. Otherwise every trainer, and any that joins later, is told Done. Returns the final
  // round, 0 for none. Idempotent: a later call returns the first's answer (a final round taken
  // over from the stores counts as the first, reason included). INVALID_ARGUMENT for a reason
  // CheckFinishReason refuses, FAILED_PRECONDITION when the job failed, UNAVAILABLE (retry) while
  // a coordinator that took over a job not yet ending waits for its trainers.
  absl::StatusOr<int64_t> Finish(const std::string& reason);
  // The stream broke without a Leave: the trainer is treated as dead at once.
  void Disconnected(const SessionKey& key);

  v1::ClusterStatus Status() const;
  // The live trainers' gauges, computed now (O(live trainers)): what a scrape serves.
  std::vector<TrainerGauge> TrainerGauges() const;

 private:
  // Where this coordinator stands with the job: it has not heard from the stores yet, it took over
  // a job under way and waits for its trainers, or it runs.
  enum class Phase { kProbing, kRecovering, kRunning };

  struct Session {
    uint64_t incarnation = 0;
    std::shared_ptr<Outbox> outbox;
    std::string peer_address;  // peer-to-peer modes
    uint32_t rank = 0;
  };

  // OK unless a live trainer holds the name or the rank of `join` (Join's ALREADY_EXISTS).
  absl::Status CheckNameAndRankFree(const v1::Join& join, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A trainer of the job taken over resumes (Join with resume).
  absl::StatusOr<SessionKey> Resume(const v1::Join& join, std::shared_ptr<Outbox> outbox)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `member` into the job at `start_clock`: its session, its status, its Welcome, then
  // `decisions`.
  SessionKey Admit(const sync::Member& member, const v1::Join& join, std::shared_ptr<Outbox> outbox,
                   int64_t start_clock, sync::Decisions decisions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stores' first answer: a membership there means a job under way, which this coordinator
  // takes over (kRecovering), in its final round if the stores kept the job's end; none, a new job
  // (kRunning), or, with a job's end, a job that is done. A job's end that the mode cannot finish
  // fails the job.
  void TakeOverFromStores(const std::vector<ShardState>& shards) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the recovery: trainers expected and not resumed are out of the job.
  void EndRecovery() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Who may push: the live trainers and, while recovering, those expected to resume.
  std::vector<sync::Member> StoreMembers() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // How many trainers the job has (N of the step-size rule): those, live or expected.
  int JobSize() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Queues an action for the action thread, or delivers it at once when nothing waits before it:
  // all of it when it closes no round, its directives and grants (pipelined grants) when it does.
  void Enqueue(Action action) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends an action's directives and grants (its rounds are closed, or closing: pipelined).
  void Deliver(Action& action) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pipelined grants: delivers an action that closes rounds before they close, once (marks it
  // delivered), when the options and the policy allow it and every grant pulls a round.
  void DeliverBeforeClosing(Action& action) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EnqueueDecisions(sync::Decisions decisions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes a live trainer (leave, eviction) and re-evaluates the policy.
  void Depart(const SessionKey& key, const std::string& state, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Training is done once the job ending with a final average has no trainer left (none live, none
  // expected to resume), unless it failed.
  void MaybeDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's end for the stores to keep (Membership.job_end); nullopt until a final round began.
  std::optional<v1::JobEnd> JobEndToKeep() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Tells an evicted session why, closes its outbox and records its final state.
  void CloseSession(const SessionKey& key, const std::string& state, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a value trainer `id` stated passed `check`; a refusal is counted (label `what`) and
  // logged once per trainer and kind.
  bool Accept(sync::TrainerId id, const char* what, const absl::Status& check)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `evaluation` as the job's test accuracy when trainer `id` is the evaluator and it passes
  // the checks (else counts the refusal).
  void TakeAccuracy(sync::TrainerId id, const Evaluation& evaluation, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job-wide gauges (O(1): per-trainer ones are computed when scraped).
  void UpdateGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A live trainer's gauges as the policy has them now.
  TrainerGauge GaugeOf(sync::TrainerId id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Copies a live trainer's gauges into its status, where they stay once it departs. Call before
  // the policy forgets it.
  void KeepGauges(sync::TrainerId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Peer-to-peer modes: tells every remaining trainer that `id` is gone.
  void TellPeersGone(sync::TrainerId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finish, with mu_ held.
  int64_t EndTraining(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a Done directive for `outbox`.
  void SendDone(const std::shared_ptr<Outbox>& outbox) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The store request for a policy's round close (cuts resolved to incarnations).
  v1::CloseRoundRequest ToRequest(const sync::RoundClose& close) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  sync::TrainerId Evaluator() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A grant's peer exchange with the peers' addresses (peers gone since the decision are left out).
  v1::PeerExchange ExchangeOf(const sync::PeerExchange& exchange) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // The job cannot go on: every trainer is evicted with `reason`, and later joins are refused.
  void Fail(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void ActionLoop();
  void Tick() ABSL_LOCKS_EXCLUDED(mu_);
  // Beats the watchdog: a gap since the last beat over options_.pause_threshold is excused from
  // the trainers' silence and progress. Called by the watchdog and by every tick (whichever runs
  // first after a freeze).
  void ExcusePause(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WatchForPauses() ABSL_LOCKS_EXCLUDED(mu_);
  // Evicts trainers that hold others up without progress (options_.progress_timeout).
  void EvictStalled(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Carries out pending actions until one fails (retried after a backoff, membership first) or
  // none is left.
  void RunPending() ABSL_LOCKS_EXCLUDED(mu_);
  // Every store_probe_interval: asks the shards who they are; a restarted one is reconciled.
  void ProbeStores() ABSL_LOCKS_EXCLUDED(mu_);
  void StoreCallFailed(const std::string& what, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoreCallSucceeded() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Compares shard states with the last known ones. A new incarnation seen by a probe asks for a
  // reconciliation; one in a membership reply is a restart reconciled (counted with its lost
  // rounds). A shard that held a model and came back without one fails the job.
  void ObserveShards(const std::vector<ShardState>& shards, bool reconciled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  StoreControl& stores_;
  const base::Clock& clock_;
  CoordinatorMetrics& metrics_;
  const absl::Time started_at_;

  mutable absl::Mutex mu_;
  std::unique_ptr<sync::SyncPolicy> policy_ ABSL_GUARDED_BY(mu_);
  sync::Membership membership_ ABSL_GUARDED_BY(mu_);
  std::map<sync::TrainerId, Session> sessions_ ABSL_GUARDED_BY(mu_);
  // The sessions by (rank, id): their world ranks; the first is the evaluator.
  WorldRanks by_rank_ ABSL_GUARDED_BY(mu_);
  ProgressWatch progress_ ABSL_GUARDED_BY(mu_);
  // The store actions, the stores' membership's freshness, the backoff and the probe schedule.
  StoreQueue stores_queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Status of every live trainer and of the options_.departed_statuses_kept last departed.
  TrainerBook book_ ABSL_GUARDED_BY(mu_);
  // (trainer, what) whose refused values were logged (Accept).
  std::set<std::pair<sync::TrainerId, std::string>> refusals_logged_ ABSL_GUARDED_BY(mu_);
  int64_t rounds_closed_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<double> accuracy_ ABSL_GUARDED_BY(mu_);
  std::string done_reason_ ABSL_GUARDED_BY(mu_);  // non-empty once training is done
  // Training ended in a mode with a final average: its round (0: not), why it ended, and the
  // evaluator's accuracy of the average once it left with it.
  int64_t final_round_ ABSL_GUARDED_BY(mu_) = 0;
  std::string finish_reason_ ABSL_GUARDED_BY(mu_);
  std::set<sync::TrainerId> final_granted_ ABSL_GUARDED_BY(mu_);  // sent the final round's grant
  bool job_end_kept_ ABSL_GUARDED_BY(mu_) = false;  // the stores acknowledged the final round
  std::optional<double> final_accuracy_ ABSL_GUARDED_BY(mu_);
  double accuracy_at_ ABSL_GUARDED_BY(mu_) = 0;
  std::string failure_ ABSL_GUARDED_BY(mu_);  // non-empty once the job cannot go on

  // The stores, as the action thread last saw them.
  std::vector<ShardState> shards_ ABSL_GUARDED_BY(mu_);
  int64_t last_round_ ABSL_GUARDED_BY(mu_) = 0;  // last round closed on every shard
  absl::Time last_beat_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kProbing;
  // While recovering: the members the stores know that have not resumed yet, by id.
  std::map<sync::TrainerId, ShardMember> expected_ ABSL_GUARDED_BY(mu_);
  absl::Time recovery_ends_ ABSL_GUARDED_BY(mu_);
  bool recovered_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t trainers_resumed_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t trainers_not_resumed_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t store_restarts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t store_rounds_lost_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
  std::thread watchdog_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_COORDINATOR_H_
