#include "client/local_model.h"

#include <random>

#include "gtest/gtest.h"

namespace syncopate::client {
namespace {

// One parameter vector in the test's own memory, registered as a buffer, whose "training step"
// adds a known amount, so every step can be accounted for exactly.
class CountingModel {
 public:
  CountingModel() { EXPECT_TRUE(parameters_.Add("w", {3}, w_.data()).ok()); }
  Parameters& parameters() { return parameters_; }
  // A step of `amount` taken through `local`.
  void Step(LocalModel& local, float amount) {
    for (float& v : w_) v += amount;
    local.CountStep();
  }

 private:
  std::vector<float> w_ = {0, 0, 0};
  BufferParameters parameters_;
};

std::vector<float> W(const LocalModel& m) {
  tensor::TensorMap out;
  EXPECT_TRUE(m.Read(&out).ok());
  return out["w"];
}

TEST(LocalModel, PullAfterAPushLoadsThePulledModelExactly) {
  CountingModel model;
  LocalModel local(model.parameters());
  ASSERT_TRUE(local.Begin().ok());
  model.Step(local, 1);
  EXPECT_EQ(local.TakeDelta(std::nullopt).value()["w"], (std::vector<float>{1, 1, 1}));
  ASSERT_TRUE(local.Rebase({{"w", {0.1f, 0.2f, 0.3f}}}, -1).ok());
  EXPECT_EQ(W(local), (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(local.pending_deltas(), 0u);
}

TEST(LocalModel, LocalStepsAfterThePushSurviveTheRebase) {
  CountingModel model;
  LocalModel local(model.parameters());
  ASSERT_TRUE(local.Begin().ok());
  model.Step(local, 1);
  ASSERT_TRUE(local.TakeDelta(1).ok());  // clock 1, pending
  model.Step(local, 2);                  // two local steps the store has not seen
  model.Step(local, 2);
  ASSERT_TRUE(local.Rebase({{"w", {10, 10, 10}}}, 1).ok());  // round includes clock 1
  EXPECT_EQ(W(local), (std::vector<float>{14, 14, 14}));
  EXPECT_EQ(local.pending_deltas(), 0u);
  // The next delta is exactly those two steps (not the pulled change).
  EXPECT_EQ(local.TakeDelta(2).value()["w"], (std::vector<float>{4, 4, 4}));
}

TEST(LocalModel, OwnPushesNotInThePulledRoundAreKept) {
  CountingModel model;
  LocalModel local(model.parameters());
  ASSERT_TRUE(local.Begin().ok());
  for (int64_t clock = 1; clock <= 3; ++clock) {
    model.Step(local, 1);
    ASSERT_TRUE(local.TakeDelta(clock).ok());
  }
  model.Step(local, 5);
  // The round took clocks 1 and 2; clock 3 waits in the store for the next round.
  ASSERT_TRUE(local.Rebase({{"w", {100, 100, 100}}}, 2).ok());
  EXPECT_EQ(W(local), (std::vector<float>{106, 106, 106}));
  EXPECT_EQ(local.pending_deltas(), 1u);
  EXPECT_EQ(local.TakeDelta(4).value()["w"], (std::vector<float>{5, 5, 5}));
}

TEST(LocalModel, BadPullChangesNothing) {
  CountingModel model;
  LocalModel local(model.parameters());
  ASSERT_TRUE(local.Begin().ok());
  model.Step(local, 1);
  EXPECT_EQ(local.Rebase({{"v", {1, 1, 1}}}, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(local.Rebase({{"w", {1}}}, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(W(local), (std::vector<float>{1, 1, 1}));
}

}  // namespace
}  // namespace syncopate::client
