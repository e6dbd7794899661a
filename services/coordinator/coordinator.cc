// The coordinator's sessions: joins (new, resumed, replacing an incarnation), reports,
// heartbeats and departures. The action thread's work is in coordinator_actions.cc, the job's
// takeover, recovery and end in coordinator_job.cc, its status and gauges in
// coordinator_status.cc.
#include "coordinator/coordinator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "coordinator/trainer_input.h"
#include "rpc/identity.h"
#include "spdlog/spdlog.h"

namespace syncopate::coordinator {
Coordinator::Coordinator(CoordinatorOptions options, std::unique_ptr<sync::SyncPolicy> policy,
                         StoreControl& stores, const base::Clock& clock,
                         CoordinatorMetrics& metrics)
    : options_(options),
      stores_(stores),
      clock_(clock),
      metrics_(metrics),
      started_at_(clock.Now()),
      policy_(std::move(policy)),
      stores_queue_(options.store_backoff, started_at_),
      book_(options.departed_statuses_kept) {
  absl::MutexLock lock(&mu_);
  metrics_.staleness_bound.Set(static_cast<double>(policy_->staleness_bound()));
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Start() {
  ProbeStores();
  {
    // Pauses count from here, not from the watchdog's first beat a tick later: a coordinator
    // frozen before that beat does not hold the gap against the trainers either.
    absl::MutexLock lock(&mu_);
    last_beat_ = clock_.Now();
  }
  if (!options_.background_threads) return;
  thread_ = std::thread([this] { ActionLoop(); });
  watchdog_ = std::thread([this] { WatchForPauses(); });
}

void Coordinator::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [id, session] : sessions_) session.outbox->Close();
  }
  if (thread_.joinable()) thread_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

absl::StatusOr<SessionKey> Coordinator::Join(const v1::Join& join, std::shared_ptr<Outbox> outbox) {
  if (absl::Status s = CheckJoin(join); !s.ok()) return s;
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  // Checked before anything changes: a refused join leaves the membership as it was.
  if (!failure_.empty()) return absl::FailedPreconditionError("the job failed: " + failure_);
  if (phase_ == Phase::kProbing) {
    return absl::UnavailableError(
        "the coordinator is starting: it has not reached the stores yet; join again shortly");
  }
  if (policy_->push_mode() == sync::PushMode::kNone && join.peer_address().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mode ", policy_->name(), " exchanges models between trainers: '", join.name(),
                     "' must join with the address of its Peer service"));
  }
  if (join.has_resume()) return Resume(join, std::move(outbox));
  if (final_round_ > 0) {
    // As a Done directive is, for a trainer that would join a finished job (its pod restarted).
    return absl::OutOfRangeError(absl::StrCat("training is done: its trainers average",
                                              done_reason_.empty() ? "" : "d",
                                              " their models in round ", final_round_));
  }
  if (phase_ == Phase::kRecovering) {
    return absl::UnavailableError(
        "the coordinator is taking over a job under way and waits for its trainers to resume; "
        "join again shortly");
  }
  if (absl::Status free = CheckNameAndRankFree(join, now); !free.ok()) return free;
  absl::StatusOr<sync::JoinResult> joined = membership_.Join(join.name(), join.rank(), now);
  if (!joined.ok()) return joined.status();
  const sync::Member& member = joined->member;
  if (joined->replaced) {
    // A restarted trainer came back before its old incarnation was evicted. The stores hear of
    // the new incarnation before anyone is told of the old one's departure.
    stores_queue_.MembershipChanged();
    KeepGauges(member.id);
    EnqueueDecisions(policy_->OnLeave(member.id, now));
    CloseSession({member.id, joined->replaced->incarnation}, "evicted",
                 "replaced by a new incarnation");
    TellPeersGone(member.id);
  }
  sync::Decisions decisions;
  absl::StatusOr<int64_t> start = policy_->OnJoin(member.id, now, &decisions);
  if (!start.ok()) return start.status();
  stores_queue_.MembershipChanged();
  metrics_.joins.Increment();
  spdlog::info("trainer '{}' (rank {}) joined as id {} incarnation {} at clock {}", member.name,
               join.rank(), member.id, member.incarnation, *start);
  return Admit(member, join, std::move(outbox), *start, std::move(decisions));
}

