#include "sync/peer_round_policy.h"

#include <algorithm>
#include <limits>

#include "sync/dssync_grouping.h"

namespace syncopate::sync {
namespace {

// Weight of a new transfer sample in the bandwidth estimate.
constexpr double kSampleWeight = 0.3;

}  // namespace

PeerRoundPolicy::PeerRoundPolicy(PeerRoundConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout),
      config_(std::move(config)),
      bandwidth_(kSampleWeight, LinkRates{1, 1}),
      rng_(config_.seed) {}

int PeerRoundPolicy::GroupOf(TrainerId trainer) const {
  auto it = group_of_.find(trainer);
  return it == group_of_.end() ? -1 : it->second;
}

int PeerRoundPolicy::group_count() const { return group_count_; }

absl::StatusOr<int64_t> PeerRoundPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                                Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
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
  waiting_.Remove(trainer);
  group_of_.erase(trainer);
  group_count_ = 0;
  for (const auto& [id, group] : group_of_) group_count_ = std::max(group_count_, group + 1);
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
    decisions->grants.push_back(Grant{t, *clocks_.Get(t), pull, 0, GroupOf(t)});
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
  last_plan_ =
      config_.planner == "dssync" ? PlanGroups(members, round) : PlanMulticast(members, round);
  for (TrainerId t : members) {
    decisions->grants.push_back(Grant{t, round, PullSpec::None(), 0, GroupOf(t), last_plan_[t]});
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
  const MulticastPlan selected = config_.planner == "orpheus"
                                     ? SelectOrpheus(problem, history, round, rng_)
                                     : SelectSelMcast(problem, history, round);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (!selected.sends.at(i, j)) continue;
      plan[members[i]].send_to.push_back(members[j]);
      plan[members[j]].receive_from.push_back(members[i]);
      last_exchanged_[{members[i], members[j]}] = round;
    }
  }
  return plan;
}

std::map<TrainerId, PeerExchange> PeerRoundPolicy::PlanGroups(const std::vector<TrainerId>& members,
                                                              int64_t round) {
  DsSyncOptions options;
  options.groups = config_.groups;
  // Bandwidth-aware: trainers whose slower direction is well below the median's are spread out.
  std::vector<double> slower;
  for (TrainerId t : members) {
    if (!bandwidth_.Measured(t)) continue;
    const LinkRates r = bandwidth_.Estimate(t);
    slower.push_back(std::min(r.upload, r.download));
  }
  if (!slower.empty()) {
    std::nth_element(slower.begin(), slower.begin() + slower.size() / 2, slower.end());
    const double median = slower[slower.size() / 2];
    for (TrainerId t : members) {
      const LinkRates r = bandwidth_.Estimate(t);
      if (bandwidth_.Measured(t) && std::min(r.upload, r.download) < config_.slow_fraction * median)
        options.slow.push_back(t);
    }
  }
  std::map<TrainerId, PeerExchange> plan;
  group_of_.clear();
  const std::vector<std::vector<TrainerId>> groups =
      DsSyncGroups(members, config_.seed, round, options);
  group_count_ = static_cast<int>(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    for (TrainerId t : groups[g]) {
      group_of_[t] = static_cast<int>(g);
      PeerExchange& exchange = plan[t];
      exchange.round = round;
      for (TrainerId peer : groups[g]) {
        if (peer == t) continue;
        exchange.send_to.push_back(peer);
        exchange.receive_from.push_back(peer);
      }
    }
  }
  return plan;
}

}  // namespace syncopate::sync
