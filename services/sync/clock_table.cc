#include "sync/clock_table.h"

#include <algorithm>
#include <cassert>

namespace syncopate::sync {

void SetInOrder(ClockOf& clock_of, ClockOrder& order, TrainerId trainer, int64_t clock) {
  auto [it, inserted] = clock_of.try_emplace(trainer, clock);
  if (inserted) {
    order.emplace(clock, trainer);
    return;
  }
  if (it->second == clock) return;
  [[maybe_unused]] const size_t erased = order.erase({it->second, trainer});
  assert(erased == 1 && "the map and the order disagree");
  order.emplace(clock, trainer);
  it->second = clock;
}

void EraseInOrder(ClockOf& clock_of, ClockOrder& order, TrainerId trainer) {
  auto it = clock_of.find(trainer);
  if (it == clock_of.end()) return;
  order.erase({it->second, trainer});
  clock_of.erase(it);
}

void ClockTable::Set(TrainerId trainer, int64_t clock) {
  SetInOrder(clocks_, ordered_, trainer, clock);
}

void ClockTable::Erase(TrainerId trainer) { EraseInOrder(clocks_, ordered_, trainer); }

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
