// Clocks of the live trainers (clock = iterations a trainer has completed and pushed), with the
// minimum that every staleness rule is measured against.
#ifndef SYNCOPATE_SYNC_CLOCK_TABLE_H_
#define SYNCOPATE_SYNC_CLOCK_TABLE_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"

namespace syncopate::sync {

using TrainerId = uint64_t;

// Trainers ordered by clock, then id: the index ClockTable and WaitingRoom keep beside their maps.
// A B-tree: tens of entries per node rather than one allocation per trainer, so moving a trainer
// touches a few cache lines (at 10,000 trainers a red-black tree was a quarter of a simulation).
using ClockOrder = absl::btree_set<std::pair<int64_t, TrainerId>>;
using ClockOf = absl::flat_hash_map<TrainerId, int64_t>;

// Inserts or moves `trainer` at `clock` in both `clock_of` and `order`.
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
