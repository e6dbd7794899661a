#include "sync/policy_options.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sync/modes.h"

namespace syncopate::sync {

int64_t PolicyOptions::Staleness() const {
  if (staleness) return *staleness;
  const Mode* m = FindMode(mode);
  return m != nullptr && m->takes_staleness() ? m->default_staleness : 3;
}

namespace {

// A number option: its range is [min, max], or (min, max] when min_exclusive.
PolicyOptionSpec Number(absl::string_view flag, absl::string_view chart_key, absl::string_view help,
                        PolicyOptionSpec::Field field, double min, bool min_exclusive = false,
                        std::optional<double> max = std::nullopt) {
  PolicyOptionSpec spec;
  spec.flag = flag;
  spec.chart_key = chart_key;
  spec.help = help;
  spec.field = field;
  spec.min = min;
  spec.min_exclusive = min_exclusive;
  spec.max = max;
  return spec;
}

// A string option that takes one of `choices`.
PolicyOptionSpec Choice(absl::string_view flag, absl::string_view chart_key, absl::string_view help,
                        PolicyOptionSpec::Field field, std::vector<absl::string_view> choices) {
  PolicyOptionSpec spec;
  spec.flag = flag;
  spec.chart_key = chart_key;
  spec.help = help;
  spec.field = field;
  spec.choices = std::move(choices);
  return spec;
}

template <typename T>
std::string Format(const T& value) {
  return absl::StrCat(value);
}
std::string Format(const std::optional<int64_t>& value) {
  return value ? absl::StrCat(*value) : "";
}

// The value as a number, for a range check; nullopt for a string or an unset staleness.
template <typename T>
std::optional<double> Number(const T& value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(value);
  } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
    return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
  } else {
    return std::nullopt;
  }
}

}  // namespace

const std::vector<PolicyOptionSpec>& PolicyOptionSpecs() {
  using O = PolicyOptions;
  static const std::vector<PolicyOptionSpec>* const specs = new std::vector<PolicyOptionSpec>{
      Number("staleness", "staleness",
             "SSP's bound s (default 3), selmcast-ssp's and orpheus-ssp's (default 4); DSSP's "
             "lower bound s_lo (default 3)",
             &O::staleness, 0),
      Number("staleness-max", "stalenessMax", "DSSP's upper bound s_hi", &O::staleness_max, 0),
      Choice("dssp-rule", "dsspRule",
             "DSSP: capped (no trainer more than s_hi ahead of the slowest) or paper (as "
             "published: the fastest trainer's lead is not bounded)",
             &O::dssp_rule, {"capped", "paper"}),
      Choice("aggregation", "aggregation",
             "Step-size rule of the store modes (docs/modes.md): sum/n (each delta weighs 1/N of "
             "the N live trainers, in every mode), mean (round modes), sum (immediate modes) or "
             "paper (each mode's published rule)",
             &O::aggregation, {"sum/n", "mean", "sum", "paper"}),
      Number("groups", "groups", "hybrid: at most this many speed groups; dssync: groups per round",
             &O::groups, 1),
      Choice("group-sizes", "groupSizes",
             "dssync: equal (sizes differ by at most one) or bandwidth (groups holding a slow "
             "link are smaller, by the measured link rates)",
             &O::group_sizes, {"equal", "bandwidth"}),
      Number("global-average-every", "globalAverageEvery",
             "dssync: every this many rounds, one group of all trainers (0: never)",
             &O::global_average_every, 0),
      Number("split-ratio", "splitRatio",
             "hybrid: split groups where step times differ by this ratio", &O::split_ratio, 1,
             /*min_exclusive=*/true),
      Number("regroup-every", "regroupEvery", "hybrid: propose a regrouping every this many rounds",
             &O::regroup_every, 1),
      Number("p", "p",
             "selmcast(-ssp), orpheus(-ssp): each trainer sends to at least ceil(p * n) peers",
             &O::min_receivers_fraction, 0, /*min_exclusive=*/true, 1),
      Number("k", "k",
             "selmcast(-ssp), orpheus(-ssp): every pair exchanges at least once per k+1 rounds",
             &O::k, 0),
      Number("eta", "eta",
             "selmcast-ssp, orpheus-ssp: never preempt a transfer with less than eta of the model "
             "left",
             &O::eta, 0, /*min_exclusive=*/true, 1),
      Number("seed", "seed", "dssync's shuffle and orpheus(-ssp)'s random choices", &O::seed, 0),
  };
  return *specs;
}

const PolicyOptionSpec* FindPolicyOption(absl::string_view flag) {
  for (const PolicyOptionSpec& spec : PolicyOptionSpecs()) {
    if (spec.flag == flag) return &spec;
  }
  return nullptr;
}

std::string FlagValue(const PolicyOptionSpec& spec, const PolicyOptions& options) {
  return std::visit([&](auto member) { return Format(options.*member); }, spec.field);
}

std::vector<std::string> PolicyFlags(const PolicyOptions& options) {
  std::vector<std::string> flags = {absl::StrCat("--mode=", options.mode)};
  for (const PolicyOptionSpec& spec : PolicyOptionSpecs()) {
    const std::string value = FlagValue(spec, options);
    if (!value.empty()) flags.push_back(absl::StrCat("--", spec.flag, "=", value));
  }
  return flags;
}

absl::Status CheckPolicyOptionRanges(const PolicyOptions& options) {
  for (const PolicyOptionSpec& spec : PolicyOptionSpecs()) {
    if (!spec.choices.empty()) {
      const std::string value = FlagValue(spec, options);
      if (std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", spec.flag, ": unknown value '", value,
                         "' (supported: ", absl::StrJoin(spec.choices, ", "), ")"));
      }
    }
    const std::optional<double> number =
        std::visit([&](auto member) { return Number(options.*member); }, spec.field);
    if (!number) continue;
    const bool below =
        spec.min && (spec.min_exclusive ? !(*number > *spec.min) : *number < *spec.min);
    const bool above = spec.max && !(*number <= *spec.max);
    if (below || above) {
      std::string range;
      if (spec.min) absl::StrAppend(&range, spec.min_exclusive ? "> " : ">= ", *spec.min);
      if (spec.max) absl::StrAppend(&range, spec.min ? " and " : "", "<= ", *spec.max);
      return absl::InvalidArgumentError(
          absl::StrCat("--", spec.flag, " must be ", range, ", got ", FlagValue(spec, options)));
    }
  }
  return absl::OkStatus();
}

}  // namespace syncopate::sync
