#include "coordinator/coordinator.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sync/policy_factory.h"

namespace syncopate::coordinator {
namespace {

// One shard that records calls; can be told to fail, or to restart (from a checkpoint `behind`
// rounds old, or without its model).
class FakeStores final : public StoreControl {
 public:
  absl::StatusOr<std::vector<ShardState>> SetMembership(
      const StoreMembership& membership) override {
    const std::vector<sync::Member>& members = membership.members;
    const int64_t round = membership.round;
    absl::MutexLock lock(&mu_);
    if (failures_left_ > 0) {
      --failures_left_;
      return absl::Status(failure_code_, "store down");
    }
    log_.push_back("members:" + std::to_string(members.size()) + "@" + std::to_string(round));
    last_membership_ = membership;
    state_.job_end = membership.job_end;  // kept for a coordinator that takes the job over
    ShardState state = state_;
    if (state_.holds_model && round > state_.last_closed_round) {
      state.rounds_skipped = round - state_.last_closed_round;
      state_.last_closed_round = round;
    }
    state.last_closed_round = state_.last_closed_round;
    return std::vector<ShardState>{state};
  }
  absl::Status CloseRound(const v1::CloseRoundRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (failures_left_ > 0) {
      --failures_left_;
      return absl::Status(failure_code_, "store down");
    }
    if (request.round() != state_.last_closed_round + 1) {
      return absl::FailedPreconditionError("not the next round");
    }
    state_.last_closed_round = request.round();
    std::string entry = "close:" + std::to_string(request.round());
    for (const v1::PushCut& cut : request.cuts()) {
      entry += " " + std::to_string(cut.trainer_id()) + "." + std::to_string(cut.incarnation()) +
               "@" + std::to_string(cut.clock());
    }
    log_.push_back(entry);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<ShardState>> Probe() override {
    absl::MutexLock lock(&mu_);
    // A probe that hangs (a frozen shard) until released, at most 10 s of real time.
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](bool* held) { return !*held; }, &probes_held_),
                         absl::Seconds(10));
    if (probes_fail_) return absl::UnavailableError("store down");
    return std::vector<ShardState>{state_};
  }
  // The shard holds a job under way: its membership (with cuts) and last closed round, as a
  // restarted coordinator finds it.
  void HoldJob(int64_t round, std::vector<ShardMember> members) {
    absl::MutexLock lock(&mu_);
    state_.last_closed_round = round;
    state_.has_membership = true;
    state_.members = std::move(members);
  }
  void FailProbes(bool fail) {
    absl::MutexLock lock(&mu_);
    probes_fail_ = fail;
  }
  void HoldProbes(bool held) {
    absl::MutexLock lock(&mu_);
    probes_held_ = held;
  }
  std::vector<std::string> addresses() const override { return {"127.0.0.1:1"}; }
  void Restart(int64_t behind, bool with_model = true) {
    absl::MutexLock lock(&mu_);
    state_.incarnation += 1;
    state_.last_closed_round -= behind;
    state_.holds_model = with_model;
  }
  std::vector<std::string> log() const {
    absl::MutexLock lock(&mu_);
    return log_;
  }
  StoreMembership last_membership() const {
    absl::MutexLock lock(&mu_);
    return last_membership_;
  }
  void FailNext(int n, absl::StatusCode code = absl::StatusCode::kUnavailable) {
    absl::MutexLock lock(&mu_);
    failures_left_ = n;
    failure_code_ = code;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> log_;
  StoreMembership last_membership_;
  int failures_left_ = 0;
  absl::StatusCode failure_code_ = absl::StatusCode::kUnavailable;
  bool probes_fail_ = false;
  bool probes_held_ = false;
  ShardState state_{1, 0, true, 0, false, {}, std::nullopt};
};

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Make("bsp", 2); }

  void Make(const std::string& mode, int min_trainers, double target_accuracy = 0) {
    if (coordinator_) coordinator_->Stop();
    sync::PolicyOptions p;
    p.mode = mode;
    p.min_trainers = min_trainers;
    CoordinatorOptions o;
    o.eviction_timeout = absl::Seconds(5);
    o.tick = absl::Milliseconds(5);
    // The fake clock jumps between ticks; only the test of pauses takes jumps as pauses.
    o.pause_threshold = pause_threshold_;
    o.target_accuracy = target_accuracy;
    o.departed_statuses_kept = departed_statuses_kept_;
    o.pipeline_grants = pipeline_grants_;
    // The tests step the coordinator (Step) on the fake clock; only the test of a hung store call
    // runs the action thread and the watchdog.
    o.background_threads = background_threads_;
    coordinator_ =
        std::make_unique<Coordinator>(o, *sync::MakePolicy(p), stores_, clock_, metrics_);
    coordinator_->Start();
  }

  std::pair<SessionKey, std::shared_ptr<Outbox>> Join(const std::string& name, uint32_t rank) {
    auto outbox = std::make_shared<Outbox>();
    v1::Join join;
    join.set_name(name);
    join.set_rank(rank);
    return {*coordinator_->Join(join, outbox), outbox};
  }
  // Joins as a trainer of the job before a coordinator restart (Join.resume).
  absl::StatusOr<SessionKey> Resume(const std::string& name, uint32_t rank, sync::TrainerId id,
                                    int64_t clock, bool awaiting, std::shared_ptr<Outbox> outbox,
                                    bool peer = false) {
    v1::Join join;
    join.set_name(name);
    join.set_rank(rank);
    if (peer) join.set_peer_address("127.0.0.1:" + std::to_string(7100 + rank));
    join.mutable_resume()->set_trainer_id(id);
    join.mutable_resume()->set_incarnation(1);
    join.mutable_resume()->set_clock(clock);
    join.mutable_resume()->set_awaiting_grant(awaiting);
    return coordinator_->Join(join, std::move(outbox));
  }

  // Makes a `mode` coordinator, joins peers "a" (rank 0) and "b" (rank 1) and consumes their
  // Welcomes and first grants.
  std::tuple<SessionKey, std::shared_ptr<Outbox>, SessionKey, std::shared_ptr<Outbox>>
  StartTwoPeers(const std::string& mode) {
    Make(mode, 2);
    return JoinTwoAndStart(/*peers=*/true);
  }
  // Resume() in a peer-to-peer job (with a peer address).
  absl::StatusOr<SessionKey> ResumePeer(const std::string& name, uint32_t rank, sync::TrainerId id,
                                        int64_t clock, bool awaiting,
                                        std::shared_ptr<Outbox> outbox) {
    return Resume(name, rank, id, clock, awaiting, std::move(outbox), /*peer=*/true);
  }

  // Joins trainers "a" (rank 0) and "b" (rank 1), as peers with `peers`, and consumes their
  // Welcomes and first grants.
  std::tuple<SessionKey, std::shared_ptr<Outbox>, SessionKey, std::shared_ptr<Outbox>>
  JoinTwoAndStart(bool peers = false) {
    auto [a, out_a] = peers ? JoinPeer("a", 0) : Join("a", 0);
    auto [b, out_b] = peers ? JoinPeer("b", 1) : Join("b", 1);
    for (Outbox* out : {out_a.get(), out_b.get()}) {
      EXPECT_TRUE(Next(*out).has_welcome());
      EXPECT_TRUE(Next(*out).has_proceed());
    }
    return {a, out_a, b, out_b};
  }

  // `a` and `b` heartbeat (b with `b_beat`) once a second of fake time, for `seconds`.
  void HeartbeatBoth(const SessionKey& a, const SessionKey& b, int seconds,
                     const v1::Heartbeat& b_beat = v1::Heartbeat()) {
    for (int s = 0; s < seconds; ++s) {
      coordinator_->Heartbeat(a, v1::Heartbeat());
      coordinator_->Heartbeat(b, b_beat);
      clock_.Advance(absl::Seconds(1));
    }
  }

  // One turn of the action thread, on this thread (none where the action thread runs).
  void Step() {
    if (!background_threads_) coordinator_->RunActions();
  }
  // The next directive: sent already, or sent by the next turns of the action thread (a few, with
  // the fake clock standing still). Where the action thread runs: within 5 s of real time.
  v1::Directive Next(Outbox& outbox) {
    v1::Directive d;
    if (background_threads_) {
      EXPECT_TRUE(outbox.Pop(&d, absl::Seconds(5))) << "no directive";
      return d;
    }
    for (int i = 0; i < 3; ++i) {
      if (outbox.TryPop(&d)) return d;
      Step();
    }
    EXPECT_TRUE(outbox.TryPop(&d)) << "no directive";
    return d;
  }
  // The next directive while store calls are retried: moves the fake clock past each backoff
  // (bounded: well under the eviction timeout in all).
  v1::Directive AdvanceUntilNext(Outbox& outbox) {
    v1::Directive d;
    for (int i = 0; i < 40; ++i) {
      Step();
      if (outbox.TryPop(&d)) return d;
      clock_.Advance(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "no directive";
    return d;
  }
  // How a peer-to-peer join is answered.
  absl::StatusCode JoinPeerStatus(const std::string& name, uint32_t rank) {
    v1::Join join;
    join.set_name(name);
    join.set_peer_address("127.0.0.1:" + std::to_string(7100 + rank));
    return coordinator_->Join(join, std::make_shared<Outbox>()).status().code();
  }
  // Joins a peer-to-peer job (with a peer address).
  std::pair<SessionKey, std::shared_ptr<Outbox>> JoinPeer(const std::string& name, uint32_t rank) {
    auto outbox = std::make_shared<Outbox>();
    v1::Join join;
    join.set_name(name);
    join.set_rank(rank);
    join.set_peer_address("127.0.0.1:" + std::to_string(7100 + rank));
    return {*coordinator_->Join(join, outbox), outbox};
  }
  // Whether this coordinator closed `rounds` rounds on the stores once the action thread's next
  // turn ran: with pipelined grants a round's grants arrive before it closes.
  bool Closed(int64_t rounds) {
    Step();
    return coordinator_->Status().rounds_closed() == rounds;
  }
  // Whether nothing reaches `outbox`, however often the action thread turns while the fake clock
  // stands still.
  bool Quiet(Outbox& outbox) {
    Step();
    Step();
    v1::Directive d;
    return !outbox.TryPop(&d);
  }
  void Report(const SessionKey& key, int64_t clock) {
    v1::ClockReport r;
    r.set_clock(clock);
    coordinator_->Report(key, r);
  }

  FakeStores stores_;
  base::FakeClock clock_;
  absl::Duration pause_threshold_ = absl::InfiniteDuration();
  size_t departed_statuses_kept_ = CoordinatorOptions().departed_statuses_kept;
  bool pipeline_grants_ = CoordinatorOptions().pipeline_grants;
  bool background_threads_ = false;
  prometheus::Registry registry_;
  CoordinatorMetrics metrics_{registry_};
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(CoordinatorTest, WelcomeThenRoundGrantsAfterStoresClose) {
  pipeline_grants_ = false;
  Make("bsp", 2);
  auto [a, out_a] = Join("a", 0);
  v1::Directive welcome = Next(*out_a);
  ASSERT_TRUE(welcome.has_welcome());
  EXPECT_EQ(welcome.welcome().push_mode(), v1::APPLY_MODE_ROUND);
  EXPECT_TRUE(Quiet(*out_a)) << "start must wait for min_trainers";
  auto [b, out_b] = Join("b", 1);
  ASSERT_TRUE(Next(*out_b).has_welcome());
  v1::Directive first = Next(*out_a);
  ASSERT_TRUE(first.has_proceed());
  EXPECT_EQ(first.proceed().pull().round(), 0);
  EXPECT_TRUE(first.proceed().evaluate()) << "lowest rank evaluates";
  EXPECT_FALSE(Next(*out_b).proceed().evaluate());

  stores_.FailNext(3);
  Report(a, 1);
  Report(b, 1);
  v1::Directive granted = AdvanceUntilNext(*out_a);
  EXPECT_EQ(granted.proceed().pull().round(), 1);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 1);
  std::vector<std::string> log = stores_.log();
  EXPECT_EQ(log.back(), "close:1 1.1@1 2.1@1") << "cuts carry each trainer's incarnation";
  EXPECT_EQ(log.front(), "members:1@0") << "membership reaches the stores before the Welcome";
  EXPECT_EQ(metrics_.store_call_failures.Value(), 3);
}

// Pipelined grants: a round's grants go out while its close is still being retried, once; the
// next round's wait for that close.
TEST_F(CoordinatorTest, PipelinedGrantsGoOutWhileTheRoundClosesAndOnlyOnce) {
  ASSERT_TRUE(pipeline_grants_) << "the default";
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  stores_.FailNext(3);
  Report(a, 1);
  Report(b, 1);
  // No clock moves: the close waits out its backoff, and the grants are out already.
  EXPECT_EQ(Next(*out_a).proceed().pull().round(), 1);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 1);
  for (const std::string& entry : stores_.log()) EXPECT_NE(entry.rfind("close:", 0), 0u) << entry;
  Report(a, 2);
  Report(b, 2);
  EXPECT_TRUE(Quiet(*out_a)) << "round 2's grants wait for round 1's close";
  EXPECT_EQ(AdvanceUntilNext(*out_a).proceed().pull().round(), 2);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 2);
  EXPECT_TRUE(Quiet(*out_a)) << "round 1's grant is not sent again after its close";
  EXPECT_TRUE(Quiet(*out_b));
  std::vector<std::string> closes;
  for (const std::string& entry : stores_.log()) {
    if (entry.rfind("close:", 0) == 0) closes.push_back(entry);
  }
  // Round 2's close may still be under way when its grants arrive.
  ASSERT_GE(closes.size(), 1u);
  EXPECT_EQ(closes[0], "close:1 1.1@1 2.1@1");
  EXPECT_EQ(metrics_.store_call_failures.Value(), 3);
}

