// The time seam: every component that measures or waits on time takes a Clock, so tests can drive
// eviction timeouts and straggler intervals without sleeping.
#ifndef SYNCOPATE_BASE_CLOCK_H_
#define SYNCOPATE_BASE_CLOCK_H_

#include <atomic>
#include <set>

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
  // Waits, with `mu` held (released meanwhile, as absl::Mutex::Await does), until `condition`
  // holds or this clock reaches `deadline`; whether `condition` holds. The way to wait for another
  // thread (a signal) with a deadline: `condition` is evaluated under `mu`, so whatever changes
  // it must do so under `mu`.
  virtual bool AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                          absl::Time deadline) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

// std::chrono::steady_clock expressed as absl::Time (never jumps with wall-clock changes).
class MonotonicClock final : public Clock {
 public:
  absl::Time Now() const override;
  void SleepFor(absl::Duration d) const override;
  bool AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                  absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // A process-wide instance; never destroyed.
  static MonotonicClock& Get();
};

// A clock that moves only when told to (SleepFor advances it at once). Thread-safe. A thread in
// AwaitUntil waits, without any real-time deadline, until its condition holds or another thread
// moves the clock to its deadline; moving the clock wakes it. Never move the clock while holding
// a mutex that a thread waits on in AwaitUntil (moving it takes each such mutex in turn).
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() const override;
  void SleepFor(absl::Duration d) const override;
  bool AwaitUntil(absl::Mutex& mu, const absl::Condition& condition,
                  absl::Time deadline) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void Advance(absl::Duration d);
  // Waits in real time, up to `timeout`, until `threads` threads wait in AwaitUntil, each blocked
  // (its condition false and its deadline ahead); whether they do. For tests that move the clock
  // once the code under test waits.
  bool AwaitWaiters(int threads, absl::Duration timeout = absl::Seconds(30)) const;

 private:
  mutable absl::Mutex mu_;
  mutable absl::Time now_ ABSL_GUARDED_BY(mu_);
  // The mutexes threads wait on in AwaitUntil, each as often as threads wait on it. A waiter
  // leaves only under registry_mu_, which the clock holds while it wakes them: a mutex it wakes is
  // still alive. Lock order: a waiter's mutex, then registry_mu_, then mu_.
  mutable absl::Mutex registry_mu_;
  mutable std::multiset<absl::Mutex*> waiting_on_ ABSL_GUARDED_BY(registry_mu_);
  mutable std::atomic<int> blocked_{0};  // waiters whose last look found nothing to end the wait
};

}  // namespace syncopate::base

#endif  // SYNCOPATE_BASE_CLOCK_H_
