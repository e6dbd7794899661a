// syncopate: the command-line entry point. `local` runs a whole cluster on this machine, `compare`
// runs one scenario under several modes, `sim` simulates a job under every mode (`sim multicast`:
// multicast selection at scale), `status` asks a running coordinator, `finish` ends its training,
// `certs` makes certificates.
#include <unistd.h>

#include <climits>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/flags.h"
#include "base/signals.h"
#include "cli/advise_command.h"
#include "cli/certificates.h"
#include "cli/compare_command.h"
#include "cli/local_command.h"
#include "cli/model_file.h"
#include "cli/modes_command.h"
#include "cli/multicast_sim_command.h"
#include "cli/serve_command.h"
#include "cli/sim_command.h"
#include "rpc/grpc_util.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "sync/modes.h"
#include "sync/policy_factory.h"
#include "sync/policy_flags.h"
#include "syncopate/v1/coordinator.grpc.pb.h"
#include "tensor/compression.h"

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

int ExitCodeOf(const absl::Status& status) { return absl::IsInvalidArgument(status) ? 2 : 1; }

// A coordinator's stub under the operator's credentials (`status`, `finish`).
absl::StatusOr<std::unique_ptr<syncopate::v1::Coordinator::Stub>> CoordinatorStub(
    const std::string& address, const std::string& tls_dir, bool insecure) {
  absl::StatusOr<syncopate::rpc::Credentials> credentials =
      syncopate::rpc::CredentialsFromFlags(tls_dir, insecure, std::nullopt);
  if (!credentials.ok()) return credentials.status();
  return syncopate::v1::Coordinator::NewStub(
      syncopate::rpc::MakeChannel(address, *credentials, syncopate::rpc::Role::kCoordinator));
}

// A failed call to the coordinator at `address`, naming it.
absl::Status CallError(const std::string& address, const grpc::Status& s) {
  const absl::Status error = syncopate::rpc::FromGrpcStatus(s);
  return absl::Status(error.code(),
                      absl::StrCat("coordinator ", address, ": ",
                                   absl::StatusCodeToString(error.code()), ": ", error.message()));
}

// Exit code 1 with the coordinator's refusal.
int FailCall(const std::string& address, const grpc::Status& s) {
  return Fail(CallError(address, s));
}

// A running coordinator's cluster status; INVALID_ARGUMENT for bad credentials flags, the call's
// error (naming the coordinator) otherwise.
absl::StatusOr<syncopate::v1::ClusterStatus> FetchStatus(const std::string& address,
                                                         const std::string& tls_dir,
                                                         bool insecure) {
  auto stub = CoordinatorStub(address, tls_dir, insecure);
  if (!stub.ok()) return absl::InvalidArgumentError(stub.status().message());
  auto ctx = syncopate::rpc::ContextWithTimeout(absl::Seconds(5));
  syncopate::v1::ClusterStatus status;
  grpc::Status s = (*stub)->GetStatus(ctx.get(), syncopate::v1::GetStatusRequest(), &status);
  if (!s.ok()) return CallError(address, s);
  return status;
}

int Status(const std::string& address, const std::string& tls_dir, bool insecure) {
  absl::StatusOr<syncopate::v1::ClusterStatus> status = FetchStatus(address, tls_dir, insecure);
  if (!status.ok()) return Fail(status.status(), absl::IsInvalidArgument(status.status()) ? 2 : 1);
  std::printf("%s", syncopate::cli::FormatStatus(*status).c_str());
  return 0;
}

int Finish(const std::string& address, const std::string& tls_dir, bool insecure,
           const std::string& reason) {
  auto stub = CoordinatorStub(address, tls_dir, insecure);
  if (!stub.ok()) return Fail(stub.status(), 2);
  auto ctx = syncopate::rpc::ContextWithTimeout(absl::Seconds(5));
  syncopate::v1::FinishRequest request;
  request.set_reason(reason);
  syncopate::v1::FinishResponse response;
  grpc::Status s = (*stub)->Finish(ctx.get(), request, &response);
  if (!s.ok()) return FailCall(address, s);
  if (response.final_round() > 0) {
    std::printf("training ends: the trainers average their models in round %lld, then leave\n",
                static_cast<long long>(response.final_round()));
  } else {
    std::printf("training ends: the trainers were told it is done\n");
  }
  return 0;
}

// `syncopate export`: exit 2 for a folder that holds no usable checkpoint or a bad file name.
int Export(const std::string& from, const std::string& out) {
  absl::StatusOr<syncopate::tensor::Model> model = syncopate::cli::ReadCheckpointModel(from);
  if (!model.ok()) return Fail(model.status(), 2);
  if (absl::Status written = syncopate::tensor::WriteModel(*model, out); !written.ok()) {
    return Fail(written, ExitCodeOf(written));
  }
  int64_t parameters = 0;
  for (const syncopate::tensor::ModelTensor& t : model->tensors) parameters += t.spec.NumElements();
  std::printf("wrote %s: %zu tensors, %lld parameters, %s, from %u store shard(s)\n", out.c_str(),
              model->tensors.size(), static_cast<long long>(parameters),
              model->round > 0 ? absl::StrCat("round ", model->round).c_str() : "the live model",
              model->shards);
  return 0;
}