// A shard restarted from a checkpoint two rounds old: the failed close makes the coordinator
// resend the membership with its round first; the shard catches up, the close goes through, and
// the restart and its lost rounds are reported.
TEST_F(CoordinatorTest, ARestartedShardIsReconciledAndItsLossReported) {
  pipeline_grants_ = false;  // the store calls are done when the grants arrive
  Make("bsp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  for (int64_t clock = 1; clock <= 3; ++clock) {
    Report(a, clock);
    Report(b, clock);
    EXPECT_EQ(Next(*out_a).proceed().pull().round(), clock);
    EXPECT_EQ(Next(*out_b).proceed().pull().round(), clock);
  }
  stores_.Restart(/*behind=*/2);
  Report(a, 4);
  Report(b, 4);
  EXPECT_EQ(AdvanceUntilNext(*out_a).proceed().pull().round(), 4);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 4);
  const std::vector<std::string> log = stores_.log();
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2], "members:2@3") << "the membership with the job's round first";
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_EQ(status.store_restarts(), 1u);
  EXPECT_EQ(status.store_rounds_lost(), 2);
  EXPECT_EQ(status.failure(), "");
  EXPECT_EQ(status.live_trainers(), 2u);
}

// A restart nobody's call runs into (ASP closes no rounds) is noticed by the probe.
TEST_F(CoordinatorTest, TheProbeNoticesARestartBetweenCalls) {
  Make("asp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  const size_t calls = stores_.log().size();
  stores_.Restart(/*behind=*/0);
  for (int i = 0; i < 100 && coordinator_->Status().store_restarts() == 0; ++i) {
    clock_.Advance(absl::Milliseconds(200));
    Step();
  }
  EXPECT_EQ(coordinator_->Status().store_restarts(), 1u);
  EXPECT_GT(stores_.log().size(), calls) << "membership resent";
}

// Stores that refuse the coordinator's certificate: retrying would change nothing, so the job fails
// at once, saying why.
TEST_F(CoordinatorTest, StoresThatRefuseTheCoordinatorFailTheJob) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  stores_.FailNext(100, absl::StatusCode::kPermissionDenied);
  Report(a, 1);
  Report(b, 1);
  v1::Directive d = AdvanceUntilNext(*out_a);
  for (int i = 0; i < 10 && !d.has_evicted(); ++i) d = AdvanceUntilNext(*out_a);
  ASSERT_TRUE(d.has_evicted());
  EXPECT_NE(d.evicted().reason().find("refused by the stores"), std::string::npos)
      << d.evicted().reason();
  EXPECT_NE(coordinator_->Status().failure(), "");
}

