#include "cli/run_report.h"

#include "gtest/gtest.h"

namespace syncopate::cli {
namespace {

v1::ClusterStatus Status(const std::string& mode, int64_t bound) {
  v1::ClusterStatus status;
  status.set_mode(mode);
  status.set_staleness_bound(bound);
  status.set_uptime_seconds(12.34);
  status.set_min_live_clock(40);
  status.set_rounds_closed(0);
  status.set_live_trainers(1);
  for (int rank : {1, 0}) {
    v1::TrainerStatus* t = status.add_trainers();
    t->set_rank(rank);
    t->set_slowdown(rank + 1);
    t->set_clock(40 + rank);
    t->set_compute_time_ratio(rank == 0 ? 0.5 : 0.25);
    t->set_state(rank == 0 ? "live" : "evicted");
    t->set_group(-1);
  }
  return status;
}

TEST(FormatStatus, SaysWhatTheCoordinatorKnowsNow) {
  EXPECT_EQ(FormatStatus(Status("ssp", 0)),
            "mode ssp (staleness bound 0), 1 of 2 trainers live, up 12.3s, min clock 40, 0 rounds "
            "closed, compute-time ratio 0.38\n"
            "  rank  slowdown  clock    wait(s)   compute ratio  state    group\n"
            "  0     1.0       40       0.0       0.50           live     -\n"
            "  1     2.0       41       0.0       0.25           evicted  -\n");
}

TEST(FormatStatus, NamesOnlyWhatTheModeAndTheJobHave) {
  v1::ClusterStatus status = Status("hybrid", -1);
  status.set_groups(2);
  status.set_test_accuracy(0.8512);
  status.set_test_accuracy_at_seconds(11.0);
  status.set_done(true);
  status.set_done_reason("test accuracy 0.8512 reached 0.85");
  const std::string line = FormatStatus(status).substr(0, FormatStatus(status).find('\n'));
  EXPECT_EQ(line,
            "mode hybrid, 1 of 2 trainers live, up 12.3s, min clock 40, 0 rounds closed, 2 "
            "groups, test accuracy 0.8512 at 11.0s, compute-time ratio 0.38, done: test accuracy "
            "0.8512 reached 0.85");
}

// dssync's final average: its round and the evaluator's accuracy of it, in the status line, the
// summary's table and summary.json; absent (round 0, accuracy null) in a job that had none.
TEST(FillFromStatus, ReportsTheFinalAverage) {
  v1::ClusterStatus status = Status("dssync", -1);
  RunSummary none;
  FillFromStatus(status, &none);
  EXPECT_EQ(ToJson(none)["final_average"]["round"], 0);
  EXPECT_TRUE(ToJson(none)["final_average"]["accuracy"].is_null());
  EXPECT_EQ(FormatSummary(none).find("final average"), std::string::npos);

  status.set_final_round(421);
  status.set_final_test_accuracy(0.8189);
  EXPECT_NE(FormatStatus(status).find(", final average in round 421 (accuracy 0.8189)"),
            std::string::npos)
      << FormatStatus(status);
  RunSummary s;
  FillFromStatus(status, &s);
  EXPECT_EQ(s.final_average_round, 421);
  ASSERT_TRUE(s.final_average_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*s.final_average_accuracy, 0.8189);
  EXPECT_EQ(ToJson(s)["final_average"]["round"], 421);
  EXPECT_DOUBLE_EQ(ToJson(s)["final_average"]["accuracy"].get<double>(), 0.8189);
  EXPECT_NE(FormatSummary(s).find("final average of every trainer's model in round 421: accuracy "
                                  "0.8189\n"),
            std::string::npos)
      << FormatSummary(s);
}

// The overhead per step is the slowest trainer's (most compute per step) time per step beyond its
// compute; real and emulated compute are reported apart.
TEST(FillFromStatus, ReportsTheSlowestTrainersOverheadAndRealAndEmulatedCompute) {
  v1::ClusterStatus status;
  auto add = [&](int rank, int64_t clock, double compute, double emulated, double wall) {
    v1::TrainerStatus* t = status.add_trainers();
    t->set_rank(rank);
    t->set_clock(clock);
    t->mutable_timings()->set_compute_seconds(compute);
    t->mutable_timings()->set_emulated_compute_seconds(emulated);
    t->mutable_timings()->set_wall_seconds(wall);
  };
  add(0, 100, 10.0, 9.0, 20.0);  // 0.1 s per step, waits the rest
  add(1, 40, 16.0, 15.0, 20.0);  // 0.4 s per step: the slowest; 4 s beyond compute in 40 steps
  add(2, 0, 0.0, 0.0, 20.0);     // never stepped
  RunSummary summary;
  FillFromStatus(status, &summary);
  EXPECT_DOUBLE_EQ(summary.overhead_per_step_seconds, 0.1);
  EXPECT_DOUBLE_EQ(summary.mean_real_compute_seconds, 2.0 / 3);
  EXPECT_DOUBLE_EQ(summary.mean_emulated_compute_seconds, 24.0 / 3);
  EXPECT_DOUBLE_EQ(summary.per_trainer[1].emulated_compute_seconds, 15.0);
}

// Multicast scale: per multicast, the receivers named and the models delivered over n - 1.
TEST(FillFromStatus, ReportsTheMulticastScale) {
  v1::ClusterStatus status;
  auto add = [&](int rank, uint64_t multicasts, uint64_t receivers, uint64_t delivered) {
    v1::TrainerStatus* t = status.add_trainers();
    t->set_rank(rank);
    t->set_multicasts(multicasts);
    t->set_multicast_receivers(receivers);
    t->set_models_delivered(delivered);
  };
  add(0, 10, 20, 15);
  add(1, 30, 40, 25);
  add(2, 0, 0, 0);
  add(3, 0, 0, 0);
  add(4, 0, 0, 0);
  RunSummary summary;
  FillFromStatus(status, &summary);
  EXPECT_DOUBLE_EQ(summary.planned_multicast_scale, 60.0 / (40 * 4));
  EXPECT_DOUBLE_EQ(summary.multicast_scale, 40.0 / (40 * 4));
  EXPECT_NE(FormatSummary(summary).find("multicast scale 0.25 (receivers named 0.38)"),
            std::string::npos)
      << FormatSummary(summary);
  EXPECT_EQ(ToJson(summary)["multicast_scale"], 0.25);
  // Store modes multicast nothing: no such line.
  RunSummary store_mode;
  FillFromStatus(v1::ClusterStatus(), &store_mode);
  EXPECT_EQ(store_mode.multicast_scale, 0);
  EXPECT_EQ(FormatSummary(store_mode).find("multicast scale"), std::string::npos);
}

// A run without a target says how it ended; summary.json has a null target then.
TEST(RunReport, ARunWithoutATargetSaysHowItEnded) {
  RunSummary s;
  s.mode = "bsp";
  s.finished = true;
  s.ended = "finished: every trainer completed 40 steps";
  EXPECT_NE(FormatSummary(s).find("finished: every trainer completed 40 steps in"),
            std::string::npos)
      << FormatSummary(s);
  EXPECT_TRUE(ToJson(s)["target_accuracy"].is_null());
  EXPECT_TRUE(ToJson(s)["finished"].get<bool>());
  s.target_accuracy = 0.9;
  EXPECT_NE(FormatSummary(s).find("did not reach 0.90 (finished: every trainer"), std::string::npos)
      << FormatSummary(s);
  EXPECT_EQ(ToJson(s)["target_accuracy"], 0.9);
}

}  // namespace
}  // namespace syncopate::cli
