#include "cli/local_cluster.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/files.h"
#include "base/flags.h"
#include "base/ready_file.h"
#include "base/status_macros.h"
#include "compute/device.h"
#include "nlohmann/json.hpp"
#include "rpc/grpc_util.h"
#include "sync/modes.h"
#include "sync/policy_factory.h"

namespace syncopate::cli {
namespace {

constexpr absl::Duration kReadyTimeout = absl::Seconds(60);

// Waits for a process's ready file, giving up early when the process exits.
absl::StatusOr<base::ReadyInfo> AwaitReady(const std::string& path, ChildProcess& process) {
  const absl::Time deadline = absl::Now() + kReadyTimeout;
  while (true) {
    absl::StatusOr<base::ReadyInfo> info =
        base::WaitForReadyFile(path, absl::Now() + absl::Milliseconds(200));
    if (info.ok() || !absl::IsDeadlineExceeded(info.status())) return info;
    if (!process.running()) {
      return absl::UnavailableError(
          absl::StrCat("exited (", DescribeExit(*process.Wait(absl::ZeroDuration())), ")"));
    }
    if (absl::Now() >= deadline) return info;
  }
}

std::string Seconds(absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d), "s"); }

// A (flag name, value) setting as a command-line flag: --name=value.
std::string AsFlag(const std::pair<std::string, std::string>& setting) {
  return absl::StrCat("--", setting.first, "=", setting.second);
}

}  // namespace

std::vector<std::string> RunModelFiles(const std::string& run_dir) {
  return {run_dir + "/model.npz", run_dir + "/model.pt"};
}

bool WritesRunModel(const LocalClusterOptions& options, int rank) {
  return rank == 0 && sync::FindMode(options.policy.mode)->peer_to_peer();
}

absl::StatusOr<std::vector<sync::LinkRates>> ParseLinks(const std::vector<std::string>& egress,
                                                        const std::vector<std::string>& ingress,
                                                        int trainers, double fallback) {
  if (static_cast<int>(std::max(egress.size(), ingress.size())) > trainers) {
    return absl::InvalidArgumentError(absl::StrCat("more link rates (",
                                                   std::max(egress.size(), ingress.size()),
                                                   ") than trainers (", trainers, ")"));
  }
  std::vector<sync::LinkRates> links(static_cast<size_t>(std::max(trainers, 0)),
                                     {fallback, fallback});
  bool limited = false;
  for (auto [items, rate_of] : {std::pair{&egress, &sync::LinkRates::upload},
                                std::pair{&ingress, &sync::LinkRates::download}}) {
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string& item = (*items)[i];
      if (item.empty()) continue;
      absl::StatusOr<double> rate = base::ParseRate(item);
      if (!rate.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("link rate \"", item, "\": ", rate.status().message()));
      }
      links[i].*rate_of = *rate;
      limited = true;
    }
  }
  if (!limited) links.clear();
  return links;
}