// A shard that comes back without the model it held cannot resume the job: it fails, clearly.
TEST_F(CoordinatorTest, AShardBackWithoutItsModelFailsTheJob) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  stores_.Restart(/*behind=*/0, /*with_model=*/false);
  Report(a, 1);
  Report(b, 1);
  // The probe notices the restart within a second of (fake) time.
  v1::Directive d = AdvanceUntilNext(*out_a);
  for (int i = 0; i < 10 && !d.has_evicted(); ++i) d = AdvanceUntilNext(*out_a);
  ASSERT_TRUE(d.has_evicted());
  EXPECT_NE(d.evicted().reason().find("without its model"), std::string::npos)
      << d.evicted().reason();
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_NE(status.failure(), "");
  EXPECT_EQ(status.live_trainers(), 0u);
  v1::Join late;
  late.set_name("c");
  EXPECT_EQ(coordinator_->Join(late, std::make_shared<Outbox>()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CoordinatorTest, SilentTrainerIsEvictedAndBarrierReleased) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 1);
  EXPECT_TRUE(Quiet(*out_a));
  clock_.Advance(absl::Seconds(3));
  coordinator_->Heartbeat(a, v1::Heartbeat());
  clock_.Advance(absl::Seconds(3));  // b silent for 6 s > 5 s
  v1::Directive released = Next(*out_a);
  ASSERT_TRUE(released.has_proceed());
  EXPECT_EQ(released.proceed().pull().round(), 1);
  v1::Directive evicted = Next(*out_b);
  EXPECT_TRUE(evicted.has_evicted());
  EXPECT_TRUE(Closed(1));
  v1::ClusterStatus status = coordinator_->Status();
  EXPECT_EQ(status.live_trainers(), 1u);
}

// A trainer held at the barrier hears that the coordinator is alive: its heartbeats, which say it
// awaits its grant, are answered; a computing trainer's and a stale session's are not.
TEST_F(CoordinatorTest, AHeartbeatAwaitingItsGrantIsAnswered) {
  pipeline_grants_ = false;  // the failing stores below hold the grants
  Make("bsp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 1);  // held: b has not reported
  EXPECT_TRUE(Quiet(*out_a));
  v1::Heartbeat waiting;
  waiting.set_awaiting_grant(true);
  coordinator_->Heartbeat(a, waiting);
  EXPECT_TRUE(Next(*out_a).has_heartbeat_ack());
  coordinator_->Heartbeat(b, v1::Heartbeat());
  EXPECT_TRUE(Quiet(*out_b));
  coordinator_->Heartbeat(SessionKey{a.id, a.incarnation + 1}, waiting);
  EXPECT_TRUE(Quiet(*out_a));
  Report(b, 1);  // the round closes: the grant follows the answers
  EXPECT_TRUE(AdvanceUntilNext(*out_a).has_proceed());
  EXPECT_TRUE(Next(*out_b).has_proceed());
  // While the stores fail the job cannot move: no answer, so that the trainers' directive timeout
  // still reports an outage that lasts. (The fake clock never reaches the retry.)
  stores_.FailNext(100);
  Report(a, 2);
  Report(b, 2);
  Step();  // the close fails
  ASSERT_GE(metrics_.store_call_failures.Value(), 1);
  coordinator_->Heartbeat(a, waiting);
  EXPECT_TRUE(Quiet(*out_a));
}

TEST_F(CoordinatorTest, DisconnectReleasesAtOnceAndProtocolErrorsEvict) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 5);  // skips clocks: a protocol violation
  EXPECT_TRUE(Next(*out_a).has_evicted());
  Report(b, 1);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 1);
  coordinator_->Disconnected(b);
  EXPECT_EQ(coordinator_->Status().live_trainers(), 0u);
}

// A second process under a live trainer's name or rank is refused, and the first goes on.
TEST_F(CoordinatorTest, ALiveTrainersNameOrRankIsNotTakenTwice) {
  auto [a, out_a] = Join("a", 0);
  clock_.Advance(absl::Seconds(1));
  coordinator_->Heartbeat(a, v1::Heartbeat());
  for (const auto& [name, rank] : {std::pair{"a", 5u}, std::pair{"other", 0u}}) {
    v1::Join join;
    join.set_name(name);
    join.set_rank(rank);
    absl::StatusOr<SessionKey> refused = coordinator_->Join(join, std::make_shared<Outbox>());
    EXPECT_TRUE(absl::IsAlreadyExists(refused.status())) << refused.status();
    EXPECT_NE(refused.status().message().find("is held by a live trainer"), std::string::npos);
  }
  EXPECT_TRUE(Next(*out_a).has_welcome());
  EXPECT_EQ(coordinator_->Status().live_trainers(), 1u);
  EXPECT_FALSE(out_a->closed());
}

// A trainer silent for longer than two heartbeats (frozen, or its pod gone) is replaced by a new
// incarnation under its name, before its eviction.
TEST_F(CoordinatorTest, RejoinGetsNewIncarnationAndOldOneIsEvicted) {
  auto [a, out_a] = Join("a", 0);
  clock_.Advance(absl::Seconds(3));
  auto [a2, out_a2] = Join("a", 0);
  EXPECT_EQ(a2.id, a.id);
  EXPECT_EQ(a2.incarnation, a.incarnation + 1);
  // The old session is told it was evicted (its Welcome may not have gone out yet) and closed.
  v1::Directive last;
  v1::Directive d;
  Step();
  while (out_a->TryPop(&d)) last = d;
  EXPECT_TRUE(last.has_evicted());
  EXPECT_TRUE(out_a->closed());
  EXPECT_TRUE(Next(*out_a2).has_welcome());
}

TEST_F(CoordinatorTest, ReachingTheTargetTellsEveryTrainerItIsDone) {
  Make("asp", 2, /*target_accuracy=*/0.8);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  v1::ClockReport below;
  below.set_clock(1);
  below.set_test_accuracy(0.5);
  coordinator_->Report(a, below);
  EXPECT_TRUE(Next(*out_a).has_proceed());
  EXPECT_FALSE(coordinator_->Status().done());
  v1::ClockReport reached;
  reached.set_clock(2);
  reached.set_test_accuracy(0.85);
  coordinator_->Report(a, reached);
  EXPECT_TRUE(Next(*out_a).has_proceed()) << "the report still gets its grant";
  EXPECT_TRUE(Next(*out_a).has_done());
  EXPECT_TRUE(Next(*out_b).has_done());
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.done());
  EXPECT_NE(status.done_reason().find("0.85"), std::string::npos) << status.done_reason();
  // A trainer joining after the end is welcomed and told at once.
  auto [c, out_c] = Join("c", 2);
  EXPECT_TRUE(Next(*out_c).has_welcome());
  v1::Directive d;
  bool done = false;
  for (int i = 0; i < 3 && !done; ++i) {
    Step();
    while (!done && out_c->TryPop(&d)) done = d.has_done();
  }
  EXPECT_TRUE(done);
}

