// End-to-end: the user's own PyTorch training loop (examples/pytorch/train.py, through the Python
// package over the client library) as the trainers of `syncopate local`, alone and beside the
// built-in trainer, under store modes and a peer-to-peer mode.
#include <signal.h>

#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

std::string TrainCommand(const std::string& model) {
  return "exec /usr/bin/python3 " + std::string(SYNCOPATE_SOURCE_DIR) +
         "/examples/pytorch/train.py --model=" + model;
}

// Three PyTorch trainers under bsp: they reach the target, and every round's snapshot is the same
// bytes on both shards for every trainer.
TEST(PyTorchE2E, BspReachesTheTargetWithIdenticalRounds) {
  const std::string dir = MakeTempDir("pytorch-bsp");
  const int status = RunLocal(
      dir,
      {"--mode=bsp", "--trainers=3", "--store-shards=2", "--slowdown=1,1,2",
       "--trainer-command=" + TrainCommand("cnn"), "--target-accuracy=0.80", "--time-limit=150s"},
      absl::Minutes(4));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  ExpectIdenticalSnapshots(dir, 3, 2, 3);
}

class PyTorchMode : public ::testing::TestWithParam<std::string> {};

TEST_P(PyTorchMode, ReachesTheTarget) {
  std::string mode = GetParam();
  std::replace(mode.begin(), mode.end(), '_', '-');
  const std::string dir = MakeTempDir("pytorch-" + mode);
  const int status = RunLocal(
      dir,
      {"--mode=" + mode, "--trainers=3", "--slowdown=1,1,3",
       "--trainer-command=" + TrainCommand("mlp"), "--target-accuracy=0.80", "--time-limit=120s"},
      absl::Minutes(4));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  if (mode == "dssync") {
    // train.py evaluates the final average and closes with its accuracy.
    EXPECT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PyTorchMode, ::testing::Values("wbsp_overlap", "dssp", "dssync"));

// Two built-in trainers and one PyTorch trainer train one model (the example's mlp has the
// built-in MLP's tensors).
TEST(PyTorchE2E, MixedWithBuiltInTrainersReachesTheTarget) {
  const std::string dir = MakeTempDir("pytorch-mixed");
  const int status = RunLocal(
      dir,
      {"--mode=bsp", "--trainers=3", "--trainer-command-ranks=2",
       "--trainer-command=" + TrainCommand("mlp"), "--target-accuracy=0.80", "--time-limit=120s"},
      absl::Minutes(4));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  for (const auto& t : summary["per_trainer"]) EXPECT_EQ(t["state"], "live") << t.dump();
}

// SIGKILL of a PyTorch trainer: the coordinator evicts it and the others go on.
TEST(PyTorchE2E, AKilledTrainerIsEvictedAndTheOthersGoOn) {
  const std::string dir = MakeTempDir("pytorch-kill");
  auto local =
      StartLocal(dir, {"--mode=bsp", "--trainers=3", "--trainer-command=" + TrainCommand("mlp"),
                       "--target-accuracy=0.99", "--time-limit=20s", "--eviction-timeout=3s"});
  ASSERT_NE(local, nullptr);
  const int victim =
      PidOnceTraining(dir, 2, [](const std::string& d) { return ReadTrace(d, 2).size() > 30; });
  ASSERT_NE(victim, 0) << "trainer 2 never trained; see " << dir;
  ASSERT_EQ(kill(victim, SIGKILL), 0);  // the trainer itself: its command exec'd python3
  std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "run did not finish";
  EXPECT_EQ(ExitCode(*status), 4) << "a run that lost a trainer exits 4; "
                                  << cli::DescribeExit(*status);
  int64_t killed_clock = 0;
  for (const auto& e : ReadTrace(dir, 2)) {
    if (e["event"] == "pushed") killed_clock = e["clock"];
  }
  ExpectOthersWentOnAfterTheKill(dir, 2, killed_clock);
  ExpectEvictionReported(dir, 2);
}

}  // namespace
}  // namespace syncopate::e2e