absl::Status LocalCluster::Validate(const LocalClusterOptions& options) {
  if (options.trainers <= 0) return absl::InvalidArgumentError("--trainers must be positive");
  if (options.store_shards <= 0) {
    return absl::InvalidArgumentError("--store-shards must be positive");
  }
  if (static_cast<int>(options.slowdowns.size()) != options.trainers) {
    return absl::InvalidArgumentError(absl::StrCat("--slowdown has ", options.slowdowns.size(),
                                                   " values for ", options.trainers, " trainers"));
  }
  for (double s : options.slowdowns) {
    if (!(s >= 1.0 && s <= base::kMaxSlowdown)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slowdown ", s, " is out of range: each must lie in [1, ", base::kMaxSlowdown, "]"));
    }
  }
  if (options.max_steps < 0) return absl::InvalidArgumentError("--max-steps cannot be negative");
  if (options.progress_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--progress-timeout cannot be negative (0s: never)");
  }
  if (options.checkpoint_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--checkpoint-interval cannot be negative");
  }
  if (static_cast<int>(options.devices.size()) > options.trainers) {
    return absl::InvalidArgumentError(absl::StrCat("--device has ", options.devices.size(),
                                                   " values for ", options.trainers, " trainers"));
  }
  for (const std::string& device : options.devices) {
    RETURN_IF_ERROR(compute::ParseDevice(device).status());
  }
  RETURN_IF_ERROR(
      ParseLinks(options.egress_rates, options.ingress_rates, options.trainers, 1).status());
  for (int rank : options.command_ranks) {
    if (rank < 0 || rank >= options.trainers) {
      return absl::InvalidArgumentError(absl::StrCat("--trainer-command-ranks: rank ", rank,
                                                     " is not one of the ", options.trainers,
                                                     " trainers"));
    }
  }
  if (options.external_trainers && !options.trainer_command.empty()) {
    return absl::InvalidArgumentError("trainers started by hand run no --trainer-command here");
  }
  if (options.listen_host.empty()) return absl::InvalidArgumentError("no host to listen on");
  if (options.coordinator_port < 0 || options.coordinator_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("port ", options.coordinator_port, " is not a TCP port"));
  }
  if (!options.command_ranks.empty() && options.trainer_command.empty()) {
    return absl::InvalidArgumentError("--trainer-command-ranks without --trainer-command");
  }
  // The coordinator would refuse a bad mode too; checking here gives the error before any start.
  RETURN_IF_ERROR(sync::MakePolicy(options.policy).status());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  RETURN_IF_ERROR(Validate(options));
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(options));
  absl::Status status = [&]() -> absl::Status {
    if (!options.insecure) {
      ASSIGN_OR_RETURN(cluster->ca_,
                       CertificateAuthority::Create(absl::StrCat(options.run_dir, "/tls/ca"),
                                                    rpc::kDefaultTrustDomain, absl::Hours(24 * 30),
                                                    /*replace=*/true));
      const std::string operator_dir = absl::StrCat(options.run_dir, "/tls/operator");
      RETURN_IF_ERROR(cluster->ca_->Issue({rpc::Role::kOperator, "local"}, operator_dir));
      ASSIGN_OR_RETURN(cluster->credentials_, rpc::Credentials::FromDirectory(operator_dir));
    }
    std::vector<std::string> stores;
    for (int s = 0; s < options.store_shards; ++s) {
      ASSIGN_OR_RETURN(auto credentials, cluster->CredentialsFlag(rpc::Role::kStore, s));
      std::vector<std::string>& args = cluster->service_args_[{"store", s}];
      args = {absl::StrCat("--shard=", s), absl::StrCat("--shard-count=", options.store_shards),
              absl::StrCat("--checkpoint-dir=", options.run_dir, "/checkpoints"),
              absl::StrCat("--checkpoint-interval=", Seconds(options.checkpoint_interval)),
              AsFlag(credentials)};
      RETURN_IF_ERROR(cluster->Launch("store", s, args, true));
      stores.push_back(
          absl::StrCat(cluster->advertised_host(), ":", cluster->endpoints_.back().grpc_port));
    }
    ASSIGN_OR_RETURN(auto credentials, cluster->CredentialsFlag(rpc::Role::kCoordinator, 0));
    std::vector<std::string>& coordinator_args = cluster->service_args_[{"coordinator", 0}];
    // One seed for the job: the trainers' and the policy's choices.
    sync::PolicyOptions policy = options.policy;
    policy.seed = options.seed;
    coordinator_args = sync::PolicyFlags(policy);
    coordinator_args.insert(
        coordinator_args.end(),
        {AsFlag(credentials), absl::StrCat("--stores=", absl::StrJoin(stores, ",")),
         absl::StrCat("--exchange-timeout=", Seconds(options.exchange_timeout)),
         absl::StrCat("--compression=", options.compression),
         absl::StrCat("--min-trainers=", options.trainers),
         absl::StrCat("--eviction-timeout=", Seconds(options.eviction_timeout)),
         absl::StrCat("--progress-timeout=", Seconds(options.progress_timeout)),
         absl::StrCat("--recovery-window=", Seconds(options.recovery_window))});
    RETURN_IF_ERROR(
        cluster->Launch("coordinator", 0, coordinator_args, true, options.coordinator_port));
    cluster->coordinator_ = v1::Coordinator::NewStub(rpc::MakeChannel(
        cluster->coordinator_address(), cluster->credentials_, rpc::Role::kCoordinator));
    if (options.external_trainers) {
      RETURN_IF_ERROR(cluster->PrepareExternalTrainers());
      return cluster->WriteClusterFile();
    }
    for (int r = 0; r < options.trainers; ++r) {
      RETURN_IF_ERROR(cluster->LaunchTrainer(r, options.slowdowns[r]));
    }
    // Trainers load data before joining; wait for all of them together.
    for (Endpoint& e : cluster->endpoints_) {
      if (e.role == "trainer") RETURN_IF_ERROR(cluster->AwaitTrainer(e));
    }
    return cluster->WriteClusterFile();
  }();
  if (!status.ok()) {
    cluster->Stop(absl::Seconds(2));
    return status;
  }
  return cluster;
}

