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

// Accuracy bands are sampled this often (seconds).
constexpr double kBandStep = 0.1;

std::string Optional(const std::optional<double>& v, const absl::FormatSpec<double>& format) {
  return v ? absl::StrFormat(format, *v) : "";
}

// "median,min,max" of a spread, or ",," when there is none.
std::string SpreadCsv(const std::optional<Spread>& s, const absl::FormatSpec<double>& format) {
  if (!s) return ",,";
  return absl::StrCat(absl::StrFormat(format, s->median), ",", absl::StrFormat(format, s->min), ",",
                      absl::StrFormat(format, s->max));
}

// "median", or "median [min-max]" when the runs differ.
std::string SpreadText(const std::optional<Spread>& s, const absl::FormatSpec<double>& format,
                       const std::string& none = "n/a") {
  if (!s) return none;
  const std::string median = absl::StrFormat(format, s->median);
  const std::string low = absl::StrFormat(format, s->min), high = absl::StrFormat(format, s->max);
  return low == high ? median : absl::StrCat(median, " [", low, "-", high, "]");
}

std::string TrialDir(const CompareOptions& o, const std::string& mode, double rate, uint64_t seed) {
  std::string dir = absl::StrCat(o.report_dir, "/", mode);
  if (!o.learning_rates.empty()) absl::StrAppend(&dir, "/lr-", rate);
  if (o.repeats > 1) absl::StrAppend(&dir, "/seed-", seed);
  return dir;
}

// The learning rate as the reports show it: `empty` when the scripts chose their own.
std::string RateText(const Trials& t, const std::string& empty) {
  return t.scripts_own_rate ? empty : absl::StrFormat("%g", t.learning_rate);
}

// A gnuplot script drawing accuracy over time per mode, the median with a min-max band (left),
// and compute-time ratio per mode with its range (right) into compare.svg. Paths are relative to
// the report directory, where gnuplot runs.
std::string PlotScript(const std::vector<CompareRow>& rows, std::optional<double> target) {
  std::vector<std::string> curves;
  int color = 0;
  for (const CompareRow& row : rows) {
    // A mode none of whose runs reported an accuracy has no curve (and an empty band.csv).
    if (AccuracyBand(row.trials.runs, kBandStep).empty()) continue;
    ++color;
    const std::string band = absl::StrCat("'", row.mode, "/band.csv'");
    curves.push_back(absl::StrCat(band, " using 1:3:4 with filledcurves fs transparent solid 0.2 ",
                                  "lc ", color, " notitle"));
    curves.push_back(
        absl::StrCat(band, " using 1:2 with lines lw 2 lc ", color, " title '", row.mode, "'"));
  }
  std::string script = absl::StrCat(
      "set terminal svg size 1200,480 dynamic font 'sans,11'\n"
      "set output 'compare.svg'\n"
      "set datafile separator ','\n"
      "set datafile columnheaders\n"
      "set multiplot layout 1,2\n"
      "set title 'Test accuracy over time (median, min-max over runs)'\n"
      "set xlabel 'seconds'\nset ylabel 'test accuracy'\nset grid\nset key bottom right\n",
      target ? absl::StrFormat(
                   "set arrow from graph 0, first %.4f to graph 1, first %.4f nohead dt 2\n",
                   *target, *target)
             : "");
  if (curves.empty()) {
    script += "set label 'no accuracy reported' at graph 0.3, graph 0.5\nplot [0:1] NaN notitle\n";
  } else {
    absl::StrAppend(&script, "plot ", absl::StrJoin(curves, ", \\\n     "), "\n");
  }
  absl::StrAppend(
      &script,
      "unset arrow\n"
      "set title 'Compute-time ratio (mean over trainers; median, min-max over runs)'\n"
      "set xlabel ''\nset ylabel 'compute time / wall time'\n"
      "set yrange [0:1.05]\nset style fill solid 0.6\nset boxwidth 0.6\n"
      "set xtics rotate by -30\nunset key\n"
      "plot 'compare.csv' using 0:(column('compute_time_ratio')):xtic(1) with boxes, \\\n"
      "     '' using 0:(column('compute_time_ratio')):(column('compute_time_ratio_min')):"
      "(column('compute_time_ratio_max')) with yerrorbars lc rgb 'black' pt 0, \\\n"
      "     '' using 0:(column('compute_time_ratio')):(sprintf('%.2f', "
      "column('compute_time_ratio')))"
      " with labels offset 2,0.7\n"
      "unset multiplot\n");
  return script;
}

std::string BandCsv(const std::vector<RunSummary>& runs) {
  std::string csv = "seconds,median,min,max\n";
  for (const BandPoint& p : AccuracyBand(runs, kBandStep)) {
    absl::StrAppendFormat(&csv, "%.2f,%.4f,%.4f,%.4f\n", p.t, p.median, p.min, p.max);
  }
  return csv;
}

