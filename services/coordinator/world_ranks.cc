#include "coordinator/world_ranks.h"

#include <iterator>
#include <limits>

namespace syncopate::coordinator {

void WorldRanks::Add(uint32_t rank, sync::TrainerId id) {
  stale_ |= order_.emplace(rank, id).second;
}

void WorldRanks::Remove(uint32_t rank, sync::TrainerId id) {
  stale_ |= order_.erase({rank, id}) > 0;
}

std::optional<sync::TrainerId> WorldRanks::AtRank(uint32_t rank) const {
  auto it = order_.upper_bound({rank, std::numeric_limits<sync::TrainerId>::max()});
  if (it == order_.begin() || std::prev(it)->first != rank) return std::nullopt;
  return std::prev(it)->second;
}

uint32_t WorldRanks::PlaceOf(sync::TrainerId id) {
  if (stale_) {
    places_.clear();
    uint32_t place = 0;
    for (const auto& [rank, member] : order_) places_[member] = place++;
    stale_ = false;
  }
  auto it = places_.find(id);
  return it == places_.end() ? 0 : it->second;
}

}  // namespace syncopate::coordinator
