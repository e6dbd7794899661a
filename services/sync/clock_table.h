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
  // Removes and returns every trainer at a clock <= `max_clock`, as (trainer, clock), in clock
  // order and, within a clock, in trainer order. O(log n + their number).
  std::vector<std::pair<TrainerId, int64_t>> TakeUpTo(int64_t max_clock);

 private:
  absl::flat_hash_map<TrainerId, int64_t> clocks_;
  // Trainers ordered by clock, then id. A B-tree: tens of entries per node rather than one
  // allocation per trainer, so moving a trainer touches a few cache lines (at 10,000 trainers a
  // red-black tree was a quarter of a simulation).
  absl::btree_set<std::pair<int64_t, TrainerId>> ordered_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_CLOCK_TABLE_H_
