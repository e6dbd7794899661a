// The coordinator's record of every trainer, by name: what GetStatus and `syncopate status` show
// of the live ones and of the latest departed ones. Not thread-safe: the coordinator's lock guards
// it.
#ifndef SYNCOPATE_COORDINATOR_TRAINER_BOOK_H_
#define SYNCOPATE_COORDINATOR_TRAINER_BOOK_H_

#include <cstddef>
#include <deque>
#include <map>
#include <string>

#include "sync/membership.h"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::coordinator {

class TrainerBook {
 public:
  // Keeps the records of the `departed_kept` latest departures (joins under ever new names cannot
  // grow the book without bound).
  explicit TrainerBook(size_t departed_kept) : departed_kept_(departed_kept) {}

  // `member` joined or resumed at `clock`: its record, live, counters kept from an earlier
  // incarnation under the same name (its evictions), timings cleared.
  void Admit(const sync::Member& member, uint32_t rank, int64_t clock, double slowdown);
  // The record of trainer `id`, live or departed (an unknown id gets an empty record under "").
  v1::TrainerStatus& Of(sync::TrainerId id);
  // Its name, "" if unknown.
  const std::string& NameOf(sync::TrainerId id) const;
  // The trainer left in `state`: "left", "done", or "evicted" (counted, with `reason`).
  void Depart(sync::TrainerId id, const std::string& state, const std::string& reason);
  // Its latest timings and the compute-time ratio they give.
  void SetTimings(sync::TrainerId id, const v1::TrainerTimings& timings);
  // Every record, by name.
  const std::map<std::string, v1::TrainerStatus>& records() const { return records_; }

 private:
  const size_t departed_kept_;
  std::map<std::string, v1::TrainerStatus> records_;
  std::map<sync::TrainerId, std::string> names_;
  std::deque<std::string> departed_;  // names, in departure order
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_TRAINER_BOOK_H_
