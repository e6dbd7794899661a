// Builds the policy a mode name stands for.
#ifndef SYNCOPATE_SYNC_POLICY_FACTORY_H_
#define SYNCOPATE_SYNC_POLICY_FACTORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sync/dssp_policy.h"
#include "sync/dssync_grouping.h"
#include "sync/policy.h"

namespace syncopate::sync {

struct PolicyOptions {
  std::string mode = "bsp";
  // SSP's and selmcast-ssp's bound s; DSSP's lower bound s_lo. Unset: the mode's default
  // (DefaultStaleness).
  std::optional<int64_t> staleness;
  // DSSP's upper bound s_hi (the hard cap under the default rule).
  int64_t staleness_max = 15;
  // DSSP's rule (docs/modes.md): "capped" (default: no trainer more than s_hi clocks ahead of the
  // slowest) or "paper" (Algorithm 1 as published: the fastest trainer's lead is not bounded).
  // Other modes ignore it, but an unknown name is refused in every mode.
  std::string dssp_rule = "capped";
  // The step-size rule of the store modes (docs/modes.md): "sum/n", the default of every mode
  // (each delta weighs 1/N, N live trainers); "mean" (round modes: the mean of a round's pushes);
  // "sum" (immediate modes: weight 1); or "paper", the mode's published rule (bsp, hybrid: mean;
  // wbsp: sum/n; asp, ssp, dssp: sum). Peer-to-peer modes average models and take only the
  // default or "paper".
  std::string aggregation = "sum/n";
  // Hybrid: at most this many groups; split where neighbours' step times differ by this ratio;
  // propose a regrouping every this many rounds.
  int groups = 2;
  double split_ratio = 1.5;
  int regroup_every = 8;
  // Peer-to-peer modes: selmcast/orpheus send to at least ceil(min_receivers_fraction * n)
  // receivers, every pair at least once per k+1 rounds. dssync uses `groups`, sized by
  // `group_sizes`: "equal" (the default: sizes differ by at most one) or "bandwidth" (groups
  // holding a slow link are smaller, GroupSizing::kBandwidth); an unknown name is refused in every
  // mode. Every `global_average_every` rounds (0: never) dssync's round is one group of all.
  // `seed` drives dssync's shuffle and orpheus's random choices.
  std::string group_sizes = "equal";
  int64_t global_average_every = 0;
  double min_receivers_fraction = 0.3;
  int k = 4;
  uint64_t seed = 1;
  // selmcast-ssp (which also takes `staleness`, `min_receivers_fraction` and `k`): an in-flight
  // receiver with less than eta of the model left is never preempted.
  double eta = 0.75;
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);

  // `staleness`, or the mode's default.
  int64_t Staleness() const;
};

// The modes this build implements, in documentation order.
std::vector<std::string> SupportedModes();

// The staleness bound a mode uses when none is given: 4 for selmcast-ssp (the paper's), else 3.
int64_t DefaultStaleness(const std::string& mode);

// The step-size rule options.aggregation names for options.mode ("paper" resolved);
// INVALID_ARGUMENT for an unknown name or one the mode cannot use. Peer-to-peer modes: kSumOverN.
absl::StatusOr<Aggregation> ResolveAggregation(const PolicyOptions& options);

// The DSSP rule options.dssp_rule names; INVALID_ARGUMENT for an unknown name.
absl::StatusOr<DsspRule> ResolveDsspRule(const PolicyOptions& options);

// The dssync group sizing options.group_sizes names; INVALID_ARGUMENT for an unknown name.
absl::StatusOr<GroupSizing> ResolveGroupSizing(const PolicyOptions& options);

// The parameters that matter for options.mode, for reports ("s=3, deltas sum/n",
// "s=3..15, deltas sum/n", "s=3..15 uncapped (paper), deltas sum/n", "deltas mean", "groups=2",
// "groups=2 sized by bandwidth, global average every 20 rounds", ...).
std::string DescribeMode(const PolicyOptions& options);

// INVALID_ARGUMENT for an unknown mode or an option the mode cannot use (a negative bound,
// s_hi < s_lo, an unknown aggregation or DSSP rule, fewer than one group, a split ratio <= 1, ...).
absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_FACTORY_H_
