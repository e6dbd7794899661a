#include "sync/policy_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace syncopate::sync {

absl::StatusOr<Aggregation> ResolveAggregation(const PolicyOptions& o) {
  const std::string& a = o.aggregation;
  if (a != "sum/n" && a != "mean" && a != "sum" && a != "paper") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown aggregation '", a, "' (supported: sum/n, mean, sum, paper)"));
  }
  absl::StatusOr<const Mode*> mode = LookupMode(o.mode);
  if (!mode.ok()) return mode.status();
  if ((*mode)->peer_to_peer()) {
    if (a == "sum/n" || a == "paper") return Aggregation::kSumOverN;
    return absl::InvalidArgumentError(
        absl::StrCat(o.mode, " averages models: --aggregation=", a, " does not apply"));
  }
  const bool rounds = (*mode)->closes_rounds();
  if (a == "paper") return (*mode)->paper_aggregation;
  if (a == "sum/n") return Aggregation::kSumOverN;
  if (a == "mean" && rounds) return Aggregation::kMean;
  if (a == "sum" && !rounds) return Aggregation::kSum;
  return absl::InvalidArgumentError(absl::StrCat(
      "--aggregation=", a, " does not apply to ", o.mode, " (",
      rounds ? "a round mode: sum/n, mean or paper" : "an immediate mode: sum/n, sum or paper",
      ")"));
}

absl::StatusOr<DsspRule> ResolveDsspRule(const PolicyOptions& o) {
  if (o.dssp_rule == "capped") return DsspRule::kCapped;
  if (o.dssp_rule == "paper") return DsspRule::kPaper;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dssp rule '", o.dssp_rule, "' (supported: capped, paper)"));
}

absl::StatusOr<GroupSizing> ResolveGroupSizing(const PolicyOptions& o) {
  if (o.group_sizes == "equal") return GroupSizing::kEqual;
  if (o.group_sizes == "bandwidth") return GroupSizing::kBandwidth;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown group sizes '", o.group_sizes, "' (supported: equal, bandwidth)"));
}

std::string DescribeMode(const PolicyOptions& o) {
  const Mode* entry = FindMode(o.mode);
  if (entry == nullptr) return "";
  std::vector<std::string> parts;
  if (entry->reads("staleness-max")) {
    parts.push_back(absl::StrCat("s=", o.Staleness(), "..", o.staleness_max,
                                 o.dssp_rule == "paper" ? " uncapped (paper)" : ""));
  } else if (entry->reads("staleness")) {
    parts.push_back(absl::StrCat("s=", o.Staleness()));
  }
  if (entry->reads("split-ratio")) {
    parts.push_back(absl::StrCat("groups<=", o.groups, ", split ratio ", o.split_ratio,
                                 ", regroup every ", o.regroup_every, " rounds"));
  }
  if (entry->reads("group-sizes")) {
    parts.push_back(absl::StrCat(
        "groups=", o.groups, o.group_sizes == "bandwidth" ? " sized by bandwidth" : "",
        o.global_average_every > 0
            ? absl::StrCat(", global average every ", o.global_average_every, " rounds")
            : ""));
  }
  if (entry->reads("eta")) parts.push_back(absl::StrCat("eta=", o.eta));
  if (entry->reads("p"))
    parts.push_back(absl::StrCat("p=", o.min_receivers_fraction, "n, k=", o.k));
  if (entry->reads("aggregation")) {
    absl::StatusOr<Aggregation> rule = ResolveAggregation(o);
    parts.push_back(
        absl::StrCat("deltas ", rule.ok() ? std::string(AggregationName(*rule)) : o.aggregation));
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options) {
  absl::StatusOr<const Mode*> mode = LookupMode(options.mode);
  if (!mode.ok()) return mode.status();
  if (absl::Status s = CheckPolicyOptionRanges(options); !s.ok()) return s;
  absl::StatusOr<Aggregation> aggregation = ResolveAggregation(options);
  if (!aggregation.ok()) return aggregation.status();
  return (*mode)->make(**mode, options, *aggregation);
}

}  // namespace syncopate::sync