absl::Status WriteReports(const CompareOptions& options, const std::vector<CompareRow>& rows) {
  RETURN_IF_ERROR(base::WriteFileAtomically(options.report_dir + "/compare.csv", CompareCsv(rows)));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(options.report_dir + "/compare-runs.csv", CompareRunsCsv(rows)));
  // Earlier rows' bands were written when they finished.
  const CompareRow& row = rows.back();
  return base::WriteFileAtomically(absl::StrCat(options.report_dir, "/", row.mode, "/band.csv"),
                                   BandCsv(row.trials.runs));
}

absl::Status Validate(const CompareOptions& options) {
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
  if (options.repeats < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--repeats must be at least 1, got ", options.repeats));
  }
  std::set<double> rates;
  for (double rate : options.learning_rates) {
    if (!(rate > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lr-sweep: learning rate ", rate, " is not positive"));
    }
    if (!rates.insert(rate).second) {
      return absl::InvalidArgumentError(absl::StrCat("--lr-sweep lists ", rate, " twice"));
    }
  }
  if (options.report_dir.empty()) return absl::InvalidArgumentError("--report-dir is required");
  return absl::OkStatus();
}

}  // namespace

bool CompareRow::interrupted() const {
  for (const Trials& t : sweep) {
    for (const RunSummary& run : t.runs) {
      if (run.interrupted) return true;
    }
  }
  return false;
}