LocalCluster::~LocalCluster() { Stop(); }

bool RunsCommand(const LocalClusterOptions& o, int rank) {
  if (o.trainer_command.empty()) return false;
  return o.command_ranks.empty() ||
         std::find(o.command_ranks.begin(), o.command_ranks.end(), rank) != o.command_ranks.end();
}

std::vector<std::pair<std::string, std::string>> LocalCluster::TrainerSettings(
    int rank, double slowdown) const {
  const LocalClusterOptions& o = options_;
  auto at = [&](const std::vector<std::string>& values, const std::string& otherwise) {
    return rank < static_cast<int>(values.size()) && !values[rank].empty() ? values[rank]
                                                                           : otherwise;
  };
  std::vector<std::pair<std::string, std::string>> settings = {
      {"coordinator", coordinator_address()},
      {"name", absl::StrCat("trainer-", rank)},
      {"rank", absl::StrCat(rank)},
      {"world", absl::StrCat(o.elastic ? 1 : o.trainers)},
      {"data-shard", absl::StrCat(o.elastic ? 0 : rank)},
      {"slowdown", absl::StrCat(slowdown)},
      {"step-time", Seconds(o.step_time)},
      {"device", at(o.devices, "cpu")},
      {"learning-rate", absl::StrCat(o.learning_rate)},
      {"batch-size", absl::StrCat(o.batch_size)},
      {"eval-interval", Seconds(o.eval_interval)},
      {"seed", absl::StrCat(o.seed)},
      {"trace-file", absl::StrCat(o.run_dir, "/trainer-", rank, ".trace.jsonl")}};
  if (o.max_steps > 0) settings.emplace_back("max-steps", absl::StrCat(o.max_steps));
  // Peer-to-peer modes keep the model in the trainers: trainer 0, the job's evaluator while it
  // lives, writes its own at its end, where the stores' model goes in the other modes (no other
  // rank writes one when it died). Emptied for the others: an exported value must not make every
  // script write the same files.
  settings.emplace_back(
      "save-model", WritesRunModel(o, rank) ? absl::StrJoin(RunModelFiles(o.run_dir), ",") : "");
  for (const auto& [key, rates] :
       {std::pair{"egress-rate", &o.egress_rates}, std::pair{"ingress-rate", &o.ingress_rates}}) {
    if (const std::string rate = at(*rates, ""); !rate.empty()) settings.emplace_back(key, rate);
  }
  return settings;
}

absl::StatusOr<std::pair<std::string, std::string>> LocalCluster::CredentialsFlag(rpc::Role role,
                                                                                  int index) {
  if (!ca_) return std::pair<std::string, std::string>{"insecure", "true"};
  const std::string name = absl::StrCat(rpc::RoleName(role), "-", index);
  const std::string dir = absl::StrCat(options_.run_dir, "/tls/", name);
  RETURN_IF_ERROR(ca_->Issue({role, name}, dir));
  return std::pair<std::string, std::string>{"tls-dir", dir};
}

