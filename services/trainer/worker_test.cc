// The worker's protocol against a fake coordinator and a fake store, on a fake clock: what it
// pushes, what it pulls and rebases onto, what it reports, how it accounts its time, and how it
// ends. No gRPC, no threads of its own, no sleeping (the sequential modes).
#include "trainer/worker.h"

#include <deque>
#include <map>
#include <variant>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace syncopate::trainer {
namespace {

// A coordinator that answers WaitProceed from a script, each answer after `wait` of (fake) time.
class FakeCoordinator final : public client::CoordinatorLink {
 public:
  struct Answer {
    std::variant<v1::Proceed, absl::Status> directive;
    absl::Duration wait;
  };

  FakeCoordinator(base::FakeClock& clock, v1::ApplyMode push_mode, bool overlap = false)
      : clock_(clock) {
    welcome_.set_trainer_id(7);
    welcome_.set_incarnation(3);
    welcome_.set_push_mode(push_mode);
    welcome_.set_overlap_communication(overlap);
  }
  void Script(Answer answer) { script_.push_back(std::move(answer)); }

  const v1::Welcome& welcome() const override { return welcome_; }
  absl::StatusOr<v1::Proceed> WaitProceed(absl::Duration timeout) override {
    if (script_.empty()) return absl::OutOfRangeError("the script is over");
    Answer answer = script_.front();
    script_.pop_front();
    clock_.Advance(answer.wait);
    if (auto* status = std::get_if<absl::Status>(&answer.directive)) return *status;
    return std::get<v1::Proceed>(answer.directive);
  }
  absl::Status ReportClock(const v1::ClockReport& report) override {
    reports.push_back(report);
    return absl::OkStatus();
  }
  void StartHeartbeats(std::function<v1::TrainerTimings()>) override {}
  void Leave(const std::string& reason) override { left = reason; }

  std::vector<v1::ClockReport> reports;
  std::optional<std::string> left;

 private:
  base::FakeClock& clock_;
  v1::Welcome welcome_;
  std::deque<Answer> script_;
};

// A store that records what it is sent and serves the models it is given.
class FakeStore final : public client::StoreLink {
 public:
  struct Pushed {
    v1::PushHeader header;
    tensor::TensorMap delta;
  };

  absl::Status Initialize(const v1::PushHeader&, const tensor::TensorMap& values) override {
    initialized = values;
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Push(const v1::PushHeader& header,
                                const tensor::TensorMap& delta) override {
    pushes.push_back({header, delta});
    return 8;
  }
  absl::StatusOr<client::PulledModel> Pull(int64_t round) override {
    pulled.push_back(round);
    auto it = models.find(round);
    if (it != models.end()) return client::PulledModel{it->second, round, {0}, 8};
    if (any_round) return client::PulledModel{*any_round, round, {0}, 8};
    return absl::NotFoundError("no such round");
  }

  tensor::TensorMap initialized;
  std::vector<Pushed> pushes;
  std::vector<int64_t> pulled;
  std::map<int64_t, tensor::TensorMap> models;  // by round; -1: the live model
  std::optional<tensor::TensorMap> any_round;   // served for a round `models` lacks
};

// Two parameters whose SGD step adds the learning rate and takes one second of (fake) compute.
class SteppingModel final : public compute::Model {
 public:
  explicit SteppingModel(base::FakeClock& clock) : clock_(clock) {}
  std::vector<tensor::TensorSpec> Parameters() const override { return {{"w", {2}}}; }
  void ReadParameters(tensor::TensorMap* out) const override { *out = {{"w", w}}; }
  absl::Status WriteParameters(const tensor::TensorMap& in) override {
    auto it = in.find("w");
    if (it == in.end() || it->second.size() != 2) return absl::InvalidArgumentError("bad");
    w = it->second;
    clock_.Advance(write_takes);
    // Real time too, so that the compute thread of an overlapped run meets the write.
    if (write_takes > absl::ZeroDuration()) absl::SleepFor(absl::Milliseconds(2));
    return absl::OkStatus();
  }
  float TrainStep(const float*, const int32_t*, int, float learning_rate) override {
    for (float& v : w) v += learning_rate;
    clock_.Advance(absl::Seconds(1));
    if (write_takes > absl::ZeroDuration()) absl::SleepFor(absl::Milliseconds(1));
    return 0.5f;
  }
  void Predict(const float*, int n, int32_t* classes) override {
    for (int i = 0; i < n; ++i) classes[i] = 0;
  }

