// The session against a fake coordinator and a fake store, on a fake clock, driven by a training
// loop of the test's own: what it pushes, what it pulls and rebases onto, what it reports, how it
// accounts its time, and how it ends. No gRPC and no sleeping; no thread of its own in the
// sequential modes.
#include "client/session.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <thread>
#include <variant>

#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "client/fake_peer_link.h"
#include "client/peer_exchange.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace syncopate::client {
namespace {

// A coordinator that answers WaitProceed from a script, each answer after `wait` of (fake) time.
class FakeCoordinator final : public CoordinatorLink {
 public:
  struct Answer {
    std::variant<v1::Proceed, absl::Status> directive;
    absl::Duration wait;
    int acks = 0;  // HeartbeatAcks read during the wait
  };

  FakeCoordinator(base::FakeClock& clock, v1::ApplyMode push_mode, bool overlap = false)
      : clock_(clock) {
    welcome_.set_trainer_id(7);
    welcome_.set_incarnation(3);
    welcome_.set_push_mode(push_mode);
    welcome_.set_overlap_communication(overlap);
  }
  void Script(Answer answer) { script_.push_back(std::move(answer)); }
  v1::Welcome& mutable_welcome() { return welcome_; }

  const v1::Welcome& welcome() const override { return welcome_; }
  absl::StatusOr<v1::Proceed> WaitProceed(absl::Duration timeout) override {
    if (script_.empty()) return absl::OutOfRangeError("the script is over");
    Answer answer = script_.front();
    script_.pop_front();
    clock_.Advance(answer.wait);
    heard_ += static_cast<uint64_t>(answer.acks);
    if (auto* status = std::get_if<absl::Status>(&answer.directive)) return *status;
    return std::get<v1::Proceed>(answer.directive);
  }
  uint64_t directives_heard() const override { return heard_; }
  absl::Status ReportClock(const v1::ClockReport& report) override {
    reports.push_back(report);
    return absl::OkStatus();
  }
  void StartHeartbeats(std::function<v1::TrainerTimings()>) override {}
  void SetPaused(bool paused) override { pauses.push_back(paused); }
  // Idempotent, as the real one: the first Leave is the one sent.
  void Leave(const v1::Leave& leave, bool finished) override {
    if (left) return;
    left = leave.reason();
    if (leave.has_final_test_accuracy()) left_with_accuracy = leave.final_test_accuracy();
    if (leave.has_test_accuracy()) left_with_last_accuracy = leave.test_accuracy();
    left_finished = finished;
  }

  std::vector<v1::ClockReport> reports;
  std::vector<bool> pauses;  // SetPaused's arguments, in order
  std::optional<std::string> left;
  std::optional<double> left_with_accuracy;       // the final average's
  std::optional<double> left_with_last_accuracy;  // evaluated after the last report
  bool left_finished = false;

 private:
  base::FakeClock& clock_;
  v1::Welcome welcome_;
  std::deque<Answer> script_;
  uint64_t heard_ = 0;
};

// A store that records what it is sent and serves the models it is given.
class FakeStore final : public StoreLink {
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
                                tensor::SharedTensorMap delta) override {
    if (!push_error.ok()) return push_error;
    pushes.push_back({header, *delta});
    calls.push_back("push");
    return 8;
  }
  absl::StatusOr<PulledModel> Pull(int64_t round) override {
    pulled.push_back(round);
    auto it = models.find(round);
    if (it != models.end()) return PulledModel{it->second, round, {0}, 8};
    if (any_round) return PulledModel{*any_round, round, {0}, 8};
    return absl::NotFoundError("no such round");
  }
  absl::Status ResendWhatRestartsLost(const v1::PushHeader& identity) override {
    resend_asks.push_back(identity);
    calls.push_back("resend");
    asked_after_leaving = coordinator != nullptr && coordinator->left.has_value();
    return absl::OkStatus();
  }

  absl::Status push_error;                 // every push's answer when not OK
  FakeCoordinator* coordinator = nullptr;  // to tell whether the trainer had left when it asked
  std::vector<v1::PushHeader> resend_asks;
  std::vector<std::string> calls;  // "push", "resend", in order
  bool asked_after_leaving = false;
  tensor::TensorMap initialized;
  std::vector<Pushed> pushes;
  std::vector<int64_t> pulled;
  std::map<int64_t, tensor::TensorMap> models;  // by round; -1: the live model
  std::optional<tensor::TensorMap> any_round;   // served for a round `models` lacks
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

// A training loop of the test's own over one parameter "w" of two elements in its memory: each
// step adds 0.25 and takes one second of (fake) time; writing the parameters (a rebase) takes
// `write_takes`.
class SessionTest : public ::testing::Test {
 protected:
  SessionTest() {
    EXPECT_TRUE(parameters_
                    .Add(
                        "w", {2},
                        [this](absl::Span<float> out) {
                          std::copy(w_.begin(), w_.end(), out.begin());
                          return absl::OkStatus();
                        },
                        [this](absl::Span<const float> in) {
                          std::copy(in.begin(), in.end(), w_.begin());
                          clock_.Advance(write_takes_);
                          return absl::OkStatus();
                        })
                    .ok());
  }

  absl::Status Run(FakeCoordinator& coordinator, PeerLink* peers = nullptr) {
    Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, peers);
    absl::Status status = [&]() -> absl::Status {
      RETURN_IF_ERROR(session.Start());
      for (bool more = true; more;) {
        for (float& v : w_) v += 0.25f;
        clock_.Advance(absl::Seconds(1));
        ++steps_taken_;
        ASSIGN_OR_RETURN(more, session.Step(0.5f));
      }
      return absl::OkStatus();
    }();
    timings_ = session.Timings();
    return status;
  }