// Finish in a mode without a final average is the target's Done; a second call changes nothing.
TEST_F(CoordinatorTest, FinishWithoutAFinalAverageTellsEveryTrainerItIsDone) {
  Make("asp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  EXPECT_EQ(*coordinator_->Finish("the time limit"), 0);
  EXPECT_EQ(Next(*out_a).done().reason(), "the time limit");
  EXPECT_TRUE(Next(*out_b).has_done());
  EXPECT_EQ(*coordinator_->Finish("again"), 0);
  EXPECT_TRUE(Quiet(*out_a));
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.done());
  EXPECT_EQ(status.done_reason(), "the time limit");
  EXPECT_EQ(status.final_round(), 0);
}

// Under dssync, Finish picks the final average's round: both trainers are granted it with the
// flag, joins are refused, the evaluator's accuracy of the average counts (another trainer's does
// not), and the job is done once both left.
TEST_F(CoordinatorTest, FinishUnderDsSyncEndsWithAFinalAverage) {
  auto [a, out_a, b, out_b] = StartTwoPeers("dssync");
  Report(a, 1);  // a waits at round 1 for its group; b computes
  EXPECT_EQ(*coordinator_->Finish("the time limit"), 2);
  EXPECT_EQ(*coordinator_->Finish("again"), 2);
  EXPECT_EQ(coordinator_->Status().final_round(), 2);
  EXPECT_EQ(JoinPeerStatus("c", 2), absl::StatusCode::kOutOfRange);
  Report(b, 1);
  for (Outbox* out : {out_a.get(), out_b.get()}) {
    const v1::Proceed round1 = Next(*out).proceed();
    EXPECT_EQ(round1.clock(), 1);
    EXPECT_FALSE(round1.final_average());
  }
  Report(a, 2);
  Report(b, 2);
  const v1::Proceed final_a = Next(*out_a).proceed();
  const v1::Proceed final_b = Next(*out_b).proceed();
  for (const v1::Proceed& p : {final_a, final_b}) {
    EXPECT_EQ(p.clock(), 2);
    EXPECT_TRUE(p.final_average());
    EXPECT_EQ(p.exchange().send_to_size(), 1);
  }
  EXPECT_TRUE(final_a.evaluate());
  coordinator_->Leave(b, "training is done", 0.5);  // not the evaluator: ignored
  EXPECT_FALSE(coordinator_->Status().done()) << "a has not left yet";
  coordinator_->Leave(a, "training is done", 0.83);
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.done());
  EXPECT_NE(status.done_reason().find("round 2"), std::string::npos) << status.done_reason();
  for (const v1::TrainerStatus& t : status.trainers()) EXPECT_EQ(t.state(), "done") << t.name();
  ASSERT_TRUE(status.has_final_test_accuracy());
  EXPECT_DOUBLE_EQ(status.final_test_accuracy(), 0.83);
}

// A coordinator that took a dssync job over finishes only once its trainers are back (the final
// round must follow their clocks); a bad reason changes nothing; with nobody live it is plain
// Done.
TEST_F(CoordinatorTest, FinishWaitsForATakenOverJobsTrainersAndRefusesBadReasons) {
  stores_.HoldJob(0, {{1, 1, -1}, {2, 1, -1}});
  Make("dssync", 2);
  EXPECT_TRUE(absl::IsInvalidArgument(coordinator_->Finish("").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(coordinator_->Finish("forged\nINFO line").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(coordinator_->Finish(std::string(300, 'x')).status()));
  EXPECT_TRUE(absl::IsUnavailable(coordinator_->Finish("the time limit").status()));
  auto resume = [&](const std::string& name, uint32_t rank, sync::TrainerId id, int64_t clock) {
    EXPECT_TRUE(ResumePeer(name, rank, id, clock, false, std::make_shared<Outbox>()).ok());
  };
  resume("a", 0, 1, 4);
  EXPECT_TRUE(absl::IsUnavailable(coordinator_->Finish("the time limit").status()));
  resume("b", 1, 2, 9);
  EXPECT_EQ(*coordinator_->Finish("the time limit"), 10);
  EXPECT_FALSE(coordinator_->Status().done());
}

TEST_F(CoordinatorTest, FinishWithoutTrainersIsDone) {
  Make("dssync", 2);
  EXPECT_EQ(*coordinator_->Finish("the time limit"), 0);
  EXPECT_TRUE(coordinator_->Status().done());
  EXPECT_EQ(coordinator_->Status().final_round(), 0);
}

// A job that fails during the final round is not reported as averaged.
TEST_F(CoordinatorTest, AJobThatFailsDuringTheFinalAverageSaysSo) {
  auto [a, out_a, b, out_b] = StartTwoPeers("dssync");
  ASSERT_EQ(*coordinator_->Finish("the time limit"), 1);
  stores_.Restart(0, /*with_model=*/false);  // the next probe fails the job
  v1::Directive d = AdvanceUntilNext(*out_a);
  for (int i = 0; i < 10 && !d.has_evicted(); ++i) d = AdvanceUntilNext(*out_a);
  ASSERT_TRUE(d.has_evicted());
  const v1::ClusterStatus status = coordinator_->Status();
  ASSERT_FALSE(status.failure().empty());
  EXPECT_FALSE(status.done()) << status.done_reason();
  EXPECT_FALSE(coordinator_->Finish("again").ok());
}

// The coordinator restarts during the final average: the stores kept the job's end with the
// membership, so the one that takes the job over ends it in the same round, for the same reason,
// with the evaluator's accuracy; trainers that held the final grant before finish the job.
TEST_F(CoordinatorTest, AFinalAverageSurvivesACoordinatorRestart) {
  auto [a, out_a, b, out_b] = StartTwoPeers("dssync");
  Report(a, 1);
  ASSERT_EQ(*coordinator_->Finish("the time limit"), 2);
  Report(b, 1);
  // Round 1's grants went out after the membership carrying the job's end.
  for (Outbox* out : {out_a.get(), out_b.get()}) EXPECT_EQ(Next(*out).proceed().clock(), 1);
  const std::optional<v1::JobEnd> kept = stores_.last_membership().job_end;
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->final_round(), 2);
  EXPECT_EQ(kept->reason(), "the time limit");
  EXPECT_FALSE(kept->has_final_test_accuracy());

  // The coordinator dies; a new one finds the job at the stores, both trainers holding round 1.
  stores_.HoldJob(0, {{a.id, 1, -1, "a"}, {b.id, 1, -1, "b"}});
  Make("dssync", 2);
  EXPECT_EQ(coordinator_->Status().final_round(), 2);
  EXPECT_EQ(*coordinator_->Finish("again"), 2) << "its final round, even while it waits";
  EXPECT_EQ(JoinPeerStatus("c", 2), absl::StatusCode::kOutOfRange)
      << "refused as done even while it waits for the trainers";
  auto new_a = std::make_shared<Outbox>();
  auto new_b = std::make_shared<Outbox>();
  absl::StatusOr<SessionKey> ra = ResumePeer("a", 0, a.id, 1, false, new_a);
  absl::StatusOr<SessionKey> rb = ResumePeer("b", 1, b.id, 1, false, new_b);
  ASSERT_TRUE(ra.ok() && rb.ok()) << ra.status() << " " << rb.status();
  EXPECT_TRUE(Next(*new_a).has_welcome());
  EXPECT_TRUE(Next(*new_b).has_welcome());
  EXPECT_EQ(JoinPeerStatus("c", 2), absl::StatusCode::kOutOfRange);
  Report(*ra, 2);
  Report(*rb, 2);
  for (Outbox* out : {new_a.get(), new_b.get()}) {
    const v1::Proceed p = Next(*out).proceed();
    EXPECT_EQ(p.clock(), 2);
    EXPECT_TRUE(p.final_average());
  }
  coordinator_->Leave(*ra, "training is done", 0.83);
  coordinator_->Leave(*rb, "training is done");
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.done());
  EXPECT_NE(status.done_reason().find("the time limit; 2 trainer(s) averaged"), std::string::npos)
      << status.done_reason();
  for (const v1::TrainerStatus& t : status.trainers()) EXPECT_EQ(t.state(), "done") << t.name();
  EXPECT_DOUBLE_EQ(status.final_test_accuracy(), 0.83);
}

