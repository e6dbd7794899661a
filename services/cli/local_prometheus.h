// A real Prometheus server for a local cluster (`syncopate local --prometheus`): Debian's
// `prometheus` binary on a free loopback port, its data in the run directory, scraping every
// process of the cluster each second and evaluating Syncopate's alert rules.
#ifndef SYNCOPATE_CLI_LOCAL_PROMETHEUS_H_
#define SYNCOPATE_CLI_LOCAL_PROMETHEUS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/child_process.h"
#include "cli/local_cluster.h"

namespace syncopate::cli {

struct LocalPrometheusOptions {
  std::string binary = "prometheus";
  // Alert rules to load (deploy/prometheus/alerts.yml); empty: none.
  std::string rules;
  // Every alert's `for:` hold is replaced by this, so a short local run can see alerts fire.
  absl::Duration alert_for = absl::Seconds(10);
  absl::Duration scrape_interval = absl::Seconds(1);
};

// The alert rules of this source tree (deploy/prometheus/alerts.yml).
std::string DefaultAlertRules();

// The scrape configuration: the targets listed in `targets_file` (FileSdTargets), and the rules.
std::string ScrapeConfig(const LocalPrometheusOptions& options, const std::string& rules_file,
                         const std::string& targets_file);

// The running processes of `endpoints` in Prometheus' file_sd format (a JSON list of {targets,
// labels}): job syncopate-store, syncopate-coordinator or syncopate-trainer, and
// instance="<role>-<index>" (the coordinator: "coordinator"). A Prometheus of your own can read it
// too (deploy/prometheus/prometheus-local.yml).
std::string FileSdTargets(const std::vector<Endpoint>& endpoints);

// `rules` with every `for: <duration>` replaced by `hold`.
std::string ShortenAlertHolds(const std::string& rules, absl::Duration hold);

class LocalPrometheus {
 public:
  // Writes DIR/prometheus.yml, DIR/prometheus-targets.json (and DIR/alerts.yml), starts Prometheus
  // with its data in DIR/prometheus-data and waits (bounded) until it serves; then writes
  // DIR/prometheus.json with its URL. UNAVAILABLE (with the log path) when it cannot start;
  // NOT_FOUND when the binary or the rules file is missing.
  static absl::StatusOr<std::unique_ptr<LocalPrometheus>> Start(
      const std::string& run_dir, const std::vector<Endpoint>& endpoints,
      const LocalPrometheusOptions& options);

  const std::string& url() const { return url_; }
  // Rewrites the targets file after trainers were added or removed (Prometheus rereads it).
  absl::Status UpdateTargets(const std::vector<Endpoint>& endpoints);
  // SIGTERM, then SIGKILL after `grace`. Idempotent.
  void Stop(absl::Duration grace = absl::Seconds(10));
  ~LocalPrometheus() { Stop(); }

 private:
  LocalPrometheus(std::unique_ptr<ChildProcess> process, std::string url, std::string targets_file)
      : process_(std::move(process)),
        url_(std::move(url)),
        targets_file_(std::move(targets_file)) {}
  std::unique_ptr<ChildProcess> process_;
  std::string url_;
  std::string targets_file_;
};

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_LOCAL_PROMETHEUS_H_
