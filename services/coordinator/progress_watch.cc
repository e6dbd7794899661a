#include "coordinator/progress_watch.h"

#include <algorithm>

namespace syncopate::coordinator {

void ProgressWatch::Admitted(sync::TrainerId id, absl::Time now, bool granted) {
  last_progress_[id] = now;
  if (!granted) ungranted_.insert(id);
}

void ProgressWatch::Reported(sync::TrainerId id, absl::Time now) {
  report_arrival_[id] = now;
  last_progress_[id] = now;
}

std::optional<absl::Duration> ProgressWatch::Granted(sync::TrainerId id, absl::Time now) {
  ungranted_.erase(id);
  auto arrival = report_arrival_.find(id);
  if (arrival == report_arrival_.end()) return std::nullopt;
  const absl::Duration waited = now - arrival->second;
  report_arrival_.erase(arrival);
  return waited;
}

bool ProgressWatch::SetPaused(sync::TrainerId id, bool paused, absl::Time now) {
  if (paused) return paused_.insert(id).second;
  if (paused_.erase(id) == 0) return false;
  last_progress_[id] = now;
  return true;
}

void ProgressWatch::Forget(sync::TrainerId id) {
  report_arrival_.erase(id);
  last_progress_.erase(id);
  ungranted_.erase(id);
  paused_.erase(id);
}

void ProgressWatch::Excuse(absl::Time since, absl::Duration gap) {
  for (auto& [id, at] : last_progress_) at = sync::ExcusedTime(at, since, gap);
}

std::vector<sync::TrainerId> ProgressWatch::Stalled(
    absl::Time now, absl::Duration timeout, const std::vector<sync::TrainerId>& live) const {
  std::vector<sync::TrainerId> stalled;
  if (timeout <= absl::ZeroDuration()) return stalled;
  const bool held_up =
      std::any_of(report_arrival_.begin(), report_arrival_.end(),
                  [&](const auto& waiting) { return now - waiting.second > timeout; });
  if (!held_up) return stalled;
  for (sync::TrainerId id : live) {
    auto progress = last_progress_.find(id);
    if (report_arrival_.count(id) == 0 && ungranted_.count(id) == 0 && paused_.count(id) == 0 &&
        progress != last_progress_.end() && now - progress->second > timeout) {
      stalled.push_back(id);
    }
  }
  return stalled;
}

}  // namespace syncopate::coordinator
