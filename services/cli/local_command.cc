#include "cli/local_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/files.h"
#include "base/flags.h"
#include "base/signals.h"
#include "base/status_macros.h"
#include "cli/model_file.h"
#include "cli/push_audit.h"

namespace syncopate::cli {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(250);
// How long the coordinator may stay unreachable (it crashed and is being restarted) before the run
// ends as failed.
constexpr absl::Duration kCoordinatorComeback = absl::Seconds(30);
// How long one status poll waits for a restarted coordinator to accept the connection.
constexpr absl::Duration kRestartPoll = absl::Seconds(2);
// How long the final average may take beyond the time the slowest trainer needs to reach its
// round (and beyond two exchange timeouts).
constexpr absl::Duration kFinalAverageMargin = absl::Seconds(30);
// How long a trainer that left the job may take to exit (a Python interpreter shutting down)
// before the run looks at how it exited.
constexpr absl::Duration kTrainerExitGrace = absl::Seconds(60);

absl::StatusOr<std::string> PrepareRunDir(const std::string& requested) {
  if (requested.empty()) {
    char pattern[] = "/tmp/syncopate-run-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return absl::UnavailableError("cannot create a run directory");
    return std::string(pattern);
  }
  RETURN_IF_ERROR(MakeReportDir(requested));
  return requested;
}

std::string ProgressLine(const v1::ClusterStatus& status, double elapsed,
                         const std::optional<double>& accuracy) {
  std::string clocks;
  for (const v1::TrainerStatus& t : status.trainers()) {
    absl::StrAppend(&clocks, " t", t.rank(), ":", t.clock(), t.state() == "live" ? "" : "(x)");
  }
  return absl::StrFormat("[%6.1fs] %s | accuracy %s | clocks%s | live %d", elapsed, status.mode(),
                         accuracy ? absl::StrFormat("%.4f", *accuracy) : "  n/a ", clocks,
                         status.live_trainers());
}

// How long the live trainers of `status` need, at their pace so far (wall time per clock), until
// the last of them reaches `round`.
absl::Duration TimeToReach(const v1::ClusterStatus& status, int64_t round) {
  double seconds = 0;
  for (const v1::TrainerStatus& t : status.trainers()) {
    if (t.state() != "live" || t.clock() <= 0 || t.clock() >= round) continue;
    const double per_clock = t.timings().wall_seconds() / static_cast<double>(t.clock());
    seconds = std::max(seconds, per_clock * static_cast<double>(round - t.clock()));
  }
  return absl::Seconds(seconds);
}

// Ends training for `reason` (Coordinator.Finish). In a mode with a final average (dssync), waits
// until every trainer has averaged and left (ClusterStatus.done). `status` follows the
// coordinator's answers. OK when the job is done, when the mode has no final average (its trainers
// are told Done), or when a signal interrupted the wait (`interrupted` says so). The wait lasts
// `margin` beyond the time the slowest trainer needs, at its pace so far, to reach the final
// round; a coordinator restart extends it by the time the new coordinator takes to answer, plus
// `margin`. `restart_crashed` restarts crashed services (true: the coordinator among them); a
// restarted coordinator takes the final round over from the stores, and is told to finish again
// (a no-op then; a new final round if the old one died before the stores had it). A failed job, or
// a coordinator that does not come back, is an error.
absl::Status FinishTraining(LocalCluster& cluster, const std::string& reason, absl::Duration margin,
                            const std::function<absl::StatusOr<bool>()>& restart_crashed,
                            v1::ClusterStatus* status, bool* interrupted) {
  int64_t round = 0;  // once a Finish was answered
  bool finish_due = true;
  bool pace_known = false;  // the deadline counts the trainers' pace
  bool restarted = false;   // the coordinator restarted and has not answered since
  absl::Time give_up = absl::Now() + std::max(margin, kCoordinatorComeback);
  absl::Status last = absl::OkStatus();
  while (absl::Now() < give_up) {
    ASSIGN_OR_RETURN(const bool coordinator_restarted, restart_crashed());
    if (coordinator_restarted) {
      restarted = finish_due = true;
      pace_known = false;
      give_up = std::max(give_up, absl::Now() + std::max(margin, kCoordinatorComeback));
    }
    if (finish_due) {
      absl::StatusOr<int64_t> finished = cluster.Finish(reason, absl::Seconds(5));
      if (finished.ok()) {
        finish_due = false;
        if (*finished == 0) return absl::OkStatus();  // nobody left to average: done
        if (*finished != round) {
          round = *finished;
          std::fprintf(stderr,
                       "training ends (%s): the trainers average their models in round %lld\n",
                       reason.c_str(), static_cast<long long>(round));
        }
      } else if (!absl::IsUnavailable(finished.status()) &&
                 !absl::IsDeadlineExceeded(finished.status())) {
        return finished.status();
      } else {
        last = finished.status();  // down, or taking the job over: asked again at the next turn
      }
    }
    absl::StatusOr<v1::ClusterStatus> polled =
        cluster.Status(restarted ? kRestartPoll : absl::Seconds(5), /*wait_for_ready=*/restarted);
    if (!polled.ok()) {
      last = polled.status();
    } else {
      restarted = false;
      *status = *std::move(polled);
      if (!status->failure().empty()) {
        return absl::AbortedError(absl::StrCat("the job failed: ", status->failure()));
      }
      if (status->done()) return absl::OkStatus();
      const bool paced = std::any_of(status->trainers().begin(), status->trainers().end(),
                                     [](const v1::TrainerStatus& t) {
                                       return t.state() == "live" && t.timings().wall_seconds() > 0;
                                     });
      if (round > 0 && !pace_known && paced && !status->recovering()) {
        give_up = std::max(give_up, absl::Now() + TimeToReach(*status, round) + margin);
        pace_known = true;
      }
    }
    if (base::WaitForTerminationSignal(kPoll) != 0) {
      *interrupted = true;
      return absl::OkStatus();
    }
  }
  return absl::DeadlineExceededError(absl::StrCat("the final average (round ", round,
                                                  ") did not complete in time",
                                                  last.ok() ? "" : ": ", last.message()));
}

// The trainers' processes now: how many still run, and how many exited on an error (a status
// other than 0: a crash, a signal, a script's exception).
struct TrainerProcesses {
  int running = 0;
  int failed = 0;
};
TrainerProcesses CountTrainerProcesses(const LocalCluster& cluster) {
  TrainerProcesses count;
  for (const Endpoint& e : cluster.endpoints()) {
    if (e.role != "trainer") continue;
    const std::optional<int> exit = e.process->Wait(absl::ZeroDuration());
    if (!exit) {
      ++count.running;
    } else if (!WIFEXITED(*exit) || WEXITSTATUS(*exit) != 0) {
      ++count.failed;
    }
  }
  return count;
}

// Once every process has stopped: exactly once, audited from the shards' final checkpoints and the
// trainers' traces (store modes). A push lost or taken twice is a fault.
void AuditPushesOf(const LocalRunOptions& options, const v1::ClusterStatus& status,
                   RunSummary* summary) {
  // Peer-to-peer modes push nothing to the stores.
  if (sync::FindMode(options.cluster.policy.mode)->peer_to_peer()) return;
  if (options.cluster.external_trainers) {
    summary->push_audit_error = "trainers started by hand keep their traces on their own hosts";
    return;
  }
  absl::StatusOr<PushAudit> audit = AuditPushes(
      options.cluster.run_dir, static_cast<uint32_t>(options.cluster.store_shards), status);
  if (!audit.ok()) {
    summary->push_audit_error = std::string(audit.status().message());
    return;
  }
  summary->pushes_audited = true;
  summary->pushes_compared = audit->pushes;
  summary->pushes_lost = audit->lost;
  summary->pushes_doubled = audit->doubled;
  summary->pushes_given_up = audit->given_up;
  if (audit->lost > 0 || audit->doubled > 0) {
    const std::string what =
        absl::StrCat("push audit: ", audit->lost, " push(es) lost and ", audit->doubled,
                     " taken twice on the store shards (of ", audit->pushes, ")");
    summary->faults.emplace_back(summary->wall_seconds, what);
    std::fprintf(stderr, "%s\n", what.c_str());
  }
}

// `syncopate serve`: where the trainers started by hand find the job.
void PrintTrainerSettings(const LocalClusterOptions& options, const LocalCluster& cluster) {
  std::fprintf(stderr,
               "the %s job's coordinator is at %s; start %d trainer(s) on hosts that reach it.\n"
               "Trainer r takes its settings from %s/trainer-<r>.env%s, e.g.\n"
               "  . %s/trainer-0.env && syncopate-trainer\n"
               "  . %s/trainer-0.env && python3 your_training_script.py\n",
               options.policy.mode.c_str(), cluster.coordinator_address().c_str(), options.trainers,
               options.run_dir.c_str(),
               options.insecure ? ""
                                : " and its certificate folder from tls/ there (copy both to "
                                  "its host, at the same path)",
               options.run_dir.c_str(), options.run_dir.c_str());
}

// The final model in RUN_DIR/model.npz and model.pt (RunModelFiles). Store modes: the model the
// stores checkpointed at shutdown. Peer-to-peer modes: the evaluator (trainer 0) wrote its own as
// it ended (the built-in trainer, or a script's session), unless it did not end cleanly. A model
// that cannot be had is said in the summary; the run itself stands.
void ExportFinalModel(const LocalRunOptions& options, RunSummary* summary) {
  const std::vector<std::string> paths = RunModelFiles(options.cluster.run_dir);
  if (WritesRunModel(options.cluster, 0)) {
    for (const std::string& path : paths) {
      if (access(path.c_str(), R_OK) == 0) summary->model_files.push_back(path);
    }
    if (summary->model_files.size() == paths.size()) {
      // Under dssync the evaluator's model is the final average it evaluated.
      summary->model_round = summary->final_average_round;
      return;
    }
    summary->model_files.clear();
    summary->model_error =
        options.cluster.external_trainers
            ? absl::StrCat(
                  "peer-to-peer modes keep the model in the trainers: trainer 0 writes it as "
                  "it ends cleanly (SYNCOPATE_SAVE_MODEL in trainer-0.env), on the host it ran "
                  "on, as ",
                  absl::StrJoin(paths, ","))
        : RunsCommand(options.cluster, 0)
            ? "trainer 0's script wrote no model: its session writes one at a clean end, where "
              "SYNCOPATE_SAVE_MODEL says (docs/python.md)"
            : "trainer 0, the evaluator, wrote no model (it did not end cleanly; see its log)";
    return;
  }
  absl::StatusOr<tensor::Model> model =
      ReadCheckpointModel(options.cluster.run_dir + "/checkpoints");
  absl::Status written = model.status();
  for (const std::string& path : paths) {
    if (written.ok()) written = tensor::WriteModel(*model, path);
    if (written.ok()) summary->model_files.push_back(path);
  }
  if (!written.ok()) {
    summary->model_error = std::string(written.message());
    return;
  }
  summary->model_round = model->round;  // 0: the live model
}

}  // namespace

