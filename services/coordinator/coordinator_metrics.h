// The coordinator's Prometheus metrics (catalogue: docs/metrics.md).
#ifndef SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_
#define SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "sync/policy.h"

namespace syncopate::coordinator {

struct CoordinatorMetrics {
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  prometheus::Gauge& live_trainers;
  prometheus::Gauge& min_clock;
  prometheus::Gauge& staleness_bound;
  prometheus::Counter& joins;
  prometheus::Counter& leaves;
  prometheus::Family<prometheus::Counter>& evictions;  // label reason
  prometheus::Counter& rounds_closed;
  prometheus::Counter& grants;
  prometheus::Counter& preempted_transfers;
  prometheus::Histogram& staleness_at_grant;
  prometheus::Histogram& directive_latency;
  prometheus::Histogram& close_round_duration;
  prometheus::Gauge& groups;
  prometheus::Counter& store_call_failures;
  prometheus::Counter& store_restarts;
  prometheus::Counter& store_rounds_lost;
  prometheus::Counter& recoveries;
  prometheus::Counter& resumes;
  prometheus::Counter& pauses;
  // Values a trainer stated that the coordinator refused and ignored, label what = timings,
  // transfers, accuracy (invalid) or accuracy_not_evaluator.
  prometheus::Family<prometheus::Counter>& refused;
  prometheus::Family<prometheus::Counter>& refused_calls;
};

// One live trainer's gauges. They are computed when scraped (TrainerFamilies), not kept current
// at every event: a report then costs the same with 10 trainers or 10,000.
struct TrainerGauge {
  std::string name;
  int64_t staleness_bound = -1;
  int group = -1;
  std::optional<sync::LinkRates> link;  // peer-to-peer modes, once measured
  // Peer-to-peer modes: the measured rate to each receiver it sent to (receiver's name, bytes/s).
  // Filled when scraped only (Coordinator::TrainerGauges).
  std::vector<std::pair<std::string, double>> sends;
};

// The per-trainer families (label trainer = its name): staleness bound, group and, where
// measured, link rate by direction; and the pair family (labels sender, receiver).
std::vector<prometheus::MetricFamily> TrainerFamilies(const std::vector<TrainerGauge>& trainers);

}  // namespace syncopate::coordinator

#endif  // SYNCOPATE_COORDINATOR_COORDINATOR_METRICS_H_