// A trainer that held the final grant when the coordinator died finishes the job after resuming:
// it leaves done, with the evaluator's accuracy, and the stores keep that accuracy too.
TEST_F(CoordinatorTest, ATrainerHoldingTheFinalGrantFinishesUnderTheNextCoordinator) {
  v1::JobEnd end;
  end.set_final_round(4);
  end.set_reason("ended by an operator");
  stores_.HoldJob(0, {{1, 1, -1, "a"}, {2, 1, -1, "b"}});
  StoreMembership held;
  held.job_end = end;
  ASSERT_TRUE(stores_.SetMembership(held).ok());
  Make("dssync", 2);
  auto out_a = std::make_shared<Outbox>();
  auto out_b = std::make_shared<Outbox>();
  absl::StatusOr<SessionKey> a = ResumePeer("a", 0, 1, 4, false, out_a);  // averaging already
  absl::StatusOr<SessionKey> b = ResumePeer("b", 1, 2, 3, false, out_b);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Next(*out_b).has_welcome());
  coordinator_->Leave(*a, "training is done", 0.8);
  EXPECT_FALSE(coordinator_->Status().done()) << "b has not averaged yet";
  EXPECT_EQ(Next(*out_b).peer_left().trainer_id(), 1u);
  Report(*b, 4);
  EXPECT_TRUE(Next(*out_b).proceed().final_average());
  // b's grant went out after the membership without a, which carries a's accuracy.
  const std::optional<v1::JobEnd> kept = stores_.last_membership().job_end;
  ASSERT_TRUE(kept && kept->has_final_test_accuracy());
  EXPECT_DOUBLE_EQ(kept->final_test_accuracy(), 0.8);
  EXPECT_EQ(kept->final_round(), 4);
  coordinator_->Leave(*b, "training is done");
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.done()) << status.done_reason();
  EXPECT_DOUBLE_EQ(status.final_test_accuracy(), 0.8);
  for (const v1::TrainerStatus& t : status.trainers()) EXPECT_EQ(t.state(), "done") << t.name();
}

// Every trainer had left when the coordinator died: the next one reports the job done and takes
// no new trainer. A mode without a final average cannot take such a job over.
TEST_F(CoordinatorTest, AJobThatHadEndedStaysEnded) {
  v1::JobEnd end;
  end.set_final_round(7);
  end.set_reason("the time limit");
  end.set_final_test_accuracy(0.84);
  StoreMembership held;
  held.job_end = end;
  ASSERT_TRUE(stores_.SetMembership(held).ok());
  Make("dssync", 2);  // takes the job over as it starts
  v1::ClusterStatus status = coordinator_->Status();
  ASSERT_TRUE(status.done());
  EXPECT_NE(status.done_reason().find("round 7"), std::string::npos) << status.done_reason();
  EXPECT_EQ(status.final_round(), 7);
  EXPECT_DOUBLE_EQ(status.final_test_accuracy(), 0.84);
  EXPECT_EQ(*coordinator_->Finish("again"), 7);
  EXPECT_EQ(JoinPeerStatus("c", 2), absl::StatusCode::kOutOfRange);

  for (bool members : {false, true}) {
    if (members) stores_.HoldJob(0, {{1, 1, -1, "a"}});
    Make("bsp", 2);
    status = coordinator_->Status();
    EXPECT_FALSE(status.done());
    EXPECT_NE(status.failure().find("another --mode"), std::string::npos) << status.failure();
  }
}

TEST_F(CoordinatorTest, OnlyTheEvaluatorsValidAccuracyCounts) {
  Make("asp", 2, /*target_accuracy=*/0.8);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();  // a has rank 0: the evaluator
  auto report = [&](const SessionKey& key, int64_t clock, double accuracy, double age = 0) {
    v1::ClockReport r;
    r.set_clock(clock);
    r.set_test_accuracy(accuracy);
    r.set_test_accuracy_age_seconds(age);
    coordinator_->Report(key, r);
  };
  report(b, 1, 0.99);  // not the evaluator
  report(a, 1, 1.5);
  report(a, 2, std::nan(""));
  report(a, 3, 0.9, -1.0);  // a negative age
  report(a, 4, 0.9, std::numeric_limits<double>::infinity());
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_FALSE(status.done()) << status.done_reason();
  EXPECT_FALSE(status.has_test_accuracy());
  EXPECT_EQ(metrics_.refused.Add({{"what", "accuracy_not_evaluator"}}).Value(), 1);
  EXPECT_EQ(metrics_.refused.Add({{"what", "accuracy"}}).Value(), 4);
  report(a, 5, 0.9);
  EXPECT_TRUE(coordinator_->Status().done());
  EXPECT_EQ(coordinator_->Status().test_accuracy(), 0.9);
}