std::optional<std::string> DescribeFinish(const std::vector<int64_t>& clocks, int failed_trainers) {
  if (clocks.empty() || failed_trainers > 0) return std::nullopt;
  const auto [least, most] = std::minmax_element(clocks.begin(), clocks.end());
  if (*least == *most) {
    return absl::StrCat("finished: every trainer completed ", *least, " steps");
  }
  return absl::StrCat("finished: every trainer completed its steps (", *least, "-", *most, ")");
}

absl::Status MakeReportDir(const std::string& dir) {
  if (absl::Status made = base::MakeDirectories(dir); !made.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--report-dir ", dir, ": ", made.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ScaleEvent>> ParseScaleEvents(const std::string& text, int trainers) {
  std::vector<ScaleEvent> events;
  for (const std::string& entry : base::SplitList(text)) {
    std::vector<std::string> parts = absl::StrSplit(entry, ':');
    int delta = 0;
    absl::StatusOr<absl::Duration> at =
        parts.size() == 2 ? base::ParseDuration(parts[0]) : absl::InvalidArgumentError("");
    if (!at.ok() || !absl::SimpleAtoi(parts[1], &delta) || delta == 0 ||
        (parts[1][0] != '+' && parts[1][0] != '-')) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad scale event '", entry, "': expected TIME:+N or TIME:-N, e.g. 30s:+1"));
    }
    events.push_back({*at, delta});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const ScaleEvent& a, const ScaleEvent& b) { return a.at < b.at; });
  int live = trainers;
  for (const ScaleEvent& e : events) {
    live += e.delta;
    if (live < 1) {
      return absl::InvalidArgumentError(absl::StrCat("scale events leave ", live, " trainers at ",
                                                     absl::FormatDuration(e.at), "; need 1"));
    }
  }
  return events;
}

