// The coordinator's Session service over gRPC on 127.0.0.1, driven by raw streams as a trainer
// (or anyone) would: the first message must be a Join, directives arrive as the coordinator
// queues them, a Leave or a broken stream ends the session, and open sessions hold no thread each.
#include "coordinator/session_service.h"

#include <memory>
#include <vector>

#include "base/clock.h"
#include "coordinator/coordinator.h"
#include "coordinator/store_control.h"
#include "gtest/gtest.h"
#include "local_store.h"
#include "prometheus/registry.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"
#include "sync/policy_factory.h"
#include "thread_count.h"

namespace syncopate {
namespace {

using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::Directive>;

class SessionServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.Start().ok());
    stores_ = std::make_unique<coordinator::GrpcStoreControl>(
        std::vector<std::string>{store_.address()}, rpc::Credentials::Insecure(), absl::Seconds(5));
    sync::PolicyOptions policy;
    policy.mode = "ssp";
    engine_ = std::make_unique<coordinator::Coordinator>(coordinator::CoordinatorOptions{},
                                                         *sync::MakePolicy(policy), *stores_,
                                                         base::MonotonicClock::Get(), metrics_);
    engine_->Start();
    service_ = std::make_unique<coordinator::SessionService>(
        *engine_, rpc::Authorizer(rpc::Credentials::Insecure(), nullptr), &watchdog_);
    int port = 0;
    ASSERT_TRUE(rpc::StartServer("127.0.0.1:0", {service_.get()}, rpc::Credentials::Insecure(),
                                 &server_, &port)
                    .ok());
    stub_ = v1::Coordinator::NewStub(rpc::MakeChannel("127.0.0.1:" + std::to_string(port),
                                                      rpc::Credentials::Insecure(),
                                                      rpc::Role::kCoordinator));
  }
  void TearDown() override {
    engine_->Stop();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    store_.Stop();
  }

  struct Session {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<Stream> stream;
  };
  Session Open() {
    Session s;
    s.ctx = rpc::ContextWithTimeout(absl::Seconds(60));
    s.stream = stub_->Session(s.ctx.get());
    return s;
  }
  static v1::SessionRequest JoinAs(const std::string& name, uint32_t rank = 0) {
    v1::SessionRequest r;
    r.mutable_join()->set_name(name);
    r.mutable_join()->set_rank(rank);
    return r;
  }
  static v1::SessionRequest ClockReport(int64_t clock) {
    v1::SessionRequest r;
    r.mutable_clock()->set_clock(clock);
    return r;
  }
  // A session that joined as `name` and read its Welcome (`welcome`), retrying while the
  // coordinator has not reached the store yet (it refuses joins as UNAVAILABLE until then).
  // Two live trainers never share a rank: give each its own.
  Session Joined(const std::string& name, v1::Welcome* welcome = nullptr, uint32_t rank = 0) {
    v1::Directive d;
    for (int attempt = 0; attempt < 100; ++attempt) {
      Session s = Open();
      if (!s.stream->Write(JoinAs(name, rank))) break;
      if (s.stream->Read(&d)) {
        EXPECT_TRUE(d.has_welcome());
        if (welcome) *welcome = d.welcome();
        return s;
      }
      if (s.stream->Finish().error_code() != grpc::StatusCode::UNAVAILABLE) break;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << name << " could not join";
    return Open();
  }
  // The state the coordinator shows for `name`, once it is `want` (polled, with a deadline).
  std::string StateOf(const std::string& name, const std::string& want) {
    std::string state;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (state != want && absl::Now() < deadline) {
      const v1::ClusterStatus status = engine_->Status();
      for (const v1::TrainerStatus& t : status.trainers()) {
        if (t.name() == name) state = t.state();
      }
      if (state != want) absl::SleepFor(absl::Milliseconds(10));
    }
    return state;
  }

  LocalStore store_;
  prometheus::Registry registry_;
  coordinator::CoordinatorMetrics metrics_{registry_};
  std::unique_ptr<coordinator::GrpcStoreControl> stores_;
  std::unique_ptr<coordinator::Coordinator> engine_;
  base::FakeClock idle_clock_;
  rpc::StreamWatchdog watchdog_{absl::Seconds(60), idle_clock_};  // swept by hand
  std::unique_ptr<coordinator::SessionService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(SessionServiceTest, DirectivesFlowAndALeaveEndsTheStreamOk) {
  v1::Welcome welcome;
  Session s = Joined("t0", &welcome);
  EXPECT_EQ(welcome.mode(), "ssp");
  v1::Directive d;
  ASSERT_TRUE(s.stream->Read(&d));
  ASSERT_TRUE(d.has_proceed());
  EXPECT_EQ(d.proceed().clock(), 0);
  for (int64_t clock = 1; clock <= 5; ++clock) {
    ASSERT_TRUE(s.stream->Write(ClockReport(clock)));
    ASSERT_TRUE(s.stream->Read(&d));
    ASSERT_TRUE(d.has_proceed());
    EXPECT_EQ(d.proceed().clock(), clock);
  }
  v1::SessionRequest leave;
  leave.mutable_leave()->set_reason("done here");
  ASSERT_TRUE(s.stream->Write(leave));
  EXPECT_FALSE(s.stream->Read(&d));
  EXPECT_TRUE(s.stream->Finish().ok());
  EXPECT_EQ(StateOf("t0", "left"), "left");
}

TEST_F(SessionServiceTest, ASessionMustStartWithAnAcceptedJoin) {
  Session s = Open();
  v1::SessionRequest heartbeat;
  heartbeat.mutable_heartbeat();
  ASSERT_TRUE(s.stream->Write(heartbeat));
  v1::Directive d;
  EXPECT_FALSE(s.stream->Read(&d));
  EXPECT_EQ(s.stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  Session nameless = Open();
  ASSERT_TRUE(nameless.stream->Write(JoinAs("")));
  EXPECT_FALSE(nameless.stream->Read(&d));
  const grpc::StatusCode code = nameless.stream->Finish().error_code();
  // INVALID_ARGUMENT once the coordinator reached the store, UNAVAILABLE before.
  EXPECT_TRUE(code == grpc::StatusCode::INVALID_ARGUMENT || code == grpc::StatusCode::UNAVAILABLE)
      << code;
  EXPECT_EQ(engine_->Status().trainers_size(), 0);
}

// --join-timeout: a session that never joins is cancelled when it has been quiet that long; one
// that joined is left to the coordinator's eviction timeout.
TEST_F(SessionServiceTest, ASessionThatNeverJoinsIsCancelled) {
  Session joined = Joined("t0");
  Session quiet = Open();
  // The quiet stream reaches the server some time after Open (polled, with a deadline).
  EXPECT_EQ(SweepUntilCancelled(idle_clock_, watchdog_), 1);
  EXPECT_EQ(quiet.stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The joined session was not touched, however long the idle clock ran.
  ASSERT_TRUE(joined.stream->Write(ClockReport(1)));
  EXPECT_EQ(StateOf("t0", "live"), "live");
  joined.ctx->TryCancel();
}

TEST_F(SessionServiceTest, ABrokenStreamEvictsTheTrainer) {
  Session s = Joined("t0");
  s.ctx->TryCancel();
  EXPECT_FALSE(s.stream->Finish().ok());
  EXPECT_EQ(StateOf("t0", "evicted"), "evicted");
}

TEST_F(SessionServiceTest, OpenSessionsHoldNoThreadEach) {
  // 200 sessions that joined and then wait for directives: a thread-per-stream server (with a
  // writer thread beside each) would hold 200-400 threads until they end.
  const int before = ThreadCount();
  constexpr int kSessions = 200;
  std::vector<Session> sessions;
  for (int i = 0; i < kSessions; ++i)
    sessions.push_back(Joined("t" + std::to_string(i), nullptr, i));
  EXPECT_EQ(engine_->Status().live_trainers(), static_cast<uint32_t>(kSessions));
  EXPECT_LT(ThreadCount() - before, 32) << "threads before: " << before;
  // Each still gets its directives.
  v1::Directive d;
  ASSERT_TRUE(sessions[17].stream->Read(&d));
  EXPECT_TRUE(d.has_proceed());
  v1::SessionRequest leave;
  leave.mutable_leave();
  for (Session& s : sessions) ASSERT_TRUE(s.stream->Write(leave));
  for (Session& s : sessions) {
    while (s.stream->Read(&d)) {
    }
    EXPECT_TRUE(s.stream->Finish().ok());
  }
  EXPECT_EQ(engine_->Status().live_trainers(), 0u);
}

}  // namespace
}  // namespace syncopate
