// End-to-end: a user's whole job, from its start to a saved model. A script that ends on its own
// finishes the job (exit 0, "finished: every trainer completed N steps"); the run directory then
// holds the model as model.npz and model.pt, which PyTorch and NumPy load without Syncopate and
// which gives the accuracy the run reported; `syncopate export` writes the same from the
// checkpoints; `--resume-from` starts a new job from it; bad model files and run folders are
// refused with a clear error.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "cli/model_file.h"
#include "gtest/gtest.h"
#include "local_runs.h"
#include "run_files.h"

namespace syncopate::e2e {
namespace {

std::string Python(const std::string& script) {
  return "exec /usr/bin/python3 " + std::string(SYNCOPATE_SOURCE_DIR) + "/" + script;
}

// Runs `code` with the built Python package and the example's models importable; its output
// goes to `log`. Returns the wait status.
int RunPython(const std::string& code, const std::string& log) {
  auto python = cli::ChildProcess::Spawn(
      {"/usr/bin/python3", "-c", code},
      {{"PYTHONPATH",
        BinDir() + "/../python:" + std::string(SYNCOPATE_SOURCE_DIR) + "/examples/pytorch"},
       {"OMP_NUM_THREADS", "1"}},
      log);
  EXPECT_TRUE(python.ok()) << python.status();
  if (!python.ok()) return -1;
  std::optional<int> status = (*python)->Wait(absl::Minutes(2));
  EXPECT_TRUE(status.has_value()) << "python did not finish; see " << log;
  return status.value_or(-1);
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Python that checks DIR/model.pt and DIR/model.npz hold the same tensors, loads them into the
// example's MLP through syncopate.torch.load_into, and asserts its test accuracy is within
// `tolerance` of `reported`. Leaves `train` and `syncopate` imported for more checks.
std::string ScoreModelPython(const std::string& dir, double reported, double tolerance) {
  return absl::StrCat(
      "import numpy as np, torch\n"
      "import train\n"
      "import syncopate.torch\n"
      "state = torch.load('",
      dir,
      "/model.pt', weights_only=True)\n"
      "npz = np.load('",
      dir,
      "/model.npz')\n"
      "assert sorted(state) == sorted(npz.files), (sorted(state), npz.files)\n"
      "for k in state: assert np.array_equal(state[k].numpy(), npz[k]), k\n"
      "model = train.BuiltinMlp()\n"
      "syncopate.torch.load_into(model, '",
      dir,
      "/model.pt')\n"
      "images, labels = train.load(train.DATA_DIR, 'test')\n"
      "with torch.no_grad():\n"
      "    accuracy = (model(images).argmax(1) == labels).float().mean().item()\n"
      "print('accuracy', accuracy)\n"
      "assert abs(accuracy - ",
      reported, ") < ", tolerance, ", (accuracy, ", reported, ")\n");
}

double Distance(const tensor::Model& a, const tensor::Model& b, double* norm) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.tensors.size() && i < b.tensors.size(); ++i) {
    for (size_t j = 0; j < a.tensors[i].values.size(); ++j) {
      const double x = a.tensors[i].values[j], y = b.tensors[i].values[j];
      d += (x - y) * (x - y);
      n += x * x;
    }
  }
  *norm = std::sqrt(n);
  return std::sqrt(d);
}

// The PyTorch example's trainers leave after 300 steps (of at least 20 ms, so that evaluations
// reach the job while it runs): the job is finished, exits 0, and leaves its model, which loads
// into a fresh PyTorch model with the accuracy the run reported (of a model a few rounds older).
TEST(JobLifecycleE2E, AScriptThatEndsOnItsOwnFinishesTheJobAndLeavesItsModel) {
  const std::string dir = MakeTempDir("job-finished");
  const int status = RunLocal(
      dir,
      // A small rate keeps the accuracy's curve smooth: the last evaluation reported, of a round
      // a little before the last, is within 0.05 of the final model's.
      {"--mode=bsp", "--trainers=2", "--max-steps=300", "--step-time=20ms", "--eval-interval=0.2s",
       "--learning-rate=0.02",
       "--trainer-command=" + Python("examples/pytorch/train.py --model=mlp"), "--time-limit=150s"},
      absl::Minutes(4));
  const std::string out = Read(dir + ".out");
  ASSERT_EQ(ExitCode(status), 0) << cli::DescribeExit(status) << "\n" << out;
  EXPECT_TRUE(absl::StrContains(out, "finished: every trainer completed 300 steps")) << out;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["finished"].get<bool>());
  EXPECT_TRUE(summary["target_accuracy"].is_null()) << "no target was given";
  EXPECT_EQ(summary["model"]["round"], 300) << summary["model"].dump();
  ASSERT_FALSE(summary["final_accuracy"].is_null()) << "see " << dir;
  const double reported = summary["final_accuracy"];

