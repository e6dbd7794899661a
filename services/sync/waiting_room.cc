#include "sync/waiting_room.h"

#include <limits>

namespace syncopate::sync {

std::vector<std::pair<TrainerId, int64_t>> WaitingRoom::TakeWithin(int64_t min, int64_t bound) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return TakeUpTo(bound < 0 || min > kMax - bound ? kMax : min + bound);
}

}  // namespace syncopate::sync
