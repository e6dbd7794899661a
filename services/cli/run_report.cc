#include "cli/run_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "sync/modes.h"

namespace syncopate::cli {

void FillFromStatus(const v1::ClusterStatus& status, RunSummary* summary) {
  summary->final_average_round = status.final_round();
  summary->final_average_accuracy.reset();
  if (status.has_final_test_accuracy()) {
    summary->final_average_accuracy = status.final_test_accuracy();
  }
  summary->per_trainer.clear();
  double ratio_sum = 0, wait_sum = 0, real_sum = 0, emulated_sum = 0;
  double slowest_compute_per_step = -1;
  summary->overhead_per_step_seconds = 0;
  double multicasts = 0, receivers = 0, delivered = 0;
  for (const v1::TrainerStatus& t : status.trainers()) {
    multicasts += static_cast<double>(t.multicasts());
    receivers += static_cast<double>(t.multicast_receivers());
    delivered += static_cast<double>(t.models_delivered());
    TrainerSummary s;
    s.rank = static_cast<int>(t.rank());
    s.slowdown = t.slowdown();
    s.clock = t.clock();
    s.compute_time_ratio = t.compute_time_ratio();
    s.compute_seconds = t.timings().compute_seconds();
    s.emulated_compute_seconds = t.timings().emulated_compute_seconds();
    s.wait_seconds = t.timings().wait_seconds();
    s.wall_seconds = t.timings().wall_seconds();
    s.state = t.state();
    s.group = t.group();
    s.evictions = static_cast<int>(t.evictions());
    s.eviction_reason = t.eviction_reason();
    ratio_sum += s.compute_time_ratio;
    wait_sum += s.wait_seconds;
    real_sum += s.compute_seconds - s.emulated_compute_seconds;
    emulated_sum += s.emulated_compute_seconds;
    if (s.clock > 0) {
      const double steps = static_cast<double>(s.clock);
      if (const double per_step = s.compute_seconds / steps; per_step > slowest_compute_per_step) {
        slowest_compute_per_step = per_step;
        summary->overhead_per_step_seconds =
            std::max(0.0, (s.wall_seconds - s.compute_seconds) / steps);
      }
    }
    summary->per_trainer.push_back(s);
  }
  std::sort(summary->per_trainer.begin(), summary->per_trainer.end(),
            [](const TrainerSummary& a, const TrainerSummary& b) { return a.rank < b.rank; });
  const double n = static_cast<double>(summary->per_trainer.size());
  summary->compute_time_ratio = n > 0 ? ratio_sum / n : 0;
  summary->mean_wait_seconds = n > 0 ? wait_sum / n : 0;
  summary->mean_real_compute_seconds = n > 0 ? real_sum / n : 0;
  summary->mean_emulated_compute_seconds = n > 0 ? emulated_sum / n : 0;
  const double pairs_per_multicast = multicasts * (n - 1);
  summary->planned_multicast_scale = pairs_per_multicast > 0 ? receivers / pairs_per_multicast : 0;
  summary->multicast_scale = pairs_per_multicast > 0 ? delivered / pairs_per_multicast : 0;
  summary->rounds_closed = status.rounds_closed();
  summary->store_restarts = status.store_restarts();
  summary->store_rounds_lost = status.store_rounds_lost();
  summary->failure = status.failure();
}

nlohmann::json ToJson(const RunSummary& s) {
  nlohmann::json faults = nlohmann::json::array();
  for (const auto& [at, what] : s.faults) faults.push_back({{"at_seconds", at}, {"what", what}});
  nlohmann::json per_trainer = nlohmann::json::array();
  for (const TrainerSummary& t : s.per_trainer) {
    per_trainer.push_back({{"rank", t.rank},
                           {"slowdown", t.slowdown},
                           {"clock", t.clock},
                           {"compute_time_ratio", t.compute_time_ratio},
                           {"compute_seconds", t.compute_seconds},
                           {"emulated_compute_seconds", t.emulated_compute_seconds},
                           {"wait_seconds", t.wait_seconds},
                           {"wall_seconds", t.wall_seconds},
                           {"state", t.state},
                           {"group", t.group},
                           {"evictions", t.evictions},
                           {"eviction_reason", t.eviction_reason}});
  }
  nlohmann::json j = {
      {"mode", s.mode},
      {"mode_parameters", s.mode_parameters},
      {"staleness", s.staleness},
      {"trainers", s.trainers},
      {"store_shards", s.store_shards},
      {"target_accuracy", nullptr},
      {"reached_target", s.reached_target},
      {"finished", s.finished},
      {"ended", s.ended},
      {"time_to_target_seconds", nullptr},
      {"final_accuracy", nullptr},
      {"final_average", {{"round", s.final_average_round}, {"accuracy", nullptr}}},
      {"wall_seconds", s.wall_seconds},
      {"compute_time_ratio", s.compute_time_ratio},
      {"mean_wait_seconds", s.mean_wait_seconds},
      {"mean_real_compute_seconds", s.mean_real_compute_seconds},
      {"mean_emulated_compute_seconds", s.mean_emulated_compute_seconds},
      {"overhead_per_step_seconds", s.overhead_per_step_seconds},
      {"rounds_closed", s.rounds_closed},
      {"planned_multicast_scale", s.planned_multicast_scale},
      {"multicast_scale", s.multicast_scale},
      {"interrupted", s.interrupted},
      {"faults", faults},
      {"store_restarts", s.store_restarts},
      {"store_rounds_lost", s.store_rounds_lost},
      {"push_audit",
       {{"audited", s.pushes_audited},
        {"pushes", s.pushes_compared},
        {"lost", s.pushes_lost},
        {"doubled", s.pushes_doubled},
        {"given_up", s.pushes_given_up},
        {"error", s.push_audit_error}}},
      {"failure", s.failure},
      {"model", {{"files", s.model_files}, {"round", s.model_round}, {"error", s.model_error}}},
      {"per_trainer", per_trainer}};
  if (s.target_accuracy) j["target_accuracy"] = *s.target_accuracy;
  if (s.time_to_target_seconds) j["time_to_target_seconds"] = *s.time_to_target_seconds;
  if (s.final_accuracy) j["final_accuracy"] = *s.final_accuracy;
  if (s.final_average_accuracy) j["final_average"]["accuracy"] = *s.final_average_accuracy;
  return j;
}

absl::Status WriteReport(const std::string& dir, const RunSummary& summary) {
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/summary.json", ToJson(summary).dump(2) + "\n"));
  std::string csv = "elapsed_seconds,accuracy\n";
  for (const auto& [t, a] : summary.accuracy) absl::StrAppendFormat(&csv, "%.3f,%.4f\n", t, a);
  return base::WriteFileAtomically(dir + "/accuracy.csv", csv);
}

namespace {

// One row per trainer, under a header; shared by the run's summary and a live cluster's status.
std::string TrainerTable(const std::vector<TrainerSummary>& trainers) {
  std::string out = absl::StrFormat("  %-5s %-9s %-8s %-9s %-14s %-8s %s\n", "rank", "slowdown",
                                    "clock", "wait(s)", "compute ratio", "state", "group");
  for (const TrainerSummary& t : trainers) {
    absl::StrAppendFormat(&out, "  %-5d %-9.1f %-8d %-9.1f %-14.2f %-8s %s\n", t.rank, t.slowdown,
                          t.clock, t.wait_seconds, t.compute_time_ratio, t.state,
                          t.group >= 0 ? absl::StrCat(t.group) : "-");
  }
  return out;
}

// What went wrong, when something did: the run is not a normal finish.
std::string FaultLines(const RunSummary& s) {
  if (!s.faulty()) return "";
  std::string out = absl::StrFormat(
      "FAULTS: %d store restart(s) reconciled, %d round(s) lost on restarted shards%s\n",
      s.store_restarts, s.store_rounds_lost,
      s.failure.empty() ? "" : absl::StrCat("; the job failed: ", s.failure));
  for (const auto& [at, what] : s.faults) absl::StrAppendFormat(&out, "  at %.1fs: %s\n", at, what);
  return out;
}

// Whether and when the run reached its target; without one, how it ended.
std::string TargetText(const RunSummary& s) {
  if (!s.target_accuracy) return s.ended.empty() ? "ran" : s.ended;
  if (s.reached_target) {
    return absl::StrFormat("reached %.2f after %.1fs", *s.target_accuracy,
                           s.time_to_target_seconds.value_or(0));
  }
  return absl::StrFormat("did not reach %.2f%s", *s.target_accuracy,
                         s.finished ? absl::StrCat(" (", s.ended, ")") : "");
}

}  // namespace

std::string FormatSummary(const RunSummary& s) {
  return absl::StrFormat(
             "mode %s%s, %d trainers, %d store shard(s): %s in %.1fs, final accuracy %s, "
             "compute-time ratio %.2f (real %.1fs, emulated %.1fs per trainer), overhead per "
             "step %.1f ms\n",
             s.mode, s.mode_parameters.empty() ? "" : absl::StrCat(" (", s.mode_parameters, ")"),
             s.trainers, s.store_shards, TargetText(s), s.wall_seconds,
             s.final_accuracy ? absl::StrFormat("%.4f", *s.final_accuracy) : "n/a",
             s.compute_time_ratio, s.mean_real_compute_seconds, s.mean_emulated_compute_seconds,
             s.overhead_per_step_seconds * 1000) +
         (s.planned_multicast_scale > 0
              ? absl::StrFormat("multicast scale %.2f (receivers named %.2f)\n", s.multicast_scale,
                                s.planned_multicast_scale)
              : "") +
         (s.final_average_round > 0
              ? absl::StrFormat("final average of every trainer's model in round %d: accuracy %s\n",
                                s.final_average_round,
                                s.final_average_accuracy
                                    ? absl::StrFormat("%.4f", *s.final_average_accuracy)
                                    : "n/a")
              : "") +
         (s.model_files.empty()
              ? ""
              : absl::StrCat("model: ", absl::StrJoin(s.model_files, ", "),
                             s.model_round > 0 ? absl::StrCat(" (round ", s.model_round, ")")
                                               : std::string(" (live model)"),
                             "\n")) +
         FaultLines(s) + TrainerTable(s.per_trainer);
}

std::string FormatStatus(const v1::ClusterStatus& status) {
  RunSummary s;
  FillFromStatus(status, &s);
  std::string out = absl::StrFormat("mode %s", status.mode());
  // The modes that bound staleness (BSP reports 0, the others -1 or nothing meaningful).
  if (const sync::Mode* mode = sync::FindMode(status.mode());
      mode != nullptr && mode->takes_staleness()) {
    absl::StrAppendFormat(&out, " (staleness bound %d)", status.staleness_bound());
  }
  absl::StrAppendFormat(&out, ", %d of %d trainers live, up %.1fs, min clock %d, %d rounds closed",
                        status.live_trainers(), status.trainers_size(), status.uptime_seconds(),
                        status.min_live_clock(), status.rounds_closed());
  if (status.groups() > 0) absl::StrAppendFormat(&out, ", %d groups", status.groups());
  if (status.has_test_accuracy()) {
    absl::StrAppendFormat(&out, ", test accuracy %.4f at %.1fs", status.test_accuracy(),
                          status.test_accuracy_at_seconds());
  }
  absl::StrAppendFormat(&out, ", compute-time ratio %.2f", s.compute_time_ratio);
  if (status.final_round() > 0) {
    absl::StrAppendFormat(&out, ", final average in round %d", status.final_round());
    if (status.has_final_test_accuracy()) {
      absl::StrAppendFormat(&out, " (accuracy %.4f)", status.final_test_accuracy());
    }
  }
  if (status.done()) absl::StrAppend(&out, ", done: ", status.done_reason());
  return out + "\n" + TrainerTable(s.per_trainer);
}

}  // namespace syncopate::cli
