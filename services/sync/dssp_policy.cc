#include "sync/dssp_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

DsspPolicy::DsspPolicy(DsspConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout), config_(config) {}

int64_t DsspPolicy::BoundOf(TrainerId trainer) const {
  auto it = trainers_.find(trainer);
  return it == trainers_.end() ? config_.s_lo : it->second.bound;
}

absl::StatusOr<int64_t> DsspPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                           Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  const int64_t start = clocks_.Min().value_or(floor_clock_);
  clocks_.Set(trainer, start);
  trainers_[trainer] = Trainer{{}, 0, config_.s_lo};
  waiting_.Add(trainer, start);
  GrantWaiters(now, decisions);
  return start;
}

absl::StatusOr<Decisions> DsspPolicy::OnClock(TrainerId trainer, int64_t clock, absl::Time now) {
  if (absl::Status s = CheckReport(trainer, clock, waiting_.Contains(trainer)); !s.ok()) return s;
  clocks_.Set(trainer, clock);
  trainers_[trainer].pushes.Record(now);
  Decisions decisions;
  // This report gets exactly one grant: now, or later from GrantWaiters.
  if (std::optional<Grant> grant = Decide(trainer)) {
    decisions.grants.push_back(*grant);
  } else {
    waiting_.Add(trainer, clock);
  }
  // The push may have lifted the minimum and freed others.
  GrantWaiters(now, &decisions);
  return decisions;
}

Decisions DsspPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  Decisions decisions;
  if (!clocks_.Get(trainer)) return decisions;
  clocks_.Erase(trainer);
  trainers_.erase(trainer);
  waiting_.Remove(trainer);
  GrantWaiters(now, &decisions);
  return decisions;
}

Decisions DsspPolicy::OnTick(absl::Time now) {
  Decisions decisions;
  GrantWaiters(now, &decisions);
  return decisions;
}

void DsspPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  trainers_[r.trainer] = Trainer{{}, 0, config_.s_lo};
  if (r.awaiting_grant) waiting_.Add(r.trainer, r.clock);
  GrantWaiters(now, decisions);
}

std::optional<Grant> DsspPolicy::Decide(TrainerId trainer) {
  Trainer& t = trainers_[trainer];
  const int64_t clock = *clocks_.Get(trainer);
  const int64_t gap = clock - *clocks_.Min();
  if (gap <= config_.s_lo) {
    // Within the lower bound: any excursion is over.
    t.remaining = 0;
    t.bound = config_.s_lo;
    return Grant{trainer, clock, PullSpec::Live(), t.bound};
  }
  const bool capped = config_.rule == DsspRule::kCapped;
  if (capped && gap > config_.s_hi) {
    t.remaining = 0;  // the hard cap, whatever the controller granted
    return std::nullopt;
  }
  if (t.remaining > 0) {
    --t.remaining;
    return Grant{trainer, clock, PullSpec::Live(), t.bound};
  }
  if (clock != *clocks_.Max()) return std::nullopt;  // not the fastest: wait for s_lo
  // r* grants keep the gap at grant time <= gap + r* - 1, which the cap keeps <= s_hi.
  int64_t r_max = config_.s_hi - config_.s_lo;
  if (capped) r_max = std::min(r_max, config_.s_hi - gap + 1);
  const int64_t r = ChooseExtraIterations(t.pushes, trainers_[Slowest()].pushes, r_max);
  if (r == 0) return std::nullopt;
  t.remaining = r - 1;
  t.bound = gap + r - 1;
  return Grant{trainer, clock, PullSpec::Live(), t.bound};
}

TrainerId DsspPolicy::Slowest() const {
  const int64_t min = *clocks_.Min();
  TrainerId slowest = 0;
  std::optional<absl::Time> latest;
  for (TrainerId id : clocks_.At(min)) {
    const Trainer& t = trainers_.at(id);
    if (!t.pushes.has_interval()) return id;  // unknown pace: the controller cold-starts
    const absl::Time next = *t.pushes.last + t.pushes.interval();
    if (!latest || next > *latest) {
      latest = next;
      slowest = id;
    }
  }
  return slowest;
}

void DsspPolicy::GrantWaiters(absl::Time now, Decisions* decisions) {
  if (!gate_.Open(clocks_.size(), now)) return;
  std::optional<int64_t> min = clocks_.Min();
  if (!min) return;
  floor_clock_ = *min;
  for (const auto& [trainer, clock] : waiting_.TakeWithin(*min, config_.s_lo)) {
    Trainer& t = trainers_[trainer];
    t.remaining = 0;
    t.bound = config_.s_lo;
    decisions->grants.push_back(Grant{trainer, clock, PullSpec::Live(), t.bound});
  }
}

}  // namespace syncopate::sync
