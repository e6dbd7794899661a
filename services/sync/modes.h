// The mode table: every sync mode this build implements, with what the rest of the system needs to
// know about it. The policy factory, the coordinator, the CLI, the simulators and the reports ask
// this table; nothing else compares mode names.
#ifndef SYNCOPATE_SYNC_MODES_H_
#define SYNCOPATE_SYNC_MODES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sync/policy.h"
#include "sync/policy_options.h"

namespace syncopate::sync {

struct Mode {
  absl::string_view name;
  // Where the trainers' work goes: kRound (the store takes each round's deltas and applies them
  // when the coordinator closes the round), kImmediate (the store applies each delta at once) or
  // kNone (peer-to-peer: trainers exchange models, the stores hold nothing).
  PushMode push_mode;
  absl::string_view summary;  // one line: what the mode does
  // The step-size rule of the mode's paper, which --aggregation=paper selects (store modes).
  Aggregation paper_aggregation;
  // The staleness bound when --staleness is not given; 0 for a mode that takes no bound.
  int64_t default_staleness;
  // The policy options (PolicyOptionSpec::flag) this mode reads, besides --aggregation in the store
  // modes.
  std::vector<absl::string_view> options;
  // Multicast modes: the planner that picks each trainer's receivers, "selmcast" (planned for the
  // links' rates) or "orpheus" (random); "" for the other modes.
  absl::string_view planner;
  // Builds this mode's policy from options whose ranges were checked and whose step-size rule was
  // resolved; INVALID_ARGUMENT for a combination the mode cannot use (s_hi < s_lo, ...).
  absl::StatusOr<std::unique_ptr<SyncPolicy>> (*make)(const Mode& mode,
                                                      const PolicyOptions& options,
                                                      Aggregation aggregation);

  bool peer_to_peer() const { return push_mode == PushMode::kNone; }
  bool closes_rounds() const { return push_mode == PushMode::kRound; }
  // Whether the mode bounds staleness by a number the user sets (ssp, dssp, the -ssp P2P modes).
  bool takes_staleness() const { return default_staleness > 0; }
  // Whether `flag` (a PolicyOptionSpec::flag) matters to this mode.
  bool reads(absl::string_view flag) const;
};

// Every mode, in documentation order.
const std::vector<Mode>& Modes();

// The mode called `name`; nullptr if there is none.
const Mode* FindMode(absl::string_view name);

// The mode called `name`; INVALID_ARGUMENT listing the supported modes if there is none.
absl::StatusOr<const Mode*> LookupMode(absl::string_view name);

// The modes' names, in documentation order.
std::vector<std::string> SupportedModes();

// "round", "immediate" or "peer-to-peer": how docs and `syncopate modes` name a push mode.
absl::string_view FamilyName(PushMode push_mode);

// "sum/n", "mean" or "sum": how --aggregation names a step-size rule.
absl::string_view AggregationName(Aggregation aggregation);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_MODES_H_
