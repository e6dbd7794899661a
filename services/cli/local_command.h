// `syncopate local`: run a whole cluster on this machine until a target accuracy or a time limit,
// with a live progress line, an orderly stop (also on Ctrl-C) and a report.
#ifndef SYNCOPATE_CLI_LOCAL_COMMAND_H_
#define SYNCOPATE_CLI_LOCAL_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/local_cluster.h"
#include "cli/local_prometheus.h"
#include "cli/run_report.h"

namespace syncopate::cli {

// At `at` after the start, add (delta > 0) or remove (delta < 0) that many trainers.
struct ScaleEvent {
  absl::Duration at;
  int delta = 0;
};

// "30s:+1,60s:-1" -> events in time order. INVALID_ARGUMENT for a malformed entry, a zero delta, or
// a sequence that would leave fewer than one trainer out of `trainers`.
absl::StatusOr<std::vector<ScaleEvent>> ParseScaleEvents(const std::string& text, int trainers);

// Creates a --report-dir and every missing parent. INVALID_ARGUMENT (exit 2, like other bad flags)
// naming the path and the system's reason when it cannot.
absl::Status MakeReportDir(const std::string& dir);

struct LocalRunOptions {
  LocalClusterOptions cluster;
  // Stop once the evaluator's test accuracy reaches this; none: run until every trainer finished
  // its own loop (max_steps, or a script's end) or the time limit.
  std::optional<double> target_accuracy;
  absl::Duration time_limit = absl::Seconds(120);
  // Where summary.json, accuracy.csv and the logs go (made with its parents); empty: a fresh
  // directory under /tmp.
  std::string report_dir;
  // A run directory whose trained model the job starts from (RUN_DIR/checkpoints, the same shard
  // count): its stores begin with that model, and rounds, membership and the trainers' optimizer
  // state begin afresh (cli/model_file.h). Empty: a new model, the first trainer's.
  std::string resume_from;
  // Trainers added and removed during the run (makes the cluster elastic).
  std::vector<ScaleEvent> scale_events;
  // Restart a store shard whose process exits, on its port (as Kubernetes would), so faults can be
  // tried locally; each restart is a fault of the run.
  bool restart_crashed = true;
  // Also restart a trainer whose process exits on an error (LocalCluster::RestartCrashedTrainers),
  // as Kubernetes restarts a crashed pod; each restart is a fault of the run.
  bool restart_trainers = false;
  // Also run a real Prometheus scraping the cluster (its URL is printed and in prometheus.json).
  bool prometheus = false;
  LocalPrometheusOptions prometheus_options;
};

// How a run ended when every trainer left: the job finished (each trainer's process left the job
// and exited 0) or not. `clocks` are the trainers' last clocks. "finished: every trainer completed
// 30 steps" (or "... its steps (28-30)"), and nullopt when a trainer failed or none ran.
std::optional<std::string> DescribeFinish(const std::vector<int64_t>& clocks, int failed_trainers);

// Runs one cluster to completion. Blocks. Returns the summary (also when interrupted: `interrupted`
// is set); an error when the cluster cannot start or the coordinator dies.
absl::StatusOr<RunSummary> RunLocal(LocalRunOptions options);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_LOCAL_COMMAND_H_
