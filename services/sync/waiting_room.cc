#include "sync/waiting_room.h"

#include <limits>

namespace syncopate::sync {

void WaitingRoom::Add(TrainerId trainer, int64_t clock) {
  auto [it, inserted] = clock_of_.try_emplace(trainer, clock);
  if (inserted) {
    ordered_.emplace(clock, trainer);
    return;
  }
  MoveInOrder(ordered_, trainer, it->second, clock);
  it->second = clock;
}

void WaitingRoom::Remove(TrainerId trainer) {
  auto it = clock_of_.find(trainer);
  if (it == clock_of_.end()) return;
  ordered_.erase({it->second, trainer});
  clock_of_.erase(it);
}

std::vector<std::pair<TrainerId, int64_t>> WaitingRoom::TakeUpTo(int64_t max_clock) {
  std::vector<std::pair<TrainerId, int64_t>> taken;
  auto it = ordered_.begin();
  for (; it != ordered_.end() && it->first <= max_clock; ++it) {
    taken.emplace_back(it->second, it->first);
    clock_of_.erase(it->second);
  }
  ordered_.erase(ordered_.begin(), it);
  return taken;
}

std::vector<std::pair<TrainerId, int64_t>> WaitingRoom::TakeWithin(int64_t min, int64_t bound) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return TakeUpTo(bound < 0 || min > kMax - bound ? kMax : min + bound);
}

}  // namespace syncopate::sync
