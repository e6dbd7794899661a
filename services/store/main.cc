// syncopate-store: one shard of the parameter store.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <tuple>

#include "CLI/CLI.hpp"
#include "base/allocator.h"
#include "base/clock.h"
#include "base/files.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/ready_file.h"
#include "base/signals.h"
#include "metrics/metrics_server.h"
#include "rpc/grpc_util.h"
#include "rpc/stream_watchdog.h"
#include "store/checkpoint.h"
#include "store/parameter_table.h"
#include "store/round_waiters.h"
#include "store/store_metrics.h"
#include "store/store_service.h"

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  syncopate::base::TuneAllocatorForLargeBuffers();
  syncopate::base::SkipMutexDeadlockDetection();
  CLI::App app{"syncopate-store: one shard of Syncopate's parameter store"};
  std::string listen = "0.0.0.0:7070";
  std::string metrics_listen = "0.0.0.0:9100";
  uint32_t shard = 0;
  uint32_t shard_count = 1;
  int snapshots_kept = 4;
  std::string checkpoint_dir;
  std::string checkpoint_interval = "60s";
  std::string ready_file;
  std::string log_level = "info";
  std::string tls_dir;
  bool insecure = false;
  syncopate::rpc::ServerLimits limits;
  size_t max_pending_pushes = syncopate::store::ParameterTable::kDefaultMaxPendingPushes;
  std::string stream_idle_timeout = "60s";
  std::string release_memory_every = "10s";
  std::string pull_wait = "5s";
  app.add_option("--listen", listen, "gRPC address (host:port; port 0 picks one)");
  app.add_option("--metrics-listen", metrics_listen, "Prometheus /metrics address");
  app.add_option("--shard", shard, "This shard's index");
  app.add_option("--shard-count", shard_count, "Number of shards")->check(CLI::PositiveNumber);
  app.add_option("--snapshots-kept", snapshots_kept, "Round snapshots kept for pulls")
      ->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-dir", checkpoint_dir,
                 "Restore the shard's model from here at start, and checkpoint it here");
  app.add_option("--checkpoint-interval", checkpoint_interval,
                 "Checkpoint this often while the model changes, and at shutdown (0s: only then)");
  app.add_option("--ready-file", ready_file, "Write the bound ports here once serving");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  app.add_option("--tls-dir", tls_dir, syncopate::rpc::kTlsDirFlagHelp);
  app.add_option("--max-streams-per-connection", limits.max_streams_per_connection,
                 "Streams one client connection may hold open at once (more wait)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-pending-pushes", max_pending_pushes,
                 "Round pushes one trainer may have waiting for a round to close (more are "
                 "refused RESOURCE_EXHAUSTED: backpressure)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-message-bytes", limits.max_message_bytes,
                 "The largest message a client may send (larger ones are refused)")
      ->check(CLI::Range(syncopate::rpc::kMinMessageBytes, std::numeric_limits<int>::max()));
  app.add_option("--stream-idle-timeout", stream_idle_timeout,
                 "Cancel a push or pull stream that sends or takes no message for this long "
                 "(0s: never)");
  app.add_option("--release-memory-every", release_memory_every,
                 "Return the heap's free memory to the system this often, so that a flood of "
                 "refused streams does not hold it (0s: never)");
  app.add_option("--pull-wait", pull_wait,
                 "How long a pull of a round not closed yet waits for its close (the coordinator "
                 "grants rounds while it closes them), then UNAVAILABLE and retried (0s: refused "
                 "at once, FAILED_PRECONDITION, which trainers retry with backoff too)");
  app.add_flag("--insecure", insecure, syncopate::rpc::kInsecureFlagHelp);
  CLI11_PARSE(app, argc, argv);
  if (shard >= shard_count) {
    std::fprintf(stderr, "--shard=%u must be below --shard-count=%u\n", shard, shard_count);
    return 2;
  }
  syncopate::base::InitLogging("store-" + std::to_string(shard), log_level);
  absl::Duration every, idle, release_every, wait;
  for (auto [flag, text, out] :
       {std::tuple{"--checkpoint-interval", &checkpoint_interval, &every},
        std::tuple{"--stream-idle-timeout", &stream_idle_timeout, &idle},
        std::tuple{"--release-memory-every", &release_memory_every, &release_every},
        std::tuple{"--pull-wait", &pull_wait, &wait}}) {
    absl::StatusOr<absl::Duration> d = syncopate::base::ParseDuration(*text);
    if (!d.ok()) {
      std::fprintf(stderr, "%s: %s\n", flag, d.status().ToString().c_str());
      return 2;
    }
    *out = *d;
  }
  // The watchdog would cancel a pull while it waits for its round (CANCELLED is not retried).
  if (idle > absl::ZeroDuration() && idle != absl::InfiniteDuration() && idle <= wait) {
    std::fprintf(stderr, "--stream-idle-timeout=%s must exceed --pull-wait=%s\n",
                 stream_idle_timeout.c_str(), pull_wait.c_str());
    return 2;
  }

  absl::StatusOr<syncopate::rpc::Credentials> credentials =
      syncopate::rpc::CredentialsFromFlags(tls_dir, insecure, syncopate::rpc::Role::kStore);
  if (!credentials.ok()) {
    std::fprintf(stderr, "%s\n", credentials.status().ToString().c_str());
    return 2;
  }

  auto metrics_server = syncopate::metrics::MetricsServer::Start(metrics_listen);
  if (!metrics_server.ok()) {
    spdlog::critical("{}", metrics_server.status().ToString());
    return 1;
  }
  syncopate::store::StoreMetrics metrics((*metrics_server)->registry());
  syncopate::store::ParameterTable table(snapshots_kept, max_pending_pushes);
  std::optional<syncopate::store::Checkpointer> checkpointer;
  if (!checkpoint_dir.empty()) {
    if (absl::Status made = syncopate::base::MakeDirectories(checkpoint_dir); !made.ok()) {
      spdlog::critical("--checkpoint-dir: {}", std::string(made.message()));
      return 1;
    }
    checkpointer.emplace(table, metrics, checkpoint_dir, shard, shard_count);
    absl::StatusOr<std::optional<absl::Time>> restored = checkpointer->RestoreIfPresent();
    if (!restored.ok()) {
      spdlog::critical("cannot restore {}: {}", checkpointer->path(), restored.status().ToString());
      return 1;
    }
    if (*restored) {
      const absl::Duration age = std::max(absl::ZeroDuration(), absl::Now() - **restored);
      metrics.restored_checkpoint_age.Set(absl::ToDoubleSeconds(age));
      spdlog::info("restored the model (version {}, round {}) from {}, written {} ago",
                   table.live_version(), table.last_closed_round(), checkpointer->path(),
                   absl::FormatDuration(absl::Trunc(age, absl::Milliseconds(1))));
    }
  }
  // New at every start, so the coordinator can tell a restarted shard from a running one.
  std::random_device entropy;
  const uint64_t incarnation = (uint64_t{entropy()} << 32 | entropy()) | 1;
  // Outlives the server, whose streams it watches.
  syncopate::rpc::StreamWatchdog watchdog(idle, syncopate::base::MonotonicClock::Get(),
                                          [&] { metrics.idle_streams_cancelled.Increment(); });
  watchdog.Start();
  // Outlives the server too: the pulls waiting for their rounds.
  syncopate::store::RoundWaiters::Options wait_options;
  wait_options.max_wait = wait;
  syncopate::store::RoundWaiters waiters(wait_options, syncopate::base::MonotonicClock::Get());
  waiters.Start();
  // Refusals are counted with every other rejection, by status code.
  syncopate::store::StoreService service(table, metrics, shard, shard_count, incarnation,
                                         syncopate::rpc::Authorizer(*credentials, nullptr),
                                         &watchdog, &waiters);
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  absl::Status started =
      syncopate::rpc::StartServer(listen, {&service}, *credentials, &server, &port, limits);
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
  auto checkpoint = [&] {
    if (!checkpointer) return;
    absl::Status saved = checkpointer->SaveIfChanged();
    if (!saved.ok()) spdlog::error("checkpoint: {}", saved.ToString());
  };
  // The periodic work: checkpoints, and returning free memory.
  auto next = [](absl::Duration period) {
    return period > absl::ZeroDuration() ? absl::Now() + period : absl::InfiniteFuture();
  };
  absl::Time next_checkpoint = checkpointer ? next(every) : absl::InfiniteFuture();
  absl::Time next_release = next(release_every);
  while (syncopate::base::WaitForTerminationSignal(
             std::clamp(std::min(next_checkpoint, next_release) - absl::Now(), absl::ZeroDuration(),
                        absl::Hours(1))) == 0) {
    if (absl::Now() >= next_checkpoint) {
      checkpoint();
      next_checkpoint = next(every);
    }
    if (absl::Now() >= next_release) {
      // Only while no stream is open: a running transfer keeps its buffers warm.
      if (metrics.streams_open.Value() == 0) syncopate::base::ReleaseFreeMemory();
      next_release = next(release_every);
    }
  }
  spdlog::info("shutting down");
  waiters.Stop();
  // Trainers' Transfer streams idle between two transfers end now, the others as their transfer
  // ends: the grace below waits only for transfers under way.
  watchdog.Drain();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  checkpoint();
  return 0;
}
