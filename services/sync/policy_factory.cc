#include "sync/policy_factory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sync/bounded_staleness_policy.h"
#include "sync/dssp_policy.h"
#include "sync/dssync_policy.h"
#include "sync/hybrid_policy.h"
#include "sync/peer_round_policy.h"
#include "sync/selmcast_ssp_policy.h"
#include "sync/wbsp_policy.h"

namespace syncopate::sync {

std::vector<std::string> SupportedModes() {
  return {"bsp",    "asp",    "ssp",      "dssp",         "wbsp",    "wbsp-overlap",
          "hybrid", "dssync", "selmcast", "selmcast-ssp", "orpheus", "orpheus-ssp"};
}

int64_t DefaultStaleness(const std::string& mode) {
  return mode == "selmcast-ssp" || mode == "orpheus-ssp" ? 4 : 3;
}

int64_t PolicyOptions::Staleness() const { return staleness.value_or(DefaultStaleness(mode)); }

namespace {

// INVALID_ARGUMENT when a mode with one staleness bound (ssp, selmcast-ssp) gets a negative one.
absl::Status CheckStaleness(const PolicyOptions& options) {
  if (options.Staleness() >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(options.mode, " needs a staleness >= 0, got ", options.Staleness()));
}

bool IsPeerToPeer(const std::string& mode) {
  return mode == "dssync" || mode == "selmcast" || mode == "orpheus" || mode == "selmcast-ssp" ||
         mode == "orpheus-ssp";
}

bool PushesToRounds(const std::string& mode) {
  return mode == "bsp" || mode == "hybrid" || mode == "wbsp" || mode == "wbsp-overlap";
}

std::string AggregationName(Aggregation a) {
  switch (a) {
    case Aggregation::kSumOverN:
      return "sum/n";
    case Aggregation::kMean:
      return "mean";
    case Aggregation::kSum:
      return "sum";
  }
  return "";
}

}  // namespace

absl::StatusOr<Aggregation> ResolveAggregation(const PolicyOptions& o) {
  const std::string& a = o.aggregation;
  if (a != "sum/n" && a != "mean" && a != "sum" && a != "paper") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown aggregation '", a, "' (supported: sum/n, mean, sum, paper)"));
  }
  if (IsPeerToPeer(o.mode)) {
    if (a == "sum/n" || a == "paper") return Aggregation::kSumOverN;
    return absl::InvalidArgumentError(
        absl::StrCat(o.mode, " averages models: --aggregation=", a, " does not apply"));
  }
  const bool rounds = PushesToRounds(o.mode);
  if (a == "paper") {
    if (o.mode == "bsp" || o.mode == "hybrid") return Aggregation::kMean;
    return rounds ? Aggregation::kSumOverN : Aggregation::kSum;
  }
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
  if (!IsPeerToPeer(o.mode)) {
    absl::StatusOr<Aggregation> rule = ResolveAggregation(o);
    const std::string deltas = rule.ok() ? AggregationName(*rule) : o.aggregation;
    if (o.mode == "ssp") return absl::StrCat("s=", o.Staleness(), ", deltas ", deltas);
    if (o.mode == "dssp") {
      const bool paper = o.dssp_rule == "paper";
      return absl::StrCat("s=", o.Staleness(), "..", o.staleness_max,
                          paper ? " uncapped (paper)" : "", ", deltas ", deltas);
    }
    if (o.mode == "hybrid") {
      return absl::StrCat("groups<=", o.groups, ", split ratio ", o.split_ratio, ", regroup every ",
                          o.regroup_every, " rounds, deltas ", deltas);
    }
    return absl::StrCat("deltas ", deltas);
  }
  if (o.mode == "dssync") {
    return absl::StrCat(
        "groups=", o.groups, o.group_sizes == "bandwidth" ? " sized by bandwidth" : "",
        o.global_average_every > 0
            ? absl::StrCat(", global average every ", o.global_average_every, " rounds")
            : "");
  }
  if (o.mode == "selmcast" || o.mode == "orpheus") {
    return absl::StrCat("p=", o.min_receivers_fraction, "n, k=", o.k);
  }
  if (o.mode == "selmcast-ssp") {
    return absl::StrCat("s=", o.Staleness(), ", eta=", o.eta, ", p=", o.min_receivers_fraction,
                        "n, k=", o.k);
  }
  if (o.mode == "orpheus-ssp") {
    return absl::StrCat("s=", o.Staleness(), ", p=", o.min_receivers_fraction, "n, k=", o.k);
  }
  return "";
}

