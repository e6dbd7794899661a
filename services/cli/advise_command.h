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
// peer-to-peer modes average models instead of applying deltas; their steps are discounted the
// same way by how many of the others' steps the model each was computed on missed
// (sync/peer_staleness.h), which the simulation counts up to sync::kPeerStalenessTrainers
// trainers; beyond, they are simulated and shown but not predicted. The profile comes from flags,
// from a running coordinator, or from a probe: short runs of the job itself, which also fit the
// tolerance.
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
  // How well the model takes stale deltas, in steps of the job (> 0): a delta this stale is worth
  // half a fresh one. A probe fits it to the job (FitToProbe).
  double staleness_tolerance = 1;
  // Steps of the job that fresh SGD needs to reach the target; 0: times relative to the best only.
  int64_t target_steps = 0;
};

// One candidate: a mode with its flags, simulated.
struct AdviceRow {
  std::string mode;
  std::vector<std::string> flags;  // e.g. --staleness=3; none for the mode's defaults
  sync::ClusterSimResult sim;
  // Predicted progress per second, in steps of the job; nullopt: not predicted (peer-to-peer
  // beyond sync::kPeerStalenessTrainers trainers).
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

// Predicted progress per second of a simulated job at `tolerance` (the model above); nullopt
// where the simulation did not count its staleness (peer-to-peer, beyond
// sync::kPeerStalenessTrainers trainers).
std::optional<double> PredictedRate(const sync::ClusterSimResult& sim, double tolerance);

// The trainers of a run (a probe's summary, or a running cluster's status as FillFromStatus reads
// it): each one's time in steps over its clock gives its step (the fastest's is the profile's
// step, the others' ratios to it their slowdowns); trainers that left or were evicted are left
// out, with their links when `base` has one per trainer of the run (in the run's order of
// trainers). The model's size is `model_bytes`; the rest comes from `base`. INVALID_ARGUMENT when
// no trainer took a step, or `base` has links for another number of trainers.
absl::StatusOr<sync::ClusterSimOptions> ProfileFromRun(const RunSummary& run, double model_bytes,
                                                       sync::ClusterSimOptions base);

// The tolerance that explains two runs of the same job on the same cluster: `fresh`, whose deltas
// were `fresh_staleness` stale (in the simulation), and `stale`, `stale_staleness` (more). Each
// reached `accuracy`, a level both did (just under the lower of their best), in some steps of the
// job (their steps per second over N, times the time they took); the model predicts the ratio
// stale / fresh of those steps as (1 + stale_staleness / t) / (1 + fresh_staleness / t), which
// gives t, kept within [kMinTolerance, kMaxTolerance] (a stale run that needed no more steps: the
// most; one that needed more than any tolerance explains: the least).
struct ToleranceFit {
  static constexpr double kMinTolerance = 0.05;
  static constexpr double kMaxTolerance = 100;
  // The stale run's staleness must be at least this many times the fresh one's: closer, the
  // ratio of their steps is all noise.
  static constexpr double kStalerBy = 1.5;
  double tolerance = 0;
  double accuracy = 0;
  double fresh_steps = 0, stale_steps = 0;  // to `accuracy`, in steps of the job
};
// FAILED_PRECONDITION, saying why, when the runs cannot tell: one has fewer than two
// evaluations or no steps, or the stale one was not kStalerBy staler.
absl::StatusOr<ToleranceFit> FitTolerance(const RunSummary& fresh, double fresh_staleness,
                                          const RunSummary& stale, double stale_staleness);

// A probe of the job `run` describes (`advise probe`): it runs the job under asp (whatever its
// mode; no target, for its time limit) in RUN_DIR/asp and then under wbsp in RUN_DIR/wbsp (a fresh
// directory under /tmp when the run names none), printing each summary.
struct ProbeRuns {
  RunSummary asp;          // nobody waits: each trainer's own speed shows
  RunSummary wbsp;         // as fast, with staler deltas: what staleness costs this job
  double model_bytes = 0;  // read from the asp run's checkpoint
};
// Fails with a run's error, or FAILED_PRECONDITION when a run was interrupted or had faults (its
// figures would not be the cluster's).
absl::StatusOr<ProbeRuns> Probe(LocalRunOptions run);

// FitTolerance on a probe of the cluster `profile` describes (ProfileFromRun of its asp run),
// with each run's delta staleness simulated on that profile.
absl::StatusOr<ToleranceFit> FitToProbe(const ProbeRuns& probe,
                                        const sync::ClusterSimOptions& profile);

// INVALID_ARGUMENT for a bad profile or tolerance; a candidate the simulator refuses fails the run.
absl::StatusOr<Advice> Advise(const AdviseOptions& options);

// The ranked table and the recommendation.
std::string FormatAdvice(const AdviseOptions& options, const Advice& advice);

// What `syncopate local` says after a run that ended normally: a warning when, on the cluster the
// run measured (ProfileFromRun, the model's size from the checkpoint in summary.run_dir, the links
// the run emulated (its --egress-rate, --ingress-rate) or else the simulator's default ones), the
// advisor predicts the run's mode with its options (`cluster.policy`, seeded with `cluster.seed`)
// to take more than kWarnAbove times as long to a target as the mode it would choose at the
// default tolerance, at every tolerance from a quarter of the default to four times it (so not a
// guess that hangs on the tolerance). "" for no warning: the mode is within that, is not predicted
// (peer-to-peer beyond sync::kPeerStalenessTrainers trainers), or the run gave no profile (no
// trainer's steps, no checkpoint).
inline constexpr double kWarnAbove = 1.5;
std::string AdviceAfterRun(const LocalClusterOptions& cluster, const RunSummary& summary);

}  // namespace syncopate::cli

#endif  // SYNCOPATE_CLI_ADVISE_COMMAND_H_