  std::vector<float> w = {0, 0};
  // How long (fake time) a write of the parameters takes: a rebase holds the model this long.
  absl::Duration write_takes = absl::ZeroDuration();

 private:
  base::FakeClock& clock_;
};

v1::Proceed Grant(int64_t clock, std::optional<int64_t> round = std::nullopt,
                  int64_t includes_clock = -1) {
  v1::Proceed p;
  p.set_clock(clock);
  if (round) {
    p.mutable_pull()->set_round(*round);
    p.mutable_pull()->set_includes_clock(includes_clock);
  } else {
    p.mutable_pull()->set_none(true);
  }
  return p;
}

class WorkerTest : public ::testing::Test {
 protected:
  WorkerTest() {
    options_.learning_rate = 0.25f;
    options_.batch_size = 2;
  }

  absl::Status Run(FakeCoordinator& coordinator) {
    Worker worker(options_, coordinator, store_, model_, eval_model_, data_, data_, metrics_,
                  trace_, clock_);
    absl::Notification stop;
    absl::Status status = worker.Run(stop);
    timings_ = worker.Timings();
    return status;
  }

  base::FakeClock clock_;
  WorkerOptions options_;
  FakeStore store_;
  SteppingModel model_{clock_};
  SteppingModel eval_model_{clock_};
  data::Dataset data_{1, {0, 0, 0, 0}, {0, 0, 0, 0}};
  prometheus::Registry registry_;
  TrainerMetrics metrics_{registry_};
  TraceWriter trace_{""};
  v1::TrainerTimings timings_;
};

// BSP: push each step's delta for its round, pull the round the coordinator names, rebase onto
// it, report each clock; leave when training is done.
TEST_F(WorkerTest, RoundModePushesEachStepAndLoadsThePulledRound) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::Seconds(2)});
  coordinator.Script({Grant(1, /*round=*/1, /*includes_clock=*/1), absl::Seconds(2)});
  coordinator.Script({absl::OutOfRangeError("training is done"), absl::Seconds(5)});
  store_.models[1] = {{"w", {5, 5}}};

  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(store_.initialized, (tensor::TensorMap{{"w", {0, 0}}}));
  ASSERT_EQ(store_.pushes.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const v1::PushHeader& h = store_.pushes[i].header;
    EXPECT_EQ(h.trainer_id(), 7u);
    EXPECT_EQ(h.incarnation(), 3u);
    EXPECT_EQ(h.sequence(), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(h.clock(), i + 1);
    EXPECT_EQ(h.apply_mode(), v1::APPLY_MODE_ROUND);
    EXPECT_EQ(h.weight(), 1.0f);
    // Each delta is exactly one step, never the pulled change.
    EXPECT_EQ(store_.pushes[i].delta, (tensor::TensorMap{{"w", {0.25f, 0.25f}}})) << i;
  }
  EXPECT_EQ(store_.pulled, (std::vector<int64_t>{1}));
  // Round 1 held this trainer's push 1, so the model became the round plus the step after it.
  EXPECT_EQ(model_.w, (std::vector<float>{5.25f, 5.25f}));
  ASSERT_EQ(coordinator.reports.size(), 2u);
  EXPECT_EQ(coordinator.reports[0].clock(), 1);
  EXPECT_EQ(coordinator.reports[1].clock(), 2);
  EXPECT_EQ(coordinator.reports[1].loss(), 0.5f);
  EXPECT_EQ(coordinator.left, "training is done");
}