absl::StatusOr<std::unique_ptr<SyncPolicy>> MakePolicy(const PolicyOptions& options) {
  const std::string& mode = options.mode;
  const std::vector<std::string> modes = SupportedModes();
  if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown mode '", mode, "' (supported: ", absl::StrJoin(modes, ", "), ")"));
  }
  absl::StatusOr<Aggregation> aggregation = ResolveAggregation(options);
  if (!aggregation.ok()) return aggregation.status();
  absl::StatusOr<DsspRule> dssp_rule = ResolveDsspRule(options);
  if (!dssp_rule.ok()) return dssp_rule.status();
  absl::StatusOr<GroupSizing> group_sizing = ResolveGroupSizing(options);
  if (!group_sizing.ok()) return group_sizing.status();
  if (mode == "bsp" || mode == "asp" || mode == "ssp") {
    BoundedStalenessConfig config;
    config.name = mode;
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    config.aggregation = *aggregation;
    if (mode == "bsp") {
      config.staleness = 0;
      config.round_snapshots = true;
    } else if (mode == "asp") {
      config.staleness = -1;
    } else {
      if (absl::Status s = CheckStaleness(options); !s.ok()) return s;
      config.staleness = options.Staleness();
    }
    return std::make_unique<BoundedStalenessPolicy>(std::move(config));
  }
  if (mode == "dssp") {
    if (options.Staleness() < 0 || options.staleness_max < options.Staleness()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dssp needs 0 <= staleness <= staleness-max, got ", options.Staleness(),
                       " and ", options.staleness_max));
    }
    return std::make_unique<DsspPolicy>(DsspConfig{options.Staleness(), options.staleness_max,
                                                   options.min_trainers, options.start_timeout,
                                                   *aggregation, *dssp_rule});
  }
  if (mode == "wbsp" || mode == "wbsp-overlap") {
    WbspConfig config;
    config.aggregation = *aggregation;
    config.overlap = mode == "wbsp-overlap";
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    return std::make_unique<WbspPolicy>(config);
  }
  if (mode == "hybrid") {
    if (options.groups < 1) return absl::InvalidArgumentError("hybrid needs --groups >= 1");
    if (!(options.split_ratio > 1.0)) {
      return absl::InvalidArgumentError("hybrid needs --split-ratio > 1");
    }
    if (options.regroup_every < 1) {
      return absl::InvalidArgumentError("hybrid needs --regroup-every >= 1");
    }
    HybridConfig config;
    config.max_groups = options.groups;
    config.split_ratio = options.split_ratio;
    config.regroup_every = options.regroup_every;
    config.aggregation = *aggregation;
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    return std::make_unique<HybridPolicy>(config);
  }
  if (IsPeerToPeer(mode)) {
    if (mode == "dssync" && options.groups < 1) {
      return absl::InvalidArgumentError("dssync needs --groups >= 1");
    }
    if (mode == "dssync" && options.global_average_every < 0) {
      return absl::InvalidArgumentError("dssync needs --global-average-every >= 0");
    }
    if (!(options.min_receivers_fraction > 0 && options.min_receivers_fraction <= 1)) {
      return absl::InvalidArgumentError("peer-to-peer modes need 0 < --p <= 1");
    }
    if (options.k < 0) return absl::InvalidArgumentError("--k must be >= 0");
  }
  if (mode == "selmcast-ssp" || mode == "orpheus-ssp") {
    if (absl::Status s = CheckStaleness(options); !s.ok()) return s;
    if (!(options.eta > 0 && options.eta <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(mode, " needs 0 < --eta <= 1, got ", options.eta));
    }
    SelMcastSspConfig config;
    config.planner = mode == "orpheus-ssp" ? "orpheus" : "selmcast";
    config.seed = options.seed;
    config.staleness = options.Staleness();
    config.eta = options.eta;
    config.min_receivers_fraction = options.min_receivers_fraction;
    config.k = options.k;
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    return std::make_unique<SelMcastSspPolicy>(config);
  }
  if (mode == "dssync") {
    DsSyncConfig config;
    config.groups = options.groups;
    config.sizing = *group_sizing;
    config.global_average_every = options.global_average_every;
    config.seed = options.seed;
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    return std::make_unique<DsSyncPolicy>(config);
  }
  if (mode == "selmcast" || mode == "orpheus") {
    PeerRoundConfig config;
    config.planner = mode;
    config.min_receivers_fraction = options.min_receivers_fraction;
    config.k = options.k;
    config.seed = options.seed;
    config.min_trainers = options.min_trainers;
    config.start_timeout = options.start_timeout;
    return std::make_unique<PeerRoundPolicy>(config);
  }
  return absl::InternalError(absl::StrCat("mode '", mode, "' has no policy"));
}

}  // namespace syncopate::sync
