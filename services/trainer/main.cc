// syncopate-trainer: trains a model on its shard of Fashion-MNIST under the coordinator's mode.
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "base/allocator.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/signals.h"
#include "client/job_client.h"
#include "compute/backend.h"
#include "data/dataset.h"
#include "rpc/credentials.h"
#include "rpc/poll_engine.h"
#include "tensor/model_file.h"
#include "trainer/builtin_trainer.h"

namespace {

// Exit codes a supervisor can act on.
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitEvicted = 3;

int Fail(const absl::Status& status, int code = kExitError) {
  spdlog::critical("{}", status.ToString());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  syncopate::base::TuneAllocatorForLargeBuffers();
  syncopate::rpc::PreferPollForAFewConnections();  // before any thread or gRPC object
  syncopate::base::SkipMutexDeadlockDetection();
  CLI::App app{"syncopate-trainer: one Syncopate trainer"};
  std::string coordinator;
  std::string name;
  int rank = 0;
  int world = 1;
  syncopate::trainer::BuiltinOptions options;
  syncopate::client::JobOptions job_options;
  syncopate::client::SessionOptions& session_options = job_options.session;
  std::string model_name = "mlp";
  std::vector<int> hidden = {128};
  std::string device = "cpu";
  std::string data_dir = syncopate::data::kDefaultFashionMnistDir;
  std::string eval_interval = "2s";
  std::string step_time = "0s";
  std::string rpc_timeout = "30s";
  std::string peer_stream_idle_timeout = "60s";
  std::string metrics_listen = "0.0.0.0:9100";
  std::string peer_listen = "127.0.0.1:0";
  std::string peer_address;
  std::string egress_rate;
  std::string ingress_rate;
  std::string ready_file;
  std::string trace_file;
  std::vector<std::string> save_model;
  std::string log_level = "info";
  std::string tls_dir;
  bool insecure = false;
  // The job's settings may come from the environment a Python trainer reads (`syncopate serve`
  // writes them to RUN_DIR/trainer-<r>.env); a flag given wins.
  app.add_option("--coordinator", coordinator, "Coordinator address host:port")
      ->required()
      ->envname("SYNCOPATE_COORDINATOR");
  app.add_option("--name", name, "Stable trainer name (default trainer-<rank>)")
      ->envname("SYNCOPATE_NAME");
  app.add_option("--rank", rank, "Data shard index")
      ->check(CLI::NonNegativeNumber)
      ->envname("SYNCOPATE_RANK");
  int data_shard = -1;
  app.add_option("--world", world, "Number of data shards")
      ->check(CLI::PositiveNumber)
      ->envname("SYNCOPATE_WORLD");
  app.add_option(
         "--data-shard", data_shard,
         "Data shard this trainer trains on (default: --rank); with --world=1 the whole set")
      ->check(CLI::NonNegativeNumber)
      ->envname("SYNCOPATE_DATA_SHARD");
  app.add_option("--slowdown", session_options.slowdown, "Stretch each step's compute time to F x")
      ->check(CLI::Range(1.0, syncopate::base::kMaxSlowdown));
  app.add_option("--step-time", step_time,
                 "Emulated accelerator step: each step lasts at least this long (x --slowdown), "
                 "the rest of its real compute slept (default 0s: real compute only)");
  app.add_option("--learning-rate", options.learning_rate, "SGD learning rate")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-size", options.batch_size, "Minibatch size")->check(CLI::PositiveNumber);
  app.add_option(
      "--model", model_name,
      "Model architecture: mlp, or cnn (two conv+pool blocks, then the --hidden layers)");
  app.add_option("--hidden", hidden, "Widths of the hidden dense layers")->delimiter(',');
  app.add_option(
      "--device", device,
      "Compute device: cpu, cuda or cuda:N (GPU 0 or N of CUDA_VISIBLE_DEVICES; fails, saying "
      "why, when unusable) or auto (GPU 0 when usable, else the CPU)");
  app.add_option("--data-dir", data_dir, "Directory with the Fashion-MNIST IDX files");
  app.add_option("--eval-interval", eval_interval, "Evaluate at most this often (evaluator only)");
  app.add_option("--eval-samples", options.eval_samples, "Test examples per evaluation")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-steps", session_options.max_steps,
                 "Leave after this many steps (0: never)");
  int max_rejoins = 3;
  app.add_option("--max-rejoins", max_rejoins,
                 "Rejoin the job under a new incarnation after an eviction at most this often");
  app.add_option("--seed", options.seed, "Seed of the model initialisation and batch order");
  app.add_option("--rpc-timeout", rpc_timeout, "Deadline of each store RPC");
  std::string store_transport = "stream";
  app.add_option("--store-transport", store_transport,
                 "Pushes and pulls on one long-lived stream per store shard (stream), or a call "
                 "each (call)")
      ->check(CLI::IsMember({"stream", "call"}));
  std::string peer_transport = "stream";
  app.add_option("--peer-transport", peer_transport,
                 "Models to each peer on one long-lived stream (stream), or a call each (call); "
                 "peer-to-peer modes")
      ->check(CLI::IsMember({"stream", "call"}));
  app.add_option("--metrics-listen", metrics_listen, "Prometheus /metrics address")
      ->envname("SYNCOPATE_METRICS_LISTEN");
  app.add_option("--peer-listen", peer_listen,
                 "Address of this trainer's Peer service (peer-to-peer modes; port 0 picks one)")
      ->envname("SYNCOPATE_PEER_LISTEN");
  app.add_option("--peer-address", peer_address,
                 "host:port peers dial (default: --peer-listen's, 0.0.0.0 read as 127.0.0.1)")
      ->envname("SYNCOPATE_PEER_ADDRESS");
  app.add_option("--egress-rate", egress_rate,
                 "Emulated upload limit on all traffic, e.g. 100mbit (default: none)");
  app.add_option("--ingress-rate", ingress_rate,
                 "Emulated download limit on all traffic, e.g. 100mbit (default: none)");
  app.add_option("--peer-stream-idle-timeout", peer_stream_idle_timeout,
                 "Cancel a peer's model stream that sends nothing for this long (0s: never)");
  app.add_option("--peer-inbox-per-sender", job_options.peer.inbox_models_per_sender,
                 "Models one peer may have waiting for this trainer (more are refused)")
      ->check(CLI::PositiveNumber);
  app.add_option("--peer-inbox-models", job_options.peer.inbox_models,
                 "Peers' models that may wait for this trainer in all (more are refused)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ready-file", ready_file, "Write the metrics port here once running");
  app.add_option("--trace-file", trace_file, "Append a JSON-lines trace of clocks and pulls");
  app.add_option("--save-model", save_model,
                 "At a clean end, write this trainer's model to these files (.npz or .pt, "
                 "comma-separated)")
      ->delimiter(',')
      ->envname("SYNCOPATE_SAVE_MODEL");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  app.add_option("--tls-dir", tls_dir, syncopate::rpc::kTlsDirFlagHelp)
      ->envname("SYNCOPATE_TLS_DIR");
  app.add_flag("--insecure", insecure, syncopate::rpc::kInsecureFlagHelp)
      ->envname("SYNCOPATE_INSECURE");
  CLI11_PARSE(app, argc, argv);
  if (data_shard < 0) data_shard = rank;
  if (data_shard >= world) {
    std::fprintf(stderr, "data shard %d (--data-shard, default --rank) must be below --world=%d\n",
                 data_shard, world);
    return kExitUsage;
  }
  if (name.empty()) name = absl::StrCat("trainer-", rank);
  syncopate::base::InitLogging(name, log_level);

