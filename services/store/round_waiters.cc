#include "store/round_waiters.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace syncopate::store {

RoundWaiters::RoundWaiters(Options options, const base::Clock& clock)
    : options_(options), clock_(clock) {}

RoundWaiters::~RoundWaiters() {
  Stop();
  if (sweeper_.joinable()) sweeper_.join();
}

absl::StatusOr<bool> RoundWaiters::Park(Ticket ticket, int64_t round, absl::Duration patience,
                                        const std::function<int64_t()>& last_closed, Wake wake) {
  absl::MutexLock lock(&mu_);
  const int64_t closed = last_closed();
  if (round <= closed) return false;
  if (options_.max_wait <= absl::ZeroDuration() || round > closed + options_.max_rounds_ahead) {
    return absl::FailedPreconditionError(
        absl::StrCat("round ", round, " is not closed yet (last ", closed, ")"));
  }
  if (stopped_) return absl::UnavailableError("this store shard is stopping");
  if (parked_.size() >= options_.max_parked) {
    return absl::ResourceExhaustedError(absl::StrCat(
        parked_.size(), " pulls already wait for their rounds on this shard; retry later"));
  }
  const bool added =
      parked_
          .emplace(ticket, Parked{round, clock_.Now() + std::min(patience, options_.max_wait),
                                  std::move(wake)})
          .second;
  if (!added) return absl::InvalidArgumentError("this pull is parked already");
  return true;
}

void RoundWaiters::Closed(int64_t round) {
  std::map<Ticket, Parked> woken =
      TakeIf([round](const Parked& pull) { return pull.round <= round; });
  WakeAll(woken, absl::OkStatus());
}

int RoundWaiters::Expire() {
  const absl::Time now = clock_.Now();
  std::map<Ticket, Parked> woken =
      TakeIf([now](const Parked& pull) { return pull.deadline <= now; });
  // Each its own message: the round it waited for.
  for (auto& [ticket, pull] : woken) {
    pull.wake(absl::UnavailableError(
        absl::StrCat("round ", pull.round,
                     " did not close on this shard while the pull waited "
                     "for it (the coordinator closes it, or retakes the job, in a moment)")));
  }
  return static_cast<int>(woken.size());
}

bool RoundWaiters::Withdraw(Ticket ticket) {
  absl::MutexLock lock(&mu_);
  return parked_.erase(ticket) > 0;
}

void RoundWaiters::Stop() {
  std::map<Ticket, Parked> woken;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    woken.swap(parked_);
  }
  WakeAll(woken, absl::UnavailableError("this store shard is stopping"));
}

void RoundWaiters::Start() {
  if (options_.max_wait <= absl::ZeroDuration() || sweeper_.joinable()) return;
  sweeper_ = std::thread([this] {
    while (true) {
      {
        // Sleeps until something is parked (or it stops); then paces the sweeps by real time,
        // while Expire judges deadlines by clock_.
        absl::MutexLock lock(&mu_);
        auto busy = [this]()
                        ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopped_ || !parked_.empty(); };
        // Rechecked every second: a deadline on this wait, as on any other.
        while (!mu_.AwaitWithTimeout(absl::Condition(&busy), absl::Seconds(1))) {
        }
        if (mu_.AwaitWithTimeout(absl::Condition(&stopped_), absl::Milliseconds(50))) return;
      }
      Expire();
    }
  });
}

size_t RoundWaiters::parked() const {
  absl::MutexLock lock(&mu_);
  return parked_.size();
}

std::map<RoundWaiters::Ticket, RoundWaiters::Parked> RoundWaiters::TakeIf(
    const std::function<bool(const Parked&)>& taken) {
  std::map<Ticket, Parked> out;
  absl::MutexLock lock(&mu_);
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto next = std::next(it);
    if (taken(it->second)) out.insert(parked_.extract(it));
    it = next;
  }
  return out;
}

void RoundWaiters::WakeAll(std::map<Ticket, Parked>& woken, const absl::Status& status) {
  for (auto& [ticket, pull] : woken) pull.wake(status);
}

}  // namespace syncopate::store
