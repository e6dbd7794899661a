#include "coordinator/coordinator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "coordinator/trainer_input.h"
#include "rpc/identity.h"
#include "spdlog/spdlog.h"

namespace syncopate::coordinator {
namespace {

v1::ApplyMode ApplyModeOf(sync::PushMode mode) {
  switch (mode) {
    case sync::PushMode::kRound:
      return v1::APPLY_MODE_ROUND;
    case sync::PushMode::kImmediate:
      return v1::APPLY_MODE_IMMEDIATE;
    case sync::PushMode::kNone:
      break;
  }
  return v1::APPLY_MODE_NONE;
}

// Copies a trainer's gauges into its status (kept there once it departed).
void RecordGauge(v1::TrainerStatus& status, const TrainerGauge& gauge) {
  status.set_staleness_bound(gauge.staleness_bound);
  status.set_group(gauge.group);
  if (gauge.link) {
    status.set_upload_bytes_per_second(gauge.link->upload);
    status.set_download_bytes_per_second(gauge.link->download);
  }
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, std::unique_ptr<sync::SyncPolicy> policy,
                         StoreControl& stores, const base::Clock& clock,
                         CoordinatorMetrics& metrics)
    : options_(options),
      stores_(stores),
      clock_(clock),
      metrics_(metrics),
      started_at_(clock.Now()),
      policy_(std::move(policy)),
      store_backoff_(options.store_backoff),
      next_probe_(started_at_) {
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
  thread_ = std::thread([this] { ActionLoop(); });
  watchdog_ = std::thread([this] { WatchForPauses(); });
}

void Coordinator::WatchForPauses() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.tick);
    if (!stopping_) ExcusePause(clock_.Now());
  }
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
    membership_dirty_ = true;
    KeepGauges(member.id);
    EnqueueDecisions(policy_->OnLeave(member.id, now));
    CloseSession({member.id, joined->replaced->incarnation}, "evicted",
                 "replaced by a new incarnation");
    TellPeersGone(member.id);
  }
  sync::Decisions decisions;
  absl::StatusOr<int64_t> start = policy_->OnJoin(member.id, now, &decisions);
  if (!start.ok()) return start.status();
  membership_dirty_ = true;
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
  membership_dirty_ = true;
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
  by_rank_.emplace(join.rank(), member.id);
  names_[member.id] = member.name;
  last_progress_[member.id] = clock_.Now();
  // One that is not granted at once (a peer-to-peer joiner waiting for its first exchange, a
  // resumed trainer awaiting its grant) holds no grant, so it cannot be what holds others up.
  if (std::none_of(decisions.grants.begin(), decisions.grants.end(),
                   [&](const sync::Grant& g) { return g.trainer == member.id; })) {
    ungranted_.insert(member.id);
  }

  v1::TrainerStatus& status = trainer_status_[member.name];
  status.set_trainer_id(member.id);
  status.set_incarnation(member.incarnation);
  status.set_name(member.name);
  status.set_rank(join.rank());
  status.set_state("live");
  status.set_clock(start_clock);
  status.set_slowdown(join.slowdown());
  status.clear_timings();
  status.set_compute_time_ratio(0);

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
  Action action;
  action.sends.emplace_back(outbox, std::move(welcome));
  Enqueue(std::move(action));
  EnqueueDecisions(std::move(decisions));
  if (!done_reason_.empty()) SendDone(outbox);
  UpdateGauges();
  return SessionKey{member.id, member.incarnation};
}

