// The coordinator's action thread: the store actions its decisions imply, in order (memberships,
// round closes, retried with backoff), the directives and grants they release, the periodic checks
// (a pause of the coordinator itself, silent and stalled trainers, the recovery window) and the
// store probes. RunActions is one turn of it.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "spdlog/spdlog.h"

namespace syncopate::coordinator {

void Coordinator::RunActions() {
  // What woke the loop goes out first: a round's close and its grants are the job's critical
  // path, and the periodic scans (Tick, a store probe's round trip) can wait for them.
  RunPending();
  Tick();
  ProbeStores();
}

void Coordinator::WatchForPauses() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.tick);
    if (!stopping_) ExcusePause(clock_.Now());
  }
}

bool Coordinator::AwaitBeat(absl::Time at, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto beaten = [this, at]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return last_beat_ >= at; };
  return mu_.AwaitWithTimeout(absl::Condition(&beaten), timeout);
}

void Coordinator::Enqueue(Action action) {
  // Nothing to wait for (nothing queued or in flight before it, the stores' membership current):
  // delivered at once, on this thread, sparing a hand-off to the action thread per report in the
  // modes that close no rounds, and the grants' hand-off in those that do (pipelined grants).
  if (stores_queue_.clear() && !stopping_) {
    if (action.close_rounds.empty()) {
      Deliver(action);
      return;
    }
    DeliverBeforeClosing(action);  // while the action thread closes its rounds
  }
  stores_queue_.push_back(std::move(action));
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

void Coordinator::ActionLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || stores_queue_.has_work();
      };
      mu_.AwaitWithTimeout(absl::Condition(&work), options_.tick);
      if (stopping_) return;
    }
    RunActions();
  }
}

void Coordinator::StoreCallFailed(const std::string& what, const absl::Status& status) {
  // Not transient: a store refuses this coordinator's certificate, and retrying changes nothing.
  if (absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status)) {
    Fail(absl::StrCat(what, " was refused by the stores (", status.ToString(),
                      "): does this coordinator hold a coordinator certificate of the job's CA?"));
    return;
  }
  metrics_.store_call_failures.Increment();
  if (stores_queue_.Failed(clock_.Now())) {
    spdlog::warn("{} failed (retrying with backoff; logged again when the stores answer): {}", what,
                 status.ToString());
  }
}

void Coordinator::StoreCallSucceeded() {
  if (const std::optional<StoreQueue::Outage> outage = stores_queue_.Succeeded(clock_.Now())) {
    spdlog::info("the stores answer again after {} and {} failed attempts",
                 absl::FormatDuration(absl::Trunc(outage->lasted, absl::Milliseconds(1))),
                 outage->failures);
  }
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
        stores_queue_.MembershipChanged();
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
    if (!stores_queue_.ProbeDue(now, options_.store_probe_interval)) return;
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
  progress_.Excuse(since, gap);
  // Resumes sent while it was frozen are still on their way too.
  if (phase_ == Phase::kRecovering) recovery_ends_ += gap;
}

void Coordinator::Tick() {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  ExcusePause(now);
  stores_queue_.Tick(now);
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
  std::vector<sync::TrainerId> live;
  for (const auto& [id, session] : sessions_) live.push_back(id);
  std::vector<SessionKey> stalled;
  for (sync::TrainerId id : progress_.Stalled(now, timeout, live)) {
    stalled.push_back({id, sessions_.at(id).incarnation});
  }
  for (const SessionKey& key : stalled) {
    metrics_.evictions.Add({{"reason", "no_progress"}}).Increment();
    spdlog::warn("trainer {} ('{}') reported no clock for over {} while others wait; evicted",
                 key.id, book_.NameOf(key.id), absl::FormatDuration(timeout));
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
      if (stopping_ || stores_queue_.backing_off()) return;
      last_round = last_round_;
      if (stores_queue_.membership_changed()) {
        membership.members = StoreMembers();
        membership.round = last_round;
        membership.apply_mode = ApplyModeOf(policy_->push_mode());
        membership.immediate_weight = static_cast<float>(policy_->PushWeight(JobSize()));
        membership.codec = options_.codec;
        membership.job_end = JobEndToKeep();
        stores_queue_.SendingMembership();
        sync_members = true;
      } else if (stores_queue_.empty()) {
        return;
      } else {
        // Before its rounds close, and only once, however often the closes are retried.
        DeliverBeforeClosing(stores_queue_.front());
        action = stores_queue_.front();
      }
    }
    if (sync_members) {
      absl::StatusOr<std::vector<ShardState>> shards = stores_.SetMembership(membership);
      absl::MutexLock lock(&mu_);
      stores_queue_.MembershipSent();
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
    stores_queue_.pop_front();
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
    p->set_world_size(by_rank_.size());
    p->set_world_rank(by_rank_.PlaceOf(g.trainer));
    if (g.final_average) final_granted_.insert(g.trainer);
    if (g.exchange) {
      *p->mutable_exchange() = ExchangeOf(*g.exchange);
      if (const int receivers = p->exchange().send_to_size(); receivers > 0) {
        v1::TrainerStatus& status = book_.Of(g.trainer);
        status.set_multicasts(status.multicasts() + 1);
        status.set_multicast_receivers(status.multicast_receivers() + receivers);
      }
    }
    it->second.outbox->Send(std::move(directive));
    metrics_.grants.Increment();
    if (const std::optional<absl::Duration> waited = progress_.Granted(g.trainer, now)) {
      metrics_.directive_latency.Observe(absl::ToDoubleSeconds(*waited));
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
    ref->set_name(book_.NameOf(id));
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

}  // namespace syncopate::coordinator