  base::FakeClock clock_;
  SessionOptions options_;
  FakeStore store_;
  std::vector<float> w_ = {0, 0};
  absl::Duration write_takes_ = absl::ZeroDuration();
  BufferParameters parameters_;
  int steps_taken_ = 0;
  prometheus::Registry registry_;
  TrainerMetrics metrics_{registry_};
  TraceWriter trace_{""};
  v1::TrainerTimings timings_;
};

// BSP: push each step's delta for its round, pull the round the coordinator names, rebase onto
// it, report each clock; leave when training is done.
TEST_F(SessionTest, RoundModePushesEachStepAndLoadsThePulledRound) {
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
  EXPECT_EQ(w_, (std::vector<float>{5.25f, 5.25f}));
  ASSERT_EQ(coordinator.reports.size(), 2u);
  EXPECT_EQ(coordinator.reports[0].clock(), 1);
  EXPECT_EQ(coordinator.reports[1].clock(), 2);
  EXPECT_EQ(coordinator.reports[1].loss(), 0.5f);
  EXPECT_EQ(coordinator.left, "training is done");
}

// A trainer learns of a store shard's restart from its next push there; one that ends without
// pushing again first has the store link re-send what a restart lost, then leaves (the store
// refuses a trainer that left). Ended by an error, it leaves at once.
TEST_F(SessionTest, ACleanEndResendsWhatAStoreRestartLostBeforeLeaving) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  store_.coordinator = &coordinator;
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({absl::OutOfRangeError("training is done"), absl::ZeroDuration()});
  ASSERT_TRUE(Run(coordinator).ok());
  ASSERT_EQ(store_.resend_asks.size(), 1u);
  EXPECT_EQ(store_.resend_asks[0].trainer_id(), 7u);
  EXPECT_EQ(store_.resend_asks[0].incarnation(), 3u);
  EXPECT_FALSE(store_.asked_after_leaving);
  EXPECT_EQ(coordinator.left, "training is done");

  // Closed by its caller before it ended, too.
  FakeCoordinator closing(clock_, v1::APPLY_MODE_ROUND);
  store_ = FakeStore();
  store_.coordinator = &closing;
  for (int64_t c = 0; c < 3; ++c) closing.Script({Grant(c), absl::ZeroDuration()});
  {
    Session session(options_, closing, store_, parameters_, metrics_, trace_, clock_);
    ASSERT_TRUE(session.Start().ok());
    EXPECT_EQ(session.Step(0.5f).value_or(false), true);
    session.Close();
  }
  EXPECT_EQ(store_.resend_asks.size(), 1u);
  EXPECT_FALSE(store_.asked_after_leaving);
  EXPECT_EQ(closing.left, "closed");

  FakeCoordinator evicting(clock_, v1::APPLY_MODE_ROUND);
  store_ = FakeStore();
  store_.coordinator = &evicting;
  evicting.Script({Grant(0), absl::ZeroDuration()});
  evicting.Script({absl::AbortedError("evicted"), absl::ZeroDuration()});
  EXPECT_TRUE(absl::IsAborted(Run(evicting)));
  EXPECT_TRUE(store_.resend_asks.empty());
}

// A round that does not hold the trainer's latest push: that push stays in the local model.
TEST_F(SessionTest, OwnPushesTheRoundLacksSurviveTheRebase) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({Grant(1), absl::ZeroDuration()});
  coordinator.Script({Grant(2, /*round=*/1, /*includes_clock=*/1), absl::ZeroDuration()});
  store_.models[1] = {{"w", {5, 5}}};

  ASSERT_TRUE(Run(coordinator).ok());
  // Round 1 = 5 holds push 1; push 2 (0.25) is still pending in the store; then one more step.
  EXPECT_EQ(w_, (std::vector<float>{5.5f, 5.5f}));
  ASSERT_EQ(store_.pushes.size(), 3u);
  EXPECT_EQ(store_.pushes[2].delta, (tensor::TensorMap{{"w", {0.25f, 0.25f}}}));
}

// ASP/SSP: pushes are applied at once (the store's mode), and a live pull loads the live model.
TEST_F(SessionTest, ImmediateModePullsTheLiveModel) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_IMMEDIATE);
  v1::Proceed live = Grant(0);
  live.mutable_pull()->set_live(true);
  coordinator.Script({live, absl::ZeroDuration()});
  store_.models[-1] = {{"w", {1, 2}}};

  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(store_.pulled, (std::vector<int64_t>{-1}));
  ASSERT_EQ(store_.pushes.size(), 1u);
  EXPECT_EQ(store_.pushes[0].header.apply_mode(), v1::APPLY_MODE_IMMEDIATE);
  EXPECT_EQ(w_, (std::vector<float>{1.25f, 2.25f}));
}

