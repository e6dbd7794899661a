// The trainers in the job ordered by (rank, id), as a training script's world sees them: each
// one's place in that order is its world rank, the count is the world size, and the first is the
// job's evaluator. Places are computed once per change of the membership, not per grant.
#ifndef SYNCOPATE_COORDINATOR_WORLD_RANKS_H_
#define SYNCOPATE_COORDINATOR_WORLD_RANKS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "sync/clock_table.h"

namespace syncopate::coordinator {

// Not thread-safe (the coordinator's lock guards it).
class WorldRanks {
 public:
  // Trainer `id` joined with `rank` (the rank it asked for, not its place).
  void Add(uint32_t rank, sync::TrainerId id);
  // Trainer `id`, which joined with `rank`, left. Nothing for one not here.
  void Remove(uint32_t rank, sync::TrainerId id);

  // The trainer that joined with `rank`, if one did; of several (a replacement joined before the
  // one it replaces was evicted), the one with the highest id.
  std::optional<sync::TrainerId> AtRank(uint32_t rank) const;
  // The first in the order (0 when none): the evaluator.
  sync::TrainerId First() const { return order_.empty() ? 0 : order_.begin()->second; }
  // `id`'s place in the order (its world rank); 0 for a trainer not here.
  uint32_t PlaceOf(sync::TrainerId id);
  uint32_t size() const { return static_cast<uint32_t>(order_.size()); }

 private:
  std::set<std::pair<uint32_t, sync::TrainerId>> order_;
  std::unordered_map<sync::TrainerId, uint32_t> places_;  // valid unless stale_
  bool stale_ = false;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_WORLD_RANKS_H_
