// Liveness as progress: which trainers await their grant and since when, when each last reported
// a clock, which hold no grant, and which declared a pause. From these it names the trainers that
// hold others up without progress (CoordinatorOptions::progress_timeout). Silence (no heartbeat)
// is sync::Membership's. Not thread-safe: the coordinator's lock guards it.
#ifndef SYNCOPATE_COORDINATOR_PROGRESS_WATCH_H_
#define SYNCOPATE_COORDINATOR_PROGRESS_WATCH_H_

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/time/time.h"
#include "sync/membership.h"

namespace syncopate::coordinator {

class ProgressWatch {
 public:
  // `id` joined or resumed at `now`; `granted`: it was granted at once (one that was not, a
  // peer-to-peer joiner or a resumed trainer awaiting its grant, cannot hold anyone up).
  void Admitted(sync::TrainerId id, absl::Time now, bool granted);
  // `id` reported a clock at `now`: progress, and it awaits its grant from now.
  void Reported(sync::TrainerId id, absl::Time now);
  // `id` was granted at `now`: how long after its report, if it was awaiting one.
  std::optional<absl::Duration> Granted(sync::TrainerId id, absl::Time now);
  // Its heartbeat says whether it paused on purpose. A pause spares it; its progress counts afresh
  // from its return. Whether that changed anything.
  bool SetPaused(sync::TrainerId id, bool paused, absl::Time now);
  // `id` left the job.
  void Forget(sync::TrainerId id);
  // The coordinator did not run from `since` for `gap`: that time is not held against anyone.
  void Excuse(absl::Time since, absl::Duration gap);
  // While some trainer has awaited its grant for more than `timeout`: those of `live` that hold a
  // grant, are not paused, and have made no progress for more than `timeout`. Zero or a negative
  // timeout: none.
  std::vector<sync::TrainerId> Stalled(absl::Time now, absl::Duration timeout,
                                       const std::vector<sync::TrainerId>& live) const;

 private:
  std::map<sync::TrainerId, absl::Time> report_arrival_;  // awaiting their grant: since when
  std::map<sync::TrainerId, absl::Time> last_progress_;   // every live trainer
  std::set<sync::TrainerId> ungranted_;
  std::set<sync::TrainerId> paused_;
};

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_PROGRESS_WATCH_H_
