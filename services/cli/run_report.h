// What a `syncopate local` run produced: summary.json (a stable schema other tools read),
// accuracy.csv (elapsed seconds, accuracy) and the table printed at the end.
#ifndef SYNCOPATE_CLI_RUN_REPORT_H_
#define SYNCOPATE_CLI_RUN_REPORT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "syncopate/v1/coordinator.pb.h"

namespace syncopate::cli {

struct TrainerSummary {
  int rank = 0;
  double slowdown = 1;
  int64_t clock = 0;
  double compute_time_ratio = 0;
  // Time in training steps, and the part of it slept to emulate (--step-time, --slowdown).
  double compute_seconds = 0;
  double emulated_compute_seconds = 0;
  double wait_seconds = 0;
  double wall_seconds = 0;  // since it joined
  std::string state;
  int group = -1;               // hybrid
  int evictions = 0;            // over the trainer's incarnations (it may rejoin)
  std::string eviction_reason;  // the last one's
};

struct RunSummary {
  std::string mode;
  std::string mode_parameters;  // e.g. "s=3..15"
  std::string run_dir;          // where the run left its files (not in summary.json: it is there)
  int64_t staleness = 0;
  int trainers = 0;
  int store_shards = 1;
  std::optional<double> target_accuracy;  // none: the run had no target
  bool reached_target = false;
  // Every trainer finished its own loop (its step limit, or its script's end) and left cleanly:
  // the job is done.
  bool finished = false;
  // Why the run ended, in words: "target reached", "time limit", "finished: every trainer
  // completed 30 steps", "ended by an operator", "interrupted", or the failure.
  std::string ended;
  std::optional<double> time_to_target_seconds;
  std::optional<double> final_accuracy;
  // Modes with a final average (dssync): the round in which the trainers averaged their models as
  // training ended (0: none), and the evaluator's accuracy of that average.
  int64_t final_average_round = 0;
  std::optional<double> final_average_accuracy;
  double wall_seconds = 0;
  double compute_time_ratio = 0;  // mean over trainers
  double mean_wait_seconds = 0;   // mean over trainers
  // Means over trainers of their compute's real part (on the processor) and emulated part.
  double mean_real_compute_seconds = 0;
  double mean_emulated_compute_seconds = 0;
  // The synchronisation overhead per step: the slowest trainer's (most compute per step) time per
  // step beyond its compute, (wall - compute) / clock. Under bsp, wall time per round minus the
  // straggler's compute; 0 before any trainer took a step.
  double overhead_per_step_seconds = 0;
  int64_t rounds_closed = 0;
  // Peer-to-peer modes (0 in the others, and before any multicast): per multicast, the receivers
  // it named and the models delivered, each over n - 1 trainers. The latter is SelMcast's
  // "multicast scale"; transfers still on their way at the end are not counted.
  double planned_multicast_scale = 0;
  double multicast_scale = 0;
  bool interrupted = false;
  // What went wrong during the run, and when (elapsed seconds): processes that crashed and were
  // restarted. A run with faults or a failure is not a normal finish (`syncopate local` exits 4).
  std::vector<std::pair<double, std::string>> faults;
  uint32_t store_restarts = 0;    // reconciled by the coordinator
  int64_t store_rounds_lost = 0;  // rounds restarted shards skipped (docs/faults.md)
  std::string failure;            // the coordinator's reason the job could not go on
  // Exactly once, audited after the run (cli/push_audit.h): pushes compared over trainers and
  // shards, and those lost or taken twice; audited false in peer-to-peer modes or when a shard's
  // checkpoint could not be read (push_audit_error says why).
  bool pushes_audited = false;
  int64_t pushes_compared = 0;
  int64_t pushes_lost = 0;
  int64_t pushes_doubled = 0;
  int64_t pushes_given_up = 0;  // by stopping trainers: neither lost nor doubled (push_audit.h)
  std::string push_audit_error;
  bool faulty() const { return !faults.empty() || store_restarts > 0 || !failure.empty(); }
  // The trained model as the job left it (store modes: the stores' last checkpoint, its last
  // closed round or the live model; peer-to-peer modes: the evaluator's, under dssync the final
  // average), written into the run directory as model.npz and model.pt; model_error says why not
  // when it could not be.
  std::vector<std::string> model_files;
  int64_t model_round = 0;  // 0: the live model (immediate modes, or a trainer's own)
  std::string model_error;
  std::vector<TrainerSummary> per_trainer;
  std::vector<std::pair<double, double>> accuracy;  // (elapsed seconds, accuracy)
};

// Fills per_trainer (by rank) and the cluster compute-time ratio from the coordinator's status.
void FillFromStatus(const v1::ClusterStatus& status, RunSummary* summary);

nlohmann::json ToJson(const RunSummary& summary);

// Writes DIR/summary.json and DIR/accuracy.csv.
absl::Status WriteReport(const std::string& dir, const RunSummary& summary);

// A human-readable table of the run.
std::string FormatSummary(const RunSummary& summary);

// A human-readable table of a running cluster (`syncopate status`): what the coordinator knows now.
std::string FormatStatus(const v1::ClusterStatus& status);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_RUN_REPORT_H_
