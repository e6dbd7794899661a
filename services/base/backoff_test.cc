#include "base/backoff.h"

#include "gtest/gtest.h"

namespace syncopate::base {
namespace {

TEST(BackoffTest, GrowsWithJitterUpToTheCapAndResets) {
  Backoff backoff({absl::Milliseconds(100), absl::Seconds(1), 2.0}, /*seed=*/7);
  absl::Duration step = absl::Milliseconds(100);
  for (int i = 0; i < 8; ++i) {
    const absl::Duration d = backoff.Next();
    EXPECT_GE(d, step / 2) << "attempt " << i;
    EXPECT_LE(d, step) << "attempt " << i;
    step = std::min(step * 2, absl::Seconds(1));
  }
  EXPECT_EQ(backoff.failures(), 8);
  backoff.Reset();
  EXPECT_EQ(backoff.failures(), 0);
  EXPECT_LE(backoff.Next(), absl::Milliseconds(100));
}

TEST(BackoffTest, JitterSpreadsClientsThatFailTogether) {
  Backoff a({}, 1);
  Backoff b({}, 2);
  bool differ = false;
  for (int i = 0; i < 4; ++i) differ |= a.Next() != b.Next();
  EXPECT_TRUE(differ);
}

TEST(BackoffTest, UnseededBackoffsGetDistinctSeeds) {
  EXPECT_NE(Backoff::NextSeed(), Backoff::NextSeed());
  Backoff a;
  Backoff b;
  bool differ = false;
  for (int i = 0; i < 4; ++i) differ |= a.Next() != b.Next();
  EXPECT_TRUE(differ);
}

}  // namespace
}  // namespace syncopate::base