void Coordinator::TakeOverFromStores(const std::vector<ShardState>& shards) {
  // Every shard that had a membership had the same one; cuts and rounds may differ by the round
  // being closed when the last coordinator stopped: the furthest shard speaks for the job (the
  // others catch up with it when the membership goes out).
  const ShardState* furthest = nullptr;
  for (const ShardState& shard : shards) {
    if (shard.has_membership &&
        (!furthest || shard.last_closed_round > furthest->last_closed_round)) {
      furthest = &shard;
    }
  }
  // The job's end, when the coordinator before began it: any shard that kept it speaks for all, one
  // with the evaluator's accuracy first (a membership may have reached only some shards).
  std::optional<v1::JobEnd> job_end;
  for (const ShardState& shard : shards) {
    if (shard.job_end && (!job_end || shard.job_end->has_final_test_accuracy())) {
      job_end = shard.job_end;
    }
  }
  if (job_end) {
    final_round_ = job_end->final_round();
    finish_reason_ = job_end->reason();
    if (job_end->has_final_test_accuracy()) final_accuracy_ = job_end->final_test_accuracy();
    if (absl::Status s = policy_->ResumeFinalAverage(final_round_); !s.ok()) {
      phase_ = Phase::kRunning;
      Fail(std::string(s.message()));
      return;
    }
  }
  if (!furthest || furthest->members.empty()) {
    phase_ = Phase::kRunning;
    if (job_end) {  // every trainer had left: the job is over
      recovered_ = true;
      done_reason_ = absl::StrCat(finish_reason_, "; the job had ended with round ", final_round_,
                                  ", the final average, when this coordinator took it over");
      spdlog::info("training is done: {}", done_reason_);
    }
    return;
  }
  const int64_t round = std::max<int64_t>(0, furthest->last_closed_round);
  absl::Status recover =
      policy_->Recover(round, static_cast<int>(furthest->members.size()), options_.recovery_window);
  if (!recover.ok()) {
    phase_ = Phase::kRunning;
    Fail(std::string(recover.message()));
    return;
  }
  for (const ShardMember& m : furthest->members) {
    expected_[m.id] = m;
    membership_.ReserveIds(m.id);
  }
  // A shard that restarted too knows no names: take each member's from any shard that does.
  for (const ShardState& shard : shards) {
    for (const ShardMember& m : shard.members) {
      auto it = expected_.find(m.id);
      if (it != expected_.end() && it->second.name.empty()) it->second.name = m.name;
    }
  }
  last_round_ = round;
  membership_dirty_ = true;  // a shard behind the furthest one catches up with it
  recovered_ = true;
  phase_ = Phase::kRecovering;
  recovery_ends_ = clock_.Now() + options_.recovery_window;
  metrics_.recoveries.Increment();
  spdlog::warn(
      "the stores hold a job under way (round {}, {} trainers): taking it over; waiting up to {} "
      "for its trainers to resume",
      round, expected_.size(), absl::FormatDuration(options_.recovery_window));
  if (job_end) {
    spdlog::warn("the job was ending ({}): its trainers average their models in round {}",
                 finish_reason_, final_round_);
  }
}

void Coordinator::EndRecovery() {
  if (phase_ != Phase::kRecovering) return;
  phase_ = Phase::kRunning;
  trainers_not_resumed_ = static_cast<uint32_t>(expected_.size());
  for (const auto& [id, m] : expected_) {
    spdlog::warn("trainer {} (incarnation {}) did not resume within {}: it is out of the job", id,
                 m.incarnation, absl::FormatDuration(options_.recovery_window));
  }
  // Their pending pushes, reported to the previous coordinator, are lost with them.
  if (!expected_.empty()) membership_dirty_ = true;
  expected_.clear();
  spdlog::info("recovery over: {} trainers resumed, {} did not", trainers_resumed_,
               trainers_not_resumed_);
  MaybeDone();
}

int Coordinator::JobSize() const {
  return static_cast<int>(membership_.live_count() + expected_.size());
}

std::vector<sync::Member> Coordinator::StoreMembers() const {
  std::vector<sync::Member> members = membership_.Live();
  for (const auto& [id, m] : expected_) {
    sync::Member member;
    member.id = id;
    member.incarnation = m.incarnation;
    member.name = m.name;
    members.push_back(std::move(member));
  }
  std::sort(members.begin(), members.end(),
            [](const sync::Member& a, const sync::Member& b) { return a.id < b.id; });
  return members;
}