// "a,b,c" -> {a, b, c} keeping empty items (a trainer without a limit); one value: every trainer.
std::vector<std::string> PerTrainer(const std::string& text, int trainers) {
  if (text.empty()) return {};
  std::vector<std::string> values = absl::StrSplit(text, ',');
  if (values.size() == 1) values.assign(trainers, values.front());
  return values;
}

// The cluster a simulation runs (`sim`, `advise`): its trainers, their speeds, the model and the
// links, the seed.
struct ClusterProfileFlags {
  std::string profile;
  // As text, from ClusterSimOptions' defaults.
  std::string step = absl::FormatDuration(syncopate::sync::ClusterSimOptions{}.step);
  std::string directive_latency =
      absl::FormatDuration(syncopate::sync::ClusterSimOptions{}.directive_latency);
  std::string close_latency =
      absl::FormatDuration(syncopate::sync::ClusterSimOptions{}.close_latency);
  double link_gbps = syncopate::sync::ClusterSimOptions{}.link_bytes_per_second * 8 / 1e9;
  std::string egress_rate, ingress_rate;

  void Add(CLI::App* cmd, syncopate::sync::ClusterSimOptions* o) {
    cmd->add_option("--trainers", o->trainers, "Simulated trainers");
    cmd->add_option("--stragglers", o->stragglers, "How many trainers are slow (the first ones)");
    cmd->add_option("--slowdown", o->straggler_slowdown, "How much slower the stragglers are");
    cmd->add_option("--profile", profile,
                    "One slowdown per trainer instead, e.g. 1,2,4,6 (as many as --trainers)");
    cmd->add_option("--step", step, "Step time of a trainer at slowdown 1");
    cmd->add_option("--jitter", o->jitter_sigma, "Log-normal sigma of each step's time");
    cmd->add_option("--model-bytes", o->model_bytes, "Model size in bytes");
    cmd->add_option("--link-gbps", link_gbps, "Every trainer's link rate, Gbit/s");
    cmd->add_option("--egress-rate", egress_rate,
                    "Each trainer's upload instead, as `local` emulates it, e.g. "
                    "1gbit,1gbit,1gbit,200mbit (one value: every trainer; an empty item: "
                    "--link-gbps)");
    cmd->add_option("--ingress-rate", ingress_rate,
                    "Each trainer's download instead, the same way");
    cmd->add_option("--clocks", o->clocks,
                    "Stop once every trainer took this many steps (its clock; a round mode's "
                    "rounds)");
    cmd->add_option("--seed", o->seed, "Seed of the step times and the modes");
  }

  // Parses the text flags into `o`.
  absl::Status Finish(syncopate::sync::ClusterSimOptions* o) const {
    if (absl::Status parsed =
            syncopate::base::ParseDurations({{&step, &o->step},
                                             {&directive_latency, &o->directive_latency},
                                             {&close_latency, &o->close_latency}});
        !parsed.ok()) {
      return parsed;
    }
    if (!profile.empty()) {
      absl::StatusOr<std::vector<double>> slowdowns = syncopate::base::ParseDoubleList(profile);
      if (!slowdowns.ok()) return slowdowns.status();
      o->slowdowns = *slowdowns;
    }
    o->link_bytes_per_second = link_gbps * 1e9 / 8;
    absl::StatusOr<std::vector<syncopate::sync::LinkRates>> links = syncopate::cli::ParseLinks(
        PerTrainer(egress_rate, o->trainers), PerTrainer(ingress_rate, o->trainers), o->trainers,
        o->link_bytes_per_second);
    if (!links.ok()) return links.status();
    o->links = *std::move(links);
    o->policy.seed = o->seed;
    return absl::OkStatus();
  }
};

// Flags of the scenario a local cluster runs; shared by `local` and `compare`.
struct ScenarioFlags {
  syncopate::cli::LocalRunOptions run;
  std::string slowdown = "1";
  std::string device = "cpu";
  std::string time_limit = "120s";
  std::string eviction_timeout = "5s";
  std::string progress_timeout = "60s";
  std::string recovery_window = "10s";
  double target_accuracy = 0;
  CLI::Option* target_option = nullptr;
  std::string eval_interval = "1s";
  std::string step_time = "0s";
  std::string alert_for = "10s";
  std::string scale_events;
  std::string egress_rate;
  std::string ingress_rate;
  std::string exchange_timeout = "5s";
  std::string checkpoint_interval = "2s";

