// A whole Syncopate cluster as processes on loopback: S store shards, a coordinator and N trainers,
// each binding port 0 and announcing its ports in a ready file inside the run directory.
#ifndef SYNCOPATE_CLI_LOCAL_CLUSTER_H_
#define SYNCOPATE_CLI_LOCAL_CLUSTER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/certificates.h"
#include "cli/child_process.h"
#include "rpc/credentials.h"
#include "sync/bandwidth_estimator.h"
#include "sync/policy_factory.h"
#include "syncopate/v1/coordinator.grpc.pb.h"

namespace syncopate::cli {

struct LocalClusterOptions {
  std::string bin_dir;  // where syncopate-store, -coordinator and -trainer are
  std::string run_dir;  // logs, ready files, traces (must exist)
  // Mode and its parameters, passed to the coordinator.
  sync::PolicyOptions policy;
  int trainers = 4;
  int store_shards = 1;
  std::vector<double> slowdowns;  // one per trainer
  std::string model = "mlp";
  // Compute device per trainer ("cpu", "cuda" or "auto"; a missing entry: "cpu"), so one machine
  // can mix GPU and CPU trainers. The trainer checks the name and reports an unusable GPU.
  std::vector<std::string> devices;
  float learning_rate = 0.1f;
  int batch_size = 64;
  absl::Duration eviction_timeout = absl::Seconds(5);
  // The coordinator evicts a trainer that reported no clock this long while others waited for
  // it (0: never); a trainer that pauses on purpose says so (Session::Pause) and is spared.
  absl::Duration progress_timeout = absl::Seconds(60);
  // How long a restarted coordinator waits for the job's trainers to resume (its
  // --recovery-window): one that has not is out of the job.
  absl::Duration recovery_window = absl::Seconds(10);
  // Each trainer leaves after this many steps (0: no limit): the built-in trainer's --max-steps, a
  // script's SYNCOPATE_MAX_STEPS. When every trainer has left so, the job is finished.
  int64_t max_steps = 0;
  // Emulated link limits per trainer on all its traffic ("" or a missing entry: none), e.g.
  // "100mbit"; and how long a peer-to-peer exchange waits for its peers.
  std::vector<std::string> egress_rates;
  std::vector<std::string> ingress_rates;
  absl::Duration exchange_timeout = absl::Seconds(5);
  // How the trainers compress their pushes (tensor::ParseCompression's names): "none", "bf16",
  // "fp16", "topk:RATIO".
  std::string compression = "none";
  absl::Duration eval_interval = absl::Seconds(1);
  // Emulated accelerator step of every trainer (client/session_options.h); 0: real compute only.
  absl::Duration step_time = absl::ZeroDuration();
  uint64_t seed = 1;
  // Trainers may be added and removed during the run: every trainer then trains on the whole
  // training set in its own seeded order (any N is correct; nothing is lost when one leaves),
  // instead of the disjoint shard i mod N = rank.
  bool elastic = false;
  // A user's trainer program, run through /bin/sh -c instead of syncopate-trainer for the ranks
  // in command_ranks (empty: every rank). It gets the job through the environment the client
  // library reads (docs/python.md): SYNCOPATE_COORDINATOR, _NAME, _RANK, _WORLD, _DATA_SHARD,
  // _SLOWDOWN, _STEP_TIME, _DEVICE, _LEARNING_RATE, _BATCH_SIZE, _SEED, _EVAL_INTERVAL, _MAX_STEPS,
  // _EGRESS_RATE, _INGRESS_RATE, _METRICS_LISTEN, _READY_FILE, _TRACE_FILE, _TLS_DIR (or
  // _INSECURE), and PYTHONPATH with the built Python package.
  std::string trainer_command;
  std::vector<int> command_ranks;
  // No TLS: every process runs --insecure. Otherwise (the default) a throw-away CA in
  // run_dir/tls/ca issues each process a certificate in run_dir/tls/<role>-<index> (the CLI's own,
  // for its status calls, in run_dir/tls/operator), and every channel is mutual TLS
  // (docs/security.md).
  bool insecure = false;
  // Where the stores and the coordinator listen (their metrics too), and the host the trainers and
  // the coordinator are told to reach them at (empty: listen_host); the coordinator's port (0:
  // any). `syncopate local` keeps them on loopback.
  std::string listen_host = "127.0.0.1";
  std::string advertise_host;
  int coordinator_port = 0;
  // The trainers are started by hand, here or on other hosts (`syncopate serve`): none is launched.
  // Each rank r < trainers gets run_dir/trainer-<r>.env, the SYNCOPATE_* exports it needs, and
  // with TLS its certificate directory run_dir/tls/trainer-<r>; with pool_certificate, all share
  // one for any name, run_dir/tls/trainer-pool.
  bool external_trainers = false;
  bool pool_certificate = false;
  // Every store shard checkpoints into run_dir/checkpoints this often (and at shutdown), so a
  // restarted shard resumes from at most this long ago (docs/faults.md).
  absl::Duration checkpoint_interval = absl::Seconds(2);
};

// Where a run's trained model is written at its end: RUN_DIR/model.npz and RUN_DIR/model.pt (from
// the stores' checkpoints, or by the evaluator itself in the peer-to-peer modes).
std::vector<std::string> RunModelFiles(const std::string& run_dir);

// Whether trainer `rank` writes the run's model itself as it ends (RunModelFiles): trainer 0, the
// evaluator, in the peer-to-peer modes, where the stores hold no model.
bool WritesRunModel(const LocalClusterOptions& options, int rank);

// Whether trainer `rank` runs the user's program (trainer_command) rather than syncopate-trainer.
bool RunsCommand(const LocalClusterOptions& options, int rank);

// A process of the cluster and where it serves.
struct Endpoint {
  std::string role;  // "store", "coordinator", "trainer"
  int index = 0;     // shard or rank
  int grpc_port = 0;
  int metrics_port = 0;
  ChildProcess* process = nullptr;
};

// Not thread-safe.
// Each trainer's link from items of --egress-rate and --ingress-rate (base::ParseRate's units),
// item i being trainer i's; an empty or missing item is `fallback`. Empty when no item names a
// rate. INVALID_ARGUMENT naming a bad item, or more items than `trainers`.
absl::StatusOr<std::vector<sync::LinkRates>> ParseLinks(const std::vector<std::string>& egress,
                                                        const std::vector<std::string>& ingress,
                                                        int trainers, double fallback);

class LocalCluster {
 public:
  // Starts stores, then the coordinator, then trainers, waiting for each to be ready (bounded).
  // On any failure, stops what started and returns the error with the failing process's log path.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  // INVALID_ARGUMENT for options Start would refuse (counts, slowdowns, mode); run_dir not checked.
  static absl::Status Validate(const LocalClusterOptions& options);
  ~LocalCluster();

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  std::string coordinator_address() const;

