#include "sync/hybrid_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

Grouping GroupBySpeed(std::vector<std::pair<TrainerId, double>> step_seconds, int max_groups,
                      double split_ratio) {
  std::sort(step_seconds.begin(), step_seconds.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  // Candidate cuts after position i, by the ratio of neighbours' step times.
  std::vector<std::pair<double, size_t>> ratios;
  for (size_t i = 0; i + 1 < step_seconds.size(); ++i) {
    const double fast = std::max(step_seconds[i].second, 1e-9);
    const double ratio = step_seconds[i + 1].second / fast;
    if (ratio >= split_ratio) ratios.emplace_back(ratio, i);
  }
  std::sort(ratios.begin(), ratios.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  if (static_cast<int>(ratios.size()) > max_groups - 1) ratios.resize(std::max(0, max_groups - 1));
  std::set<size_t> cuts;
  for (const auto& [ratio, i] : ratios) cuts.insert(i);
  Grouping groups(1);
  for (size_t i = 0; i < step_seconds.size(); ++i) {
    groups.back().push_back(step_seconds[i].first);
    if (cuts.count(i) > 0) groups.emplace_back();
  }
  if (groups.back().empty()) groups.pop_back();
  return groups;
}

HybridPolicy::HybridPolicy(HybridConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout), config_(config) {}

int HybridPolicy::GroupOf(TrainerId trainer) const {
  auto it = group_.find(trainer);
  return it == group_.end() ? -1 : it->second;
}

int HybridPolicy::group_count() const { return static_cast<int>(members_.size()); }

void HybridPolicy::Assign(TrainerId trainer, int group) {
  const bool reported = reported_.count(trainer) > 0;
  Unassign(trainer);  // a no-op for a trainer in no group yet
  group_[trainer] = group;
  members_[group].insert(trainer);
  if (reported) MarkReported(trainer);
}

void HybridPolicy::Unassign(TrainerId trainer) {
  auto it = group_.find(trainer);
  if (it == group_.end()) return;
  ClearReported(trainer);
  const int group = it->second;
  group_.erase(it);
  std::set<TrainerId>& members = members_[group];
  members.erase(trainer);
  if (members.empty()) {
    members_.erase(group);
    reported_in_.erase(group);
  }
}

void HybridPolicy::MarkReported(TrainerId trainer) {
  if (reported_.insert(trainer).second) ++reported_in_[group_.at(trainer)];
}

void HybridPolicy::ClearReported(TrainerId trainer) {
  if (reported_.erase(trainer) > 0) --reported_in_[group_.at(trainer)];
}

std::optional<double> HybridPolicy::StepSeconds(TrainerId trainer) const {
  auto it = speed_.find(trainer);
  return it == speed_.end() ? std::nullopt : it->second.ewma;
}

absl::StatusOr<int64_t> HybridPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                             Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  cuts_.Forget(trainer);
  clocks_.Set(trainer, 0);
  speed_.erase(trainer);
  // Before the start everyone forms group 0 (BSP while speeds are measured); a late joiner is a
  // group of its own, so it can hold up nobody.
  const bool started = gate_.Open(clocks_.size() - 1, now);
  Assign(trainer, started ? next_group_++ : 0);
  newcomers_.insert(trainer);
  decisions->Append(Evaluate(now));
  return 0;
}

absl::StatusOr<Decisions> HybridPolicy::OnClock(TrainerId trainer, int64_t clock, absl::Time now) {
  if (absl::Status s = CheckReport(trainer, clock,
                                   newcomers_.count(trainer) > 0 || reported_.count(trainer) > 0);
      !s.ok())
    return s;
  clocks_.Set(trainer, clock);
  cuts_.Record(trainer, clock);
  MarkReported(trainer);
  return Evaluate(now);
}

Decisions HybridPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  if (!clocks_.Get(trainer)) return {};
  clocks_.Erase(trainer);
  Unassign(trainer);
  speed_.erase(trainer);
  newcomers_.erase(trainer);
  // Its reported pushes stay in cuts_ and go into the next round that closes.
  return Evaluate(now);
}

Decisions HybridPolicy::OnTick(absl::Time now) { return Evaluate(now); }

