// A trainer's gRPC, set up as syncopate-trainer sets it up (rpc::PreferPollForAFewConnections:
// the poll(2) engine), reconnects over mutual TLS to a server that refused its first connection.
// Under poll nothing polls a connection that no call waits on, except gRPC's backup poller, so a
// reconnection started by the channel's own timer once timed out in its TLS handshake again and
// again: the netns test's coordinator never reached its store (bench/README, "gRPC's poll
// strategy"). Its own binary: gRPC reads the environment once, when it starts.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/certificates.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "rpc/credentials.h"
#include "rpc/grpc_util.h"

namespace syncopate {
namespace {

using rpc::Credentials;
using rpc::Role;

// How many epoll instances this process holds (/proc/self/fd links to anon_inode:[eventpoll]).
int EpollDescriptors() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string() == "anon_inode:[eventpoll]") ++count;
  }
  return count;
}

// What the server serves: Health/Check says SERVING (StartServer serves nothing without a service).
class Serving final : public grpc::health::v1::Health::CallbackService {
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx,
                                  const grpc::health::v1::HealthCheckRequest*,
                                  grpc::health::v1::HealthCheckResponse* response) override {
    response->set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    return rpc::Answer(ctx, grpc::Status::OK);
  }
};

TEST(PollReconnectTest, AReconnectionNoCallWaitsForCompletesItsTlsHandshake) {
  // As a trainer started with none of them set: before this process's first gRPC object. (With
  // GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS left at gRPC's 5 s, this test fails at 15 s.)
  for (const rpc::EnvironmentDefault& variable : rpc::PollForAFewConnections()) {
    unsetenv(variable.name);
  }
  rpc::PreferPollForAFewConnections();
  const int epolls_before = EpollDescriptors();

  char pattern[] = "/tmp/syncopate-poll-test-XXXXXX";
  const std::string root = mkdtemp(pattern);
  auto ca = cli::CertificateAuthority::Create(root + "/ca", rpc::kDefaultTrustDomain,
                                              absl::Hours(48), /*replace=*/false);
  ASSERT_TRUE(ca.ok()) << ca.status();
  ASSERT_TRUE(ca->Issue({Role::kStore, "store-0"}, root + "/store").ok());
  ASSERT_TRUE(ca->Issue({Role::kTrainer, "trainer-0"}, root + "/trainer").ok());
  absl::StatusOr<Credentials> store = Credentials::FromDirectory(root + "/store");
  absl::StatusOr<Credentials> trainer = Credentials::FromDirectory(root + "/trainer");
  ASSERT_TRUE(store.ok() && trainer.ok()) << store.status() << trainer.status();

  // A port that was free a moment ago, and is again once this server stops.
  Serving serving;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  ASSERT_TRUE(rpc::StartServer("127.0.0.1:0", {&serving}, *store, &server, &port).ok());
  server->Shutdown(std::chrono::system_clock::now());
  server.reset();

  std::shared_ptr<grpc::Channel> channel =
      rpc::MakeChannel(absl::StrCat("127.0.0.1:", port), *trainer, Role::kStore);
  EXPECT_FALSE(rpc::CheckHealth(*channel, absl::Milliseconds(300)).ok()) << "nothing listens yet";
  EXPECT_EQ(EpollDescriptors(), epolls_before) << "gRPC chose epoll: this test tests nothing";

  // The server comes up while the channel waits out its reconnect backoff; from here the channel
  // is asked every 200 ms, by calls of 50 ms, so that most of its handshake runs while no call
  // waits on it (as the coordinator asked its stores, once a second).
  int bound = 0;
  ASSERT_TRUE(
      rpc::StartServer(absl::StrCat("127.0.0.1:", port), {&serving}, *store, &server, &bound).ok());
  ASSERT_EQ(bound, port);
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  absl::Status health = rpc::CheckHealth(*channel, absl::Milliseconds(50));
  while (!health.ok() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(200));  // pacing the asks, not waiting for an event
    health = rpc::CheckHealth(*channel, absl::Milliseconds(50));
  }
  EXPECT_TRUE(health.ok()) << "still not connected after 15 s: " << health;
  server->Shutdown(std::chrono::system_clock::now());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace syncopate
