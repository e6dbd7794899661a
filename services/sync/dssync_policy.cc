#include "sync/dssync_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sync/dssync_grouping.h"

namespace syncopate::sync {
DsSyncPolicy::DsSyncPolicy(DsSyncConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout), config_(std::move(config)) {}

int DsSyncPolicy::GroupOf(TrainerId trainer) const {
  auto it = group_of_.find(trainer);
  return it == group_of_.end() ? -1 : it->second;
}

absl::StatusOr<int64_t> DsSyncPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                             Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  if (final_round_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "training is finishing: its final average is round ", *final_round_, "; no new trainers"));
  }
  gate_.NoteJoin(now);
  // No round after it is shuffled yet, so the newcomer is in the next one's groups.
  const int64_t start = NewestRound();
  if (gate_.is_open() && start > 0) {
    // A job under way: the newcomer starts at that next round as if it had reported it, and waits
    // there for its group, whose exchange is its first grant. It takes its group's trained models
    // before its first step.
    clocks_.Set(trainer, start + 1);
    waiting_[trainer] = start + 1;
    MaybeRelease(trainer, decisions);
    return start + 1;
  }
  clocks_.Set(trainer, start);
  newcomers_.insert(trainer);
  GrantNewcomers(now, decisions);
  return start;
}

absl::StatusOr<Decisions> DsSyncPolicy::OnClock(TrainerId trainer, int64_t clock, absl::Time now) {
  const bool awaiting = newcomers_.count(trainer) > 0 || waiting_.count(trainer) > 0;
  if (absl::Status s = CheckReport(trainer, clock, awaiting); !s.ok()) return s;
  if (final_round_ && clock > *final_round_) {
    return absl::FailedPreconditionError(
        absl::StrCat("clock ", clock, " is past round ", *final_round_, ", the final average"));
  }
  clocks_.Set(trainer, clock);
  waiting_[trainer] = clock;
  Decisions decisions;
  GrantNewcomers(now, &decisions);
  // Reaching `clock` can only complete this trainer's own group of round `clock`.
  MaybeRelease(trainer, &decisions);
  return decisions;
}

Decisions DsSyncPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  Decisions decisions;
  if (!clocks_.Get(trainer)) return decisions;
  clocks_.Erase(trainer);
  newcomers_.erase(trainer);
  waiting_.erase(trainer);
  group_of_.erase(trainer);
  bandwidth_.Forget(trainer);
  GrantNewcomers(now, &decisions);
  ReleaseAll(&decisions);  // its group mates stop waiting for it
  return decisions;
}

Decisions DsSyncPolicy::OnTick(absl::Time now) {
  Decisions decisions;
  GrantNewcomers(now, &decisions);
  return decisions;
}

std::optional<int64_t> DsSyncPolicy::BeginFinalAverage() {
  // Nobody's grouping of it exists yet.
  if (!final_round_) final_round_ = NewestRound() + 1;
  return final_round_;
}

absl::Status DsSyncPolicy::ResumeFinalAverage(int64_t round) {
  if (round < 1) {
    return absl::InvalidArgumentError(absl::StrCat("a final round is at least 1, got ", round));
  }
  if (final_round_ && *final_round_ != round) {
    return absl::FailedPreconditionError(
        absl::StrCat("the final average is round ", *final_round_, " already, not round ", round));
  }
  final_round_ = round;
  return absl::OkStatus();
}

int64_t DsSyncPolicy::NewestRound() const {
  int64_t newest = clocks_.Max().value_or(0);
  if (!groupings_.empty()) newest = std::max(newest, groupings_.rbegin()->first);
  return newest;
}

void DsSyncPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  if (r.awaiting_grant) waiting_[r.trainer] = r.clock;
  GrantNewcomers(now, decisions);
  MaybeRelease(r.trainer, decisions);  // with the gate open already
}

void DsSyncPolicy::ObserveTransfers(TrainerId trainer, const TransferSample& sample) {
  bandwidth_.Observe(trainer, sample);
}

void DsSyncPolicy::GrantNewcomers(absl::Time now, Decisions* decisions) {
  const bool was_open = gate_.is_open();
  if (!gate_.Open(clocks_.size(), now)) return;
  for (TrainerId t : newcomers_) {
    decisions->grants.push_back(Grant{t, *clocks_.Get(t), PullSpec::Live(), -1, GroupOf(t)});
  }
  newcomers_.clear();
  // The gate held every group back (a start, a recovery): release those complete now.
  if (!was_open) ReleaseAll(decisions);
}

