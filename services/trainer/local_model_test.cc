#include "trainer/local_model.h"

#include <random>
#include <thread>

#include "gtest/gtest.h"

namespace syncopate::trainer {
namespace {

// A model of one parameter vector whose "SGD step" adds a known amount, so every step can be
// accounted for exactly.
class CountingModel final : public compute::Model {
 public:
  std::vector<tensor::TensorSpec> Parameters() const override { return {{"w", {3}}}; }
  void ReadParameters(tensor::TensorMap* out) const override { *out = {{"w", w_}}; }
  absl::Status WriteParameters(const tensor::TensorMap& in) override {
    auto it = in.find("w");
    if (it == in.end() || it->second.size() != 3) return absl::InvalidArgumentError("bad");
    w_ = it->second;
    return absl::OkStatus();
  }
  float TrainStep(const float*, const int32_t*, int, float learning_rate) override {
    for (float& v : w_) v += learning_rate;
    return 0;
  }
  void Predict(const float*, int, int32_t*) override {}

 private:
  std::vector<float> w_ = {0, 0, 0};
};

std::vector<float> W(const LocalModel& m) {
  tensor::TensorMap out;
  m.Read(&out);
  return out["w"];
}

TEST(LocalModel, PullAfterAPushLoadsThePulledModelExactly) {
  CountingModel model;
  LocalModel local(model);
  local.TrainStep(nullptr, nullptr, 0, 1);
  EXPECT_EQ(local.TakeDelta(std::nullopt)["w"], (std::vector<float>{1, 1, 1}));
  ASSERT_TRUE(local.Rebase({{"w", {0.1f, 0.2f, 0.3f}}}, -1).ok());
  EXPECT_EQ(W(local), (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(local.pending_deltas(), 0u);
}

TEST(LocalModel, LocalStepsAfterThePushSurviveTheRebase) {
  CountingModel model;
  LocalModel local(model);
  local.TrainStep(nullptr, nullptr, 0, 1);
  local.TakeDelta(1);                       // clock 1, pending
  local.TrainStep(nullptr, nullptr, 0, 2);  // two local steps the store has not seen
  local.TrainStep(nullptr, nullptr, 0, 2);
  ASSERT_TRUE(local.Rebase({{"w", {10, 10, 10}}}, 1).ok());  // round includes clock 1
  EXPECT_EQ(W(local), (std::vector<float>{14, 14, 14}));
  EXPECT_EQ(local.pending_deltas(), 0u);
  // The next delta is exactly those two steps (not the pulled change).
  EXPECT_EQ(local.TakeDelta(2)["w"], (std::vector<float>{4, 4, 4}));
}

TEST(LocalModel, OwnPushesNotInThePulledRoundAreKept) {
  CountingModel model;
  LocalModel local(model);
  for (int64_t clock = 1; clock <= 3; ++clock) {
    local.TrainStep(nullptr, nullptr, 0, 1);
    local.TakeDelta(clock);
  }
  local.TrainStep(nullptr, nullptr, 0, 5);
  // The round took clocks 1 and 2; clock 3 waits in the store for the next round.
  ASSERT_TRUE(local.Rebase({{"w", {100, 100, 100}}}, 2).ok());
  EXPECT_EQ(W(local), (std::vector<float>{106, 106, 106}));
  EXPECT_EQ(local.pending_deltas(), 1u);
  EXPECT_EQ(local.TakeDelta(4)["w"], (std::vector<float>{5, 5, 5}));
}

TEST(LocalModel, BadPullChangesNothing) {
  CountingModel model;
  LocalModel local(model);
  local.TrainStep(nullptr, nullptr, 0, 1);
  EXPECT_EQ(local.Rebase({{"v", {1, 1, 1}}}, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(local.Rebase({{"w", {1}}}, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(W(local), (std::vector<float>{1, 1, 1}));
}

// The wbsp-overlap race the published code has: a compute thread steps while another thread
// pushes and rebases. Every step must end up either in a pushed delta or in the local model.
TEST(LocalModel, ConcurrentStepsAreNeverLost) {
  CountingModel model;
  LocalModel local(model);
  constexpr int kSteps = 20000;
  std::thread compute([&] {
    for (int i = 0; i < kSteps; ++i) local.TrainStep(nullptr, nullptr, 0, 1);
  });
  // The "store": every delta pushed, applied to a global model that is pulled back each time.
  std::vector<double> global = {0, 0, 0};
  int64_t clock = 0;
  while (clock < 100000) {
    tensor::TensorMap delta = local.TakeDelta(++clock);
    for (int i = 0; i < 3; ++i) global[i] += delta["w"][i];
    tensor::TensorMap pulled = {{"w",
                                 {static_cast<float>(global[0]), static_cast<float>(global[1]),
                                  static_cast<float>(global[2])}}};
    ASSERT_TRUE(local.Rebase(pulled, clock).ok());
    if (W(local)[0] >= kSteps) break;
  }
  compute.join();
  tensor::TensorMap rest = local.TakeDelta(++clock);
  EXPECT_EQ(global[0] + rest["w"][0], kSteps);
  EXPECT_EQ(W(local)[0], kSteps);
}

}  // namespace
}  // namespace syncopate::trainer
