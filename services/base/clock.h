// The time seam: every component that measures or waits on time takes a Clock, so tests can drive
// eviction timeouts and straggler intervals without sleeping.
#ifndef SYNCOPATE_BASE_CLOCK_H_
#define SYNCOPATE_BASE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace syncopate::base {

// A monotonic clock. Values are only meaningful relative to each other within one process.
// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Passes `d` of this clock's time on the calling thread: emulated work (an emulated accelerator
  // step, a straggler's slowdown), never a way to wait for another thread.
  virtual void SleepFor(absl::Duration d) const = 0;
};

// std::chrono::steady_clock expressed as absl::Time (never jumps with wall-clock changes).
class MonotonicClock final : public Clock {
 public:
  absl::Time Now() const override;
  void SleepFor(absl::Duration d) const override;
  // A process-wide instance; never destroyed.
  static MonotonicClock& Get();
};

// A clock that moves only when told to (SleepFor advances it at once). Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() const override;
  void SleepFor(absl::Duration d) const override;
  void Advance(absl::Duration d);

 private:
  mutable absl::Mutex mu_;
  mutable absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_CLOCK_H_