const DsSyncPolicy::Grouping& DsSyncPolicy::GroupsOf(int64_t round) {
  auto [it, fresh] = groupings_.try_emplace(round);
  if (!fresh) return it->second;
  const std::vector<TrainerId> members = clocks_.Members();
  DsSyncOptions options;
  options.groups = config_.groups;
  options.sizing = config_.sizing;
  options.global_average_every = config_.global_average_every;
  // Bandwidth-aware: trainers whose slower direction is well below the median's are spread out
  // (and, sized by bandwidth, their groups are smaller).
  std::vector<double> slower;
  for (TrainerId t : members) {
    if (!bandwidth_.Measured(t)) continue;
    const LinkRates r = bandwidth_.Estimate(t);
    slower.push_back(std::min(r.upload, r.download));
    if (config_.sizing == GroupSizing::kBandwidth) options.rates[t] = slower.back();
  }
  if (!slower.empty()) {
    const double median = UpperMedian(slower);
    for (TrainerId t : members) {
      const LinkRates r = bandwidth_.Estimate(t);
      if (bandwidth_.Measured(t) && std::min(r.upload, r.download) < config_.slow_fraction * median)
        options.slow.push_back(t);
    }
  }
  Grouping& grouping = it->second;
  grouping.groups = round == final_round_ ? std::vector<std::vector<TrainerId>>{members}
                                          : DsSyncGroups(members, config_.seed, round, options);
  for (size_t g = 0; g < grouping.groups.size(); ++g) {
    for (TrainerId t : grouping.groups[g]) grouping.group_of[t] = static_cast<int>(g);
  }
  group_count_ = static_cast<int>(grouping.groups.size());
  return grouping;
}

void DsSyncPolicy::MaybeRelease(TrainerId trainer, Decisions* decisions) {
  if (!gate_.is_open()) return;  // a start or a recovery waits for everyone expected
  auto waits = waiting_.find(trainer);
  if (waits == waiting_.end()) return;
  const int64_t round = waits->second;
  const Grouping& grouping = GroupsOf(round);
  // A trainer that joined after the round was shuffled is a group of its own.
  const std::vector<TrainerId> alone = {trainer};
  const std::vector<TrainerId>* group = &alone;
  int index = -1;
  if (auto it = grouping.group_of.find(trainer); it != grouping.group_of.end()) {
    index = it->second;
    group = &grouping.groups[index];
  }
  std::vector<TrainerId> released;
  for (TrainerId member : *group) {
    const std::optional<int64_t> clock = clocks_.Get(member);
    if (!clock) continue;            // gone: not waited for
    if (*clock < round) return;      // still computing this round
    auto w = waiting_.find(member);  // past it (its grant was lost to a restart): not waited for
    if (w != waiting_.end() && w->second == round) released.push_back(member);
  }
  for (TrainerId t : released) {
    PeerExchange exchange;
    exchange.round = round;
    for (TrainerId peer : released) {
      if (peer == t) continue;
      exchange.send_to.push_back(peer);
      exchange.receive_from.push_back(peer);
    }
    waiting_.erase(t);
    group_of_[t] = index;
    decisions->grants.push_back(
        Grant{t, round, PullSpec::None(), -1, index, std::move(exchange), round == final_round_});
  }
  ForgetOldRounds();
}

void DsSyncPolicy::ReleaseAll(Decisions* decisions) {
  std::vector<TrainerId> waiters;
  for (const auto& [t, clock] : waiting_) waiters.push_back(t);
  std::sort(waiters.begin(), waiters.end());               // grants in a deterministic order
  for (TrainerId t : waiters) MaybeRelease(t, decisions);  // a no-op for one released meanwhile
}

void DsSyncPolicy::ForgetOldRounds() {
  const std::optional<int64_t> min = clocks_.Min();
  if (!min) return;
  // A member at clock m still needs round m's groups while it waits there; none needs older ones.
  groupings_.erase(groupings_.begin(), groupings_.lower_bound(*min));
}

}  // namespace syncopate::sync