// Under top-k, each push carries part of its delta and error feedback holds the rest for the
// next; a trainer that leaves cleanly pushes what is still held, so that the store got every
// step whole. In a round mode the rest is not sent (a push outside the rounds would be late).
TEST_F(SessionTest, ALeavingTrainerPushesWhatCompressionHeldBack) {
  for (v1::ApplyMode mode : {v1::APPLY_MODE_IMMEDIATE, v1::APPLY_MODE_ROUND}) {
    FakeCoordinator coordinator(clock_, mode);
    coordinator.mutable_welcome().set_codec(v1::CODEC_TOPK);
    coordinator.mutable_welcome().set_topk_ratio(0.5);  // one value of the two a push
    for (int64_t c = 0; c < 3; ++c) coordinator.Script({Grant(c), absl::ZeroDuration()});
    coordinator.Script({absl::OutOfRangeError("training is done"), absl::ZeroDuration()});
    store_ = FakeStore();
    w_ = {0, 0};
    ASSERT_TRUE(Run(coordinator).ok());
    std::vector<float> sent = {0, 0};
    for (const FakeStore::Pushed& p : store_.pushes) {
      EXPECT_EQ(p.header.codec(), v1::CODEC_TOPK);
      for (size_t i = 0; i < 2; ++i) sent[i] += p.delta.at("w")[i];
    }
    if (mode == v1::APPLY_MODE_IMMEDIATE) {
      ASSERT_EQ(store_.pushes.size(), 4u) << "three steps, then what they held back";
      EXPECT_EQ(store_.pushes.back().header.sequence(), 4u);
      EXPECT_EQ(store_.pushes.back().header.clock(), store_.pushes[2].header.clock());
      EXPECT_EQ(sent, (std::vector<float>{0.75f, 0.75f})) << "three steps of 0.25, whole";
    } else {
      EXPECT_EQ(store_.pushes.size(), 3u);
      EXPECT_LT(sent[0] + sent[1], 1.5f) << "the held-back part stays";
    }
    EXPECT_EQ(coordinator.left, "training is done");
  }
}

// Compute is the time inside steps; the wait for a directive is wait, not compute.
TEST_F(SessionTest, WaitingForTheCoordinatorIsNotCompute) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::Seconds(3)});
  coordinator.Script({Grant(1), absl::Seconds(4)});
  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(timings_.compute_seconds(), 2.0);  // two steps of one second
  EXPECT_EQ(timings_.wait_seconds(), 7.0);
  EXPECT_EQ(timings_.wall_seconds(), 9.0);
}

// wbsp-overlap: the session's own thread pushes, reports and pulls while the loop steps on; the
// loop never waits for the coordinator. A rebase (10 s of fake time per write of the parameters)
// happens inside Step, between two steps: it is wait, and compute is exactly the time of the
// steps. No step is lost: the deltas pushed add up to every step, the last ones flushed before
// the session leaves at its step limit.
TEST_F(SessionTest, OverlappedLosesNoStepAndCountsOnlyStepsAsCompute) {
  options_.max_steps = 30;
  write_takes_ = absl::Seconds(10);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND, /*overlap=*/true);
  for (int64_t c = 0; c < 200; ++c) coordinator.Script({Grant(c, c, c), absl::ZeroDuration()});
  store_.any_round = {{"w", {0, 0}}};

  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(steps_taken_, 30);
  EXPECT_EQ(timings_.compute_seconds(), 30.0);
  float pushed = 0;
  for (const FakeStore::Pushed& p : store_.pushes) pushed += p.delta.at("w")[0];
  EXPECT_FLOAT_EQ(pushed, 30 * 0.25f);
  // The first grant's round, and at least the round after the last push.
  EXPECT_GE(store_.pulled.size(), 2u);
  EXPECT_EQ(coordinator.left, "step limit reached");
  // Re-sent once, after the communication thread's last push.
  EXPECT_EQ(std::count(store_.calls.begin(), store_.calls.end(), "resend"), 1);
  EXPECT_EQ(store_.calls.back(), "resend");
}

// Without SessionOptions::evaluate, the session says when the coordinator wants an evaluation;
// the caller's accuracy goes out with the next report, once.
TEST_F(SessionTest, TheCallersAccuracyGoesOutWithTheNextReport) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  v1::Proceed first = Grant(0, /*round=*/0);
  first.set_evaluate(true);
  coordinator.Script({first, absl::ZeroDuration()});
  coordinator.Script({Grant(1), absl::ZeroDuration()});
  store_.models[0] = {{"w", {1, 1}}};
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_TRUE(session.evaluation_due());
  session.ReportAccuracy(0.75);
  EXPECT_FALSE(session.evaluation_due());
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  EXPECT_EQ(session.Step(0.5f).value_or(true), false);  // the script is over: done
  ASSERT_EQ(coordinator.reports.size(), 2u);
  EXPECT_EQ(coordinator.reports[0].test_accuracy(), 0.75);
  EXPECT_FALSE(coordinator.reports[1].has_test_accuracy());
}

// A Step that ends the session while an evaluation the coordinator asked for is unanswered (a
// library trainer evaluating in the background) leaves the Leave to Close, the trainer paused
// meanwhile: an accuracy reported in between goes with the Leave. Unasked, it leaves at once.
TEST_F(SessionTest, AnAccuracyReportedAfterTheLastStepGoesWithTheLeave) {
  for (bool asked : {true, false}) {
    options_.max_steps = 1;
    FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
    v1::Proceed first = Grant(0, /*round=*/0);
    first.set_evaluate(asked);
    coordinator.Script({first, absl::ZeroDuration()});
    store_.models[0] = {{"w", {1, 1}}};
    Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_);
    ASSERT_TRUE(session.Start().ok());
    EXPECT_EQ(session.evaluation_due(), asked);
    EXPECT_EQ(session.Step(0.5f).value_or(true), false);  // the step limit
    EXPECT_EQ(coordinator.left.has_value(), !asked) << "asked: the Leave waits for Close";
    EXPECT_EQ(coordinator.pauses, asked ? std::vector<bool>{true} : std::vector<bool>{});
    session.ReportAccuracy(0.625);
    session.Close();
    EXPECT_EQ(coordinator.left, "step limit reached");
    EXPECT_EQ(coordinator.left_with_last_accuracy,
              asked ? std::optional<double>(0.625) : std::nullopt);
    EXPECT_FALSE(coordinator.left_with_accuracy.has_value()) << "not a final average's";
    ASSERT_EQ(coordinator.reports.size(), 1u);
    EXPECT_FALSE(coordinator.reports[0].has_test_accuracy());
  }
}

