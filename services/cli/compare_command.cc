#include "cli/compare_command.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "cli/child_process.h"

namespace syncopate::cli {
namespace {

std::string Optional(const std::optional<double>& v, const char* format) {
  return v ? absl::StrFormat(format, *v) : "";
}

// A gnuplot script drawing accuracy over time per mode (left) and compute-time ratio per mode
// (right) into compare.svg. Paths are relative to the report directory, where gnuplot runs.
std::string PlotScript(const std::vector<CompareRow>& rows, double target) {
  std::vector<std::string> curves;
  for (const CompareRow& row : rows) {
    if (!row.summary || row.summary->accuracy.empty()) continue;
    curves.push_back(absl::StrCat("'", row.mode, "/accuracy.csv' using 1:2 with lines lw 2 title '",
                                  row.mode, "'"));
  }
  std::string script = absl::StrCat(
      "set terminal svg size 1200,480 dynamic font 'sans,11'\n"
      "set output 'compare.svg'\n"
      "set datafile separator ','\n"
      "set key autotitle columnhead\n"
      "set multiplot layout 1,2\n"
      "set title 'Test accuracy over time'\n"
      "set xlabel 'seconds'\nset ylabel 'test accuracy'\nset grid\nset key bottom right\n",
      absl::StrFormat("set arrow from graph 0, first %.4f to graph 1, first %.4f nohead dt 2\n",
                      target, target));
  if (curves.empty()) {
    script += "set label 'no accuracy reported' at graph 0.3, graph 0.5\nplot [0:1] NaN notitle\n";
  } else {
    absl::StrAppend(&script, "plot ", absl::StrJoin(curves, ", \\\n     "), "\n");
  }
  absl::StrAppend(&script,
                  "unset arrow\n"
                  "set title 'Compute-time ratio (mean over trainers)'\n"
                  "set xlabel ''\nset ylabel 'compute time / wall time'\n"
                  "set yrange [0:1.05]\nset style fill solid 0.6\nset boxwidth 0.6\n"
                  "set xtics rotate by -30\nunset key\n"
                  "plot 'compare.csv' using 0:5:xtic(1) with boxes, \\\n"
                  "     '' using 0:5:(sprintf('%.2f', $5)) with labels offset 0,0.7\n"
                  "unset multiplot\n");
  return script;
}

}  // namespace

absl::StatusOr<std::vector<CompareRow>> RunCompare(const CompareOptions& options) {
  if (options.modes.empty()) return absl::InvalidArgumentError("--modes is empty");
  std::set<std::string> seen;
  for (const std::string& mode : options.modes) {
    if (!seen.insert(mode).second) {
      return absl::InvalidArgumentError(absl::StrCat("mode '", mode, "' is listed twice"));
    }
    LocalClusterOptions cluster = options.run.cluster;
    cluster.policy.mode = mode;
    RETURN_IF_ERROR(LocalCluster::Validate(cluster));
  }
  if (options.report_dir.empty()) return absl::InvalidArgumentError("--report-dir is required");
  RETURN_IF_ERROR(MakeReportDir(options.report_dir));

  std::vector<CompareRow> rows;
  for (const std::string& mode : options.modes) {
    LocalRunOptions run = options.run;
    run.cluster.policy.mode = mode;
    run.report_dir = absl::StrCat(options.report_dir, "/", mode);
    std::fprintf(stderr, "\n=== %s ===\n", mode.c_str());
    CompareRow row{mode, std::nullopt, ""};
    absl::StatusOr<RunSummary> summary = RunLocal(run);
    if (summary.ok()) {
      row.summary = *summary;
    } else {
      row.error = std::string(summary.status().message());
      std::fprintf(stderr, "%s failed: %s\n", mode.c_str(), row.error.c_str());
    }
    rows.push_back(row);
    RETURN_IF_ERROR(
        base::WriteFileAtomically(options.report_dir + "/compare.csv", CompareCsv(rows)));
    if (summary.ok() && summary->interrupted) break;
  }

  const std::string script_path = options.report_dir + "/compare.gp";
  RETURN_IF_ERROR(
      base::WriteFileAtomically(script_path, PlotScript(rows, options.run.target_accuracy)));
  // gnuplot resolves the script's relative paths against its working directory.
  absl::StatusOr<std::unique_ptr<ChildProcess>> gnuplot = ChildProcess::Spawn(
      {"/bin/sh", "-c", "cd \"$0\" && exec gnuplot compare.gp", options.report_dir}, {},
      options.report_dir + "/gnuplot.log");
  const int status = gnuplot.ok() ? (*gnuplot)->WaitOrKill(absl::Seconds(60)) : -1;
  if (status != 0) {
    std::fprintf(stderr,
                 "warning: could not draw compare.svg (is gnuplot installed? see %s/gnuplot.log)\n",
                 options.report_dir.c_str());
  }
  return rows;
}

std::string CompareCsv(const std::vector<CompareRow>& rows) {
  std::string csv =
      "mode,reached_target,time_to_target_seconds,final_accuracy,compute_time_ratio,"
      "mean_wait_seconds,wall_seconds,rounds_closed,mean_real_compute_seconds,"
      "mean_emulated_compute_seconds,overhead_per_step_seconds,error\n";
  for (const CompareRow& row : rows) {
    if (!row.summary) {
      absl::StrAppend(&csv, row.mode, ",false,,,,,,,,,,\"", row.error, "\"\n");
      continue;
    }
    const RunSummary& s = *row.summary;
    absl::StrAppend(&csv, row.mode, ",", s.reached_target ? "true" : "false", ",",
                    Optional(s.time_to_target_seconds, "%.2f"), ",",
                    Optional(s.final_accuracy, "%.4f"), ",",
                    absl::StrFormat("%.4f,%.3f,%.2f,%d,%.3f,%.3f,%.4f", s.compute_time_ratio,
                                    s.mean_wait_seconds, s.wall_seconds, s.rounds_closed,
                                    s.mean_real_compute_seconds, s.mean_emulated_compute_seconds,
                                    s.overhead_per_step_seconds),
                    ",\n");
  }
  return csv;
}

std::string FormatCompare(const std::vector<CompareRow>& rows) {
  std::string out = absl::StrFormat("%-13s %-16s %-15s %-14s %-14s %-16s %-20s %s\n", "mode",
                                    "time to target", "final accuracy", "compute ratio",
                                    "mean wait (s)", "overhead/step", "real+emulated (s)", "rounds");
  for (const CompareRow& row : rows) {
    if (!row.summary) {
      absl::StrAppendFormat(&out, "%-13s failed: %s\n", row.mode, row.error);
      continue;
    }
    const RunSummary& s = *row.summary;
    absl::StrAppendFormat(
        &out, "%-13s %-16s %-15s %-14.2f %-14.2f %-16s %-20s %d\n", row.mode,
        s.reached_target ? absl::StrFormat("%.1fs", *s.time_to_target_seconds) : "not reached",
        s.final_accuracy ? absl::StrFormat("%.4f", *s.final_accuracy) : "n/a", s.compute_time_ratio,
        s.mean_wait_seconds, absl::StrFormat("%.1f ms", s.overhead_per_step_seconds * 1000),
        absl::StrFormat("%.1f+%.1f", s.mean_real_compute_seconds, s.mean_emulated_compute_seconds),
        s.rounds_closed);
  }
  return out;
}

}  // namespace syncopate::cli
