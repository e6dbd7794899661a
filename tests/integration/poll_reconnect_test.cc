// A trainer's gRPC, set up as syncopate-trainer sets it up (rpc::PreferPollForAFewConnections: the
// poll(2) engine), reconnects over mutual TLS to a server that refused its first connection. Under
// poll nothing polls a connection that no call waits on but gRPC's backup poller, so a reconnection
// started by the channel's own timer once timed out in its TLS handshake again and again: the
// netns test's coordinator never reached its store (bench/docs/bsp-round.md). With
// the backup poll at gRPC's default (drop it from rpc::PollEnvironment) this test fails. Its own
// binary: the environment must be set before this process's gRPC first polls.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/certificates.h"
#include "gtest/gtest.h"
#include "held_port.h"
#include "rpc/credentials.h"
#include "rpc/grpc_util.h"
#include "rpc/poll_engine.h"
#include "syncopate/v1/peer.grpc.pb.h"

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

class PollReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/syncopate-poll-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    if (!root_.empty()) std::filesystem::remove_all(root_);
  }

  std::string root_;
};

TEST_F(PollReconnectTest, AReconnectionNoCallWaitsForCompletesItsTlsHandshake) {
  // As a trainer started with neither variable set.
  unsetenv(rpc::kPollStrategyVariable);
  unsetenv(rpc::kBackupPollVariable);
  rpc::PreferPollForAFewConnections();

  auto ca = cli::CertificateAuthority::Create(root_ + "/ca", rpc::kDefaultTrustDomain,
                                              absl::Hours(48), /*replace=*/false);
  ASSERT_TRUE(ca.ok()) << ca.status();
  ASSERT_TRUE(ca->Issue({Role::kStore, "store-0"}, root_ + "/store").ok());
  ASSERT_TRUE(ca->Issue({Role::kTrainer, "trainer-0"}, root_ + "/trainer").ok());
  absl::StatusOr<Credentials> store = Credentials::FromDirectory(root_ + "/store");
  absl::StatusOr<Credentials> trainer = Credentials::FromDirectory(root_ + "/trainer");
  ASSERT_TRUE(store.ok() && trainer.ok()) << store.status() << trainer.status();

  int port = 0;
  const int held = testing::HoldPort(&port);
  ASSERT_GE(held, 0) << "no loopback port to hold";
  std::shared_ptr<grpc::Channel> channel =
      rpc::MakeChannel(absl::StrCat("127.0.0.1:", port), *trainer, Role::kStore);
  EXPECT_FALSE(rpc::CheckHealth(*channel, absl::Milliseconds(300)).ok()) << "nothing listens yet";

  // The server comes up while the channel waits out its reconnect backoff. From then on the
  // channel is asked every 200 ms by a fail-fast call of 50 ms; while it reconnects such a call
  // fails at once, so no call waits on the handshake (as the coordinator asked its stores, once
  // a second). It must connect well within one default backup poll interval (5 s).
  // Something to serve (StartServer starts no server without a service); gRPC's default health
  // service, which StartServer enables, answers the health checks.
  v1::Peer::CallbackService serving;
  std::unique_ptr<grpc::Server> server;
  int bound = 0;
  const absl::Status started =
      rpc::StartServer(absl::StrCat("127.0.0.1:", port), {&serving}, *store, &server, &bound);
  close(held);
  ASSERT_TRUE(started.ok()) << started;
  ASSERT_EQ(bound, port);
  const absl::Time up = absl::Now();
  absl::Status health = rpc::CheckHealth(*channel, absl::Milliseconds(50));
  while (!health.ok() && absl::Now() < up + absl::Seconds(4)) {
    absl::SleepFor(absl::Milliseconds(200));  // pacing the asks, not waiting for an event
    health = rpc::CheckHealth(*channel, absl::Milliseconds(50));
  }
  EXPECT_TRUE(health.ok()) << "not connected " << absl::Now() - up
                           << " after the server came up: " << health;
  // Checked last: gRPC picks its engine when it first polls, not when it starts.
  EXPECT_EQ(EpollDescriptors(), 0) << "gRPC chose epoll: this test tested nothing";
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace syncopate
