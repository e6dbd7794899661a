#include "sync/wbsp_policy.h"

#include "absl/strings/str_cat.h"

namespace syncopate::sync {

WbspPolicy::WbspPolicy(WbspConfig config)
    : ClockedPolicy(config.min_trainers, config.start_timeout), config_(config) {}

absl::StatusOr<int64_t> WbspPolicy::OnJoin(TrainerId trainer, absl::Time now,
                                           Decisions* decisions) {
  if (absl::Status s = CheckJoin(trainer); !s.ok()) return s;
  gate_.NoteJoin(now);
  cuts_.Forget(trainer);
  clocks_.Set(trainer, 0);
  newcomers_[trainer] = -1;
  GrantNewcomers(now, decisions);
  return 0;
}

absl::StatusOr<Decisions> WbspPolicy::OnClock(TrainerId trainer, int64_t clock, absl::Time now) {
  if (absl::Status s = CheckReport(trainer, clock, newcomers_.count(trainer) > 0); !s.ok())
    return s;
  clocks_.Set(trainer, clock);
  cuts_.Record(trainer, clock);
  pushed_.insert(trainer);
  Decisions decisions;
  MaybeClose(&decisions);
  PullSpec pull = PullSpec::None();
  if (auto it = pull_.find(trainer); it != pull_.end()) {
    pull = it->second;
    pull_.erase(it);
  }
  decisions.grants.push_back(Grant{trainer, clock, pull, -1});
  GrantNewcomers(now, &decisions);
  return decisions;
}

Decisions WbspPolicy::OnLeave(TrainerId trainer, absl::Time now) {
  Decisions decisions;
  if (!clocks_.Get(trainer)) return decisions;
  clocks_.Erase(trainer);
  newcomers_.erase(trainer);
  pushed_.erase(trainer);
  pull_.erase(trainer);
  // Its reported pushes stay in cuts_; the round may now be complete without it.
  MaybeClose(&decisions);
  GrantNewcomers(now, &decisions);
  return decisions;
}

Decisions WbspPolicy::OnTick(absl::Time now) {
  Decisions decisions;
  if (gate_.Open(clocks_.size(), now)) MaybeClose(&decisions);
  GrantNewcomers(now, &decisions);
  return decisions;
}

void WbspPolicy::RecoverRounds(int64_t last_closed_round) {
  last_closed_round_ = last_closed_round;
}

void WbspPolicy::Resume(const Resumption& r, absl::Time now, Decisions* decisions) {
  cuts_.Resume(r.trainer, r.last_cut, r.clock);
  if (r.clock > r.last_cut) pushed_.insert(r.trainer);
  // The latest round holds its pushes up to its cut; the rest stay in its local model.
  if (r.awaiting_grant) newcomers_[r.trainer] = r.last_cut;
  // Rounds wait for everyone expected back (or the window), as the first grants do.
  if (gate_.Open(clocks_.size(), now)) MaybeClose(decisions);
  GrantNewcomers(now, decisions);
}

void WbspPolicy::MaybeClose(Decisions* decisions) {
  if (pushed_.empty() || pushed_.size() < clocks_.size()) return;  // pushed_ is a subset of members
  RoundClose close{++last_closed_round_, cuts_.Take(), config_.aggregation,
                   static_cast<int>(clocks_.size())};
  pushed_.clear();
  for (const auto& [id, clock] : close.cuts) {
    if (clocks_.Get(id)) {
      pull_[id] = PullSpec::Round(close.round, cuts_.last_taken(id));
    }
  }
  decisions->close_rounds.push_back(std::move(close));
}

void WbspPolicy::GrantNewcomers(absl::Time now, Decisions* decisions) {
  if (!gate_.Open(clocks_.size(), now)) return;
  for (const auto& [id, includes_clock] : newcomers_) {
    decisions->grants.push_back(
        Grant{id, *clocks_.Get(id), PullSpec::Round(last_closed_round_, includes_clock), -1});
  }
  newcomers_.clear();
}

}  // namespace syncopate::sync
