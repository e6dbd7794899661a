#include "cli/advise_command.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/match.h"
#include "base/files.h"
#include "gtest/gtest.h"
#include "store/checkpoint.h"
#include "sync/modes.h"

namespace syncopate::cli {
namespace {

AdviseOptions Small(std::vector<double> slowdowns, double tolerance) {
  AdviseOptions o;
  o.cluster.trainers = static_cast<int>(slowdowns.size());
  o.cluster.slowdowns = std::move(slowdowns);
  o.cluster.clocks = 60;
  o.staleness_tolerance = tolerance;
  return o;
}

TEST(AdviseTest, ThePredictionIsStepsPerTrainerDiscountedByStaleness) {
  sync::ClusterSimResult r;
  r.trainers = 4;
  r.steps_per_second = 40;
  r.delta_staleness_mean = 0.5;
  EXPECT_DOUBLE_EQ(*PredictedRate(r, 0.5), 10 / 2.0);
  EXPECT_NEAR(*PredictedRate(r, 1e9), 10, 1e-6);
  r.delta_staleness_mean = -1;  // not counted: peer-to-peer beyond 64 trainers
  EXPECT_FALSE(PredictedRate(r, 1).has_value());
}

TEST(AdviseTest, EveryModeIsACandidateAndThePredictedComeFirstFastestFirst) {
  absl::StatusOr<Advice> advice = Advise(Small({1, 1, 2, 6}, 1));
  ASSERT_TRUE(advice.ok()) << advice.status();
  for (const std::string& mode : sync::SupportedModes()) {
    EXPECT_TRUE(std::any_of(advice->rows.begin(), advice->rows.end(), [&](const AdviceRow& r) {
      return r.mode == mode;
    })) << mode;
  }
  size_t predicted = 0;  // the predicted rows, first, each no faster than the one before
  while (predicted < advice->rows.size() && advice->rows[predicted].rate) {
    if (predicted > 0) {
      EXPECT_LE(*advice->rows[predicted].rate, *advice->rows[predicted - 1].rate);
    }
    ++predicted;
  }
  EXPECT_EQ(predicted, advice->rows.size()) << "on 4 trainers every mode is predicted, the "
                                               "peer-to-peer ones too";
  // The winner: of the rows predicted within 5% of the fastest, the one with the freshest deltas.
  ASSERT_EQ(advice->winners.size(), 3u);
  const AdviceRow* winner = nullptr;
  for (const AdviceRow& row : advice->rows) {
    const std::string name = row.mode + (row.flags.empty() ? "" : " " + row.flags.front());
    if (name == advice->winners[1]) winner = &row;
  }
  ASSERT_NE(winner, nullptr) << advice->winners[1];
  EXPECT_GE(*winner->rate, 0.95 * *advice->rows.front().rate);
  for (size_t i = 0; i < predicted; ++i) {
    const AdviceRow& row = advice->rows[i];
    if (*row.rate >= 0.95 * *advice->rows.front().rate) {
      EXPECT_LE(winner->sim.delta_staleness_mean, row.sim.delta_staleness_mean) << row.mode;
    }
  }
}

TEST(AdviseTest, AStragglerAndATolerantModelFavourModesThatDoNotWait) {
  // A 6x straggler: a mode that waits for it takes a third of the steps; with stale deltas
  // nearly free, the most steps win.
  absl::StatusOr<Advice> advice = Advise(Small({1, 1, 1, 6}, 1000));
  ASSERT_TRUE(advice.ok()) << advice.status();
  EXPECT_GT(advice->rows.front().sim.compute_time_ratio, 0.9) << advice->rows.front().mode;
}

TEST(AdviseTest, EqualTrainersAndAnIntolerantModelFavourTheLeastStaleMode) {
  absl::StatusOr<Advice> advice = Advise(Small({1, 1, 1, 1}, 0.01));
  ASSERT_TRUE(advice.ok()) << advice.status();
  const AdviceRow& best = advice->rows.front();
  for (const AdviceRow& row : advice->rows) {
    if (row.rate) {
      EXPECT_LE(best.sim.delta_staleness_mean, row.sim.delta_staleness_mean + 0.05) << row.mode;
    }
  }
}

TEST(AdviseTest, ConfidenceSaysWhetherTheWinnerHoldsAcrossTolerances) {
  EXPECT_EQ(ConfidenceOf({"asp", "asp", "asp"}), Confidence::kHigh);
  EXPECT_EQ(ConfidenceOf({"bsp", "asp", "asp"}), Confidence::kMedium);
  EXPECT_EQ(ConfidenceOf({"asp", "asp", "wbsp"}), Confidence::kMedium);
  EXPECT_EQ(ConfidenceOf({"bsp", "asp", "bsp"}), Confidence::kLow);
  EXPECT_EQ(ConfidenceOf({"", "", ""}), Confidence::kLow);
  absl::StatusOr<Advice> advice = Advise(Small({1, 1, 2, 6}, 1));
  ASSERT_TRUE(advice.ok());
  const std::string text = FormatAdvice(Small({1, 1, 2, 6}, 1), *advice);
  EXPECT_TRUE(absl::StrContains(text, "recommended: --mode=" + advice->winners[1] +
                                          " (confidence " + ConfidenceName(advice->confidence)))
      << text;
  EXPECT_FALSE(absl::StrContains(text, "not predicted")) << text;
}

TEST(AdviseTest, PeerToPeerModesArePredictedUpToTheirLimit) {
  // In lockstep behind a 6x straggler, selmcast takes bsp's steps and misses at least as many of
  // the others' steps as bsp's deltas do: it is predicted no faster than bsp.
  absl::StatusOr<Advice> advice = Advise(Small({1, 1, 1, 6}, 1));
  ASSERT_TRUE(advice.ok()) << advice.status();
  auto row = [&](const std::string& mode) -> const AdviceRow& {
    return *std::find_if(advice->rows.begin(), advice->rows.end(),
                         [&](const AdviceRow& r) { return r.mode == mode; });
  };
  ASSERT_TRUE(row("selmcast").rate && row("bsp").rate);
  EXPECT_GE(row("selmcast").sim.delta_staleness_mean, row("bsp").sim.delta_staleness_mean - 0.05);
  EXPECT_LE(*row("selmcast").rate, 1.05 * *row("bsp").rate);
  // Beyond the limit, the peer-to-peer modes are shown, not predicted, and the text says so.
  AdviseOptions many = Small(std::vector<double>(sync::kPeerStalenessTrainers + 1, 1), 1);
  many.cluster.clocks = 5;
  advice = Advise(many);
  ASSERT_TRUE(advice.ok()) << advice.status();
  for (const AdviceRow& r : advice->rows) {
    EXPECT_EQ(r.rate.has_value(), !sync::FindMode(r.mode)->peer_to_peer()) << r.mode;
  }
  EXPECT_TRUE(absl::StrContains(FormatAdvice(many, *advice), "not predicted, beyond 64 trainers"));
}

TEST(AdviseTest, ARunGivesEachTrainersSlowdownAndTheStep) {
  RunSummary probe;
  auto trainer = [](int rank, int64_t clock, double compute, double wall) {
    TrainerSummary t;
    t.rank = rank;
    t.clock = clock;
    t.compute_seconds = compute;
    t.wall_seconds = wall;
    return t;
  };
  // 25 steps of 80 ms; 100 of 20 ms; one that never stepped and one evicted (both left out).
  probe.per_trainer = {trainer(0, 25, 2.0, 2.1), trainer(1, 100, 2.0, 2.2), trainer(2, 0, 0, 1),
                       trainer(3, 10, 0.1, 2)};
  probe.per_trainer[3].state = "evicted";
  absl::StatusOr<sync::ClusterSimOptions> profile =
      ProfileFromRun(probe, 1e6, sync::ClusterSimOptions{});
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->trainers, 2);
  ASSERT_EQ(profile->slowdowns.size(), 2u);
  EXPECT_DOUBLE_EQ(profile->slowdowns[0], 4);
  EXPECT_DOUBLE_EQ(profile->slowdowns[1], 1);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(profile->step), 20, 1e-9);
  EXPECT_DOUBLE_EQ(profile->model_bytes, 1e6);
  // Links per trainer of the run keep the ones of the trainers kept.
  sync::ClusterSimOptions links;
  links.links = {{1e6, 1e6}, {2e6, 2e6}, {3e6, 3e6}, {4e6, 4e6}};
  profile = ProfileFromRun(probe, 1e6, links);
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_EQ(profile->links.size(), 2u);
  EXPECT_EQ(profile->links[1].upload, 2e6);
  links.links.resize(2);
  EXPECT_EQ(ProfileFromRun(probe, 1e6, links).status().code(), absl::StatusCode::kInvalidArgument);
  probe.per_trainer = {trainer(0, 0, 0, 1)};
  EXPECT_EQ(ProfileFromRun(probe, 1e6, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdviseTest, LinksAreParsedFromTheRatesOfEachTrainer) {
  // Trainer 1's upload and trainer 2's download limited; the rest is the fallback.
  absl::StatusOr<std::vector<sync::LinkRates>> links =
      ParseLinks({"", "100mbit"}, {"", "", "1gbit"}, 3, 5);
  ASSERT_TRUE(links.ok()) << links.status();
  ASSERT_EQ(links->size(), 3u);
  EXPECT_EQ((*links)[0].upload, 5);
  EXPECT_EQ((*links)[0].download, 5);
  EXPECT_EQ((*links)[1].upload, 12.5e6);
  EXPECT_EQ((*links)[1].download, 5);
  EXPECT_EQ((*links)[2].upload, 5);
  EXPECT_EQ((*links)[2].download, 125e6);
  // No rate named: no links (every trainer on the fallback).
  links = ParseLinks({"", ""}, {}, 3, 5);
  ASSERT_TRUE(links.ok());
  EXPECT_TRUE(links->empty());
  absl::Status bad = ParseLinks({"100mbit", "fast"}, {}, 3, 5).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.message(), "\"fast\"")) << bad;
  EXPECT_EQ(ParseLinks({"1gbit", "1gbit", "1gbit", "1gbit"}, {}, 3, 5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A run that took `steps_per_second` steps of the job each second (one trainer) and reached
// accuracy 0.5, then 0.8 at `at` seconds, then 0.9 at 2 x `at`.
RunSummary Curve(double steps_per_second, double at) {
  RunSummary run;
  run.wall_seconds = 100;
  TrainerSummary t;
  t.clock = static_cast<int64_t>(steps_per_second * 100);
  run.per_trainer = {t};
  run.accuracy = {{at / 2, 0.5}, {at, 0.8}, {2 * at, 0.9}};
  return run;
}

TEST(AdviseTest, TheToleranceFitExplainsTheStaleRunsExtraSteps) {
  // Both reach 0.89 at their third evaluation: 20 s x 10 steps/s against 30 s x 10 steps/s.
  absl::StatusOr<ToleranceFit> fit = FitTolerance(Curve(10, 10), 0.5, Curve(10, 15), 2.0);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_DOUBLE_EQ(fit->accuracy, 0.89);
  EXPECT_DOUBLE_EQ(fit->fresh_steps, 200);
  EXPECT_DOUBLE_EQ(fit->stale_steps, 300);
  // (1 + 2 / t) / (1 + 0.5 / t) = 1.5 at t = 2.5.
  EXPECT_NEAR(fit->tolerance, 2.5, 1e-9);
  // A stale run that needed no more steps: staleness costs nothing measurable.
  EXPECT_EQ(FitTolerance(Curve(10, 10), 0.5, Curve(10, 9), 2.0)->tolerance,
            ToleranceFit::kMaxTolerance);
  // More than the staleness ratio (2 / 0.5 = 4) can explain: the least tolerance.
  EXPECT_EQ(FitTolerance(Curve(10, 10), 0.5, Curve(10, 50), 2.0)->tolerance,
            ToleranceFit::kMinTolerance);
}

TEST(AdviseTest, RunsThatCannotTellAreNotFitted) {
  RunSummary short_run = Curve(10, 10);
  short_run.accuracy.resize(1);
  EXPECT_EQ(FitTolerance(short_run, 0.5, Curve(10, 15), 2).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FitTolerance(Curve(10, 10), 2, Curve(10, 15), 0.5).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "the stale run was the fresher";
  EXPECT_EQ(FitTolerance(Curve(10, 10), 0.49, Curve(10, 15), 0.5).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "hardly staler: the ratio of steps would be noise";
}

TEST(AdviseTest, BadOptionsAreRefused) {
  EXPECT_EQ(Advise(Small({1, 2}, 0)).status().code(), absl::StatusCode::kInvalidArgument);
  AdviseOptions o = Small({1, 2}, 1);
  o.target_steps = -1;
  EXPECT_EQ(Advise(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Small({1, 2}, 1);
  o.cluster.slowdowns = {1, 2, 3};  // three slowdowns for two trainers
  absl::Status refused = Advise(o).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(refused.message(), "the profile has 3 slowdowns")) << refused;
}

// A run directory whose checkpoint holds a model of `floats` values.
std::string RunDirWithModel(size_t floats) {
  char pattern[] = "/tmp/advise-test-XXXXXX";
  EXPECT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  auto model = std::make_shared<store::ModelSnapshot>();
  model->specs.push_back({"w", {static_cast<int64_t>(floats)}});
  model->values.push_back(std::make_shared<const std::vector<float>>(floats, 0.5f));
  store::ShardCheckpoint checkpoint;
  checkpoint.state.model = std::move(model);
  EXPECT_TRUE(base::MakeDirectories(dir + "/checkpoints").ok());
  EXPECT_TRUE(
      store::WriteCheckpoint(store::CheckpointPath(dir + "/checkpoints", 0), checkpoint, 0, 1)
          .ok());
  return dir;
}

TEST(AdviseTest, ALocalRunIsWarnedWhenItsModeIsFarSlowerAtEveryTolerance) {
  // 8 trainers, one 8x slower: 50 ms steps and one of 400 ms.
  RunSummary run;
  for (int rank = 0; rank < 8; ++rank) {
    TrainerSummary t;
    t.rank = rank;
    t.clock = rank == 7 ? 25 : 200;
    t.compute_seconds = 10;
    t.wall_seconds = 10.5;
    run.per_trainer.push_back(t);
  }
  run.run_dir = RunDirWithModel(100000);
  LocalClusterOptions cluster;
  cluster.trainers = 8;
  cluster.seed = 1;
  sync::PolicyOptions& policy = cluster.policy;
  policy.mode = "bsp";
  const std::string warning = AdviceAfterRun(cluster, run);
  EXPECT_TRUE(absl::StartsWith(warning, "warning: ")) << warning;
  EXPECT_TRUE(absl::StrContains(warning, "predicts that bsp takes")) << warning;
  EXPECT_TRUE(absl::StrContains(warning, "syncopate compare --modes=bsp,")) << warning;
  // selmcast, in lockstep behind the straggler as bsp, is warned too.
  policy.mode = "selmcast";
  EXPECT_TRUE(absl::StrContains(AdviceAfterRun(cluster, run), "predicts that selmcast takes"));
  // asp wins at some tolerance; no checkpoint, no profile.
  policy.mode = "asp";
  EXPECT_EQ(AdviceAfterRun(cluster, run), "");
  // Equal trainers: bsp is not warned, unless one trainer's link is slow (0.4 MB over 2 Mbit/s:
  // 1.6 s a transfer, which every round waits for).
  run.per_trainer.back().clock = 200;
  policy.mode = "bsp";
  EXPECT_EQ(AdviceAfterRun(cluster, run), "");
  cluster.egress_rates = {"", "", "", "", "", "", "", "2mbit"};
  EXPECT_TRUE(absl::StrContains(AdviceAfterRun(cluster, run), "predicts that bsp takes"));
  const std::string dir = run.run_dir;
  run.run_dir += "/elsewhere";
  EXPECT_EQ(AdviceAfterRun(cluster, run), "");
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace syncopate::cli