// An accuracy the evaluator evaluated after its last report comes with its Leave, and is taken as
// a report's: from the evaluator only, checked, dated when its model was taken.
TEST_F(CoordinatorTest, AnAccuracyWithTheEvaluatorsLeaveCounts) {
  Make("asp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();  // a has rank 0: the evaluator
  coordinator_->Leave(b, "step limit reached", std::nullopt, Evaluation{0.99, 0});
  EXPECT_FALSE(coordinator_->Status().has_test_accuracy());
  EXPECT_EQ(metrics_.refused.Add({{"what", "accuracy_not_evaluator"}}).Value(), 1);
  coordinator_->Leave(a, "step limit reached", std::nullopt, Evaluation{0.7, 0.5});
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_EQ(status.test_accuracy(), 0.7);
  EXPECT_FALSE(status.has_final_test_accuracy());
  EXPECT_EQ(status.live_trainers(), 0);
}

TEST_F(CoordinatorTest, ImpossibleTimingsAreIgnoredNotStored) {
  Make("asp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  auto timings = [](double compute, double wall, double emulated = 0) {
    v1::TrainerTimings t;
    t.set_compute_seconds(compute);
    t.set_wall_seconds(wall);
    t.set_emulated_compute_seconds(emulated);
    return t;
  };
  auto heartbeat = [&, a = a](const v1::TrainerTimings& t) {
    v1::Heartbeat h;
    *h.mutable_timings() = t;
    coordinator_->Heartbeat(a, h);
  };
  auto compute_of_a = [&] {
    const v1::ClusterStatus status = coordinator_->Status();
    for (const v1::TrainerStatus& t : status.trainers()) {
      if (t.name() == "a") return t.timings().compute_seconds();
    }
    return -1.0;
  };
  heartbeat(timings(2, 4));
  EXPECT_EQ(compute_of_a(), 2);
  heartbeat(timings(std::nan(""), 5));
  heartbeat(timings(-1, 5));
  heartbeat(timings(50, 5));     // more compute than wall time
  heartbeat(timings(1, 5, 3));   // more emulated than all compute
  heartbeat(timings(3, 1e300));  // beyond any job
  v1::ClockReport r;
  r.set_clock(1);
  *r.mutable_timings() = timings(std::numeric_limits<double>::infinity(), 5);
  coordinator_->Report(a, r);
  EXPECT_TRUE(Next(*out_a).has_proceed()) << "the report itself still counts";
  EXPECT_EQ(compute_of_a(), 2);
  EXPECT_EQ(metrics_.refused.Add({{"what", "timings"}}).Value(), 6);
  EXPECT_EQ(coordinator_->Status().live_trainers(), 2u) << "refusing a value evicts nobody";
}

TEST_F(CoordinatorTest, JoinsWithNamesUnsafeForLogsAreRefused) {
  for (const std::string& name :
       {std::string(), std::string("a b"), std::string("forged\nINFO line"),
        std::string("new\nline"), std::string(254, 'x'), std::string("caf\xc3\xa9")}) {
    v1::Join join;
    join.set_name(name);
    absl::StatusOr<SessionKey> key = coordinator_->Join(join, std::make_shared<Outbox>());
    EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
  v1::Join join;
  join.set_name("trainer-0");
  join.set_slowdown(std::nan(""));
  EXPECT_EQ(coordinator_->Join(join, std::make_shared<Outbox>()).status().code(),
            absl::StatusCode::kInvalidArgument);
  join.set_slowdown(1);
  join.set_peer_address(std::string(300, '1'));
  EXPECT_EQ(coordinator_->Join(join, std::make_shared<Outbox>()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coordinator_->Status().live_trainers(), 0u);
  v1::Join longest;
  longest.set_name(std::string(253, 'x'));
  EXPECT_TRUE(coordinator_->Join(longest, std::make_shared<Outbox>()).ok());
}

TEST_F(CoordinatorTest, TheStatusKeepsOnlyTheLastThousandDepartures) {
  ASSERT_EQ(departed_statuses_kept_, 1000u) << "the default";
  Make("asp", 1);
  for (int i = 0; i < 1005; ++i) {
    auto [key, out] = Join("t" + std::to_string(i), static_cast<uint32_t>(i));
    coordinator_->Leave(key, "done");
  }
  auto [live, out] = Join("live", 0);
  const v1::ClusterStatus status = coordinator_->Status();
  ASSERT_EQ(status.trainers_size(), 1001);
  std::set<std::string> names;
  for (const v1::TrainerStatus& t : status.trainers()) names.insert(t.name());
  EXPECT_EQ(names.count("t0"), 0u) << "the oldest departures are forgotten";
  EXPECT_EQ(names.count("t4"), 0u);
  EXPECT_EQ(names.count("t5"), 1u);
  EXPECT_EQ(names.count("t1004"), 1u);
  EXPECT_EQ(names.count("live"), 1u);
}

TEST_F(CoordinatorTest, TheStoresAreToldTheJobsPushRule) {
  Make("asp", 2);
  JoinTwoAndStart();
  StoreMembership m = stores_.last_membership();
  EXPECT_EQ(m.members.size(), 2u);
  EXPECT_EQ(m.apply_mode, v1::APPLY_MODE_IMMEDIATE);
  EXPECT_FLOAT_EQ(m.immediate_weight, 0.5f) << "1/N under the default step-size rule";
  Make("bsp", 2);
  JoinTwoAndStart();
  EXPECT_EQ(stores_.last_membership().apply_mode, v1::APPLY_MODE_ROUND);
  Make("dssync", 1);
  v1::Join join;
  join.set_name("p");
  join.set_peer_address("127.0.0.1:1");
  auto out = std::make_shared<Outbox>();
  ASSERT_TRUE(coordinator_->Join(join, out).ok());
  ASSERT_TRUE(Next(*out).has_welcome());
  ASSERT_TRUE(Next(*out).has_proceed());  // after the stores heard of the membership
  EXPECT_EQ(stores_.last_membership().apply_mode, v1::APPLY_MODE_NONE);
}

TEST_F(CoordinatorTest, PeerToPeerJoinsNeedAPeerAddressAndDeparturesAreAnnounced) {
  Make("selmcast", 2);
  v1::Join anonymous;
  anonymous.set_name("x");
  EXPECT_EQ(coordinator_->Join(anonymous, std::make_shared<Outbox>()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coordinator_->Status().live_trainers(), 0u) << "a refused join changed nothing";
  auto [a, out_a] = JoinPeer("a", 0);
  auto [b, out_b] = JoinPeer("b", 1);
  for (Outbox* out : {out_a.get(), out_b.get()}) {
    v1::Directive welcome = Next(*out);
    EXPECT_TRUE(welcome.welcome().peer_to_peer());
    EXPECT_TRUE(Next(*out).proceed().pull().live());
  }
  Report(a, 1);
  Report(b, 1);
  // Each round names the peers with the addresses they joined with.
  const v1::Proceed proceed = Next(*out_a).proceed();
  ASSERT_EQ(proceed.exchange().send_to_size(), 1);
  EXPECT_EQ(proceed.exchange().send_to(0).trainer_id(), b.id);
  EXPECT_EQ(proceed.exchange().send_to(0).address(), "127.0.0.1:7101");
  EXPECT_TRUE(Next(*out_b).has_proceed());
  coordinator_->Disconnected(b);
  EXPECT_EQ(Next(*out_a).peer_left().trainer_id(), b.id);
}

// The coordinator restarted: the stores hold a BSP job at round 5 whose two trainers pushed clock
// 6. Each resumes with its identity and clock; the round the old coordinator left open closes
// once both are back, and new trainers wait until then.
TEST_F(CoordinatorTest, ARestartedCoordinatorTakesTheJobOverAndTrainersResume) {
  stores_.HoldJob(5, {{1, 1, 5}, {2, 1, 5}});
  pipeline_grants_ = false;  // the store calls are done when the grants arrive
  Make("bsp", 2);
  auto c = std::make_shared<Outbox>();
  v1::Join join;
  join.set_name("c");
  join.set_rank(2);
  EXPECT_TRUE(absl::IsUnavailable(coordinator_->Join(join, c).status()));
  EXPECT_TRUE(coordinator_->Status().recovering());

  auto out_a = std::make_shared<Outbox>();
  absl::StatusOr<SessionKey> a = Resume("a", 0, 1, 6, true, out_a);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, 1u);
  EXPECT_EQ(a->incarnation, 1u);
  const v1::Welcome welcome = Next(*out_a).welcome();
  EXPECT_EQ(welcome.trainer_id(), 1u);
  EXPECT_EQ(welcome.start_clock(), 6);
  EXPECT_TRUE(Quiet(*out_a)) << "round 6 waits for b";
  EXPECT_TRUE(absl::IsFailedPrecondition(Resume("a", 0, 1, 6, true, out_a).status()))
      << "a session resumes once";
  EXPECT_TRUE(absl::IsFailedPrecondition(Resume("x", 3, 7, 6, true, out_a).status()))
      << "only trainers the stores know resume";

  auto out_b = std::make_shared<Outbox>();
  ASSERT_TRUE(Resume("b", 1, 2, 6, true, out_b).ok());
  ASSERT_TRUE(Next(*out_b).has_welcome());
  EXPECT_EQ(Next(*out_a).proceed().pull().round(), 6);
  EXPECT_EQ(Next(*out_b).proceed().pull().round(), 6);
  const std::vector<std::string> log = stores_.log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "close:6 1.1@6 2.1@6");
  for (const std::string& entry : log) {
    EXPECT_NE(entry, "members:0@5") << "the stores' membership is never emptied while recovering";
  }
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_TRUE(status.recovered());
  EXPECT_FALSE(status.recovering());
  EXPECT_EQ(status.trainers_resumed(), 2u);
  EXPECT_EQ(status.trainers_not_resumed(), 0u);
  EXPECT_TRUE(coordinator_->Join(join, c).ok()) << "new trainers join once the job goes on";
}

// A restarted coordinator takes a member back only under the name the stores knew it by, and tells
// the stores every resumed member's name again (a shard restarted with it knows none).
TEST_F(CoordinatorTest, OnlyTheSameNameResumesAMemberAndTheStoresLearnItAgain) {
  stores_.HoldJob(5, {{1, 1, 5, "a"}, {2, 1, 5, ""}});
  Make("asp", 2);
  auto out = std::make_shared<Outbox>();
  absl::Status taken = Resume("mallory", 0, 1, 6, false, out).status();
  EXPECT_EQ(taken.code(), absl::StatusCode::kPermissionDenied) << taken;
  ASSERT_TRUE(Resume("a", 0, 1, 6, false, out).ok());
  // The stores did not know b's name: b's resume names it.
  auto out_b = std::make_shared<Outbox>();
  ASSERT_TRUE(Resume("b", 1, 2, 6, false, out_b).ok());
  ASSERT_TRUE(Next(*out_b).has_welcome());
  std::map<sync::TrainerId, std::string> names;
  for (const sync::Member& m : stores_.last_membership().members) names[m.id] = m.name;
  EXPECT_EQ(names, (std::map<sync::TrainerId, std::string>{{1, "a"}, {2, "b"}}));
}

TEST_F(CoordinatorTest, ATakeOverTellsTheStoresTheWeightOfEveryTrainerExpected) {
  stores_.HoldJob(0, {{1, 1, -1}, {2, 1, -1}});
  Make("asp", 2);
  // While the job's trainers are expected back, N counts them: a push weighs 1/2, not 1.
  auto out_a = std::make_shared<Outbox>();
  ASSERT_TRUE(Resume("a", 0, 1, 3, true, out_a).ok());
  auto out_b = std::make_shared<Outbox>();
  ASSERT_TRUE(Resume("b", 1, 2, 3, true, out_b).ok());
  ASSERT_TRUE(Next(*out_a).has_welcome());
  ASSERT_TRUE(Next(*out_a).has_proceed());
  const StoreMembership m = stores_.last_membership();
  EXPECT_EQ(m.apply_mode, v1::APPLY_MODE_IMMEDIATE);
  EXPECT_FLOAT_EQ(m.immediate_weight, 0.5f);
}

TEST_F(CoordinatorTest, TrainersThatDoNotResumeWithinTheWindowAreDropped) {
  stores_.HoldJob(5, {{1, 1, 5}, {2, 1, 5}});
  Make("bsp", 2);
  auto out_a = std::make_shared<Outbox>();
  absl::StatusOr<SessionKey> a = Resume("a", 0, 1, 6, true, out_a);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(Next(*out_a).has_welcome());
  // b never comes back: after the recovery window, round 6 closes with a alone.
  EXPECT_TRUE(Quiet(*out_a));
  for (int s = 0; s < 11; ++s) {
    coordinator_->Heartbeat(*a, v1::Heartbeat());
    clock_.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(Next(*out_a).proceed().pull().round(), 6);
  const v1::ClusterStatus status = coordinator_->Status();
  EXPECT_EQ(status.trainers_resumed(), 1u);
  EXPECT_EQ(status.trainers_not_resumed(), 1u);
  EXPECT_TRUE(Closed(1));
  EXPECT_EQ(stores_.log().back(), "close:6 1.1@6");
  EXPECT_TRUE(
      absl::IsFailedPrecondition(Resume("b", 1, 2, 6, true, std::make_shared<Outbox>()).status()));
}

TEST_F(CoordinatorTest, JoinsWaitUntilTheStoresHaveAnswered) {
  stores_.FailProbes(true);
  Make("asp", 1);
  auto out = std::make_shared<Outbox>();
  v1::Join join;
  join.set_name("a");
  EXPECT_TRUE(absl::IsUnavailable(coordinator_->Join(join, out).status()));
  stores_.FailProbes(false);
  absl::StatusOr<SessionKey> joined = absl::UnavailableError("not yet");
  for (int i = 0; i < 100 && !joined.ok(); ++i) {
    clock_.Advance(absl::Milliseconds(200));
    Step();  // probes the stores
    joined = coordinator_->Join(join, out);
  }
  EXPECT_TRUE(joined.ok()) << joined.status();
}

// A trainer that heartbeats but never reports (its training is stuck) is evicted once others have
// waited for it longer than the progress timeout; one that holds nobody up is left alone.
TEST_F(CoordinatorTest, AStuckTrainerThatHoldsOthersUpIsEvicted) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 1);  // round 1 waits for b
  HeartbeatBoth(a, b, 59);
  EXPECT_TRUE(Quiet(*out_b)) << "within the progress timeout";
  HeartbeatBoth(a, b, 3);
  const v1::Directive evicted = Next(*out_b);
  ASSERT_TRUE(evicted.has_evicted());
  EXPECT_NE(evicted.evicted().reason().find("no progress"), std::string::npos);
  EXPECT_EQ(Next(*out_a).proceed().pull().round(), 1) << "the round closes without b";
}

// A trainer that declares a pause (a long validation pass, a checkpoint save) is not evicted for
// making no progress while others wait for it; once it returns, its progress counts afresh, and a
// return that stays stuck is evicted after a whole progress timeout.
TEST_F(CoordinatorTest, ADeclaredPauseIsNotStalled) {
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 1);  // round 1 waits for b
  v1::Heartbeat paused;
  paused.set_paused(true);
  HeartbeatBoth(a, b, 120, paused);
  EXPECT_TRUE(Quiet(*out_b)) << "paused for twice the progress timeout";
  HeartbeatBoth(a, b, 59);
  EXPECT_TRUE(Quiet(*out_b)) << "its progress counts from its return";
  HeartbeatBoth(a, b, 3);
  const v1::Directive evicted = Next(*out_b);
  ASSERT_TRUE(evicted.has_evicted());
  EXPECT_NE(evicted.evicted().reason().find("no progress"), std::string::npos);
}