void Coordinator::Report(const SessionKey& key, const v1::ClockReport& report) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  if (!membership_.Touch(key.id, key.incarnation, now).ok()) return;
  report_arrival_[key.id] = now;
  last_progress_[key.id] = now;
  const bool timings_valid = Accept(key.id, "timings", CheckTimings(report.timings()));
  if (timings_valid) {
    policy_->ObserveCompute(key.id, report.clock(), report.timings().compute_seconds());
  }
  if (report.has_transfers() && Accept(key.id, "transfers", CheckTransfers(report.transfers()))) {
    policy_->ObserveTransfers(key.id, TransferSampleOf(report.transfers()));
    v1::TrainerStatus& status = trainer_status_[names_[key.id]];
    status.set_models_delivered(status.models_delivered() + report.transfers().models_sent());
  }
  absl::StatusOr<sync::Decisions> decisions = policy_->OnClock(key.id, report.clock(), now);
  if (!decisions.ok()) {
    spdlog::warn("evicting trainer {}: {}", key.id, decisions.status().ToString());
    metrics_.evictions.Add({{"reason", "protocol"}}).Increment();
    Depart(key, "evicted", std::string(decisions.status().message()));
    return;
  }
  v1::TrainerStatus& status = trainer_status_[names_[key.id]];
  status.set_clock(report.clock());
  if (timings_valid) UpdateTimings(key.id, report.timings());
  if (report.has_test_accuracy()) {
    const double age = report.test_accuracy_age_seconds();
    if (key.id != Evaluator()) {
      // Only the evaluator's word counts (one that was replaced may still send its last one).
      metrics_.refused.Add({{"what", "accuracy_not_evaluator"}}).Increment();
    } else if (Accept(key.id, "accuracy", CheckAccuracy(report.test_accuracy(), age))) {
      accuracy_ = report.test_accuracy();
      // When the evaluated model was taken, not when its accuracy arrived.
      accuracy_at_ = std::max(0.0, absl::ToDoubleSeconds(now - started_at_) - age);
    }
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
    UpdateTimings(key.id, heartbeat.timings());
  }
  if (heartbeat.paused()) {
    if (paused_.insert(key.id).second) spdlog::info("trainer {} paused its training", key.id);
  } else if (paused_.erase(key.id) > 0) {
    spdlog::info("trainer {} resumed its training", key.id);
    last_progress_[key.id] = clock_.Now();  // the pause does not count against its progress
  }
  // A trainer held by its mode hears that this coordinator is alive (HeartbeatAck). Order with the
  // other directives does not matter: the trainer only notes it. Not while the stores fail: the job
  // cannot move then, and a long outage must still reach the trainers as their directive timeout.
  if (heartbeat.awaiting_grant() && !stores_failing_since_) {
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
                 id, names_[id], what, std::string(check.message()));
  }
  return false;
}