// With SessionOptions::evaluate (here on the receiving thread), the session evaluates the model
// it pulled, at most every eval_interval, and reports the result.
TEST_F(SessionTest, EvaluatesPulledModelsAtMostEveryInterval) {
  options_.evaluate_in_background = false;
  options_.eval_interval = absl::Seconds(10);
  std::vector<float> evaluated;
  options_.evaluate = [&](const tensor::TensorMap& model) {
    evaluated.push_back(model.at("w")[0]);
    return 0.5;
  };
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int64_t c = 0; c < 4; ++c) {
    v1::Proceed p = Grant(c, /*round=*/c, /*includes_clock=*/c);
    p.set_evaluate(true);
    coordinator.Script({p, absl::Seconds(4)});
  }
  store_.models[0] = {{"w", {0, 0}}};
  store_.models[1] = {{"w", {1, 1}}};
  store_.models[2] = {{"w", {2, 2}}};
  store_.models[3] = {{"w", {3, 3}}};
  ASSERT_TRUE(Run(coordinator).ok());
  // Pulls at t = 4, 9, 14, 19 s (each wait 4 s, each step 1 s): evaluated at 4 and 14.
  EXPECT_EQ(evaluated, (std::vector<float>{0, 2}));
  ASSERT_EQ(coordinator.reports.size(), 4u);
  EXPECT_EQ(coordinator.reports[0].test_accuracy(), 0.5);
  EXPECT_FALSE(coordinator.reports[1].has_test_accuracy());
  EXPECT_EQ(coordinator.reports[2].test_accuracy(), 0.5);
}

// Stop (a signal, say): the step in progress is pushed and reported, then the session leaves.
TEST_F(SessionTest, StopLeavesAfterTheCurrentStep) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int64_t c = 0; c < 5; ++c) coordinator.Script({Grant(c), absl::ZeroDuration()});
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  session.Stop();
  EXPECT_EQ(session.Step(0.5f).value_or(true), false);
  EXPECT_EQ(store_.pushes.size(), 2u);
  EXPECT_EQ(coordinator.left, "shutdown");
  EXPECT_EQ(store_.resend_asks.size(), 1u);             // a shutdown is a clean end too
  EXPECT_EQ(session.Step(0.5f).value_or(true), false);  // over: nothing more is sent
  EXPECT_EQ(store_.pushes.size(), 2u);
  EXPECT_EQ(store_.resend_asks.size(), 1u);
}

// A push the store link gave up because the trainer is stopping (a store outage, SIGTERM) ends the
// session as stopped, not with an error: it leaves cleanly, re-sending what a restart lost first.
// Any other cancellation, even while stopping, is an error.
TEST_F(SessionTest, APushGivenUpForTheStopEndsTheSessionAsStopped) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int64_t c = 0; c < 5; ++c) coordinator.Script({Grant(c), absl::ZeroDuration()});
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  store_.push_error = GivenUpForStop("push on store s given up: the trainer is stopping");
  session.Stop();
  const absl::StatusOr<bool> more = session.Step(0.5f);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(*more);
  EXPECT_EQ(coordinator.left, "shutdown");
  EXPECT_EQ(store_.resend_asks.size(), 1u);

  FakeCoordinator other(clock_, v1::APPLY_MODE_ROUND);
  for (int64_t c = 0; c < 5; ++c) other.Script({Grant(c), absl::ZeroDuration()});
  store_ = FakeStore();
  Session running(options_, other, store_, parameters_, metrics_, trace_, clock_);
  ASSERT_TRUE(running.Start().ok());
  store_.push_error = absl::CancelledError("cancelled by the server");
  running.Stop();
  EXPECT_TRUE(absl::IsCancelled(running.Step(0.5f).status()));
  EXPECT_TRUE(store_.resend_asks.empty());
}

// A peer-to-peer grant: exchange round `round`, receiving from trainer `from` (sending to nobody,
// so no transfer leaves the test).
v1::Proceed Exchange(int64_t clock, int64_t round, uint64_t from) {
  v1::Proceed p;
  p.set_clock(clock);
  p.mutable_exchange()->set_round(round);
  p.mutable_exchange()->add_receive_from()->set_trainer_id(from);
  return p;
}

// Scripts a peer-to-peer job whose second grant (clock 1) is the final average, asking this
// trainer to evaluate it with `evaluate`.
void ScriptFinalAverage(FakeCoordinator& coordinator, bool evaluate) {
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.Script({Exchange(0, 0, 9), absl::ZeroDuration()});
  v1::Proceed last = Exchange(1, 1, 9);
  last.set_final_average(true);
  last.set_evaluate(evaluate);
  coordinator.Script({last, absl::ZeroDuration()});
}

// dssync, selmcast: nothing goes to the store; each grant's exchange mixes the peers' models of
// that round into the local model, weighed by mass (push-sum), which is what the next step starts
// from.
TEST_F(SessionTest, PeerRoundsAverageThePeersModelsIn) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.Script({Exchange(0, 0, 9), absl::ZeroDuration()});
  coordinator.Script({Exchange(1, 1, 9), absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {4, 4}}}).ok());
  ASSERT_TRUE(peers.inbox.Deposit(1, 9, {{"w", {0.25f, 0.25f}}}, "", /*mass=*/2).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(w_, (std::vector<float>{2, 2}));  // (1 x 0 + 1 x 4) / 2: its mass is now 2
  for (float& v : w_) v += 0.25f;
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  EXPECT_EQ(w_, (std::vector<float>{1.25f, 1.25f}));  // (2 x 2.25 + 2 x 0.25) / 4
  for (float& v : w_) v += 0.25f;
  EXPECT_EQ(session.Step(0.5f).value_or(true), false);  // the script is over: done
  EXPECT_EQ(w_, (std::vector<float>{1.5f, 1.5f}));
  EXPECT_TRUE(store_.pushes.empty());
  EXPECT_TRUE(store_.pulled.empty());
  EXPECT_TRUE(store_.resend_asks.empty());
  ASSERT_EQ(coordinator.reports.size(), 2u);
  EXPECT_TRUE(coordinator.reports[0].has_transfers());
  EXPECT_EQ(coordinator.reports[1].clock(), 2);
}

