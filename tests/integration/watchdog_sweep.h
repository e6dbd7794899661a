// Sweeping a stream watchdog on a fake clock until it cancels a stream, for the tests of quiet
// streams (store, coordinator sessions, peers).
#ifndef SYNCOPATE_TESTS_INTEGRATION_WATCHDOG_SWEEP_H_
#define SYNCOPATE_TESTS_INTEGRATION_WATCHDOG_SWEEP_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "rpc/stream_watchdog.h"

namespace syncopate {

// Sweeps `watchdog` once a minute of `clock` until a sweep cancels a stream, or 20 s of real time
// pass: a stream's last message reaches the server some time after the client wrote it, so the
// sweep that finds it quiet is polled for. Returns how many streams that sweep cancelled.
inline int SweepUntilCancelled(base::FakeClock& clock, rpc::StreamWatchdog& watchdog) {
  int cancelled = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (cancelled == 0 && absl::Now() < deadline) {
    clock.Advance(absl::Seconds(60));
    cancelled = watchdog.CancelIdle();
    if (cancelled == 0) absl::SleepFor(absl::Milliseconds(10));
  }
  return cancelled;
}

}  // namespace syncopate

#endif  // SYNCOPATE_TESTS_INTEGRATION_WATCHDOG_SWEEP_H_