absl::Status Coordinator::CheckNameAndRankFree(const v1::Join& join, absl::Time now) {
  // Alive: heard from within two heartbeats. A trainer silent for longer (a frozen process, a pod
  // whose node went away) may be replaced by a new incarnation before its eviction.
  const absl::Duration alive = 2 * options_.heartbeat_interval;
  std::optional<sync::Member> holder = membership_.FindByName(join.name());
  if (!holder) {
    for (const auto& [rank, id] : by_rank_) {
      if (rank == join.rank()) holder = membership_.Find(id);
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

void Coordinator::Leave(const SessionKey& key, const std::string& reason,
                        std::optional<double> final_accuracy) {
  absl::MutexLock lock(&mu_);
  if (!membership_.CheckLive(key.id, key.incarnation).ok()) return;
  metrics_.leaves.Increment();
  spdlog::info("trainer {} left: {}", key.id, reason);
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

absl::StatusOr<int64_t> Coordinator::Finish(const std::string& reason) {
  if (absl::Status s = CheckFinishReason(reason); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (!failure_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the job failed: ", failure_));
  }
  if (phase_ != Phase::kRunning && final_round_ == 0 && done_reason_.empty()) {
    // The final round must come after every clock, and the trainers' clocks are not all known
    // until they have resumed.
    return absl::UnavailableError(
        "the coordinator is taking over a job under way and waits for its trainers to resume; "
        "finish again shortly");
  }
  return EndTraining(reason);
}

int64_t Coordinator::EndTraining(const std::string& reason) {
  if (final_round_ > 0 || !done_reason_.empty()) return final_round_;
  // With nobody to average, training is simply done.
  if (membership_.live_count() > 0) {
    if (std::optional<int64_t> round = policy_->BeginFinalAverage()) {
      final_round_ = *round;
      finish_reason_ = reason;
      membership_dirty_ = true;  // the stores keep the job's end for a coordinator taking over
      spdlog::info("training ends ({}): every trainer averages in round {}, then leaves", reason,
                   final_round_);
      return final_round_;
    }
  }
  done_reason_ = reason;
  spdlog::info("training is done: {}", done_reason_);
  for (auto& [id, session] : sessions_) SendDone(session.outbox);
  return 0;
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
  membership_dirty_ = true;
  KeepGauges(key.id);
  EnqueueDecisions(policy_->OnLeave(key.id, clock_.Now()));
  CloseSession(key, state, reason);
  TellPeersGone(key.id);
  MaybeDone();
}

void Coordinator::MaybeDone() {
  if (final_round_ == 0 || !done_reason_.empty() || !failure_.empty() || JobSize() > 0) return;
  done_reason_ = final_granted_.empty()
                     ? absl::StrCat(finish_reason_, "; every trainer left before round ",
                                    final_round_, ", the final average")
                     : absl::StrCat(finish_reason_, "; ", final_granted_.size(),
                                    " trainer(s) averaged their models in round ", final_round_);
  spdlog::info("training is done: {}", done_reason_);
}

std::optional<v1::JobEnd> Coordinator::JobEndToKeep() const {
  if (final_round_ == 0) return std::nullopt;
  v1::JobEnd end;
  end.set_final_round(final_round_);
  end.set_reason(finish_reason_);
  if (final_accuracy_) end.set_final_test_accuracy(*final_accuracy_);
  return end;
}

void Coordinator::TellPeersGone(sync::TrainerId id) {
  if (policy_->push_mode() != sync::PushMode::kNone) return;
  Action action;
  for (const auto& [peer, session] : sessions_) {
    if (peer == id) continue;
    v1::Directive left;
    left.mutable_peer_left()->set_trainer_id(id);
    action.sends.emplace_back(session.outbox, std::move(left));
  }
  if (!action.sends.empty()) Enqueue(std::move(action));
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
    by_rank_.erase({it->second.rank, key.id});
    sessions_.erase(it);
  }
  report_arrival_.erase(key.id);
  ungranted_.erase(key.id);
  last_progress_.erase(key.id);
  paused_.erase(key.id);
  const std::string& name = names_[key.id];
  v1::TrainerStatus& status = trainer_status_[name];
  status.set_state(state);
  if (state == "evicted") {
    status.set_evictions(status.evictions() + 1);
    status.set_eviction_reason(reason);
  }
  // The status keeps the most recent departures only: joins under ever new names cannot grow it
  // (and GetStatus) without bound.
  departed_.push_back(name);
  while (departed_.size() > options_.departed_statuses_kept) {
    auto old = trainer_status_.find(departed_.front());
    if (old != trainer_status_.end() && old->second.state() != "live") trainer_status_.erase(old);
    departed_.pop_front();
  }
  UpdateGauges();
}

void Coordinator::SendDone(const std::shared_ptr<Outbox>& outbox) {
  v1::Directive done;
  done.mutable_done()->set_reason(done_reason_);
  Action action;
  action.sends.emplace_back(outbox, std::move(done));
  Enqueue(std::move(action));
}

void Coordinator::UpdateTimings(sync::TrainerId id, const v1::TrainerTimings& timings) {
  v1::TrainerStatus& status = trainer_status_[names_[id]];
  *status.mutable_timings() = timings;
  status.set_compute_time_ratio(
      timings.wall_seconds() > 0 ? timings.compute_seconds() / timings.wall_seconds() : 0);
}

void Coordinator::UpdateGauges() {
  metrics_.live_trainers.Set(static_cast<double>(membership_.live_count()));
  metrics_.min_clock.Set(static_cast<double>(policy_->MinClock().value_or(0)));
  metrics_.groups.Set(policy_->group_count());
}

TrainerGauge Coordinator::GaugeOf(sync::TrainerId id) const {
  TrainerGauge gauge;
  if (auto name = names_.find(id); name != names_.end()) gauge.name = name->second;
  gauge.staleness_bound = policy_->BoundOf(id);
  gauge.group = policy_->GroupOf(id);
  if (const sync::BandwidthEstimator* links = policy_->link_estimates()) {
    gauge.link = links->MeasuredEstimate(id);
  }
  return gauge;
}

void Coordinator::KeepGauges(sync::TrainerId id) {
  if (auto name = names_.find(id); name != names_.end()) {
    RecordGauge(trainer_status_[name->second], GaugeOf(id));
  }
}

std::vector<TrainerGauge> Coordinator::TrainerGauges() const {
  absl::MutexLock lock(&mu_);
  std::vector<TrainerGauge> gauges;
  gauges.reserve(sessions_.size());
  const sync::BandwidthEstimator* links = policy_->link_estimates();
  for (const auto& [id, session] : sessions_) {
    TrainerGauge& gauge = gauges.emplace_back(GaugeOf(id));
    if (links == nullptr) continue;
    for (const auto& [receiver, rate] : links->SendsOf(id)) {
      if (auto name = names_.find(receiver); name != names_.end()) {
        gauge.sends.emplace_back(name->second, rate);
      }
    }
  }
  return gauges;
}

sync::TrainerId Coordinator::Evaluator() const {
  return by_rank_.empty() ? 0 : by_rank_.begin()->second;
}

void Coordinator::Enqueue(Action action) {
  // Nothing to wait for (nothing queued or in flight before it, the stores' membership current):
  // delivered at once, on this thread, sparing a hand-off to the action thread per report in the
  // modes that close no rounds, and the grants' hand-off in those that do (pipelined grants).
  if (pending_.empty() && !membership_dirty_ && !syncing_members_ && !backing_off_ && !stopping_) {
    if (action.close_rounds.empty()) {
      Deliver(action);
      return;
    }
    DeliverBeforeClosing(action);  // while the action thread closes its rounds
  }
  pending_.push_back(std::move(action));
}

void Coordinator::EnqueueDecisions(sync::Decisions decisions) {
  if (decisions.empty()) return;
  const int64_t min = policy_->MinClock().value_or(0);
  for (const sync::Grant& g : decisions.grants) {
    metrics_.staleness_at_grant.Observe(static_cast<double>(g.clock - min));
  }
  Action action;
  for (const sync::RoundClose& close : decisions.close_rounds) {
    action.close_rounds.push_back(ToRequest(close));
  }
  // Preempted transfers stop before the grants start the multicasts that displaced them.
  for (const sync::Preemption& preemption : decisions.preemptions) {
    auto it = sessions_.find(preemption.sender);
    if (it == sessions_.end()) continue;
    v1::Directive stop;
    stop.mutable_stop_sending()->set_round(preemption.round);
    for (sync::TrainerId receiver : preemption.receivers) {
      stop.mutable_stop_sending()->add_receivers(receiver);
    }
    action.sends.emplace_back(it->second.outbox, std::move(stop));
    metrics_.preempted_transfers.Increment(static_cast<double>(preemption.receivers.size()));
  }
  action.grants = std::move(decisions.grants);
  Enqueue(std::move(action));
}

v1::CloseRoundRequest Coordinator::ToRequest(const sync::RoundClose& close) const {
  v1::CloseRoundRequest request;
  request.set_round(close.round);
  for (const auto& [id, clock] : close.cuts) {
    v1::PushCut* cut = request.add_cuts();
    cut->set_trainer_id(id);
    cut->set_incarnation(membership_.LastIncarnation(id));
    cut->set_clock(clock);
  }
  if (close.aggregation == sync::Aggregation::kMean) {
    request.set_aggregation(v1::AGGREGATION_MEAN);
  } else {
    request.set_aggregation(v1::AGGREGATION_SCALED);
    request.set_scale(1.0 / std::max(1, close.live_trainers));
  }
  return request;
}

void Coordinator::Fail(const std::string& reason) {
  if (!failure_.empty()) return;
  failure_ = reason;
  spdlog::error("the job cannot go on: {}", reason);
  std::vector<SessionKey> live;
  for (const auto& [id, session] : sessions_) live.push_back({id, session.incarnation});
  for (const SessionKey& key : live) Depart(key, "evicted", "the job failed: " + reason);
}

void Coordinator::ActionLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || (!backing_off_ && (!pending_.empty() || membership_dirty_));
      };
      mu_.AwaitWithTimeout(absl::Condition(&work), options_.tick);
      if (stopping_) return;
    }
    // What woke the loop goes out first: a round's close and its grants are the job's critical
    // path, and the periodic scans (Tick, a store probe's round trip) can wait for them.
    RunPending();
    Tick();
    ProbeStores();
  }
}

