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
  EXPECT_EQ(local.TakeDelta(std::nullopt).value()->at("w"), (std::vector<float>{1, 1, 1}));
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
  EXPECT_EQ(local.TakeDelta(2).value()->at("w"), (std::vector<float>{4, 4, 4}));
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
  EXPECT_EQ(local.TakeDelta(4).value()->at("w"), (std::vector<float>{5, 5, 5}));
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

// Parameters that gained a tensor since the base was taken: the delta is refused and nothing
// changes (the steps stay unpushed, the base is kept).
TEST(LocalModel, ParametersThatChangedShapeGiveNoDelta) {
  CountingModel model;
  LocalModel local(model.parameters());
  ASSERT_TRUE(local.Begin().ok());
  model.Step(local, 1);
  std::vector<float> v = {5, 5};
  ASSERT_TRUE(static_cast<BufferParameters&>(model.parameters()).Add("v", {2}, v.data()).ok());
  EXPECT_EQ(local.TakeDelta(1).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(local.unpushed_steps(), 1);
  EXPECT_EQ(local.pending_deltas(), 0u);
}

// Parameters that count their reads and can refuse writes, around a CountingModel's.
class ReadCountingParameters final : public Parameters {
 public:
  explicit ReadCountingParameters(Parameters& inner) : inner_(inner) {}
  std::vector<tensor::TensorSpec> Specs() const override { return inner_.Specs(); }
  absl::Status Read(tensor::TensorMap* out) const override {
    ++reads;
    return inner_.Read(out);
  }
  absl::Status Write(const tensor::TensorMap& in) override {
    if (refuse_writes) return absl::UnavailableError("device lost");
    return inner_.Write(in);
  }
  mutable int reads = 0;
  bool refuse_writes = false;

 private:
  Parameters& inner_;
};

// A begun LocalModel over a CountingModel whose parameter reads are counted.
class CountedLocalModelTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(local.Begin().ok()); }

  CountingModel model;
  ReadCountingParameters counted{model.parameters()};
  LocalModel local{counted};
};

// A round with no step between the push and the pull (every sequential mode) reads the
// parameters once, for the delta; the rebase writes the new base without reading them again, and
// gives what the full rebase gives.
TEST_F(CountedLocalModelTest, ARebaseWithNoStepSinceThePushReadsNothing) {
  model.Step(local, 1);
  ASSERT_TRUE(local.TakeDelta(1).ok());
  ASSERT_TRUE(local.TakeDelta(2).ok());  // an empty delta, pending too
  const int reads = counted.reads;
  // The round includes clock 1 only: clock 2's (empty) delta is kept on top of the pulled model.
  ASSERT_TRUE(local.Rebase({{"w", {5, 6, 7}}}, 1).ok());
  EXPECT_EQ(counted.reads, reads);
  EXPECT_EQ(W(local), (std::vector<float>{5, 6, 7}));
  EXPECT_EQ(local.pending_deltas(), 1u);
  // The next step is measured from the rebased model.
  model.Step(local, 2);
  EXPECT_EQ(local.TakeDelta(3).value()->at("w"), (std::vector<float>{2, 2, 2}));
  // The same sequence through the full rebase (a step of 0 counted before it) ends bit-identical.
  CountingModel full_model;
  LocalModel full(full_model.parameters());
  ASSERT_TRUE(full.Begin().ok());
  full_model.Step(full, 1);
  ASSERT_TRUE(full.TakeDelta(1).ok());
  ASSERT_TRUE(full.TakeDelta(2).ok());
  full_model.Step(full, 0);
  ASSERT_TRUE(full.Rebase({{"w", {5, 6, 7}}}, 1).ok());
  full_model.Step(full, 2);
  ASSERT_TRUE(full.TakeDelta(3).ok());
  EXPECT_EQ(W(full), W(local));
  // A step between the push and the pull: the rebase reads the parameters to keep it.
  model.Step(local, 1);
  const int before_step_rebase = counted.reads;
  ASSERT_TRUE(local.Rebase({{"w", {0, 0, 0}}}, 3).ok());
  EXPECT_EQ(counted.reads, before_step_rebase + 1);
  EXPECT_EQ(W(local), (std::vector<float>{1, 1, 1}));
}

// An exchange's average replaces the local model and the base, without a read; the next delta
// counts from it. A model of the wrong shape changes nothing.
TEST_F(CountedLocalModelTest, ReplaceLoadsTheModelAsTheNewBase) {
  model.Step(local, 1);
  EXPECT_EQ(local.Replace({{"w", {1}}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(W(local), (std::vector<float>{1, 1, 1}));
  const int reads = counted.reads;
  ASSERT_TRUE(local.Replace({{"w", {4, 5, 6}}}).ok());
  EXPECT_EQ(counted.reads, reads);
  EXPECT_EQ(W(local), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(local.unpushed_steps(), 0);
  model.Step(local, 2);
  EXPECT_EQ(local.TakeDelta(std::nullopt).value()->at("w"), (std::vector<float>{2, 2, 2}));
}

// A write that fails may have changed some parameters: the next rebase reads them again.
TEST_F(CountedLocalModelTest, AFailedWriteMakesTheNextRebaseReadTheParameters) {
  counted.refuse_writes = true;
  EXPECT_EQ(local.Rebase({{"w", {1, 1, 1}}}, -1).code(), absl::StatusCode::kUnavailable);
  counted.refuse_writes = false;
  const int reads = counted.reads;
  ASSERT_TRUE(local.Rebase({{"w", {2, 2, 2}}}, -1).ok());
  EXPECT_EQ(counted.reads, reads + 1);
  EXPECT_EQ(W(local), (std::vector<float>{2, 2, 2}));
}

}  // namespace
}  // namespace syncopate::client