absl::StatusOr<RunSummary> RunLocal(LocalRunOptions options) {
  RETURN_IF_ERROR(LocalCluster::Validate(options.cluster));
  if (!options.scale_events.empty()) options.cluster.elastic = true;
  const std::string resume_checkpoints = options.resume_from + "/checkpoints";
  if (!options.resume_from.empty()) {
    // Checked before anything is made: a bad run directory changes nothing.
    absl::StatusOr<tensor::Model> trained = ReadCheckpointModel(resume_checkpoints);
    if (!trained.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume-from=", options.resume_from, ": ", trained.status().message()));
    }
    if (static_cast<int>(trained->shards) != options.cluster.store_shards) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume-from=", options.resume_from, " has ", trained->shards,
                       " store shard(s): pass --store-shards=", trained->shards));
    }
  }
  ASSIGN_OR_RETURN(options.cluster.run_dir, PrepareRunDir(options.report_dir));
  if (!options.resume_from.empty()) {
    if (absl::Status seeded =
            SeedCheckpoints(resume_checkpoints, options.cluster.run_dir + "/checkpoints");
        !seeded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume-from=", options.resume_from, ": ", seeded.message()));
    }
    std::fprintf(stderr, "the stores start from the model in %s\n", resume_checkpoints.c_str());
  }
  if (options.cluster.external_trainers) {
    std::fprintf(stderr, "syncopate serve: %s for %d trainers, logs in %s\n",
                 options.cluster.policy.mode.c_str(), options.cluster.trainers,
                 options.cluster.run_dir.c_str());
  } else {
    std::fprintf(stderr, "syncopate local: %s with %d trainers (slowdowns",
                 options.cluster.policy.mode.c_str(), options.cluster.trainers);
    for (double s : options.cluster.slowdowns) std::fprintf(stderr, " %g", s);
    std::fprintf(stderr, "), logs in %s\n", options.cluster.run_dir.c_str());
  }

  // A run directory used before must not pass its model off as this run's.
  for (const std::string& path : RunModelFiles(options.cluster.run_dir)) unlink(path.c_str());
  ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster, LocalCluster::Start(options.cluster));
  if (options.cluster.external_trainers) PrintTrainerSettings(options.cluster, *cluster);
  std::unique_ptr<LocalPrometheus> prometheus;
  if (options.prometheus) {
    absl::StatusOr<std::unique_ptr<LocalPrometheus>> started = LocalPrometheus::Start(
        options.cluster.run_dir, cluster->endpoints(), options.prometheus_options);
    if (!started.ok()) {
      cluster->Stop();
      return started.status();
    }
    prometheus = *std::move(started);
    std::fprintf(stderr, "Prometheus: %s (alerts: %s/alerts)\n", prometheus->url().c_str(),
                 prometheus->url().c_str());
  }
  RunSummary summary;
  summary.mode = options.cluster.policy.mode;
  summary.run_dir = options.cluster.run_dir;
  summary.mode_parameters = sync::DescribeMode(options.cluster.policy);
  summary.staleness = sync::MakePolicy(options.cluster.policy).value()->staleness_bound();
  summary.trainers = options.cluster.trainers;
  summary.store_shards = options.cluster.store_shards;
  summary.target_accuracy = options.target_accuracy;

  const bool tty = isatty(STDERR_FILENO);
  const absl::Time start = absl::Now();
  absl::Time last_line = absl::InfinitePast();
  // Coordinator uptime - our elapsed (known once the coordinator answered; a restart resets it).
  double coordinator_offset = 0;
  bool offset_known = false;
  double last_accuracy_at = -1;
  // When the coordinator first had no live trainer while some trainer process still ran (it left
  // and is exiting).
  std::optional<absl::Time> none_live_since;
  v1::ClusterStatus status;
  absl::Status failure;
  size_t next_event = 0;
  // A restarted coordinator counts afresh: what the earlier ones reported is carried over.
  uint32_t carried_store_restarts = 0;
  int64_t carried_rounds_lost = 0;
  std::optional<absl::Time> unreachable_since;
  std::map<std::string, uint32_t> evictions_seen;  // by trainer name
  // Restarts crashed services (with --restart-crashed), each a fault; true when the coordinator
  // was among them.
  auto restart_crashed = [&]() -> absl::StatusOr<bool> {
    std::vector<LocalCluster::Restart> restarts;
    if (options.restart_crashed) {
      ASSIGN_OR_RETURN(restarts, cluster->RestartCrashedServices());
    }
    if (options.restart_trainers) {
      ASSIGN_OR_RETURN(const std::vector<LocalCluster::Restart> trainers,
                       cluster->RestartCrashedTrainers());
      restarts.insert(restarts.end(), trainers.begin(), trainers.end());
    }
    bool coordinator = false;
    for (const LocalCluster::Restart& restart : restarts) {
      std::fprintf(stderr, "%s%s\n", tty ? "\n" : "", restart.what.c_str());
      if (restart.role == "retry") continue;
      summary.faults.emplace_back(absl::ToDoubleSeconds(absl::Now() - start), restart.what);
      if (restart.role == "coordinator") {
        coordinator = true;
        carried_store_restarts += status.store_restarts();
        carried_rounds_lost += status.store_rounds_lost();
        offset_known = false;  // the new one's uptime starts now
      }
    }
    if (!restarts.empty() && prometheus) {
      RETURN_IF_ERROR(prometheus->UpdateTargets(cluster->endpoints()));
    }
    return coordinator;
  };
  while (true) {
    if (base::WaitForTerminationSignal(kPoll) != 0) {
      summary.interrupted = true;
      std::fprintf(stderr, "\ninterrupted: stopping the cluster\n");
      break;
    }
    while (next_event < options.scale_events.size() &&
           absl::Now() - start >= options.scale_events[next_event].at) {
      const ScaleEvent& e = options.scale_events[next_event++];
      for (int i = 0; i < std::abs(e.delta) && failure.ok(); ++i) {
        failure = e.delta > 0 ? cluster->AddTrainer() : cluster->RemoveTrainer();
      }
      if (failure.ok() && prometheus) failure = prometheus->UpdateTargets(cluster->endpoints());
      std::fprintf(stderr, "%sscale event at %s: %+d trainer(s)%s\n", tty ? "\n" : "",
                   absl::FormatDuration(e.at).c_str(), e.delta,
                   failure.ok() ? "" : std::string(" failed: " + failure.ToString()).c_str());
    }
    if (!failure.ok()) break;
    if (absl::StatusOr<bool> restarted = restart_crashed(); !restarted.ok()) {
      failure = restarted.status();
      break;
    }
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    // Once the coordinator was found unreachable, the polls wait for its restart, each briefly
    // (LocalCluster::Status says why they must wait).
    const bool awaiting_restart = unreachable_since.has_value() && options.restart_crashed;
    absl::StatusOr<v1::ClusterStatus> polled = cluster->Status(
        awaiting_restart ? kRestartPoll : absl::Seconds(5), /*wait_for_ready=*/awaiting_restart);
    if (!polled.ok()) {
      // A crashed coordinator is restarted on the next turn; give it time to come back.
      if (!unreachable_since) unreachable_since = absl::Now();
      if (!options.restart_crashed || absl::Now() - *unreachable_since > kCoordinatorComeback) {
        failure = absl::UnavailableError(
            absl::StrCat("coordinator unreachable: ", polled.status().message()));
        break;
      }
      continue;
    }
    unreachable_since.reset();
    status = *polled;
    // A trainer lost on the way is a fault too (a failed job evicts everyone: its failure says
    // why). Counts grow per coordinator; a restarted one starts from zero.
    for (const v1::TrainerStatus& t : status.trainers()) {
      uint32_t& seen = evictions_seen[t.name()];
      if (t.evictions() > seen && status.failure().empty()) {
        summary.faults.emplace_back(
            elapsed, absl::StrCat("trainer ", t.rank(), " evicted: ", t.eviction_reason()));
        std::fprintf(stderr, "%strainer %d evicted: %s\n", tty ? "\n" : "", t.rank(),
                     t.eviction_reason().c_str());
      }
      seen = t.evictions();
    }
    if (!offset_known) {
      coordinator_offset = status.uptime_seconds() - elapsed;
      offset_known = true;
    }
    if (status.has_test_accuracy() && status.test_accuracy_at_seconds() != last_accuracy_at) {
      last_accuracy_at = status.test_accuracy_at_seconds();
      const double at = std::max(0.0, last_accuracy_at - coordinator_offset);
      summary.accuracy.emplace_back(at, status.test_accuracy());
      summary.final_accuracy = status.test_accuracy();
      if (options.target_accuracy && status.test_accuracy() >= *options.target_accuracy) {
        summary.reached_target = true;
        summary.time_to_target_seconds = at;
      }
    }
    if (tty || absl::Now() - last_line >= absl::Seconds(5)) {
      std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n",
                   ProgressLine(status, elapsed, summary.final_accuracy).c_str());
      last_line = absl::Now();
    }
    if (!status.failure().empty()) {
      failure = absl::AbortedError(absl::StrCat("the job failed: ", status.failure()));
      break;
    }
    if (summary.reached_target) {
      summary.ended = "target reached";
      break;
    }
    if (elapsed >= absl::ToDoubleSeconds(options.time_limit)) {
      summary.ended = "time limit";
      break;
    }
    // Training was ended from outside (`syncopate finish`): its trainers are done or leaving.
    if (status.done() || status.final_round() > 0) {
      summary.ended = "ended by an operator";
      break;
    }
    // Trainers started by hand: the job is theirs once every rank has come.
    if (options.cluster.external_trainers && status.trainers_size() < options.cluster.trainers) {
      continue;
    }
    if (status.live_trainers() > 0 || status.recovering()) {
      none_live_since.reset();
      continue;
    }
    // Nobody is in the job: the trainers finished their own loops (each left and exits 0), or
    // they failed. A trainer that left is given a moment to exit.
    if (!none_live_since) none_live_since = absl::Now();
    const TrainerProcesses processes = CountTrainerProcesses(*cluster);
    if (processes.running > 0 && absl::Now() - *none_live_since < kTrainerExitGrace) continue;
    std::vector<int64_t> clocks;
    int failed = processes.failed;
    for (const v1::TrainerStatus& t : status.trainers()) {
      clocks.push_back(t.clock());
      // Trainers started by hand: the job sees how they left, not how they exited.
      if (options.cluster.external_trainers && t.state() == "evicted") ++failed;
    }
    const std::optional<std::string> finished =
        processes.running == 0 ? DescribeFinish(clocks, failed) : std::nullopt;
    if (finished) {
      summary.finished = true;
      summary.ended = *finished;
      std::fprintf(stderr, "%s%s\n", tty ? "\n" : "", finished->c_str());
      break;
    }
    if (elapsed > 5) {
      failure = absl::AbortedError("every trainer has left or died; see the logs");
      break;
    }
  }
  if (summary.interrupted) summary.ended = "interrupted";
  if (!failure.ok()) summary.ended = std::string(failure.message());
  if (tty) std::fprintf(stderr, "\n");
  // A mode with a final average ends with it (the other modes' trainers are simply stopped).
  if (failure.ok() && !summary.interrupted &&
      sync::MakePolicy(options.cluster.policy).value()->has_final_average()) {
    const std::string reason = summary.reached_target     ? "the target accuracy was reached"
                               : status.final_round() > 0 ? "ended by an operator"
                               : summary.finished         ? "every trainer finished"
                                                          : "the time limit";
    const absl::Status finished =
        FinishTraining(*cluster, reason, kFinalAverageMargin + 2 * options.cluster.exchange_timeout,
                       restart_crashed, &status, &summary.interrupted);
    if (!finished.ok()) {
      summary.faults.emplace_back(absl::ToDoubleSeconds(absl::Now() - start),
                                  std::string(finished.message()));
      std::fprintf(stderr, "%s\n", std::string(finished.message()).c_str());
    }
  }
  summary.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  FillFromStatus(status, &summary);
  summary.store_restarts += carried_store_restarts;
  summary.store_rounds_lost += carried_rounds_lost;
  if (status.trainers_not_resumed() > 0) {
    summary.faults.emplace_back(
        summary.wall_seconds,
        absl::StrCat(status.trainers_not_resumed(),
                     " trainer(s) did not resume after the coordinator restarted"));
  }
  // A trainer that ended on an error its eviction does not already say (refused by a restarted
  // coordinator, or crashed) is a fault too.
  for (const Endpoint& e : cluster->endpoints()) {
    if (e.role != "trainer" || e.process->running()) continue;
    const std::optional<int> exit = e.process->Wait(absl::ZeroDuration());
    if (!exit || (WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0)) continue;
    const bool evicted = std::any_of(
        status.trainers().begin(), status.trainers().end(), [&](const v1::TrainerStatus& t) {
          return static_cast<int>(t.rank()) == e.index && t.state() == "evicted";
        });
    if (evicted) continue;
    summary.faults.emplace_back(summary.wall_seconds,
                                absl::StrCat("trainer ", e.index, " exited (", DescribeExit(*exit),
                                             "); see ", e.process->log_path()));
  }
  cluster->Stop();
  if (prometheus) prometheus->Stop();
  AuditPushesOf(options, status, &summary);
  ExportFinalModel(options, &summary);  // after FillFromStatus: it reads the final average
  RETURN_IF_ERROR(WriteReport(options.cluster.run_dir, summary));
  if (!failure.ok()) {
    return absl::Status(failure.code(), absl::StrCat(failure.message(), " (logs in ",
                                                     options.cluster.run_dir, ")"));
  }
  return summary;
}

}  // namespace syncopate::cli