  ScenarioFlags() { run.prometheus_options.rules = syncopate::cli::DefaultAlertRules(); }

  // The flags of a job: its mode and policy, its processes, when it ends, and its run directory
  // (`local`, `compare` and `serve`).
  void Add(CLI::App* cmd) {
    syncopate::cli::LocalClusterOptions& c = run.cluster;
    syncopate::sync::PolicyOptions& p = c.policy;
    // --seed (below) is the job's one seed: the trainers' and the policy's (local_cluster.h).
    syncopate::sync::AddPolicyFlags(cmd, &p, {"mode", "seed"});
    cmd->add_option("--exchange-timeout", exchange_timeout,
                    "Peer-to-peer: how long an exchange waits for its peers");
    cmd->add_option("--compression", c.compression, syncopate::tensor::kCompressionHelp);
    cmd->add_option("--trainers", c.trainers, "Number of trainers")->check(CLI::Range(1, 64));
    cmd->add_option("--store-shards", c.store_shards, "Parameter store shards")
        ->check(CLI::Range(1, 16));
    target_option = cmd->add_option(
        "--target-accuracy", target_accuracy,
        run.target_accuracy
            ? absl::StrCat("Stop at this test accuracy (default ", *run.target_accuracy, ")")
            : "Stop at this test accuracy (default: none, run until "
              "every trainer finished or the time limit)");
    target_option->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--time-limit", time_limit, "Stop after this long (e.g. 120s, 5m)");
    cmd->add_option("--eviction-timeout", eviction_timeout, "Evict a silent trainer after");
    cmd->add_option("--progress-timeout", progress_timeout,
                    "Evict a trainer that reported no step this long while others waited for it "
                    "(it heartbeats, but its training is stuck; a pause it declares is spared); "
                    "0s: never");
    cmd->add_option("--recovery-window", recovery_window,
                    "How long a restarted coordinator waits for the job's trainers to resume; one "
                    "that has not by then is out of the job, and rounds and a final average go "
                    "on without it");
    cmd->add_option("--seed", c.seed, "Seed of model initialisation and batches");
    cmd->add_flag("--prometheus", run.prometheus,
                  "Also run a real Prometheus (Debian's package) scraping every process");
    cmd->add_option("--prometheus-rules", run.prometheus_options.rules,
                    "Alert rules that Prometheus loads (empty: none)");
    cmd->add_option("--alert-for", alert_for,
                    "Hold of every alert in this local run (replaces the rules' for:)");
    cmd->add_option("--checkpoint-interval", checkpoint_interval,
                    "Store shards checkpoint this often into the run directory: a restarted "
                    "shard loses at most this much (docs/faults.md)");
    cmd->add_flag("--restart-crashed,!--no-restart-crashed", run.restart_crashed,
                  "Restart a store shard or the coordinator whose process exits, on its port, as "
                  "Kubernetes would (default on); the run then reports it and exits 4");
    cmd->add_option("--resume-from", run.resume_from,
                    "Start from the model a run left in its directory (RUN_DIR/checkpoints); "
                    "rounds and each trainer's optimizer state start afresh");
    cmd->add_option("--report-dir", run.report_dir,
                    "Write the report (summary.json, accuracy.csv, logs) here");
    cmd->add_flag("--insecure", c.insecure,
                  "No TLS between the processes (default: a throw-away CA in the run directory "
                  "gives each process its certificate; docs/security.md)");
  }

