#include "base/token_bucket.h"

#include "base/flags.h"
#include "gtest/gtest.h"

namespace syncopate::base {
namespace {

TEST(TokenBucketTest, PacesToTheRateAfterTheBurst) {
  FakeClock clock;
  TokenBucket bucket(/*bytes_per_second=*/1000, /*burst_bytes=*/500, clock);
  EXPECT_EQ(bucket.Take(500), absl::ZeroDuration());     // the burst
  EXPECT_EQ(bucket.Take(250), absl::Milliseconds(250));  // 250 bytes of debt at 1000 B/s
  clock.Advance(absl::Milliseconds(250));
  EXPECT_EQ(bucket.Take(1000), absl::Seconds(1));  // debt paid; a 1000-byte chunk takes 1 s
  clock.Advance(absl::Seconds(10));                // idle: refills, capped at the burst
  EXPECT_EQ(bucket.Take(500), absl::ZeroDuration());
  EXPECT_GT(bucket.Take(1), absl::ZeroDuration());
}

TEST(TokenBucketTest, LongRunRateHoldsForChunksLargerThanTheBurst) {
  FakeClock clock;
  TokenBucket bucket(1e6, 64e3, clock);
  // A sender that sleeps as told moves 10 MB in ~10 s, never faster.
  absl::Duration waited;
  for (int i = 0; i < 10; ++i) {
    const absl::Duration wait = bucket.Take(1000000);
    clock.Advance(wait);
    waited += wait;
  }
  EXPECT_NEAR(absl::ToDoubleSeconds(waited), 10.0 - 0.064, 1e-6);
}

TEST(TokenBucketTest, TakeIdleUsesOnlyWhatTheOthersLeave) {
  FakeClock clock;
  TokenBucket bucket(1000, 500, clock);
  EXPECT_EQ(bucket.TakeIdle(200), absl::ZeroDuration());     // idle: taken
  EXPECT_EQ(bucket.Take(800), absl::Milliseconds(500));      // a normal sender goes into debt
  EXPECT_EQ(bucket.TakeIdle(100), absl::Milliseconds(600));  // nothing taken: 500 owed, 100 more
  clock.Advance(absl::Milliseconds(500));
  // The normal sender, woken as its debt is paid, takes its next chunk first: still no idle rate.
  EXPECT_EQ(bucket.Take(100), absl::Milliseconds(100));
  EXPECT_GT(bucket.TakeIdle(100), absl::ZeroDuration());
  clock.Advance(absl::Milliseconds(200));  // the normal sender paused: its rate is idle
  EXPECT_EQ(bucket.TakeIdle(100), absl::ZeroDuration());
  // A chunk larger than the burst waits for a full bucket, then goes into debt like Take.
  EXPECT_EQ(bucket.TakeIdle(2000), absl::Milliseconds(500));
  clock.Advance(absl::Milliseconds(500));
  EXPECT_EQ(bucket.TakeIdle(2000), absl::ZeroDuration());
  EXPECT_EQ(bucket.Take(0), absl::Milliseconds(1500));
}

TEST(ParseRateTest, AcceptsTcUnits) {
  EXPECT_DOUBLE_EQ(*ParseRate("100mbit"), 12.5e6);
  EXPECT_DOUBLE_EQ(*ParseRate("1Gbit"), 125e6);
  EXPECT_DOUBLE_EQ(*ParseRate("500kbit"), 62.5e3);
  EXPECT_DOUBLE_EQ(*ParseRate("12mbps"), 12e6);
  EXPECT_DOUBLE_EQ(*ParseRate("12MB"), 12e6);
  EXPECT_DOUBLE_EQ(*ParseRate("2.5e6"), 2.5e6);
  for (const char* bad : {"", "fast", "-1mbit", "0", "mbit", "10 parsecs", "infmbit"}) {
    EXPECT_FALSE(ParseRate(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace syncopate::base
