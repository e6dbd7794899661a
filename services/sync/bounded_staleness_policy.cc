#include "sync/bounded_staleness_policy.h"

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

void Decisions::Append(Decisions other) {
  close_rounds.insert(close_rounds.end(), other.close_rounds.begin(), other.close_rounds.end());
  grants.insert(grants.end(), other.grants.begin(), other.grants.end());
}

BoundedStalenessPolicy::BoundedStalenessPolicy(BoundedStalenessConfig config)
    : config_(std::move(config)) {}

absl::StatusOr<int64_t> BoundedStalenessPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                                       Decisions* decisions) {
  if (clocks_.Get(trainer)) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", trainer, " already joined"));
  }
  if (!first_join_) first_join_ = now;
  // Start at the slowest live trainer's clock: never the new slowest (it would stall everyone),
  // never ahead (it would break the bound). Under BSP that clock is the last closed round.
  const int64_t start = clocks_.Min().value_or(floor_clock_);
  clocks_.Set(trainer, start);
  waiting_.insert(trainer);
  decisions->Append(Evaluate(now));
  return start;
}

absl::StatusOr<Decisions> BoundedStalenessPolicy::OnClock(TrainerId trainer, int64_t clock,
                                                          absl::Time now) {
  std::optional<int64_t> current = clocks_.Get(trainer);
  if (!current) {
    return absl::FailedPreconditionError(absl::StrCat("trainer ", trainer, " is not a member"));
  }
  if (waiting_.count(trainer) > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer ", trainer, " reported clock ", clock, " before its grant"));
  }
  if (clock != *current + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer ", trainer, " reported clock ", clock, ", expected ", *current + 1));
  }
  clocks_.Set(trainer, clock);
  waiting_.insert(trainer);
  return Evaluate(now);
}

Decisions BoundedStalenessPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  if (!clocks_.Get(trainer)) return {};
  clocks_.Erase(trainer);
  waiting_.erase(trainer);
  return Evaluate(now);
}

Decisions BoundedStalenessPolicy::OnTick(absl::Time now) { return Evaluate(now); }

Decisions BoundedStalenessPolicy::Evaluate(absl::Time now) {
  Decisions decisions;
  if (!started_) {
    const bool enough = static_cast<int>(clocks_.size()) >= config_.min_trainers;
    const bool timed_out = first_join_ && now - *first_join_ >= config_.start_timeout;
    if (!enough && !timed_out) return decisions;
    started_ = true;
  }
  std::optional<int64_t> min = clocks_.Min();
  if (!min) return decisions;
  floor_clock_ = *min;
  if (config_.round_snapshots) {
    while (last_closed_round_ < *min) decisions.close_rounds.push_back(++last_closed_round_);
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const int64_t clock = *clocks_.Get(*it);
    if (config_.staleness >= 0 && clock - *min > config_.staleness) {
      ++it;
      continue;
    }
    const PullSpec pull = config_.round_snapshots ? PullSpec::Round(clock) : PullSpec::Live();
    decisions.grants.push_back(Grant{*it, clock, pull, config_.staleness});
    it = waiting_.erase(it);
  }
  return decisions;
}

}  // namespace syncopate::sync
