// `syncopate compare`: runs one scenario under several modes, one after another, and writes one
// report: DIR/<mode>/ (each run's own report, as `syncopate local` writes it), DIR/compare.csv
// (one row per mode), DIR/compare.svg (accuracy over time per mode and compute-time ratio per
// mode, drawn by gnuplot) and a printed table.
#ifndef SYNCOPATE_CLI_COMPARE_COMMAND_H_
#define SYNCOPATE_CLI_COMPARE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/local_command.h"

namespace syncopate::cli {

struct CompareOptions {
  // The scenario; its mode is replaced by each of `modes` in turn.
  LocalRunOptions run;
  std::vector<std::string> modes;
  std::string report_dir;
};

struct CompareRow {
  std::string mode;
  std::optional<RunSummary> summary;  // absent when the run failed
  std::string error;
};

// INVALID_ARGUMENT (nothing runs) for an empty or repeated mode list, an unknown mode, bad
// cluster options or an unusable report directory. A mode whose run fails is reported as failed
// and the others still run; an interrupt (Ctrl-C) stops after the current mode.
absl::StatusOr<std::vector<CompareRow>> RunCompare(const CompareOptions& options);

// compare.csv's contents.
std::string CompareCsv(const std::vector<CompareRow>& rows);
// The printed table.
std::string FormatCompare(const std::vector<CompareRow>& rows);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_COMPARE_COMMAND_H_
