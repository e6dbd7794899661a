#include "coordinator/outbox.h"

#include <vector>

#include "gtest/gtest.h"

namespace syncopate::coordinator {
namespace {

v1::Directive ProceedAt(int64_t clock) {
  v1::Directive d;
  d.mutable_proceed()->set_clock(clock);
  return d;
}

TEST(OutboxTest, TheListenerHearsEverySendAndTheCloseAndMayTakeWhatCame) {
  Outbox outbox;
  std::vector<int64_t> taken;
  int calls = 0;
  outbox.SetListener([&] {
    ++calls;
    v1::Directive d;
    while (outbox.TryPop(&d)) taken.push_back(d.proceed().clock());
  });
  outbox.Send(ProceedAt(1));
  outbox.Send(ProceedAt(2));
  EXPECT_EQ(taken, (std::vector<int64_t>{1, 2}));
  outbox.Close();
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(outbox.closed());
  outbox.Send(ProceedAt(3));  // dropped after Close, and nobody is told
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(taken.size(), 2u);
}

TEST(OutboxTest, AClearedListenerIsNotCalledAndDirectivesWaitForPop) {
  Outbox outbox;
  int calls = 0;
  outbox.SetListener([&] { ++calls; });
  outbox.SetListener(nullptr);
  outbox.Send(ProceedAt(7));
  EXPECT_EQ(calls, 0);
  v1::Directive d;
  ASSERT_TRUE(outbox.TryPop(&d));
  EXPECT_EQ(d.proceed().clock(), 7);
  EXPECT_FALSE(outbox.TryPop(&d));
  EXPECT_FALSE(outbox.Pop(&d, absl::Milliseconds(1)));
}

}  // namespace
}  // namespace syncopate::coordinator
