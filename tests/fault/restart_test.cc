// Fault injection, as an operator meets it: a store shard or the coordinator is SIGKILLed mid-job
// and comes back on its port (syncopate local restarts it, as Kubernetes would). The job must go
// on with every trainer, reach its target, and report the restart (exit 4, summary.json); a store
// shard's loss window is reported too.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "../e2e/local_runs.h"
#include "../e2e/run_files.h"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "cli/child_process.h"
#include "gtest/gtest.h"

namespace syncopate::e2e {
namespace {

// Rounds trainer `rank` pulled, in order (none in immediate modes).
std::vector<int64_t> PulledRounds(const std::string& dir, int rank) {
  std::vector<int64_t> rounds;
  for (const auto& e : ReadTrace(dir, rank)) {
    if (e["event"] == "pull" && e.contains("round")) rounds.push_back(e["round"]);
  }
  return rounds;
}

// The clocks trainer `rank` was granted, in order (every mode).
std::vector<int64_t> GrantedClocks(const std::string& dir, int rank) {
  std::vector<int64_t> clocks;
  for (const auto& e : ReadTrace(dir, rank)) {
    if (e["event"] == "start") clocks.push_back(e["clock"]);
  }
  return clocks;
}

size_t Pushes(const std::string& dir, int rank) {
  size_t pushes = 0;
  for (const auto& e : ReadTrace(dir, rank)) pushes += e["event"] == "pushed";
  return pushes;
}

// Exactly once, end to end: the run's audit (every shard's final count of each trainer's pushes
// against the pushes the trainer saw acknowledged, cli/push_audit.h) found nothing lost or doubled.
void ExpectEveryPushTakenOnce(const nlohmann::json& summary, const std::string& dir) {
  const nlohmann::json& audit = summary["push_audit"];
  ASSERT_TRUE(audit["audited"].get<bool>()) << audit.dump() << "; see " << dir;
  EXPECT_GT(audit["pushes"].get<int64_t>(), 0) << "see " << dir;
  EXPECT_EQ(audit["lost"].get<int64_t>(), 0) << "see " << dir;
  EXPECT_EQ(audit["doubled"].get<int64_t>(), 0) << "see " << dir;
}

// SIGKILLs the processes `names` (their ready files in `dir` name them) at once, waits for the run
// and checks what every restart must show: exit 4, one fault per process killed (and no other),
// each recorded as its `whats` entry says, the target reached after them, no failure, every
// trainer still live. Returns the summary (discarded on a failure).
nlohmann::json KillAndCheckRun(const std::string& dir, cli::ChildProcess& local,
                               const std::vector<std::string>& names,
                               const std::vector<std::string>& whats) {
  for (const std::string& name : names) {
    const nlohmann::json ready = ReadJson(dir + "/" + name + ".ready.json");
    if (ready.is_discarded() || kill(ready["pid"].get<int>(), SIGKILL) != 0) {
      ADD_FAILURE() << "cannot kill " << name << "; see " << dir;
      return nlohmann::json::value_t::discarded;
    }
  }
  std::optional<int> status = local.Wait(absl::Minutes(3));
  if (!status) {
    ADD_FAILURE() << "run did not finish; see " << dir;
    return nlohmann::json::value_t::discarded;
  }
  EXPECT_EQ(ExitCode(*status), 4) << cli::DescribeExit(*status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  if (summary.is_discarded() || summary["faults"].size() != names.size()) {
    ADD_FAILURE() << names.size() << " faults expected; see " << dir << "\n" << summary.dump(2);
    return nlohmann::json::value_t::discarded;
  }
  for (const std::string& what : whats) {
    EXPECT_NE(summary["faults"].dump().find(what), std::string::npos)
        << what << " not in " << summary["faults"].dump();
  }
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  for (const auto& fault : summary["faults"]) {
    EXPECT_GT(summary["time_to_target_seconds"].get<double>(), fault["at_seconds"].get<double>())
        << "see " << dir;
  }
  EXPECT_EQ(summary["failure"], "");
  EXPECT_EQ(summary["per_trainer"].size(), 3u) << "a trainer rejoined as a new one; see " << dir;
  for (const auto& t : summary["per_trainer"]) {
    // Still in the job at its end, or (dssync) done after its final average.
    EXPECT_TRUE(t["state"] == "live" || t["state"] == "done")
        << "trainer " << t["rank"] << " was lost (" << t["state"] << "); see " << dir;
  }
  return summary;
}

nlohmann::json KillAndCheckRun(const std::string& dir, cli::ChildProcess& local,
                               const std::string& name, const std::string& what) {
  return KillAndCheckRun(dir, local, std::vector<std::string>{name},
                         std::vector<std::string>{what});
}

class StoreRestart : public ::testing::TestWithParam<const char*> {};

TEST_P(StoreRestart, TheJobGoesOnAndReportsIt) {
  std::string mode = GetParam();  // test names cannot hold '-'
  std::replace(mode.begin(), mode.end(), '_', '-');
  const std::string dir = MakeTempDir("store-restart-" + mode);
  // The MLP's real steps: on a fast host the job reaches its target a second or so after the kill,
  // before a trainer that was waiting on the killed shard pushes there again. That trainer
  // re-sends what the restart lost as it leaves (docs/faults.md), or the audit counts it lost.
  // wbsp-overlap has reached 0.80 after as few as 30 pushes of trainer 0, so the kill must come
  // well before that, whatever the load: early checkpoints, and a kill after about 10 pushes.
  auto local = StartLocal(
      dir, {"--mode=" + mode, "--trainers=3", "--slowdown=1,1,3", "--store-shards=2",
            "--target-accuracy=0.80", "--time-limit=150s", "--checkpoint-interval=200ms"});
  ASSERT_NE(local, nullptr);
  // Once training is under way and shard 1 has written a checkpoint, kill it hard. (Killed before
  // its first checkpoint, a shard comes back empty and the job fails: that is the coordinator's
  // tested refusal, not this scenario.)
  ASSERT_NE(PidOnceTraining(dir, 0,
                            [](const std::string& d) {
                              return ReadTrace(d, 0).size() > 30 &&
                                     access((d + "/checkpoints/shard-1.ckpt").c_str(), F_OK) == 0;
                            }),
            0)
      << "trainer 0 never trained or shard 1 never checkpointed; see " << dir;
  const size_t pushes_before = Pushes(dir, 0);
  const nlohmann::json summary =
      KillAndCheckRun(dir, *local, "store-1", "store 1 exited (killed by");
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_EQ(summary["store_restarts"], 1) << "see " << dir;
  ExpectEveryPushTakenOnce(summary, dir);
  // Training went on past the restart (rounds, where the mode has them, stayed in order).
  EXPECT_GT(Pushes(dir, 0), pushes_before) << "see " << dir;
  const std::vector<int64_t> rounds = PulledRounds(dir, 0);
  EXPECT_TRUE(std::is_sorted(rounds.begin(), rounds.end())) << "see " << dir;
  // Trainers learn of the restart from their next push, or as they leave, and re-send what the
  // shard had not confirmed as checkpointed (exactly once:
  // tests/integration/store_service_test.cc). A trainer always holds the sum of its latest pushes,
  // so every trainer re-sends.
  int resending = 0;
  for (int rank = 0; rank < 3; ++rank) {
    const absl::StatusOr<std::string> log =
        base::ReadFile(dir + "/trainer-" + std::to_string(rank) + ".log");
    resending += log.ok() && log->find("restarted: re-sending the") != std::string::npos;
  }
  EXPECT_EQ(resending, 3) << "a trainer did not re-send to the restarted shard; see " << dir;
}

INSTANTIATE_TEST_SUITE_P(EveryStoreMode, StoreRestart,
                         ::testing::Values("bsp", "asp", "ssp", "dssp", "wbsp", "wbsp_overlap",
                                           "hybrid"));

// The newest clock trainer `rank` traced as pushed (acknowledged); -1 for none.
int64_t LastPushedClock(const std::string& dir, int rank) {
  int64_t clock = -1;
  for (const auto& e : ReadTrace(dir, rank)) {
    if (e["event"] == "pushed") clock = std::max(clock, e["clock"].get<int64_t>());
  }
  return clock;
}

// The loss window a trainer closes as it leaves: it learns of a shard's restart from its next push
// there, and these trainers never push again. The straggler is frozen, so trainers 0 and 1 wait
// at the BSP barrier with their latest pushes unsaved on shard 1; shard 1 is killed and comes back
// from its older checkpoint; an operator ends the job. Trainers 0 and 1 leave from the barrier and
// re-send what the restart lost first; once both have left the straggler is thawed and pushes
// again (learning of the restart that way). The audit finds every acknowledged push taken once.
TEST(StoreRestartAtTheEnd, TrainersThatDoNotPushAgainResendAsTheyLeave) {
  const std::string dir = MakeTempDir("store-restart-at-the-end");
  auto local =
      StartLocal(dir, {"--mode=bsp", "--trainers=3", "--slowdown=1,1,3", "--store-shards=2",
                       "--step-time=5ms", "--eviction-timeout=120s", "--target-accuracy=0.99",
                       "--time-limit=150s", "--checkpoint-interval=1s"});
  ASSERT_NE(local, nullptr);
  std::string coordinator;
  const int straggler = PidOnceTraining(dir, 2, [&](const std::string& d) {
    coordinator = CoordinatorAddress(d);
    return !coordinator.empty() && ReadTrace(d, 2).size() > 30 &&
           access((d + "/checkpoints/shard-1.ckpt").c_str(), F_OK) == 0;
  });
  ASSERT_NE(straggler, 0) << "trainer 2 never trained or shard 1 never checkpointed; see " << dir;
  ASSERT_EQ(kill(straggler, SIGSTOP), 0);
  absl::Cleanup thaw = [straggler] { kill(straggler, SIGCONT); };  // on any way out
  // Trainers 0 and 1 reach the barrier: a push past the straggler's last one, then a wait.
  const int64_t straggler_clock = LastPushedClock(dir, 2);
  EXPECT_TRUE(PollUntil(
      [&] {
        return LastPushedClock(dir, 0) > straggler_clock &&
               LastPushedClock(dir, 1) > straggler_clock;
      },
      absl::Seconds(20)))
      << "trainers 0 and 1 never pushed past the frozen straggler; see " << dir;
  const nlohmann::json shard = ReadJson(dir + "/store-1.ready.json");
  ASSERT_FALSE(shard.is_discarded()) << dir;
  ASSERT_EQ(kill(shard["pid"].get<int>(), SIGKILL), 0);
  // Ended once the coordinator has reconciled the restarted shard (and counted the restart).
  EXPECT_TRUE(PollUntil(
      [&] {
        return Read(dir + "/coordinator-0.log").find("restarted; it resumed at round") !=
               std::string::npos;
      },
      absl::Seconds(30)))
      << "shard 1 was not restarted and reconciled; see " << dir;

  const std::string finish_log = dir + "/finish.out";
  const int finish = RunBinary("syncopate",
                               {"finish", "--coordinator=" + coordinator,
                                "--tls-dir=" + dir + "/tls/operator", "--reason=enough"},
                               finish_log);
  // Trainers 0 and 1 re-send, then leave: the coordinator logs both Leaves.
  auto leaves = [&] {
    const std::string log = Read(dir + "/coordinator-0.log");
    int n = 0;
    for (size_t at = log.find("left: training is done"); at != std::string::npos;
         at = log.find("left: training is done", at + 1)) {
      ++n;
    }
    return n;
  };
  const bool others_left = PollUntil([&] { return leaves() >= 2; }, absl::Seconds(30));
  std::move(thaw).Invoke();
  ASSERT_EQ(ExitCode(finish), 0) << Read(finish_log);
  ASSERT_TRUE(others_left) << "trainers 0 and 1 did not leave; see " << dir;

  const std::optional<int> status = local->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "the run did not end; see " << dir;
  EXPECT_EQ(ExitCode(*status), 4) << cli::DescribeExit(*status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_FALSE(summary.is_discarded()) << "see " << dir;
  EXPECT_EQ(summary["store_restarts"], 1) << "see " << dir;
  ExpectEveryPushTakenOnce(summary, dir);
  // Trainers 0 and 1 learned of the restart as they left, after their last push.
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = Read(dir + "/trainer-" + std::to_string(rank) + ".log");
    const size_t leaving = log.find("leaving after");
    const size_t resending = log.find("restarted: re-sending the");
    EXPECT_TRUE(leaving != std::string::npos && resending != std::string::npos &&
                leaving < resending)
        << "trainer " << rank << " did not re-send as it left; see " << dir;
  }
}

// The coordinator and every store shard killed at once (a node with all of them drained): the
// shards come back from their checkpoints, membership included, the restarted coordinator finds
// the job there, and every trainer resumes its session.
class EveryServerRestart : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryServerRestart, TheJobIsFoundInTheCheckpointsAndGoesOn) {
  const std::string mode = GetParam();
  const std::string dir = MakeTempDir("every-server-restart-" + mode);
  auto local = StartLocal(dir, {"--mode=" + mode, "--trainers=3", "--slowdown=1,1,3",
                                "--store-shards=2", "--step-time=5ms", "--target-accuracy=0.80",
                                "--time-limit=150s", "--checkpoint-interval=1s"});
  ASSERT_NE(local, nullptr);
  // Kill once both shards have checkpointed the job with all three trainers in it: a checkpoint
  // from before a trainer joined does not know it (the loss window), and its resume is refused.
  std::optional<absl::Time> all_training;
  auto written_since = [](const std::string& path, absl::Time t) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && absl::TimeFromTimespec(st.st_mtim) > t;
  };
  ASSERT_NE(PidOnceTraining(dir, 0,
                            [&](const std::string& d) {
                              if (!all_training) {
                                bool all = true;
                                for (int r = 0; r < 3; ++r)
                                  all = all && ReadTrace(d, r).size() > 20;
                                if (all) all_training = absl::Now();
                                return false;
                              }
                              return written_since(d + "/checkpoints/shard-0.ckpt",
                                                   *all_training) &&
                                     written_since(d + "/checkpoints/shard-1.ckpt", *all_training);
                            }),
            0)
      << "the trainers never trained or a shard never checkpointed; see " << dir;
  const size_t pushes_before = Pushes(dir, 0);
  const nlohmann::json summary =
      KillAndCheckRun(dir, *local, {"coordinator-0", "store-0", "store-1"},
                      {"coordinator 0 exited (killed by", "store 0 exited (killed by",
                       "store 1 exited (killed by"});
  ASSERT_FALSE(summary.is_discarded());
  // (summary.store_restarts counts what a coordinator saw: the new one never knew the old shards.)
  ExpectEveryPushTakenOnce(summary, dir);
  EXPECT_GT(Pushes(dir, 0), pushes_before) << "see " << dir;
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<int64_t> clocks = GrantedClocks(dir, rank);
    for (size_t i = 1; i < clocks.size(); ++i) {
      ASSERT_EQ(clocks[i], clocks[i - 1] + 1) << "trainer " << rank << "; see " << dir;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RoundAndImmediateModes, EveryServerRestart,
                         ::testing::Values("bsp", "ssp"));

// The coordinator killed mid-job: the restarted one takes the job over from the store, every
// trainer resumes its session with its identity and clock, and no push is lost or repeated (each
// trainer's clocks go on from where they were; rounds stay in order).
class CoordinatorRestart : public ::testing::TestWithParam<const char*> {};

TEST_P(CoordinatorRestart, TrainersResumeAndTheJobGoesOn) {
  std::string mode = GetParam();
  std::replace(mode.begin(), mode.end(), '_', '-');
  const std::string dir = MakeTempDir("coordinator-restart-" + mode);
  // Emulated 5 ms steps keep the run long enough to kill it mid-way in every mode.
  auto local = StartLocal(dir, {"--mode=" + mode, "--trainers=3", "--slowdown=1,1,3",
                                "--step-time=5ms", "--target-accuracy=0.82", "--time-limit=150s"});
  ASSERT_NE(local, nullptr);
  ASSERT_NE(
      PidOnceTraining(dir, 0, [](const std::string& d) { return ReadTrace(d, 0).size() > 60; }), 0)
      << "trainer 0 never trained; see " << dir;
  const size_t grants_before = GrantedClocks(dir, 0).size();
  const nlohmann::json summary =
      KillAndCheckRun(dir, *local, "coordinator-0", "coordinator 0 exited (killed by");
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_GT(GrantedClocks(dir, 0).size(), grants_before) << "see " << dir;
  if (mode != "dssync" && mode != "selmcast-ssp") ExpectEveryPushTakenOnce(summary, dir);
  for (int rank = 0; rank < 3; ++rank) {
    // One grant per clock, in order, across the restart: none lost, repeated or skipped.
    const std::vector<int64_t> clocks = GrantedClocks(dir, rank);
    for (size_t i = 1; i < clocks.size(); ++i) {
      ASSERT_EQ(clocks[i], clocks[i - 1] + 1) << "trainer " << rank << "; see " << dir;
    }
    const std::vector<int64_t> rounds = PulledRounds(dir, rank);
    EXPECT_TRUE(std::is_sorted(rounds.begin(), rounds.end())) << "see " << dir;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryModeFamily, CoordinatorRestart,
                         ::testing::Values("bsp", "ssp", "wbsp_overlap", "hybrid", "dssync",
                                           "selmcast_ssp"));

// When the line of `log` that contains `marker` was written (the time its line starts with);
// nullopt when no line has it.
std::optional<absl::Time> LoggedAt(const std::string& log, const std::string& marker) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (line.find(marker) == absl::string_view::npos) continue;
    absl::Time at;
    std::string error;
    if (absl::ParseTime("%Y-%m-%dT%H:%M:%E3S", std::string(line.substr(0, 23)), &at, &error)) {
      return at;
    }
  }
  return std::nullopt;
}

// The coordinator killed during dssync's final average (ended by an operator, the straggler frozen
// so that the round cannot complete first), and a trainer killed with it: the stores kept the final
// round, the restarted coordinator ends the job in that same round, every trainer still alive
// averages and leaves done, and the dead one holds the average up only for the recovery window.
TEST(FinalAverageRestart, TheNextCoordinatorEndsTheJobInTheSameRound) {
  const std::string dir = MakeTempDir("final-average-restart");
  constexpr int kRecoverySeconds = 4;
  auto local = StartLocal(
      dir, {"--mode=dssync", "--trainers=4", "--slowdown=1,1,3,1", "--step-time=5ms",
            "--eviction-timeout=20s", absl::StrCat("--recovery-window=", kRecoverySeconds, "s"),
            "--target-accuracy=0.99", "--time-limit=300s"});
  ASSERT_NE(local, nullptr);
  std::string coordinator;
  const int straggler = PidOnceTraining(dir, 2, [&](const std::string& d) {
    coordinator = CoordinatorAddress(d);
    return !coordinator.empty() && ReadTrace(d, 2).size() > 30;
  });
  ASSERT_NE(straggler, 0) << "trainer 2 never trained; see " << dir;
  ASSERT_EQ(kill(straggler, SIGSTOP), 0);
  const std::string finish_log = dir + "/finish.out";
  const int finish = RunBinary("syncopate",
                               {"finish", "--coordinator=" + coordinator,
                                "--tls-dir=" + dir + "/tls/operator", "--reason=enough"},
                               finish_log);
  long long round = 0;
  const std::string said = Read(finish_log);
  const size_t at = said.find("in round ");
  if (at != std::string::npos) round = std::atoll(said.c_str() + at + 9);
  // Killed once the stores hold the final round (the coordinator logs their acknowledgement) and
  // the run waits for the final average (it says so); trainer 3 dies with it, unseen by either.
  const std::string coordinator_log = dir + "/coordinator-0.log";
  auto ready_to_kill = [&] {
    return Read(coordinator_log).find("the stores keep the job's end") != std::string::npos &&
           Read(dir + ".out").find("training ends (") != std::string::npos;
  };
  const bool ready_to_kill_now =
      PollUntil(ready_to_kill, absl::Seconds(10), absl::Milliseconds(50));
  bool killed = ready_to_kill_now;
  for (const char* name : {"coordinator-0", "trainer-3"}) {
    const nlohmann::json ready = ReadJson(dir + "/" + name + ".ready.json");
    killed = killed && !ready.is_discarded() && kill(ready["pid"].get<int>(), SIGKILL) == 0;
  }
  EXPECT_EQ(kill(straggler, SIGCONT), 0);
  ASSERT_EQ(ExitCode(finish), 0) << said;
  ASSERT_GT(round, 0) << said;
  ASSERT_TRUE(ready_to_kill_now) << "the stores never kept the job's end, or the run never waited "
                                 << "for the final average; see " << dir;
  ASSERT_TRUE(killed) << "see " << dir;

  const std::optional<int> status = local->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "the run did not end; see " << dir;
  EXPECT_EQ(ExitCode(*status), 4) << cli::DescribeExit(*status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_FALSE(summary.is_discarded()) << "see " << dir;
  const std::string faults = summary["faults"].dump();
  EXPECT_NE(faults.find("coordinator 0 exited (killed by"), std::string::npos) << faults;
  EXPECT_NE(faults.find("trainer 3 exited (killed by"), std::string::npos) << faults;
  EXPECT_NE(faults.find("1 trainer(s) did not resume"), std::string::npos) << faults;
  const std::string logged = Read(coordinator_log);
  EXPECT_NE(logged.find("the job was ending (enough)"), std::string::npos)
      << "the restarted coordinator did not take the final round over; see " << dir;
  EXPECT_EQ(summary["final_average"]["round"].get<int64_t>(), round) << "see " << dir;
  for (const auto& t : summary["per_trainer"]) {
    if (t["rank"].get<int>() == 3) continue;
    EXPECT_EQ(t["state"], "done") << t.dump() << "; see " << dir;
    EXPECT_EQ(t["clock"].get<int64_t>(), round) << t.dump();
  }
  // The dead trainer is out once the recovery window ends, and the average goes on without it at
  // once: the job is done well before the eviction timeout (20 s) could have let it. The bound is
  // loose: a loaded machine may take seconds between the two.
  const std::optional<absl::Time> taken_over = LoggedAt(logged, "taking it over");
  const std::optional<absl::Time> done = LoggedAt(logged, "training is done: enough");
  ASSERT_TRUE(taken_over && done) << "see " << coordinator_log;
  EXPECT_NE(logged.find(absl::StrCat("did not resume within ", kRecoverySeconds, "s")),
            std::string::npos)
      << "see " << coordinator_log;
  EXPECT_LT(*done - *taken_over, absl::Seconds(kRecoverySeconds + 10)) << "see " << dir;
}

// A 3-trainer run with emulated 5 ms steps and a 3 s eviction timeout, to freeze a process of.
std::unique_ptr<cli::ChildProcess> StartForFreezing(const std::string& dir,
                                                    const std::string& mode) {
  return StartLocal(dir, {"--mode=" + mode, "--trainers=3", "--slowdown=1,1,3", "--step-time=5ms",
                          "--eviction-timeout=3s", "--target-accuracy=0.80", "--time-limit=150s"});
}

// Freezes `pid` (SIGSTOP) for twice the eviction timeout, thaws it (SIGCONT), waits for the run and
// checks that it exits `exit_code` and reaches its target after trainer 0 went on. Returns the
// summary (discarded on a failure).
nlohmann::json FreezeAndFinish(const std::string& dir, cli::ChildProcess& local, int pid,
                               int exit_code) {
  const size_t grants_before = GrantedClocks(dir, 0).size();
  if (kill(pid, SIGSTOP) != 0) {
    ADD_FAILURE() << "cannot freeze " << pid << "; see " << dir;
    return nlohmann::json::value_t::discarded;
  }
  absl::SleepFor(absl::Seconds(6));  // the fault itself: twice the eviction timeout
  EXPECT_EQ(kill(pid, SIGCONT), 0);
  const std::optional<int> status = local.Wait(absl::Minutes(3));
  if (!status) {
    ADD_FAILURE() << "run did not finish; see " << dir;
    return nlohmann::json::value_t::discarded;
  }
  EXPECT_EQ(ExitCode(*status), exit_code) << cli::DescribeExit(*status) << "; see " << dir;
  nlohmann::json summary = ReadJson(dir + "/summary.json");
  if (summary.is_discarded()) {
    ADD_FAILURE() << "no summary; see " << dir;
    return summary;
  }
  EXPECT_TRUE(summary["reached_target"].get<bool>()) << "see " << dir;
  EXPECT_GT(GrantedClocks(dir, 0).size(), grants_before) << "see " << dir;
  return summary;
}

// A process frozen (SIGSTOP) for longer than the eviction timeout, then thawed (SIGCONT): a gray
// failure, as a node under memory pressure or a long GC pause shows it. Nothing died, so nothing
// may be lost: no trainer is evicted (a frozen coordinator must not hold its own silence against
// the trainers; trainers ride out a frozen shard or coordinator within their deadlines), the run
// reaches its target and is a normal finish.
struct Pause {
  const char* mode;
  const char* process;
};

class ProcessPause : public ::testing::TestWithParam<Pause> {};

TEST_P(ProcessPause, NothingIsLostAndNobodyIsEvicted) {
  const Pause pause = GetParam();
  const std::string dir = MakeTempDir(std::string("pause-") + pause.process + "-" + pause.mode);
  auto local = StartForFreezing(dir, pause.mode);
  ASSERT_NE(local, nullptr);
  ASSERT_NE(
      PidOnceTraining(dir, 0, [](const std::string& d) { return ReadTrace(d, 0).size() > 60; }), 0)
      << "trainer 0 never trained; see " << dir;
  const nlohmann::json ready = ReadJson(dir + "/" + pause.process + ".ready.json");
  ASSERT_FALSE(ready.is_discarded()) << dir;
  const nlohmann::json summary = FreezeAndFinish(dir, *local, ready["pid"].get<int>(), 0);
  ASSERT_FALSE(summary.is_discarded());
  EXPECT_TRUE(summary["faults"].empty()) << summary["faults"].dump() << "; see " << dir;
  ExpectEveryPushTakenOnce(summary, dir);
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_EQ(t["state"], "live") << "trainer " << t["rank"] << "; see " << dir;
    EXPECT_EQ(t["evictions"], 0) << "trainer " << t["rank"] << "; see " << dir;
  }
}

INSTANTIATE_TEST_SUITE_P(CoordinatorAndStore, ProcessPause,
                         ::testing::Values(Pause{"bsp", "coordinator-0"},
                                           Pause{"ssp", "coordinator-0"}, Pause{"bsp", "store-0"}),
                         [](const ::testing::TestParamInfo<Pause>& info) {
                           std::string name =
                               std::string(info.param.process) + "_" + info.param.mode;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A trainer frozen past the eviction timeout holds a BSP round up: it is evicted and the others go
// on without it. Thawed, the trainer learns it was evicted and rejoins the job under a new
// incarnation (client/job_client.h). The job ends when every trainer completed its steps, counted
// over rejoins, so it cannot end before the frozen trainer rejoined; the run reports the eviction
// (exit 4), the trainer ends with one eviction on its name, and the model reaches 0.75.
TEST(TrainerPause, AFrozenTrainerIsEvictedAndRejoinsWhenThawed) {
  const std::string dir = MakeTempDir("pause-trainer-bsp");
  auto local = StartLocal(dir, {"--mode=bsp", "--trainers=3", "--slowdown=1,1,3", "--step-time=5ms",
                                "--eviction-timeout=3s", "--max-steps=300", "--time-limit=150s"});
  ASSERT_NE(local, nullptr);
  const int pid =
      PidOnceTraining(dir, 2, [](const std::string& d) { return ReadTrace(d, 2).size() > 20; });
  ASSERT_NE(pid, 0) << "trainer 2 never trained; see " << dir;
  ASSERT_EQ(kill(pid, SIGSTOP), 0) << "see " << dir;
  absl::SleepFor(absl::Seconds(6));  // the fault itself: twice the eviction timeout
  ASSERT_EQ(kill(pid, SIGCONT), 0) << "see " << dir;
  const std::optional<int> status = local->Wait(absl::Minutes(3));
  ASSERT_TRUE(status.has_value()) << "run did not finish; see " << dir;
  EXPECT_EQ(ExitCode(*status), 4) << cli::DescribeExit(*status) << "; see " << dir;
  const nlohmann::json summary = ReadJson(dir + "/summary.json");
  ASSERT_FALSE(summary.is_discarded()) << "no summary; see " << dir;
  EXPECT_TRUE(summary["finished"].get<bool>()) << summary["ended"] << "; see " << dir;
  // The job trained on without the frozen trainer, and with it once it came back: 300 steps of
  // this MLP reach 0.79-0.81 here.
  EXPECT_GE(summary["final_accuracy"].get<double>(), 0.75) << "see " << dir;
  EXPECT_NE(summary["faults"].dump().find("trainer 2 evicted"), std::string::npos)
      << summary["faults"].dump();
  for (const auto& t : summary["per_trainer"]) {
    EXPECT_NE(t["state"], "evicted") << "trainer " << t["rank"] << "; see " << dir;
    EXPECT_EQ(t["evictions"], t["rank"] == 2 ? 1 : 0) << "trainer " << t["rank"] << "; see " << dir;
  }
  const std::string log = Read(dir + "/trainer-2.log");
  EXPECT_NE(log.find("rejoining the job under a new incarnation (rejoin 1 of at most 3)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("rejoined the bsp job"), std::string::npos) << log;
}

}  // namespace
}  // namespace syncopate::e2e