void Coordinator::StoreCallFailed(const std::string& what, const absl::Status& status) {
  // Not transient: a store refuses this coordinator's certificate, and retrying changes nothing.
  if (absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status)) {
    Fail(absl::StrCat(what, " was refused by the stores (", status.ToString(),
                      "): does this coordinator hold a coordinator certificate of the job's CA?"));
    return;
  }
  // A shard that restarted must get the membership and the job's round before anything else.
  membership_dirty_ = true;
  backing_off_ = true;
  retry_at_ = clock_.Now() + store_backoff_.Next();
  metrics_.store_call_failures.Increment();
  if (!stores_failing_since_) {
    stores_failing_since_ = clock_.Now();
    spdlog::warn("{} failed (retrying with backoff; logged again when the stores answer): {}", what,
                 status.ToString());
  }
}

void Coordinator::StoreCallSucceeded() {
  if (stores_failing_since_) {
    spdlog::info("the stores answer again after {} and {} failed attempts",
                 absl::FormatDuration(
                     absl::Trunc(clock_.Now() - *stores_failing_since_, absl::Milliseconds(1))),
                 store_backoff_.failures());
    stores_failing_since_.reset();
  }
  store_backoff_.Reset();
}

void Coordinator::ObserveShards(const std::vector<ShardState>& shards, bool reconciled) {
  shards_.resize(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    ShardState& known = shards_[i];
    const ShardState& now = shards[i];
    const bool restarted = known.incarnation != 0 && now.incarnation != known.incarnation;
    if (!reconciled) {
      if (restarted) {
        spdlog::info("store shard {} ({}) restarted: reconciling it", i, stores_.addresses()[i]);
        membership_dirty_ = true;
      } else if (known.incarnation != 0) {
        known.holds_model = known.holds_model || now.holds_model;
      }
      continue;
    }
    if (restarted) {
      ++store_restarts_;
      metrics_.store_restarts.Increment();
      spdlog::warn("store shard {} ({}) restarted; it resumed at round {} ({} rounds lost on it)",
                   i, stores_.addresses()[i], now.last_closed_round, now.rounds_skipped);
      if (known.holds_model && !now.holds_model) {
        Fail(absl::StrCat("store shard ", i, " (", stores_.addresses()[i],
                          ") restarted without its model: give the stores a --checkpoint-dir"));
      }
    }
    store_rounds_lost_ += now.rounds_skipped;
    metrics_.store_rounds_lost.Increment(static_cast<double>(now.rounds_skipped));
    const bool held = !restarted && known.holds_model;
    known = now;
    known.holds_model = held || now.holds_model;
  }
}