absl::Status LocalCluster::LaunchCommand(int rank, double slowdown,
                                         const std::pair<std::string, std::string>& credentials) {
  const LocalClusterOptions& o = options_;
  const char* pythonpath = getenv("PYTHONPATH");
  std::map<std::string, std::string> env = {
      {"SYNCOPATE_METRICS_LISTEN", "127.0.0.1:0"},
      {"SYNCOPATE_READY_FILE", absl::StrCat(o.run_dir, "/trainer-", rank, ".ready.json")},
      {"PYTHONPATH", absl::StrCat(o.bin_dir, "/../python", pythonpath && *pythonpath ? ":" : "",
                                  pythonpath ? pythonpath : "")},
      // One thread per trainer: the cluster shares the machine's cores.
      {"OMP_NUM_THREADS", "1"},
      {"OPENBLAS_NUM_THREADS", "1"}};
  // The built-in trainer's flags as the client library's variables: --data-shard is
  // SYNCOPATE_DATA_SHARD.
  std::vector<std::pair<std::string, std::string>> settings = TrainerSettings(rank, slowdown);
  settings.push_back(credentials);
  // The other one emptied: an exported SYNCOPATE_INSECURE or _TLS_DIR must not add to the choice.
  settings.emplace_back(credentials.first == "insecure" ? "tls-dir" : "insecure", "");
  for (auto [key, value] : settings) {
    std::string name = "SYNCOPATE_" + key;
    for (char& c : name) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
    env[name] = value;
  }
  return Spawn("trainer", rank, {"/bin/sh", "-c", o.trainer_command}, env, false);
}

absl::Status LocalCluster::LaunchTrainer(int rank, double slowdown) {
  next_rank_ = std::max(next_rank_, rank + 1);
  ASSIGN_OR_RETURN(auto credentials, CredentialsFlag(rpc::Role::kTrainer, rank));
  if (RunsCommand(options_, rank)) return LaunchCommand(rank, slowdown, credentials);
  std::vector<std::string> args = {absl::StrCat("--model=", options_.model), AsFlag(credentials)};
  for (const auto& setting : TrainerSettings(rank, slowdown)) {
    if (!setting.second.empty()) args.push_back(AsFlag(setting));  // empty: the flag's default
  }
  return Launch("trainer", rank, args, false);
}

absl::Status LocalCluster::AwaitTrainer(Endpoint& e) {
  const std::string ready = absl::StrCat(options_.run_dir, "/trainer-", e.index, ".ready.json");
  absl::StatusOr<base::ReadyInfo> info = AwaitReady(ready, *e.process);
  if (!info.ok()) {
    return absl::UnavailableError(absl::StrCat("trainer ", e.index, " did not start (",
                                               info.status().message(), "); see ",
                                               e.process->log_path()));
  }
  e.metrics_port = info->metrics_port;
  return absl::OkStatus();
}

absl::Status LocalCluster::AddTrainer() {
  if (!options_.elastic) {
    return absl::FailedPreconditionError("adding trainers needs an elastic cluster");
  }
  RETURN_IF_ERROR(LaunchTrainer(next_rank_, 1.0));
  RETURN_IF_ERROR(AwaitTrainer(endpoints_.back()));
  return WriteClusterFile();
}

absl::Status LocalCluster::RemoveTrainer(absl::Duration grace) {
  Endpoint* victim = nullptr;
  for (Endpoint& e : endpoints_) {
    if (e.role == "trainer" && e.process->running() && (!victim || e.index > victim->index)) {
      victim = &e;
    }
  }
  if (!victim) return absl::FailedPreconditionError("no running trainer to remove");
  removed_.insert(victim->index);
  victim->process->Signal(SIGTERM);
  victim->process->WaitOrKill(grace);
  return absl::OkStatus();
}

