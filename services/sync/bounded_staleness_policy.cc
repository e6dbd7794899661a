#include "sync/bounded_staleness_policy.h"

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

BoundedStalenessPolicy::BoundedStalenessPolicy(BoundedStalenessConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout), config_(std::move(config)) {}

absl::StatusOr<int64_t> BoundedStalenessPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                                       Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  cuts_.Forget(trainer);
  // Start at the slowest live trainer's clock: never the new slowest (it would stall everyone),
  // never ahead (it would break the bound). Under BSP that clock is the last closed round.
  const int64_t start = clocks_.Min().value_or(floor_clock_);
  clocks_.Set(trainer, start);
  waiting_.Add(trainer, start);
  decisions->Append(Evaluate(now));
  return start;
}

absl::StatusOr<Decisions> BoundedStalenessPolicy::OnClock(TrainerId trainer, int64_t clock,
                                                          absl::Time now) {
  if (absl::Status s = CheckReport(trainer, clock, waiting_.Contains(trainer)); !s.ok()) return s;
  clocks_.Set(trainer, clock);
  if (config_.round_snapshots) cuts_.Record(trainer, clock);  // only rounds take cuts
  waiting_.Add(trainer, clock);
  return Evaluate(now);
}

Decisions BoundedStalenessPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  if (!clocks_.Get(trainer)) return {};
  clocks_.Erase(trainer);
  waiting_.Remove(trainer);
  return Evaluate(now);
}

Decisions BoundedStalenessPolicy::OnTick(absl::Time now) { return Evaluate(now); }

void BoundedStalenessPolicy::RecoverRounds(int64_t last_closed_round) {
  if (config_.round_snapshots) last_closed_round_ = floor_clock_ = last_closed_round;
}

void BoundedStalenessPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  if (config_.round_snapshots) cuts_.Resume(r.trainer, r.last_cut, r.clock);
  if (r.awaiting_grant) waiting_.Add(r.trainer, r.clock);
  decisions->Append(Evaluate(now));
}

Decisions BoundedStalenessPolicy::Evaluate(absl::Time now) {
  Decisions decisions;
  if (!gate_.Open(clocks_.size(), now)) return decisions;
  std::optional<int64_t> min = clocks_.Min();
  if (!min) return decisions;
  floor_clock_ = *min;
  if (config_.round_snapshots) {
    // Round r is every trainer's push of clock r; no trainer can be past it before it closes.
    while (last_closed_round_ < *min) {
      decisions.close_rounds.push_back(RoundClose{++last_closed_round_, cuts_.Take(),
                                                  config_.aggregation,
                                                  static_cast<int>(clocks_.size())});
    }
  }
  for (const auto& [trainer, clock] : waiting_.TakeWithin(*min, config_.staleness)) {
    const PullSpec pull = config_.round_snapshots
                              ? PullSpec::Round(clock, cuts_.last_taken(trainer))
                              : PullSpec::Live();
    decisions.grants.push_back(Grant{trainer, clock, pull, config_.staleness});
  }
  return decisions;
}

}  // namespace syncopate::sync
