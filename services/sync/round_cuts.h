// The clock each trainer last reported since it was last cut: what the next round that includes
// it takes from it. Departed trainers stay listed until a round takes their cut, so their reported
// pushes are still applied.
#ifndef SYNCOPATE_SYNC_ROUND_CUTS_H_
#define SYNCOPATE_SYNC_ROUND_CUTS_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "sync/clock_table.h"

namespace syncopate::sync {

class RoundCuts {
 public:
  void Record(TrainerId trainer, int64_t clock) { open_[trainer] = clock; }
  bool empty() const { return open_.empty(); }

  // Removes and returns the cuts of the trainers `take` selects (all when it is empty). `take` is
  // asked in no particular order, so it must not have side effects.
  std::map<TrainerId, int64_t> Take(const std::function<bool(TrainerId)>& take = nullptr) {
    std::map<TrainerId, int64_t> taken;
    absl::erase_if(open_, [&](const std::pair<const TrainerId, int64_t>& cut) {
      if (take && !take(cut.first)) return false;
      last_[cut.first] = cut.second;
      taken.insert(cut);
      return true;
    });
    return taken;
  }

  // The clock up to which the trainer's pushes have been taken by some round; -1 if none.
  int64_t last_taken(TrainerId trainer) const {
    auto it = last_.find(trainer);
    return it == last_.end() ? -1 : it->second;
  }
  // A trainer resumes after a coordinator restart: a closed round took its pushes up to
  // `last_cut` (-1: none), and those after it up to `clock` are pending.
  void Resume(TrainerId trainer, int64_t last_cut, int64_t clock) {
    Forget(trainer);
    if (last_cut >= 0) last_[trainer] = last_cut;
    if (clock > last_cut) open_[trainer] = clock;
  }
  // Forgets a trainer entirely (a new incarnation starts its clocks afresh).
  void Forget(TrainerId trainer) {
    open_.erase(trainer);
    last_.erase(trainer);
  }

 private:
  absl::flat_hash_map<TrainerId, int64_t> open_;
  absl::flat_hash_map<TrainerId, int64_t> last_;
};

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_ROUND_CUTS_H_