  auto credentials =
      syncopate::rpc::CredentialsFromFlags(tls_dir, insecure, syncopate::rpc::Role::kTrainer);
  if (!credentials.ok()) return Fail(credentials.status(), kExitUsage);
  job_options.credentials = *credentials;
  for (const std::string& path : save_model) {
    absl::Status named = syncopate::tensor::CheckModelPath(path);
    if (!named.ok()) return Fail(named, kExitUsage);
  }
  auto eval_every = syncopate::base::ParseDuration(eval_interval);
  if (!eval_every.ok()) return Fail(eval_every.status(), kExitUsage);
  session_options.eval_interval = *eval_every;
  auto emulated_step = syncopate::base::ParseDuration(step_time);
  if (!emulated_step.ok()) return Fail(emulated_step.status(), kExitUsage);
  session_options.step_time = *emulated_step;
  auto timeout = syncopate::base::ParseDuration(rpc_timeout);
  if (!timeout.ok()) return Fail(timeout.status(), kExitUsage);
  auto peer_idle = syncopate::base::ParseDuration(peer_stream_idle_timeout);
  if (!peer_idle.ok()) return Fail(peer_idle.status(), kExitUsage);

  std::string fallback_reason;
  auto backend = syncopate::compute::MakeBackend(device, &fallback_reason);
  if (!backend.ok()) {
    return Fail(backend.status(),
                absl::IsInvalidArgument(backend.status()) ? kExitUsage : kExitError);
  }
  if (!fallback_reason.empty()) {
    spdlog::info("--device=auto: {}; training on the CPU", fallback_reason);
  }
  spdlog::info("compute backend: {}", (*backend)->description());
  syncopate::compute::ModelSpec spec;
  spec.architecture = model_name;
  spec.hidden = hidden;
  // The model's seed is shared by every trainer (they must agree on the initial model); the batch
  // order's seed differs per rank.
  auto model = (*backend)->CreateModel(spec, /*seed=*/options.seed);
  if (!model.ok()) return Fail(model.status(), kExitUsage);
  auto eval_model = (*backend)->CreateModel(spec, /*seed=*/options.seed);
  if (!eval_model.ok()) return Fail(eval_model.status(), kExitUsage);
  options.seed = options.seed * 1000003 + rank;