absl::Status LocalCluster::Launch(const std::string& role, int index, std::vector<std::string> args,
                                  bool wait_ready, int grpc_port, int metrics_port) {
  const std::string base = absl::StrCat(options_.run_dir, "/", role, "-", index);
  std::vector<std::string> argv = {absl::StrCat(options_.bin_dir, "/syncopate-", role)};
  const std::string host = role == "trainer" ? "127.0.0.1" : options_.listen_host;
  if (role != "trainer") argv.push_back(absl::StrCat("--listen=", host, ":", grpc_port));
  argv.push_back(absl::StrCat("--metrics-listen=", host, ":", metrics_port));
  argv.push_back("--ready-file=" + base + ".ready.json");
  argv.insert(argv.end(), args.begin(), args.end());
  // One BLAS thread per trainer: the cluster shares the machine's cores.
  std::map<std::string, std::string> env = {{"OPENBLAS_NUM_THREADS", "1"}};
  if (role == "trainer") {
    // The built-in trainer reads the job from these where a flag is not given (a shell that
    // sourced a `serve` trainer-<r>.env has them): emptied, it takes only what it is given here.
    for (const char* name :
         {"SYNCOPATE_COORDINATOR", "SYNCOPATE_NAME", "SYNCOPATE_RANK", "SYNCOPATE_WORLD",
          "SYNCOPATE_DATA_SHARD", "SYNCOPATE_TLS_DIR", "SYNCOPATE_INSECURE",
          "SYNCOPATE_METRICS_LISTEN", "SYNCOPATE_PEER_LISTEN", "SYNCOPATE_PEER_ADDRESS",
          "SYNCOPATE_SAVE_MODEL"}) {
      env[name] = "";
    }
  }
  return Spawn(role, index, argv, env, wait_ready);
}

absl::Status LocalCluster::Spawn(const std::string& role, int index,
                                 const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env, bool wait_ready) {
  const std::string base = absl::StrCat(options_.run_dir, "/", role, "-", index);
  const std::string ready = base + ".ready.json";
  unlink(ready.c_str());
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process,
                   ChildProcess::Spawn(argv, env, base + ".log"));
  Endpoint endpoint{role, index, 0, 0, process.get()};
  processes_.push_back(std::move(process));
  if (wait_ready) {
    absl::StatusOr<base::ReadyInfo> info = AwaitReady(ready, *endpoint.process);
    if (!info.ok()) {
      return absl::UnavailableError(absl::StrCat(role, " ", index, " did not start (",
                                                 info.status().message(), "); see ", base, ".log"));
    }
    endpoint.grpc_port = info->grpc_port;
    endpoint.metrics_port = info->metrics_port;
  }
  endpoints_.push_back(endpoint);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LocalCluster::Restart>> LocalCluster::RestartCrashedServices() {
  std::vector<Restart> events;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    auto args = service_args_.find({endpoints_[i].role, endpoints_[i].index});
    if (args == service_args_.end() || endpoints_[i].process->running()) continue;
    const Endpoint crashed = endpoints_[i];
    RestartBackoff& backoff = restart_backoff_[{crashed.role, crashed.index}];
    if (absl::Now() < backoff.next_attempt) continue;
    const std::string exit = DescribeExit(*crashed.process->Wait(absl::ZeroDuration()));
    // Launch appends the new endpoint; it takes the crashed one's place.
    absl::Status restarted = Launch(crashed.role, crashed.index, args->second, true,
                                    crashed.grpc_port, crashed.metrics_port);
    if (!restarted.ok()) {
      // As Kubernetes backs off a pod that crashes again at start (a port still held, say).
      if (++backoff.failures >= kRestartAttempts) {
        return absl::UnavailableError(absl::StrCat(
            crashed.role, " ", crashed.index, " exited (", exit, ") and could not be restarted ",
            backoff.failures, " times: ", restarted.message()));
      }
      const absl::Duration delay = absl::Seconds(1 << backoff.failures);
      backoff.next_attempt = absl::Now() + delay;
      events.push_back({"retry", absl::StrCat(crashed.role, " ", crashed.index,
                                              " could not be restarted (", restarted.message(),
                                              "); trying again in ", absl::FormatDuration(delay))});
      continue;
    }
    backoff = RestartBackoff();
    endpoints_[i] = endpoints_.back();
    endpoints_.pop_back();
    events.push_back({crashed.role, absl::StrCat(crashed.role, " ", crashed.index, " exited (",
                                                 exit, "); restarted on its port")});
  }
  if (!events.empty()) RETURN_IF_ERROR(WriteClusterFile());
  return events;
}

