#include "cli/advise_command.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <utility>

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

// The cluster `profile` under `policy`, seeded with the profile's seed.
absl::StatusOr<sync::ClusterSimResult> Simulate(sync::ClusterSimOptions profile,
                                                const sync::PolicyOptions& policy) {
  profile.policy = policy;
  profile.policy.seed = profile.seed;
  return sync::SimulateCluster(profile);
}

// Predicted rates within this share of the fastest are a tie: the model's error is larger
// (docs/advise.md), and the candidate with the fresher deltas is the safer choice.
constexpr double kTie = 0.05;

// The index of the winning row at `tolerance`: of the rows predicted within kTie of the fastest,
// the one whose deltas are the least stale; -1 when none is predicted.
int Winner(const std::vector<AdviceRow>& rows, double tolerance) {
  double fastest = 0;
  for (const AdviceRow& row : rows) {
    fastest = std::max(fastest, PredictedRate(row.sim, tolerance).value_or(0));
  }
  int winner = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::optional<double> rate = PredictedRate(rows[i].sim, tolerance);
    if (!rate || *rate < (1 - kTie) * fastest) continue;
    if (winner < 0 || rows[i].sim.delta_staleness_mean < rows[winner].sim.delta_staleness_mean) {
      winner = static_cast<int>(i);
    }
  }
  return winner;
}

// The bytes of the model a run left in its checkpoints (RUN_DIR/checkpoints): float32 values.
absl::StatusOr<double> ModelBytesOfRun(const std::string& run_dir) {
  ASSIGN_OR_RETURN(const tensor::Model model, ReadCheckpointModel(run_dir + "/checkpoints"));
  double bytes = 0;
  for (const tensor::ModelTensor& t : model.tensors) bytes += 4.0 * t.values.size();
  return bytes;
}

// A trainer's seconds per step, if it took steps and is still in the job.
std::optional<double> SecondsPerStep(const TrainerSummary& t) {
  if (t.clock <= 0 || t.compute_seconds <= 0 || t.state == "left" || t.state == "evicted") {
    return std::nullopt;
  }
  return t.compute_seconds / static_cast<double>(t.clock);
}

// The trainer with the fewest seconds per step; null when none took a step.
const TrainerSummary* Fastest(const RunSummary& run) {
  const TrainerSummary* fastest = nullptr;
  for (const TrainerSummary& t : run.per_trainer) {
    std::optional<double> seconds = SecondsPerStep(t);
    if (seconds && (!fastest || *seconds < *SecondsPerStep(*fastest))) fastest = &t;
  }
  return fastest;
}

std::string Name(const AdviceRow& row) {
  return row.flags.empty() ? row.mode : absl::StrCat(row.mode, " ", absl::StrJoin(row.flags, " "));
}

}  // namespace

std::optional<double> PredictedRate(const sync::ClusterSimResult& sim, double tolerance) {
  if (sim.delta_staleness_mean < 0 || sim.trainers < 1) return std::nullopt;
  return sim.steps_per_second / sim.trainers / (1 + sim.delta_staleness_mean / tolerance);
}

absl::StatusOr<sync::ClusterSimOptions> ProfileFromRun(const RunSummary& run, double model_bytes,
                                                       sync::ClusterSimOptions base) {
  const TrainerSummary* fastest = Fastest(run);
  if (!fastest) {
    return absl::InvalidArgumentError(
        "no trainer has taken a step yet (a probe: give it longer with --time-limit, or see "
        "its logs)");
  }
  if (!base.links.empty() && base.links.size() != run.per_trainer.size()) {
    return absl::InvalidArgumentError(absl::StrCat("there are ", base.links.size(),
                                                   " links for the run's ", run.per_trainer.size(),
                                                   " trainers (give its --trainers with them)"));
  }
  const double step = *SecondsPerStep(*fastest);
  std::vector<sync::LinkRates> links;
  base.trainers = 0;
  base.slowdowns.clear();
  for (size_t i = 0; i < run.per_trainer.size(); ++i) {
    if (std::optional<double> seconds = SecondsPerStep(run.per_trainer[i])) {
      ++base.trainers;
      base.slowdowns.push_back(*seconds / step);
      if (!base.links.empty()) links.push_back(base.links[i]);
    }
  }
  base.links = std::move(links);
  base.step = absl::Seconds(step);  // the jitter stays `base`'s: steps are never all alike
  base.model_bytes = model_bytes;
  return base;
}

