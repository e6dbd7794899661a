#include "sync/waiting_room.h"

#include <limits>

namespace syncopate::sync {

void WaitingRoom::Add(TrainerId trainer, int64_t clock) {
  SetInOrder(clock_of_, ordered_, trainer, clock);
}

void WaitingRoom::Remove(TrainerId trainer) { EraseInOrder(clock_of_, ordered_, trainer); }

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