  // The trained model in PyTorch and NumPy, without Syncopate's extension: torch.load with
  // weights_only, then through syncopate.torch.load_into.
  const std::string log = dir + "/load.out";
  const std::string code = absl::StrCat(
      ScoreModelPython(dir, reported, 0.05),
      "try:\n"
      "    syncopate.torch.load_into(train.Cnn(), '",
      dir,
      "/model.npz')\n"
      "    raise SystemExit('a model of other tensors was loaded')\n"
      "except syncopate.SyncopateError as e:\n"
      "    assert e.code == 'INVALID_ARGUMENT' and 'not in the file' in e.message, e\n");
  const int python = RunPython(code, log);
  EXPECT_EQ(ExitCode(python), 0) << Read(log);

  // `syncopate export` writes the same model from the checkpoints.
  const std::string exported = dir + "/exported.npz";
  const int export_status = RunBinary(
      "syncopate", {"export", dir + "/checkpoints", "--out=" + exported}, dir + "/export.out");
  ASSERT_EQ(ExitCode(export_status), 0) << Read(dir + "/export.out");
  EXPECT_TRUE(absl::StrContains(Read(dir + "/export.out"), "round 300"))
      << Read(dir + "/export.out");
  // The same entries and bytes but for the archive's timestamps.
  EXPECT_EQ(Read(exported).size(), Read(dir + "/model.npz").size());

  // --resume-from: a new job starts from that model. With a tiny rate and two steps, its model
  // stays within 1% of the one it resumed (a fresh start would differ by about its whole norm).
  const std::string resumed = dir + "-resumed";
  const int again =
      RunLocal(resumed, {"--mode=bsp", "--trainers=2", "--max-steps=2", "--model=mlp",
                         "--learning-rate=0.0001", "--resume-from=" + dir, "--time-limit=60s"});
  ASSERT_EQ(ExitCode(again), 0) << Read(resumed + ".out");
  absl::StatusOr<tensor::Model> before = cli::ReadCheckpointModel(dir + "/checkpoints");
  absl::StatusOr<tensor::Model> after = cli::ReadCheckpointModel(resumed + "/checkpoints");
  ASSERT_TRUE(before.ok() && after.ok()) << before.status() << after.status();
  double norm = 0;
  const double moved = Distance(*before, *after, &norm);
  EXPECT_GT(norm, 0);
  EXPECT_LT(moved, 0.01 * norm) << "the resumed job did not start from the model";
  EXPECT_EQ(after->round, 2);
}

// A corrupt, truncated or foreign checkpoint given to export or --resume-from is refused, saying
// which file and why, and nothing is made.
TEST(JobLifecycleE2E, BadCheckpointsAreRefusedAndChangeNothing) {
  const std::string dir = MakeTempDir("job-bad-checkpoints");
  ASSERT_TRUE(base::MakeDirectories(dir + "/run/checkpoints").ok());
  std::ofstream(dir + "/run/checkpoints/shard-0.ckpt") << "garbage, not a checkpoint";
  const int exported =
      RunBinary("syncopate", {"export", dir + "/run/checkpoints", "--out=" + dir + "/m.npz"},
                dir + "/export.out");
  EXPECT_EQ(ExitCode(exported), 2);
  EXPECT_TRUE(absl::StrContains(Read(dir + "/export.out"), "shard-0.ckpt"))
      << Read(dir + "/export.out");
  EXPECT_FALSE(FileExists(dir + "/m.npz"));
  const int resumed = RunLocal(dir + "/new", {"--mode=bsp", "--trainers=1",
                                              "--resume-from=" + dir + "/run", "--time-limit=5s"});
  EXPECT_EQ(ExitCode(resumed), 2);
  EXPECT_TRUE(absl::StrContains(Read(dir + "/new.out"), "--resume-from")) << Read(dir + "/new.out");
  EXPECT_FALSE(FileExists(dir + "/new")) << "a refused resume makes no run directory";
}

