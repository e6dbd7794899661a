#include "coordinator/store_queue.h"

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

const absl::Time kQueueT0 = absl::FromUnixSeconds(1000);

base::BackoffOptions Backoff() {
  base::BackoffOptions o;
  o.initial = absl::Milliseconds(100);
  o.max = absl::Seconds(1);
  return o;
}

TEST(StoreQueue, AnActionGoesOutAtOnceOnlyWhenNothingWaitsBeforeIt) {
  StoreQueue queue(Backoff(), kQueueT0);
  EXPECT_TRUE(queue.clear());
  queue.MembershipChanged();
  EXPECT_FALSE(queue.clear()) << "the stores' membership first";
  EXPECT_TRUE(queue.has_work());
  queue.SendingMembership();
  EXPECT_FALSE(queue.clear()) << "while it is being sent";
  EXPECT_FALSE(queue.has_work());
  queue.MembershipSent();
  EXPECT_TRUE(queue.clear());
  queue.push_back(Action{});
  EXPECT_FALSE(queue.clear());
  EXPECT_TRUE(queue.has_work());
  queue.pop_front();
  EXPECT_TRUE(queue.empty());
}

// A failure backs everything off and makes the membership go out again; the outage is told once,
// when it ends.
TEST(StoreQueue, AFailureBacksOffUntilItsTimeAndAnOutageIsToldWhenItEnds) {
  StoreQueue queue(Backoff(), kQueueT0);
  queue.push_back(Action{});
  EXPECT_TRUE(queue.Failed(kQueueT0)) << "the outage's first failure";
  EXPECT_FALSE(queue.Failed(kQueueT0 + absl::Milliseconds(10)));
  EXPECT_TRUE(queue.failing());
  EXPECT_TRUE(queue.backing_off());
  EXPECT_TRUE(queue.membership_changed());
  EXPECT_FALSE(queue.has_work());
  queue.Tick(kQueueT0 + absl::Milliseconds(20));
  EXPECT_TRUE(queue.backing_off()) << "at least initial/2 after the second failure";
  queue.Tick(kQueueT0 + absl::Seconds(2));
  EXPECT_FALSE(queue.backing_off());
  const std::optional<StoreQueue::Outage> outage = queue.Succeeded(kQueueT0 + absl::Seconds(3));
  ASSERT_TRUE(outage.has_value());
  EXPECT_EQ(outage->lasted, absl::Seconds(3));
  EXPECT_EQ(outage->failures, 2);
  EXPECT_FALSE(queue.failing());
  EXPECT_FALSE(queue.Succeeded(kQueueT0 + absl::Seconds(4)).has_value());
}

TEST(StoreQueue, ProbesAreDueEveryIntervalAndNeverWhileBackingOff) {
  StoreQueue queue(Backoff(), kQueueT0);
  EXPECT_TRUE(queue.ProbeDue(kQueueT0, absl::Seconds(1)));
  EXPECT_FALSE(queue.ProbeDue(kQueueT0 + absl::Milliseconds(999), absl::Seconds(1)));
  EXPECT_TRUE(queue.ProbeDue(kQueueT0 + absl::Seconds(1), absl::Seconds(1)));
  queue.Failed(kQueueT0 + absl::Seconds(1));
  EXPECT_FALSE(queue.ProbeDue(kQueueT0 + absl::Seconds(2), absl::Seconds(1)));
}

}  // namespace
}  // namespace syncopate::coordinator