absl::StatusOr<ProbeRuns> Probe(LocalRunOptions run) {
  run.target_accuracy.reset();
  if (run.report_dir.empty()) {
    char dir[] = "/tmp/syncopate-probe-XXXXXX";
    if (mkdtemp(dir) == nullptr) return absl::UnavailableError("cannot make a run directory");
    run.report_dir = dir;
  }
  const std::string dir = run.report_dir;
  ProbeRuns probe;
  for (auto [mode, summary] : {std::pair{"asp", &probe.asp}, std::pair{"wbsp", &probe.wbsp}}) {
    run.cluster.policy.mode = mode;
    run.report_dir = absl::StrCat(dir, "/", mode);
    ASSIGN_OR_RETURN(*summary, RunLocal(run));
    std::printf("probe (%s):\n%s\n", mode, FormatSummary(*summary).c_str());
    if (summary->interrupted || summary->faulty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the probe's ", mode,
                       " run was interrupted or had faults; its figures are "
                       "not the cluster's (see ",
                       run.report_dir, ")"));
    }
  }
  ASSIGN_OR_RETURN(probe.model_bytes, ModelBytesOfRun(dir + "/asp"));
  return probe;
}

namespace {

// Steps of the job per second of `run`: every trainer's steps over N, over its time.
double JobStepsPerSecond(const RunSummary& run) {
  int64_t steps = 0;
  for (const TrainerSummary& t : run.per_trainer) steps += t.clock;
  const double n = static_cast<double>(run.per_trainer.size());
  return n > 0 && run.wall_seconds > 0 ? static_cast<double>(steps) / n / run.wall_seconds : 0;
}

double BestAccuracy(const RunSummary& run) {
  double best = 0;
  for (const auto& [at, accuracy] : run.accuracy) best = std::max(best, accuracy);
  return best;
}

// When `run` first reached `accuracy` (its elapsed seconds); nullopt if it did not.
std::optional<double> Reached(const RunSummary& run, double accuracy) {
  for (const auto& [at, value] : run.accuracy) {
    if (value >= accuracy) return at;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<ToleranceFit> FitTolerance(const RunSummary& fresh, double fresh_staleness,
                                          const RunSummary& stale, double stale_staleness) {
  if (fresh.accuracy.size() < 2 || stale.accuracy.size() < 2) {
    return absl::FailedPreconditionError("a probe run has fewer than two evaluations");
  }
  if (!(stale_staleness >= ToleranceFit::kStalerBy * fresh_staleness) || fresh_staleness < 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "on this cluster wbsp's deltas are not much staler than asp's (%.2f against %.2f steps)",
        stale_staleness, fresh_staleness));
  }
  ToleranceFit fit;
  // Just under the lower of the two best: both reached it, late enough to say something.
  fit.accuracy = std::min(BestAccuracy(fresh), BestAccuracy(stale)) - 0.01;
  const std::optional<double> fresh_at = Reached(fresh, fit.accuracy);
  const std::optional<double> stale_at = Reached(stale, fit.accuracy);
  fit.fresh_steps = JobStepsPerSecond(fresh) * fresh_at.value_or(0);
  fit.stale_steps = JobStepsPerSecond(stale) * stale_at.value_or(0);
  if (fit.fresh_steps <= 0 || fit.stale_steps <= 0) {
    return absl::FailedPreconditionError("a probe run took no steps before its first evaluation");
  }
  const double ratio = fit.stale_steps / fit.fresh_steps;
  if (ratio <= 1) {
    fit.tolerance = ToleranceFit::kMaxTolerance;
  } else if (stale_staleness <= ratio * fresh_staleness) {
    fit.tolerance = ToleranceFit::kMinTolerance;
  } else {
    fit.tolerance = std::clamp((stale_staleness - ratio * fresh_staleness) / (ratio - 1),
                               ToleranceFit::kMinTolerance, ToleranceFit::kMaxTolerance);
  }
  return fit;
}

absl::StatusOr<ToleranceFit> FitToProbe(const ProbeRuns& probe,
                                        const sync::ClusterSimOptions& profile) {
  double staleness[2];
  for (int i = 0; i < 2; ++i) {
    sync::PolicyOptions policy = profile.policy;
    policy.mode = i == 0 ? probe.asp.mode : probe.wbsp.mode;
    ASSIGN_OR_RETURN(const sync::ClusterSimResult result, Simulate(profile, policy));
    staleness[i] = result.delta_staleness_mean;
  }
  return FitTolerance(probe.asp, staleness[0], probe.wbsp, staleness[1]);
}

const char* ConfidenceName(Confidence confidence) {
  switch (confidence) {
    case Confidence::kHigh:
      return "high";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kLow:
      break;
  }
  return "low";
}

Confidence ConfidenceOf(const std::vector<std::string>& winners) {
  if (winners.size() != 3 || winners[1].empty()) return Confidence::kLow;
  const int ends = (winners[0] == winners[1]) + (winners[2] == winners[1]);
  return ends == 2 ? Confidence::kHigh : ends == 1 ? Confidence::kMedium : Confidence::kLow;
}

absl::StatusOr<Advice> Advise(const AdviseOptions& options) {
  if (!(options.staleness_tolerance > 0)) {
    return absl::InvalidArgumentError("--staleness-tolerance must be positive");
  }
  if (options.target_steps < 0) {
    return absl::InvalidArgumentError("--target-steps cannot be negative");
  }
  RETURN_IF_ERROR(sync::CheckClusterSimOptions(options.cluster));
  Advice advice;
  for (const Candidate& c : Candidates(options.cluster.policy)) {
    absl::StatusOr<sync::ClusterSimResult> result = Simulate(options.cluster, c.policy);
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
  for (double scale : {0.25, 1.0, 4.0}) {
    const int winner = Winner(advice.rows, options.staleness_tolerance * scale);
    advice.winners.push_back(winner < 0 ? "" : Name(advice.rows[winner]));
  }
  advice.confidence = ConfidenceOf(advice.winners);
  return advice;
}

namespace {

// The profile the advice is for, in one line.
std::string ProfileLine(const AdviseOptions& options) {
  const sync::ClusterSimOptions& c = options.cluster;
  const auto gbps = [](double bytes_per_second) {
    return absl::StrFormat("%.3g", bytes_per_second * 8 / 1e9);
  };
  // One rate for every link, or each trainer's up and down.
  const std::string links =
      c.links.empty() ? absl::StrCat(gbps(c.link_bytes_per_second), " Gbit/s links")
                      : absl::StrCat("links of ",
                                     absl::StrJoin(c.links, ",",
                                                   [&](std::string* out, sync::LinkRates link) {
                                                     absl::StrAppend(out, gbps(link.upload), "/",
                                                                     gbps(link.download));
                                                   }),
                                     " Gbit/s up/down");
  return absl::StrFormat(
      "%d trainers, step %s x slowdowns %s, %.0f-byte model over %s; staleness "
      "tolerance %.2f steps\n",
      c.trainers, absl::FormatDuration(c.step),
      c.slowdowns.empty()
          ? absl::StrFormat("1 (%d of them %.1f)", c.stragglers, c.straggler_slowdown)
          : absl::StrJoin(c.slowdowns, ","),
      c.model_bytes, links, options.staleness_tolerance);
}

// One row of the table; `best`: the first row's rate.
std::string RowLine(const AdviseOptions& options, const AdviceRow& row, int rank, double best) {
  std::string staleness = "-", time = "not predicted", to_target;
  if (row.rate) {
    staleness =
        absl::StrFormat("%.2f/%.1f", row.sim.delta_staleness_mean, row.sim.delta_staleness_p99);
    time = absl::StrFormat("%.2f", *row.rate > 0 ? best / *row.rate : 0.0);
    if (options.target_steps > 0 && *row.rate > 0) {
      to_target =
          absl::StrFormat("  %.0f s", static_cast<double>(options.target_steps) / *row.rate);
    }
  }
  return absl::StrFormat("%-4s %-26s %8.1f %8.3f %11s %10s%s\n", rank > 0 ? absl::StrCat(rank) : "",
                         Name(row), row.sim.steps_per_second, row.sim.compute_time_ratio, staleness,
                         time, to_target);
}

// The recommendation and how far it holds.
std::string Recommendation(const AdviseOptions& options, const Advice& advice) {
  const double low = options.staleness_tolerance / 4, high = options.staleness_tolerance * 4;
  std::string out = absl::StrCat("\nrecommended: --mode=", advice.winners[1], " (confidence ",
                                 ConfidenceName(advice.confidence), ": ");
  if (advice.confidence == Confidence::kHigh) {
    absl::StrAppendFormat(&out, "it wins at every tolerance from %.2f to %.2f steps)\n", low, high);
  } else {
    absl::StrAppendFormat(&out, "at %.2f steps %s wins, at %.2f steps %s)\n", low,
                          advice.winners[0], high, advice.winners[2]);
  }
  if (!advice.rows.empty() && Name(advice.rows.front()) != advice.winners[1]) {
    absl::StrAppendFormat(&out,
                          "  (predicted within %.0f%% of %s, with fresher deltas: a tie for the "
                          "model, which the fresher deltas win)\n",
                          kTie * 100, Name(advice.rows.front()));
  }
  if (std::any_of(advice.rows.begin(), advice.rows.end(),
                  [](const AdviceRow& row) { return !row.rate; })) {
    absl::StrAppendFormat(&out,
                          "peer-to-peer modes are simulated, not predicted, beyond %d trainers: "
                          "compare them with `syncopate compare`\n",
                          sync::kPeerStalenessTrainers);
  }
  return out;
}

}  // namespace

std::string FormatAdvice(const AdviseOptions& options, const Advice& advice) {
  const bool seconds = options.target_steps > 0;
  std::string out = ProfileLine(options);
  absl::StrAppendFormat(&out, "%-4s %-26s %8s %8s %11s %10s%s\n", "rank", "mode", "steps/s",
                        "compute", "delta", "predicted", seconds ? "  predicted" : "");
  absl::StrAppendFormat(&out, "%-4s %-26s %8s %8s %11s %10s%s\n", "", "", "", "ratio", "staleness",
                        "time (x)", seconds ? "  time to target" : "");
  const double best =
      advice.rows.empty() || !advice.rows.front().rate ? 0 : *advice.rows.front().rate;
  int rank = 0;
  for (const AdviceRow& row : advice.rows) {
    absl::StrAppend(&out, RowLine(options, row, row.rate ? ++rank : 0, best));
  }
  if (!advice.winners.empty() && !advice.winners[1].empty()) {
    absl::StrAppend(&out, Recommendation(options, advice));
  }
  return out;
}

std::string AdviceAfterRun(const LocalClusterOptions& cluster, const RunSummary& summary) {
  absl::StatusOr<double> model_bytes = ModelBytesOfRun(summary.run_dir);
  if (!model_bytes.ok()) return "";
  const sync::PolicyOptions& policy = cluster.policy;
  sync::ClusterSimOptions base;
  base.policy = policy;
  base.seed = cluster.seed;
  // Checked when the run started.
  base.links = ParseLinks(cluster.egress_rates, cluster.ingress_rates, cluster.trainers,
                          base.link_bytes_per_second)
                   .value_or(std::vector<sync::LinkRates>{});
  absl::StatusOr<sync::ClusterSimOptions> profile = ProfileFromRun(summary, *model_bytes, base);
  if (!profile.ok()) return "";
  AdviseOptions options;
  options.cluster = *profile;
  absl::StatusOr<Advice> advice = Advise(options);
  absl::StatusOr<sync::ClusterSimResult> ran = Simulate(*profile, policy);
  if (!advice.ok() || !ran.ok() || advice->winners[1].empty()) return "";
  // The choice at the tolerance, against the run's mode at a quarter of it, at it and at four
  // times it: the ratio of two modes' predicted times is monotone in the tolerance, so these ends
  // bound it over the whole range.
  const AdviceRow* chosen = nullptr;
  for (const AdviceRow& row : advice->rows) {
    if (Name(row) == advice->winners[1]) chosen = &row;
  }
  double least = std::numeric_limits<double>::infinity();
  for (double tolerance : {0.25 * options.staleness_tolerance, options.staleness_tolerance,
                           4 * options.staleness_tolerance}) {
    const std::optional<double> rate = PredictedRate(*ran, tolerance);
    const std::optional<double> best = PredictedRate(chosen->sim, tolerance);
    if (!rate || !best || *rate <= 0) return "";
    least = std::min(least, *best / *rate);
  }
  if (!(least > kWarnAbove)) return "";
  const std::string& choice = advice->winners[1];
  const std::string& mode = policy.mode;
  const std::string choice_mode = choice.substr(0, choice.find(' '));
  // The same mode with other options: compare takes one set of options for all its modes.
  const std::string check =
      choice_mode == mode
          ? absl::StrCat("`syncopate local --mode=", choice, "` with this run's other flags")
          : absl::StrCat("`syncopate compare --modes=", mode, ",", choice_mode,
                         "` with this run's flags");
  return absl::StrFormat(
      "warning: on the cluster this run measured, `syncopate advise` predicts that %s takes %.1fx "
      "or more the time of --mode=%s to reach a target, at every staleness tolerance from 0.25 to "
      "4 steps (docs/advise.md). Check it on this cluster: %s.\n",
      mode, least, choice, check);
}

}  // namespace syncopate::cli