// A peer-to-peer joiner waits for the next round's exchange without a grant: when a stuck trainer
// holds that round up past the progress timeout, the stuck one is evicted, not the joiner, which
// then gets its first grant.
TEST_F(CoordinatorTest, AJoinerWaitingForItsFirstExchangeIsNotStalled) {
  auto [a, out_a, b, out_b] = StartTwoPeers("selmcast");
  Report(a, 1);
  Report(b, 1);
  ASSERT_TRUE(Next(*out_a).has_proceed());
  ASSERT_TRUE(Next(*out_b).has_proceed());
  Report(a, 2);  // round 2 waits for b, which is stuck
  auto [c, out_c] = JoinPeer("c", 2);
  EXPECT_EQ(Next(*out_c).welcome().start_clock(), 2);
  for (int s = 0; s < 62; ++s) {
    for (const SessionKey& key : {a, b, c}) coordinator_->Heartbeat(key, v1::Heartbeat());
    clock_.Advance(absl::Seconds(1));
  }
  const v1::Directive evicted = Next(*out_b);
  ASSERT_TRUE(evicted.has_evicted());
  EXPECT_NE(evicted.evicted().reason().find("no progress"), std::string::npos);
  const v1::Directive first = Next(*out_c);
  ASSERT_TRUE(first.has_proceed()) << "the joiner stays: " << first.DebugString();
  EXPECT_EQ(first.proceed().exchange().round(), 2);
  EXPECT_EQ(first.proceed().exchange().receive_from_size(), 1) << "a sends to it";
}

