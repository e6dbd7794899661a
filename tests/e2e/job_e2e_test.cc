// End-to-end: the binaries run by hand, as Kubernetes runs them. With --target-accuracy and
// --exit-when-done the coordinator ends the job: it tells every trainer it is done, the trainers
// leave and exit 0, then the coordinator exits 0.
#include <signal.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "base/ready_file.h"
#include "cli/child_process.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

using cli::ChildProcess;

// Starts syncopate-<binary> with `args`, its output in DIR/<name>.log.
std::unique_ptr<ChildProcess> Spawn(const std::string& dir, const std::string& binary,
                                    const std::string& name, std::vector<std::string> args) {
  return StartBinary("syncopate-" + binary, std::move(args), dir + "/" + name + ".log");
}

// docs/cli.md, "Running the pieces yourself": a CA and a certificate per process, made with
// `syncopate certs`, in DIR/tls/<name>.
void IssueCertificates(const std::string& dir, const std::vector<std::string>& names) {
  const std::string tls = dir + "/tls";
  ASSERT_EQ(ExitCode(RunBinary("syncopate", {"certs", "ca", "--ca-dir=" + tls + "/ca"},
                               dir + "/certs-ca.out")),
            0);
  for (const std::string& name : names) {
    const std::string role = name.substr(0, name.find('-'));
    const std::string log = dir + "/certs-" + name + ".out";
    ASSERT_EQ(ExitCode(RunBinary("syncopate",
                                 {"certs", "issue", "--ca-dir=" + tls + "/ca", "--role=" + role,
                                  "--name=" + name, "--out=" + tls + "/" + name},
                                 log)),
              0)
        << Read(log);
  }
}

TEST(JobE2E, CoordinatorEndsTheJobAndEveryTrainerExitsZero) {
  const std::string dir = MakeTempDir("job");
  IssueCertificates(dir, {"store-0", "coordinator-0", "trainer-0", "trainer-1"});
  // A process given another role's certificate says so and stops at once.
  const int misplaced = RunBinary("syncopate-store",
                                  {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                   "--tls-dir=" + dir + "/tls/trainer-0"},
                                  dir + "/misplaced.log");
  EXPECT_EQ(ExitCode(misplaced), 2);
  EXPECT_NE(Read(dir + "/misplaced.log").find("needs a store certificate"), std::string::npos)
      << Read(dir + "/misplaced.log");
  auto store =
      Spawn(dir, "store", "store",
            {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
             "--tls-dir=" + dir + "/tls/store-0", "--ready-file=" + dir + "/store.ready.json"});
  ASSERT_NE(store, nullptr);
  absl::StatusOr<base::ReadyInfo> store_ready =
      base::WaitForReadyFile(dir + "/store.ready.json", absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(store_ready.ok()) << store_ready.status();
  auto coordinator = Spawn(dir, "coordinator", "coordinator",
                           {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                            absl::StrCat("--stores=127.0.0.1:", store_ready->grpc_port),
                            "--tls-dir=" + dir + "/tls/coordinator-0", "--mode=ssp",
                            "--min-trainers=2", "--target-accuracy=0.75", "--exit-when-done",
                            "--ready-file=" + dir + "/coordinator.ready.json"});
  ASSERT_NE(coordinator, nullptr);
  absl::StatusOr<base::ReadyInfo> coordinator_ready =
      base::WaitForReadyFile(dir + "/coordinator.ready.json", absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(coordinator_ready.ok()) << coordinator_ready.status();
  std::vector<std::unique_ptr<ChildProcess>> trainers;
  for (int r = 0; r < 2; ++r) {
    trainers.push_back(
        Spawn(dir, "trainer", absl::StrCat("trainer-", r),
              {absl::StrCat("--coordinator=127.0.0.1:", coordinator_ready->grpc_port),
               absl::StrCat("--rank=", r), "--world=2", "--metrics-listen=127.0.0.1:0",
               absl::StrCat("--tls-dir=", dir, "/tls/trainer-", r), "--eval-interval=0.5s"}));
    ASSERT_NE(trainers.back(), nullptr);
  }
  // Nobody is stopped from outside: the job must end by itself (deadline, not a timing check).
  for (int r = 0; r < 2; ++r) {
    std::optional<int> status = trainers[r]->Wait(absl::Minutes(3));
    ASSERT_TRUE(status.has_value()) << "trainer " << r << " never finished; see " << dir;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "trainer " << r << ": " << cli::DescribeExit(*status);
  }
  std::optional<int> status = coordinator->Wait(absl::Seconds(30));
  ASSERT_TRUE(status.has_value()) << "coordinator did not exit after the job; see " << dir;
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << cli::DescribeExit(*status);
  store->Stop(absl::Seconds(10));
}

}  // namespace
}  // namespace syncopate::e2e
