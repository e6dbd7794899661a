// End-to-end: `syncopate local` run as a user would, checked through its report, traces and exit.
#include <signal.h>

#include <algorithm>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "compute/cuda_backend.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

TEST(LocalE2E, BspReachesTargetWithIdenticalSnapshotsOnEveryShard) {
  const std::string dir = MakeTempDir("bsp");
  const int status = RunLocal(dir, {"--mode=bsp", "--trainers=3", "--store-shards=2",
                                    "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_EQ(summary["mode"], "bsp");
  EXPECT_TRUE(summary["reached_target"].get<bool>());
  EXPECT_GE(summary["final_accuracy"].get<double>(), 0.80);
  EXPECT_GT(summary["time_to_target_seconds"].get<double>(), 0);
  ASSERT_EQ(summary["per_trainer"].size(), 3u);
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_GT(t["compute_time_ratio"].get<double>(), 0);
    EXPECT_LE(t["compute_time_ratio"].get<double>(), 1);
  }
  ExpectIdenticalSnapshots(dir, 3, 2, 3);
}

TEST(LocalE2E, SspNeverExceedsTheStalenessBound) {
  const std::string dir = MakeTempDir("ssp");
  const int status =
      RunLocal(dir, {"--mode=ssp", "--staleness=2", "--trainers=3", "--slowdown=1,1,6",
                     "--target-accuracy=0.99", "--time-limit=12s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  const int64_t max_gap = ExpectStalenessWithin(dir, 3, 2);
  // Not vacuous: the fast trainers did run ahead of the slow one, up to the bound.
  EXPECT_EQ(max_gap, 2);
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_FALSE(summary["reached_target"].get<bool>());
  EXPECT_TRUE(summary["time_to_target_seconds"].is_null());
}

class KillTrainer : public ::testing::TestWithParam<std::string> {};

TEST_P(KillTrainer, OthersContinueAndTheRunFinishes) {
  std::string mode = GetParam();  // test names cannot hold '-'
  std::replace(mode.begin(), mode.end(), '_', '-');
  const std::string dir = MakeTempDir("kill-" + mode);
  auto local = StartLocal(dir, {"--mode=" + mode, "--trainers=3", "--target-accuracy=0.99",
                                "--time-limit=12s", "--eviction-timeout=3s"});
  ASSERT_NE(local, nullptr);
  // Wait (bounded) until trainer 2 is training, then kill it hard.
  const int victim =
      PidOnceTraining(dir, 2, [](const std::string& d) { return ReadTrace(d, 2).size() > 30; });
  ASSERT_NE(victim, 0) << "trainer 2 never trained; see " << dir;
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const int64_t killed_at = [&] {
    int64_t clock = 0;
    for (const auto& e : ReadTrace(dir, 0)) {
      if (e["event"] == "pushed") clock = e["clock"];
    }
    return clock;
  }();
  std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "run did not finish";
  EXPECT_EQ(ExitCode(*status), 4) << "a run that lost a trainer exits 4; "
                                  << cli::DescribeExit(*status);
  ExpectOthersWentOnAfterTheKill(dir, 2, killed_at);
  ExpectEvictionReported(dir, 2);
  // Round modes: rounds kept closing without the dead trainer (its eviction released them).
  auto last_round = [&](int rank) {
    int64_t round = -1;
    for (const auto& e : ReadTrace(dir, rank)) {
      if (e["event"] == "pull" && e.contains("round")) round = std::max<int64_t>(round, e["round"]);
    }
    return round;
  };
  if (mode != "asp" && mode != "ssp" && mode != "dssp") {
    EXPECT_GT(last_round(0), last_round(2) + 10) << "rounds stopped closing after the kill";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMode, KillTrainer,
                         ::testing::Values("bsp", "asp", "ssp", "dssp", "wbsp", "wbsp_overlap",
                                           "hybrid"));

TEST(LocalE2E, CtrlCStopsEveryProcessAndStillReports) {
  const std::string dir = MakeTempDir("sigint");
  auto local = StartLocal(
      dir, {"--mode=bsp", "--trainers=2", "--time-limit=300s", "--target-accuracy=0.99"});
  ASSERT_NE(local, nullptr);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline && ReadTrace(dir, 1).size() < 10) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  nlohmann::json cluster = ReadJson(dir + "/cluster.json");
  ASSERT_FALSE(cluster.is_discarded());
  local->Signal(SIGINT);
  std::optional<int> status = local->Wait(absl::Seconds(60));
  ASSERT_TRUE(status.has_value()) << "Ctrl-C did not stop the run";
  EXPECT_EQ(ExitCode(*status), 130);
  for (const auto& p : cluster["processes"]) {
    EXPECT_NE(kill(p["pid"].get<int>(), 0), 0) << p["role"] << " still running";
  }
  EXPECT_TRUE(ReadJson(dir + "/summary.json")["interrupted"].get<bool>());
}

TEST(LocalE2E, RepeatedSigtermStillLeavesCleanly) {
  const std::string dir = MakeTempDir("sigterm");
  // Trainer 1 is slowed so that each of its steps takes seconds. The first signal arrives at the
  // start of its first step (its trace's first event comes just before it), so the trainer is
  // still finishing that step, not yet leaving, when the second arrives.
  auto local = StartLocal(dir, {"--mode=bsp", "--trainers=2", "--slowdown=1,1000",
                                "--target-accuracy=0.99", "--time-limit=10s"});
  ASSERT_NE(local, nullptr);
  const int victim =
      PidOnceTraining(dir, 1, [](const std::string& d) { return !ReadTrace(d, 1).empty(); });
  ASSERT_NE(victim, 0) << "trainer 1 never trained; see " << dir;
  // A supervisor may repeat itself: two SIGTERMs must still end in a clean Leave, not a crash.
  // The second is sent once the trainer has logged taking the first (two pending SIGTERMs would
  // merge into one), and the trainer must log taking it too.
  const std::string log = dir + "/trainer-1.log";
  auto logged = [&](const std::string& line) {
    return PollUntil(
        [&] { return base::ReadFile(log).value_or("").find(line) != std::string::npos; },
        absl::Seconds(30), absl::Milliseconds(10));
  };
  ASSERT_EQ(kill(victim, SIGTERM), 0);
  ASSERT_TRUE(logged("termination signal: finishing the current step and leaving")) << log;
  ASSERT_EQ(base::ReadFile(log).value_or("").find("leaving after"), std::string::npos)
      << "the trainer left before the second signal could be sent (a step shorter than this "
         "test assumes); see "
      << log;
  ASSERT_EQ(kill(victim, SIGTERM), 0);
  EXPECT_TRUE(logged("termination signal again: already leaving"))
      << "the second SIGTERM was not seen while the first was handled; see " << log;
  std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "run did not finish";
  EXPECT_EQ(ExitCode(*status), 0) << cli::DescribeExit(*status);
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_EQ(summary["per_trainer"].size(), 2u);
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_EQ(t["state"], t["rank"] == 1 ? "left" : "live") << "rank " << t["rank"];
  }
}

TEST(LocalE2E, ScaleEventsAddAndRemoveTrainersWhileTheRunContinues) {
  const std::string dir = MakeTempDir("scale");
  // The newcomer has 16 s to start, join and train before it is removed: starting it (loading the
  // data set) took over 8 s on a loaded 2-core machine.
  const int status = RunLocal(dir, {"--mode=bsp", "--trainers=2", "--scale-events=3s:+1,19s:-1",
                                    "--target-accuracy=0.99", "--time-limit=26s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_EQ(summary["per_trainer"].size(), 3u) << "the added trainer must appear";
  std::map<int, nlohmann::json> by_rank;
  for (const auto& t : summary["per_trainer"]) by_rank[t["rank"]] = t;
  // The added trainer joined the running BSP job (from the current round, not clock 0), trained,
  // and was removed with SIGTERM: it left cleanly rather than being evicted.
  EXPECT_EQ(by_rank[2]["state"], "left");
  int64_t first_start = -1;
  for (const auto& e : ReadTrace(dir, 2)) {
    if (e["event"] == "start") {
      first_start = e["clock"];
      break;
    }
  }
  EXPECT_GT(first_start, 0) << "the newcomer should start at the current round";
  EXPECT_GT(by_rank[2]["clock"].get<int64_t>(), first_start + 20) << "the newcomer never trained";
  // The others kept going after it left.
  for (int r : {0, 1}) {
    EXPECT_EQ(by_rank[r]["state"], "live");
    EXPECT_GT(by_rank[r]["clock"].get<int64_t>(), by_rank[2]["clock"].get<int64_t>() + 50);
  }
}

TEST(LocalE2E, BadFlagsAreClearErrors) {
  const std::string dir = MakeTempDir("bad");
  EXPECT_EQ(ExitCode(RunLocal(dir + "/a", {"--mode=bogus", "--trainers=2"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/b", {"--trainers=3", "--slowdown=1,2"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/b2", {"--trainers=2", "--slowdown=1,2000"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/c", {"--time-limit=soon"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/d", {"--trainers=1", "--scale-events=5s:-1"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/e", {"--trainers=2", "--device=cpu,cpu,cuda"})), 2);
  EXPECT_EQ(ExitCode(RunLocal(dir + "/f", {"--trainers=2", "--device=cpu,cuda:x"})), 2);
}

// `syncopate advise probe` runs the job briefly under asp and under wbsp, measures each trainer's
// speed, fits the staleness tolerance to the two runs, and advises on what it measured: two
// trainers 3x apart come out as slowdowns 1 and about 3.
TEST(LocalE2E, AdviseProbeMeasuresTheClusterItAdvisesOn) {
  const std::string dir = MakeTempDir("advise-probe");
  const std::string log = dir + ".out";
  const int status = RunBinary("syncopate",
                               {"advise", "probe", "--report-dir=" + dir, "--trainers=2",
                                "--slowdown=1,3", "--step-time=20ms", "--time-limit=2s"},
                               log, absl::Minutes(2));
  const std::string out = Read(log);
  ASSERT_EQ(ExitCode(status), 0) << out;
  EXPECT_NE(out.find("probe (asp):"), std::string::npos) << out;
  EXPECT_NE(out.find("probe (wbsp):"), std::string::npos) << out;
  // Fitted, or said why not (a short run may not tell).
  EXPECT_TRUE(std::regex_search(out, std::regex("staleness tolerance (fitted to the probe: [0-9.]+ "
                                                "steps|not fitted \\(.+\\): [0-9.]+ steps)")))
      << out;
  std::smatch measured;
  ASSERT_TRUE(std::regex_search(out, measured, std::regex("slowdowns 1,([0-9.]+), ([0-9]+)-byte")))
      << out;
  EXPECT_NEAR(std::stod(measured[1]), 3, 0.5) << out;
  EXPECT_EQ(measured[2], "407080") << "the MLP's 101,770 float32 parameters";
  EXPECT_NE(out.find("recommended: --mode="), std::string::npos) << out;
  EXPECT_EQ(ExitCode(RunBinary("syncopate", {"advise", "probe", "--trainers=2", "--time-limit=x"},
                               dir + "/bad.out")),
            2);
}

// Where no GPU can be used, asking for one stops the start-up at once, naming the reason (on a
// GPU machine gpu_e2e_test runs a CUDA trainer instead). Where CUDA is built, the trainer loaded
// the plugin, so the reason is the device's, not a missing backend.
TEST(LocalE2E, CudaWithoutAUsableGpuFailsWithTheReason) {
  const absl::Status usable = compute::CudaDeviceStatus();
  if (usable.ok()) GTEST_SKIP() << "a GPU is usable here";
#ifdef SYNCOPATE_EXPECT_CUDA_PLUGIN
  EXPECT_TRUE(compute::CudaPluginStatus().ok()) << compute::CudaPluginStatus();
#endif
  const std::string dir = MakeTempDir("no-gpu");
  const int status =
      RunLocal(dir, {"--trainers=2", "--device=cpu,cuda", "--time-limit=60s"}, absl::Seconds(60));
  EXPECT_EQ(ExitCode(status), 1) << cli::DescribeExit(status);
  const std::string log = base::ReadFile(dir + "/trainer-1.log").value_or("");
  EXPECT_NE(log.find(std::string(usable.message())), std::string::npos) << log;
}

}  // namespace
}  // namespace syncopate::e2e