void Coordinator::ProbeStores() {
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    if (backing_off_ || now < next_probe_) return;
    next_probe_ = now + options_.store_probe_interval;
  }
  // A shard that cannot be reached shows in the calls that need it; nothing to learn here.
  absl::StatusOr<std::vector<ShardState>> shards = stores_.Probe();
  absl::MutexLock lock(&mu_);
  if (!shards.ok()) {
    if (phase_ == Phase::kProbing) {
      spdlog::warn("the stores do not answer yet (asking again in {}): {}",
                   absl::FormatDuration(options_.store_probe_interval), shards.status().ToString());
    }
    return;
  }
  if (phase_ == Phase::kProbing) TakeOverFromStores(*shards);
  ObserveShards(*shards, /*reconciled=*/false);
}

void Coordinator::ExcusePause(absl::Time now) {
  const absl::Time since = last_beat_;
  last_beat_ = std::max(last_beat_, now);
  if (since == absl::InfinitePast() || now - since <= options_.pause_threshold) return;
  const absl::Duration gap = now - since;
  metrics_.pauses.Increment();
  spdlog::warn(
      "the coordinator did not run for {} (frozen or starved of CPU): that time does not count "
      "against the trainers' silence or progress",
      absl::FormatDuration(absl::Trunc(gap, absl::Milliseconds(1))));
  membership_.Excuse(since, gap);
  for (auto& [id, at] : last_progress_) at = sync::ExcusedTime(at, since, gap);
  // Resumes sent while it was frozen are still on their way too.
  if (phase_ == Phase::kRecovering) recovery_ends_ += gap;
}

void Coordinator::Tick() {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  ExcusePause(now);
  if (backing_off_ && now >= retry_at_) backing_off_ = false;
  if (phase_ == Phase::kRecovering && now >= recovery_ends_) EndRecovery();
  for (const sync::Member& m : membership_.Expired(now, options_.eviction_timeout)) {
    metrics_.evictions.Add({{"reason", "heartbeat_timeout"}}).Increment();
    spdlog::warn("trainer {} ('{}') silent for over {}; evicted", m.id, m.name,
                 absl::FormatDuration(options_.eviction_timeout));
    Depart({m.id, m.incarnation}, "evicted", "heartbeat timeout");
  }
  EvictStalled(now);
  EnqueueDecisions(policy_->OnTick(now));
}