absl::StatusOr<SessionKey> Coordinator::Resume(const v1::Join& join,
                                               std::shared_ptr<Outbox> outbox) {
  const absl::Time now = clock_.Now();
  const v1::Resume& r = join.resume();
  auto expected = expected_.find(r.trainer_id());
  if (expected == expected_.end() || expected->second.incarnation != r.incarnation()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", join.name(), "' (id ", r.trainer_id(), " incarnation ", r.incarnation(),
        ") cannot resume: it is not a trainer this coordinator waits for (its session ended, or "
        "the recovery window passed); join as a new trainer"));
  }
  // The stores named the member: only the same name takes it back (a trainer cannot take over
  // another's session by guessing its id and incarnation).
  if (!expected->second.name.empty() && expected->second.name != join.name()) {
    return absl::PermissionDeniedError(
        absl::StrCat(rpc::Quoted(join.name()), " cannot resume trainer id ", r.trainer_id(),
                     ": it was ", rpc::Quoted(expected->second.name)));
  }
  absl::StatusOr<sync::Member> member =
      membership_.Restore(r.trainer_id(), r.incarnation(), join.name(), join.rank(), now);
  if (!member.ok()) return member.status();
  sync::Decisions decisions;
  const sync::Resumption resumption{member->id, r.clock(), r.awaiting_grant(),
                                    expected->second.last_cut};
  if (absl::Status s = policy_->OnResume(resumption, now, &decisions); !s.ok()) {
    membership_.Remove(member->id, member->incarnation).IgnoreError();
    return s;
  }
  expected_.erase(expected);
  // It holds the final round's grant from the coordinator before: it finishes the job.
  if (final_round_ > 0 && r.clock() == final_round_ && !r.awaiting_grant()) {
    final_granted_.insert(member->id);
  }
  // The stores learn its name again (a shard restarted with the coordinator knows none).
  stores_queue_.MembershipChanged();
  ++trainers_resumed_;
  metrics_.resumes.Increment();
  spdlog::info("trainer '{}' (id {} incarnation {}) resumed at clock {} ({})", member->name,
               member->id, member->incarnation, r.clock(),
               r.awaiting_grant() ? "awaiting its grant" : "computing");
  const SessionKey key = Admit(*member, join, std::move(outbox), r.clock(), std::move(decisions));
  if (expected_.empty()) EndRecovery();
  return key;
}

SessionKey Coordinator::Admit(const sync::Member& member, const v1::Join& join,
                              std::shared_ptr<Outbox> outbox, int64_t start_clock,
                              sync::Decisions decisions) {
  sessions_[member.id] = Session{member.incarnation, outbox, join.peer_address(), join.rank()};
  by_rank_.Add(join.rank(), member.id);
  progress_.Admitted(member.id, clock_.Now(),
                     std::any_of(decisions.grants.begin(), decisions.grants.end(),
                                 [&](const sync::Grant& g) { return g.trainer == member.id; }));
  book_.Admit(member, join.rank(), start_clock, join.slowdown());

  v1::Directive welcome;
  v1::Welcome* w = welcome.mutable_welcome();
  w->set_trainer_id(member.id);
  w->set_incarnation(member.incarnation);
  w->set_mode(policy_->name());
  for (const std::string& address : stores_.addresses()) w->add_store_addresses(address);
  w->set_heartbeat_interval_seconds(absl::ToDoubleSeconds(options_.heartbeat_interval));
  w->set_push_mode(ApplyModeOf(policy_->push_mode()));
  w->set_start_clock(start_clock);
  w->set_overlap_communication(policy_->overlap_communication());
  w->set_peer_to_peer(policy_->push_mode() == sync::PushMode::kNone);
  w->set_exchange_timeout_seconds(absl::ToDoubleSeconds(options_.exchange_timeout));
  w->set_exchange_in_background(policy_->exchange_in_background());
  w->set_codec(options_.codec);
  w->set_topk_ratio(options_.topk_ratio);
  Action action;
  action.sends.emplace_back(outbox, std::move(welcome));
  Enqueue(std::move(action));
  EnqueueDecisions(std::move(decisions));
  if (!done_reason_.empty()) SendDone(outbox);
  UpdateGauges();
  return SessionKey{member.id, member.incarnation};
}