  // The flags of the trainers this machine starts (`local`, `compare`).
  void AddLocalTrainers(CLI::App* cmd) {
    syncopate::cli::LocalClusterOptions& c = run.cluster;
    cmd->add_option("--egress-rate", egress_rate,
                    "Emulated per-trainer upload limits, e.g. 100mbit,100mbit,20mbit "
                    "(one value: all; empty item: none)");
    cmd->add_option("--ingress-rate", ingress_rate,
                    "Emulated per-trainer download limits, same form as --egress-rate");
    cmd->add_option("--slowdown", slowdown,
                    "Per-trainer slowdown factors, e.g. 1,1,2,4 (one value: all trainers)");
    cmd->add_option("--step-time", step_time,
                    "Emulated accelerator step: each trainer step lasts at least this long (x its "
                    "slowdown), real SGD inside and the rest slept, e.g. 200ms (default 0s: real "
                    "compute only)");
    cmd->add_option("--max-steps", c.max_steps,
                    "Each trainer leaves after this many steps (0: no limit); the job is finished "
                    "when every trainer has (scripts get SYNCOPATE_MAX_STEPS)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--model", c.model, "Model architecture: mlp or cnn");
    cmd->add_option("--trainer-command", c.trainer_command,
                    "Run this program (through /bin/sh -c) as the trainers instead of the built-in "
                    "one, e.g. 'python3 examples/pytorch/train.py'; it gets the job through "
                    "SYNCOPATE_* environment variables (docs/python.md)");
    cmd->add_option("--trainer-command-ranks", c.command_ranks,
                    "Only these ranks run --trainer-command, e.g. 2 (the others: built-in)")
        ->delimiter(',');
    cmd->add_option("--device", device,
                    "Trainer compute devices (cpu, cuda, cuda:N, auto), e.g. cuda:0,cuda:1,cpu "
                    "(one value: all trainers; missing values: cpu)");
    cmd->add_option("--learning-rate", c.learning_rate, "SGD learning rate")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--batch-size", c.batch_size, "Minibatch per trainer")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--eval-interval", eval_interval, "Evaluate test accuracy this often");
    cmd->add_option("--scale-events", scale_events,
                    "Add/remove trainers during the run, e.g. 30s:+1,60s:-1 (removal = SIGTERM)");
    cmd->add_flag(
        "--restart-trainers", run.restart_trainers,
        "Also restart a trainer whose process exits on an error (not one that finished), "
        "as Kubernetes restarts a pod: it joins again under a new incarnation (a fault of "
        "the run)");
  }

  // Parses the text flags into `run`; `modes`: the modes the job runs under (default: --mode).
  absl::Status Finish(std::vector<std::string> modes = {}) {
    if (absl::Status parsed = syncopate::base::ParseDurations(
            {{&time_limit, &run.time_limit},
             {&eviction_timeout, &run.cluster.eviction_timeout},
             {&progress_timeout, &run.cluster.progress_timeout},
             {&recovery_window, &run.cluster.recovery_window},
             {&eval_interval, &run.cluster.eval_interval},
             {&step_time, &run.cluster.step_time},
             {&alert_for, &run.prometheus_options.alert_for},
             {&exchange_timeout, &run.cluster.exchange_timeout},
             {&checkpoint_interval, &run.cluster.checkpoint_interval}});
        !parsed.ok()) {
      return parsed;
    }
    if (target_option->count() > 0) run.target_accuracy = target_accuracy;
    // Refused here, before any process starts, as the coordinator would refuse it.
    if (modes.empty()) modes = {run.cluster.policy.mode};
    for (const std::string& name : modes) {
      const syncopate::sync::Mode* mode = syncopate::sync::FindMode(name);
      absl::StatusOr<syncopate::tensor::Compression> compression =
          syncopate::tensor::ParseCompression(run.cluster.compression,
                                              mode != nullptr && mode->peer_to_peer());
      if (!compression.ok()) return compression.status();
    }
    absl::StatusOr<std::vector<double>> slowdowns = syncopate::base::ParseDoubleList(slowdown);
    if (!slowdowns.ok()) return slowdowns.status();
    if (slowdowns->size() == 1) slowdowns->assign(run.cluster.trainers, slowdowns->front());
    run.cluster.slowdowns = *slowdowns;
    run.cluster.devices = PerTrainer(device, run.cluster.trainers);
    run.cluster.egress_rates = PerTrainer(egress_rate, run.cluster.trainers);
    run.cluster.ingress_rates = PerTrainer(ingress_rate, run.cluster.trainers);
    absl::StatusOr<std::vector<syncopate::cli::ScaleEvent>> events =
        syncopate::cli::ParseScaleEvents(scale_events, run.cluster.trainers);
    if (!events.ok()) return events.status();
    run.scale_events = *events;
    return absl::OkStatus();
  }
};

}  // namespace

