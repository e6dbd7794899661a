#include "cli/sim_command.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace syncopate::cli {

absl::StatusOr<std::vector<sync::ClusterSimResult>> RunSim(const SimCommand& command) {
  if (command.modes.empty()) return absl::InvalidArgumentError("no mode to simulate");
  std::vector<sync::ClusterSimResult> rows;
  for (const std::string& mode : command.modes) {
    sync::ClusterSimOptions options = command.sim;
    options.policy.mode = mode;
    absl::StatusOr<sync::ClusterSimResult> row = sync::SimulateCluster(options);
    if (!row.ok()) {
      return absl::Status(row.status().code(), absl::StrCat(mode, ": ", row.status().message()));
    }
    rows.push_back(*std::move(row));
  }
  return rows;
}

std::string FormatSim(const std::vector<sync::ClusterSimResult>& rows) {
  std::string out =
      absl::StrFormat("%-13s %8s %9s %8s %8s %14s %11s %7s %10s %10s %11s %10s %7s\n", "mode",
                      "trainers", "s/clock", "steps/s", "compute", "clock gap", "delta", "rounds",
                      "events", "grants", "policy us", "events/s", "wall s");
  absl::StrAppendFormat(&out, "%-13s %8s %9s %8s %8s %14s %11s %7s %10s %10s %11s %10s %7s\n", "",
                        "", "", "", "ratio", "p50/p99/max", "staleness", "", "", "", "per event",
                        "(policy)", "");
  for (const sync::ClusterSimResult& r : rows) {
    absl::StrAppendFormat(
        &out, "%-13s %8d %9.4f %8.1f %8.3f %14s %11s %7d %10d %10d %11.2f %10.0f %7.1f\n", r.mode,
        r.trainers, r.seconds_per_clock, r.steps_per_second, r.compute_time_ratio,
        absl::StrFormat("%.0f/%.0f/%.0f", r.staleness_p50, r.staleness_p99, r.staleness_max),
        r.delta_staleness_mean < 0
            ? std::string("-")
            : absl::StrFormat("%.2f/%.1f", r.delta_staleness_mean, r.delta_staleness_p99),
        r.rounds_closed, r.events, r.grants, r.policy_us_per_event,
        r.policy_us_per_event > 0 ? 1e6 / r.policy_us_per_event : 0.0, r.wall_seconds);
  }
  return out;
}

}  // namespace syncopate::cli