// A coordinator frozen for 10 s (SIGSTOP, a long GC-like pause) heard nobody meanwhile: that is
// not the trainers' silence. Nobody is evicted when it runs again; a trainer that stays silent
// afterwards is, once the timeout has passed in time the coordinator ran.
TEST_F(CoordinatorTest, AFrozenCoordinatorDoesNotHoldItsOwnSilenceAgainstTheTrainers) {
  pause_threshold_ = absl::Seconds(1);
  Make("bsp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  Report(a, 1);
  Report(b, 1);
  ASSERT_TRUE(Next(*out_a).has_proceed());
  ASSERT_TRUE(Next(*out_b).has_proceed());
  clock_.Advance(absl::Seconds(10));  // one tick sees the whole gap
  EXPECT_TRUE(Quiet(*out_a));
  EXPECT_TRUE(Quiet(*out_b));
  EXPECT_EQ(coordinator_->Status().live_trainers(), 2u);
  EXPECT_EQ(metrics_.pauses.Value(), 1);
  // a heartbeats on in 200 ms steps (no pause); b stays silent and goes after 5 s of them.
  bool evicted = false;
  for (int i = 0; i < 40 && !evicted; ++i) {
    coordinator_->Heartbeat(a, v1::Heartbeat());
    clock_.Advance(absl::Milliseconds(200));
    Step();
    v1::Directive d;
    evicted = out_b->TryPop(&d) && d.has_evicted();
    if (i < 20) {
      EXPECT_FALSE(evicted) << "evicted after " << (i + 1) * 200 << " ms";
    }
  }
  EXPECT_TRUE(evicted);
  EXPECT_EQ(coordinator_->Status().live_trainers(), 1u);
}

// A store call that hangs holds up the action thread, not the process: the trainers' messages are
// read meanwhile, so a trainer silent all that time is evicted once the call returns (no pause).
TEST_F(CoordinatorTest, AHungStoreCallIsNotAPause) {
  pause_threshold_ = absl::Seconds(1);
  background_threads_ = true;  // what is tested: the watchdog beats while the action thread hangs
  Make("bsp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  stores_.HoldProbes(true);
  for (int i = 0; i < 35; ++i) {  // 7 s of fake time: the next probe hangs on the way
    coordinator_->Heartbeat(a, v1::Heartbeat());
    clock_.Advance(absl::Milliseconds(200));
    ASSERT_TRUE(coordinator_->AwaitBeat(clock_.Now(), absl::Seconds(10)))
        << "the watchdog stopped beating while the action thread hung";
  }
  stores_.HoldProbes(false);
  v1::Directive d;
  bool evicted = false;
  for (int i = 0; i < 20 && !evicted; ++i) {
    coordinator_->Heartbeat(a, v1::Heartbeat());
    evicted = out_b->Pop(&d, absl::Milliseconds(100)) && d.has_evicted();
  }
  EXPECT_TRUE(evicted);
  EXPECT_EQ(metrics_.pauses.Value(), 0);
}

TEST_F(CoordinatorTest, ASlowTrainerThatHoldsNobodyUpStays) {
  Make("asp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  for (int s = 0; s < 90; ++s) {
    Report(a, s + 1);  // a is granted at once every time: nobody waits for b
    ASSERT_TRUE(Next(*out_a).has_proceed());
    coordinator_->Heartbeat(b, v1::Heartbeat());
    clock_.Advance(absl::Seconds(1));
  }
  EXPECT_TRUE(Quiet(*out_b));
  EXPECT_EQ(coordinator_->Status().live_trainers(), 2u);
}

// Per-trainer gauges are read when scraped, for the live trainers only, and the evaluator passes
// to the next rank.
TEST_F(CoordinatorTest, TrainerGaugesAreReadWhenScrapedAndTheEvaluatorFollowsRanks) {
  Make("ssp", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  std::vector<TrainerGauge> gauges = coordinator_->TrainerGauges();
  ASSERT_EQ(gauges.size(), 2u);
  EXPECT_EQ(gauges[0].name, "a");
  EXPECT_EQ(gauges[0].staleness_bound, 3);
  EXPECT_EQ(gauges[1].group, -1);
  EXPECT_FALSE(gauges[1].link);
  const std::vector<prometheus::MetricFamily> families = TrainerFamilies(gauges);
  ASSERT_EQ(families.size(), 2u) << "no link family where nothing was measured";
  EXPECT_EQ(families[0].name, "syncopate_coordinator_trainer_staleness_bound");
  ASSERT_EQ(families[0].metric.size(), 2u);
  EXPECT_EQ(families[0].metric[1].label[0].value, "b");
  EXPECT_EQ(families[0].metric[1].gauge.value, 3);

  coordinator_->Leave(a, "bye");
  gauges = coordinator_->TrainerGauges();
  ASSERT_EQ(gauges.size(), 1u);
  EXPECT_EQ(gauges[0].name, "b");
  const v1::ClusterStatus status = coordinator_->Status();
  ASSERT_EQ(status.trainers_size(), 2);
  EXPECT_EQ(status.trainers(0).state(), "left");
  EXPECT_EQ(status.trainers(0).staleness_bound(), 3);
  Report(b, 1);
  const v1::Directive granted = Next(*out_b);
  ASSERT_TRUE(granted.has_proceed());
  EXPECT_TRUE(granted.proceed().evaluate()) << "b has the lowest rank left";
}

// Each measured pair is one series, labelled by its sender and its receiver.
TEST(TrainerFamiliesTest, PairRatesAreLabelledBySenderAndReceiver) {
  TrainerGauge a;
  a.name = "a";
  a.sends = {{"b", 5e6}, {"c", 1e6}};
  TrainerGauge b;
  b.name = "b";
  const std::vector<prometheus::MetricFamily> families = TrainerFamilies({a, b});
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[2].name, "syncopate_coordinator_pair_link_bytes_per_second");
  ASSERT_EQ(families[2].metric.size(), 2u);
  const prometheus::ClientMetric& to_c = families[2].metric[1];
  ASSERT_EQ(to_c.label.size(), 2u);
  EXPECT_EQ(to_c.label[0].name, "receiver");
  EXPECT_EQ(to_c.label[0].value, "c");
  EXPECT_EQ(to_c.label[1].name, "sender");
  EXPECT_EQ(to_c.label[1].value, "a");
  EXPECT_EQ(to_c.gauge.value, 1e6);
}

// --departed-statuses-kept sets how many.
TEST_F(CoordinatorTest, TheStatusKeepsAsManyDeparturesAsConfigured) {
  departed_statuses_kept_ = 3;
  Make("asp", 1);
  for (int i = 0; i < 5; ++i) {
    auto [key, out] = Join("t" + std::to_string(i), static_cast<uint32_t>(i));
    coordinator_->Leave(key, "done");
  }
  const v1::ClusterStatus status = coordinator_->Status();
  ASSERT_EQ(status.trainers_size(), 3);
  EXPECT_EQ(status.trainers(0).name(), "t2");
}

// A departed trainer keeps its last gauges in the status (the policy forgets it: hybrid would say
// group -1).
TEST_F(CoordinatorTest, ADepartedTrainerKeepsItsLastGauges) {
  Make("hybrid", 2);
  auto [a, out_a, b, out_b] = JoinTwoAndStart();
  coordinator_->Leave(a, "bye");
  const v1::ClusterStatus status = coordinator_->Status();
  ASSERT_EQ(status.trainers_size(), 2);
  EXPECT_EQ(status.trainers(0).name(), "a");
  EXPECT_EQ(status.trainers(0).state(), "left");
  EXPECT_EQ(status.trainers(0).group(), 0);
  EXPECT_EQ(status.trainers(1).group(), 0);
}

}  // namespace
}  // namespace syncopate::coordinator