void HybridPolicy::RecoverRounds(int64_t last_closed_round) {
  last_closed_round_ = last_closed_round;
}

void HybridPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  cuts_.Resume(r.trainer, r.last_cut, r.clock);
  Assign(r.trainer, 0);
  if (r.awaiting_grant) {
    // Pushes no round took yet wait for the group's round; otherwise the grant was lost.
    if (r.clock > r.last_cut) {
      MarkReported(r.trainer);
    } else {
      newcomers_.insert(r.trainer);
    }
  }
  decisions->Append(Evaluate(now));
}

void HybridPolicy::ObserveCompute(TrainerId trainer, int64_t clock, double compute_seconds) {
  if (!clocks_.Get(trainer)) return;
  auto [it, fresh] = speed_.try_emplace(trainer);
  Speed& s = it->second;
  if (!fresh && clock > s.clock && compute_seconds >= s.compute_seconds) {
    const double step =
        (compute_seconds - s.compute_seconds) / static_cast<double>(clock - s.clock);
    s.ewma = s.ewma ? config_.ewma_alpha * step + (1 - config_.ewma_alpha) * *s.ewma : step;
  }
  s.clock = clock;
  s.compute_seconds = compute_seconds;
}

Decisions HybridPolicy::Evaluate(absl::Time now) {
  Decisions decisions;
  if (!gate_.Open(clocks_.size(), now)) return decisions;
  for (TrainerId id : newcomers_) {
    decisions.grants.push_back(Grant{id, *clocks_.Get(id),
                                     PullSpec::Round(last_closed_round_, cuts_.last_taken(id)), 0,
                                     group_[id]});
  }
  newcomers_.clear();
  CloseCompleteGroups(&decisions);
  if (closes_since_regroup_ >= config_.regroup_every) {
    closes_since_regroup_ = 0;
    MaybeRegroup();
    CloseCompleteGroups(&decisions);
  }
  return decisions;
}

void HybridPolicy::CloseCompleteGroups(Decisions* decisions) {
  for (const auto& [g, group_ids] : members_) {
    const auto& ids = group_ids;  // a lambda may capture a reference, not a structured binding
    if (reported_in_[g] < ids.size()) continue;
    // The group's members, plus departed trainers whose reported pushes no round took yet.
    RoundClose close{++last_closed_round_, cuts_.Take([&](TrainerId id) {
                       return !clocks_.Get(id) || ids.count(id) > 0;
                     }),
                     config_.aggregation, static_cast<int>(group_.size())};
    for (TrainerId id : ids) {
      ClearReported(id);
      decisions->grants.push_back(
          Grant{id, *clocks_.Get(id), PullSpec::Round(close.round, cuts_.last_taken(id)), 0, g});
    }
    decisions->close_rounds.push_back(std::move(close));
    ++closes_since_regroup_;
  }
}

void HybridPolicy::MaybeRegroup() {
  std::vector<std::pair<TrainerId, double>> measured;
  for (const auto& [id, g] : group_) {
    std::optional<double> step = StepSeconds(id);
    if (!step) return;  // regroup only when every live trainer's speed is known
    measured.emplace_back(id, *step);
  }
  const Grouping proposal = GroupBySpeed(measured, config_.max_groups, config_.split_ratio);
  std::set<std::set<TrainerId>> proposed;
  for (const auto& g : proposal) proposed.emplace(g.begin(), g.end());
  std::map<int, std::set<TrainerId>> current_by_id;
  for (const auto& [id, g] : group_) current_by_id[g].insert(id);
  std::set<std::set<TrainerId>> current;
  for (const auto& [g, ids] : current_by_id) current.insert(ids);
  if (proposed == current) {
    proposal_.reset();
    return;
  }
  if (proposal_ != proposed) {
    proposal_ = proposed;  // adopt only if the next regrouping proposes the same
    return;
  }
  proposal_.reset();
  for (size_t g = 0; g < proposal.size(); ++g) {
    for (TrainerId id : proposal[g]) Assign(id, static_cast<int>(g));
  }
  next_group_ = static_cast<int>(proposal.size());
}

}  // namespace syncopate::sync