  // The coordinator's status. Fail-fast unless `wait_for_ready`: then the call waits for the
  // channel to (re)connect, up to `timeout`. This channel carries nothing else, and gRPC moves a
  // reconnection on only while a call waits on it, so polls that must find a restarted
  // coordinator wait for it.
  absl::StatusOr<v1::ClusterStatus> Status(absl::Duration timeout, bool wait_for_ready = false);
  // Ends training (Coordinator.Finish): the round of the final average, 0 in a mode without one.
  absl::StatusOr<int64_t> Finish(const std::string& reason, absl::Duration timeout);

  // Starts one more trainer (the next rank, slowdown 1) and waits until it runs. Needs elastic.
  absl::Status AddTrainer();
  // Stops the highest-rank running trainer with SIGTERM, so it leaves cleanly (not an eviction),
  // and waits for it (SIGKILL after `grace`). FAILED_PRECONDITION when none runs.
  absl::Status RemoveTrainer(absl::Duration grace = absl::Seconds(30));

  // Restarts every store shard and coordinator whose process has exited, on its ports and with its
  // flags, as Kubernetes restarts a crashed pod: a shard restores its checkpoint, a coordinator
  // takes the job over from the stores and the trainers resume with it. Returns what happened, one
  // per restart (and per failed restart, retried with backoff); an error when a process could not
  // be started again kRestartAttempts times in a row.
  struct Restart {
    std::string role;  // "store" or "coordinator"; "retry": a restart failed and will be retried
    std::string what;  // "store 1 exited (killed by signal 9); restarted on its port"
  };
  absl::StatusOr<std::vector<Restart>> RestartCrashedServices();

