// Builds the policy a mode name stands for, from the mode table (sync/modes.h).
#ifndef SYNCOPATE_SYNC_POLICY_FACTORY_H_
#define SYNCOPATE_SYNC_POLICY_FACTORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sync/dssp_policy.h"
#include "sync/dssync_grouping.h"
#include "sync/modes.h"
#include "sync/policy.h"
#include "sync/policy_options.h"

namespace syncopate::sync {

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

// INVALID_ARGUMENT for an unknown mode, an option outside its declared range
// (CheckPolicyOptionRanges: a negative bound, fewer than one group, a split ratio <= 1, an unknown
// DSSP rule, ...) or one the mode cannot use (s_hi < s_lo, a step-size rule of the other family).
absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_FACTORY_H_
