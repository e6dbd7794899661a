#include "rpc/stream_watchdog.h"

#include "gtest/gtest.h"

namespace syncopate::rpc {
namespace {

TEST(StreamWatchdogTest, CancelsOnlyStreamsQuietForTheIdleTime) {
  base::FakeClock clock;
  int counted = 0;
  StreamWatchdog watchdog(absl::Seconds(10), clock, [&] { ++counted; });
  int quiet_cancelled = 0, busy_cancelled = 0;
  const StreamWatchdog::Id quiet = watchdog.Watch([&] { ++quiet_cancelled; });
  const StreamWatchdog::Id busy = watchdog.Watch([&] { ++busy_cancelled; });
  clock.Advance(absl::Seconds(9));
  watchdog.Touch(busy);
  EXPECT_EQ(watchdog.CancelIdle(), 0);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(watchdog.CancelIdle(), 1);
  EXPECT_EQ(quiet_cancelled, 1);
  EXPECT_EQ(busy_cancelled, 0);
  // Cancelled once: the stream is on its way out, a later sweep leaves it alone.
  clock.Advance(absl::Seconds(20));
  EXPECT_EQ(watchdog.CancelIdle(), 1);  // now `busy` has been quiet too
  EXPECT_EQ(quiet_cancelled, 1);
  EXPECT_EQ(busy_cancelled, 1);
  EXPECT_EQ(counted, 2);
  watchdog.Forget(quiet);
  watchdog.Forget(busy);
}

TEST(StreamWatchdogTest, AForgottenStreamIsNeverCancelled) {
  base::FakeClock clock;
  StreamWatchdog watchdog(absl::Seconds(1), clock);
  bool cancelled = false;
  watchdog.Forget(watchdog.Watch([&] { cancelled = true; }));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(watchdog.CancelIdle(), 0);
  EXPECT_FALSE(cancelled);
}

TEST(StreamWatchdogTest, ZeroOrInfiniteIdleNeverCancels) {
  base::FakeClock clock;
  for (absl::Duration idle : {absl::ZeroDuration(), absl::InfiniteDuration()}) {
    StreamWatchdog watchdog(idle, clock);
    watchdog.Start();  // no thread: nothing to sweep for
    bool cancelled = false;
    const StreamWatchdog::Id id = watchdog.Watch([&] { cancelled = true; });
    clock.Advance(absl::Hours(1));
    EXPECT_EQ(watchdog.CancelIdle(), 0);
    EXPECT_FALSE(cancelled);
    watchdog.Forget(id);
  }
}

}  // namespace
}  // namespace syncopate::rpc
