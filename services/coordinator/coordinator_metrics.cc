#include "coordinator/coordinator_metrics.h"

#include "metrics/metrics_server.h"

namespace syncopate::coordinator {

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& r)
    : live_trainers(metrics::AddGauge(r, "syncopate_coordinator_live_trainers",
                                      "Trainers currently members of the job.")),
      min_clock(metrics::AddGauge(r, "syncopate_coordinator_min_clock",
                                  "Smallest clock over live trainers.")),
      staleness_bound(metrics::AddGauge(r, "syncopate_coordinator_staleness_bound",
                                        "Staleness bound in force (-1: unbounded).")),
      joins(metrics::AddCounter(r, "syncopate_coordinator_joins_total",
                                "Trainer joins (including rejoins).")),
      leaves(metrics::AddCounter(r, "syncopate_coordinator_leaves_total",
                                 "Trainers that left cleanly.")),
      evictions(
          prometheus::BuildCounter()
              .Name("syncopate_coordinator_evictions_total")
              .Help("Trainers evicted, by reason (heartbeat_timeout, disconnected, protocol).")
              .Register(r)),
      rounds_closed(metrics::AddCounter(r, "syncopate_coordinator_rounds_closed_total",
                                        "Rounds closed on every store shard.")),
      grants(
          metrics::AddCounter(r, "syncopate_coordinator_grants_total", "Proceed directives sent.")),
      preempted_transfers(metrics::AddCounter(
          r, "syncopate_coordinator_preempted_transfers_total",
          "Model transfers preempted for another trainer's multicast (selmcast-ssp).")),
      staleness_at_grant(metrics::AddHistogram(
          r, "syncopate_coordinator_staleness_at_grant",
          "Clock minus minimum live clock of the trainer at each grant.",
          prometheus::Histogram::BucketBoundaries{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32})),
      directive_latency(
          metrics::AddHistogram(r, "syncopate_coordinator_directive_latency_seconds",
                                "From a clock report's arrival to its Proceed being queued.",
                                metrics::ExponentialBuckets(0.0001, 3, 12))),
      close_round_duration(
          metrics::AddHistogram(r, "syncopate_coordinator_close_round_duration_seconds",
                                "Time to close a round on every store shard.",
                                metrics::ExponentialBuckets(0.0001, 3, 12))),
      groups(metrics::AddGauge(r, "syncopate_coordinator_groups",
                               "Trainer groups (hybrid); 0 when the mode has none.")),
      store_call_failures(metrics::AddCounter(
          r, "syncopate_coordinator_store_call_failures_total",
          "Calls to the store shards (membership, round closes) that failed and were retried.")),
      store_restarts(metrics::AddCounter(r, "syncopate_coordinator_store_restarts_total",
                                         "Store shard restarts noticed and reconciled.")),
      store_rounds_lost(metrics::AddCounter(r, "syncopate_coordinator_store_rounds_lost_total",
                                            "Rounds restarted shards skipped to catch up (their "
                                            "updates to those shards were lost).")),
      recoveries(metrics::AddCounter(r, "syncopate_coordinator_recoveries_total",
                                     "Jobs under way this coordinator took over at its start.")),
      resumes(metrics::AddCounter(r, "syncopate_coordinator_resumes_total",
                                  "Trainers that resumed their session after a coordinator "
                                  "restart, keeping identity and clock.")),
      pauses(metrics::AddCounter(r, "syncopate_coordinator_pauses_total",
                                 "Times the coordinator found it had not run for a while (frozen "
                                 "or starved) and excused the trainers' silence meanwhile.")),
      refused(prometheus::BuildCounter()
                  .Name("syncopate_coordinator_refused_values_total")
                  .Help("Values trainers reported that were refused and ignored, by what "
                        "(timings, transfers, accuracy, accuracy_not_evaluator).")
                  .Register(r)),
      refused_calls(prometheus::BuildCounter()
                        .Name("syncopate_coordinator_refused_calls_total")
                        .Help("Calls refused because the caller's certificate does not allow them, "
                              "by method (Session, GetStatus).")
                        .Register(r)) {}

std::vector<prometheus::MetricFamily> TrainerFamilies(const std::vector<TrainerGauge>& trainers) {
  auto family = [](const char* name, const char* help) {
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = prometheus::MetricType::Gauge;
    return f;
  };
  auto add = [](prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels,
                double value) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    f.metric.push_back(std::move(m));
  };
  prometheus::MetricFamily bound =
      family("syncopate_coordinator_trainer_staleness_bound",
             "Staleness bound in force for each live trainer (DSSP varies it; -1: none).");
  prometheus::MetricFamily group =
      family("syncopate_coordinator_trainer_group",
             "Group of each live trainer (hybrid); -1 when the mode has none.");
  prometheus::MetricFamily link =
      family("syncopate_coordinator_trainer_link_bytes_per_second",
             "Each trainer's smoothed measured link rate in the peer-to-peer modes, by direction "
             "(upload, download).");
  prometheus::MetricFamily pair =
      family("syncopate_coordinator_pair_link_bytes_per_second",
             "The measured rate of each ordered pair of trainers in the peer-to-peer modes: what "
             "the sender's model streams to the receiver moved at (at most 4,096 pairs).");
  for (const TrainerGauge& t : trainers) {
    add(bound, {{"trainer", t.name}}, static_cast<double>(t.staleness_bound));
    add(group, {{"trainer", t.name}}, t.group);
    if (t.link) {
      add(link, {{"direction", "download"}, {"trainer", t.name}}, t.link->download);
      add(link, {{"direction", "upload"}, {"trainer", t.name}}, t.link->upload);
    }
    for (const auto& [receiver, rate] : t.sends) {
      add(pair, {{"receiver", receiver}, {"sender", t.name}}, rate);
    }
  }
  std::vector<prometheus::MetricFamily> families{std::move(bound), std::move(group)};
  if (!link.metric.empty()) families.push_back(std::move(link));
  if (!pair.metric.empty()) families.push_back(std::move(pair));
  return families;
}

}  // namespace syncopate::coordinator