void Coordinator::Report(const SessionKey& key, const v1::ClockReport& report) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (!membership_.Touch(key.id, key.incarnation, now).ok()) return;
  progress_.Reported(key.id, now);
  const bool timings_valid = Accept(key.id, "timings", CheckTimings(report.timings()));
  if (timings_valid) {
    policy_->ObserveCompute(key.id, report.clock(), report.timings().compute_seconds());
  }
  if (report.has_transfers() && Accept(key.id, "transfers", CheckTransfers(report.transfers()))) {
    policy_->ObserveTransfers(key.id, TransferSampleOf(report.transfers()));
    v1::TrainerStatus& status = book_.Of(key.id);
    status.set_models_delivered(status.models_delivered() + report.transfers().models_sent());
  }
  absl::StatusOr<sync::Decisions> decisions = policy_->OnClock(key.id, report.clock(), now);
  if (!decisions.ok()) {
    spdlog::warn("evicting trainer {}: {}", key.id, decisions.status().ToString());
    metrics_.evictions.Add({{"reason", "protocol"}}).Increment();
    Depart(key, "evicted", std::string(decisions.status().message()));
    return;
  }
  book_.Of(key.id).set_clock(report.clock());
  if (timings_valid) book_.SetTimings(key.id, report.timings());
  if (report.has_test_accuracy()) {
    TakeAccuracy(key.id, {report.test_accuracy(), report.test_accuracy_age_seconds()}, now);
  }
  EnqueueDecisions(*std::move(decisions));
  // (Not while a job taken over waits for its trainers: the final round must follow every clock.
  // The next report after the recovery ends it.)
  if (options_.target_accuracy > 0 && accuracy_ && *accuracy_ >= options_.target_accuracy &&
      phase_ == Phase::kRunning) {
    EndTraining(absl::StrCat("test accuracy ", *accuracy_, " reached the target ",
                             options_.target_accuracy));
  }
  UpdateGauges();
}

void Coordinator::Heartbeat(const SessionKey& key, const v1::Heartbeat& heartbeat) {
  absl::MutexLock lock(&mu_);
  if (!membership_.Touch(key.id, key.incarnation, clock_.Now()).ok()) return;
  if (Accept(key.id, "timings", CheckTimings(heartbeat.timings()))) {
    book_.SetTimings(key.id, heartbeat.timings());
  }
  if (progress_.SetPaused(key.id, heartbeat.paused(), clock_.Now())) {
    spdlog::info("trainer {} {} its training", key.id, heartbeat.paused() ? "paused" : "resumed");
  }
  // A trainer held by its mode hears that this coordinator is alive (HeartbeatAck). Order with the
  // other directives does not matter: the trainer only notes it. Not while the stores fail: the job
  // cannot move then, and a long outage must still reach the trainers as their directive timeout.
  if (heartbeat.awaiting_grant() && !stores_queue_.failing()) {
    if (auto it = sessions_.find(key.id);
        it != sessions_.end() && it->second.incarnation == key.incarnation) {
      v1::Directive ack;
      ack.mutable_heartbeat_ack();
      it->second.outbox->Send(std::move(ack));
    }
  }
}

bool Coordinator::Accept(sync::TrainerId id, const char* what, const absl::Status& check) {
  if (check.ok()) return true;
  metrics_.refused.Add({{"what", what}}).Increment();
  // Logged once per trainer and kind: a trainer that keeps sending them cannot flood the log.
  if (refusals_logged_.insert({id, what}).second) {
    spdlog::warn("trainer {} ('{}') reported invalid {}, ignored (and from now on silently): {}",
                 id, book_.NameOf(id), what, std::string(check.message()));
  }
  return false;
}