// dssync's final average: the grant's exchange is averaged in, the average is evaluated once (by
// the evaluator, as it leaves, not also as the exchange's periodic evaluation), the trainer leaves
// with its accuracy, and takes no step after it.
TEST_F(SessionTest, AfterTheFinalAverageTheEvaluatorLeavesWithItsAccuracy) {
  options_.evaluate_in_background = false;
  std::vector<float> evaluated;
  options_.evaluate = [&](const tensor::TensorMap& model) {
    evaluated.push_back(model.at("w")[0]);
    return 0.75;
  };
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  ScriptFinalAverage(coordinator, /*evaluate=*/true);
  coordinator.Script({Exchange(2, 2, 9), absl::ZeroDuration()});  // never reached
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {0, 0}}}).ok());
  ASSERT_TRUE(peers.inbox.Deposit(1, 9, {{"w", {0.75f, 0.75f}}}, "", /*mass=*/2).ok());
  ASSERT_TRUE(Run(coordinator, &peers).ok());
  EXPECT_EQ(steps_taken_, 1) << "no step after the final average";
  EXPECT_EQ(w_, (std::vector<float>{0.5f, 0.5f}));  // (2 x 0.25 + 2 x 0.75) / 4
  EXPECT_EQ(evaluated, (std::vector<float>{0.5f}));
  EXPECT_EQ(coordinator.left, Protocol::kFinalAverageDone);
  EXPECT_EQ(coordinator.left_with_accuracy, 0.75);
  EXPECT_TRUE(coordinator.left_finished);
  ASSERT_EQ(coordinator.reports.size(), 1u) << "the final round is reported before, not after";
}

// A library trainer evaluates itself: after the final average it is asked to, and leaves, as done,
// with the accuracy it closes with (or none); a periodic report meanwhile is not taken for it.
TEST_F(SessionTest, AfterTheFinalAverageALibraryEvaluatorLeavesWithTheAccuracyItReports) {
  for (bool reports : {true, false}) {
    FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
    ScriptFinalAverage(coordinator, /*evaluate=*/true);
    FakePeerLink peers(clock_);
    ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {0, 0}}}).ok());
    ASSERT_TRUE(peers.inbox.Deposit(1, 9, {{"w", {1, 1}}}).ok());
    Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
    ASSERT_TRUE(session.Start().ok());
    EXPECT_FALSE(*session.Step(0.5f)) << "training is over";
    EXPECT_TRUE(session.final_accuracy_due());
    EXPECT_FALSE(coordinator.left.has_value()) << "the Leave waits for the accuracy";
    session.ReportAccuracy(0.1);  // a background evaluation of an older model, late
    EXPECT_FALSE(coordinator.left.has_value());
    session.Close("closed", reports ? std::optional<double>(0.7) : std::nullopt);
    EXPECT_EQ(coordinator.left, Protocol::kFinalAverageDone);
    EXPECT_EQ(coordinator.left_with_accuracy, reports ? std::optional<double>(0.7) : std::nullopt);
    EXPECT_FALSE(session.final_accuracy_due());
    session.Close("again", 0.9);
    EXPECT_EQ(coordinator.left_with_accuracy, reports ? std::optional<double>(0.7) : std::nullopt);
  }
}

// A trainer that is not the evaluator leaves after the final average without an accuracy.
TEST_F(SessionTest, AfterTheFinalAverageOthersLeaveWithoutAnAccuracy) {
  bool evaluated = false;
  options_.evaluate = [&](const tensor::TensorMap&) {
    evaluated = true;
    return 0.5;
  };
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  ScriptFinalAverage(coordinator, /*evaluate=*/false);
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {0, 0}}}).ok());
  ASSERT_TRUE(peers.inbox.Deposit(1, 9, {{"w", {1, 1}}}).ok());
  ASSERT_TRUE(Run(coordinator, &peers).ok());
  EXPECT_FALSE(evaluated);
  EXPECT_EQ(coordinator.left, Protocol::kFinalAverageDone);
  EXPECT_FALSE(coordinator.left_with_accuracy.has_value());
}

// Push-sum's bookkeeping: a share sent with a model that did not arrive (its transfer failed) does
// not come back, since as far as a sender can tell such a model may have been taken: it stays on
// the sender's running sums for that receiver, and the next model that reaches the receiver
// carries it (PeerSender, tests/integration/peer_exchange_test.cc).
TEST_F(SessionTest, AShareThatDoesNotArriveDoesNotComeBack) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  v1::Proceed grant = Exchange(0, 0, 9);
  grant.mutable_exchange()->add_send_to()->set_trainer_id(5);
  coordinator.Script({grant, absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  peers.FailSendsTo(5, absl::UnavailableError("peer 5 is gone"));
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {4, 4}}}).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  ASSERT_EQ(peers.sent().size(), 1u);
  EXPECT_EQ(peers.sent()[0].mass, 0.5);
  // (0.5 x 0 + 1 x 4) / 1.5: the share sent (1/2) is gone.
  for (float v : w_) EXPECT_FLOAT_EQ(v, 4 / 1.5f);
  EXPECT_EQ(metrics_.mixing_mass.Value(), 1.5);
  EXPECT_EQ(metrics_.exchange_peers_missed.Value(), 1);
}

