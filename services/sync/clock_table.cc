#include "sync/clock_table.h"

#include <algorithm>
#include <cassert>

namespace syncopate::sync {

void ClockTable::Set(TrainerId trainer, int64_t clock) {
  auto [it, inserted] = clocks_.try_emplace(trainer, clock);
  if (inserted) {
    ordered_.emplace(clock, trainer);
    return;
  }
  if (it->second == clock) return;
  [[maybe_unused]] const size_t erased = ordered_.erase({it->second, trainer});
  assert(erased == 1 && "the map and the order disagree");
  ordered_.emplace(clock, trainer);
  it->second = clock;
}

void ClockTable::Erase(TrainerId trainer) {
  auto it = clocks_.find(trainer);
  if (it == clocks_.end()) return;
  ordered_.erase({it->second, trainer});
  clocks_.erase(it);
}

std::vector<std::pair<TrainerId, int64_t>> ClockTable::TakeUpTo(int64_t max_clock) {
  std::vector<std::pair<TrainerId, int64_t>> taken;
  auto it = ordered_.begin();
  for (; it != ordered_.end() && it->first <= max_clock; ++it) {
    taken.emplace_back(it->second, it->first);
    clocks_.erase(it->second);
  }
  ordered_.erase(ordered_.begin(), it);
  return taken;
}

std::optional<int64_t> ClockTable::Get(TrainerId trainer) const {
  auto it = clocks_.find(trainer);
  if (it == clocks_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> ClockTable::Min() const {
  if (ordered_.empty()) return std::nullopt;
  return ordered_.begin()->first;
}

std::optional<int64_t> ClockTable::Max() const {
  if (ordered_.empty()) return std::nullopt;
  return ordered_.rbegin()->first;
}

std::vector<TrainerId> ClockTable::At(int64_t clock) const {
  std::vector<TrainerId> at;
  for (auto it = ordered_.lower_bound({clock, 0}); it != ordered_.end() && it->first == clock;
       ++it) {
    at.push_back(it->second);
  }
  return at;
}

std::vector<TrainerId> ClockTable::Members() const {
  std::vector<TrainerId> members;
  members.reserve(clocks_.size());
  for (const auto& [trainer, clock] : clocks_) members.push_back(trainer);
  std::sort(members.begin(), members.end());
  return members;
}

}  // namespace syncopate::sync