absl::StatusOr<std::vector<LocalCluster::Restart>> LocalCluster::RestartCrashedTrainers() {
  std::vector<Restart> events;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (endpoints_[i].role != "trainer" || removed_.count(endpoints_[i].index) > 0) continue;
    const std::optional<int> exit = endpoints_[i].process->Wait(absl::ZeroDuration());
    if (!exit || (WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0)) continue;
    const Endpoint crashed = endpoints_[i];
    RestartBackoff& backoff = restart_backoff_[{crashed.role, crashed.index}];
    if (absl::Now() < backoff.next_attempt) continue;
    const double slowdown = crashed.index < static_cast<int>(options_.slowdowns.size())
                                ? options_.slowdowns[crashed.index]
                                : 1.0;
    // LaunchTrainer appends the new endpoint; it takes the crashed one's place once it runs.
    absl::Status restarted = LaunchTrainer(crashed.index, slowdown);
    if (restarted.ok()) {
      std::swap(endpoints_[i], endpoints_.back());
      restarted = AwaitTrainer(endpoints_[i]);
      endpoints_.pop_back();
    }
    const std::string what =
        absl::StrCat("trainer ", crashed.index, " exited (", DescribeExit(*exit), ")");
    if (!restarted.ok()) {
      if (++backoff.failures >= kRestartAttempts) {
        return absl::UnavailableError(absl::StrCat(what, " and could not be restarted ",
                                                   backoff.failures,
                                                   " times: ", restarted.message()));
      }
      const absl::Duration delay = absl::Seconds(1 << backoff.failures);
      backoff.next_attempt = absl::Now() + delay;
      events.push_back({"retry", absl::StrCat(what, "; its restart failed (", restarted.message(),
                                              "), trying again in ", absl::FormatDuration(delay))});
      continue;
    }
    backoff = RestartBackoff();
    events.push_back({"trainer", absl::StrCat(what, "; restarted, it joins again")});
  }
  if (!events.empty()) RETURN_IF_ERROR(WriteClusterFile());
  return events;
}

absl::Status LocalCluster::WriteClusterFile() const {
  nlohmann::json processes = nlohmann::json::array();
  for (const Endpoint& e : endpoints_) {
    processes.push_back({{"role", e.role},
                         {"index", e.index},
                         {"pid", e.process->pid()},
                         {"grpc_port", e.grpc_port},
                         {"metrics_port", e.metrics_port},
                         {"log", e.process->log_path()}});
  }
  return base::WriteFileAtomically(options_.run_dir + "/cluster.json",
                                   nlohmann::json{{"processes", processes}}.dump(2));
}

std::string LocalCluster::advertised_host() const {
  return options_.advertise_host.empty() ? options_.listen_host : options_.advertise_host;
}