// dssync: a round's exchange waits, on the session's clock, for the models of every sender the
// round names, until the exchange deadline the coordinator set; what did not come by then is
// missed, and the exchange averages in what did.
TEST_F(SessionTest, ARoundExchangeWaitsForItsSendersUntilTheExchangeDeadline) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_exchange_timeout_seconds(5);
  v1::Proceed grant = Exchange(0, 0, 9);
  grant.mutable_exchange()->add_receive_from()->set_trainer_id(8);
  coordinator.Script({grant, absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {4, 4}}}).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  const absl::Time began = clock_.Now();
  std::thread time([&] {
    ASSERT_TRUE(clock_.AwaitWaiters(1)) << "the exchange waits for trainer 8";
    clock_.Advance(absl::Seconds(4));
    ASSERT_TRUE(clock_.AwaitWaiters(1)) << "4 s of 5: it still waits";
    clock_.Advance(absl::Seconds(1));
  });
  ASSERT_TRUE(session.Start().ok());
  time.join();
  EXPECT_EQ(clock_.Now() - began, absl::Seconds(5));
  EXPECT_EQ(w_, (std::vector<float>{2, 2})) << "trainer 9's model, averaged in without 8's";
  EXPECT_EQ(metrics_.exchange_peers_missed.Value(), 1);
}

// A trainer joining a peer-to-peer job under way (welcomed at clock 5; its first grant pulls the
// store's initial model) holds no mass: its model weighs nothing against its peers' models, which
// it takes whole. Models without mass (other joiners') leave its own as it is; when nobody in reach
// holds mass for Protocol::kMasslessExchangesBeforeRestart exchanges in a row, the mixing starts
// afresh at mass 1.
TEST_F(SessionTest, AJoinerTakesItsPeersModelsAndStartsAfreshWhenNobodyHoldsMass) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_start_clock(5);
  v1::Proceed live = Grant(5);
  live.mutable_pull()->set_live(true);
  coordinator.Script({live, absl::ZeroDuration()});
  coordinator.Script({Exchange(6, 6, 9), absl::ZeroDuration()});
  coordinator.Script({Exchange(7, 7, 9), absl::ZeroDuration()});
  store_.models[-1] = {{"w", {0, 0}}};
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(6, 9, {{"w", {8, 8}}}, "", /*mass=*/0.5).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(w_, (std::vector<float>{0, 0}));
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0);
  for (float& v : w_) v += 1;
  ASSERT_TRUE(session.Step(0.5f).ok());
  EXPECT_EQ(w_, (std::vector<float>{8, 8})) << "the peer's model, nothing of its own";
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);

  // Another session: only other joiners (no mass) in reach.
  FakeCoordinator again(clock_, v1::APPLY_MODE_ROUND);
  again.mutable_welcome().set_peer_to_peer(true);
  again.mutable_welcome().set_start_clock(5);
  again.Script({live, absl::ZeroDuration()});
  FakePeerLink joiners(clock_);
  const int rounds = Protocol::kMasslessExchangesBeforeRestart;
  for (int r = 6; r < 6 + rounds; ++r) {
    again.Script({Exchange(r, r, 9), absl::ZeroDuration()});
    ASSERT_TRUE(joiners.inbox.Deposit(r, 9, {{"w", {8, 8}}}, "", /*mass=*/0).ok());
  }
  prometheus::Registry registry;
  TrainerMetrics metrics(registry);
  w_ = {0, 0};
  Session alone(options_, again, store_, parameters_, metrics, trace_, clock_, &joiners);
  ASSERT_TRUE(alone.Start().ok());
  for (int r = 1; r < rounds; ++r) {
    ASSERT_TRUE(alone.Step(0.5f).ok());
    EXPECT_EQ(w_, (std::vector<float>{0, 0})) << "a model without mass weighs nothing";
    EXPECT_EQ(metrics.mixing_mass.Value(), 0) << "one massless exchange proves nothing yet";
  }
  ASSERT_TRUE(alone.Step(0.5f).ok());
  EXPECT_EQ(w_, (std::vector<float>{0, 0}));
  EXPECT_EQ(metrics.mixing_mass.Value(), 1.0)
      << "nobody held mass exchange after exchange: it starts afresh";
}

// A dssync joiner's first grant is its group's exchange: it takes its peers' trained models and
// their mass before its first step, which then starts from them.
TEST_F(SessionTest, AJoinerWhoseFirstGrantIsAnExchangeStartsFromItsPeersModels) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_start_clock(6);
  coordinator.Script({Exchange(6, 6, 9), absl::ZeroDuration()});
  coordinator.Script({Exchange(7, 7, 9), absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(6, 9, {{"w", {8, 8}}}, "", /*mass=*/0.5).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(w_, (std::vector<float>{8, 8})) << "its peer's model, before any step of its own";
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);
  EXPECT_TRUE(store_.pulled.empty()) << "it pulled nothing";
}

// selmcast-ssp: a trainer joining a job under way waits, in its first exchange, for a peer's
// model with mass (a fellow joiner's holds none), and its first step starts from it.
TEST_F(SessionTest, ABackgroundJoinerWaitsForAPeersModelBeforeItsFirstStep) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_exchange_in_background(true);
  coordinator.mutable_welcome().set_exchange_timeout_seconds(60);
  coordinator.mutable_welcome().set_start_clock(6);
  coordinator.Script({Exchange(6, 6, 9), absl::ZeroDuration()});
  coordinator.Script({Exchange(7, 7, 9), absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(5, 8, {{"w", {6, 6}}}, "", /*mass=*/0).ok());  // a joiner's
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  std::thread sender([&] {
    // Once the session waits for a model with mass (it took the fellow joiner's already): a
    // session that stopped at the fellow joiner's model would never wait, and fail below.
    EXPECT_TRUE(peers.inbox.AwaitWaiter());
    ASSERT_TRUE(peers.inbox.Deposit(5, 9, {{"w", {8, 8}}}, "", /*mass=*/0.5).ok());
  });
  ASSERT_TRUE(session.Start().ok());
  sender.join();
  EXPECT_EQ(w_, (std::vector<float>{8, 8})) << "its peer's model, before any step of its own";
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);
  EXPECT_TRUE(store_.pulled.empty()) << "it pulled nothing";
  for (float& v : w_) v += 0.25f;
  // Nothing arrived for round 7: it keeps its own model.
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  EXPECT_EQ(w_, (std::vector<float>{8.25f, 8.25f}));
}

