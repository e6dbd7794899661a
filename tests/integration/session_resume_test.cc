// A trainer's session rides out a coordinator restart: a real store and a real coordinator on
// 127.0.0.1, the coordinator shut down mid-session and a new one started on its port. The
// trainer's SessionClient resumes with its identity and clock; the new coordinator takes the job
// over from the store and grants the report the trainer made while it was down.
#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "client/session_client.h"
#include "coordinator/coordinator.h"
#include "coordinator/session_service.h"
#include "coordinator/store_control.h"
#include "gtest/gtest.h"
#include "local_store.h"
#include "prometheus/registry.h"
#include "rpc/grpc_util.h"
#include "sync/policy_factory.h"

namespace syncopate {
namespace {

// A Leave with `reason`, and the final average's accuracy if given.
v1::Leave Leave(const std::string& reason, std::optional<double> final_accuracy = std::nullopt) {
  v1::Leave leave;
  leave.set_reason(reason);
  if (final_accuracy) leave.set_final_test_accuracy(*final_accuracy);
  return leave;
}

// One coordinator process's worth: the engine, its service and server.
struct CoordinatorServer {
  CoordinatorServer(const std::string& store, const std::string& listen)
      : stores({store}, rpc::Credentials::Insecure(), absl::Seconds(5)) {
    sync::PolicyOptions policy;
    policy.mode = "asp";
    coordinator::CoordinatorOptions options;
    options.recovery_window = absl::Seconds(5);
    engine = std::make_unique<coordinator::Coordinator>(options, *sync::MakePolicy(policy), stores,
                                                        base::MonotonicClock::Get(), metrics);
    engine->Start();
    service = std::make_unique<coordinator::SessionService>(
        *engine, rpc::Authorizer(rpc::Credentials::Insecure(), nullptr));
    status =
        rpc::StartServer(listen, {service.get()}, rpc::Credentials::Insecure(), &server, &port);
  }
  // As a crash looks to the trainers: every stream ends at once, and nothing more reaches the
  // store (the engine stops first, as syncopate-coordinator's shutdown does).
  void Kill() {
    engine->Stop();
    server->Shutdown(absl::ToChronoTime(absl::Now()));
    server.reset();
  }

  prometheus::Registry registry;
  coordinator::CoordinatorMetrics metrics{registry};
  coordinator::GrpcStoreControl stores;
  std::unique_ptr<coordinator::Coordinator> engine;
  std::unique_ptr<coordinator::SessionService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  absl::Status status;
};

class SessionResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(local_store_.Start().ok());
    store_ = local_store_.address();
    first_ = std::make_unique<CoordinatorServer>(store_, "127.0.0.1:0");
    ASSERT_TRUE(first_->status.ok()) << first_->status;
    address_ = "127.0.0.1:" + std::to_string(first_->port);
    v1::Join join;
    join.set_name("trainer-0");
    absl::StatusOr<std::unique_ptr<client::SessionClient>> session =
        client::SessionClient::Connect(address_, join);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    ASSERT_EQ(Proceed().clock(), 0);
    ASSERT_TRUE(session_->ReportClock(Report(1)).ok());
    ASSERT_EQ(Proceed().clock(), 1);
  }
  void TearDown() override {
    session_.reset();
    for (auto* c : {first_.get(), second_.get()}) {
      if (c && c->server) c->Kill();
    }
    local_store_.Stop();
  }

  static v1::ClockReport Report(int64_t clock) {
    v1::ClockReport report;
    report.set_clock(clock);
    return report;
  }
  // The next Proceed, within a deadline (the session may be resuming meanwhile).
  v1::Proceed Proceed() {
    absl::StatusOr<v1::Proceed> proceed = absl::DeadlineExceededError("none yet");
    for (int i = 0; i < 60 && absl::IsDeadlineExceeded(proceed.status()); ++i) {
      proceed = session_->WaitProceed(absl::Milliseconds(500));
    }
    EXPECT_TRUE(proceed.ok()) << proceed.status();
    return proceed.value_or(v1::Proceed());
  }
  // Kills the first coordinator and starts another on its port.
  void Restart() {
    first_->Kill();
    second_ = std::make_unique<CoordinatorServer>(store_, address_);
    ASSERT_TRUE(second_->status.ok()) << second_->status;
  }

  LocalStore local_store_;
  std::string store_;
  std::unique_ptr<CoordinatorServer> first_, second_;
  std::string address_;
  std::unique_ptr<client::SessionClient> session_;
};

TEST_F(SessionResumeTest, TheSessionResumesWithItsIdentityAndClock) {
  const v1::Welcome welcome = session_->welcome();
  first_->Kill();
  // Reported while no coordinator runs: kept for the resumed session, not an error.
  EXPECT_TRUE(session_->ReportClock(Report(2)).ok());
  second_ = std::make_unique<CoordinatorServer>(store_, address_);
  ASSERT_TRUE(second_->status.ok()) << second_->status;
  EXPECT_EQ(Proceed().clock(), 2);
  EXPECT_EQ(session_->welcome().trainer_id(), welcome.trainer_id());
  const v1::ClusterStatus status = second_->engine->Status();
  EXPECT_TRUE(status.recovered());
  EXPECT_EQ(status.trainers_resumed(), 1u);
  ASSERT_EQ(status.trainers_size(), 1);
  EXPECT_EQ(status.trainers(0).incarnation(), welcome.incarnation());
  EXPECT_EQ(status.trainers(0).clock(), 2);
  ASSERT_TRUE(session_->ReportClock(Report(3)).ok());
  EXPECT_EQ(Proceed().clock(), 3);
}

