#include "cli/multicast_sim_command.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "nlohmann/json.hpp"
#include "sync/flow_simulator.h"
#include "sync/modes.h"
#include "sync/multicast_selection.h"

namespace syncopate::cli {
namespace {

// The modes whose rounds this simulator plays: multicast rounds without a staleness bound.
bool IsMulticastRoundMode(absl::string_view name) {
  const sync::Mode* mode = sync::FindMode(name);
  return mode != nullptr && !mode->planner.empty() && !mode->takes_staleness();
}

std::string MulticastRoundModes() {
  std::vector<std::string> names;
  for (const sync::Mode& mode : sync::Modes()) {
    if (IsMulticastRoundMode(mode.name)) names.emplace_back(mode.name);
  }
  return absl::StrJoin(names, ", ");
}

absl::Status Validate(const MulticastSimOptions& o) {
  if (o.modes.empty()) return absl::InvalidArgumentError("--mode names no mode");
  for (const std::string& mode : o.modes) {
    if (!IsMulticastRoundMode(mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mode: '", mode, "' is not a multicast round mode (", MulticastRoundModes(),
          "); `syncopate sim` simulates a whole job under every mode"));
    }
  }
  if (o.trainers < 2) return absl::InvalidArgumentError("--trainers must be at least 2");
  if (!(o.bandwidth_spread >= 0 && o.bandwidth_spread < 1)) {
    return absl::InvalidArgumentError("--bandwidth-spread must be in [0, 1)");
  }
  if (!(o.upload_scale > 0) || !(o.bandwidth_gbps > 0) || !(o.volume_mb > 0)) {
    return absl::InvalidArgumentError(
        "--upload-scale, --bandwidth-gbps and --volume-mb must be positive");
  }
  if (!(o.min_receivers_fraction > 0 && o.min_receivers_fraction <= 1)) {
    return absl::InvalidArgumentError("--p must be in (0, 1]");
  }
  if (o.k < 0 || o.rounds < 1 || o.trials < 1) {
    return absl::InvalidArgumentError("--k must be >= 0, --rounds and --trials >= 1");
  }
  if (o.layer != "l3" && o.layer != "l7") {
    return absl::InvalidArgumentError("--layer must be l3 or l7");
  }
  return absl::OkStatus();
}

nlohmann::json ToJson(const MulticastSimOptions& o, const std::vector<MulticastSimRow>& rows) {
  nlohmann::json out;
  out["trainers"] = o.trainers;
  out["bandwidth_spread"] = o.bandwidth_spread;
  out["upload_scale"] = o.upload_scale;
  out["bandwidth_gbps"] = o.bandwidth_gbps;
  out["volume_mb"] = o.volume_mb;
  out["p"] = sync::DefaultMinReceivers(o.trainers, o.min_receivers_fraction);
  out["k"] = o.k;
  out["layer"] = o.layer;
  out["rounds"] = o.rounds;
  out["trials"] = o.trials;
  out["seed"] = o.seed;
  for (const MulticastSimRow& r : rows) {
    out["modes"][r.mode] = {{"normalized_completion", r.normalized_completion},
                            {"completion_seconds", r.completion_seconds},
                            {"required_seconds", r.required_seconds},
                            {"estimated_seconds", r.estimated_seconds},
                            {"multicast_scale", r.multicast_scale},
                            {"selection_ms_mean", r.selection_ms_mean},
                            {"selection_ms_max", r.selection_ms_max}};
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<MulticastSimRow>> RunMulticastSim(const MulticastSimOptions& o) {
  if (absl::Status valid = Validate(o); !valid.ok()) return valid;
  const int n = o.trainers;
  const int p = sync::DefaultMinReceivers(n, o.min_receivers_fraction);
  const sync::MulticastLayer layer =
      o.layer == "l3" ? sync::MulticastLayer::kL3 : sync::MulticastLayer::kL7;
  const double mean_rate = o.bandwidth_gbps * 1e9 / 8;
  std::vector<MulticastSimRow> rows;
  for (const std::string& mode : o.modes) rows.push_back(MulticastSimRow{mode});
  const double samples = static_cast<double>(o.rounds) * o.trials;
  for (int trial = 0; trial < o.trials; ++trial) {
    // Every mode sees the same cluster in a trial.
    std::mt19937_64 cluster_rng(o.seed * 1000003 + trial);
    const sync::MulticastProblem problem = sync::RandomBandwidthProblem(
        n, mean_rate, o.bandwidth_spread, o.upload_scale, o.volume_mb * 1e6, p, layer, cluster_rng);
    const double bound = sync::CompletionLowerBound(problem);
    for (MulticastSimRow& row : rows) {
      sync::PairHistory history(n, o.k);
      std::mt19937_64 orpheus_rng(o.seed * 7919 + trial);
      for (int64_t round = 0; round < o.rounds; ++round) {
        const absl::Time start = absl::Now();
        sync::MulticastPlan plan = sync::FindMode(row.mode)->planner == "selmcast"
                                       ? sync::SelectSelMcast(problem, history, round)
                                       : sync::SelectOrpheus(problem, history, round, orpheus_rng);
        const double selection_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
        history.Record(plan.sends, round);
        absl::StatusOr<sync::RoundTimes> times = sync::SimulateMulticastRound(problem, plan);
        if (!times.ok()) return times.status();
        int pairs = 0;
        for (int i = 0; i < n; ++i) pairs += plan.sends.RowCount(i);
        row.normalized_completion += times->all_seconds / bound / samples;
        row.completion_seconds += times->all_seconds / samples;
        row.required_seconds += times->required_seconds / samples;
        row.estimated_seconds += plan.estimated_seconds / samples;
        row.multicast_scale += pairs / (static_cast<double>(n) * (n - 1)) / samples;
        row.selection_ms_mean += selection_ms / samples;
        row.selection_ms_max = std::max(row.selection_ms_max, selection_ms);
      }
    }
  }
  if (!o.json_out.empty()) {
    if (const size_t slash = o.json_out.rfind('/'); slash != std::string::npos && slash > 0) {
      if (absl::Status made = base::MakeDirectories(o.json_out.substr(0, slash)); !made.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--json ", o.json_out, ": ", made.message()));
      }
    }
    absl::Status written = base::WriteFileAtomically(o.json_out, ToJson(o, rows).dump(2) + "\n");
    if (!written.ok()) return written;
  }
  return rows;
}

std::string FormatMulticastSim(const MulticastSimOptions& o,
                               const std::vector<MulticastSimRow>& rows) {
  std::string out = absl::StrFormat(
      "%d trainers, p=%d, k=%d, %s, spread %.2f, %.0f Gbit/s mean, %.0f MB per multicast; "
      "%d rounds x %d trials\n",
      o.trainers, sync::DefaultMinReceivers(o.trainers, o.min_receivers_fraction), o.k, o.layer,
      o.bandwidth_spread, o.bandwidth_gbps, o.volume_mb, o.rounds, o.trials);
  absl::StrAppendFormat(&out, "%-10s %11s %9s %11s %11s %7s %14s %14s\n", "mode", "normalized",
                        "round_s", "required_s", "estimate_s", "scale", "select_ms_avg",
                        "select_ms_max");
  for (const MulticastSimRow& r : rows) {
    absl::StrAppendFormat(&out, "%-10s %11.3f %9.4f %11.4f %11.4f %7.3f %14.2f %14.2f\n", r.mode,
                          r.normalized_completion, r.completion_seconds, r.required_seconds,
                          r.estimated_seconds, r.multicast_scale, r.selection_ms_mean,
                          r.selection_ms_max);
  }
  out +=
      "normalized: round_s / a lower bound on the optimal round time; round_s: every transfer "
      "done;\nrequired_s: every transfer but SelMcast's Pareto additions done; estimate_s: the "
      "selection's bottleneck estimate\n";
  return out;
}

}  // namespace syncopate::cli
