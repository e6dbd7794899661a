#include "base/clock.h"

#include <chrono>

namespace syncopate::base {

absl::Time MonotonicClock::Now() const {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

MonotonicClock& MonotonicClock::Get() {
  static auto* clock = new MonotonicClock();
  return *clock;
}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

}  // namespace syncopate::base