void Coordinator::EvictStalled(absl::Time now) {
  const absl::Duration timeout = options_.progress_timeout;
  if (timeout <= absl::ZeroDuration()) return;
  const bool held_up =
      std::any_of(report_arrival_.begin(), report_arrival_.end(),
                  [&](const auto& waiting) { return now - waiting.second > timeout; });
  if (!held_up) return;
  std::vector<SessionKey> stalled;
  for (const auto& [id, session] : sessions_) {
    auto progress = last_progress_.find(id);
    if (report_arrival_.count(id) == 0 && ungranted_.count(id) == 0 && paused_.count(id) == 0 &&
        progress != last_progress_.end() && now - progress->second > timeout) {
      stalled.push_back({id, session.incarnation});
    }
  }
  for (const SessionKey& key : stalled) {
    metrics_.evictions.Add({{"reason", "no_progress"}}).Increment();
    spdlog::warn("trainer {} ('{}') reported no clock for over {} while others wait; evicted",
                 key.id, names_[key.id], absl::FormatDuration(timeout));
    Depart(key, "evicted",
           absl::StrCat("no progress for ", absl::FormatDuration(timeout),
                        " while other trainers waited"));
  }
}

void Coordinator::RunPending() {
  while (true) {
    StoreMembership membership;
    bool sync_members = false;
    int64_t last_round = 0;
    Action action;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || backing_off_) return;
      last_round = last_round_;
      if (membership_dirty_) {
        membership.members = StoreMembers();
        membership.round = last_round;
        membership.apply_mode = ApplyModeOf(policy_->push_mode());
        membership.immediate_weight = static_cast<float>(policy_->PushWeight(JobSize()));
        membership.job_end = JobEndToKeep();
        membership_dirty_ = false;
        sync_members = true;
        syncing_members_ = true;
      } else if (pending_.empty()) {
        return;
      } else {
        // Before its rounds close, and only once, however often the closes are retried.
        DeliverBeforeClosing(pending_.front());
        action = pending_.front();
      }
    }
    if (sync_members) {
      absl::StatusOr<std::vector<ShardState>> shards = stores_.SetMembership(membership);
      absl::MutexLock lock(&mu_);
      syncing_members_ = false;
      if (!shards.ok()) {
        StoreCallFailed("updating the stores' membership", shards.status());
        return;
      }
      StoreCallSucceeded();
      ObserveShards(*shards, /*reconciled=*/true);
      if (membership.job_end && !job_end_kept_) {
        job_end_kept_ = true;
        spdlog::info(
            "the stores keep the job's end: a coordinator that takes over averages in "
            "round {}",
            membership.job_end->final_round());
      }
      continue;
    }
    for (const v1::CloseRoundRequest& close : action.close_rounds) {
      // Closed on every shard by an earlier attempt of this action: a shard that restarted since
      // has caught up past it, so it must not be asked again.
      if (close.round() <= last_round) continue;
      const absl::Time start = clock_.Now();
      absl::Status status = stores_.CloseRound(close);
      absl::MutexLock lock(&mu_);
      if (!status.ok()) {
        StoreCallFailed(absl::StrCat("closing round ", close.round()), status);
        return;
      }
      StoreCallSucceeded();
      last_round = last_round_ = close.round();
      ++rounds_closed_;
      metrics_.close_round_duration.Observe(absl::ToDoubleSeconds(clock_.Now() - start));
      metrics_.rounds_closed.Increment();
    }
    absl::MutexLock lock(&mu_);
    pending_.pop_front();
    if (!action.delivered) Deliver(action);
  }
}

void Coordinator::DeliverBeforeClosing(Action& action) {
  if (!options_.pipeline_grants || action.delivered ||
      !policy_->MayGrantWhileClosing(!action.close_rounds.empty(), action.grants)) {
    return;
  }
  Deliver(action);
  action.delivered = true;
}