  auto train_full = syncopate::data::LoadFashionMnist(data_dir, "train");
  if (!train_full.ok()) return Fail(train_full.status());
  auto train = syncopate::data::Shard(*train_full, data_shard, world);
  if (!train.ok()) return Fail(train.status(), kExitUsage);
  train_full->images.clear();
  train_full->images.shrink_to_fit();
  auto test = syncopate::data::LoadFashionMnist(data_dir, "test");
  if (!test.ok()) return Fail(test.status());

  syncopate::trainer::BuiltinTrainer trainer(options, **model, **eval_model, *train, *test);
  session_options.evaluate = [&trainer](const syncopate::tensor::TensorMap& m) {
    return trainer.Evaluate(m);
  };
  job_options.coordinator = coordinator;
  job_options.name = name;
  job_options.rank = rank;
  job_options.rpc_timeout = *timeout;
  job_options.store_transport = store_transport == "call" ? syncopate::client::Transport::kCall
                                                          : syncopate::client::Transport::kStream;
  job_options.metrics_listen = metrics_listen;
  job_options.peer.listen = peer_listen;
  job_options.peer.advertise = peer_address;
  job_options.peer.egress_rate = egress_rate;
  job_options.peer.ingress_rate = ingress_rate;
  job_options.peer.stream_idle_timeout = *peer_idle;
  job_options.peer.transport = peer_transport == "call" ? syncopate::client::Transport::kCall
                                                        : syncopate::client::Transport::kStream;
  job_options.ready_file = ready_file;
  job_options.trace_file = trace_file;
  job_options.max_rejoins = max_rejoins;
  auto job = syncopate::client::JobClient::Join(std::move(job_options), trainer.parameters());
  if (absl::IsOutOfRange(job.status())) {
    // The job is over (dssync's final average took place): nothing to do, as after Done.
    spdlog::info("not joining: {}", std::string(job.status().message()));
    return 0;
  }
  if (!job.ok()) {
    return Fail(job.status(), absl::IsInvalidArgument(job.status()) ? kExitUsage : kExitError);
  }
  const auto& welcome = (*job)->session().welcome();
  spdlog::info("joined {} job as id {} (incarnation {}); {} examples in shard {}/{}; {} store(s)",
               welcome.mode(), welcome.trainer_id(), welcome.incarnation(), train->size(),
               data_shard, world, welcome.store_addresses_size());
  absl::Notification done;
  absl::Status result;
  bool stopping = false;
  std::thread runner([&] {
    result = trainer.Run(**job);
    done.Notify();
  });
  while (!done.HasBeenNotified()) {
    if (syncopate::base::WaitForTerminationSignal(absl::Milliseconds(200)) == 0) continue;
    // A second signal (a supervisor repeating itself) is only logged.
    if (stopping) {
      spdlog::info("termination signal again: already leaving");
    } else {
      spdlog::info("termination signal: finishing the current step and leaving");
      stopping = true;
      (*job)->Stop();
    }
  }
  runner.join();
  if (absl::IsAborted(result)) return Fail(result, kExitEvicted);
  if (!result.ok()) return Fail(result);
  if (!save_model.empty()) {
    if (absl::Status saved = trainer.SaveModel(save_model); !saved.ok()) return Fail(saved);
    spdlog::info("model written to {}", absl::StrJoin(save_model, ", "));
  }
  return 0;
}
