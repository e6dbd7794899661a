#include "cli/compare_stats.h"

#include "gtest/gtest.h"

namespace syncopate::cli {
namespace {

RunSummary Outcome(std::optional<double> time_to_target, double final_accuracy,
                   double ratio = 0.5) {
  RunSummary s;
  s.reached_target = time_to_target.has_value();
  s.time_to_target_seconds = time_to_target;
  s.final_accuracy = final_accuracy;
  s.compute_time_ratio = ratio;
  return s;
}

Trials Of(double rate, std::vector<RunSummary> runs) {
  Trials t;
  t.learning_rate = rate;
  t.runs = std::move(runs);
  return t;
}

TEST(SpreadOf, MedianOfOddAndEvenCountsAndTheRange) {
  EXPECT_FALSE(SpreadOf({}).has_value());
  const Spread odd = *SpreadOf({3, 1, 2});
  EXPECT_EQ(odd.median, 2);
  EXPECT_EQ(odd.min, 1);
  EXPECT_EQ(odd.max, 3);
  EXPECT_EQ(SpreadOf({4, 1, 2, 3})->median, 2.5);
}

// Time to target is over the runs that reached it; the others count in reached() only.
TEST(Trials, TimeToTargetIsOverTheRunsThatReachedIt) {
  const Trials t = Of(0.1, {Outcome(4.0, 0.86), Outcome(std::nullopt, 0.84), Outcome(6.0, 0.85)});
  EXPECT_EQ(t.reached(), 2);
  EXPECT_EQ(t.time_to_target()->median, 5.0);
  EXPECT_EQ(t.final_accuracy()->min, 0.84);
  EXPECT_FALSE(Of(0.1, {Outcome(std::nullopt, 0.5)}).time_to_target().has_value());
}

// A sweep picks the rate where more runs reached the target, then the faster one, then (none
// reached) the more accurate one.
TEST(Best, PrefersReachingThenSpeedThenAccuracy) {
  const std::vector<Trials> sweep = {
      Of(0.05, {Outcome(9.0, 0.86), Outcome(std::nullopt, 0.84)}),
      Of(0.1, {Outcome(8.0, 0.86), Outcome(7.0, 0.86)}),
      Of(0.2, {Outcome(5.0, 0.86), Outcome(6.0, 0.86)}),
      Of(0.4, {Outcome(std::nullopt, 0.3), Outcome(std::nullopt, 0.2)}),
  };
  EXPECT_EQ(Best(sweep).learning_rate, 0.2);
  EXPECT_EQ(Best({sweep[0], sweep[3]}).learning_rate, 0.05);
  EXPECT_EQ(Best({Of(0.4, {Outcome(std::nullopt, 0.3)}), Of(0.8, {Outcome(std::nullopt, 0.6)})})
                .learning_rate,
            0.8);
}

// Each run holds its last accuracy until its next report; the band spans the runs reported so far.
TEST(AccuracyBand, HoldsEachRunsLastReportAndSpansTheRuns) {
  RunSummary a, b;
  a.accuracy = {{0.1, 0.2}, {0.3, 0.6}};
  b.accuracy = {{0.2, 0.4}};
  const std::vector<BandPoint> band = AccuracyBand({a, b}, 0.1);
  ASSERT_EQ(band.size(), 3u);  // t = 0 has no report yet; 0.1, 0.2, 0.3
  EXPECT_NEAR(band[0].t, 0.1, 1e-9);
  EXPECT_EQ(band[0].median, 0.2);          // only a has reported
  EXPECT_NEAR(band[1].median, 0.3, 1e-9);  // a 0.2, b 0.4
  EXPECT_EQ(band[2].min, 0.4);
  EXPECT_EQ(band[2].max, 0.6);
}

TEST(Verdict, NamesTheFastestAgainstBspAndAsp) {
  const Trials bsp = Of(0.1, {Outcome(40.0, 0.86)});
  const Trials asp = Of(0.1, {Outcome(20.0, 0.86), Outcome(22.0, 0.86)});
  const Trials overlap = Of(0.1, {Outcome(16.0, 0.86), Outcome(18.4, 0.86)});
  EXPECT_EQ(Verdict({{"bsp", &bsp}, {"asp", &asp}, {"wbsp-overlap", &overlap}}, 0.85),
            "fastest to 0.85 here: wbsp-overlap (17.2 s), 0.43x bsp, 0.82x asp");
  // The fastest is a reference itself; a reference that did not reach the target in most runs.
  const Trials stuck =
      Of(0.1, {Outcome(std::nullopt, 0.80), Outcome(50.0, 0.85), Outcome(std::nullopt, 0.81)});
  EXPECT_EQ(Verdict({{"bsp", &stuck}, {"asp", &asp}}, 0.85),
            "fastest to 0.85 here: asp (21.0 s), bsp did not reach 0.85");
  EXPECT_EQ(Verdict({{"asp", &asp}}, 0.85), "fastest to 0.85 here: asp (21.0 s)");
  // Reaching in most runs qualifies; then the time decides, not how many runs reached.
  const Trials slow_but_sure =
      Of(0.1, {Outcome(40.0, 0.86), Outcome(41.0, 0.86), Outcome(39.0, 0.86)});
  const Trials fast =
      Of(0.1, {Outcome(20.0, 0.86), Outcome(std::nullopt, 0.84), Outcome(24.0, 0.86)});
  EXPECT_EQ(Verdict({{"bsp", &slow_but_sure}, {"asp", &fast}}, 0.85),
            "fastest to 0.85 here: asp (22.0 s), 0.55x bsp");
}

TEST(Verdict, SaysWhenNoModeReachedTheTarget) {
  const Trials low = Of(0.1, {Outcome(std::nullopt, 0.79)});
  const Trials lower = Of(0.1, {Outcome(std::nullopt, 0.70)});
  const Trials failed = Of(0.1, {});
  EXPECT_EQ(Verdict({{"dssync", &lower}, {"asp", &low}, {"bsp", &failed}}, 0.8),
            "no mode reached 0.8 in most of its runs here; the best final accuracy: asp (0.7900)");
  EXPECT_EQ(Verdict({{"bsp", &failed}}, 0.8), "no mode ran to the end");
}

}  // namespace
}  // namespace syncopate::cli