// A round that does not hold the trainer's latest push: that push stays in the local model.
TEST_F(WorkerTest, OwnPushesTheRoundLacksSurviveTheRebase) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({Grant(1), absl::ZeroDuration()});
  coordinator.Script({Grant(2, /*round=*/1, /*includes_clock=*/1), absl::ZeroDuration()});
  store_.models[1] = {{"w", {5, 5}}};

  ASSERT_TRUE(Run(coordinator).ok());
  // Round 1 = 5 holds push 1; push 2 (0.25) is still pending in the store; then one more step.
  EXPECT_EQ(model_.w, (std::vector<float>{5.5f, 5.5f}));
  ASSERT_EQ(store_.pushes.size(), 3u);
  EXPECT_EQ(store_.pushes[2].delta, (tensor::TensorMap{{"w", {0.25f, 0.25f}}}));
}

// ASP/SSP: pushes are applied at once (the store's mode), and a live pull loads the live model.
TEST_F(WorkerTest, ImmediateModePullsTheLiveModel) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_IMMEDIATE);
  v1::Proceed live = Grant(0);
  live.mutable_pull()->set_live(true);
  coordinator.Script({live, absl::ZeroDuration()});
  store_.models[-1] = {{"w", {1, 2}}};

  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(store_.pulled, (std::vector<int64_t>{-1}));
  ASSERT_EQ(store_.pushes.size(), 1u);
  EXPECT_EQ(store_.pushes[0].header.apply_mode(), v1::APPLY_MODE_IMMEDIATE);
  EXPECT_EQ(model_.w, (std::vector<float>{1.25f, 2.25f}));
}

// Compute is the time inside steps; the wait for a directive is wait, not compute.
TEST_F(WorkerTest, WaitingForTheCoordinatorIsNotCompute) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::Seconds(3)});
  coordinator.Script({Grant(1), absl::Seconds(4)});
  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(timings_.compute_seconds(), 2.0);  // two steps of one second
  EXPECT_EQ(timings_.wait_seconds(), 7.0);
  EXPECT_EQ(timings_.wall_seconds(), 9.0);
}

// wbsp-overlap: a compute thread steps while this one pushes and rebases. A rebase holds the model
// (here for 10 s of fake time per write); the compute thread's wait for it is wait, and compute is
// exactly the time inside its steps. No step is lost: every one is pushed. (Steps and writes also
// take a millisecond or two of real time, so that the two threads meet; the outcome checked does
// not depend on how they interleave.)
TEST_F(WorkerTest, OverlappedComputeExcludesTheWaitForTheModel) {
  options_.max_steps = 30;
  model_.write_takes = absl::Seconds(10);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND, /*overlap=*/true);
  for (int64_t c = 0; c < 200; ++c) coordinator.Script({Grant(c, c, c), absl::ZeroDuration()});
  store_.any_round = {{"w", {0, 0}}};

  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(timings_.compute_seconds(), 30.0);
  float pushed = 0;
  for (const FakeStore::Pushed& p : store_.pushes) pushed += p.delta.at("w")[0];
  EXPECT_FLOAT_EQ(pushed, 30 * 0.25f);
  EXPECT_GT(store_.pulled.size(), 1u);
}

TEST_F(WorkerTest, EvictionEndsTheRunWithAborted) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({absl::AbortedError("evicted"), absl::ZeroDuration()});
  EXPECT_TRUE(absl::IsAborted(Run(coordinator)));
  EXPECT_EQ(store_.pushes.size(), 1u);
}

// A coordinator that stays silent: the worker gives up after directive_timeout of (fake) time.
TEST_F(WorkerTest, ASilentCoordinatorIsADeadlineNotAHang) {
  options_.directive_timeout = absl::Seconds(1);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int i = 0; i < 100; ++i) {
    coordinator.Script({absl::DeadlineExceededError("no directive yet"), absl::Milliseconds(200)});
  }
  absl::Status status = Run(coordinator);
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_TRUE(store_.pushes.empty());
}

// A pulled round that does not fit the model is an error, and the model stays as it was.
TEST_F(WorkerTest, APulledModelThatDoesNotFitIsAnError) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({Grant(1, /*round=*/1, /*includes_clock=*/1), absl::ZeroDuration()});
  store_.models[1] = {{"w", {5, 5, 5}}};
  EXPECT_TRUE(absl::IsInvalidArgument(Run(coordinator)));
  EXPECT_EQ(model_.w, (std::vector<float>{0.25f, 0.25f}));
}

}  // namespace
}  // namespace syncopate::trainer
