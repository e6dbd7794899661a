// `syncopate advise`: which mode to run a job in. It simulates the job's cluster
// (sync/cluster_sim.h, the coordinator's own policies) under every mode of the mode table, with a
// few staleness bounds where a mode takes one, and predicts each candidate's time to a target from
// two simulated figures: how many steps the trainers take per second, and how stale their deltas
// are when the store applies them (sync/delta_staleness.h). The prediction's model
// (docs/advise.md):
//
//   progress per second = steps per second / N  x  1 / (1 + staleness / tolerance)
//
// (under the default step-size rule each delta is 1/N of a step of the job; a delta `staleness`
// steps stale is worth 1 / (1 + staleness / tolerance) of a fresh one). The tolerance is the
// model's one parameter: how well the user's model takes stale deltas, in steps of the job. The
// peer-to-peer modes average models instead of applying deltas; their staleness is not modelled,
// so they are simulated and shown but not predicted.
#ifndef SYNCOPATE_CLI_ADVISE_COMMAND_H_
#define SYNCOPATE_CLI_ADVISE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/local_command.h"
#include "cli/run_report.h"
#include "sync/cluster_sim.h"

namespace syncopate::cli {

struct AdviseOptions {
  // The cluster: trainers, their slowdowns, the step, the model's size, the links (its policy is
  // set per candidate; its seed is every candidate's).
  sync::ClusterSimOptions cluster;
  // How well the model takes stale deltas, in steps of the job (> 0); 0.84 fits our MLP's measured
  // times to 0.85 (docs/advise.md).
  double staleness_tolerance = 1;
  // Steps of the job that fresh SGD needs to reach the target; 0: times relative to the best only.
  int64_t target_steps = 0;
};

// One candidate: a mode with its flags, simulated.
struct AdviceRow {
  std::string mode;
  std::vector<std::string> flags;  // e.g. --staleness=3; none for the mode's defaults
  sync::ClusterSimResult sim;
  // Predicted progress per second, in steps of the job; nullopt: not predicted (peer-to-peer).
  std::optional<double> rate;
};

// How far the recommendation holds: the winner at the tolerance also wins at a quarter of it and
// at four times it (high), at one of the two (medium), or at neither (low).
enum class Confidence { kHigh, kMedium, kLow };
const char* ConfidenceName(Confidence confidence);

// The confidence in `winners`: the winners at a quarter of the tolerance, at it and at four times
// it.
Confidence ConfidenceOf(const std::vector<std::string>& winners);

struct Advice {
  // Predicted candidates first, the fastest first; then the others by steps per second.
  std::vector<AdviceRow> rows;
  // The winners (their names with flags) at a quarter of the tolerance, at it, and at four times
  // it; "" where nothing is predicted.
  std::vector<std::string> winners;
  Confidence confidence = Confidence::kLow;
};

// Predicted progress per second of a simulated store-mode job at `tolerance` (the model above);
// nullopt for a peer-to-peer mode.
std::optional<double> PredictedRate(const sync::ClusterSimResult& sim, double tolerance);

// The trainers of a run (a probe's summary, or a running cluster's status as FillFromStatus reads
// it): each one's time in steps over its clock gives its step (the fastest's is the profile's
// step, the others' ratios to it their slowdowns); trainers that left or were evicted are left
// out. The model's size is `model_bytes`; the rest comes from `base`. INVALID_ARGUMENT when no
// trainer took a step.
absl::StatusOr<sync::ClusterSimOptions> ProfileFromRun(const RunSummary& run, double model_bytes,
                                                       sync::ClusterSimOptions base);

// Runs the job `run` describes under asp (whatever its mode; no target, for its time limit),
// prints its summary, and measures its cluster: ProfileFromRun, with the model's size read from
// the run's checkpoints. The links stay `base`'s: the probe runs on this machine, over loopback,
// not over the cluster's network. Fails with the run's error, or
// FAILED_PRECONDITION when the run was interrupted or had faults (its figures would not be the
// cluster's).
absl::StatusOr<sync::ClusterSimOptions> Probe(LocalRunOptions run,
                                              const sync::ClusterSimOptions& base);

// INVALID_ARGUMENT for a bad profile or tolerance; a candidate the simulator refuses fails the run.
absl::StatusOr<Advice> Advise(const AdviseOptions& options);

// The ranked table and the recommendation.
std::string FormatAdvice(const AdviseOptions& options, const Advice& advice);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_ADVISE_COMMAND_H_
