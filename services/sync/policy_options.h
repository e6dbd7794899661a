// A job's policy options, and the one declaration of each: its flag, help text, default, range
// and value key in the chart. The coordinator's and the CLI's flags (sync/policy_flags.h), the
// flags `syncopate local` forwards to its coordinator (PolicyFlags) and `syncopate modes --json`
// are generated from this table; a test checks the chart's values and schema against it.
#ifndef SYNCOPATE_SYNC_POLICY_OPTIONS_H_
#define SYNCOPATE_SYNC_POLICY_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace syncopate::sync {

struct PolicyOptions {
  std::string mode = "bsp";
  // SSP's and the -ssp peer-to-peer modes' bound s; DSSP's lower bound s_lo. Unset: the mode's
  // default (Mode::default_staleness).
  std::optional<int64_t> staleness;
  // DSSP's upper bound s_hi (the hard cap under the default rule).
  int64_t staleness_max = 15;
  // DSSP's rule (docs/modes.md): "capped" (default: no trainer more than s_hi clocks ahead of the
  // slowest) or "paper" (Algorithm 1 as published: the fastest trainer's lead is not bounded).
  std::string dssp_rule = "capped";
  // The step-size rule of the store modes (docs/modes.md): "sum/n", the default of every mode
  // (each delta weighs 1/N, N live trainers); "mean" (round modes: the mean of a round's pushes);
  // "sum" (immediate modes: weight 1); or "paper", the mode's published rule
  // (Mode::paper_aggregation). Peer-to-peer modes average models and take only the default or
  // "paper".
  std::string aggregation = "sum/n";
  // Hybrid: at most this many groups; split where neighbours' step times differ by this ratio;
  // propose a regrouping every this many rounds.
  int groups = 2;
  double split_ratio = 1.5;
  int regroup_every = 8;
  // Peer-to-peer modes: selmcast/orpheus send to at least ceil(min_receivers_fraction * n)
  // receivers, every pair at least once per k+1 rounds. dssync uses `groups`, sized by
  // `group_sizes`: "equal" (sizes differ by at most one) or "bandwidth" (groups holding a slow
  // link are smaller, GroupSizing::kBandwidth). Every `global_average_every` rounds (0: never)
  // dssync's round is one group of all. `seed` drives dssync's shuffle and orpheus's choices.
  std::string group_sizes = "equal";
  int64_t global_average_every = 0;
  double min_receivers_fraction = 0.3;
  int k = 4;
  uint64_t seed = 1;
  // selmcast-ssp and orpheus-ssp: an in-flight receiver with less than eta of the model left is
  // never preempted.
  double eta = 0.75;
  // The job's, not a flag of this table: the coordinator's --min-trainers and --start-timeout.
  int min_trainers = 1;
  absl::Duration start_timeout = absl::Seconds(30);

  // `staleness`, or the mode's default (3 for an unknown mode).
  int64_t Staleness() const;
};

// One policy option, declared once.
struct PolicyOptionSpec {
  using Field = std::variant<std::optional<int64_t> PolicyOptions::*, int64_t PolicyOptions::*,
                             int PolicyOptions::*, double PolicyOptions::*,
                             uint64_t PolicyOptions::*, std::string PolicyOptions::*>;

  absl::string_view flag;       // "staleness-max": the flag is --staleness-max
  absl::string_view chart_key;  // "stalenessMax": the chart's value .Values.sync.stalenessMax
  absl::string_view help;       // the flag's help, in every binary
  Field field;
  std::vector<absl::string_view> choices;  // the names a string option takes (empty: any)
  std::optional<double> min;               // a number's range (unset: unbounded)
  bool min_exclusive = false;
  std::optional<double> max;
};

// Every policy option, in the order of the flags' help.
const std::vector<PolicyOptionSpec>& PolicyOptionSpecs();

// The option named by `flag` ("groups"); nullptr if there is none.
const PolicyOptionSpec* FindPolicyOption(absl::string_view flag);

// `options`' value of `spec`, as its flag takes it ("3", "sum/n", "0.75"); "" for an unset
// staleness.
std::string FlagValue(const PolicyOptionSpec& spec, const PolicyOptions& options);

// The flags that give another process `options` (--mode first, then every option that has a
// value: `--staleness=3`, ...), as `syncopate local` starts its coordinator.
std::vector<std::string> PolicyFlags(const PolicyOptions& options);

// INVALID_ARGUMENT naming the first option outside its declared range or choices ("--groups must
// be >= 1, got 0"). Every mode checks every option, so a bad value is refused even where the mode
// does not use it.
absl::Status CheckPolicyOptionRanges(const PolicyOptions& options);

}  // namespace syncopate::sync

#endif  // SYNCOPATE_SYNC_POLICY_OPTIONS_H_
