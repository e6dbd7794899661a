// `syncopate compare`: runs one scenario under several modes, one after another, each at every
// learning rate of a sweep and with several seeds, and writes one report:
//   DIR/<mode>/[lr-<rate>/][seed-<seed>/]  each run's own report, as `syncopate local` writes it
//                                          (the lr- and seed- levels only with a sweep, repeats);
//   DIR/compare.csv       one row per mode at its reported rate: medians, minima and maxima;
//   DIR/compare-runs.csv  one row per run;
//   DIR/<mode>/band.csv   accuracy over time at the reported rate (median, min, max over seeds);
//   DIR/compare.svg       accuracy over time per mode with min-max bands, and compute-time ratio
//                         per mode with its range (gnuplot);
//   DIR/verdict.txt       the fastest mode to the target, against bsp and asp (CompareVerdict);
// and a printed table. A sweep reports each mode at its best rate (compare_stats.h), as the papers
// tune each baseline; the table and compare.csv say which rate that was.
#ifndef SYNCOPATE_CLI_COMPARE_COMMAND_H_
#define SYNCOPATE_CLI_COMPARE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/compare_stats.h"
#include "cli/local_command.h"

namespace syncopate::cli {

struct CompareOptions {
  // The scenario; its mode is replaced by each of `modes` in turn.
  LocalRunOptions run;
  std::vector<std::string> modes;
  std::string report_dir;
  // Runs per mode and rate, with seeds run.cluster.seed, +1, ...
  int repeats = 1;
  // Learning rates to try per mode (empty: run.cluster.learning_rate only).
  std::vector<double> learning_rates;
};

struct CompareRow {
  std::string mode;
  Trials trials;              // at the reported rate: the sweep's best
  std::vector<Trials> sweep;  // every rate tried, in order
  bool interrupted() const;
  // Some run of the sweep failed, or survived faults (a restart, an eviction): no normal finish.
  bool faulty() const;
};

// INVALID_ARGUMENT (nothing runs) for an empty or repeated mode list, an unknown mode, bad
// cluster options, repeats < 1, a learning rate that is not positive or is listed twice, or an
// unusable report directory. A run that fails is reported as failed and the others still run; an
// interrupt (Ctrl-C) stops after the current run.
absl::StatusOr<std::vector<CompareRow>> RunCompare(const CompareOptions& options);

// compare.csv's and compare-runs.csv's contents (compare-runs.csv counts each run's faults).
std::string CompareCsv(const std::vector<CompareRow>& rows);
std::string CompareRunsCsv(const std::vector<CompareRow>& rows);
// The printed table.
std::string FormatCompare(const std::vector<CompareRow>& rows);
// The line the printed report ends with (Verdict), also written to DIR/verdict.txt.
std::string CompareVerdict(const std::vector<CompareRow>& rows, double target_accuracy);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_COMPARE_COMMAND_H_
