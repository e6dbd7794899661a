// syncopate-store: one shard of the parameter store.
#include <memory>

#include "CLI/CLI.hpp"
#include "base/allocator.h"
#include "base/logging.h"
#include "base/ready_file.h"
#include "base/signals.h"
#include "metrics/metrics_server.h"
#include "rpc/grpc_util.h"
#include "store/parameter_table.h"
#include "store/store_metrics.h"
#include "store/store_service.h"

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  syncopate::base::TuneAllocatorForLargeBuffers();
  CLI::App app{"syncopate-store: one shard of Syncopate's parameter store"};
  std::string listen = "0.0.0.0:7070";
  std::string metrics_listen = "0.0.0.0:9100";
  uint32_t shard = 0;
  uint32_t shard_count = 1;
  int snapshots_kept = 4;
  std::string ready_file;
  std::string log_level = "info";
  app.add_option("--listen", listen, "gRPC address (host:port; port 0 picks one)");
  app.add_option("--metrics-listen", metrics_listen, "Prometheus /metrics address");
  app.add_option("--shard", shard, "This shard's index");
  app.add_option("--shard-count", shard_count, "Number of shards")->check(CLI::PositiveNumber);
  app.add_option("--snapshots-kept", snapshots_kept, "Round snapshots kept for pulls")
      ->check(CLI::PositiveNumber);
  app.add_option("--ready-file", ready_file, "Write the bound ports here once serving");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);
  if (shard >= shard_count) {
    std::fprintf(stderr, "--shard=%u must be below --shard-count=%u\n", shard, shard_count);
    return 2;
  }
  syncopate::base::InitLogging("store-" + std::to_string(shard), log_level);

  auto metrics_server = syncopate::metrics::MetricsServer::Start(metrics_listen);
  if (!metrics_server.ok()) {
    spdlog::critical("{}", metrics_server.status().ToString());
    return 1;
  }
  syncopate::store::StoreMetrics metrics((*metrics_server)->registry());
  syncopate::store::ParameterTable table(snapshots_kept);
  syncopate::store::StoreService service(table, metrics, shard, shard_count);
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  absl::Status started = syncopate::rpc::StartServer(listen, {&service}, &server, &port);
  if (!started.ok()) {
    spdlog::critical("{}", started.ToString());
    return 1;
  }
  absl::Status ready =
      syncopate::base::WriteReadyFile(ready_file, {port, (*metrics_server)->port(), 0});
  if (!ready.ok()) {
    spdlog::critical("{}", ready.ToString());
    return 1;
  }
  spdlog::info("shard {}/{} serving gRPC on port {}, metrics on port {}", shard, shard_count, port,
               (*metrics_server)->port());
  while (syncopate::base::WaitForTerminationSignal(absl::Hours(1)) == 0) {
  }
  spdlog::info("shutting down");
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  return 0;
}