int main(int argc, char** argv) {
  syncopate::base::BlockTerminationSignals();
  // Warnings go to stderr: stdout carries what a command prints (status, tables, summaries).
  spdlog::set_default_logger(spdlog::stderr_color_mt("syncopate"));
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"syncopate: parameter synchronization for heterogeneous training clusters"};
  app.require_subcommand(1);
  const std::string modes = absl::StrJoin(syncopate::sync::SupportedModes(), ", ");

  ScenarioFlags local;
  local.run.cluster.bin_dir = BinDir();
  CLI::App* local_cmd = app.add_subcommand("local", "Run a whole cluster as local processes");
  local_cmd->add_option("--mode", local.run.cluster.policy.mode, "Sync mode: " + modes);
  local.Add(local_cmd);
  local.AddLocalTrainers(local_cmd);

  ScenarioFlags compare;
  compare.run.cluster.bin_dir = BinDir();
  compare.time_limit = "300s";
  // A comparison is of times to a target: it has one unless told otherwise.
  compare.run.target_accuracy = 0.85;
  std::string compare_modes = "bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp";
  CLI::App* compare_cmd =
      app.add_subcommand("compare", "Run one scenario under several modes and compare them");
  compare_cmd->add_option("--modes", compare_modes,
                          "Modes to run, comma-separated, from: " + modes);
  int compare_repeats = 1;
  compare_cmd->add_option("--repeats", compare_repeats,
                          "Runs per mode (and rate), with seeds --seed, --seed+1, ...: the report "
                          "gives medians and min-max ranges");
  std::string lr_sweep;
  compare_cmd->add_option("--lr-sweep", lr_sweep,
                          "Run each mode at each of these learning rates, e.g. 0.05,0.1,0.2,0.4, "
                          "and report each at its best (replaces --learning-rate)");
  compare.Add(compare_cmd);
  compare.AddLocalTrainers(compare_cmd);
  compare_cmd->get_option("--report-dir")->required();

  ScenarioFlags serve;
  serve.run.cluster.bin_dir = BinDir();
  serve.time_limit = "24h";
  syncopate::cli::ServeOptions serve_options;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve",
      "Run a job's store shards and coordinator here, for trainers started by hand on this and "
      "other hosts: makes their certificates and settings (RUN_DIR/trainer-<r>.env)");
  serve_cmd->add_option("--mode", serve.run.cluster.policy.mode, "Sync mode: " + modes);
  serve.Add(serve_cmd);
  serve_cmd
      ->add_option("--listen", serve_options.listen,
                   "HOST:PORT of the coordinator, e.g. 10.0.0.5:7000 (the stores listen on "
                   "HOST too; port 0: any)")
      ->required();
  serve_cmd->add_option("--advertise", serve_options.advertise,
                        "The host trainers reach this one by (default: the --listen host; this "
                        "machine's name for 0.0.0.0)");
  serve_cmd->add_option("--run-dir", serve.run.report_dir, "Same as --report-dir");
  serve_cmd->add_flag("--pool", serve_options.pool_certificate,
                      "One trainer certificate for any name (tls/trainer-pool) instead of one "
                      "per rank");

  syncopate::cli::SimCommand sim;
  std::string sim_modes = absl::StrJoin(syncopate::sync::SupportedModes(), ",");
  CLI::App* sim_cmd = app.add_subcommand(
      "sim",
      "Simulate a whole job under each mode with the coordinator's own policies: round time, "
      "compute-time ratio, staleness, policy cost per event (no processes)");
  sim_cmd->add_option("--mode", sim_modes, "Modes, comma-separated (default: all)");
  ClusterProfileFlags sim_profile;
  sim_profile.Add(sim_cmd, &sim.sim);
  sim_cmd->add_option("--directive-latency", sim_profile.directive_latency,
                      "Report to grant when no round closes");
  sim_cmd->add_option("--close-latency", sim_profile.close_latency,
                      "One round close on the stores");
  sim_cmd->add_option("--pipeline-grants", sim.sim.pipeline_grants,
                      "As the coordinator's flag: grants go out while their round closes (bsp), "
                      "each pull waiting on the store for the close");
  sim_cmd->add_option("--leave-at", sim.sim.leave_at_clock,
                      "The last trainer leaves at this clock (0: never)");
  sim_cmd->add_option("--rejoin-at", sim.sim.rejoin_at_clock,
                      "...and a new one joins once every trainer reached this clock (0: never)");
  syncopate::sync::AddPolicyFlags(sim_cmd, &sim.sim.policy, {"mode", "seed"});

  syncopate::cli::MulticastSimOptions multicast;
  std::string multicast_modes = "selmcast,orpheus";
  CLI::App* multicast_cmd = sim_cmd->add_subcommand(
      "multicast",
      "SelMcast's and Orpheus's receiver selection alone, round after round over flow-level "
      "transfers at scale: completion time and multicast scale, as in SelMcast's evaluation");
  multicast_cmd->add_option("--mode", multicast_modes, "Modes, comma-separated: selmcast, orpheus");
  multicast_cmd->add_option("--trainers", multicast.trainers, "Simulated trainers (n)");
  multicast_cmd->add_option("--bandwidth-spread", multicast.bandwidth_spread,
                            "lambda: each rate is mean * (1 + lambda * U[-1,1])");
  multicast_cmd->add_option("--upload-scale", multicast.upload_scale,
                            "mu: mean upload / mean download");
  multicast_cmd->add_option("--bandwidth-gbps", multicast.bandwidth_gbps, "Mean rate, Gbit/s");
  multicast_cmd->add_option("--volume-mb", multicast.volume_mb,
                            "Model bytes each trainer multicasts, MB");
  multicast_cmd->add_option("--p", multicast.min_receivers_fraction,
                            "Minimum receivers as a fraction of n");
  multicast_cmd->add_option("--k", multicast.k,
                            "Every pair synchronizes at least once per k+1 rounds");
  multicast_cmd->add_option("--layer", multicast.layer,
                            "l3 (network multicast) or l7 (unicast fan-out)");
  multicast_cmd->add_option("--rounds", multicast.rounds, "Rounds per trial");
  multicast_cmd->add_option("--trials", multicast.trials, "Trials (each draws new bandwidths)");
  multicast_cmd->add_option("--seed", multicast.seed,
                            "Seed of the bandwidths and of Orpheus's choices");
  multicast_cmd->add_option("--json", multicast.json_out, "Also write the figures here as JSON");

  syncopate::cli::AdviseOptions advise;
  advise.cluster.clocks = 300;
  CLI::App* advise_cmd = app.add_subcommand(
      "advise",
      "Which mode for this cluster: simulates every mode (and a few staleness bounds) on the "
      "profile given and ranks them by predicted time to target (docs/advise.md)");
  ClusterProfileFlags advise_profile;
  advise_profile.Add(advise_cmd, &advise.cluster);
  advise_cmd
      ->add_option("--staleness-tolerance", advise.staleness_tolerance,
                   "How well the model takes stale deltas, in steps of the job: a delta "
                   "this stale counts half (`advise probe` fits it to the job; docs/advise.md)")
      ->check(CLI::PositiveNumber);
  advise_cmd
      ->add_option("--target-steps", advise.target_steps,
                   "Steps of the job fresh SGD needs to the target: also predict seconds")
      ->check(CLI::NonNegativeNumber);
  std::string advise_coordinator, advise_tls_dir;
  bool advise_insecure = false;
  advise_cmd->add_option("--coordinator", advise_coordinator,
                         "Take the trainers and their step times from this running coordinator "
                         "(host:port; the model and links still from the flags)");
  advise_cmd->add_option("--tls-dir", advise_tls_dir,
                         "With --coordinator: the operator's certificate directory");
  advise_cmd->add_flag("--insecure", advise_insecure, syncopate::rpc::kInsecureFlagHelp);
  ScenarioFlags probe;
  probe.run.cluster.bin_dir = BinDir();
  probe.time_limit = "30s";
  CLI::App* probe_cmd = advise_cmd->add_subcommand(
      "probe",
      "Measure the profile from short runs of the job itself, under asp and under wbsp (the "
      "flags of local; --time-limit: how long each, default 30s), then advise on it");
  probe.Add(probe_cmd);
  probe.AddLocalTrainers(probe_cmd);
  CLI::Option* probe_tolerance =
      probe_cmd
          ->add_option("--staleness-tolerance", advise.staleness_tolerance,
                       "As advise's (default: fitted to the probe's two runs)")
          ->check(CLI::PositiveNumber);
  probe_cmd->add_option("--target-steps", advise.target_steps, "As advise's")
      ->check(CLI::NonNegativeNumber);

  bool modes_json = false;
  CLI::App* modes_cmd = app.add_subcommand(
      "modes", "List the sync modes, the options each reads and every option's default");
  modes_cmd->add_flag("--json", modes_json, "As JSON, for tools");

  std::string coordinator = "127.0.0.1:7000";
  std::string status_tls_dir;
  bool status_insecure = false;
  CLI::App* status_cmd = app.add_subcommand("status", "Show a running coordinator's cluster state");
  status_cmd->add_option("--coordinator", coordinator, "Coordinator address host:port");
  status_cmd->add_option("--tls-dir", status_tls_dir,
                         "Certificate directory (`syncopate local`: <run dir>/tls/operator)");
  status_cmd->add_flag("--insecure", status_insecure, syncopate::rpc::kInsecureFlagHelp);
  std::string finish_reason;  // empty: the coordinator says an operator ended training
  CLI::App* finish_cmd = app.add_subcommand(
      "finish",
      "End training: in dssync the trainers first average their models in one last round");
  finish_cmd->add_option("--coordinator", coordinator, "Coordinator address host:port");
  finish_cmd->add_option(
      "--tls-dir", status_tls_dir,
      "Operator certificate directory (`syncopate local`: <run dir>/tls/operator)");
  finish_cmd->add_flag("--insecure", status_insecure, syncopate::rpc::kInsecureFlagHelp);
  finish_cmd->add_option("--reason", finish_reason,
                         "Why (the coordinator logs it; default: an operator ended training)");

  std::string export_from;
  std::string export_out;
  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "Write the trained model from a run's store checkpoints as .npz (NumPy) or .pt (a "
      "torch.save state dict), loadable without Syncopate");
  export_cmd
      ->add_option("checkpoints", export_from, "A run's checkpoints folder (RUN_DIR/checkpoints)")
      ->required();
  export_cmd->add_option("--out", export_out, "The model file to write: NAME.npz or NAME.pt")
      ->required();

  syncopate::cli::CertsCommand certs;
  CLI::App* certs_cmd = app.add_subcommand(
      "certs", "Make a certificate authority and certificates for a deployment (docs/security.md)");
  certs_cmd->require_subcommand(1);
  CLI::App* certs_ca_cmd = certs_cmd->add_subcommand("ca", "Make a new CA in --ca-dir");
  certs_ca_cmd->add_flag("--force", certs.force,
                         "Replace a CA already there (its certificates stop being trusted)");
  CLI::App* certs_issue_cmd = certs_cmd->add_subcommand(
      "issue", "Issue a certificate from the CA in --ca-dir into --out (ca.crt, tls.crt, tls.key)");
  for (CLI::App* cmd : {certs_ca_cmd, certs_issue_cmd}) {
    cmd->add_option("--ca-dir", certs.ca_dir, "The CA's directory (ca.crt, ca.key)")->required();
    cmd->add_option("--trust-domain", certs.trust_domain, "SPIFFE trust domain of the identities");
  }
  // A CA of one day could issue nothing: a certificate must end at least a day before it does.
  certs_ca_cmd->add_option("--days", certs.days, "Validity in days")->check(CLI::Range(2, 3650));
  certs_issue_cmd
      ->add_option("--days", certs.days, "Validity in days (cut to end before the CA does)")
      ->check(CLI::Range(1, 3650));
  certs_issue_cmd->add_option("--role", certs.role, "coordinator, store, trainer or operator")
      ->required();
  certs_issue_cmd->add_option("--name", certs.name, "The process's name (a trainer's --name)");
  certs_issue_cmd->add_flag("--pool", certs.pool,
                            "Instead of --name: a pool certificate, good for any name of its role "
                            "(trainers sharing one Kubernetes Secret; docs/security.md)");
  certs_issue_cmd->add_option("--out", certs.out_dir, "Directory to write the files into")
      ->required();

  CLI11_PARSE(app, argc, argv);

  if (modes_cmd->parsed()) {
    std::printf("%s", modes_json ? (syncopate::cli::ModesJson().dump(2) + "\n").c_str()
                                 : syncopate::cli::FormatModes().c_str());
    return 0;
  }
  if (status_cmd->parsed()) return Status(coordinator, status_tls_dir, status_insecure);
  if (finish_cmd->parsed()) {
    return Finish(coordinator, status_tls_dir, status_insecure, finish_reason);
  }
  if (export_cmd->parsed()) return Export(export_from, export_out);
  if (certs_cmd->parsed()) {
    certs.issue = certs_issue_cmd->parsed();
    absl::StatusOr<std::string> done = syncopate::cli::RunCerts(certs);
    if (!done.ok()) return Fail(done.status(), ExitCodeOf(done.status()));
    std::printf("%s\n", done->c_str());
    return 0;
  }

  if (multicast_cmd->parsed()) {
    multicast.modes = syncopate::base::SplitList(multicast_modes);
    absl::StatusOr<std::vector<syncopate::cli::MulticastSimRow>> rows =
        syncopate::cli::RunMulticastSim(multicast);
    if (!rows.ok()) return Fail(rows.status(), ExitCodeOf(rows.status()));
    std::printf("%s", syncopate::cli::FormatMulticastSim(multicast, *rows).c_str());
    return 0;
  }

  if (advise_cmd->parsed()) {
    // The profile's flags (given before `probe`, they still name the links and the seed).
    if (absl::Status parsed = advise_profile.Finish(&advise.cluster); !parsed.ok()) {
      return Fail(parsed, 2);
    }
  }
  if (probe_cmd->parsed()) {
    if (!advise_profile.egress_rate.empty() || !advise_profile.ingress_rate.empty()) {
      return Fail(absl::InvalidArgumentError("give --egress-rate and --ingress-rate after `probe`: "
                                             "its runs emulate them, and the advice takes them"),
                  2);
    }
    if (absl::Status s = probe.Finish(); !s.ok()) return Fail(s, 2);
    absl::StatusOr<syncopate::cli::ProbeRuns> runs = syncopate::cli::Probe(probe.run);
    if (!runs.ok()) return Fail(runs.status(), ExitCodeOf(runs.status()));
    // The links the probe emulated (its own --egress-rate, --ingress-rate; checked as it ran).
    advise.cluster.links =
        syncopate::cli::ParseLinks(probe.run.cluster.egress_rates, probe.run.cluster.ingress_rates,
                                   probe.run.cluster.trainers, advise.cluster.link_bytes_per_second)
            .value_or(std::vector<syncopate::sync::LinkRates>{});
    absl::StatusOr<syncopate::sync::ClusterSimOptions> profile =
        syncopate::cli::ProfileFromRun(runs->asp, runs->model_bytes, advise.cluster);
    if (!profile.ok()) return Fail(profile.status(), 1);
    advise.cluster = *profile;
    if (probe_tolerance->count() == 0) {
      absl::StatusOr<syncopate::cli::ToleranceFit> fit =
          syncopate::cli::FitToProbe(*runs, advise.cluster);
      if (fit.ok()) {
        advise.staleness_tolerance = fit->tolerance;
        std::printf(
            "staleness tolerance fitted to the probe: %.2f steps (accuracy %.4f in %.0f steps "
            "of the job under asp, %.0f under wbsp)\n",
            fit->tolerance, fit->accuracy, fit->fresh_steps, fit->stale_steps);
      } else {
        std::printf("staleness tolerance not fitted (%s): %.2f steps\n",
                    std::string(fit.status().message()).c_str(), advise.staleness_tolerance);
      }
    }
  } else if (advise_cmd->parsed() && !advise_coordinator.empty()) {
    absl::StatusOr<syncopate::v1::ClusterStatus> status =
        FetchStatus(advise_coordinator, advise_tls_dir, advise_insecure);
    if (!status.ok()) return Fail(status.status(), ExitCodeOf(status.status()));
    syncopate::cli::RunSummary live;
    syncopate::cli::FillFromStatus(*status, &live);
    absl::StatusOr<syncopate::sync::ClusterSimOptions> profile =
        syncopate::cli::ProfileFromRun(live, advise.cluster.model_bytes, advise.cluster);
    if (!profile.ok()) return Fail(profile.status(), 1);
    advise.cluster = *profile;
  }
  if (advise_cmd->parsed()) {
    absl::StatusOr<syncopate::cli::Advice> advice = syncopate::cli::Advise(advise);
    if (!advice.ok()) return Fail(advice.status(), ExitCodeOf(advice.status()));
    std::printf("%s", syncopate::cli::FormatAdvice(advise, *advice).c_str());
    return 0;
  }

  if (sim_cmd->parsed()) {
    if (absl::Status parsed = sim_profile.Finish(&sim.sim); !parsed.ok()) return Fail(parsed, 2);
    sim.modes = syncopate::base::SplitList(sim_modes);
    absl::StatusOr<std::vector<syncopate::sync::ClusterSimResult>> rows =
        syncopate::cli::RunSim(sim);
    if (!rows.ok()) return Fail(rows.status(), ExitCodeOf(rows.status()));
    std::printf("%s", syncopate::cli::FormatSim(*rows).c_str());
    return 0;
  }

  if (compare_cmd->parsed()) {
    syncopate::cli::CompareOptions options;
    options.modes = syncopate::base::SplitList(compare_modes);
    if (absl::Status s = compare.Finish(options.modes); !s.ok()) return Fail(s, 2);
    options.run = compare.run;
    options.report_dir = compare.run.report_dir;
    options.repeats = compare_repeats;
    if (!lr_sweep.empty()) {
      absl::StatusOr<std::vector<double>> rates = syncopate::base::ParseDoubleList(lr_sweep);
      if (!rates.ok()) return Fail(rates.status(), 2);
      options.learning_rates = *rates;
    }
    absl::StatusOr<std::vector<syncopate::cli::CompareRow>> rows =
        syncopate::cli::RunCompare(options);
    if (!rows.ok()) return Fail(rows.status(), ExitCodeOf(rows.status()));
    std::printf("%s", syncopate::cli::FormatCompare(*rows).c_str());
    std::printf("report: %s/compare.csv, %s/compare-runs.csv, %s/compare.svg, %s/verdict.txt\n",
                options.report_dir.c_str(), options.report_dir.c_str(), options.report_dir.c_str(),
                options.report_dir.c_str());
    bool faulty = false;
    for (const auto& row : *rows) {
      if (row.interrupted()) return 130;
      faulty |= row.faulty();
    }
    if (options.run.target_accuracy) {
      std::printf("%s",
                  syncopate::cli::CompareVerdict(*rows, *options.run.target_accuracy).c_str());
    }
    // As for `local`: a comparison with a failed or faulty run did not finish normally.
    return faulty ? 4 : 0;
  }

  if (serve_cmd->parsed()) {
    if (absl::Status s = serve.Finish(); !s.ok()) return Fail(s, 2);
    serve_options.run = serve.run;
    absl::StatusOr<syncopate::cli::RunSummary> summary = syncopate::cli::RunServe(serve_options);
    if (!summary.ok()) return Fail(summary.status(), ExitCodeOf(summary.status()));
    std::printf("%s", syncopate::cli::FormatSummary(*summary).c_str());
    return summary->interrupted ? 130 : summary->faulty() ? 4 : 0;
  }

  if (absl::Status s = local.Finish(); !s.ok()) return Fail(s, 2);
  absl::StatusOr<syncopate::cli::RunSummary> summary = syncopate::cli::RunLocal(local.run);
  if (!summary.ok()) return Fail(summary.status(), ExitCodeOf(summary.status()));
  std::printf("%s", syncopate::cli::FormatSummary(*summary).c_str());
  if (!summary->interrupted && !summary->faulty()) {
    std::fprintf(stderr, "%s", syncopate::cli::AdviceAfterRun(local.run.cluster, *summary).c_str());
  }
  // A run that survived faults did not finish normally: say so in the exit code too.
  return summary->interrupted ? 130 : summary->faulty() ? 4 : 0;
}
