#include "client/unsaved_pushes.h"

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

const std::string kA = "a";
const std::string kB = "b";
const tensor::TensorMap kDelta = {{"a", {1, 2}}, {"b", {10}}};

TEST(UnsavedPushesTest, PushesOfOneEpochAreKeptAsOneWeightedSum) {
  UnsavedPushes unsaved;
  unsaved.Add(1, 3, 7, 7, 0.5f, false, kDelta, {&kA});  // only "a" lives on this shard
  unsaved.Add(1, 3, 8, 8, 1.0f, false, kDelta, {&kA});
  EXPECT_EQ(unsaved.sums_kept(), 1u);
  unsaved.LoseAll();
  const PushSum* lost = unsaved.NextToResend();
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->last_sequence, 8u);
  EXPECT_EQ(lost->last_clock, 8);
  EXPECT_EQ(lost->pushes, 2);
  EXPECT_EQ(lost->weight_sum, 1.5);
  EXPECT_FALSE(lost->round);
  EXPECT_EQ(lost->sum, (tensor::TensorMap{{"a", {1.5f, 3.0f}}}));
}

// Durable epochs are released per shard process: epoch numbers of another incarnation are not
// this one's.
TEST(UnsavedPushesTest, DurableEpochsOfTheSameIncarnationAreReleased) {
  UnsavedPushes unsaved;
  for (int64_t epoch = 1; epoch <= 4; ++epoch) {
    unsaved.Add(7, epoch, static_cast<uint64_t>(epoch), epoch, 1.0f, true, kDelta, {&kA});
  }
  unsaved.Add(9, 1, 5, 5, 1.0f, true, kDelta, {&kA});
  unsaved.Release(7, 3);  // checkpoints through epoch 3 hold epochs 1 and 2
  EXPECT_EQ(unsaved.sums_kept(), 3u);
  unsaved.Release(7, 2);  // an older answer changes nothing
  EXPECT_EQ(unsaved.sums_kept(), 3u);
  unsaved.Release(9, 1);  // incarnation 9's epoch 1 is not yet safe
  EXPECT_EQ(unsaved.sums_kept(), 3u);
}

// A second restart while sums of the first are still being re-sent: the sum already re-sent (and
// kept again under the new process) goes back in front of the one still queued, so every sum is
// re-sent in sequence order and none is taken as a duplicate of a newer one.
TEST(UnsavedPushesTest, ResendsStayInSequenceOrderAcrossRestarts) {
  UnsavedPushes unsaved;
  unsaved.Add(1, 0, 5, 5, 1.0f, false, kDelta, {&kA, &kB});
  unsaved.Add(1, 1, 10, 10, 1.0f, false, kDelta, {&kA, &kB});
  unsaved.LoseAll();
  ASSERT_EQ(unsaved.to_resend(), 2u);
  const PushSum first = *unsaved.NextToResend();
  EXPECT_EQ(first.last_sequence, 5u);
  unsaved.Add(2, 0, first.last_sequence, first.last_clock, 1.0f, false, first.sum, {&kA, &kB});
  unsaved.PopResent();  // the first went to incarnation 2; then incarnation 3 replaces it
  unsaved.LoseAll();
  ASSERT_EQ(unsaved.to_resend(), 2u);
  EXPECT_EQ(unsaved.NextToResend()->last_sequence, 5u);
  unsaved.PopResent();
  EXPECT_EQ(unsaved.NextToResend()->last_sequence, 10u);
  unsaved.PopResent();
  EXPECT_EQ(unsaved.NextToResend(), nullptr);
}

// A shard that writes no checkpoint (a full disk) cannot make the trainer keep sums without end.
TEST(UnsavedPushesTest, TheOldestSumGoesPastTheLimit) {
  UnsavedPushes unsaved(2);
  EXPECT_EQ(unsaved.Add(1, 0, 1, 1, 1.0f, false, kDelta, {&kA}), 0);
  EXPECT_EQ(unsaved.Add(1, 0, 2, 2, 1.0f, false, kDelta, {&kA}), 0);
  EXPECT_EQ(unsaved.Add(1, 1, 3, 3, 1.0f, false, kDelta, {&kA}), 0);
  EXPECT_EQ(unsaved.Add(1, 2, 4, 4, 1.0f, false, kDelta, {&kA}), 2);  // epoch 0: two pushes
  EXPECT_EQ(unsaved.sums_kept(), 2u);
  unsaved.LoseAll();
  EXPECT_EQ(unsaved.NextToResend()->last_sequence, 3u);
}

}  // namespace
}  // namespace syncopate::client