// selmcast-ssp: an exchange averages in whatever has arrived, without waiting for anyone.
TEST_F(SessionTest, BackgroundExchangesTakeWhatHasArrived) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_exchange_in_background(true);
  coordinator.Script({Exchange(0, 0, 9), absl::ZeroDuration()});
  coordinator.Script({Exchange(1, 1, 9), absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  ASSERT_TRUE(peers.inbox.Deposit(0, 9, {{"w", {4, 4}}}).ok());
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(w_, (std::vector<float>{2, 2}));
  for (float& v : w_) v += 0.25f;
  // Nothing arrived for round 1: the step does not wait for trainer 9, and keeps its own model.
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  EXPECT_EQ(w_, (std::vector<float>{2.25f, 2.25f}));
  EXPECT_TRUE(store_.pushes.empty());
}

// selmcast-ssp: the multicast an exchange plans leaves after the step that follows it, with that
// step in the model (push-sum SGD: the step counts at the trainer's whole mass) and the receiver's
// share of the mass.
TEST_F(SessionTest, ABackgroundMulticastCarriesTheStepThatFollowedItsExchange) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_exchange_in_background(true);
  v1::Proceed grant = Exchange(0, 0, 9);
  grant.mutable_exchange()->add_send_to()->set_trainer_id(5);
  coordinator.Script({grant, absl::ZeroDuration()});
  coordinator.Script({Exchange(1, 1, 9), absl::ZeroDuration()});
  FakePeerLink peers(clock_);
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_TRUE(peers.sent().empty()) << "nothing leaves before the step";
  for (float& v : w_) v += 0.25f;  // the step
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  ASSERT_EQ(peers.sent().size(), 1u);
  const FakePeerLink::Sent sent = peers.sent()[0];
  EXPECT_TRUE(sent.multicast);
  EXPECT_EQ(sent.to, 5u);
  EXPECT_EQ(sent.round, 0);
  EXPECT_EQ(sent.model.at("w"), (std::vector<float>{0.25f, 0.25f}));
  EXPECT_EQ(sent.mass, 0.5);
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);
}

// selmcast-ssp: the mass a multicast did not send (BackgroundMulticast::Start: a share still on
// its way to the receiver, a receiver preempted before it started) stays with the trainer.
TEST_F(SessionTest, ABackgroundMulticastKeepsTheMassItDidNotSend) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.mutable_welcome().set_peer_to_peer(true);
  coordinator.mutable_welcome().set_exchange_in_background(true);
  for (int64_t clock : {0, 1, 2}) {
    v1::Proceed grant = Exchange(clock, clock, 9);
    grant.mutable_exchange()->add_send_to()->set_trainer_id(5);
    coordinator.Script({grant, absl::ZeroDuration()});
  }
  FakePeerLink peers(clock_);
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_, &peers);
  ASSERT_TRUE(session.Start().ok());
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);  // sends 1/2 of its mass
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);
  peers.KeepOnNextMulticast(0.25);  // the half is on its way: the next share stays
  EXPECT_EQ(session.Step(0.5f).value_or(false), true);
  EXPECT_EQ(metrics_.mixing_mass.Value(), 0.5);
}

TEST_F(SessionTest, EvictionEndsTheRunWithAborted) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({absl::AbortedError("evicted"), absl::ZeroDuration()});
  EXPECT_TRUE(absl::IsAborted(Run(coordinator)));
  EXPECT_EQ(store_.pushes.size(), 1u);
}

// A coordinator that stays silent: the worker gives up after directive_timeout of (fake) time.
TEST_F(SessionTest, ASilentCoordinatorIsADeadlineNotAHang) {
  options_.directive_timeout = absl::Seconds(1);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int i = 0; i < 100; ++i) {
    coordinator.Script({absl::DeadlineExceededError("no directive yet"), absl::Milliseconds(200)});
  }
  absl::Status status = Run(coordinator);
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_TRUE(store_.pushes.empty());
}

// A coordinator that holds the grant but answers the heartbeats (a straggler holds the bound):
// the wait lasts as long as the mode wants; once the answers stop, directive_timeout runs again.
TEST_F(SessionTest, AWaitTheCoordinatorAcknowledgesIsNoTimeout) {
  options_.directive_timeout = absl::Seconds(1);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int i = 0; i < 30; ++i) {  // 6 s held, an acknowledged heartbeat every 200 ms
    coordinator.Script(
        {absl::DeadlineExceededError("no directive yet"), absl::Milliseconds(200), /*acks=*/1});
  }
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  for (int i = 0; i < 30; ++i) {  // then silence
    coordinator.Script({absl::DeadlineExceededError("no directive yet"), absl::Milliseconds(200)});
  }
  const absl::Time start = clock_.Now();
  absl::Status status = Run(coordinator);
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_EQ(store_.pushes.size(), 1u);  // the step after the long wait was taken
  // 6 s held, a 1 s step, then given up 1.2 s into the silence (the first poll past 1 s).
  EXPECT_EQ(clock_.Now() - start, absl::Milliseconds(8200));
}

