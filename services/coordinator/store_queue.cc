#include "coordinator/store_queue.h"

namespace syncopate::coordinator {

bool StoreQueue::Failed(absl::Time now) {
  membership_changed_ = true;
  backing_off_ = true;
  retry_at_ = now + backoff_.Next();
  if (failing_since_) return false;
  failing_since_ = now;
  return true;
}

std::optional<StoreQueue::Outage> StoreQueue::Succeeded(absl::Time now) {
  std::optional<Outage> outage;
  if (failing_since_) {
    outage = Outage{now - *failing_since_, backoff_.failures()};
    failing_since_.reset();
  }
  backoff_.Reset();
  return outage;
}

void StoreQueue::Tick(absl::Time now) {
  if (backing_off_ && now >= retry_at_) backing_off_ = false;
}

bool StoreQueue::ProbeDue(absl::Time now, absl::Duration interval) {
  if (backing_off_ || now < next_probe_) return false;
  next_probe_ = now + interval;
  return true;
}

}  // namespace syncopate::coordinator
