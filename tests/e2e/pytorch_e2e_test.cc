// End-to-end: the user's own PyTorch training loop (examples/pytorch/train.py, through the Python
// package over the client library) as the trainers of `syncopate local`, alone and beside the
// built-in trainer, under store modes and a peer-to-peer mode.
#include <signal.h>

#include "absl/strings/str_cat.h"
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
    // train.py evaluates the final average and closes with its accuracy; trainer 0's session
    // writes that model where `local` told it (SYNCOPATE_SAVE_MODEL).
    EXPECT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
    EXPECT_EQ(summary["model"]["error"], "") << summary["model"].dump();
    EXPECT_EQ(summary["model"]["files"].size(), 2u) << summary["model"].dump();
    EXPECT_EQ(summary["model"]["round"], summary["final_average"]["round"]) << summary.dump();
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
                       "--target-accuracy=0.99", "--time-limit=12s", "--eviction-timeout=3s"});
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

// The realistic example (examples/pytorch/train_transformer.py: a patch transformer, a DataLoader
// with ShardSampler, AdamW with a schedule) compared under three modes: each reaches the target.
TEST(PyTorchE2E, TheTransformerExampleReachesTheTargetUnderThreeModes) {
  const std::string dir = MakeTempDir("pytorch-transformer");
  const int status =
      RunSyncopate("compare", dir,
                   {"--modes=bsp,ssp,wbsp-overlap", "--trainers=3", "--target-accuracy=0.78",
                    "--time-limit=120s",
                    "--trainer-command=exec /usr/bin/python3 " + std::string(SYNCOPATE_SOURCE_DIR) +
                        "/examples/pytorch/train_transformer.py"},
                   absl::Minutes(8));
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "; see " << dir;
  for (const std::string mode : {"bsp", "ssp", "wbsp-overlap"}) {
    nlohmann::json summary = ReadJson(dir + "/" + mode + "/summary.json");
    EXPECT_TRUE(summary["reached_target"].get<bool>()) << mode << "; see " << dir;
  }
}

// The example checkpoints every 100 steps (inside `with sync.paused()`; the 200th step ends the
// run before its checkpoint), and a job started again with --resume-from resumes each trainer's
// optimizer and schedule from its checkpoint and the job's model from the run: its first
// evaluation is already about as good as the first run's end.
TEST(PyTorchE2E, TheTransformerExampleResumesFromItsCheckpoints) {
  const std::string dir = MakeTempDir("pytorch-transformer-resume");
  const std::string command = "SYNCOPATE_CHECKPOINT_DIR=" + dir +
                              "/checkpoints exec /usr/bin/python3 " +
                              std::string(SYNCOPATE_SOURCE_DIR) +
                              "/examples/pytorch/train_transformer.py --checkpoint-every=100";
  const int first =
      RunLocal(dir + "/first",
               {"--mode=bsp", "--trainers=2", "--max-steps=200", "--eval-interval=0.5s",
                "--trainer-command=" + command, "--time-limit=120s"},
               absl::Minutes(4));
  ASSERT_EQ(ExitCode(first), 0) << Read(dir + "/first.out");
  const double trained = ReadJson(dir + "/first/summary.json")["final_accuracy"].get<double>();
  const int second = RunLocal(
      dir + "/second",
      {"--mode=bsp", "--trainers=2", "--max-steps=60", "--step-time=50ms", "--eval-interval=0.2s",
       "--resume-from=" + dir + "/first", "--trainer-command=" + command, "--time-limit=120s"},
      absl::Minutes(4));
  ASSERT_EQ(ExitCode(second), 0) << Read(dir + "/second.out");
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(Read(absl::StrCat(dir, "/second/trainer-", rank, ".log"))
                  .find("/checkpoints/trainer-" + std::to_string(rank) + ".pt at step 100"),
              std::string::npos)
        << "trainer " << rank << " did not resume; see " << dir;
  }
  const std::vector<std::map<std::string, std::string>> accuracy =
      ReadCsv(dir + "/second/accuracy.csv");
  ASSERT_FALSE(accuracy.empty()) << "see " << dir;
  EXPECT_GT(std::stod(accuracy.front().at("accuracy")), trained - 0.05)
      << "the resumed job's first evaluation; the first run ended at " << trained;
}

}  // namespace
}  // namespace syncopate::e2e
