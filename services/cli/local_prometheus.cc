#include "cli/local_prometheus.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace syncopate::cli {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(60);

// A Prometheus duration ("1500ms").
std::string PromDuration(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Milliseconds(d), "ms");
}

// A loopback port nobody listens on right now (Prometheus cannot bind port 0 and tell us).
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port < 0) return absl::UnavailableError("no free loopback port");
  return port;
}

std::string InstanceName(const Endpoint& e) {
  return e.role == "coordinator" ? "coordinator" : absl::StrCat(e.role, "-", e.index);
}

}  // namespace

std::string DefaultAlertRules() {
  return std::string(SYNCOPATE_DEPLOY_DIR) + "/prometheus/alerts.yml";
}

std::string ScrapeConfig(const LocalPrometheusOptions& options, const std::string& rules_file,
                         const std::string& targets_file) {
  const std::string interval = PromDuration(options.scrape_interval);
  std::string yaml = absl::StrCat("# Written by `syncopate local --prometheus`.\nglobal:\n",
                                  "  scrape_interval: ", interval, "\n",
                                  "  evaluation_interval: ", interval, "\n");
  if (!rules_file.empty()) absl::StrAppend(&yaml, "rule_files:\n  - ", rules_file, "\n");
  // Targets (with their job and instance labels) come from a file the CLI rewrites when trainers
  // are added or removed.
  absl::StrAppend(&yaml, "scrape_configs:\n  - job_name: syncopate\n    file_sd_configs:\n",
                  "      - files: ['", targets_file, "']\n        refresh_interval: ", interval,
                  "\n");
  return yaml;
}

std::string FileSdTargets(const std::vector<Endpoint>& endpoints) {
  nlohmann::json groups = nlohmann::json::array();
  for (const Endpoint& e : endpoints) {
    if (e.process != nullptr && !e.process->running()) continue;  // a removed trainer
    groups.push_back({{"targets", {absl::StrCat("127.0.0.1:", e.metrics_port)}},
                      {"labels", {{"job", "syncopate-" + e.role}, {"instance", InstanceName(e)}}}});
  }
  return groups.dump(2) + "\n";
}

std::string ShortenAlertHolds(const std::string& rules, absl::Duration hold) {
  static const std::regex kFor(R"((\n\s*for:\s*)[0-9]+[a-z]+)");
  return std::regex_replace(rules, kFor, "$01" + PromDuration(hold));  // $01: not read as $11
}

absl::StatusOr<std::unique_ptr<LocalPrometheus>> LocalPrometheus::Start(
    const std::string& run_dir, const std::vector<Endpoint>& endpoints,
    const LocalPrometheusOptions& options) {
  std::string rules_file;
  if (!options.rules.empty()) {
    absl::StatusOr<std::string> rules = base::ReadFile(options.rules);
    if (!rules.ok()) {
      return absl::NotFoundError(absl::StrCat("cannot read alert rules ", options.rules));
    }
    rules_file = run_dir + "/alerts.yml";
    RETURN_IF_ERROR(
        base::WriteFileAtomically(rules_file, ShortenAlertHolds(*rules, options.alert_for)));
  }
  const std::string targets = run_dir + "/prometheus-targets.json";
  RETURN_IF_ERROR(base::WriteFileAtomically(targets, FileSdTargets(endpoints)));
  const std::string config = run_dir + "/prometheus.yml";
  RETURN_IF_ERROR(base::WriteFileAtomically(config, ScrapeConfig(options, rules_file, targets)));
  ASSIGN_OR_RETURN(int port, FreePort());
  const std::string log = run_dir + "/prometheus.log";
  const std::string binary =
      options.binary.find('/') == std::string::npos ? "/usr/bin/" + options.binary : options.binary;
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        binary, " not found: install Debian's prometheus package (scripts/install-deps.sh)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process,
                   ChildProcess::Spawn({binary, "--config.file=" + config,
                                        "--storage.tsdb.path=" + run_dir + "/prometheus-data",
                                        absl::StrCat("--web.listen-address=127.0.0.1:", port)},
                                       {}, log));
  // Ready when its log says so; give up early if it exits.
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (true) {
    absl::StatusOr<std::string> text = base::ReadFile(log);
    if (text.ok() && text->find("Server is ready to receive web requests") != std::string::npos) {
      break;
    }
    if (!process->running() || absl::Now() >= deadline) {
      process->Stop(absl::Seconds(2));
      return absl::UnavailableError(absl::StrCat("prometheus did not start; see ", log));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  const std::string url = absl::StrCat("http://127.0.0.1:", port);
  RETURN_IF_ERROR(base::WriteFileAtomically(run_dir + "/prometheus.json",
                                            nlohmann::json{{"url", url}, {"port", port}}.dump(2)));
  return std::unique_ptr<LocalPrometheus>(new LocalPrometheus(std::move(process), url, targets));
}

absl::Status LocalPrometheus::UpdateTargets(const std::vector<Endpoint>& endpoints) {
  return base::WriteFileAtomically(targets_file_, FileSdTargets(endpoints));
}

void LocalPrometheus::Stop(absl::Duration grace) {
  if (process_) process_->Stop(grace);
  process_.reset();
}

}  // namespace syncopate::cli
