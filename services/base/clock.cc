#include "base/clock.h"

#include <chrono>

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
  {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  // Releasing a mutex makes absl::Mutex evaluate its waiters' conditions again: each waiter then
  // sees the new time. A mutex held by another thread now is mostly released by it later, to the
  // same effect; one registered after this looks at the new time itself; a waiter that held its
  // own mutex at that moment looks again within AwaitUntil's recheck.
  absl::MutexLock lock(&registry_mu_);
  for (absl::Mutex* mu : waiting_on_) {
    if (mu->TryLock()) mu->Unlock();
  }
}

void FakeClock::Advance(absl::Duration d) { SleepFor(d); }

bool FakeClock::AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                           absl::Time deadline) const {
  {
    absl::MutexLock lock(&registry_mu_);
    waiting_on_.insert(&mu);
  }
  // Evaluated under `mu` only, by whichever thread releases it.
  struct Wait {
    const FakeClock* clock;
    const absl::Condition* condition;
    absl::Time deadline;
    bool blocked = false;
    bool Over() {
      const bool over = condition->Eval() || clock->Now() >= deadline;
      if (blocked == over) {
        blocked = !over;
        clock->blocked_.fetch_add(blocked ? 1 : -1);
      }
      return over;
    }
  } wait{this, &condition, deadline};
  // SleepFor's wake-up can miss: when it moves the clock while this thread holds `mu` to look (and
  // finds the old time), its TryLock fails and this thread goes back to wait without looking
  // again. So it also looks again every kRecheck of real time.
  constexpr absl::Duration kRecheck = absl::Milliseconds(5);
  while (!mu.AwaitWithTimeout(absl::Condition(&wait, &Wait::Over), kRecheck)) {
  }
  {
    absl::MutexLock lock(&registry_mu_);
    waiting_on_.erase(waiting_on_.find(&mu));
  }
  return condition.Eval();
}

bool FakeClock::AwaitWaiters(int threads, absl::Duration timeout) const {
  // The waiters' state changes under their own mutexes, which this cannot wait on: it looks.
  const absl::Time give_up = absl::Now() + timeout;
  while (blocked_.load() < threads) {
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Microseconds(200));
  }
  return true;
}

}  // namespace syncopate::base