bool CompareRow::faulty() const {
  for (const Trials& t : sweep) {
    if (!t.errors.empty()) return true;
    for (const RunSummary& run : t.runs) {
      if (run.faulty()) return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<CompareRow>> RunCompare(const CompareOptions& options) {
  RETURN_IF_ERROR(Validate(options));
  RETURN_IF_ERROR(MakeReportDir(options.report_dir));
  const std::vector<double> rates = options.learning_rates.empty()
                                        ? std::vector<double>{options.run.cluster.learning_rate}
                                        : options.learning_rates;

  std::vector<CompareRow> rows;
  bool interrupted = false;
  for (const std::string& mode : options.modes) {
    CompareRow row{mode, {}, {}};
    for (double rate : rates) {
      if (interrupted) break;
      Trials trials;
      trials.learning_rate = rate;
      trials.scripts_own_rate = options.learning_rates.empty() &&
                                !options.run.cluster.trainer_command.empty() &&
                                options.run.cluster.command_ranks.empty();
      for (int k = 0; k < options.repeats && !interrupted; ++k) {
        LocalRunOptions run = options.run;
        run.cluster.policy.mode = mode;
        run.cluster.learning_rate = static_cast<float>(rate);
        run.cluster.seed = options.run.cluster.seed + static_cast<uint64_t>(k);
        run.report_dir = TrialDir(options, mode, rate, run.cluster.seed);
        std::fprintf(stderr, "\n=== %s, learning rate %g, seed %llu ===\n", mode.c_str(), rate,
                     static_cast<unsigned long long>(run.cluster.seed));
        absl::StatusOr<RunSummary> summary = RunLocal(run);
        if (summary.ok()) {
          trials.runs.push_back(*summary);
          trials.seeds.push_back(run.cluster.seed);
          interrupted = summary->interrupted;
        } else {
          trials.errors.push_back(
              absl::StrCat("seed ", run.cluster.seed, ": ", summary.status().message()));
          std::fprintf(stderr, "%s failed: %s\n", mode.c_str(), trials.errors.back().c_str());
        }
      }
      row.sweep.push_back(std::move(trials));
    }
    row.trials = Best(row.sweep);
    rows.push_back(std::move(row));
    RETURN_IF_ERROR(WriteReports(options, rows));
    if (interrupted) break;
  }

  if (options.run.target_accuracy && !interrupted) {
    RETURN_IF_ERROR(base::WriteFileAtomically(options.report_dir + "/verdict.txt",
                                              CompareVerdict(rows, *options.run.target_accuracy)));
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
      "mode,learning_rate,runs,reached,reached_target,time_to_target_seconds,"
      "time_to_target_seconds_min,time_to_target_seconds_max,final_accuracy,final_accuracy_min,"
      "final_accuracy_max,compute_time_ratio,compute_time_ratio_min,compute_time_ratio_max,"
      "overhead_per_step_seconds,overhead_per_step_seconds_min,overhead_per_step_seconds_max,"
      "mean_wait_seconds,wall_seconds,rounds_closed,mean_real_compute_seconds,"
      "mean_emulated_compute_seconds,error\n";
  for (const CompareRow& row : rows) {
    const Trials& t = row.trials;
    const int runs = static_cast<int>(t.runs.size());
    // Medians of the per-run figures that have no range column.
    auto median = [&](double RunSummary::*field) {
      std::vector<double> values;
      for (const RunSummary& r : t.runs) values.push_back(r.*field);
      return SpreadOf(values).value_or(Spread{}).median;
    };
    std::vector<double> rounds;
    for (const RunSummary& r : t.runs) rounds.push_back(static_cast<double>(r.rounds_closed));
    absl::StrAppend(
        &csv, row.mode, ",", RateText(t, ""), ",", runs, ",", t.reached(), ",",
        t.mostly_reached() ? "true" : "false", ",", SpreadCsv(t.time_to_target(), "%.2f"), ",",
        SpreadCsv(t.final_accuracy(), "%.4f"), ",", SpreadCsv(t.compute_time_ratio(), "%.4f"), ",",
        SpreadCsv(t.overhead_per_step(), "%.4f"), ",",
        runs == 0
            ? ",,,,"
            : absl::StrFormat("%.3f,%.2f,%g,%.3f,%.3f", median(&RunSummary::mean_wait_seconds),
                              median(&RunSummary::wall_seconds), SpreadOf(rounds)->median,
                              median(&RunSummary::mean_real_compute_seconds),
                              median(&RunSummary::mean_emulated_compute_seconds)),
        ",", t.errors.empty() ? "" : absl::StrCat("\"", absl::StrJoin(t.errors, "; "), "\""), "\n");
  }
  return csv;
}

std::string CompareRunsCsv(const std::vector<CompareRow>& rows) {
  std::string csv =
      "mode,learning_rate,seed,reached_target,time_to_target_seconds,final_accuracy,"
      "compute_time_ratio,overhead_per_step_seconds,wall_seconds,faults\n";
  for (const CompareRow& row : rows) {
    for (const Trials& t : row.sweep) {
      for (size_t i = 0; i < t.runs.size(); ++i) {
        const RunSummary& s = t.runs[i];
        absl::StrAppend(&csv, row.mode, ",", RateText(t, ""), ",", t.seeds[i], ",",
                        s.reached_target ? "true" : "false", ",",
                        Optional(s.time_to_target_seconds, "%.2f"), ",",
                        Optional(s.final_accuracy, "%.4f"), ",",
                        absl::StrFormat("%.4f,%.4f,%.2f", s.compute_time_ratio,
                                        s.overhead_per_step_seconds, s.wall_seconds),
                        ",", s.faults.size(), "\n");
      }
    }
  }
  return csv;
}

std::string CompareVerdict(const std::vector<CompareRow>& rows, double target_accuracy) {
  std::vector<NamedTrials> modes;
  for (const CompareRow& row : rows) modes.push_back({row.mode, &row.trials});
  return Verdict(modes, target_accuracy) + "\n";
}

std::string FormatCompare(const std::vector<CompareRow>& rows) {
  std::string out = absl::StrFormat("%-13s %-6s %-26s %-22s %-20s %-14s %s\n", "mode", "lr",
                                    "time to target (runs)", "final accuracy", "compute ratio",
                                    "overhead/step", "real+emulated (s)");
  for (const CompareRow& row : rows) {
    const Trials& t = row.trials;
    if (t.runs.empty()) {
      absl::StrAppendFormat(&out, "%-13s failed: %s\n", row.mode, absl::StrJoin(t.errors, "; "));
      continue;
    }
    const int runs = static_cast<int>(t.runs.size());
    std::string time = t.reached() == 0 ? "not reached" : SpreadText(t.time_to_target(), "%.1fs");
    if (runs > 1) absl::StrAppend(&time, " (", t.reached(), "/", runs, ")");
    std::optional<Spread> overhead = t.overhead_per_step();
    if (overhead) *overhead = {overhead->median * 1000, overhead->min * 1000, overhead->max * 1000};
    std::vector<double> real, emulated;
    for (const RunSummary& r : t.runs) {
      real.push_back(r.mean_real_compute_seconds);
      emulated.push_back(r.mean_emulated_compute_seconds);
    }
    absl::StrAppendFormat(
        &out, "%-13s %-6s %-26s %-22s %-20s %-14s %.1f+%.1f\n", row.mode, RateText(t, "-"), time,
        SpreadText(t.final_accuracy(), "%.4f"), SpreadText(t.compute_time_ratio(), "%.2f"),
        SpreadText(overhead, "%.1fms"), SpreadOf(real)->median, SpreadOf(emulated)->median);
    if (!t.errors.empty())
      absl::StrAppend(&out, "  failed runs: ", absl::StrJoin(t.errors, "; "), "\n");
    for (size_t i = 0; i < t.runs.size(); ++i) {
      if (!t.runs[i].faulty()) continue;
      std::vector<std::string> what;
      for (const auto& fault : t.runs[i].faults) what.push_back(fault.second);
      if (!t.runs[i].failure.empty()) what.push_back("failed: " + t.runs[i].failure);
      absl::StrAppend(&out, "  FAULTS (seed ", t.seeds[i], "): ", absl::StrJoin(what, "; "), "\n");
    }
  }
  return out;
}

}  // namespace syncopate::cli
