// syncopate: the command-line entry point. `local` runs a whole cluster on this machine; `status`
// asks a running coordinator.
#include <unistd.h>

#include <climits>
#include <string>

#include "CLI/CLI.hpp"
#include "base/flags.h"
#include "base/signals.h"
#include "cli/local_command.h"
#include "rpc/grpc_util.h"
#include "spdlog/spdlog.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace {

// The directory of this executable: the other binaries live beside it.
std::string BinDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string exe(path, n);
  return exe.substr(0, exe.rfind('/'));
}

int Fail(const absl::Status& status, int code = 1) {
  std::fprintf(stderr, "syncopate: %s\n", std::string(status.message()).c_str());
  return code;
}

int Status(const std::string& address) {
  auto stub = syncopate::v1::Coordinator::NewStub(syncopate::rpc::MakeChannel(address));
  auto ctx = syncopate::rpc::ContextWithTimeout(absl::Seconds(5));
  syncopate::v1::ClusterStatus status;
  grpc::Status s = stub->GetStatus(ctx.get(), syncopate::v1::GetStatusRequest(), &status);
  if (!s.ok()) return Fail(syncopate::rpc::FromGrpcStatus(s));
  syncopate::cli::RunSummary summary;
  summary.mode = status.mode();
  summary.staleness = status.staleness_bound();
  summary.trainers = static_cast<int>(status.trainers_size());
  summary.wall_seconds = status.uptime_seconds();
  if (status.has_test_accuracy()) summary.final_accuracy = status.test_accuracy();
  syncopate::cli::FillFromStatus(status, &summary);
  std::printf("%s", syncopate::cli::FormatSummary(summary).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"syncopate: parameter synchronization for heterogeneous training clusters"};
  app.require_subcommand(1);

  syncopate::cli::LocalRunOptions local;
  local.cluster.bin_dir = BinDir();
  std::string slowdown = "1";
  std::string time_limit = "120s";
  std::string eviction_timeout = "5s";
  std::string eval_interval = "1s";
  CLI::App* local_cmd = app.add_subcommand("local", "Run a whole cluster as local processes");
  local_cmd->add_option("--mode", local.cluster.mode, "Sync mode: bsp, asp, ssp");
  local_cmd->add_option("--staleness", local.cluster.staleness, "SSP staleness bound s");
  local_cmd->add_option("--trainers", local.cluster.trainers, "Number of trainers")
      ->check(CLI::Range(1, 64));
  local_cmd->add_option("--store-shards", local.cluster.store_shards, "Parameter store shards")
      ->check(CLI::Range(1, 16));
  local_cmd->add_option("--slowdown", slowdown,
                        "Per-trainer slowdown factors, e.g. 1,1,2,4 (one value: all trainers)");
  local_cmd->add_option("--target-accuracy", local.target_accuracy, "Stop at this test accuracy")
      ->check(CLI::Range(0.0, 1.0));
  local_cmd->add_option("--time-limit", time_limit, "Stop after this long (e.g. 120s, 5m)");
  local_cmd->add_option("--model", local.cluster.model, "Model architecture (mlp)");
  local_cmd->add_option("--device", local.cluster.device, "Trainer compute device (cpu, auto)");
  local_cmd->add_option("--learning-rate", local.cluster.learning_rate, "SGD learning rate")
      ->check(CLI::PositiveNumber);
  local_cmd->add_option("--batch-size", local.cluster.batch_size, "Minibatch per trainer")
      ->check(CLI::PositiveNumber);
  local_cmd->add_option("--eviction-timeout", eviction_timeout, "Evict a silent trainer after");
  local_cmd->add_option("--eval-interval", eval_interval, "Evaluate test accuracy this often");
  local_cmd->add_option("--seed", local.cluster.seed, "Seed of model initialisation and batches");
  local_cmd->add_option("--report-dir", local.report_dir,
                        "Write summary.json, accuracy.csv and logs here");

  std::string coordinator = "127.0.0.1:7000";
  CLI::App* status_cmd = app.add_subcommand("status", "Show a running coordinator's cluster state");
  status_cmd->add_option("--coordinator", coordinator, "Coordinator address host:port");

  CLI11_PARSE(app, argc, argv);

  if (status_cmd->parsed()) return Status(coordinator);

  for (auto [text, out] : {std::pair{&time_limit, &local.time_limit},
                           std::pair{&eviction_timeout, &local.cluster.eviction_timeout},
                           std::pair{&eval_interval, &local.cluster.eval_interval}}) {
    absl::StatusOr<absl::Duration> d = syncopate::base::ParseDuration(*text);
    if (!d.ok()) return Fail(d.status(), 2);
    *out = *d;
  }
  absl::StatusOr<std::vector<double>> slowdowns = syncopate::base::ParseDoubleList(slowdown);
  if (!slowdowns.ok()) return Fail(slowdowns.status(), 2);
  if (slowdowns->size() == 1) slowdowns->assign(local.cluster.trainers, slowdowns->front());
  local.cluster.slowdowns = *slowdowns;

  absl::StatusOr<syncopate::cli::RunSummary> summary = syncopate::cli::RunLocal(local);
  if (!summary.ok()) {
    return Fail(summary.status(), absl::IsInvalidArgument(summary.status()) ? 2 : 1);
  }
  std::printf("%s", syncopate::cli::FormatSummary(*summary).c_str());
  return summary->interrupted ? 130 : 0;
}