// A pulled round that does not fit the model is an error, and the model stays as it was.
TEST_F(SessionTest, APulledModelThatDoesNotFitIsAnError) {
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  coordinator.Script({Grant(1, /*round=*/1, /*includes_clock=*/1), absl::ZeroDuration()});
  store_.models[1] = {{"w", {5, 5, 5}}};
  EXPECT_TRUE(absl::IsInvalidArgument(Run(coordinator)));
  EXPECT_EQ(w_, (std::vector<float>{0.25f, 0.25f}));
}

// An emulated accelerator step: each step lasts max(real compute, step_time) x slowdown, the
// rest slept on the session's clock and counted as emulated compute.
TEST_F(SessionTest, EmulatedStepsLastStepTimeTimesTheSlowdown) {
  options_.step_time = absl::Seconds(3);
  options_.slowdown = 2;
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  coordinator.Script({Grant(0), absl::Seconds(1)});
  coordinator.Script({Grant(1), absl::Seconds(1)});
  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(timings_.compute_seconds(), 2 * 6.0);  // (max(1 s, 3 s) x 2) per step
  EXPECT_EQ(timings_.emulated_compute_seconds(), 2 * 5.0);
  EXPECT_EQ(timings_.wait_seconds(), 2.0);
  EXPECT_EQ(timings_.wall_seconds(), 14.0);
}

// A real step longer than step_time is stretched only by the slowdown.
TEST_F(SessionTest, AStepLongerThanTheStepTimeIsOnlySlowedDown) {
  options_.step_time = absl::Milliseconds(500);
  options_.slowdown = 3;
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_IMMEDIATE);
  coordinator.Script({Grant(0), absl::ZeroDuration()});
  ASSERT_TRUE(Run(coordinator).ok());
  EXPECT_EQ(timings_.compute_seconds(), 3.0);
  EXPECT_EQ(timings_.emulated_compute_seconds(), 2.0);
}

// The compute-time ratio per worker path: whatever a Step spends applying a model (here 10 s per
// write of the parameters: a rebase, a peers' average) or waiting is not compute; compute is
// exactly the steps, real and emulated.
struct PathCase {
  const char* name;
  bool overlap, peer_to_peer, background;
};

class ComputeAccountingTest : public SessionTest, public ::testing::WithParamInterface<PathCase> {};

TEST_P(ComputeAccountingTest, ComputeIsExactlyTheStepsAndApplyingIsNot) {
  const PathCase path = GetParam();
  options_.step_time = absl::Seconds(2);
  options_.max_steps = 4;
  write_takes_ = absl::Seconds(10);
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND, path.overlap);
  coordinator.mutable_welcome().set_peer_to_peer(path.peer_to_peer);
  coordinator.mutable_welcome().set_exchange_in_background(path.background);
  FakePeerLink peers(clock_);
  store_.any_round = {{"w", {0, 0}}};
  for (int64_t c = 0; c < 50; ++c) {
    if (path.peer_to_peer) {
      coordinator.Script({Exchange(c, c, 9), absl::Seconds(1)});
      // The 4 steps take a few rounds; a sender may have only so many waiting.
      if (c < ExchangeInbox::kMaxPendingPerSender) {
        ASSERT_TRUE(peers.inbox.Deposit(c, 9, {{"w", {1, 1}}}).ok());
      }
    } else {
      coordinator.Script({Grant(c, c, c), path.overlap ? absl::ZeroDuration() : absl::Seconds(1)});
    }
  }
  ASSERT_TRUE(Run(coordinator, &peers).ok());
  EXPECT_EQ(steps_taken_, 4);
  EXPECT_EQ(timings_.compute_seconds(), 4 * 2.0);
  EXPECT_EQ(timings_.emulated_compute_seconds(), 4 * 1.0);
  EXPECT_GE(timings_.wall_seconds(), 4 * 2.0 + 10.0);  // at least one write went into a Step
  EXPECT_LE(timings_.compute_seconds() / timings_.wall_seconds(), 0.5);
}

INSTANTIATE_TEST_SUITE_P(EveryPath, ComputeAccountingTest,
                         ::testing::Values(PathCase{"sequential", false, false, false},
                                           PathCase{"overlapped", true, false, false},
                                           PathCase{"peer_rounds", false, true, false},
                                           PathCase{"peer_background", false, true, true}),
                         [](const ::testing::TestParamInfo<PathCase>& info) {
                           return std::string(info.param.name);
                         });

// By default the evaluation runs on the session's own thread: a trainer whose evaluation has not
// finished (it blocks here until the test releases it) keeps stepping.
TEST_F(SessionTest, AnEvaluationInProgressDoesNotStallTheSteps) {
  absl::Notification started, release;
  std::atomic<int> evaluations{0};
  options_.evaluate = [&](const tensor::TensorMap&) {
    if (++evaluations == 1) started.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(60));
    return 0.5;
  };
  FakeCoordinator coordinator(clock_, v1::APPLY_MODE_ROUND);
  for (int64_t c = 0; c < 5; ++c) {
    v1::Proceed p = Grant(c, /*round=*/c, /*includes_clock=*/c);
    p.set_evaluate(true);
    coordinator.Script({p, absl::Seconds(4)});
  }
  store_.any_round = {{"w", {0, 0}}};
  Session session(options_, coordinator, store_, parameters_, metrics_, trace_, clock_);
  ASSERT_TRUE(session.Start().ok());
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(60)));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(session.Step(0.5f).value_or(false), true) << i;
  EXPECT_EQ(coordinator.reports.size(), 4u);  // four steps while the first evaluation runs
  EXPECT_EQ(evaluations.load(), 1);
  release.Notify();
  session.Close();
}

}  // namespace
}  // namespace syncopate::client