// While a grant is awaited the heartbeats say so and the coordinator answers each
// (HeartbeatAck): the session counts them among the directives heard, so a trainer held long by
// its mode can tell a live coordinator from a silent one.
TEST_F(SessionResumeTest, HeartbeatsAwaitingAGrantAreAnswered) {
  session_->StartHeartbeats([] { return v1::TrainerTimings(); });
  const uint64_t heard = session_->directives_heard();
  ASSERT_TRUE(session_->ReportClock(Report(2)).ok());  // asp: granted at once, not taken yet
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (session_->directives_heard() < heard + 3 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));  // polling a counter, within a deadline
  }
  EXPECT_GE(session_->directives_heard(), heard + 3) << "the grant and two answers";
  EXPECT_EQ(Proceed().clock(), 2);  // the answers are not queued as directives
}

// A finished trainer's Leave made while the coordinator is down is not lost: the session resumes
// with the next one and leaves there (a trainer that finished the final average must not count as
// missing).
TEST_F(SessionResumeTest, AFinishedLeaveWhileTheCoordinatorIsDownReachesTheNextOne) {
  first_->Kill();
  std::thread leaving([&] { session_->Leave(Leave("training is done"), true); });
  absl::SleepFor(absl::Seconds(3));  // the fault itself: down for longer than a Leave's grace
  second_ = std::make_unique<CoordinatorServer>(store_, address_);
  ASSERT_TRUE(second_->status.ok()) << second_->status;
  leaving.join();  // Leave returns once the new coordinator ended the stream on it
  const v1::ClusterStatus status = second_->engine->Status();
  EXPECT_EQ(status.trainers_resumed(), 1u);
  EXPECT_EQ(status.live_trainers(), 0u);
  ASSERT_EQ(status.trainers_size(), 1);
  EXPECT_EQ(status.trainers(0).state(), "left");
}

// The caller can give up that wait (Ctrl-C in Python): the Leave returns, the session is closed.
TEST_F(SessionResumeTest, AFinishedLeaveGivesUpItsWaitWhenTheCallerIsInterrupted) {
  absl::Notification interrupt;
  std::atomic<int> asked{0};
  client::SessionClientOptions options;
  options.resume_for = absl::Minutes(10);
  options.interrupted = [&] {
    ++asked;
    return interrupt.HasBeenNotified();
  };
  v1::Join join;
  join.set_name("trainer-1");
  join.set_rank(1);  // trainer-0 holds rank 0
  absl::StatusOr<std::unique_ptr<client::SessionClient>> other =
      client::SessionClient::Connect(address_, join, options);
  ASSERT_TRUE(other.ok()) << other.status();
  first_->Kill();
  absl::Notification left;
  std::thread leaving([&] {
    (*other)->Leave(Leave("training is done", 0.5), true);
    left.Notify();
  });
  const absl::Time give_up = absl::Now() + absl::Minutes(1);
  while (asked.load() == 0 && !left.HasBeenNotified() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GT(asked.load(), 0) << "the Leave never asked whether to give up";
  EXPECT_FALSE(left.HasBeenNotified()) << "the Leave waits for a coordinator";
  interrupt.Notify();
  // A deadline, not a measure: the wait asks every 200 ms, and would last 10 minutes otherwise.
  EXPECT_TRUE(left.WaitForNotificationWithTimeout(absl::Minutes(1)));
  leaving.join();
  EXPECT_TRUE(absl::IsUnavailable((*other)->ReportClock(Report(2)))) << "the session is closed";
}

// On a healthy stream the Leave ends the session at once.
TEST_F(SessionResumeTest, ALeaveOnAHealthyStreamEndsTheSession) {
  session_->Leave(Leave("training is done"), false);
  const v1::ClusterStatus status = first_->engine->Status();
  EXPECT_EQ(status.live_trainers(), 0u);
  ASSERT_EQ(status.trainers_size(), 1);
  EXPECT_EQ(status.trainers(0).state(), "left");
  EXPECT_TRUE(absl::IsUnavailable(session_->ReportClock(Report(2)))) << "the session is closed";
}

TEST_F(SessionResumeTest, ACoordinatorThatDoesNotKnowTheTrainerRefusesTheResume) {
  local_store_.table.SetMembers({});  // the job this trainer was in is gone from the store
  Restart();
  absl::StatusOr<v1::Proceed> proceed = absl::DeadlineExceededError("none yet");
  for (int i = 0; i < 60 && absl::IsDeadlineExceeded(proceed.status()); ++i) {
    proceed = session_->WaitProceed(absl::Milliseconds(500));
  }
  EXPECT_TRUE(absl::IsAborted(proceed.status())) << proceed.status();
  EXPECT_NE(proceed.status().message().find("refused to resume"), std::string::npos)
      << proceed.status();
}

}  // namespace
}  // namespace syncopate
