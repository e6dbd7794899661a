#include "sync/modes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sync/bounded_staleness_policy.h"
#include "sync/dssp_policy.h"
#include "sync/dssync_policy.h"
#include "sync/hybrid_policy.h"
#include "sync/peer_round_policy.h"
#include "sync/policy_factory.h"
#include "sync/selmcast_ssp_policy.h"
#include "sync/wbsp_policy.h"

namespace syncopate::sync {
namespace {

using PolicyOr = absl::StatusOr<std::unique_ptr<SyncPolicy>>;

// bsp, asp and ssp: one clock table, a bound of 0, none (-1) or s.
PolicyOr BoundedStaleness(const PolicyOptions& o, Aggregation aggregation, int64_t staleness,
                          bool round_snapshots) {
  BoundedStalenessConfig config;
  config.name = o.mode;
  config.staleness = staleness;
  config.round_snapshots = round_snapshots;
  config.aggregation = aggregation;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<BoundedStalenessPolicy>(std::move(config));
}

PolicyOr MakeBsp(const Mode&, const PolicyOptions& o, Aggregation a) {
  return BoundedStaleness(o, a, 0, true);
}
PolicyOr MakeAsp(const Mode&, const PolicyOptions& o, Aggregation a) {
  return BoundedStaleness(o, a, -1, false);
}
PolicyOr MakeSsp(const Mode&, const PolicyOptions& o, Aggregation a) {
  return BoundedStaleness(o, a, o.Staleness(), false);
}

PolicyOr MakeDssp(const Mode&, const PolicyOptions& o, Aggregation aggregation) {
  if (o.staleness_max < o.Staleness()) {
    return absl::InvalidArgumentError(absl::StrCat("dssp needs staleness <= staleness-max, got ",
                                                   o.Staleness(), " and ", o.staleness_max));
  }
  absl::StatusOr<DsspRule> rule = ResolveDsspRule(o);
  if (!rule.ok()) return rule.status();
  return std::make_unique<DsspPolicy>(DsspConfig{o.Staleness(), o.staleness_max, o.min_trainers,
                                                 o.start_timeout, aggregation, *rule});
}

PolicyOr Wbsp(const PolicyOptions& o, Aggregation aggregation, bool overlap) {
  WbspConfig config;
  config.aggregation = aggregation;
  config.overlap = overlap;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<WbspPolicy>(config);
}

PolicyOr MakeWbsp(const Mode&, const PolicyOptions& o, Aggregation a) { return Wbsp(o, a, false); }
PolicyOr MakeWbspOverlap(const Mode&, const PolicyOptions& o, Aggregation a) {
  return Wbsp(o, a, true);
}

PolicyOr MakeHybrid(const Mode&, const PolicyOptions& o, Aggregation aggregation) {
  HybridConfig config;
  config.max_groups = o.groups;
  config.split_ratio = o.split_ratio;
  config.regroup_every = o.regroup_every;
  config.aggregation = aggregation;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<HybridPolicy>(config);
}

PolicyOr MakeDsSync(const Mode&, const PolicyOptions& o, Aggregation) {
  absl::StatusOr<GroupSizing> sizing = ResolveGroupSizing(o);
  if (!sizing.ok()) return sizing.status();
  DsSyncConfig config;
  config.groups = o.groups;
  config.sizing = *sizing;
  config.global_average_every = o.global_average_every;
  config.seed = o.seed;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<DsSyncPolicy>(config);
}

// selmcast and orpheus: rounds of multicasts, planned by the mode's planner.
PolicyOr MakePeerRound(const Mode& mode, const PolicyOptions& o, Aggregation) {
  PeerRoundConfig config;
  config.planner = std::string(mode.planner);
  config.min_receivers_fraction = o.min_receivers_fraction;
  config.k = o.k;
  config.seed = o.seed;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<PeerRoundPolicy>(config);
}

// selmcast-ssp and orpheus-ssp: multicasts without rounds, within a staleness bound.
PolicyOr MakePeerSsp(const Mode& mode, const PolicyOptions& o, Aggregation) {
  SelMcastSspConfig config;
  config.planner = std::string(mode.planner);
  config.seed = o.seed;
  config.staleness = o.Staleness();
  config.eta = o.eta;
  config.min_receivers_fraction = o.min_receivers_fraction;
  config.k = o.k;
  config.min_trainers = o.min_trainers;
  config.start_timeout = o.start_timeout;
  return std::make_unique<SelMcastSspPolicy>(config);
}

}  // namespace

bool Mode::reads(absl::string_view flag) const {
  return std::find(options.begin(), options.end(), flag) != options.end() ||
         (flag == "aggregation" && !peer_to_peer());
}

const std::vector<Mode>& Modes() {
  static const std::vector<Mode>* const modes = new std::vector<Mode>{
      {"bsp",
       PushMode::kRound,
       "bulk-synchronous: every round waits for every trainer",
       Aggregation::kMean,
       0,
       {},
       "",
       &MakeBsp},
      {"asp",
       PushMode::kImmediate,
       "asynchronous: nobody waits, staleness is unbounded",
       Aggregation::kSum,
       0,
       {},
       "",
       &MakeAsp},
      {"ssp",
       PushMode::kImmediate,
       "stale-synchronous: the fastest runs at most s clocks ahead",
       Aggregation::kSum,
       3,
       {"staleness"},
       "",
       &MakeSsp},
      {"dssp",
       PushMode::kImmediate,
       "dynamic SSP: the bound moves between s_lo and s_hi with the measured speeds",
       Aggregation::kSum,
       3,
       {"staleness", "staleness-max", "dssp-rule"},
       "",
       &MakeDssp},
      {"wbsp",
       PushMode::kRound,
       "worker-busy BSP: fast trainers keep training while a round waits",
       Aggregation::kSumOverN,
       0,
       {},
       "",
       &MakeWbsp},
      {"wbsp-overlap",
       PushMode::kRound,
       "wbsp whose pushes and pulls run beside the next steps",
       Aggregation::kSumOverN,
       0,
       {},
       "",
       &MakeWbspOverlap},
      {"hybrid",
       PushMode::kRound,
       "groups of similar speed: BSP inside a group, async between",
       Aggregation::kMean,
       0,
       {"groups", "split-ratio", "regroup-every"},
       "",
       &MakeHybrid},
      {"dssync",
       PushMode::kNone,
       "divide and shuffle: trainers average in shuffled groups",
       Aggregation::kSumOverN,
       0,
       {"groups", "group-sizes", "global-average-every", "seed"},
       "",
       &MakeDsSync},
      {"selmcast",
       PushMode::kNone,
       "selective multicast rounds planned for the links' rates",
       Aggregation::kSumOverN,
       0,
       {"p", "k"},
       "selmcast",
       &MakePeerRound},
      {"selmcast-ssp",
       PushMode::kNone,
       "selective multicast without rounds, within a bound s",
       Aggregation::kSumOverN,
       4,
       {"staleness", "eta", "p", "k"},
       "selmcast",
       &MakePeerSsp},
      {"orpheus",
       PushMode::kNone,
       "random multicast rounds (selmcast's baseline)",
       Aggregation::kSumOverN,
       0,
       {"p", "k", "seed"},
       "orpheus",
       &MakePeerRound},
      {"orpheus-ssp",
       PushMode::kNone,
       "random multicast within a bound s (selmcast-ssp's baseline)",
       Aggregation::kSumOverN,
       4,
       {"staleness", "eta", "p", "k", "seed"},
       "orpheus",
       &MakePeerSsp},
  };
  return *modes;
}

const Mode* FindMode(absl::string_view name) {
  for (const Mode& mode : Modes()) {
    if (mode.name == name) return &mode;
  }
  return nullptr;
}

absl::StatusOr<const Mode*> LookupMode(absl::string_view name) {
  if (const Mode* mode = FindMode(name)) return mode;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown mode '", name, "' (supported: ", absl::StrJoin(SupportedModes(), ", "), ")"));
}

std::vector<std::string> SupportedModes() {
  std::vector<std::string> names;
  for (const Mode& mode : Modes()) names.emplace_back(mode.name);
  return names;
}

absl::string_view FamilyName(PushMode push_mode) {
  switch (push_mode) {
    case PushMode::kRound:
      return "round";
    case PushMode::kImmediate:
      return "immediate";
    case PushMode::kNone:
      return "peer-to-peer";
  }
  return "";
}

absl::string_view AggregationName(Aggregation aggregation) {
  switch (aggregation) {
    case Aggregation::kSumOverN:
      return "sum/n";
    case Aggregation::kMean:
      return "mean";
    case Aggregation::kSum:
      return "sum";
  }
  return "";
}

}  // namespace syncopate::sync