void Coordinator::Deliver(Action& action) {
  const sync::TrainerId evaluator = Evaluator();
  const absl::Time now = clock_.Now();
  // Each session's place among the trainers in the job, by rank.
  std::map<sync::TrainerId, uint32_t> world_rank;
  for (const auto& [rank, id] : by_rank_) world_rank.emplace(id, world_rank.size());
  for (auto& [outbox, directive] : action.sends) outbox->Send(std::move(directive));
  for (const sync::Grant& g : action.grants) {
    auto it = sessions_.find(g.trainer);
    if (it == sessions_.end()) continue;  // departed since the decision
    v1::Directive directive;
    v1::Proceed* p = directive.mutable_proceed();
    p->set_clock(g.clock);
    switch (g.pull.kind) {
      case sync::PullSpec::Kind::kRound:
        p->mutable_pull()->set_round(g.pull.round);
        p->mutable_pull()->set_includes_clock(g.pull.includes_clock);
        break;
      case sync::PullSpec::Kind::kLive:
        p->mutable_pull()->set_live(true);
        break;
      case sync::PullSpec::Kind::kNone:
        p->mutable_pull()->set_none(true);
        break;
    }
    p->set_staleness_bound(g.staleness_bound);
    p->set_push_weight(policy_->PushWeight(JobSize()));
    p->set_group(g.group);
    p->set_evaluate(g.trainer == evaluator);
    p->set_final_average(g.final_average);
    p->set_world_size(static_cast<uint32_t>(by_rank_.size()));
    p->set_world_rank(world_rank[g.trainer]);
    if (g.final_average) final_granted_.insert(g.trainer);
    if (g.exchange) {
      *p->mutable_exchange() = ExchangeOf(*g.exchange);
      if (const int receivers = p->exchange().send_to_size(); receivers > 0) {
        v1::TrainerStatus& status = trainer_status_[names_[g.trainer]];
        status.set_multicasts(status.multicasts() + 1);
        status.set_multicast_receivers(status.multicast_receivers() + receivers);
      }
    }
    it->second.outbox->Send(std::move(directive));
    metrics_.grants.Increment();
    ungranted_.erase(g.trainer);
    if (auto arrival = report_arrival_.find(g.trainer); arrival != report_arrival_.end()) {
      metrics_.directive_latency.Observe(absl::ToDoubleSeconds(now - arrival->second));
      report_arrival_.erase(arrival);
    }
  }
}

v1::PeerExchange Coordinator::ExchangeOf(const sync::PeerExchange& exchange) const {
  v1::PeerExchange out;
  out.set_round(exchange.round);
  auto add = [&](sync::TrainerId id, v1::PeerRef* ref) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    ref->set_trainer_id(id);
    ref->set_incarnation(it->second.incarnation);
    ref->set_address(it->second.peer_address);
    if (auto name = names_.find(id); name != names_.end()) ref->set_name(name->second);
    return true;
  };
  for (sync::TrainerId id : exchange.send_to) {
    v1::PeerRef ref;
    ref.set_low_priority(exchange.low_priority_to.count(id) > 0);
    if (add(id, &ref)) *out.add_send_to() = std::move(ref);
  }
  for (sync::TrainerId id : exchange.receive_from) {
    v1::PeerRef ref;
    if (add(id, &ref)) *out.add_receive_from() = std::move(ref);
  }
  return out;
}

v1::ClusterStatus Coordinator::Status() const {
  absl::MutexLock lock(&mu_);
  v1::ClusterStatus status;
  status.set_mode(policy_->name());
  status.set_staleness_bound(policy_->staleness_bound());
  status.set_uptime_seconds(absl::ToDoubleSeconds(clock_.Now() - started_at_));
  for (const auto& [name, t] : trainer_status_) *status.add_trainers() = t;
  // Live trainers' bounds, groups and links as they are now (departed ones keep their last).
  for (v1::TrainerStatus& t : *status.mutable_trainers()) {
    if (t.state() == "live") RecordGauge(t, GaugeOf(t.trainer_id()));
  }
  status.set_min_live_clock(policy_->MinClock().value_or(0));
  status.set_rounds_closed(rounds_closed_);
  if (accuracy_) {
    status.set_test_accuracy(*accuracy_);
    status.set_test_accuracy_at_seconds(accuracy_at_);
  }
  status.set_live_trainers(static_cast<uint32_t>(membership_.live_count()));
  status.set_groups(static_cast<uint32_t>(policy_->group_count()));
  status.set_done(!done_reason_.empty());
  status.set_done_reason(done_reason_);
  status.set_final_round(final_round_);
  if (final_accuracy_) status.set_final_test_accuracy(*final_accuracy_);
  status.set_store_restarts(store_restarts_);
  status.set_store_rounds_lost(store_rounds_lost_);
  status.set_failure(failure_);
  status.set_recovered(recovered_);
  status.set_recovering(phase_ != Phase::kRunning);
  status.set_trainers_resumed(trainers_resumed_);
  status.set_trainers_not_resumed(trainers_not_resumed_);
  return status;
}

}  // namespace syncopate::coordinator
