// End-to-end: `syncopate local` runs mutual TLS by default (docs/security.md), and re-issuing every
// certificate of a running job, as a rotated Kubernetes Secret does, neither breaks the job nor
// leaves the old certificates in use.
#include <signal.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

// Runs `command` through /bin/sh; its standard output, or "" when it fails.
std::string Shell(const std::string& command, const std::string& log) {
  auto process =
      cli::ChildProcess::Spawn({"/bin/sh", "-c", command + " >" + log + ".out"}, {}, log);
  if (!process.ok()) return "";
  const int status = (*process)->WaitOrKill(absl::Seconds(30));
  if (ExitCode(status) != 0) return "";
  return std::string(absl::StripAsciiWhitespace(Read(log + ".out")));
}

// The serial of the certificate in `cert_file`.
std::string SerialOf(const std::string& cert_file, const std::string& log) {
  return Shell("openssl x509 -noout -serial -in " + cert_file, log);
}

// The serial of the certificate the server on `port` presents to a new connection, made with the
// operator's certificate in `tls` (the run's tls/ folder).
std::string PresentedSerial(int port, const std::string& tls, const std::string& log) {
  return Shell(absl::StrCat("openssl s_client -connect 127.0.0.1:", port, " -cert ", tls,
                            "/operator/tls.crt -key ", tls, "/operator/tls.key -CAfile ", tls,
                            "/ca/ca.crt </dev/null 2>/dev/null | openssl x509 -noout -serial"),
               log);
}

TEST(TlsE2E, CertificatesRotateWhileTheJobRuns) {
  const std::string dir = MakeTempDir("rotation");
  const std::string tls = dir + "/tls";
  auto local = StartLocal(dir, {"--mode=ssp", "--trainers=2", "--slowdown=1,2",
                                "--target-accuracy=0.99", "--time-limit=25s"});
  ASSERT_NE(local, nullptr);
  std::map<std::string, int> ports;  // "store-0", "coordinator-0" -> gRPC port
  auto training = [&](const std::string& d) {
    const nlohmann::json cluster = ReadJson(d + "/cluster.json");  // written once all started
    if (cluster.is_discarded()) return false;
    for (const auto& p : cluster["processes"]) {
      if (p["role"] != "trainer") {
        ports[absl::StrCat(p["role"].get<std::string>(), "-", p["index"].get<int>())] =
            p["grpc_port"].get<int>();
      }
    }
    return ReadTrace(d, 1).size() > 6;
  };
  ASSERT_NE(PidOnceTraining(dir, 1, training), 0) << "trainer 1 never trained; see " << dir;
  ASSERT_EQ(ports.count("store-0"), 1u);
  const std::string old_serial = SerialOf(tls + "/store-0/tls.crt", dir + "/serial-old");
  ASSERT_FALSE(old_serial.empty());
  EXPECT_EQ(PresentedSerial(ports["store-0"], tls, dir + "/presented-old"), old_serial);
  const size_t clocks_before = ReadTrace(dir, 0).size();

  // Every certificate re-issued in place by the run's CA, as cert-manager renews a Secret.
  const std::map<std::string, std::pair<std::string, std::string>> identities = {
      {"store-0", {"store", "store-0"}},
      {"coordinator-0", {"coordinator", "coordinator-0"}},
      {"trainer-0", {"trainer", "trainer-0"}},
      {"trainer-1", {"trainer", "trainer-1"}},
      {"operator", {"operator", "local"}}};
  for (const auto& [folder, identity] : identities) {
    const std::string log = absl::StrCat(dir, "/issue-", folder, ".out");
    ASSERT_EQ(
        ExitCode(RunBinary("syncopate",
                           {"certs", "issue", "--ca-dir=" + tls + "/ca", "--role=" + identity.first,
                            "--name=" + identity.second, "--out=" + tls + "/" + folder},
                           log)),
        0)
        << Read(log);
  }
  const std::string new_serial = SerialOf(tls + "/store-0/tls.crt", dir + "/serial-new");
  ASSERT_FALSE(new_serial.empty());
  ASSERT_NE(new_serial, old_serial);

  // The store re-reads its files (every 10 s) and presents the new certificate to new connections
  // (the poll's deadline ends well before the run's time limit).
  std::string presented;
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (absl::Now() < deadline) {
    presented = PresentedSerial(ports["store-0"], tls, dir + "/presented-new");
    if (presented == new_serial) break;
    absl::SleepFor(absl::Milliseconds(200));  // the poll's pace, not a synchronisation
  }
  EXPECT_EQ(presented, new_serial) << "the store still presents " << presented;
  // A client holding a rotated certificate is let in.
  const std::string status_log = dir + "/status.out";
  EXPECT_EQ(ExitCode(RunBinary(
                "syncopate",
                {"status", absl::StrCat("--coordinator=127.0.0.1:", ports["coordinator-0"]),
                 "--tls-dir=" + tls + "/operator"},
                status_log)),
            0)
      << Read(status_log);

  const std::optional<int> exit = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(exit.has_value()) << "syncopate local still running; see " << dir;
  EXPECT_EQ(ExitCode(*exit), 0) << cli::DescribeExit(*exit) << "; see " << dir;
  // Training went on after the rotation: no trainer was lost, and trainer 0 kept stepping.
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  for (const auto& t : summary["per_trainer"]) EXPECT_EQ(t["state"], "live") << t.dump();
  EXPECT_GT(ReadTrace(dir, 0).size(), clocks_before + 20);
}

TEST(TlsE2E, InsecureRunsSayItAndMakeNoCertificates) {
  const std::string dir = MakeTempDir("insecure");
  const int status = RunLocal(dir, {"--mode=asp", "--trainers=2", "--insecure",
                                    "--target-accuracy=0.7", "--time-limit=60s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  EXPECT_TRUE(ReadJson(dir + "/summary.json")["reached_target"].get<bool>());
  EXPECT_FALSE(std::filesystem::exists(dir + "/tls"));
  for (const char* process : {"store-0", "coordinator-0", "trainer-0"}) {
    EXPECT_NE(Read(absl::StrCat(dir, "/", process, ".log")).find("--insecure: no TLS"),
              std::string::npos)
        << process;
  }
}

}  // namespace
}  // namespace syncopate::e2e