absl::Status Coordinator::CheckNameAndRankFree(const v1::Join& join, absl::Time now) {
  // Alive: heard from within two heartbeats. A trainer silent for longer (a frozen process, a pod
  // whose node went away) may be replaced by a new incarnation before its eviction.
  const absl::Duration alive = 2 * options_.heartbeat_interval;
  std::optional<sync::Member> holder = membership_.FindByName(join.name());
  if (!holder) {
    if (std::optional<sync::TrainerId> id = by_rank_.AtRank(join.rank())) {
      holder = membership_.Find(*id);
    }
  }
  if (!holder || now - holder->last_seen > alive) return absl::OkStatus();
  metrics_.refused.Add({{"what", "join_taken"}}).Increment();
  const bool same_name = holder->name == join.name();
  return absl::AlreadyExistsError(absl::StrCat(
      same_name ? absl::StrCat("trainer name '", join.name(), "'")
                : absl::StrCat("rank ", join.rank(), " (of trainer '", holder->name, "')"),
      " is held by a live trainer (id ", holder->id, ", heard from ",
      absl::FormatDuration(absl::Trunc(now - holder->last_seen, absl::Milliseconds(1))),
      " ago): give each trainer its own name and rank (SYNCOPATE_NAME, SYNCOPATE_RANK), or stop "
      "the other one first"));
}

void Coordinator::TakeAccuracy(sync::TrainerId id, const Evaluation& evaluation, absl::Time now) {
  if (id != Evaluator()) {
    // Only the evaluator's word counts (one that was replaced may still send its last one).
    metrics_.refused.Add({{"what", "accuracy_not_evaluator"}}).Increment();
  } else if (Accept(id, "accuracy", CheckAccuracy(evaluation.accuracy, evaluation.age_seconds))) {
    accuracy_ = evaluation.accuracy;
    // When the evaluated model was taken, not when its accuracy arrived.
    accuracy_at_ = std::max(0.0, absl::ToDoubleSeconds(now - started_at_) - evaluation.age_seconds);
  }
}

void Coordinator::Leave(const SessionKey& key, const std::string& reason,
                        std::optional<double> final_accuracy, std::optional<Evaluation> last) {
  absl::MutexLock lock(&mu_);
  if (!membership_.CheckLive(key.id, key.incarnation).ok()) return;
  metrics_.leaves.Increment();
  spdlog::info("trainer {} left: {}", key.id, reason);
  if (last) TakeAccuracy(key.id, *last, clock_.Now());
  // A trainer granted the final average finished the job; any other left it.
  const bool finished = final_granted_.count(key.id) > 0;
  if (final_accuracy) {
    if (!finished || key.id != Evaluator()) {
      // Only the evaluator's word on the average counts.
      metrics_.refused.Add({{"what", "final_accuracy_not_evaluator"}}).Increment();
    } else if (Accept(key.id, "final_accuracy", CheckAccuracy(*final_accuracy, 0))) {
      final_accuracy_ = final_accuracy;
      spdlog::info("the final average's test accuracy: {}", *final_accuracy);
    }
  }
  Depart(key, finished ? "done" : "left", reason);
}

void Coordinator::Disconnected(const SessionKey& key) {
  absl::MutexLock lock(&mu_);
  if (!membership_.CheckLive(key.id, key.incarnation).ok()) return;
  metrics_.evictions.Add({{"reason", "disconnected"}}).Increment();
  spdlog::warn("trainer {} disconnected without leaving; evicted", key.id);
  Depart(key, "evicted", "session stream closed without Leave");
}

void Coordinator::Depart(const SessionKey& key, const std::string& state,
                         const std::string& reason) {
  if (!membership_.Remove(key.id, key.incarnation).ok()) return;
  stores_queue_.MembershipChanged();
  KeepGauges(key.id);
  EnqueueDecisions(policy_->OnLeave(key.id, clock_.Now()));
  CloseSession(key, state, reason);
  TellPeersGone(key.id);
  MaybeDone();
}

void Coordinator::CloseSession(const SessionKey& key, const std::string& state,
                               const std::string& reason) {
  if (auto it = sessions_.find(key.id);
      it != sessions_.end() && it->second.incarnation == key.incarnation) {
    if (state == "evicted") {
      v1::Directive evicted;
      evicted.mutable_evicted()->set_reason(reason);
      it->second.outbox->Send(std::move(evicted));
    }
    it->second.outbox->Close();
    by_rank_.Remove(it->second.rank, key.id);
    sessions_.erase(it);
  }
  progress_.Forget(key.id);
  book_.Depart(key.id, state, reason);
  UpdateGauges();
}

}  // namespace syncopate::coordinator
