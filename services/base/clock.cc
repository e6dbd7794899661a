#include "base/clock.h"

#include <chrono>

#include "absl/time/clock.h"

namespace syncopate::base {

absl::Time MonotonicClock::Now() const {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

void MonotonicClock::SleepFor(absl::Duration d) const { absl::SleepFor(d); }

MonotonicClock& MonotonicClock::Get() {
  static auto* clock = new MonotonicClock();
  return *clock;
}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::SleepFor(absl::Duration d) const {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

void FakeClock::Advance(absl::Duration d) { SleepFor(d); }

}  // namespace syncopate::base
