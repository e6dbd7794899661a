// Trainers that reported a clock and await their grant, ordered by that clock, so that a policy
// granting "every waiter within the bound" touches only those it grants: O(log n) per waiter,
// however many others wait.
#ifndef SYNCOPATE_SYNC_WAITING_ROOM_H_
#define SYNCOPATE_SYNC_WAITING_ROOM_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "sync/clock_table.h"

namespace syncopate::sync {

// Not thread-safe; owned by one policy.
class WaitingRoom {
 public:
  // `trainer` waits at `clock` (replacing any earlier wait of it).
  void Add(TrainerId trainer, int64_t clock) { waiting_.Set(trainer, clock); }
  // A no-op for a trainer that does not wait.
  void Remove(TrainerId trainer) { waiting_.Erase(trainer); }
  bool Contains(TrainerId trainer) const { return waiting_.Get(trainer).has_value(); }
  size_t size() const { return waiting_.size(); }
  // Removes and returns every waiter at a clock <= `max_clock`, as (trainer, clock), in clock
  // order and, within a clock, in trainer order.
  std::vector<std::pair<TrainerId, int64_t>> TakeUpTo(int64_t max_clock) {
    return waiting_.TakeUpTo(max_clock);
  }
  // Every waiter within `bound` clocks of `min` (bound < 0: every waiter), as TakeUpTo; no
  // overflow for large bounds.
  std::vector<std::pair<TrainerId, int64_t>> TakeWithin(int64_t min, int64_t bound);

 private:
  ClockTable waiting_;  // each waiter at the clock it waits at
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_WAITING_ROOM_H_
