#include "sync/delta_staleness.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace syncopate::sync {

DeltaStaleness::Trainer& DeltaStaleness::At(TrainerId id) {
  if (trainers_.size() < id) trainers_.resize(id);
  return trainers_[id - 1];
}

DeltaStaleness::Trainer* DeltaStaleness::Find(TrainerId id) {
  return id >= 1 && id <= trainers_.size() ? &trainers_[id - 1] : nullptr;
}

void DeltaStaleness::Joined(TrainerId trainer, int64_t start) {
  Trainer& t = At(trainer);
  t = Trainer{};
  t.version = applied_;  // it loads the live model as it joins
  t.own_clock = start;
  t.applied_clock = start;
  t.start = start;
}

void DeltaStaleness::ReadLive(TrainerId trainer, int64_t own_clock) {
  Trainer& t = At(trainer);
  t.version = applied_;
  t.own_clock = own_clock;
}

void DeltaStaleness::ReadRound(TrainerId trainer, int64_t round, int64_t own_clock) {
  Trainer& t = At(trainer);
  auto it = round_versions_.find(round);
  t.version = it == round_versions_.end() ? 0 : it->second;
  t.own_clock = own_clock < 0 ? t.start : own_clock;
}

void DeltaStaleness::Pushed(TrainerId trainer, int64_t clock) {
  Trainer& t = At(trainer);
  const Pending delta{pushes_++, clock, t.version, t.own_clock};
  if (rounds_) {
    t.pending.push_back(delta);
  } else {
    Apply(t, delta);
  }
}

void DeltaStaleness::Closed(const RoundClose& close) {
  std::vector<std::pair<Pending, Trainer*>> taken;
  for (const auto& [id, cut] : close.cuts) {
    Trainer* t = Find(id);
    if (t == nullptr) continue;
    while (!t->pending.empty() && t->pending.front().clock <= cut) {
      taken.emplace_back(t->pending.front(), t);
      t->pending.pop_front();
    }
  }
  std::sort(taken.begin(), taken.end(),
            [](const auto& a, const auto& b) { return a.first.seq < b.first.seq; });
  for (const auto& [delta, trainer] : taken) Apply(*trainer, delta);
  for (const auto& [id, cut] : close.cuts) {
    // Deltas it pushed before this count began, if any, are in the round too.
    Trainer* t = Find(id);
    if (t == nullptr || cut <= t->applied_clock) continue;
    applied_ += cut - t->applied_clock;
    t->applied_clock = cut;
  }
  round_versions_[close.round] = applied_;
}

void DeltaStaleness::Apply(Trainer& trainer, const Pending& delta) {
  // The trainer's own deltas applied since it read the model are in its local model too.
  const int64_t own_since = std::max<int64_t>(0, trainer.applied_clock - delta.own_clock);
  const int64_t missed = std::max<int64_t>(0, applied_ - delta.version - own_since);
  trainer.applied_clock = std::max(trainer.applied_clock, delta.clock);
  ++applied_;
  missed_.Add(missed);
}

void MissedCounts::Add(int64_t missed) {
  ++counts_[missed];
  ++count_;
  sum_ += static_cast<double>(missed);
}

double MissedCounts::Mean() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0; }

double MissedCounts::Quantile(double q) const { return HistogramQuantile(counts_, q); }

double HistogramQuantile(const std::map<int64_t, int64_t>& counts, double q) {
  int64_t total = 0;
  for (const auto& [value, count] : counts) total += count;
  const double want = q * static_cast<double>(total);
  int64_t seen = 0;
  for (const auto& [value, count] : counts) {
    seen += count;
    if (static_cast<double>(seen) >= want) return static_cast<double>(value);
  }
  return 0;
}

}  // namespace syncopate::sync
