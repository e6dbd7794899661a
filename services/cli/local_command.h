// `syncopate local`: run a whole cluster on this machine until a target accuracy or a time limit,
// with a live progress line, an orderly stop (also on Ctrl-C) and a report.
#ifndef SYNCOPATE_CLI_LOCAL_COMMAND_H_
#define SYNCOPATE_CLI_LOCAL_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "cli/local_cluster.h"
#include "cli/local_prometheus.h"
#include "cli/run_report.h"

namespace syncopate::cli {

struct LocalRunOptions {
  LocalClusterOptions cluster;
  double target_accuracy = 0.85;
  absl::Duration time_limit = absl::Seconds(120);
  // Where summary.json, accuracy.csv and the logs go; empty: a fresh directory under /tmp.
  std::string report_dir;
  // Also run a real Prometheus scraping the cluster (its URL is printed and in prometheus.json).
  bool prometheus = false;
  LocalPrometheusOptions prometheus_options;
};

// Runs one cluster to completion. Blocks. Returns the summary (also when interrupted: `interrupted`
// is set); an error when the cluster cannot start or the coordinator dies.
absl::StatusOr<RunSummary> RunLocal(LocalRunOptions options);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_LOCAL_COMMAND_H_
