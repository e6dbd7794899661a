#include "sync/peer_round_policy.h"

#include <algorithm>
#include <limits>

namespace syncopate::sync {
PeerRoundPolicy::PeerRoundPolicy(PeerRoundConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout),
      config_(std::move(config)),
      rng_(config_.seed) {}

absl::StatusOr<int64_t> PeerRoundPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                                Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  if (granted_clock_ > 0) unfed_.insert(trainer);  // a job under way: its model is untrained
  if (gate_.is_open() && granted_clock_ > 0) {
    // It waits at the next round as if it had reported it; that round's exchange, in which a
    // trained trainer sends to it, is its first grant.
    const int64_t start = granted_clock_ + 1;
    clocks_.Set(trainer, start);
    waiting_.Add(trainer, start);
    MaybeRelease(decisions);
    return start;
  }
  clocks_.Set(trainer, granted_clock_);
  newcomers_.insert(trainer);
  GrantNewcomers(now, decisions);
  return granted_clock_;
}

absl::StatusOr<Decisions> PeerRoundPolicy::OnClock(TrainerId trainer, int64_t clock,
                                                   absl::Time now) {
  const bool awaiting = newcomers_.count(trainer) > 0 || waiting_.Contains(trainer);
  if (absl::Status s = CheckReport(trainer, clock, awaiting); !s.ok()) return s;
  clocks_.Set(trainer, clock);
  waiting_.Add(trainer, clock);
  Decisions decisions;
  MaybeRelease(&decisions);
  GrantNewcomers(now, &decisions);
  return decisions;
}

Decisions PeerRoundPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  Decisions decisions;
  if (!clocks_.Get(trainer)) return decisions;
  clocks_.Erase(trainer);
  newcomers_.erase(trainer);
  unfed_.erase(trainer);
  waiting_.Remove(trainer);
  bandwidth_.Forget(trainer);
  MaybeRelease(&decisions);
  GrantNewcomers(now, &decisions);
  return decisions;
}

Decisions PeerRoundPolicy::OnTick(absl::Time now) {
  Decisions decisions;
  GrantNewcomers(now, &decisions);
  MaybeRelease(&decisions);
  return decisions;
}

void PeerRoundPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  if (r.awaiting_grant) {
    // It reported r.clock and waits for that round's release (granted so far: r.clock - 1).
    granted_clock_ = std::max(granted_clock_, r.clock - 1);
    waiting_.Add(r.trainer, r.clock);
  } else {
    granted_clock_ = std::max(granted_clock_, r.clock);
  }
  GrantNewcomers(now, decisions);
  MaybeRelease(decisions);
}

void PeerRoundPolicy::ObserveTransfers(TrainerId trainer, const TransferSample& sample) {
  bandwidth_.Observe(trainer, sample);
}

void PeerRoundPolicy::GrantNewcomers(absl::Time now, Decisions* decisions) {
  if (!gate_.Open(clocks_.size(), now)) return;
  // Resumed waiters whose round was released before the restart: their grant was lost.
  for (const auto& [trainer, clock] : waiting_.TakeUpTo(granted_clock_)) {
    newcomers_.insert(trainer);
    resumed_.insert(trainer);
  }
  for (TrainerId t : newcomers_) {
    const PullSpec pull = resumed_.count(t) > 0 ? PullSpec::None() : PullSpec::Live();
    decisions->grants.push_back(Grant{t, *clocks_.Get(t), pull, 0});
  }
  newcomers_.clear();
  resumed_.clear();
}

void PeerRoundPolicy::MaybeRelease(Decisions* decisions) {
  if (!gate_.is_open()) return;  // a recovery waits for everyone expected back
  // Every member that has been granted must be waiting at the next clock.
  const size_t granted_members = clocks_.size() - newcomers_.size();
  if (waiting_.size() == 0 || waiting_.size() < granted_members) return;
  std::vector<TrainerId> members;
  for (const auto& [trainer, clock] : waiting_.TakeUpTo(std::numeric_limits<int64_t>::max())) {
    members.push_back(trainer);
  }
  std::sort(members.begin(), members.end());
  const int64_t round = granted_clock_ + 1;
  last_plan_ = PlanMulticast(members, round);
  for (TrainerId t : members) {
    decisions->grants.push_back(Grant{t, round, PullSpec::None(), 0, -1, last_plan_[t]});
  }
  granted_clock_ = round;
}

std::map<TrainerId, PeerExchange> PeerRoundPolicy::PlanMulticast(
    const std::vector<TrainerId>& members, int64_t round) {
  const int n = static_cast<int>(members.size());
  std::map<TrainerId, PeerExchange> plan;
  for (TrainerId t : members) plan[t].round = round;
  if (n < 2) return plan;
  MulticastProblem problem;
  PairHistory history(n, config_.k);
  for (int i = 0; i < n; ++i) {
    const LinkRates rates = bandwidth_.Estimate(members[i]);
    problem.upload.push_back(rates.upload);
    problem.download.push_back(rates.download);
    problem.volume.push_back(1);  // every trainer sends the same model
    problem.min_receivers.push_back(DefaultMinReceivers(n, config_.min_receivers_fraction));
    for (int j = 0; j < n; ++j) {
      // A pair never seen counts as just exchanged: a joiner is not forced on everyone at once.
      auto it = last_exchanged_.find({members[i], members[j]});
      history.Set(i, j, it == last_exchanged_.end() ? round - 1 : it->second);
    }
  }
  problem.layer = MulticastLayer::kL7;  // gRPC streams: one copy per receiver
  const MulticastPlan selected =
      config_.planner == "orpheus"
          ? SelectOrpheus(problem, history, round, rng_)
          : SelectSelMcast(problem, history, round, /*pareto_additions=*/true,
                           config_.pareto_margin);
  auto send = [&](int i, int j) {
    plan[members[i]].send_to.push_back(members[j]);
    plan[members[j]].receive_from.push_back(members[i]);
    last_exchanged_[{members[i], members[j]}] = round;
  };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (!selected.sends.at(i, j)) continue;
      send(i, j);
      if (selected.additions.at(i, j)) plan[members[i]].low_priority_to.insert(members[j]);
    }
  }
  // A joiner gets a trained model in its first round: the fastest uploader that is no joiner
  // itself sends to it, unless the plan has one send to it already.
  auto joiner = [&](TrainerId t) { return unfed_.count(t) > 0; };
  for (int j = 0; j < n; ++j) {
    if (!joiner(members[j])) continue;
    const std::vector<TrainerId>& senders = plan[members[j]].receive_from;
    if (!std::all_of(senders.begin(), senders.end(), joiner)) continue;
    int best = -1;
    for (int i = 0; i < n; ++i) {
      if (i == j || joiner(members[i])) continue;
      if (best < 0 || problem.upload[i] > problem.upload[best]) best = i;
    }
    if (best >= 0) send(best, j);  // none: only joiners, nobody has a trained model to give
  }
  for (TrainerId t : members) unfed_.erase(t);
  return plan;
}

}  // namespace syncopate::sync
