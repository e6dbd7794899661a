// Statistics over the repeated runs of one mode in `syncopate compare` (--repeats, --lr-sweep):
// medians and ranges, the best learning rate of a sweep, and accuracy-over-time bands. Pure
// functions over run summaries, so the report's figures are unit-tested.
#ifndef SYNCOPATE_CLI_COMPARE_STATS_H_
#define SYNCOPATE_CLI_COMPARE_STATS_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/run_report.h"

namespace syncopate::cli {

// The median (the mean of the middle two for an even count), minimum and maximum of some values.
struct Spread {
  double median = 0, min = 0, max = 0;
};
// nullopt for no values.
std::optional<Spread> SpreadOf(std::vector<double> values);

// The runs of one mode at one learning rate, one per seed.
struct Trials {
  double learning_rate = 0;
  // The trainers are a user's scripts with their own optimizer and rate (no --lr-sweep): the
  // reports show no learning rate rather than one the scripts did not use.
  bool scripts_own_rate = false;
  std::vector<RunSummary> runs;
  std::vector<uint64_t> seeds;      // of runs, in order
  std::vector<std::string> errors;  // runs that failed, one message each

  // Runs that reached the target.
  int reached() const;
  // More than half the runs reached it (compare.csv's reached_target).
  bool mostly_reached() const { return 2 * reached() > static_cast<int>(runs.size()); }
  // Time to target over the runs that reached it; nullopt when none did.
  std::optional<Spread> time_to_target() const;
  std::optional<Spread> final_accuracy() const;  // over runs that reported one
  std::optional<Spread> compute_time_ratio() const;
  std::optional<Spread> overhead_per_step() const;
};

// True when `a` is better than `b`: more runs reached the target; then the shorter median time to
// target; then (neither reached) the higher median final accuracy. How a sweep picks each mode's
// rate, as the papers tune each baseline.
bool Better(const Trials& a, const Trials& b);

// The best of a sweep's trials (see Better; the first of equals). Precondition: not empty.
const Trials& Best(const std::vector<Trials>& sweep);

// One mode's trials at its reported rate (CompareRow), for the verdict.
struct NamedTrials {
  std::string mode;
  const Trials* trials = nullptr;
};

// The line `syncopate compare` ends with: of the modes that reached `target_accuracy` in most of
// their runs, the one with the shortest median time, and that time as a multiple of bsp's and
// asp's where they ran ("fastest to 0.85 here: wbsp-overlap (12.3 s), 0.41x bsp, 0.92x asp"; a
// reference that did not reach it in most runs: "bsp did not reach 0.85"). When no mode did, says
// so and names the best median final accuracy. Modes with no run are left out.
std::string Verdict(const std::vector<NamedTrials>& modes, double target_accuracy);

// Accuracy over time across runs, sampled every `step` seconds from 0 to the longest run: each
// run's accuracy at t is its last report at or before t. A row holds (t, median, min, max) over the
// runs that have reported by t; rows before any report are left out.
struct BandPoint {
  double t = 0, median = 0, min = 0, max = 0;
};
std::vector<BandPoint> AccuracyBand(const std::vector<RunSummary>& runs, double step);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_COMPARE_STATS_H_