absl::Status LocalCluster::PrepareExternalTrainers() {
  std::string pool;
  if (ca_ && options_.pool_certificate) {
    pool = absl::StrCat(options_.run_dir, "/tls/trainer-pool");
    RETURN_IF_ERROR(ca_->Issue({rpc::Role::kTrainer, ""}, pool));
  }
  for (int r = 0; r < options_.trainers; ++r) {
    std::pair<std::string, std::string> credentials{"tls-dir", pool};
    if (pool.empty()) {
      ASSIGN_OR_RETURN(credentials, CredentialsFlag(rpc::Role::kTrainer, r));
    }
    // Single-quoted for the shell (a quote inside ends the quote, escapes itself, reopens it).
    auto quoted = [](const std::string& value) {
      return absl::StrCat("'", absl::StrReplaceAll(value, {{"'", "'\\''"}}), "'");
    };
    const std::string env = absl::StrCat(
        "export SYNCOPATE_COORDINATOR=", quoted(coordinator_address()), "\n",
        "export SYNCOPATE_NAME=", quoted(absl::StrCat("trainer-", r)), "\n",
        "export SYNCOPATE_RANK=", r, "\n",
        // The data shards: each rank trains on its own part of the training set.
        "export SYNCOPATE_WORLD=", options_.trainers, " SYNCOPATE_DATA_SHARD=", r, "\n",
        // Any free port, so that trainers sharing a host do not collide; pick one to scrape.
        "export SYNCOPATE_METRICS_LISTEN=0.0.0.0:0\n",
        "# Peer-to-peer modes across hosts: peers must reach this trainer, e.g.\n",
        "# export SYNCOPATE_PEER_LISTEN=0.0.0.0:7100 SYNCOPATE_PEER_ADDRESS=this-host:7100\n",
        credentials.first == "insecure"
            ? "export SYNCOPATE_INSECURE=1\nunset SYNCOPATE_TLS_DIR\n"
            : absl::StrCat("export SYNCOPATE_TLS_DIR=", quoted(credentials.second),
                           "\nunset SYNCOPATE_INSECURE\n"));
    // Peer-to-peer modes: trainer 0 writes the job's model where the summary looks for it. A
    // trainer on another host reads its env file where it was copied, at the same path (or from a
    // shared filesystem), so the folder exists there too; the summary says when the files are not
    // on this host.
    std::string save_model = "unset SYNCOPATE_SAVE_MODEL\n";
    if (WritesRunModel(options_, r)) {
      save_model = absl::StrCat(
          "# The job's model, written by this trainer as it ends (peer-to-peer modes):\n",
          "export SYNCOPATE_SAVE_MODEL=",
          quoted(absl::StrJoin(RunModelFiles(options_.run_dir), ",")), "\n");
    }
    RETURN_IF_ERROR(base::WriteFileAtomically(
        absl::StrCat(options_.run_dir, "/trainer-", r, ".env"), env + save_model));
  }
  return absl::OkStatus();
}

std::string LocalCluster::coordinator_address() const {
  for (const Endpoint& e : endpoints_) {
    if (e.role == "coordinator") return absl::StrCat(advertised_host(), ":", e.grpc_port);
  }
  return "";
}

absl::StatusOr<v1::ClusterStatus> LocalCluster::Status(absl::Duration timeout,
                                                       bool wait_for_ready) {
  if (!coordinator_) return absl::FailedPreconditionError("the coordinator is not running");
  auto ctx = rpc::ContextWithTimeout(timeout);
  ctx->set_wait_for_ready(wait_for_ready);
  v1::ClusterStatus status;
  grpc::Status s = coordinator_->GetStatus(ctx.get(), v1::GetStatusRequest(), &status);
  if (!s.ok()) return rpc::FromGrpcStatus(s);
  return status;
}

absl::StatusOr<int64_t> LocalCluster::Finish(const std::string& reason, absl::Duration timeout) {
  if (!coordinator_) return absl::FailedPreconditionError("the coordinator is not running");
  auto ctx = rpc::ContextWithTimeout(timeout);
  v1::FinishRequest request;
  request.set_reason(reason);
  v1::FinishResponse response;
  grpc::Status s = coordinator_->Finish(ctx.get(), request, &response);
  if (!s.ok()) return rpc::FromGrpcStatus(s);
  return response.final_round();
}

void LocalCluster::Stop(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  // An idle connection holds a gRPC server's shutdown until its grace ends (a client reads the
  // server's GOAWAY only while a call waits on it): ours to the coordinator goes first.
  coordinator_.reset();
  for (const char* role : {"trainer", "coordinator", "store"}) {
    for (Endpoint& e : endpoints_) {
      if (e.role == role) e.process->Signal(SIGTERM);
    }
    for (Endpoint& e : endpoints_) {
      if (e.role == role) e.process->WaitOrKill(grace);
    }
  }
  // Processes that never got an endpoint (failed during start).
  for (auto& p : processes_) p->Stop(absl::Seconds(2));
}

}  // namespace syncopate::cli
