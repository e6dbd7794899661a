#include "cli/advise_command.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "cli/model_file.h"
#include "sync/modes.h"

namespace syncopate::cli {
namespace {

struct Candidate {
  std::string mode;
  std::vector<std::string> flags;
  sync::PolicyOptions policy;
};

// Every mode with its defaults; a store mode that takes a staleness bound also with a tight and a
// loose one (1 and three times its default).
std::vector<Candidate> Candidates(const sync::PolicyOptions& base) {
  std::vector<Candidate> candidates;
  for (const sync::Mode& mode : sync::Modes()) {
    Candidate c{std::string(mode.name), {}, base};
    c.policy.mode = c.mode;
    if (!mode.takes_staleness() || mode.peer_to_peer()) {
      candidates.push_back(c);
      continue;
    }
    for (int64_t s : std::set<int64_t>{1, mode.default_staleness, 3 * mode.default_staleness}) {
      Candidate bounded = c;
      bounded.policy.staleness = s;
      bounded.flags = {absl::StrCat("--staleness=", s)};
      candidates.push_back(bounded);
    }
  }
  return candidates;
}

// The index of the fastest predicted row at `tolerance`; -1 when none is predicted.
int Winner(const std::vector<AdviceRow>& rows, double tolerance) {
  int best = -1;
  double best_rate = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::optional<double> rate = PredictedRate(rows[i].sim, tolerance);
    if (rate && (best < 0 || *rate > best_rate)) {
      best = static_cast<int>(i);
      best_rate = *rate;
    }
  }
  return best;
}

std::string Name(const AdviceRow& row) {
  return row.flags.empty() ? row.mode : absl::StrCat(row.mode, " ", absl::StrJoin(row.flags, " "));
}

}  // namespace

std::optional<double> PredictedRate(const sync::ClusterSimResult& sim, double tolerance) {
  if (sim.delta_staleness_mean < 0 || sim.trainers < 1) return std::nullopt;
  return sim.steps_per_second / sim.trainers / (1 + sim.delta_staleness_mean / tolerance);
}

absl::StatusOr<sync::ClusterSimOptions> ProfileFromProbe(const RunSummary& probe,
                                                         double model_bytes,
                                                         sync::ClusterSimOptions base) {
  std::vector<double> steps;  // each trainer's seconds per step
  const TrainerSummary* fastest = nullptr;
  double step = 0;  // the fastest's
  for (const TrainerSummary& t : probe.per_trainer) {
    if (t.clock <= 0 || t.compute_seconds <= 0) continue;
    steps.push_back(t.compute_seconds / static_cast<double>(t.clock));
    if (!fastest || steps.back() < step) {
      fastest = &t;
      step = steps.back();
    }
  }
  if (!fastest) {
    return absl::InvalidArgumentError(
        "no trainer of the probe took a step: give it longer (--time-limit) or see its logs");
  }
  base.trainers = static_cast<int>(steps.size());
  base.slowdowns.clear();
  for (double s : steps) base.slowdowns.push_back(s / step);
  base.step = absl::Seconds(step);
  base.jitter_sigma = 0;
  base.model_bytes = model_bytes;
  // Under asp a step's time beyond its compute is its push and its pull of the model.
  const double beyond =
      (fastest->wall_seconds - fastest->compute_seconds) / static_cast<double>(fastest->clock);
  if (beyond > 0 && model_bytes > 0) base.link_bytes_per_second = 2 * model_bytes / beyond;
  return base;
}

absl::StatusOr<sync::ClusterSimOptions> Probe(LocalRunOptions run,
                                              const sync::ClusterSimOptions& base) {
  run.cluster.policy.mode = "asp";  // nobody waits: each trainer's own speed shows
  run.target_accuracy.reset();
  if (run.report_dir.empty()) {
    char dir[] = "/tmp/syncopate-probe-XXXXXX";
    if (mkdtemp(dir) == nullptr) return absl::UnavailableError("cannot make a run directory");
    run.report_dir = dir;
  }
  ASSIGN_OR_RETURN(const RunSummary summary, RunLocal(run));
  std::printf("probe (asp):\n%s\n", FormatSummary(summary).c_str());
  if (summary.interrupted || summary.faulty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the probe run was interrupted or had faults; its figures are not the cluster's (see ",
        run.report_dir, ")"));
  }
  ASSIGN_OR_RETURN(const tensor::Model model, ReadCheckpointModel(run.report_dir + "/checkpoints"));
  double bytes = 0;
  for (const tensor::ModelTensor& t : model.tensors) bytes += 4.0 * t.values.size();
  return ProfileFromProbe(summary, bytes, base);
}

