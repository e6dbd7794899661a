#include "base/clock.h"

#include <thread>

#include "gtest/gtest.h"

namespace syncopate::base {
namespace {

TEST(FakeClockTest, AwaitUntilReturnsAtOnceWhenTheConditionHoldsOrTheDeadlinePassed) {
  FakeClock clock;
  absl::Mutex mu;
  bool signalled = true;
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(clock.AwaitUntil(mu, absl::Condition(&signalled), absl::InfiniteFuture()));
  signalled = false;
  EXPECT_FALSE(clock.AwaitUntil(mu, absl::Condition(&signalled), clock.Now()));
}

// Moving the clock to the deadline wakes the waiter, and nothing else does: the wait takes no
// real time of its own.
TEST(FakeClockTest, MovingTheClockToTheDeadlineEndsTheWait) {
  FakeClock clock;
  absl::Mutex mu;
  bool signalled = false;
  bool result = true;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitUntil(mu, absl::Condition(&signalled), clock.Now() + absl::Seconds(10));
  });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  clock.Advance(absl::Seconds(9));
  ASSERT_TRUE(clock.AwaitWaiters(1)) << "9 s of 10 passed: it still waits";
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_FALSE(result);
}

TEST(FakeClockTest, TheSignalEndsTheWaitBeforeTheDeadline) {
  FakeClock clock;
  absl::Mutex mu;
  bool signalled = false;
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitUntil(mu, absl::Condition(&signalled), absl::InfiniteFuture());
  });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  {
    absl::MutexLock lock(&mu);
    signalled = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.Now(), absl::UnixEpoch());
}

TEST(MonotonicClockTest, AwaitUntilEndsAtTheDeadlineOrTheSignal) {
  const Clock& clock = MonotonicClock::Get();
  absl::Mutex mu;
  bool signalled = false;
  absl::MutexLock lock(&mu);
  const absl::Time before = clock.Now();
  EXPECT_FALSE(clock.AwaitUntil(mu, absl::Condition(&signalled), before));
  signalled = true;
  EXPECT_TRUE(clock.AwaitUntil(mu, absl::Condition(&signalled), absl::InfiniteFuture()));
}

}  // namespace
}  // namespace syncopate::base
