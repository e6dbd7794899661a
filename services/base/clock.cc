#include "base/clock.h"

#include <chrono>
#include <vector>

#include "absl/time/clock.h"

namespace syncopate::base {

absl::Time MonotonicClock::Now() const {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

void MonotonicClock::SleepFor(absl::Duration d) const { absl::SleepFor(d); }

bool MonotonicClock::AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                                absl::Time deadline) const {
  if (deadline == absl::InfiniteFuture()) {
    mu.Await(condition);
    return true;
  }
  return mu.AwaitWithTimeout(condition, deadline - Now());
}

MonotonicClock& MonotonicClock::Get() {
  static auto* clock = new MonotonicClock();
  return *clock;
}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::SleepFor(absl::Duration d) const {
  std::vector<absl::Mutex*> waiting_on;
  {
    absl::MutexLock lock(&mu_);
    now_ += d;
    waiting_on.assign(waiting_on_.begin(), waiting_on_.end());
  }
  // Releasing a mutex makes absl::Mutex evaluate its waiters' conditions again: each waiter then
  // sees the new time. A waiter that registers after the copy reads the new time itself.
  for (absl::Mutex* mu : waiting_on) {
    mu->Lock();
    mu->Unlock();
  }
}

bool FakeClock::AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                           absl::Time deadline) const {
  {
    absl::MutexLock lock(&mu_);
    waiting_on_.insert(&mu);
  }
  struct Wait {
    const FakeClock* clock;
    const absl::Condition* condition;
    absl::Time deadline;
    bool Over() const { return condition->Eval() || clock->Now() >= deadline; }
  } wait{this, &condition, deadline};
  mu.Await(absl::Condition(&wait, &Wait::Over));
  {
    absl::MutexLock lock(&mu_);
    waiting_on_.erase(waiting_on_.find(&mu));
  }
  return condition.Eval();
}

bool FakeClock::AwaitWaiters(int threads, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(waiting_on_.size()) >= threads;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

void FakeClock::Advance(absl::Duration d) { SleepFor(d); }

}  // namespace syncopate::base
