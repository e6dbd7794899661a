// End-to-end: the straggler modes (dssp, wbsp, wbsp-overlap, hybrid) under `syncopate local`, and
// `syncopate compare`, checked through reports and traces.
#include <fstream>
#include <sstream>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

// Round modes: every round's snapshot is the same bytes for every trainer on every shard, and the
// run trains to the target.
class RoundMode : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundMode, ReachesTargetWithIdenticalRoundSnapshots) {
  std::string mode = GetParam();
  std::replace(mode.begin(), mode.end(), '_', '-');
  const std::string dir = MakeTempDir(mode);
  const int status =
      RunLocal(dir, {"--mode=" + mode, "--trainers=3", "--store-shards=2", "--slowdown=1,1,6",
                     "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_EQ(summary["mode"], mode);
  EXPECT_TRUE(summary["reached_target"].get<bool>());
  // Rounds did close (wbsp-overlap, whose pushes batch several steps each, can reach the target in
  // under 20); ExpectIdenticalSnapshots below asks for more than 10 rounds shared by the pullers.
  EXPECT_GT(summary["rounds_closed"].get<int64_t>(), 10);
  // Hybrid rounds belong to one group; the others are pulled by every trainer.
  ExpectIdenticalSnapshots(dir, 3, 2, mode == "hybrid" ? 2 : 3);
  if (mode == "hybrid") {
    // The 6x slower trainer ends up in a group of its own, away from the two fast ones.
    std::map<int, int> group;
    for (const auto& t : summary["per_trainer"]) group[t["rank"]] = t["group"];
    EXPECT_EQ(group[0], group[1]);
    EXPECT_NE(group[0], group[2]);
  } else if (mode == "wbsp") {
    // Fast trainers run ahead: they never wait for the slow one's rounds. (Under wbsp-overlap a
    // clock counts pushes, which batch a varying number of steps, so it is not compared.)
    int64_t fast = 0, slow = 0;
    for (const auto& t : summary["per_trainer"]) {
      (t["rank"] == 2 ? slow : fast) = std::max<int64_t>(t["rank"] == 2 ? slow : fast, t["clock"]);
    }
    // Under BSP the clocks would be equal; 1.5x leaves room for a loaded machine, where the
    // CPU-bound fast trainers lose more to contention than the sleeping slow one.
    EXPECT_GT(fast, 3 * slow / 2) << "fast trainers should push far more often than the slow one";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RoundMode, ::testing::Values("wbsp", "wbsp_overlap", "hybrid"));

// --compression in a round mode and an immediate mode: the job trains to the target on
// compressed pushes (error feedback keeps what each leaves out), and the trainers' traces show the
// bytes they sent against the float32 deltas.
struct Compressed {
  const char* mode;
  const char* compression;
  double max_sent_share;  // of the float32 bytes
};
class CompressedPushes : public ::testing::TestWithParam<Compressed> {};

TEST_P(CompressedPushes, ReachTheTargetWithFewerBytes) {
  const Compressed c = GetParam();
  const std::string dir = MakeTempDir(std::string(c.mode) + "-compressed");
  const int status =
      RunLocal(dir, {std::string("--mode=") + c.mode, std::string("--compression=") + c.compression,
                     "--trainers=3", "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  EXPECT_TRUE(ReadJson(dir + "/summary.json")["reached_target"].get<bool>());
  double sent = 0, raw = 0;
  for (int rank = 0; rank < 3; ++rank) {
    for (const nlohmann::json& e : ReadTrace(dir, rank)) {
      if (e["event"] != "pushed") continue;
      sent += e["bytes"].get<double>();
      raw += e["raw_bytes"].get<double>();
    }
  }
  ASSERT_GT(raw, 0) << "no push traced; see " << dir;
  EXPECT_LE(sent / raw, c.max_sent_share) << c.compression << "; see " << dir;
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedPushes,
                         ::testing::Values(Compressed{"bsp", "bf16", 0.5},
                                           Compressed{"ssp", "fp16", 0.5},
                                           Compressed{"bsp", "topk:0.01", 0.03},
                                           Compressed{"asp", "topk:0.01", 0.03}));

TEST(ModesE2E, DsspStaysWithinItsUpperBoundAndUsesTheRange) {
  const std::string dir = MakeTempDir("dssp");
  const int status =
      RunLocal(dir, {"--mode=dssp", "--staleness=1", "--staleness-max=4", "--trainers=3",
                     "--slowdown=1,1,6", "--target-accuracy=0.99", "--time-limit=12s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  const int64_t max_gap = ExpectStalenessWithin(dir, 3, 4);
  // The controller let the fast trainers past s_lo = 1 (the slow one is 6x slower).
  EXPECT_GT(max_gap, 1);
  EXPECT_LE(max_gap, 4);
}

// In the regime of GPU clusters (steps of 100 ms and more, emulated by --step-time), a 4x slower
// trainer holds SSP's fast trainer at the bound: the straggler shows, not our own overhead.
TEST(ModesE2E, UnderEmulatedStepsSspIsHeldAtItsBound) {
  const std::string dir = MakeTempDir("ssp-step-time");
  const int status =
      RunLocal(dir, {"--mode=ssp", "--staleness=2", "--trainers=2", "--slowdown=1,4",
                     "--step-time=100ms", "--target-accuracy=0.99", "--time-limit=10s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  const int64_t max_gap = ExpectStalenessWithin(dir, 2, 2);
  EXPECT_EQ(max_gap, 2) << "the fast trainer should run into the bound; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  std::map<int, nlohmann::json> trainer;
  for (const auto& t : summary["per_trainer"]) trainer[t["rank"]] = t;
  ASSERT_EQ(trainer.size(), 2u);
  for (auto& [rank, t] : trainer) {
    EXPECT_GT(t["emulated_compute_seconds"].get<double>(), 0) << rank;
    EXPECT_LE(t["emulated_compute_seconds"].get<double>(), t["compute_seconds"].get<double>());
  }
  auto compute_per_step = [](const nlohmann::json& t) {
    return t["compute_seconds"].get<double>() / std::max<int64_t>(1, t["clock"].get<int64_t>());
  };
  // Steps of at least 100 ms and 400 ms: the slow one's are the longer, and the fast one waits.
  EXPECT_GT(compute_per_step(trainer[1]), compute_per_step(trainer[0]));
  EXPECT_GT(trainer[0]["wait_seconds"].get<double>(), 0);
  EXPECT_GT(summary["overhead_per_step_seconds"].get<double>(), 0);
}

TEST(CompareE2E, RunsEveryModeAndWritesOneReport) {
  const std::string dir = MakeTempDir("compare");
  const int status = RunSyncopate("compare", dir,
                                  {"--modes=bsp,wbsp-overlap", "--trainers=2", "--slowdown=1,3",
                                   "--target-accuracy=0.99", "--time-limit=8s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  for (const std::string mode : {"bsp", "wbsp-overlap"}) {
    nlohmann::json summary = ReadJson(dir + "/" + mode + "/summary.json");
    ASSERT_FALSE(summary.is_discarded()) << mode;
    EXPECT_EQ(summary["mode"], mode);
  }
  const std::vector<std::map<std::string, std::string>> rows = ReadCsv(dir + "/compare.csv");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("runs"), "1");
    EXPECT_EQ(row.at("learning_rate"), "0.1");
    const double ratio = std::stod(row.at("compute_time_ratio"));
    EXPECT_GT(ratio, 0) << row.at("mode");
    EXPECT_LE(ratio, 1) << row.at("mode");
    EXPECT_GT(std::stod(row.at("overhead_per_step_seconds")), 0) << row.at("mode");
  }
  std::ifstream svg(dir + "/compare.svg");
  std::stringstream picture;
  picture << svg.rdbuf();
  EXPECT_NE(picture.str().find("<svg"), std::string::npos) << "no picture; see " << dir;
  EXPECT_NE(picture.str().find("wbsp-overlap"), std::string::npos);
}

// --repeats and --lr-sweep: every (rate, seed) runs in its own directory; compare.csv reports each
// mode once, at the rate that did best, over its seeds; compare-runs.csv lists every run.
TEST(CompareE2E, RepeatsAndSweepsRunEveryRateAndSeedAndReportTheBest) {
  const std::string dir = MakeTempDir("compare-sweep");
  const int status =
      RunSyncopate("compare", dir,
                   {"--modes=asp", "--trainers=2", "--repeats=2", "--lr-sweep=0.02,0.2", "--seed=7",
                    "--target-accuracy=0.99", "--time-limit=4s"});
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  for (const std::string rate : {"0.02", "0.2"}) {
    for (const std::string seed : {"7", "8"}) {
      nlohmann::json summary =
          ReadJson(absl::StrCat(dir, "/asp/lr-", rate, "/seed-", seed, "/summary.json"));
      EXPECT_EQ(summary["mode"], "asp") << rate << " " << seed;
    }
  }
  const std::vector<std::map<std::string, std::string>> modes = ReadCsv(dir + "/compare.csv");
  ASSERT_EQ(modes.size(), 1u);
  EXPECT_EQ(modes[0].at("runs"), "2");
  const std::vector<std::map<std::string, std::string>> runs = ReadCsv(dir + "/compare-runs.csv");
  ASSERT_EQ(runs.size(), 4u);
  // The reported rate is the one whose runs ended more accurate (neither reaches 0.99 in 4 s).
  std::map<std::string, double> accuracy;
  for (const auto& run : runs)
    accuracy[run.at("learning_rate")] += std::stod(run.at("final_accuracy"));
  const std::string best = accuracy["0.2"] > accuracy["0.02"] ? "0.2" : "0.02";
  EXPECT_EQ(modes[0].at("learning_rate"), best);
  std::ifstream band(dir + "/asp/band.csv");
  std::string header;
  std::getline(band, header);
  EXPECT_EQ(header, "seconds,median,min,max");
}

TEST(CompareE2E, BadModeListIsAClearErrorAndRunsNothing) {
  const std::string dir = MakeTempDir("compare-bad") + "/report";
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=bsp,bogus"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=bsp,bsp"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=wbsp", "--aggregation=median"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=asp", "--aggregation=mean"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=bsp", "--repeats=0"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=bsp", "--lr-sweep=0.1,0.1"})), 2);
  EXPECT_EQ(ExitCode(RunSyncopate("compare", dir, {"--modes=bsp", "--lr-sweep=0.1,-1"})), 2);
  std::ifstream report(dir + "/compare.csv");
  EXPECT_FALSE(report.good()) << "nothing may run for bad flags";
}

}  // namespace
}  // namespace syncopate::e2e