absl::StatusOr<Advice> Advise(const AdviseOptions& options) {
  if (!(options.staleness_tolerance > 0)) {
    return absl::InvalidArgumentError("--staleness-tolerance must be positive");
  }
  if (options.target_steps < 0) {
    return absl::InvalidArgumentError("--target-steps cannot be negative");
  }
  Advice advice;
  for (const Candidate& c : Candidates(options.cluster.policy)) {
    sync::ClusterSimOptions sim = options.cluster;
    sim.policy = c.policy;
    sim.policy.seed = sim.seed;
    absl::StatusOr<sync::ClusterSimResult> result = sync::SimulateCluster(sim);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat(c.mode, ": ", result.status().message()));
    }
    advice.rows.push_back(
        {c.mode, c.flags, *result, PredictedRate(*result, options.staleness_tolerance)});
  }
  std::stable_sort(advice.rows.begin(), advice.rows.end(),
                   [](const AdviceRow& a, const AdviceRow& b) {
                     if (a.rate.has_value() != b.rate.has_value()) return a.rate.has_value();
                     if (a.rate) return *a.rate > *b.rate;
                     return a.sim.steps_per_second > b.sim.steps_per_second;
                   });
  std::vector<int> winners;
  for (double scale : {0.25, 1.0, 4.0}) {
    winners.push_back(Winner(advice.rows, options.staleness_tolerance * scale));
    advice.winners.push_back(winners.back() < 0 ? "" : Name(advice.rows[winners.back()]));
  }
  const int agree = static_cast<int>(std::count(winners.begin(), winners.end(), winners[1]));
  advice.confidence = agree == 3 ? "high" : agree == 2 ? "medium" : "low";
  return advice;
}

std::string FormatAdvice(const AdviseOptions& options, const Advice& advice) {
  const sync::ClusterSimOptions& c = options.cluster;
  std::string out = absl::StrFormat(
      "%d trainers, step %s x slowdowns %s, %.0f-byte model over %.1f Gbit/s links; staleness "
      "tolerance %.2f steps\n",
      c.trainers, absl::FormatDuration(c.step),
      c.slowdowns.empty()
          ? absl::StrFormat("1 (%d of them %.1f)", c.stragglers, c.straggler_slowdown)
          : absl::StrJoin(c.slowdowns, ","),
      c.model_bytes, c.link_bytes_per_second * 8 / 1e9, options.staleness_tolerance);
  const bool seconds = options.target_steps > 0;
  absl::StrAppendFormat(&out, "%-4s %-26s %8s %8s %11s %10s%s\n", "rank", "mode", "steps/s",
                        "compute", "delta", "predicted", seconds ? "  predicted" : "");
  absl::StrAppendFormat(&out, "%-4s %-26s %8s %8s %11s %10s%s\n", "", "", "", "ratio", "staleness",
                        "time (x)", seconds ? "  time to target" : "");
  const double best =
      advice.rows.empty() || !advice.rows.front().rate ? 0 : *advice.rows.front().rate;
  int rank = 0;
  for (const AdviceRow& row : advice.rows) {
    std::string staleness = "-", time = "not predicted", to_target;
    if (row.rate) {
      staleness =
          absl::StrFormat("%.2f/%.1f", row.sim.delta_staleness_mean, row.sim.delta_staleness_p99);
      time = absl::StrFormat("%.2f", *row.rate > 0 ? best / *row.rate : 0.0);
      if (seconds && *row.rate > 0) {
        to_target =
            absl::StrFormat("  %.0f s", static_cast<double>(options.target_steps) / *row.rate);
      }
    }
    absl::StrAppendFormat(&out, "%-4s %-26s %8.1f %8.3f %11s %10s%s\n",
                          row.rate ? absl::StrCat(++rank) : "", Name(row), row.sim.steps_per_second,
                          row.sim.compute_time_ratio, staleness, time, to_target);
  }
  if (advice.winners[1].empty()) return out;
  absl::StrAppend(&out, "\nrecommended: --mode=", advice.winners[1], " (confidence ",
                  advice.confidence, ": ");
  if (advice.confidence == "high") {
    absl::StrAppendFormat(&out, "it wins at every tolerance from %.2f to %.2f steps)\n",
                          options.staleness_tolerance / 4, options.staleness_tolerance * 4);
  } else {
    absl::StrAppendFormat(&out, "at %.2f steps %s wins, at %.2f steps %s)\n",
                          options.staleness_tolerance / 4, advice.winners[0],
                          options.staleness_tolerance * 4, advice.winners[2]);
  }
  absl::StrAppend(&out,
                  "peer-to-peer modes are simulated, not predicted: their staleness is not "
                  "modelled yet; compare them with `syncopate compare`\n");
  return out;
}

}  // namespace syncopate::cli
