// Clocks of the live trainers (clock = iterations a trainer has completed and pushed), with the
// minimum that every staleness rule is measured against.
#ifndef SYNCOPATE_SYNC_CLOCK_TABLE_H_
#define SYNCOPATE_SYNC_CLOCK_TABLE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace syncopate::sync {

using TrainerId = uint64_t;

// Trainers ordered by clock, then id: the index ClockTable and WaitingRoom keep beside their maps.
using ClockOrder = std::set<std::pair<int64_t, TrainerId>>;
using ClockOf = absl::flat_hash_map<TrainerId, int64_t>;

// Inserts or moves `trainer` at `clock` in both `clock_of` and `order`, reusing its node in
// `order` rather than freeing one and allocating another.
void SetInOrder(ClockOf& clock_of, ClockOrder& order, TrainerId trainer, int64_t clock);
// Removes `trainer` from both; a no-op for an unknown one.
void EraseInOrder(ClockOf& clock_of, ClockOrder& order, TrainerId trainer);

// Not thread-safe; owned by one policy.
class ClockTable {
 public:
  // Inserts or moves a trainer's clock.
  void Set(TrainerId trainer, int64_t clock);
  // Removes a trainer; a no-op for an unknown one.
  void Erase(TrainerId trainer);
  std::optional<int64_t> Get(TrainerId trainer) const;
  // Minimum / maximum over the trainers in the table; nullopt when it is empty. O(1).
  std::optional<int64_t> Min() const;
  std::optional<int64_t> Max() const;
  size_t size() const { return clocks_.size(); }
  // The trainers in the table, in increasing id order.
  std::vector<TrainerId> Members() const;
  // The trainers at `clock`, in increasing id order. O(log n + their number).
  std::vector<TrainerId> At(int64_t clock) const;

 private:
  ClockOf clocks_;
  ClockOrder ordered_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_CLOCK_TABLE_H_
