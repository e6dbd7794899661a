#include "client/unsaved_pushes.h"

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

const std::string kA = "a";
const std::string kB = "b";

TEST(UnsavedPushesTest, PushesOfOneEpochAreKeptAsOneWeightedSum) {
  UnsavedPushes unsaved;
  const tensor::TensorMap delta = {{"a", {1, 2}}, {"b", {10}}};
  unsaved.Add(3, 7, 7, 0.5f, delta, {&kA});  // only "a" lives on this shard
  unsaved.Add(3, 8, 8, 1.0f, delta, {&kA});
  EXPECT_EQ(unsaved.epochs_kept(), 1u);
  unsaved.LoseFrom(3);
  const PushSum* lost = unsaved.NextToResend();
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->last_sequence, 8u);
  EXPECT_EQ(lost->last_clock, 8);
  EXPECT_EQ(lost->pushes, 2);
  EXPECT_EQ(lost->sum, (tensor::TensorMap{{"a", {1.5f, 3.0f}}}));
}

TEST(UnsavedPushesTest, DurableEpochsAreReleased) {
  UnsavedPushes unsaved;
  const tensor::TensorMap delta = {{"a", {1}}};
  for (int64_t epoch = 1; epoch <= 4; ++epoch) {
    unsaved.Add(epoch, static_cast<uint64_t>(epoch), epoch, 1.0f, delta, {&kA});
  }
  unsaved.Release(3);  // checkpoints through epoch 3 hold epochs 1 and 2
  EXPECT_EQ(unsaved.epochs_kept(), 2u);
  unsaved.Release(2);  // an older answer changes nothing
  EXPECT_EQ(unsaved.epochs_kept(), 2u);
}

// A restart from the checkpoint of epoch 3 loses epochs 3 and later: they queue up in order,
// behind anything an earlier restart left to re-send; earlier epochs are in the checkpoint.
TEST(UnsavedPushesTest, ARestartQueuesTheLostEpochsInOrder) {
  UnsavedPushes unsaved;
  const tensor::TensorMap delta = {{"a", {1}}, {"b", {2}}};
  unsaved.Add(1, 1, 1, 1.0f, delta, {&kA, &kB});
  unsaved.Add(2, 2, 2, 1.0f, delta, {&kA, &kB});
  unsaved.LoseFrom(2);
  EXPECT_EQ(unsaved.to_resend(), 1u);
  EXPECT_EQ(unsaved.epochs_kept(), 0u);
  unsaved.Add(2, 3, 3, 1.0f, delta, {&kA, &kB});  // the new incarnation numbers on from 2
  unsaved.LoseFrom(2);
  ASSERT_EQ(unsaved.to_resend(), 2u);
  EXPECT_EQ(unsaved.NextToResend()->last_sequence, 2u);
  unsaved.PopResent();
  EXPECT_EQ(unsaved.NextToResend()->last_sequence, 3u);
  unsaved.PopResent();
  EXPECT_EQ(unsaved.NextToResend(), nullptr);
}

}  // namespace
}  // namespace syncopate::client
