// syncopate-coordinator: membership, the sync policy and directives for every trainer.
#include <limits>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "base/allocator.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/ready_file.h"
#include "base/signals.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/session_service.h"
#include "coordinator/store_control.h"
#include "metrics/metrics_server.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"
#include "sync/policy_factory.h"
#include "sync/policy_flags.h"
#include "tensor/compression.h"

namespace {

int Fail(const absl::Status& status) {
  spdlog::critical("{}", status.ToString());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  syncopate::base::SkipMutexDeadlockDetection();
  CLI::App app{"syncopate-coordinator: Syncopate's sync coordinator"};
  std::string listen = "0.0.0.0:7000";
  std::string metrics_listen = "0.0.0.0:9100";
  std::string stores;
  syncopate::sync::PolicyOptions policy_options;
  syncopate::coordinator::CoordinatorOptions options;
  std::string eviction_timeout = "5s";
  std::string progress_timeout = "60s";
  std::string recovery_window = "10s";
  std::string heartbeat_interval = "1s";
  std::string start_timeout = "30s";
  std::string exchange_timeout = "10s";
  std::string compression = "none";
  std::string join_timeout = "60s";
  absl::Duration join_deadline;
  std::string ready_file;
  std::string log_level = "info";
  bool exit_when_done = false;
  std::string tls_dir;
  bool insecure = false;
  syncopate::rpc::ServerLimits limits;
  app.add_option("--listen", listen, "gRPC address (host:port; port 0 picks one)");
  app.add_option("--metrics-listen", metrics_listen, "Prometheus /metrics address");
  app.add_option("--stores", stores, "Store shard addresses, comma-separated, in shard order")
      ->required();
  syncopate::sync::AddPolicyFlags(&app, &policy_options);
  app.add_option("--exchange-timeout", exchange_timeout,
                 "Peer-to-peer modes: how long an exchange waits for its peers");
  app.add_option("--compression", compression, syncopate::tensor::kCompressionHelp);
  app.add_option("--min-trainers", policy_options.min_trainers,
                 "Hold the first grants until this many trainers joined");
  app.add_option("--start-timeout", start_timeout, "...or until this long after the first join");
  app.add_option("--eviction-timeout", eviction_timeout, "Evict a trainer silent this long");
  app.add_option("--progress-timeout", progress_timeout,
                 "Evict a trainer that reported no clock this long while others waited this long "
                 "for their grant (it heartbeats, but its training is stuck); 0s: never");
  app.add_option("--departed-statuses-kept", options.departed_statuses_kept,
                 "Departed trainers the status keeps (the latest)");
  app.add_option("--recovery-window", recovery_window,
                 "After a restart, wait this long for the job's trainers to resume before going on "
                 "without the missing ones");
  app.add_option("--heartbeat-interval", heartbeat_interval, "Heartbeat period told to trainers");
  app.add_option("--pipeline-grants", options.pipeline_grants,
                 "Send a round's grants while the stores close it (their shards hold the pulls "
                 "that come early); false: once every shard closed it");
  app.add_option("--target-accuracy", options.target_accuracy,
                 "Training is done at this test accuracy: trainers are told to leave (0: never)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--exit-when-done", exit_when_done,
               "Exit 0 once training is done and every trainer has left (a Kubernetes Job)");
  app.add_option("--ready-file", ready_file, "Write the bound ports here once serving");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  app.add_option("--tls-dir", tls_dir, syncopate::rpc::kTlsDirFlagHelp);
  app.add_option("--max-streams-per-connection", limits.max_streams_per_connection,
                 "Streams one client connection may hold open at once (more wait)")
      ->check(CLI::PositiveNumber);
  app.add_option("--join-timeout", join_timeout,
                 "Cancel a session that sends no Join for this long (0s: never)");
  app.add_option("--max-message-bytes", limits.max_message_bytes,
                 "The largest message a client may send (larger ones are refused)")
      ->check(CLI::Range(syncopate::rpc::kMinMessageBytes, std::numeric_limits<int>::max()));
  app.add_flag("--insecure", insecure, syncopate::rpc::kInsecureFlagHelp);
  CLI11_PARSE(app, argc, argv);
  syncopate::base::InitLogging("coordinator", log_level);

  if (absl::Status parsed =
          syncopate::base::ParseDurations({{&eviction_timeout, &options.eviction_timeout},
                                           {&progress_timeout, &options.progress_timeout},
                                           {&recovery_window, &options.recovery_window},
                                           {&heartbeat_interval, &options.heartbeat_interval},
                                           {&start_timeout, &policy_options.start_timeout},
                                           {&exchange_timeout, &options.exchange_timeout},
                                           {&join_timeout, &join_deadline}});
      !parsed.ok()) {
    return Fail(parsed);
  }
  absl::StatusOr<syncopate::rpc::Credentials> credentials =
      syncopate::rpc::CredentialsFromFlags(tls_dir, insecure, syncopate::rpc::Role::kCoordinator);
  if (!credentials.ok()) return Fail(credentials.status());
  auto policy = syncopate::sync::MakePolicy(policy_options);
  if (!policy.ok()) return Fail(policy.status());
  absl::StatusOr<syncopate::tensor::Compression> codec = syncopate::tensor::ParseCompression(
      compression, (*policy)->push_mode() == syncopate::sync::PushMode::kNone);
  if (!codec.ok()) return Fail(codec.status());
  options.codec = codec->codec;
  options.topk_ratio = codec->topk_ratio;
  std::vector<std::string> store_addresses = syncopate::base::SplitList(stores);
  if (store_addresses.empty()) return Fail(absl::InvalidArgumentError("--stores is empty"));

  auto metrics_server = syncopate::metrics::MetricsServer::Start(metrics_listen);
  if (!metrics_server.ok()) return Fail(metrics_server.status());
  syncopate::coordinator::CoordinatorMetrics metrics((*metrics_server)->registry());
  syncopate::coordinator::GrpcStoreControl store_control(store_addresses, *credentials,
                                                         absl::Seconds(3));
  syncopate::coordinator::Coordinator coordinator(options, *std::move(policy), store_control,
                                                  syncopate::base::MonotonicClock::Get(), metrics);
  (*metrics_server)->AddCollector([&coordinator] {
    return syncopate::coordinator::TrainerFamilies(coordinator.TrainerGauges());
  });
  coordinator.Start();
  // Outlives the server, whose sessions it watches until they join.
  syncopate::rpc::StreamWatchdog watchdog(join_deadline, syncopate::base::MonotonicClock::Get());
  watchdog.Start();
  syncopate::coordinator::SessionService service(
      coordinator,
      syncopate::rpc::Authorizer(
          *credentials,
          [&metrics](absl::string_view rpc) {
            metrics.refused_calls.Add({{"rpc", std::string(rpc)}}).Increment();
          }),
      &watchdog);
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  absl::Status started =
      syncopate::rpc::StartServer(listen, {&service}, *credentials, &server, &port, limits);
  if (!started.ok()) return Fail(started);
  absl::Status ready =
      syncopate::base::WriteReadyFile(ready_file, {port, (*metrics_server)->port(), 0});
  if (!ready.ok()) return Fail(ready);
  spdlog::info("mode {} with {} store shard(s); gRPC on port {}, metrics on port {}",
               policy_options.mode, store_addresses.size(), port, (*metrics_server)->port());
  while (syncopate::base::WaitForTerminationSignal(absl::Milliseconds(250)) == 0) {
    if (!exit_when_done) continue;
    const syncopate::v1::ClusterStatus status = coordinator.Status();
    if (status.done() && status.live_trainers() == 0) {
      spdlog::info("training is done and every trainer has left");
      break;
    }
  }
  spdlog::info("shutting down");
  coordinator.Stop();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  // No scrape may reach the coordinator once it is gone.
  metrics_server->reset();
  return 0;
}
