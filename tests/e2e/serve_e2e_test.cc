// End-to-end: `syncopate serve` and trainers started by hand in their own processes, as on
// several hosts: each trainer takes its settings from RUN_DIR/trainer-<r>.env and its certificate
// from RUN_DIR/tls/trainer-<r>; the job trains to its target; a second process under a live
// trainer's name is refused; a --listen address in use is refused before anything starts.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

// Starts the built-in trainer as a user would on another host: `. trainer-<rank>.env` first.
std::unique_ptr<cli::ChildProcess> StartTrainerByHand(const std::string& dir, int rank,
                                                      const std::string& extra = "") {
  const std::string command =
      absl::StrCat(". '", dir, "/trainer-", rank, ".env' && ", extra, " exec '", BinDir(),
                   "/syncopate-trainer' --step-time=20ms");
  auto p = cli::ChildProcess::Spawn(
      {"/bin/sh", "-c", command}, {{"OPENBLAS_NUM_THREADS", "1"}},
      absl::StrCat(dir, "-trainer-", rank, extra.empty() ? "" : "-again", ".log"));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(ServeE2E, TrainersStartedByHandTrainToTheTargetAndANameIsNotTakenTwice) {
  const std::string dir = MakeTempDir("serve");
  auto serve = StartSyncopate("serve", dir,
                              {"--mode=bsp", "--trainers=2", "--listen=127.0.0.1:0",
                               "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_NE(serve, nullptr);
  ASSERT_TRUE(PollUntil([&] { return !Read(dir + "/trainer-1.env").empty(); }, absl::Seconds(60)))
      << "no trainer settings; see " << dir << ".out";
  const std::string env = Read(dir + "/trainer-1.env");
  EXPECT_TRUE(absl::StrContains(env, "export SYNCOPATE_NAME='trainer-1'")) << env;
  EXPECT_TRUE(absl::StrContains(env, "export SYNCOPATE_TLS_DIR='" + dir + "/tls/trainer-1'"))
      << env;
  auto first = StartTrainerByHand(dir, 0);
  auto second = StartTrainerByHand(dir, 1);
  ASSERT_TRUE(first && second);
  // Once trainer 1 trains, another process under its name and rank is refused, saying why.
  ASSERT_TRUE(PollUntil(
      [&] { return Read(dir + "-trainer-1.log").find("joined bsp job") != std::string::npos; },
      absl::Seconds(60)))
      << Read(dir + "-trainer-1.log");
  auto again = StartTrainerByHand(dir, 1, "true;");
  ASSERT_NE(again, nullptr);
  const std::optional<int> refused = again->Wait(absl::Minutes(1));
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(ExitCode(*refused), 0);
  EXPECT_TRUE(absl::StrContains(Read(dir + "-trainer-1-again.log"), "is held by a live trainer"))
      << Read(dir + "-trainer-1-again.log");

  const std::optional<int> status = serve->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "serve did not finish; see " << dir;
  EXPECT_EQ(ExitCode(*status), 0) << cli::DescribeExit(*status) << "\n" << Read(dir + ".out");
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  EXPECT_EQ(summary["per_trainer"].size(), 2u) << summary.dump();
  EXPECT_EQ(summary["model"]["files"].size(), 2u) << summary["model"].dump();
}

TEST(ServeE2E, AnAddressInUseIsRefusedBeforeAnythingStarts) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string dir = MakeTempDir("serve-busy");
  const int status = RunSyncopate(
      "serve", dir + "/run",
      {"--mode=bsp", "--trainers=1", absl::StrCat("--listen=127.0.0.1:", ntohs(address.sin_port))});
  close(fd);
  EXPECT_EQ(ExitCode(status), 2);
  EXPECT_TRUE(absl::StrContains(Read(dir + "/run.out"), "Address already in use"))
      << Read(dir + "/run.out");
  EXPECT_EQ(access((dir + "/run").c_str(), F_OK), -1) << "nothing is made";
}

}  // namespace
}  // namespace syncopate::e2e