// --restart-trainers: a trainer killed hard is restarted, as Kubernetes restarts its pod; it joins
// again under its name, and the job reaches its target with it. The restart is a fault (exit 4).
TEST(JobLifecycleE2E, ACrashedTrainerIsRestartedAndJoinsAgain) {
  const std::string dir = MakeTempDir("job-restart-trainer");
  auto local =
      StartLocal(dir, {"--mode=bsp", "--trainers=3", "--restart-trainers", "--eviction-timeout=3s",
                       "--target-accuracy=0.80", "--time-limit=120s"});
  ASSERT_NE(local, nullptr);
  const int victim =
      PidOnceTraining(dir, 2, [](const std::string& d) { return ReadTrace(d, 2).size() > 30; });
  ASSERT_NE(victim, 0) << "trainer 2 never trained; see " << dir;
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  std::optional<int> status = local->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "run did not finish; see " << dir;
  EXPECT_EQ(ExitCode(*status), 4) << "a restart is a fault; " << cli::DescribeExit(*status);
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  EXPECT_NE(summary["faults"].dump().find("trainer 2 exited (killed by signal 9); restarted"),
            std::string::npos)
      << summary["faults"].dump();
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_EQ(t["state"], "live") << "trainer " << t["rank"] << "; see " << dir;
  }
  const nlohmann::json cluster = ReadJson(dir + "/cluster.json");
  for (const auto& p : cluster["processes"]) {
    if (p["role"] == "trainer" && p["index"] == 2) {
      EXPECT_NE(p["pid"], victim) << "not restarted";
    }
  }
}

// Peer-to-peer modes keep the model in the trainers: the evaluator writes the final average it
// evaluated into the run directory, and PyTorch gives it the accuracy the run reported.
TEST(JobLifecycleE2E, ADsSyncJobLeavesTheFinalAverageItsEvaluatorReported) {
  const std::string dir = MakeTempDir("p2p-model");
  auto local =
      StartLocal(dir, {"--mode=dssync", "--trainers=3", "--step-time=5ms", "--time-limit=300s"});
  ASSERT_NE(local, nullptr);
  std::string coordinator;
  auto training = [&](const std::string& d) {
    coordinator = CoordinatorAddress(d);
    return !coordinator.empty() && ReadTrace(d, 2).size() > 20;
  };
  ASSERT_NE(PidOnceTraining(dir, 2, training), 0) << "trainer 2 never trained; see " << dir;
  const int finish = RunBinary("syncopate",
                               {"finish", "--coordinator=" + coordinator,
                                "--tls-dir=" + dir + "/tls/operator", "--reason=enough"},
                               dir + "/finish.out");
  ASSERT_EQ(ExitCode(finish), 0) << Read(dir + "/finish.out");
  const std::optional<int> status = local->Wait(absl::Minutes(2));
  ASSERT_TRUE(status.has_value()) << "the run did not end; see " << dir;
  ASSERT_EQ(ExitCode(*status), 0) << cli::DescribeExit(*status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_FALSE(summary["final_average"]["accuracy"].is_null()) << "see " << dir;
  const double reported = summary["final_average"]["accuracy"];
  EXPECT_EQ(summary["model"]["error"], "") << summary["model"].dump();
  EXPECT_EQ(summary["model"]["files"].size(), 2u) << summary["model"].dump();
  const std::string log = dir + "/load.out";
  const std::string code = ScoreModelPython(dir, reported, 0.005);
  EXPECT_EQ(ExitCode(RunPython(code, log)), 0) << Read(log);
}

TEST(JobLifecycleE2E, AModelFileOfAnotherKindIsRefusedBeforeTheTrainerJoins) {
  const std::string dir = MakeTempDir("save-model-bad");
  const std::string log = dir + "/trainer.out";
  const int status = RunBinary("syncopate-trainer",
                               {"--save-model=" + dir + "/model.bin", "--insecure",
                                "--coordinator=127.0.0.1:1", "--metrics-listen=127.0.0.1:0"},
                               log);
  EXPECT_EQ(ExitCode(status), 2) << Read(log);
  EXPECT_TRUE(absl::StrContains(Read(log), "must end in .npz (NumPy) or .pt (PyTorch)"))
      << Read(log);
  EXPECT_FALSE(FileExists(dir + "/model.bin"));
}

}  // namespace
}  // namespace syncopate::e2e
