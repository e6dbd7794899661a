// A discrete-event simulation of a whole job under one sync mode: the real policy classes (the
// code the coordinator runs) fed by simulated trainers instead of gRPC sessions. Each trainer
// computes for its step time (a base step, times its slowdown, times a seeded log-normal jitter),
// pushes, reports, waits for its grant, pulls (or exchanges with its peers), and computes again.
// In the overlapped modes (wbsp-overlap) the trainer's loop steps on while its communication
// thread pushes, reports, waits and pulls, and each delta holds the steps since the last one; in
// the background ones (the -ssp modes) its multicasts never hold its steps.
// Transfers take model bytes over the trainer's link; the control plane costs a fixed latency per
// directive and per round close, one action at a time, as the coordinator's action thread does
// (with pipelined grants, a close and its grants' delivery overlap).
// Simulated time only: nothing sleeps, and the same options give the same figures (except the
// measured cost of the policy calls).
#ifndef SYNCOPATE_SYNC_CLUSTER_SIM_H_
#define SYNCOPATE_SYNC_CLUSTER_SIM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/bandwidth_estimator.h"
#include "sync/policy_factory.h"

namespace syncopate::sync {

struct ClusterSimOptions {
  PolicyOptions policy;  // its min_trainers is set to `trainers` (every trainer starts together)
  int trainers = 100;
  // The first `stragglers` trainers are `straggler_slowdown` times slower than the rest.
  int stragglers = 1;
  double straggler_slowdown = 4;
  // One slowdown per trainer instead (e.g. 1,2,4,6); when set, its size must be `trainers`.
  std::vector<double> slowdowns;
  absl::Duration step = absl::Milliseconds(100);
  double jitter_sigma = 0.1;  // log-normal sigma of each step's time
  double model_bytes = 400e3;
  double link_bytes_per_second = 1.25e9;  // every trainer's link, both directions
  // One link per trainer instead, its upload and download rates in bytes/s (e.g. one slow
  // uplink); when set, its size must be `trainers`. A push takes the trainer's upload and a pull
  // its download; a round's exchange the longest of the trainer's upload, its download and each
  // of its senders' uploads to all their receivers; a background multicast arrives after its
  // sender's upload.
  std::vector<LinkRates> links;
  // Report -> grant delivery when no round closes; and one round close on the stores.
  absl::Duration directive_latency = absl::Milliseconds(0.5);
  absl::Duration close_latency = absl::Milliseconds(2);
  // As the coordinator's --pipeline-grants: where the mode allows it
  // (SyncPolicy::MayGrantWhileClosing), a round's grants go out as its close starts, and each
  // grant's pull waits on the store until the close is done. false: grants after the close.
  bool pipeline_grants = true;
  // Stops once every trainer reached this clock.
  int64_t clocks = 1000;
  // At clock `leave_at_clock` (0: never) the last trainer leaves; at `rejoin_at_clock` (0: never)
  // it joins again.
  int64_t leave_at_clock = 0;
  int64_t rejoin_at_clock = 0;
  uint64_t seed = 1;
};

struct ClusterSimResult {
  std::string mode;
  int trainers = 0;
  double simulated_seconds = 0;
  // Simulated seconds per clock of the slowest trainer.
  double seconds_per_clock = 0;
  // Compute time over time in the job, over all trainers.
  double compute_time_ratio = 0;
  // Staleness at each grant: the granted clock minus the minimum clock then.
  double staleness_p50 = 0, staleness_p99 = 0, staleness_max = 0;
  // Steps of every trainer per simulated second (an overlapped mode's deltas may hold several;
  // a clock is a delta).
  double steps_per_second = 0;
  // Store modes: how stale each delta is when the store applies it (delta_staleness.h), in
  // steps of the job (other trainers' deltas it missed, times the mean steps a delta held, / N).
  // Peer-to-peer modes: how many of the other trainers' steps each step's model missed
  // (peer_staleness.h) / N, up to kPeerStalenessTrainers trainers (each step costs O(N) there); -1
  // beyond.
  double delta_staleness_mean = -1, delta_staleness_p99 = -1;
  int64_t rounds_closed = 0;
  int64_t events = 0;  // policy calls: joins, reports, leaves, ticks
  int64_t grants = 0;
  // Measured (wall clock) cost of the policy calls, mean per call.
  double policy_us_per_event = 0;
  double wall_seconds = 0;  // the whole simulation
};

// The most trainers whose peer-to-peer staleness the simulation counts.
inline constexpr int kPeerStalenessTrainers = 64;

// OK, or INVALID_ARGUMENT naming what is out of range in `options` (its policy is not checked).
absl::Status CheckClusterSimOptions(const ClusterSimOptions& options);

// INVALID_ARGUMENT for options out of range or a mode MakePolicy refuses; INTERNAL when the policy
// refuses an event the simulated trainers make correctly, or grants nothing for 300 s of
// simulated time while every trainer waits (a policy bug).
absl::StatusOr<ClusterSimResult> SimulateCluster(const ClusterSimOptions& options);
// The same with a policy of the caller's (options.policy is not used, and the policy's own
// min_trainers holds): a seam for tests.
absl::StatusOr<ClusterSimResult> SimulateCluster(const ClusterSimOptions& options,
                                                 std::unique_ptr<SyncPolicy> policy);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_CLUSTER_SIM_H_