  // Restarts every trainer whose process exited on an error (a crash, a signal, an eviction it
  // could not rejoin after), with its rank, name and settings, as Kubernetes restarts a crashed
  // pod; it joins the job again under a new incarnation. A trainer that exited 0 (it finished) or
  // that RemoveTrainer stopped stays down. Waits until each restarted trainer runs. Returns what
  // happened (role "trainer", or "retry" for a start that failed and is retried with backoff); an
  // error when a trainer could not be started kRestartAttempts times in a row.
  absl::StatusOr<std::vector<Restart>> RestartCrashedTrainers();

  // Trainers first (SIGTERM: they leave cleanly), then the coordinator, then the stores; each gets
  // `grace` before SIGKILL. Idempotent. Status and Finish fail afterwards.
  void Stop(absl::Duration grace = absl::Seconds(10));

 private:
  explicit LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}
  // Spawns `argv` with `env` as process `role`-`index` (its log, and the ready file it writes, in
  // the run directory); waits for the ready file when `wait_ready`.
  absl::Status Spawn(const std::string& role, int index, const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, bool wait_ready);
  // What trainer `rank` is told, as (flag name, value): --flag=value for the built-in trainer,
  // SYNCOPATE_FLAG=value for a trainer command.
  std::vector<std::pair<std::string, std::string>> TrainerSettings(int rank, double slowdown) const;
  // A user's trainer program (trainer_command) as trainer `rank`, with `credentials` (see
  // CredentialsFlag) among its settings.
  absl::Status LaunchCommand(int rank, double slowdown,
                             const std::pair<std::string, std::string>& credentials);
  // Launches syncopate-`role` with `args`, serving on `grpc_port` and `metrics_port` (0: any).
  absl::Status Launch(const std::string& role, int index, std::vector<std::string> args,
                      bool wait_ready, int grpc_port = 0, int metrics_port = 0);
  absl::Status LaunchTrainer(int rank, double slowdown);
  // Waits until trainer `e` is ready and records its metrics port.
  absl::Status AwaitTrainer(Endpoint& e);
  absl::Status WriteClusterFile() const;
  // external_trainers: the certificates and run_dir/trainer-<r>.env of every rank.
  absl::Status PrepareExternalTrainers();
  std::string advertised_host() const;
  // The flag that gives process `role`-`index` its credentials, issuing its certificate first
  // (TLS): ("tls-dir", directory) or ("insecure", "true").
  absl::StatusOr<std::pair<std::string, std::string>> CredentialsFlag(rpc::Role role, int index);

  LocalClusterOptions options_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
  std::vector<Endpoint> endpoints_;
  // The flags of each store shard and of the coordinator, by (role, index), for restarts.
  std::map<std::pair<std::string, int>, std::vector<std::string>> service_args_;
  // Restarts that failed in a row, by (role, index): retried with backoff, up to kRestartAttempts.
  struct RestartBackoff {
    int failures = 0;
    absl::Time next_attempt = absl::InfinitePast();
  };
  static constexpr int kRestartAttempts = 5;
  std::map<std::pair<std::string, int>, RestartBackoff> restart_backoff_;
  std::optional<CertificateAuthority> ca_;  // with TLS
  rpc::Credentials credentials_;            // the CLI's own (operator)
  std::unique_ptr<v1::Coordinator::Stub> coordinator_;
  bool stopped_ = false;
  int next_rank_ = 0;
  std::set<int> removed_;  // ranks RemoveTrainer stopped: never restarted
};

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_LOCAL_CLUSTER_H_
